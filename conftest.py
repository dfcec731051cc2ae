"""Collection settings shared by the whole tree: these files are not tests."""
collect_ignore = ["setup.py", "docs/conf.py", "benchmarks"]
