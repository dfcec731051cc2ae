"""The docs and the project's commands stay true: every public name documented,
the README's commands are the ones CI and users run."""
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import pylighthouse

ROOT = Path(__file__).resolve().parent.parent


def readme_commands():
    """The indented shell commands of the README's quick start, in order."""
    text = (ROOT / "README.rst").read_text()
    section = text.split("Quick start", 1)[1].split("Features", 1)[0]
    return [line.strip() for line in section.splitlines() if line.startswith("    python")]


def test_every_public_name_is_in_the_api_reference():
    documented = "\n".join(path.read_text() for path in (ROOT / "docs").glob("*.rst"))
    for name in pylighthouse.__all__:
        if name.startswith("__"):
            continue
        assert re.search(rf"\.\. auto\w+:: pylighthouse\.{name}\b", documented), name


def test_ci_runs_exactly_the_readme_check_command():
    check = readme_commands()[1]
    assert "pytest" in check and "flake8" in check and "mypy" in check
    assert "sphinx -W -n" in check  # warnings and broken references fail the build
    script = (ROOT / ".ci" / "run").read_text().splitlines()
    assert check in [line.strip() for line in script]


def test_the_readme_main_job_runs_and_prints_where_workloads_went():
    command = readme_commands()[0]
    install, _, job = command.partition(" && ")
    assert install.startswith("python -m pip install .")
    argv = shlex.split(job)
    argv[0] = sys.executable if argv[0] == "python" else argv[0]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    for workload, node in (("req-1", "node-2"), ("req-2", "node-3"), ("req-3", "node-1")):
        assert re.search(rf"^{node}: .*\b{workload}\b", done.stdout, re.M), done.stdout


def test_every_type_ignore_in_the_package_says_why():
    for path in sorted((ROOT / "pylighthouse").rglob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if "type: ignore" in line:
                assert re.search(r"# type: ignore\[[\w-]+(, *[\w-]+)*\]\s+#\s*\S", line), \
                    f"{path.name}:{number}: a type: ignore needs its error code and a reason"


def test_the_performance_tables_are_those_of_the_published_rows():
    """docs/performance.rst shows the rows of docs/_static/matrix.json, as
    benchmarks/page.py writes them: no figure of the tables is typed by hand,
    and publishing other rows without writing the tables again fails here."""
    import json
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import page
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    rows = json.loads((ROOT / "docs" / "_static" / "matrix.json").read_text())
    text = (ROOT / "docs" / "performance.rst").read_text()
    assert page.speeds(rows) in text
    assert page.answers(rows) in text
    other = [dict(row, per_s=row["per_s"] * 2) for row in rows]
    assert page.speeds(other) not in text
    # (every mix of the matrix, the last one added too)
    assert {row["mix"] for row in rows} == set(page.MIXES)


USER_CODE = '''
import copy
from typing import Dict, Optional

import pylighthouse as lighthouse

nodes = [{"name": "n1", "resources": {"cpu": 4}}, {"name": "n2", "resources": {"cpu": 2}}]
round_robin = lighthouse.RoundRobinDistributor.from_list(nodes)
placed: Dict[str, Optional[str]] = round_robin.attempt_assign_loads(
    [{"name": "w", "requirements": {"cpu": 1}}])
cursor: int = round_robin.cursor
again = lighthouse.RoundRobinDistributor.from_dict(round_robin.to_dict())
print(again.cursor, copy.copy(again).cursor, copy.deepcopy(again).cursor)
packer = lighthouse.BinPackDistributor.from_dict(
    lighthouse.BinPackDistributor.from_list({"cpu": 1}, nodes).to_dict())
print(packer.rubric, lighthouse.Distributor.from_dict(packer.to_dict()).strategy, placed,
      cursor)


class Tighter(lighthouse.BestFitDistributor):
    def tightest(self) -> str:
        return "tighter"


class Packer(lighthouse.BinPackDistributor):
    def packer(self) -> str:
        return "packer"


print(Tighter.from_list(nodes).tightest(), Packer.from_list({"cpu": 1}, nodes).packer())


class Rounder(lighthouse.RoundRobinDistributor):
    def rounder(self) -> str:
        return "rounder"


# (a subclass rebuilds a snapshot of its strategy as itself: it was refused,
# "holds a RoundRobin distributor, not a RoundRobin one")
assert Rounder.from_dict(round_robin.to_dict()).rounder() == "rounder"
assert Tighter.from_dict(Tighter.from_list(nodes).to_dict()).tightest() == "tighter"
'''


def test_user_code_keeps_the_strategy_class_through_the_constructors(tmp_path):
    # (from_list, from_dict and copies were typed as the base Distributor:
    # the usage guide's round_robin.cursor failed mypy --strict)
    api = pytest.importorskip("mypy.api")
    script = tmp_path / "user.py"
    script.write_text(USER_CODE)
    out, err, status = api.run(["--strict", "--no-incremental", "--config-file", "",
                                str(script)])
    assert status == 0, out + err
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
