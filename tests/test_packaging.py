"""The built packages hold what users need, and the source archive runs the tests reading it.

One build (sdist, then the wheel from the sdist, as ``python -m build`` does)
serves every test here. It needs the ``build`` package and pip's access to
the package index (for setuptools); ``pytest -m "not sdist"`` leaves it out.
"""
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import pylighthouse

ROOT = Path(__file__).resolve().parent.parent
NAME = f"pylighthouse-{pylighthouse.__version__}"

pytestmark = pytest.mark.sdist

#: Run inside the unpacked sdist: the test files that read what the archive
#: ships beside the package (the docs and their examples, ``examples/``, the
#: schemas, the child scripts of the command line and crash tests), and the
#: 0.2.0 compatibility tests. The others read no file but the package's
#: modules, which these import whole: they are collected there (the count
#: is compared with the checkout's) and run in the checkout's own run.
RUN_IN_SDIST = ["tests/test_cli.py", "tests/test_cli_manners.py", "tests/test_docs.py",
                "tests/test_elastic.py", "tests/test_elastic_crash.py",
                "tests/test_http_servers.py", "tests/test_problem.py",
                "tests/test_service.py", "tests/test_upstream_0_2_0.py"]

#: What a checkout has that is not source (left out of the copy that is built).
LOCAL_ONLY = shutil.ignore_patterns(".git", ".tox", ".venv", "venv", "build", "dist",
                                    "*.egg-info", "__pycache__", ".hypothesis",
                                    ".pytest_cache", ".mypy_cache", "_build")


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    """The directory holding the sdist and the wheel built from a copy of this tree."""
    if importlib.util.find_spec("build") is None:
        pytest.skip("the build package is not installed (pip install build)")
    work = tmp_path_factory.mktemp("packaging")
    source = work / "source"
    shutil.copytree(ROOT, source, ignore=LOCAL_ONLY)
    out = work / "dist"
    done = subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(source)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    return out


@pytest.fixture(scope="module")
def unpacked(dist, tmp_path_factory):
    """The sdist, unpacked."""
    target = tmp_path_factory.mktemp("sdist")
    with tarfile.open(dist / f"{NAME}.tar.gz") as archive:
        if hasattr(tarfile, "data_filter"):  # Python 3.12, and patch releases since 2023
            archive.extractall(target, filter="data")
        else:
            archive.extractall(target)
    return target / NAME


def pytest_in(directory, *args):
    env = dict(os.environ, PYTHONPATH=str(directory))
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
                          cwd=directory, env=env, capture_output=True, text=True, timeout=900)


def collected(directory):
    done = pytest_in(directory, "--collect-only", "-q")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    return int(re.search(r"^(\d+) tests? collected", done.stdout, re.M).group(1))


def tracked(*folders):
    """The files git tracks under ``folders`` (relative paths), or None without git."""
    if not (ROOT / ".git").exists() or shutil.which("git") is None:
        return None
    done = subprocess.run(["git", "ls-files", "--", *folders], cwd=ROOT,
                          capture_output=True, text=True)
    if done.returncode != 0:
        return None
    return {line for line in done.stdout.splitlines() if (ROOT / line).exists()}


def test_the_sdist_holds_the_tests_docs_examples_and_benchmarks(unpacked):
    for path in ["conftest.py", "pyproject.toml", "setup.py", "setup.cfg", "LICENSE",
                 "HISTORY.rst", "README.rst", "requirements_dev.txt", "tox.ini", ".ci/run",
                 "tests/reference.py", "docs/conf.py", "examples/tour.json",
                 "benchmarks/problems.py", "pylighthouse/py.typed",
                 "pylighthouse/schemas/problem.schema.json"]:
        assert (unpacked / path).is_file(), path
    files = tracked("tests", "docs", "examples", "benchmarks", "pylighthouse")
    if files is not None:
        missing = sorted(path for path in files if not (unpacked / path).is_file())
        assert not missing, missing


def test_the_sdist_collects_every_test_and_passes_those_reading_its_files(unpacked):
    env = dict(os.environ, PYTHONPATH=str(unpacked))
    where = subprocess.run([sys.executable, "-c", WHERE_AND_SCHEMA], cwd=unpacked, env=env,
                           capture_output=True, text=True, check=True).stdout.splitlines()
    assert Path(where[0]).resolve().is_relative_to(unpacked.resolve())
    assert collected(unpacked) == collected(ROOT)
    done = pytest_in(unpacked, "-q", *RUN_IN_SDIST)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert re.search(r"^\d+ passed", done.stdout.splitlines()[-1]), done.stdout[-2000:]


def test_the_wheel_carries_the_metadata_data_files_and_command(dist):
    wheel = dist / f"{NAME}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = archive.read(f"{NAME}.dist-info/METADATA").decode()
        entry_points = archive.read(f"{NAME}.dist-info/entry_points.txt").decode()
    for path in ["pylighthouse/py.typed", "pylighthouse/schemas/problem.schema.json",
                 "pylighthouse/schemas/openapi.json", f"{NAME}.dist-info/licenses/LICENSE"]:
        assert path in names, path
    assert not any(name.startswith(("tests/", "docs/", "benchmarks/")) for name in names)
    headers = metadata.split("\n\n", 1)[0].splitlines()
    assert f"Version: {pylighthouse.__version__}" in headers
    assert "License-Expression: Apache-2.0" in headers
    assert "Requires-Python: >=3.9" in headers
    assert "Requires-Dist: attrs>=21.3" in headers
    for label in ("Documentation", "Changelog", "Source", "Issues"):
        assert any(line.startswith(f"Project-URL: {label}, https://") for line in headers), label
    for extra in ("serve", "docs", "test"):
        assert f"Provides-Extra: {extra}" in headers
    assert "Requires-Dist: waitress>=3; extra == \"serve\"" in headers
    assert re.search(r"^pylighthouse = pylighthouse\.cli:main$", entry_points, re.M)
    # (the description is shown away from the repository: its links are whole)
    description = metadata.split("\n\n", 1)[1]
    links = re.findall(r"`[^`<]*<([^>]+)>`_", description)
    assert len(links) >= 10
    assert all(link.startswith("https://") for link in links), links


def test_the_installed_wheel_runs(dist, tmp_path):
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--no-index", "--target", str(target),
                    str(dist / f"{NAME}-py3-none-any.whl")],
                   check=True, capture_output=True, timeout=300)
    env = dict(os.environ, PYTHONPATH=str(target))
    done = subprocess.run(
        [sys.executable, "-m", "pylighthouse", "validate", str(ROOT / "examples" / "tour.json")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "valid" in done.stdout
    where = subprocess.run([sys.executable, "-c", WHERE_AND_SCHEMA], cwd=tmp_path, env=env,
                           capture_output=True, text=True, check=True).stdout.splitlines()
    assert Path(where[0]).resolve().is_relative_to(target.resolve())
    assert where[1] == "https://json-schema.org/draft/2020-12/schema"


#: Prints where pylighthouse was imported from, and reads its JSON Schema as
#: package data.
WHERE_AND_SCHEMA = """
import importlib.resources, json, pylighthouse
print(pylighthouse.__file__)
schema = importlib.resources.files("pylighthouse") / "schemas" / "problem.schema.json"
print(json.loads(schema.read_text())["$schema"])
"""
