"""The pylighthouse command: in-process through main(argv), as a subprocess, and the
shell examples of the docs and the README, run and compared with what they show."""
import io
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import pytest

import pylighthouse
from pylighthouse.cli import main
from pylighthouse.service import make_wsgi_server

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 60


def run_module(*args, stdin=None):
    """Run ``python -m pylighthouse`` from the repository root."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "pylighthouse", *args], cwd=ROOT, env=env,
                          input=stdin, capture_output=True, text=True, timeout=TIMEOUT)


# ------------------------------------------------------------- in-process

def test_assign_prints_the_endpoint_answer(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert main(["assign", "examples/tour.json"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "successful": True, "assignments": {"req-1": "node-2", "req-2": "node-3",
                                            "req-3": "node-1"},
        "unplaced": {}}


def test_assign_places_what_fits_by_default_and_exits_1(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert main(["assign", "examples/tour-prioritized.json"]) == 1
    answer = json.loads(capsys.readouterr().out)
    assert answer["assignments"] == {"req-1": "node-1", "req-2": "node-2"}
    assert list(answer["unplaced"]) == ["req-3"]
    assert main(["assign", "examples/tour-prioritized.json", "--all-or-nothing"]) == 1
    assert json.loads(capsys.readouterr().out) == {"successful": False, "assignments": {}}


def test_the_file_partial_flag_is_used_unless_an_option_says_otherwise(tmp_path, capsys):
    data = json.loads((ROOT / "examples" / "tour-prioritized.json").read_text())
    data["partial"] = False
    path = tmp_path / "p.json"
    path.write_text(json.dumps(data))
    assert main(["assign", str(path)]) == 1
    assert "unplaced" not in json.loads(capsys.readouterr().out)
    assert main(["assign", str(path), "--partial"]) == 1
    assert "req-3" in json.loads(capsys.readouterr().out)["unplaced"]


def test_strategy_and_rubric_override_the_file(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert main(["assign", "examples/tour-prioritized.json", "--strategy", "BINPACK",
                 "--rubric", '{"cpu": 1, "mem": 0.5, "disk": 0.025}']) == 0
    assert json.loads(capsys.readouterr().out)["assignments"] == {
        "req-1": "node-2", "req-2": "node-3", "req-3": "node-1"}


def test_a_mistake_in_an_option_is_blamed_on_the_option(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert main(["assign", "examples/tour.json", "--rubric", '{"cpu": "x"}']) == 2
    assert capsys.readouterr().err == \
        'pylighthouse: --rubric: rubric.cpu: expected a number, got "x"\n'
    # (a rubric given alone is a map of quantities: a weight too large to
    # read is out of their range, as it is in a file)
    huge = "1e999999999999999999999"
    assert main(["assign", "examples/tour.json", "--rubric", f'{{"cpu": {huge}}}']) == 2
    assert capsys.readouterr().err == (
        f"pylighthouse: --rubric: invalid JSON: cpu: {huge} is out of range (magnitudes "
        "from 1e-300 to 1e300, at most 300 decimal places)\n")
    assert main(["assign", "examples/tour.json", "--strategy", "fastest"]) == 2
    assert capsys.readouterr().err.startswith(
        'pylighthouse: --strategy: strategy: unknown strategy "fastest"')
    # (the file's own mistakes are still the file's)
    assert main(["assign", "examples/broken.json", "--strategy", "binpack"]) == 2
    assert capsys.readouterr().err.startswith("pylighthouse: examples/broken.json: ")


def test_table_lists_nodes_bars_and_reasons(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert main(["assign", "examples/tags-and-wards.json", "--format", "table"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("7 of 8 workloads placed (Prioritized, partial)\n")
    assert "general-1: web-1, licensed-1, licensed-2\n" in out
    assert "  licence  [####################] 2/2 used (100%)\n" in out
    assert "  spiders  ward (below zero)\n" in out
    assert "  flies  shortcoming -5 (0 left)\n" in out
    assert "  ml-only  tag\n" in out
    assert out.endswith("Not placed (1):\n  licensed-3: 0/5 nodes fit: 4 missing resource "
                        "licence, 1 insufficient licence (needs 1, most left 0)\n\n"
                        "Cluster: 5 nodes, 7 placed, 1 unplaced; fill: cpu 39%, mem 36%, "
                        "licence 100%, gpu 50%\n")


def test_table_shows_unlimited_and_overcommitted_resources(tmp_path, capsys):
    path = tmp_path / "p.json"
    path.write_text(json.dumps({
        "nodes": [{"name": "n", "resources": {"cpu": 2, "net": "inf"},
                   "workloads": [{"name": "hog", "requirements": {"cpu": 3, "net": 5}}]}],
        "workloads": []}))
    assert main(["assign", str(path), "--format", "table"]) == 0
    out = capsys.readouterr().out
    assert "n: hog (running)\n" in out
    assert "cpu  [####################] 3/2 used (150%, over capacity)\n" in out
    assert "net  unlimited (5 used)\n" in out


def test_the_table_is_the_same_whatever_the_callers_decimal_context():
    # (a caller trapping Inexact got decimal.Inexact from 1/3 of a node)
    import decimal

    from pylighthouse.cli import render_table
    from pylighthouse.problem import load_problem, solve
    problem = load_problem({"nodes": [{"name": "n", "resources": {"cpu": 3}}],
                            "workloads": [{"name": "w", "requirements": {"cpu": 1}}]})
    outcome = solve(problem, partial=True)
    expected = render_table(problem, outcome)
    assert "cpu  [#######.............] 1/3 used (33%)\n" in expected
    with decimal.localcontext(decimal.Context(prec=2, traps=[decimal.Inexact])):
        assert render_table(problem, outcome) == expected


def test_table_escapes_characters_that_are_not_printable(tmp_path, capsys):
    # A name with a line break or a terminal escape must not forge a line of
    # the report or steer the terminal; printable names, accents too, stay.
    path = tmp_path / "p.json"
    path.write_text(json.dumps({
        "nodes": [{"name": "n\x1b[31mred", "resources": {"cpu": 2, "gp\nu": 1, "café": 1}}],
        "workloads": [{"name": "w\nCluster: 9 nodes", "requirements": {"cpu": 1}},
                      {"name": "big\t1", "requirements": {"gp\nu": 2}}]}))
    assert main(["assign", str(path), "--format", "table"]) == 1
    assert capsys.readouterr().out == (
        "1 of 2 workloads placed (Prioritized, partial)\n"
        "\n"
        "n\\x1b[31mred: w\\nCluster: 9 nodes\n"
        "  cpu    [##########..........] 1/2 used (50%)\n"
        "  gp\\nu  [....................] 0/1 used (0%)\n"
        "  café   [....................] 0/1 used (0%)\n"
        "\n"
        "Not placed (1):\n"
        "  big\\t1: 0/1 nodes fit: 1 insufficient gp\\nu (needs 2, most left 1)\n"
        "\n"
        "Cluster: 1 node, 1 placed, 1 unplaced; fill: cpu 50%, gp\\nu 0%, café 0%\n")


def test_assign_reads_stdin(capsys, monkeypatch):
    problem = {"nodes": [{"id": "n", "resources": {"cpu": 1}}],
               "workloads": [{"id": "w", "requirements": {"cpu": 1}}]}
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(problem)))
    assert main(["assign", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["assignments"] == {"w": "n"}


@pytest.mark.parametrize("args, content, message", [
    (["assign"], '{"nodes": [], "workloads": [{"id": "w", "requirements": {"cpu": "x"}}]}',
     'pylighthouse: FILE: workloads[0].requirements.cpu: expected a number, got "x"\n'),
    (["assign"], "{oops", "pylighthouse: FILE: invalid JSON: Expecting property name "
                          "enclosed in double quotes (line 1, column 2)\n"),
    (["assign", "--rubric", "{"], '{"nodes": [], "workloads": []}',
     "pylighthouse: --rubric: invalid JSON: Expecting property name enclosed in double "
     "quotes (line 1, column 2)\n"),
    (["validate"], '{"nodes": {}, "workloads": 1}',
     "FILE: nodes: expected an array, got an object\n"
     "FILE: workloads: expected an array, got 1\nFILE: 2 errors\n"),
])
def test_bad_input_exits_2_with_one_message(tmp_path, capsys, args, content, message):
    path = tmp_path / "problem.json"
    path.write_text(content)
    assert main([args[0], str(path), *args[1:]]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == message.replace("FILE", str(path))


def test_a_missing_file_exits_2(capsys, tmp_path):
    assert main(["validate", str(tmp_path / "nope.json")]) == 2
    assert capsys.readouterr().err == (
        f"pylighthouse: {tmp_path / 'nope.json'}: cannot read: No such file or directory\n")


def test_validate_a_good_file(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert main(["validate", "examples/pre-placed.json"]) == 0
    assert capsys.readouterr().out == \
        "examples/pre-placed.json: valid (3 nodes, 3 workloads, strategy Prioritized)\n"


def test_bad_options_are_argparse_errors(capsys):
    with pytest.raises(SystemExit) as caught:
        main(["assign", "x.json", "--format", "yaml"])
    assert caught.value.code == 2
    with pytest.raises(SystemExit) as caught:
        main(["assign", "x.json", "--partial", "--all-or-nothing"])
    assert caught.value.code == 2
    with pytest.raises(SystemExit) as caught:
        main([])
    assert caught.value.code == 2


# ------------------------------------------------------------- subprocess

def test_python_dash_m_exit_codes_and_no_traceback():
    done = run_module("assign", "examples/tour.json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["successful"] is True
    assert run_module("assign", "examples/tour-prioritized.json").returncode == 1
    bad = run_module("assign", "-", stdin='{"nodes": 3, "workloads": []}')
    assert bad.returncode == 2
    assert bad.stderr == "pylighthouse: stdin: nodes: expected an array, got 3\n"
    garbage = run_module("assign", "-", stdin="\x00\x01 not json [[[")
    assert garbage.returncode == 2 and "Traceback" not in garbage.stderr
    assert run_module("--version").stdout == f"pylighthouse {pylighthouse.__version__}\n"


def test_serve_answers_over_http_and_stops_on_interrupt():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    # SIGINT as a terminal leaves it (the test run may have it ignored, as a
    # background job does, and a child would inherit that).
    process = subprocess.Popen(
        [sys.executable, "-m", "pylighthouse", "serve", "--host", "127.0.0.1", "--port", "0"],
        cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        banner = process.stderr.readline()
        port = int(re.search(r"http://127\.0\.0\.1:(\d+)/", banner).group(1))
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=10) as answer:
            assert json.loads(answer.read())["status"] == "ok"
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=10) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
        process.stderr.close()


def test_serve_on_a_busy_port_exits_2():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        done = run_module("serve", "--port", str(busy.getsockname()[1]))
    assert done.returncode == 2
    assert done.stderr.startswith("pylighthouse: serve: ")
    assert "Traceback" not in done.stderr


# ------------------------------------------- documented shell examples

@pytest.fixture(scope="module")
def shell(tmp_path_factory):
    """Run a documented command line as a user would, from the repository root:
    ``pylighthouse`` is this checkout, and the HTTP examples' server is real."""
    bin_dir = tmp_path_factory.mktemp("bin")
    script = bin_dir / "pylighthouse"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m pylighthouse "$@"\n')
    script.chmod(0o755)
    env = dict(os.environ, PYTHONPATH=str(ROOT),
               PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    server = make_wsgi_server("127.0.0.1", 0, quiet=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()

    def run(command):
        command = command.replace("127.0.0.1:8087", f"127.0.0.1:{server.server_port}")
        return subprocess.run(["bash", "-c", command], cwd=ROOT, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=TIMEOUT)
    try:
        yield run
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def console_examples(path):
    """Every ``$ command`` of the console blocks of an .rst file, with the
    output shown under it."""
    examples = []
    lines = path.read_text().splitlines()
    index = 0
    while index < len(lines):
        if lines[index].strip() != ".. code-block:: console":
            index += 1
            continue
        index += 1
        block = []
        while index < len(lines) and (not lines[index].strip()
                                      or lines[index].startswith("    ")):
            block.append(lines[index][4:])
            index += 1
        output = None
        for line in block:
            if line.startswith("$ "):
                output = []
                examples.append((line[2:], output))
            elif output is not None:
                output.append(line)
    return [(command, "\n".join(output).strip("\n")) for command, output in examples]


DOC_EXAMPLES = console_examples(ROOT / "docs" / "interfaces.rst")


def test_the_docs_have_console_examples():
    assert len(DOC_EXAMPLES) >= 8
    assert any(command.startswith("curl") for command, _ in DOC_EXAMPLES)


@pytest.mark.parametrize("command, shown", DOC_EXAMPLES,
                         ids=[command[:50] for command, _ in DOC_EXAMPLES])
def test_documented_command_prints_what_the_docs_show(shell, command, shown):
    done = shell(command)
    printed = "\n".join(line.rstrip() for line in done.stdout.splitlines()).strip("\n")
    assert printed == "\n".join(line.rstrip() for line in shown.splitlines())


def test_the_readme_main_job_command_works(shell):
    readme = (ROOT / "README.rst").read_text()
    line = next(line.strip() for line in readme.splitlines()
                if "python -m pip install . &&" in line)
    command = line.split("&&", 1)[1].strip()
    assert command == "pylighthouse assign examples/tour.json --format table"
    done = shell(command)
    assert done.returncode == 0, done.stdout
    assert done.stdout.startswith("3 of 3 workloads placed (BinPack, partial)\n")
