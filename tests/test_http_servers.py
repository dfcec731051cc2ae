"""Hostile HTTP clients against real servers: the bundled wsgiref server and gunicorn.

Raw sockets send what a well-behaved client library would not (broken
chunks, short bodies, odd Content-Length headers, silence); every answer the
application gives must be JSON and a 4xx, never a 500, and the bundled
server must stay up. gunicorn runs in a subprocess (skipped when it is not
installed) with small limits set through the environment, as the production
docs say.
"""
import io
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from unittest import mock

import pytest

import pylighthouse
from pylighthouse import service
from pylighthouse.service import Limits, make_app, make_wsgi_server

ROOT = Path(__file__).resolve().parent.parent
OPENAPI = json.loads((ROOT / "pylighthouse" / "schemas" / "openapi.json").read_text())
LIMITS = Limits(max_body_bytes=64 * 1024, max_work=400, max_rubric=50,
                max_response_bytes=4096)
TIMEOUT = 15
SMALL = b'{"nodes": [{"id": "n", "resources": {"cpu": 2}}], ' \
        b'"workloads": [{"id": "w", "requirements": {"cpu": 1}}]}'


# ------------------------------------------------------------ the servers

def start_bundled(**options):
    httpd = make_wsgi_server("127.0.0.1", 0, quiet=True, limits=LIMITS, **options)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    return httpd, thread


def stop_bundled(httpd, thread):
    httpd.shutdown()
    httpd.server_close()
    thread.join(TIMEOUT)


@pytest.fixture(scope="module")
def bundled():
    httpd, thread = start_bundled(timeout=1.0)
    try:
        yield httpd.server_port
    finally:
        stop_bundled(httpd, thread)


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def gunicorn():
    pytest.importorskip("gunicorn")
    port = free_port()
    env = dict(os.environ, PYTHONPATH=str(ROOT),
               **{f"PYLIGHTHOUSE_{key.upper()}": str(value)
                  for key, value in {"max_body_bytes": LIMITS.max_body_bytes,
                                     "max_work": LIMITS.max_work,
                                     "max_rubric": LIMITS.max_rubric,
                                     "max_response_bytes": LIMITS.max_response_bytes}.items()})
    command = [sys.executable, "-m", "gunicorn", "--workers", "2", "--timeout", "30",
               "--bind", f"127.0.0.1:{port}", "pylighthouse.service:app"]
    help_text = subprocess.run([sys.executable, "-m", "gunicorn", "--help"],
                               capture_output=True, text=True, timeout=TIMEOUT).stdout
    if "--no-control-socket" in help_text:
        command.insert(3, "--no-control-socket")
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if exchange(port, b"GET /health HTTP/1.0\r\n\r\n")[0] == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline or process.poll() is not None:
                pytest.fail("gunicorn did not start: " + process.stderr.read1().decode())
            time.sleep(0.2)
        yield port
    finally:
        process.terminate()
        try:
            process.wait(TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(TIMEOUT)
        process.stderr.close()


@pytest.fixture(params=["bundled", "gunicorn"])
def port(request):
    return request.getfixturevalue(request.param)


# ---------------------------------------------------------------- sockets

def exchange(port, data, shut=True, wait=TIMEOUT):
    """Send raw bytes, read until the server closes; return (status, headers, body)."""
    with socket.create_connection(("127.0.0.1", port), timeout=wait) as connection:
        connection.sendall(data)
        if shut:
            try:
                connection.shutdown(socket.SHUT_WR)
            except OSError:  # the server answered and closed first (a 503 at once)
                pass
        received = b""
        while True:
            chunk = connection.recv(65536)
            if not chunk:
                break
            received += chunk
    return parse(received)


def parse(received):
    head, _, body = received.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1]) if lines[0] else 0
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return status, headers, body


def post(body, *headers):
    lines = ["POST /assign-workloads HTTP/1.1", "Host: test", "Connection: close", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def length(body):
    return f"Content-Length: {len(body)}"


def error_of(answer, status):
    got, headers, body = answer
    assert got == status, (got, body)
    assert headers["content-type"] == "application/json"
    assert int(headers["content-length"]) == len(body)
    return json.loads(body)["error"]


# ------------------------------------------------------- the application

def test_a_plain_request_is_answered(port):
    status, headers, body = exchange(port, post(SMALL, length(SMALL)))
    assert (status, json.loads(body)) == (200, {"successful": True, "assignments": {"w": "n"}})


def test_a_body_shorter_than_its_content_length_is_a_400(port):
    error = error_of(exchange(port, post(SMALL, "Content-Length: 500")), 400)
    assert error == f"the body ended after {len(SMALL)} of the 500 bytes Content-Length " \
                    f"announced"


@pytest.mark.parametrize("value", ["+105", "1_05", "0x69", "\u0661\u0660\u0665", "-5", "1e2"])
def test_content_length_must_be_ascii_digits(port, value):
    answer = exchange(port, post(b"x" * 105, f"Content-Length: {value}".encode(
        "utf-8").decode("latin-1")))
    assert answer[0] == 400
    if answer[1].get("content-type") == "application/json":  # gunicorn's own: HTML
        assert "Content-Length" in json.loads(answer[2])["error"]


def test_a_content_length_of_many_digits_is_over_the_limit(port):
    # (plain digits, however many: a size, so a 413, not a 400)
    answer = exchange(port, post(b"x" * 105, "Content-Length: 99999999999999999999999"))
    assert answer[0] == 413
    assert json.loads(answer[2])["error"].startswith(
        "the body is a 23-digit number of bytes; the limit is ")
    assert json.loads(answer[2])["error"].endswith(" (max_body_bytes)")


def test_differing_duplicate_content_lengths_are_refused(port):
    answer = exchange(port, post(SMALL, length(SMALL), f"Content-Length: {len(SMALL) + 1}"))
    assert answer[0] == 400
    if answer[1].get("content-type") == "application/json":
        assert "Content-Length" in json.loads(answer[2])["error"]


def test_a_body_without_content_length_gets_411(port):
    assert "Content-Length" in error_of(exchange(port, post(SMALL)), 411)


def test_broken_chunking_is_a_4xx_never_a_500(port, request):
    chunked = post(b"ZZ\r\nabc\r\n0\r\n\r\n", "Transfer-Encoding: chunked")
    answer = exchange(port, chunked)
    if "gunicorn" in request.node.callspec.id:
        assert "could not be read" in error_of(answer, 400)
    else:  # wsgiref does not decode chunked bodies: no length, so 411
        error_of(answer, 411)


def test_a_good_chunked_body_is_read_by_gunicorn(gunicorn):
    chunked = post(b"%x\r\n" % len(SMALL) + SMALL + b"\r\n0\r\n\r\n",
                   "Transfer-Encoding: chunked")
    status, _, body = exchange(gunicorn, chunked)
    assert (status, json.loads(body)["successful"]) == (200, True)


def test_head_answers_without_a_body(port):
    status, headers, body = exchange(port, b"HEAD /health HTTP/1.0\r\n\r\n")
    assert (status, body) == (200, b"")
    assert headers["content-type"] == "application/json" and int(headers["content-length"]) > 0
    status, headers, body = exchange(port, b"HEAD /assign-workloads HTTP/1.0\r\n\r\n")
    assert (status, body, headers["allow"]) == (405, b"", "POST")


def test_the_openapi_document_is_served(port):
    status, headers, body = exchange(port, b"GET /openapi.json HTTP/1.0\r\n\r\n")
    assert status == 200 and headers["content-type"] == "application/json"
    assert json.loads(body) == OPENAPI
    status, _, body = exchange(port, b"GET /problem.schema.json HTTP/1.0\r\n\r\n")
    assert status == 200 and json.loads(body)["title"] == "pylighthouse problem"
    status, headers, _ = exchange(port, b"DELETE /openapi.json HTTP/1.0\r\n\r\n")
    assert (status, headers["allow"]) == (405, "GET, HEAD")


def big(nodes, workloads, **extra):
    return json.dumps({"nodes": [{"id": f"n{i}", "resources": {"cpu": 1}}
                                 for i in range(nodes)],
                       "workloads": [{"id": f"w{i}", "requirements": {"cpu": 1}}
                                     for i in range(workloads)], **extra}).encode()


def test_work_over_the_limit_gets_413(port):
    body = big(21, 20)
    error = error_of(exchange(port, post(body, length(body))), 413)
    assert error == "21 nodes x 20 workloads is 420 units of work; the limit is 400 " \
                    "(max_work; split the problem)"
    body = big(20, 20)
    assert exchange(port, post(body, length(body)))[0] == 200


def test_a_rubric_over_the_limit_gets_413(port):
    rubric = {f"unused-{i}": 1 for i in range(51)}
    body = big(2, 2, strategy="BinPack", rubric=rubric)
    assert error_of(exchange(port, post(body, length(body))), 413) == \
        "rubric: 51 entries; the limit is 50 (max_rubric)"


def test_an_answer_over_the_limit_gets_413(port):
    body = big(1, 300, partial=True)  # 299 reasons: well over 4096 bytes
    error = error_of(exchange(port, post(body, length(body))), 413)
    assert error.startswith("the answer is ") and "the limit is 4096 (max_response_bytes;" in error


def test_duplicate_keys_and_lone_surrogates_get_400_with_the_path(port):
    body = b'{"nodes": [{"id": "n", "resources": {"cpu": 1, "cpu": 5}}], "workloads": []}'
    assert error_of(exchange(port, post(body, length(body))), 400) == \
        'problem: invalid JSON: nodes[0].resources.cpu: duplicate key "cpu" ' \
        '(each key may appear once)'
    body = b'{"nodes": [{"id": "\\udc00", "resources": {}}], "workloads": []}'
    assert error_of(exchange(port, post(body, length(body))), 400) == \
        "nodes[0].id: not valid Unicode (a lone surrogate)"


def test_many_clients_at_once_all_get_answers(port):
    def one(_):
        return exchange(port, post(SMALL, length(SMALL)))[0]

    with ThreadPoolExecutor(max_workers=8) as pool:
        statuses = list(pool.map(one, range(48), timeout=120))
    assert statuses == [200] * 48


# ------------------------------------------------- the bundled server only

def test_a_burst_of_connections_is_queued_not_refused():
    httpd, thread = start_bundled(timeout=5.0)
    try:
        assert httpd.request_queue_size >= 128
        barrier = threading.Barrier(100)

        def one(_):
            barrier.wait(TIMEOUT)
            return exchange(httpd.server_port, b"GET /health HTTP/1.0\r\n\r\n")[0]

        with ThreadPoolExecutor(max_workers=100) as pool:
            statuses = list(pool.map(one, range(100), timeout=120))
        assert statuses == [200] * 100
    finally:
        stop_bundled(httpd, thread)


def test_a_silent_client_is_dropped_and_a_stalled_body_gets_400(bundled):
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", bundled), timeout=TIMEOUT) as silent:
        assert silent.recv(100) == b""  # closed by the server's 1 s timeout
    assert time.monotonic() - started < TIMEOUT
    stalled = exchange(bundled, post(SMALL[:10], "Content-Length: 100"), shut=False)
    assert "could not be read" in error_of(stalled, 400)  # the connection kept open


def status_now(port):
    """The status of a health check now, or ``None`` when the server cut the
    connection first (a 503 sent and the socket closed before this side
    finished sending: the slots are not free yet)."""
    try:
        return exchange(port, b"GET /health HTTP/1.0\r\n\r\n")[0]
    except OSError:
        return None


def test_connections_over_the_cap_get_503_and_the_server_recovers():
    httpd, thread = start_bundled(timeout=30.0, max_connections=4)
    port = httpd.server_port
    try:
        idle = [socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
                for _ in range(4)]
        try:
            # The server accepts in order: by the time it takes this one, the
            # four idle ones hold every slot (and will for 30 s).
            error = error_of(exchange(port, b"GET /health HTTP/1.0\r\n\r\n"), 503)
            assert error == "too many connections; try again shortly"
        finally:
            for connection in idle:
                connection.close()
        deadline = time.monotonic() + TIMEOUT
        while status_now(port) != 200:
            assert time.monotonic() < deadline
            time.sleep(0.1)
    finally:
        stop_bundled(httpd, thread)


def accepted(httpd):
    """A client socket and the server's side of it, accepted but not served."""
    client = socket.create_connection(("127.0.0.1", httpd.server_port), timeout=TIMEOUT)
    request, address = httpd.get_request()
    return client, request, address


def slots_free(httpd, count):
    deadline = time.monotonic() + TIMEOUT
    while httpd._slots._value != count:  # (threading.BoundedSemaphore's count)
        assert time.monotonic() < deadline
        time.sleep(0.01)


def test_an_interrupt_while_a_connection_thread_starts_stops_the_server():
    # Ctrl-C landing while start() waits for the new thread: the interrupt
    # must come out (socketserver serves on after any Exception), and the
    # slot is given back once, by the thread.
    httpd = make_wsgi_server("127.0.0.1", 0, quiet=True, limits=LIMITS, timeout=1.0,
                             max_connections=2)
    start = threading.Thread.start

    def started_then_interrupted(thread):
        start(thread)
        raise KeyboardInterrupt

    failures = []
    try:
        client, request, address = accepted(httpd)
        with mock.patch.object(threading, "excepthook",
                               lambda failure: failures.append(failure.exc_value)):
            with mock.patch.object(threading.Thread, "start", started_then_interrupted):
                with pytest.raises(KeyboardInterrupt):
                    httpd.process_request(request, address)
            client.sendall(b"GET /health HTTP/1.0\r\n\r\n")
            assert b" 200 " in client.recv(65536)
            client.close()
            slots_free(httpd, 2)
            time.sleep(0.2)  # the thread ends after giving its slot back
        assert failures == []  # (given back twice: ValueError in the thread)
    finally:
        httpd.server_close()


def test_a_connection_thread_that_cannot_start_gives_its_slot_back():
    httpd = make_wsgi_server("127.0.0.1", 0, quiet=True, limits=LIMITS, max_connections=2)
    try:
        client, request, address = accepted(httpd)
        with mock.patch.object(threading.Thread, "start",
                               side_effect=RuntimeError("can't start new thread")):
            with pytest.raises(RuntimeError):
                httpd.process_request(request, address)
        request.close()
        client.close()
        slots_free(httpd, 2)
    finally:
        httpd.server_close()


@pytest.mark.parametrize("data, status", [
    (b"GARBAGE\r\n\r\n", 400),
    (b"GET /health HTTP/9.9\r\n\r\n", 505),
    (b"GET /health HTTP/0.9\r\n\r\n", 505),
    (b"GET /health HTTP/1.2\r\n\r\n", 505),
    # (a request line without a version is HTTP/0.9: it was answered in
    # 0.9, a bare body with no status; and without the empty line, not at
    # all until the timeout)
    (b"GET /health\r\n\r\n", 505),
    (b"GET /health\r\n", 505),
    (b"GET /" + b"a" * 70000 + b" HTTP/1.0\r\n\r\n", 414),
])
def test_the_bundled_server_answers_its_own_errors_in_json(bundled, data, status):
    assert error_of(exchange(bundled, data), status)


@pytest.mark.parametrize("line", [b"GET /health\r\n", b"POST /assign-workloads\r\n"])
def test_a_request_without_a_version_is_answered_at_once(bundled, line):
    # (HTTP/0.9: the server read headers that never come, until its timeout,
    # then answered a bare body; a POST got 400)
    assert error_of(exchange(bundled, line, shut=False, wait=5), 505)


def test_the_body_limit_given_in_limits_is_the_servers():
    # (make_wsgi_server's own max_body_bytes, 1 MiB by default, replaced it)
    server = make_wsgi_server("127.0.0.1", 0, quiet=True, limits=Limits(max_body_bytes=1000))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        body = b"x" * 5000
        answer = exchange(server.server_port, b"POST /assign-workloads HTTP/1.0\r\n"
                          b"Content-Length: 5000\r\n\r\n" + body)
        assert error_of(answer, 413)
    finally:
        server.shutdown()
        server.server_close()


def test_the_bundled_server_checks_its_settings():
    with pytest.raises(ValueError, match="port"):
        make_wsgi_server("127.0.0.1", 99999)
    with pytest.raises(ValueError, match="^timeout: expected a finite number of seconds"):
        make_wsgi_server("127.0.0.1", 0, timeout=Decimal("sNaN"))
    for timeout in [0, -1.5, float("nan"), float("inf"), "30", True, None]:
        with pytest.raises(ValueError, match=re.escape(f"timeout: expected a finite number "
                                                       f"of seconds > 0, got {timeout!r}")):
            make_wsgi_server("127.0.0.1", 0, timeout=timeout)
    for count in [0, -1, 2.5, True, "4"]:
        with pytest.raises(ValueError, match=re.escape(f"max_connections: expected a whole "
                                                       f"number >= 1, got {count!r}")):
            make_wsgi_server("127.0.0.1", 0, max_connections=count)
    for timeout, count in [(Decimal("2.5"), 3), (Fraction(5, 2), 3), (2, 3)]:
        httpd = make_wsgi_server("127.0.0.1", 0, timeout=timeout, max_connections=count)
        httpd.server_close()  # (any real number of seconds, as before)
    for server in ["waitress", "wsgiref", "auto"]:  # (checked before either starts)
        with pytest.raises(ValueError, match="timeout: expected a finite number"):
            service.serve("127.0.0.1", 0, server=server, timeout=float("nan"))
        with pytest.raises(ValueError, match="max_connections: expected a whole number"):
            service.serve("127.0.0.1", 0, server=server, max_connections=0)


# ------------------------------------------------------------ in-process

def test_an_unexpected_error_is_logged_with_its_traceback(monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(service, "solve", broken)
    errors = io.StringIO()
    started = {}
    environ = {"REQUEST_METHOD": "POST", "PATH_INFO": "/assign-workloads",
               "CONTENT_LENGTH": str(len(SMALL)), "wsgi.input": io.BytesIO(SMALL),
               "wsgi.errors": errors}
    body = b"".join(make_app()(environ, lambda status, headers: started.update(s=status)))
    assert started["s"].startswith("500") and json.loads(body) == {"error": "internal error"}
    log = errors.getvalue()
    assert "Traceback (most recent call last)" in log and "RuntimeError: boom" in log
    assert "POST /assign-workloads" in log


def test_limits_come_from_the_environment():
    limits = Limits.from_environ({"PYLIGHTHOUSE_MAX_WORK": "12", "PYLIGHTHOUSE_MAX_RUBRIC": "3"})
    assert (limits.max_work, limits.max_rubric) == (12, 3)
    assert limits.max_body_bytes == service.DEFAULT_MAX_BODY_BYTES
    with pytest.raises(ValueError, match="PYLIGHTHOUSE_MAX_WORK"):
        Limits.from_environ({"PYLIGHTHOUSE_MAX_WORK": "lots"})
    with pytest.raises(ValueError, match="max_rubric"):
        Limits(max_rubric=-1)


def test_the_version_is_the_packages():
    assert json.loads(exchange_in_process("/health"))["version"] == pylighthouse.__version__


def exchange_in_process(path):
    environ = {"REQUEST_METHOD": "GET", "PATH_INFO": path, "wsgi.input": io.BytesIO()}
    return b"".join(make_app()(environ, lambda status, headers: None))


def test_the_connection_cap_stays_within_the_open_file_limit(monkeypatch):
    resource = pytest.importorskip("resource")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(100, hard), hard))
    try:
        left = service._open_files_left()  # opens nothing while the limit is low
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert left == min(100, hard) - 32
    monkeypatch.setattr(service, "_open_files_left", lambda: 5)
    httpd = make_wsgi_server("127.0.0.1", 0, quiet=True, max_connections=256)
    try:
        assert httpd.max_connections == 5
    finally:
        httpd.server_close()
