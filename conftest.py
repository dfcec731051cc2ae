"""Collection settings shared by the whole tree: these files are not tests.

Property-based tests run the same examples on every run (``derandomize``),
so the check gives the same answer on every machine and a change, not a
lucky draw, is what makes it pass or fail. To explore new examples, run
``python -m pytest --hypothesis-profile=explore`` (failures found are kept
in ``.hypothesis/`` and replayed on the next run of the same profile).
"""
from hypothesis import settings

collect_ignore = ["setup.py", "docs/conf.py", "benchmarks"]

settings.register_profile("repeatable", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile("repeatable")
