"""The command line's manners: pipes, full disks, closed stdin, bad ports, progress,
the table's rounding and summary, --help, and the server it picks."""
import contextlib
import io
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from pylighthouse.cli import CLOSED_PIPE_STATUS, main
from test_http_servers import exchange
from pylighthouse.progress import Progress

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 60
ENV = dict(os.environ, PYTHONPATH=str(ROOT))
PYTHON = f'"{sys.executable}" -m pylighthouse'


def shell(command, **options):
    return subprocess.run(["bash", "-c", command], cwd=ROOT, env=ENV, capture_output=True,
                          text=True, timeout=TIMEOUT, **options)


def problem(workloads, capacity=1):
    return {"nodes": [{"name": "n", "resources": {"cpu": capacity}}],
            "workloads": [{"name": f"w-{i:05d}", "requirements": {"cpu": 1}}
                          for i in range(workloads)]}


# ---------------------------------------------------------------- output

def test_a_closed_pipe_ends_quietly_with_the_conventional_status(tmp_path):
    path = tmp_path / "big.json"
    path.write_text(json.dumps(problem(6000)))  # an answer of several pipe buffers
    done = shell(f'{PYTHON} assign {path} | head -1; echo "status ${{PIPESTATUS[0]}}" >&2')
    assert done.stdout == "{\n"
    assert done.stderr == f"status {CLOSED_PIPE_STATUS}\n"


def test_manage_to_a_closed_pipe_or_a_full_disk_says_so_as_every_command_does():
    # (the manager's own error path took both: status 2, "manage: [Errno 32]")
    done = shell(f'{PYTHON} manage examples/elastic/demo.json --simulate --cycles 2000 '
                 f'| head -1 > /dev/null; echo "status ${{PIPESTATUS[0]}}" >&2')
    assert done.stderr == f"status {CLOSED_PIPE_STATUS}\n"
    done = shell(f"{PYTHON} manage examples/elastic/demo.json --simulate > /dev/full")
    assert done.returncode == 2
    assert done.stderr == "pylighthouse: cannot write the output: No space left on device\n"


def test_a_full_disk_is_one_line_and_status_2():
    done = shell(f"{PYTHON} assign examples/tour.json > /dev/full")
    assert done.returncode == 2
    assert done.stderr == "pylighthouse: cannot write the output: No space left on device\n"


@pytest.mark.parametrize("command", ["--help", "--version", "assign --help"])
def test_help_that_cannot_be_written_is_not_a_success(command):
    # (argparse drops the write error and exits 0)
    done = shell(f"{PYTHON} {command} > /dev/full")
    assert done.returncode == 2
    assert done.stderr == "pylighthouse: cannot write the output: No space left on device\n"
    done = shell(f'{PYTHON} {command} | head -c 1; echo " status ${{PIPESTATUS[0]}}" >&2')
    assert done.stderr == " status 0\n"  # (it all fits the pipe: head takes it)
    assert shell(f"{PYTHON} {command}").returncode == 0


@pytest.mark.parametrize("stderr", ["2> /dev/full", "2>&-"])
@pytest.mark.parametrize("command, status", [
    ("assign examples/broken.json", 2), ("validate examples/broken.json", 2),
    ("assign {bad}", 2), ("validate {bad}", 2), ("assign examples/tour.json > /dev/full", 2),
    ("assign examples/tour.json", 0), ("assign --bogus", 2)])
def test_a_stderr_that_cannot_be_written_leaves_the_exit_status_as_documented(
        tmp_path, stderr, command, status):
    # (the message is lost, not the status: printing it raised, and the
    # command exited 1 with a traceback nobody could read)
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    done = shell(f"{PYTHON} {command.format(bad=bad)} {stderr}")
    assert done.returncode == status
    assert done.stderr == ""


def test_a_closed_stdin_is_one_line_and_status_2():
    done = shell(f"{PYTHON} assign - <&-")
    assert done.returncode == 2
    assert done.stderr == "pylighthouse: stdin: cannot read: standard input is closed\n"


@pytest.mark.parametrize("command", ["assign examples/tour.json", "validate examples/tour.json",
                                     "manage examples/elastic/demo.json --simulate --cycles 1"])
def test_a_closed_stdout_is_one_line_and_status_2(command):
    # (a traceback before: Python starts with sys.stdout None)
    done = shell(f"{PYTHON} {command} >&-")
    assert done.returncode == 2
    assert done.stderr == "pylighthouse: stdout: cannot write: standard output is closed\n"


@pytest.mark.parametrize("port", ["99999", "-1"])
def test_a_port_out_of_range_is_one_line_and_status_2(port):
    done = shell(f"{PYTHON} serve --port={port}")
    assert done.returncode == 2
    assert done.stderr == f"pylighthouse: serve: --port: expected 0 to 65535, got {port}\n"


@pytest.mark.parametrize("server", ["waitress", "wsgiref"])
@pytest.mark.parametrize("option, value, expected", [
    ("--timeout", "nan", "a finite number of seconds > 0, got nan"),
    ("--timeout", "inf", "a finite number of seconds > 0, got inf"),
    ("--timeout", "-1", "a finite number of seconds > 0, got -1.0"),
    ("--timeout", "0", "a finite number of seconds > 0, got 0.0"),
    ("--max-connections", "0", "a whole number >= 1, got 0"),
    ("--max-connections", "-3", "a whole number >= 1, got -3")])
def test_server_settings_are_checked_the_same_for_either_server(server, option, value,
                                                                expected):
    # (waitress took any timeout, and 0 connections: a server that
    # accepted nothing)
    done = shell(f"{PYTHON} serve --port=0 --server {server} {option}={value}")
    assert done.returncode == 2
    assert done.stderr == f"pylighthouse: serve: {option}: expected {expected}\n"


@pytest.mark.parametrize("option, value, expected", [
    ("--max-work", "-5", "expected a whole number >= 0, got -5"),
    ("--max-body-bytes", "1" * 19, "a number of 19 digits; at most 18"),
    ("--max-rubric", "-1", "expected a whole number >= 0, got -1"),
    ("--max-response-bytes", "-2", "expected a whole number >= 0, got -2")])
def test_a_limit_out_of_range_is_named_by_its_option(option, value, expected, capsys):
    # (named by the field, "max_work: ...", which serve has no option for)
    assert main(["serve", "--port", "0", option, value]) == 2
    assert capsys.readouterr().err == f"pylighthouse: serve: {option}: {expected}\n"


def test_a_file_holding_a_json_string_is_not_decoded_twice(tmp_path, capsys):
    path = tmp_path / "string.json"
    path.write_text(json.dumps(json.dumps(problem(1))))
    assert main(["assign", str(path)]) == 2
    assert capsys.readouterr().err.startswith(
        f"pylighthouse: {path}: problem: expected an object (problem), got \"{{")
    assert main(["validate", str(path)]) == 2
    assert "expected an object (problem)" in capsys.readouterr().err


def test_repeated_keys_in_a_file_are_named(tmp_path, capsys):
    path = tmp_path / "twice.json"
    path.write_text('{"nodes": [{"name": "n", "resources": {"cpu": 1, "cpu": 9}}], '
                    '"workloads": []}')
    assert main(["validate", str(path)]) == 2
    assert capsys.readouterr().err == (
        f'pylighthouse: {path}: invalid JSON: nodes[0].resources.cpu: duplicate key "cpu" '
        f'(each key may appear once)\n')


# -------------------------------------------------------------- progress

class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_shows_a_long_phase_on_a_terminal_and_erases_it():
    stream = Terminal()
    with Progress(stream, delay=0, interval=0.01).phase("placing 3 workloads"):
        time.sleep(0.1)
    written = stream.getvalue()
    assert "\rpylighthouse: placing 3 workloads... 0 s" in written
    assert written.endswith("\r")
    assert written.rstrip("\r ").endswith(" s")


def test_progress_is_silent_off_a_terminal_and_for_short_phases():
    piped = io.StringIO()
    with Progress(piped, delay=0, interval=0.01).phase("placing"):
        time.sleep(0.05)
    assert piped.getvalue() == ""
    terminal = Terminal()
    with Progress(terminal, delay=5).phase("placing"):
        pass
    assert terminal.getvalue() == ""


def test_the_command_says_nothing_on_a_piped_stderr():
    done = shell(f"{PYTHON} assign examples/tour.json")
    assert done.returncode == 0 and done.stderr == ""


# ----------------------------------------------------------------- table

def test_the_table_never_rounds_a_resource_short_of_full_to_100(tmp_path, capsys):
    data = {"nodes": [{"name": "n", "resources": {"cpu": 200, "mem": 1000}}],
            "workloads": [{"name": "w", "requirements": {"cpu": 199, "mem": 1}}]}
    path = tmp_path / "p.json"
    path.write_text(json.dumps(data))
    assert main(["assign", str(path), "--format", "table"]) == 0
    out = capsys.readouterr().out
    assert "  cpu  [###################.] 199/200 used (99%)\n" in out
    assert "  mem  [#...................] 1/1000 used (1%)\n" in out
    assert out.endswith("\nCluster: 1 node, 1 placed, 0 unplaced; fill: cpu 99%, mem 1%\n")


def test_the_summary_fills_only_the_room_above_zero(tmp_path, capsys):
    # (a shortcoming was counted as capacity, 2/2 "100%", and a ward took
    # the resource out of the line)
    for other in (-2, "-inf"):
        data = {"nodes": [{"name": "a", "resources": {"cpu": 4}},
                          {"name": "b", "resources": {"cpu": other}}],
                "workloads": [{"name": "w", "requirements": {"cpu": 2}}]}
        path = tmp_path / "p.json"
        path.write_text(json.dumps(data))
        assert main(["assign", str(path), "--format", "table"]) == 0
        assert capsys.readouterr().out.endswith(
            "\nCluster: 2 nodes, 1 placed, 0 unplaced; fill: cpu 50%\n")


def test_the_summary_counts_the_unplaced(tmp_path, capsys):
    path = tmp_path / "p.json"
    path.write_text(json.dumps(problem(3, capacity=2)))
    assert main(["assign", str(path), "--format", "table"]) == 1
    assert capsys.readouterr().out.endswith(
        "\nCluster: 1 node, 2 placed, 1 unplaced; fill: cpu 100%\n")


# ------------------------------------------------------------------ help

@pytest.mark.parametrize("args", [["--help"], ["assign", "--help"], ["validate", "--help"],
                                  ["serve", "--help"], ["manage", "--help"]])
def test_help_has_examples(args, capsys):
    with pytest.raises(SystemExit):
        main(args)
    out = capsys.readouterr().out
    assert re.search(r"^examples?( \(.*checkout of the repository\))?:$", out, re.M)
    assert "  pylighthouse " in out


# ----------------------------------------------------------------- serve

def interruptible():
    """In the server's process, before it starts: SIGINT back to its default.
    A test run started as a background job has SIGINT ignored, which a child
    inherits (Python then never raises KeyboardInterrupt); a server started
    from a terminal has the default, and that is what these tests check."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def serving(*args, env=ENV):
    process = subprocess.Popen([sys.executable, "-m", "pylighthouse", "serve", "--port", "0",
                                *args], cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True,
                               preexec_fn=interruptible)
    banner = process.stderr.readline()
    return process, banner


def stop(process):
    """Stop the server with SIGINT (Ctrl-C); it must exit 0."""
    process.send_signal(signal.SIGINT)
    try:
        assert process.wait(timeout=TIMEOUT) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(TIMEOUT)
        process.stderr.close()


def healthy_port(banner):
    """The port the banner names, once /health answers ok there."""
    port = int(re.search(r"http://127\.0\.0\.1:(\d+)/", banner).group(1))
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=10) as answer:
        assert json.loads(answer.read())["status"] == "ok"
    return port


@contextlib.contextmanager
def serving_on(server, *args):
    """``pylighthouse serve`` on ``server`` (skipped when it is not
    installed) with ``args``; yields its port once healthy, stops it after."""
    if server == "waitress":
        pytest.importorskip("waitress")
    process, banner = serving("--server", server, *args)
    try:
        assert f"with {server} " in banner, banner
        yield healthy_port(banner)
    finally:
        stop(process)


@pytest.mark.parametrize("server", ["wsgiref", "waitress"])
def test_a_request_target_in_absolute_form_is_routed_alike_on_both_servers(server):
    # (GET http://host/health: 404 on wsgiref, which passes the whole
    # target as the path, and 200 on waitress)
    with serving_on(server) as port:
        for target, status in [("http://127.0.0.1/health", 200),
                               ("HTTP://example.com/health?x=1", 200),
                               ("http://127.0.0.1/nope", 404),
                               # (a "?" sent encoded is part of the path)
                               ("http://127.0.0.1/health%3Fx", 404),
                               ("http://127.0.0.1/health%23x", 404)]:
            answer = exchange(port, f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                    "Connection: close\r\n\r\n".encode())
            assert answer[0] == status, (target, answer)
            assert ("status" if status == 200 else "error") in json.loads(answer[2])


@pytest.mark.parametrize("server", ["wsgiref", "waitress"])
def test_serve_runs_on_the_server_asked_for(server):
    if server == "waitress":
        pytest.importorskip("waitress")
    process, banner = serving("--server", server, "--max-work", "4")
    try:
        assert f"with {server} " in banner, banner
        port = healthy_port(banner)
        body = json.dumps(problem(5)).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{port}/assign-workloads",
                                         data=body, method="POST")
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(request, timeout=10)
        assert caught.value.code == 413
        assert "the limit is 4 (max_work;" in json.loads(caught.value.read())["error"]
    finally:
        stop(process)


@pytest.mark.parametrize("server", ["wsgiref", "waitress"])
def test_serve_answers_requests_the_server_refuses_itself_in_json(server):
    # waitress refuses some requests before the application sees them; its
    # own answers were plain text
    with serving_on(server, "--max-body-bytes", "1000") as port:
        post = b"POST /assign-workloads HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
        status, headers, body = exchange(port, post + b"Content-Length: 2000000\r\n\r\n{")
        assert (status, headers["content-type"]) == (413, "application/json")
        assert json.loads(body) == {"error": "the body is 2000000 bytes; the limit is 1000 "
                                    "(max_body_bytes)"}
        status, headers, body = exchange(port, post + b"Content-Length: abc\r\n\r\n{")
        assert (status, headers["content-type"]) == (400, "application/json")
        assert "Content-Length" in json.loads(body)["error"]
        status, headers, body = exchange(port, b"GARBAGE\r\n\r\n")
        assert (status, headers["content-type"]) == (400, "application/json")
        assert json.loads(body)["error"]
        if server == "waitress":  # (a coding it does not decode: 501, as documented)
            coded = b"Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"
            status, headers, body = exchange(port, post + coded)
            assert (status, headers["content-type"]) == (501, "application/json")
            assert "Transfer-Encoding" in json.loads(body)["error"]


def padded(size):
    """A problem's JSON, padded with spaces to ``size`` bytes."""
    body = json.dumps(problem(1)).encode()
    return body[:-1] + b" " * (size - len(body)) + b"}"


def chunked(body, pieces):
    """``body`` in ``pieces`` chunks of a chunked transfer coding."""
    step = -(-len(body) // pieces)
    parts = [body[at:at + step] for at in range(0, len(body), step)]
    return b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in parts) + b"0\r\n\r\n"


@pytest.mark.parametrize("server", ["wsgiref", "waitress"])
def test_a_body_at_the_limit_is_read_and_one_byte_more_refused(server):
    # (waitress refused a body of exactly the limit, and a chunked one
    # well under it once its chunks' framing reached the limit)
    with serving_on(server, "--max-body-bytes", "200") as port:
        post = b"POST /assign-workloads HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
        status, _, body = exchange(port, post + b"Content-Length: 200\r\n\r\n" + padded(200))
        assert status == 200 and json.loads(body)["successful"]
        status, _, body = exchange(port, post + b"Content-Length: 201\r\n\r\n" + padded(201))
        assert (status, json.loads(body)) == (413, {"error": "the body is 201 bytes; "
                                                             "the limit is 200 "
                                                             "(max_body_bytes)"})
        if server == "waitress":  # (wsgiref reads no chunked body: see test_http_servers)
            coding = b"Transfer-Encoding: chunked\r\n\r\n"
            for size, pieces in ((200, 1), (199, 1), (150, 10), (200, 50)):
                status, _, body = exchange(port, post + coding + chunked(padded(size), pieces))
                assert status == 200 and json.loads(body)["successful"], (size, pieces, body)
            status, _, body = exchange(port, post + coding + chunked(padded(201), 3))
            assert (status, json.loads(body)) == (413, {"error": "the body is 201 bytes; "
                                                                 "the limit is 200 "
                                                                 "(max_body_bytes)"})
            # (a chunk whose framing outweighs the room left for it: 64 KiB)
            framed = b"c8;note=" + b"x" * 70000 + b"\r\n" + padded(200) + b"\r\n0\r\n\r\n"
            status, _, body = exchange(port, post + coding + framed)
            assert status == 413
            assert json.loads(body)["error"].startswith("the chunked body came to over ")
            assert json.loads(body)["error"].endswith("bytes of body (max_body_bytes)")


def test_waitress_drops_a_stalled_body_after_its_timeout_not_its_sweep():
    # (waitress looked for silent connections every 30 s whatever --timeout
    # said: a stalled body held its connection 30 s with --timeout 1)
    pytest.importorskip("waitress")
    process, banner = serving("--server", "waitress", "--timeout", "1")
    try:
        port = healthy_port(banner)
        with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as client:
            client.sendall(b"POST /assign-workloads HTTP/1.1\r\nHost: x\r\n"
                           b"Content-Length: 100\r\n\r\n{")
            client.settimeout(20)  # (well under the 30 s sweep)
            assert client.recv(100) == b""  # (dropped, unanswered)
    finally:
        stop(process)


def test_serve_takes_its_limits_from_the_environment_unless_given():
    env = dict(ENV, PYLIGHTHOUSE_MAX_WORK="4")
    body = json.dumps(problem(5)).encode()
    for args, limit in (((), 4), (("--max-work", "100"), None)):
        process, banner = serving("--server", "wsgiref", *args, env=env)
        try:
            port = healthy_port(banner)
            request = urllib.request.Request(f"http://127.0.0.1:{port}/assign-workloads",
                                             data=body, method="POST")
            if limit is None:
                with urllib.request.urlopen(request, timeout=10) as answer:
                    assert answer.status == 200
            else:
                with pytest.raises(urllib.error.HTTPError) as caught:
                    urllib.request.urlopen(request, timeout=10)
                assert caught.value.code == 413
                assert f"the limit is {limit} (max_work;" in \
                    json.loads(caught.value.read())["error"]
        finally:
            stop(process)


def test_a_limit_given_as_an_option_leaves_its_variable_unread(monkeypatch):
    # (a malformed variable stopped the server though its option replaced it)
    import pylighthouse.service as service
    started = []
    monkeypatch.setattr(service, "serve", lambda *args, **kwargs: started.append(kwargs))
    monkeypatch.setenv("PYLIGHTHOUSE_MAX_WORK", "abc")
    assert main(["serve", "--port", "0", "--max-work", "5"]) == 0
    assert started[0]["limits"].max_work == 5
    assert main(["serve", "--port", "0"]) == 2


def test_a_bad_limit_variable_is_a_clean_error_and_only_where_read():
    env = dict(ENV, PYLIGHTHOUSE_MAX_WORK="abc")
    run = subprocess.run([sys.executable, "-m", "pylighthouse", "serve", "--port", "0"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    assert run.returncode == 2
    assert run.stderr == ("pylighthouse: serve: PYLIGHTHOUSE_MAX_WORK: expected a whole "
                          "number >= 0, got 'abc'\n")
    # importing the module reads nothing; looking up its app (as a server
    # does at start) reads the variables, and stops there
    script = ("import pylighthouse.service as service\n"
              "try:\n    service.app\nexcept ValueError as error:\n    print(error)\n")
    run = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=TIMEOUT)
    assert run.stdout == "PYLIGHTHOUSE_MAX_WORK: expected a whole number >= 0, got 'abc'\n"


def test_serve_auto_prefers_waitress_when_installed():
    try:
        import waitress  # noqa: F401
        expected = "waitress"
    except ImportError:
        expected = "wsgiref"
    process, banner = serving()
    try:
        assert f"with {expected} " in banner, banner
    finally:
        stop(process)


def test_assign_reports_its_phases_on_a_terminal(monkeypatch, capsys):
    from pylighthouse import cli

    terminal = Terminal()
    slow = Progress(terminal, delay=0, interval=0.001)
    real_phase = slow.phase

    def phase(text):  # every phase lasts long enough to be shown
        manager = real_phase(text)

        class Slow:
            def __enter__(self):
                manager.__enter__()
                time.sleep(0.05)

            def __exit__(self, *exc):
                return manager.__exit__(*exc)
        return Slow()

    slow.phase = phase
    monkeypatch.setattr(cli, "Progress", lambda: slow)
    monkeypatch.chdir(ROOT)
    assert main(["assign", "examples/tour.json"]) == 0
    shown = terminal.getvalue()
    for text in ("reading examples/tour.json", "placing 3 workloads on 3 nodes (BinPack)",
                 "writing the answer"):
        assert f"\rpylighthouse: {text}... " in shown
    assert json.loads(capsys.readouterr().out)["successful"] is True
