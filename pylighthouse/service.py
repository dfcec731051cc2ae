"""The HTTP endpoint: a WSGI application answering ``POST /assign-workloads``.

Any WSGI server can run :data:`app` (``gunicorn pylighthouse.service:app``);
:func:`serve` runs it on waitress when that is installed, else on the
standard library's wsgiref, hardened for loopback use (see
:func:`make_wsgi_server`). Every answer is JSON, errors included::

    POST /assign-workloads  a problem -> 200 {"successful": ..., "assignments": {...}}
    GET  /health            -> 200 {"status": "ok", "version": "..."}
    GET  /openapi.json      -> the OpenAPI document of this service
    GET  /problem.schema.json -> the JSON Schema of a problem

A bad request gets 400 with ``{"error": "<JSON path>: <what is wrong>"}``,
a request over one of the :class:`Limits` 413, another method 405 (with
``Allow``), another path 404; ``HEAD`` is answered wherever ``GET`` is,
without a body. Each request builds its own distributor: nothing is shared
between requests.
"""
import importlib
import json
import math
import numbers
import os
import re
import socket
import socketserver
import sys
import threading
import traceback
from importlib.resources import files
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

import attr

from . import __version__
from .errors import LighthouseException, counted, shown
from .problem import load_problem, parse_json, solve
from .quantities import seconds_of

__all__ = ["Limits", "make_app", "app", "serve", "make_wsgi_server", "ThreadingWSGIServer",
           "DEFAULT_MAX_BODY_BYTES"]

#: The default largest request body, in bytes (1 MiB).
DEFAULT_MAX_BODY_BYTES = 1 << 20

_READ_CHUNK = 1 << 16
_DIGITS = re.compile(r"[0-9]+\Z")  # ASCII digits only: no sign, space or _
#: More significant digits than this is more than any limit (and than
#: ``int`` reads from text in one go): judged by its length.
_LONGEST = 18

StartResponse = Callable[..., Any]
Application = Callable[[Dict[str, Any], StartResponse], Iterable[bytes]]

_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found",
            405: "Method Not Allowed", 411: "Length Required",
            413: "Payload Too Large", 500: "Internal Server Error",
            503: "Service Unavailable"}


def _count(value: Any, name: str, least: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"{name}: expected a whole number >= {least}, got {value!r}")
    whole: int = value
    return whole


def _limit(value: Any, name: str) -> int:
    """A :class:`Limits` field: a whole number >= 0 of at most
    :data:`_LONGEST` digits, as the environment variables are read."""
    whole = _count(value, name)
    if len(str(whole)) > _LONGEST:
        raise ValueError(f"{name}: a number of {len(str(whole))} digits; at most {_LONGEST}")
    return whole


def server_settings(timeout: Any, max_connections: Any,
                    names: Tuple[str, str] = ("timeout", "max_connections")
                    ) -> Tuple[float, int]:
    """Check a server's ``timeout`` (seconds, finite and above zero) and
    ``max_connections`` (at least one), the same for either server;
    ``names`` label them in the message (the command line's options).

    Raises:
        ValueError: naming the setting and the value refused.
    """
    seconds = seconds_of(timeout)
    if not 0 < seconds < math.inf:
        raise ValueError(f"{names[0]}: expected a finite number of seconds > 0, "
                         f"got {shown(timeout)}")
    if isinstance(max_connections, numbers.Integral) and not isinstance(max_connections, bool):
        max_connections = int(max_connections)  # (numpy's integers too)
    return seconds, _count(max_connections, names[1], least=1)


@attr.s(frozen=True, slots=True, auto_attribs=True, kw_only=True)
class Limits:
    """How much one request may ask of a worker; over any of them, a 413.

    ``max_body_bytes``: the largest body, judged by ``Content-Length``
    before anything is read. ``max_work``: the largest number of nodes times
    workloads to place (placing and explaining cost up to that much: the
    default, 2,000,000, such as 200 nodes x 10,000 workloads, took at most
    about 6 s on one loaded core, in the worst case of every workload
    unplaced and shaped differently). ``max_rubric``: the most rubric
    entries. ``max_response_bytes``: the largest answer (partial answers
    carry a reason per unplaced workload); past it the answer is replaced by
    a 413 saying its size.

    :meth:`from_environ` reads them from ``PYLIGHTHOUSE_MAX_BODY_BYTES``,
    ``PYLIGHTHOUSE_MAX_WORK``, ``PYLIGHTHOUSE_MAX_RUBRIC`` and
    ``PYLIGHTHOUSE_MAX_RESPONSE_BYTES``, which is how :data:`app` is
    configured under gunicorn or waitress.

    Raises:
        ValueError: a limit is not a whole number >= 0.
    """

    max_body_bytes: int = attr.ib(default=DEFAULT_MAX_BODY_BYTES,
                                  validator=lambda _, a, v: _limit(v, a.name))
    max_work: int = attr.ib(default=2_000_000, validator=lambda _, a, v: _limit(v, a.name))
    max_rubric: int = attr.ib(default=1_000, validator=lambda _, a, v: _limit(v, a.name))
    max_response_bytes: int = attr.ib(default=16 << 20,
                                      validator=lambda _, a, v: _limit(v, a.name))

    @classmethod
    def from_environ(cls, environ: Optional[Mapping[str, str]] = None) -> "Limits":
        """The defaults, replaced by the ``PYLIGHTHOUSE_MAX_*`` variables set
        in ``environ`` (default: ``os.environ``).

        Raises:
            ValueError: a variable is not a whole number; the message names it.
        """
        environ = os.environ if environ is None else environ
        given: Dict[str, int] = {}
        for field in attr.fields(cls):
            variable = f"PYLIGHTHOUSE_{field.name.upper()}"
            text = environ.get(variable)
            if text is not None:
                if not _DIGITS.match(text.strip()):
                    raise ValueError(f"{variable}: expected a whole number >= 0, got {text!r}")
                digits = text.strip().lstrip("0") or "0"
                if len(digits) > _LONGEST:
                    raise ValueError(f"{variable}: a number of {len(digits)} digits; at most "
                                     f"{_LONGEST}")
                given[field.name] = int(digits)
        return cls(**given)


class _Answer(Exception):
    """An HTTP answer other than 200, raised from deep inside a request."""

    def __init__(self, status: int, message: str, headers: Tuple[Tuple[str, str], ...] = ()):
        super().__init__(message)
        self.status = status
        self.headers = list(headers)


def _document(name: str) -> bytes:
    return (files("pylighthouse") / "schemas" / name).read_bytes()


def make_app(max_body_bytes: Optional[int] = None, *,
             limits: Optional[Limits] = None) -> Application:
    """Return the WSGI application, refusing requests over ``limits``.

    ``max_body_bytes`` (the 0.3.0 argument) replaces the limits' body size.
    The body's size is judged by ``Content-Length`` before anything is read,
    and no more than that many bytes are ever read. Without
    ``Content-Length``, a chunked body (``Transfer-Encoding: chunked``) is
    read up to the limit when the server marks its input as terminated
    (``wsgi.input_terminated``); any other gets 411. An error raised while
    reading the body (a broken chunk, a client gone or too slow) is a 400.
    An unexpected error is answered with a 500 and its traceback written to
    ``wsgi.errors``.

    Raises:
        ValueError: a limit is not a whole number >= 0.
    """
    limits = limits or Limits()
    if max_body_bytes is not None:
        limits = attr.evolve(limits, max_body_bytes=_count(max_body_bytes, "max_body_bytes"))
    documents = {"/openapi.json": _document("openapi.json"),
                 "/problem.schema.json": _document("problem.schema.json")}

    def assign(environ: Dict[str, Any]) -> bytes:
        return _assign(_body(environ, limits.max_body_bytes), limits)

    def health(environ: Dict[str, Any]) -> bytes:
        return _encode({"status": "ok", "version": __version__})

    routes: Dict[str, Tuple[str, Callable[[Dict[str, Any]], bytes]]] = {
        "/assign-workloads": ("POST", assign),
        "/health": ("GET", health),
    }
    for path, data in documents.items():
        routes[path] = ("GET", _constant(data))

    def application(environ: Dict[str, Any], start_response: StartResponse) -> List[bytes]:
        head = environ.get("REQUEST_METHOD") == "HEAD"
        try:
            route = routes.get(_path(environ))
            if route is None:
                raise _Answer(404, "no such path; try POST /assign-workloads, "
                                   "GET /health or GET /openapi.json")
            method, handler = route
            allowed = "GET, HEAD" if method == "GET" else method
            if environ.get("REQUEST_METHOD") != method and not (head and method == "GET"):
                raise _Answer(405, f"use {method} here", (("Allow", allowed),))
            return _respond(start_response, 200, handler(environ), head=head)
        except _Answer as answer:
            return _respond(start_response, answer.status, _encode({"error": str(answer)}),
                            answer.headers, head=head)
        except Exception:  # noqa: BLE001 - a server must answer, whatever broke
            _log(environ)
            return _respond(start_response, 500, _encode({"error": "internal error"}),
                            head=head)

    return application


#: A request target in absolute form, as wsgiref passes it: its scheme and
#: host, then the path.
_ABSOLUTE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/]*(/.*)?\Z", re.DOTALL)


def _path(environ: Dict[str, Any]) -> str:
    """The path asked for. A request target in absolute form
    (``GET http://host/health``, which HTTP/1.1 servers must take) reaches
    the application whole from some servers (wsgiref) and as its path from
    others (waitress): its path is taken, so every server routes it alike."""
    path = environ.get("PATH_INFO") or "/"
    if not path.startswith("/"):
        # (the scheme and the host taken off, nothing else: the query is
        # QUERY_STRING already, and a "?" or "#" left here was sent
        # percent-encoded, part of the path, as waitress keeps it)
        found = _ABSOLUTE.match(path)
        if found:
            return found.group(1) or "/"
    return path


def _constant(data: bytes) -> Callable[[Dict[str, Any]], bytes]:
    """A handler that always answers ``data`` (a document the package ships)."""
    return lambda environ: data


def _log(environ: Dict[str, Any]) -> None:
    """Write the traceback being handled to the server's error stream."""
    stream = environ.get("wsgi.errors") or sys.stderr
    try:
        stream.write(f"pylighthouse: internal error answering "
                     f"{environ.get('REQUEST_METHOD')} {environ.get('PATH_INFO')}:\n"
                     f"{traceback.format_exc()}")
        stream.flush()
    except Exception:  # noqa: BLE001 - logging must not turn a 500 into a crash
        pass


def _assign(body: bytes, limits: Limits) -> bytes:
    try:
        data = parse_json(body)
        rubric = data.get("rubric") if isinstance(data, dict) else None
        if isinstance(rubric, dict) and len(rubric) > limits.max_rubric:
            raise _Answer(413, f"rubric: {counted(len(rubric), 'entry', 'entries')}; "
                               f"the limit is {limits.max_rubric} (max_rubric)")
        problem = load_problem(data, parsed=True)
    except LighthouseException as error:
        raise _Answer(400, str(error)) from None
    work = len(problem.nodes) * len(problem.workloads)
    if work > limits.max_work:
        raise _Answer(413, f"{counted(len(problem.nodes), 'node')} x "
                           f"{counted(len(problem.workloads), 'workload')} is "
                           f"{counted(work, 'unit')} of work; the limit is "
                           f"{limits.max_work} (max_work; split the problem)")
    answer = _encode(solve(problem).to_dict())
    if len(answer) > limits.max_response_bytes:
        raise _Answer(413, f"the answer is {len(answer)} bytes; the limit is "
                           f"{limits.max_response_bytes} (max_response_bytes; ask for "
                           f"all-or-nothing, or split the problem)")
    return answer


def _header_text(value: str) -> str:
    """A header's value as its sender wrote it: WSGI hands over its bytes
    decoded as Latin-1 (PEP 3333), which shows UTF-8 text as mojibake."""
    try:
        return value.encode("latin-1").decode("utf-8")
    except UnicodeError:
        return value


def _too_long(length: int, limit: int) -> str:
    """The 413 message of a body announced longer than the limit (the
    application's and, under waitress, the server's own refusal)."""
    return f"the body is {length} bytes; the limit is {limit} (max_body_bytes)"


def _body(environ: Dict[str, Any], limit: int) -> bytes:
    stream = environ["wsgi.input"]
    # (spaces and tabs around a header's value are not part of it, HTTP
    # says; some servers hand them over)
    declared = (environ.get("CONTENT_LENGTH") or "").strip(" \t")
    if not declared:
        chunked = "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower()
        if not (chunked and environ.get("wsgi.input_terminated")):
            raise _Answer(411, "a Content-Length header is required")
        body = _read(stream, limit + 1)
        if len(body) > limit:
            raise _Answer(413, f"the body is over {limit} bytes (max_body_bytes)")
        return body
    if not _DIGITS.match(declared):
        raise _Answer(400, f"Content-Length: not a byte count (ASCII digits only): "
                           f"{_header_text(declared)[:40]!r}")
    digits = declared.lstrip("0") or "0"
    if len(digits) > _LONGEST:
        raise _Answer(413, f"the body is a {len(digits)}-digit number of bytes; the limit "
                           f"is {limit} (max_body_bytes)")
    length = int(digits)
    if length > limit:
        raise _Answer(413, _too_long(length, limit))
    body = _read(stream, length)
    if len(body) < length:
        raise _Answer(400, f"the body ended after {len(body)} of the {length} bytes "
                           f"Content-Length announced")
    return body


def _read(stream: Any, length: int) -> bytes:
    """Read ``length`` bytes, or fewer if the stream ends first; an error of
    the server or the client while reading is the client's (400)."""
    chunks = []
    try:
        while length > 0:
            chunk = stream.read(min(length, _READ_CHUNK))
            if not chunk:
                break
            chunks.append(chunk)
            length -= len(chunk)
    except Exception as error:  # noqa: BLE001 - each server raises its own kinds
        raise _Answer(400, f"the body could not be read: {type(error).__name__}: "
                           f"{str(error)[:80]}") from None
    return b"".join(chunks)


def _encode(body: Dict[str, Any]) -> bytes:
    return (json.dumps(body) + "\n").encode("ascii")


def _respond(start_response: StartResponse, status: int, data: bytes,
             headers: Iterable[Tuple[str, str]] = (), head: bool = False) -> List[bytes]:
    start_response(f"{status} {_REASONS[status]}", [
        ("Content-Type", "application/json"),
        ("Content-Length", str(len(data))),
        *headers])
    return [] if head else [data]


#: The application, with the :class:`Limits` read from the environment
#: (:meth:`Limits.from_environ`) when it is first looked up, as a server
#: does at start (``gunicorn pylighthouse.service:app``,
#: ``waitress-serve pylighthouse.service:app``): a bad variable stops the
#: server there, and importing the module for anything else never reads
#: them.
app: Application


def __getattr__(name: str) -> Any:
    """Make :data:`app` at its first lookup (see there). O(1)."""
    if name == "app":
        made = globals()["app"] = make_app(limits=Limits.from_environ())
        return made
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ------------------------------------------------------------ bundled server

class BoundedThreads(socketserver.ThreadingMixIn):
    """A socketserver mix-in: each connection on a thread of its own, at
    most ``max_connections`` at once; one more is handed to :meth:`refuse`
    and closed at once."""

    daemon_threads = True
    max_connections = 256

    def server_activate(self) -> None:
        self._slots = threading.BoundedSemaphore(self.max_connections)
        super().server_activate()  # type: ignore[misc]  # (the server's own)

    def refuse(self, request: Any) -> None:
        """Answer a connection over the cap, if the protocol allows (it is
        closed then)."""

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self.refuse(request)
            self.shutdown_request(request)  # type: ignore[attr-defined]  # (the server's own)
            return
        # ThreadingMixIn's start, with the slot given back only when no
        # thread started (the thread gives it back when it ends). A Ctrl-C
        # that lands while start() waits for the new thread must stop the
        # server: giving the slot back twice there raised ValueError, which
        # socketserver logs and serves on, so the interrupt was lost.
        thread = threading.Thread(target=self.process_request_thread,
                                  args=(request, client_address), daemon=True)
        try:
            thread.start()
        except RuntimeError:  # no thread could be started
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


class ThreadingWSGIServer(BoundedThreads, WSGIServer):
    """wsgiref's server, answering each connection on its own thread.

    At most ``max_connections`` connections are served at once; one more is
    answered ``503`` at once and closed. The listen backlog holds
    ``request_queue_size`` connections waiting to be accepted.
    """

    request_queue_size = 1024

    def refuse(self, request: Any) -> None:
        _refuse(request, 503, "too many connections; try again shortly")


def _refuse(connection: Any, status: int, message: str) -> None:
    """Send a JSON error straight onto a socket (nothing of the request read)."""
    body = _encode({"error": message})
    head = (f"HTTP/1.0 {status} {_REASONS[status]}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode("ascii")
    try:
        connection.settimeout(1)
        connection.sendall(head + body)
    except OSError:
        pass


class _Handler(WSGIRequestHandler):
    """wsgiref's handler, answering its own errors in JSON, refusing
    differing duplicate ``Content-Length`` headers, and giving up on a
    client silent for ``timeout`` seconds."""

    timeout = 30.0
    quiet = False
    error_content_type = "application/json"

    def send_error(self, code: int, message: Optional[str] = None,
                   explain: Optional[str] = None) -> None:
        short = self.responses.get(code, ("error",))[0]
        body = _encode({"error": message or short})
        self.log_error("code %d, message %s", code, message)
        if getattr(self, "request_version", "HTTP/0.9") == "HTTP/0.9":
            # Garbage, not a real HTTP/0.9 request: answer with headers.
            self.request_version = "HTTP/1.0"
        self.send_response(code, short)
        self.send_header("Connection", "close")
        self.close_connection = True
        if code >= 200 and code not in (204, 304):
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD" and code >= 200 and code not in (204, 304):
            self.wfile.write(body)

    def _unserved(self, message: str) -> bool:
        """Answer 505 in HTTP/1.0 (0.9 has no status line) and close."""
        self.request_version = "HTTP/1.0"
        self.close_connection = True
        self.send_error(505, message)
        return False

    def parse_request(self) -> bool:
        raw: bytes = getattr(self, "raw_requestline", b"")  # (set by handle_one_request)
        line = str(raw, "iso-8859-1").rstrip("\r\n")
        words = line.split()
        if len(words) == 2:
            # A request line without a version is HTTP/0.9, which has no
            # headers to wait for and no status line: answered at once
            # (http.server would read headers, then answer 0.9).
            self.requestline, (self.command, self.path) = line, words
            return self._unserved("HTTP/0.9 is not served: use HTTP/1.0 or 1.1")
        if not super().parse_request():
            return False
        if self.request_version not in ("HTTP/1.0", "HTTP/1.1"):  # (0.9, 1.2...)
            return self._unserved("only HTTP/1.0 and 1.1 are served")
        lengths = {value.strip() for value in self.headers.get_all("Content-Length", [])}
        if len(lengths) > 1:
            self.send_error(400, "Content-Length: given twice with different values")
            return False
        return True

    def handle(self) -> None:
        try:
            super().handle()
        except (socket.timeout, ConnectionError):
            self.close_connection = True  # a client gone or too slow: nothing to answer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - base's name
        if not self.quiet:
            super().log_message(format, *args)


def make_wsgi_server(host: str = "127.0.0.1", port: int = 8087,
                     max_body_bytes: Optional[int] = None,
                     quiet: bool = False, *, limits: Optional[Limits] = None,
                     timeout: float = 30.0,
                     max_connections: int = 256) -> ThreadingWSGIServer:
    """Return a bound (not yet serving) threading wsgiref server for the app.

    A client that sends nothing for ``timeout`` seconds is dropped (or gets
    400 if it stalls inside its body); at most ``max_connections`` are
    served at once (fewer if the open-file limit would not allow that many),
    and the backlog holds 1024 more. Errors found before the
    application runs (a malformed request line, differing
    ``Content-Length`` headers) are answered in JSON too.

    Port 0 picks a free port: read it back from ``server.server_port``.
    Call ``serve_forever()`` to serve and ``shutdown()`` then
    ``server_close()`` to stop.

    Raises:
        OSError: the address cannot be bound.
        ValueError: a limit is not valid, or the port not in 0-65535.
    """
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ValueError(f"port: expected a whole number from 0 to 65535, got {port!r}")
    timeout, max_connections = server_settings(timeout, max_connections)
    application = make_app(max_body_bytes, limits=limits)
    handler = type("Handler", (_Handler,), {"timeout": timeout, "quiet": quiet})
    cap = min(max_connections, _open_files_left())
    server_class = type("Server", (ThreadingWSGIServer,), {"max_connections": cap})
    server: ThreadingWSGIServer = server_class((host, port), handler)
    server.set_app(application)
    return server


def _open_files_left() -> int:
    """How many connections the process's open-file limit leaves room for
    (some files kept for the rest of the process); beyond it, accepting
    would fail over and over instead of answering 503."""
    try:
        import resource  # not on Windows
    except ImportError:
        return 1 << 30
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 1 << 30
    return max(1, int(soft) - 32)


def serve(host: str = "127.0.0.1", port: int = 8087,
          max_body_bytes: Optional[int] = None, *,
          limits: Optional[Limits] = None, server: str = "auto",
          timeout: float = 30.0, max_connections: int = 256) -> None:
    """Serve the application until interrupted (Ctrl-C), logging requests to stderr.

    ``server``: ``"waitress"``, ``"wsgiref"`` or ``"auto"`` (waitress when
    it is installed: ``pip install waitress``, or the ``serve`` extra; else
    wsgiref).
    Either server drops a client silent for ``timeout`` seconds (finite,
    above zero) and serves at most ``max_connections`` (one or more) at
    once.

    Raises:
        OSError: the address cannot be bound.
        ValueError: a bad port, limit, timeout or number of connections, or
            waitress asked for and missing.
    """
    if server not in ("auto", "waitress", "wsgiref"):
        raise ValueError(f"server: expected auto, waitress or wsgiref, got {server!r}")
    timeout, max_connections = server_settings(timeout, max_connections)
    if server != "wsgiref":
        try:
            waitress = importlib.import_module("waitress.server")  # the optional extra
        except ImportError:
            if server == "waitress":
                raise ValueError("server: waitress is not installed (pip install "
                                 "waitress, or install pylighthouse with its serve "
                                 "extra)") from None
        else:
            _serve_waitress(waitress, host, port, max_body_bytes, limits, timeout,
                            max_connections)
            return
    with make_wsgi_server(host, port, max_body_bytes, limits=limits, timeout=timeout,
                          max_connections=max_connections) as httpd:
        try:
            _banner("wsgiref", host, httpd.server_port)
            httpd.serve_forever()
        except KeyboardInterrupt:
            pass


def _serve_waitress(module: Any, host: str, port: int, max_body_bytes: Optional[int],
                    limits: Optional[Limits], timeout: float, max_connections: int) -> None:
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ValueError(f"port: expected a whole number from 0 to 65535, got {port!r}")
    application = make_app(max_body_bytes, limits=limits)
    if max_body_bytes is None:  # (the limits' own, as the application judges it)
        max_body_bytes = (limits or Limits()).max_body_bytes
    httpd = module.create_server(application, host=host, port=port,
                                 channel_timeout=timeout, connection_limit=max_connections,
                                 # (how often silent channels are looked for:
                                 # 30 s by default, whatever the timeout)
                                 cleanup_interval=max(1, min(30, math.ceil(timeout / 2))),
                                 max_request_body_size=_waitress_cap(max_body_bytes),
                                 backlog=1024, clear_untrusted_proxy_headers=True)
    _json_refusals(httpd, max_body_bytes)
    try:
        _banner("waitress", host, httpd.effective_port)
        httpd.run()
    except KeyboardInterrupt:
        pass
    finally:
        httpd.close()


def _waitress_cap(limit: int) -> int:
    """The bytes of a request body waitress may take in before it refuses it
    itself, for a body limit of ``limit`` bytes. waitress refuses a
    ``Content-Length`` of this many or more, and a chunked body once this
    many bytes came in, chunk sizes and line ends included; the
    application judges the body itself against ``limit``. So: one more
    than the limit, plus room for the chunks' framing (as much as the body
    again, at least 64 KiB), and a body of up to ``limit`` bytes is
    refused only when it was cut into chunks so small that their framing
    outweighs that room."""
    return limit + 1 + max(limit, 65536)


def _json_refusals(httpd: Any, limit: int) -> None:
    """Have waitress answer in JSON, as the application does, the requests it
    refuses itself before the application sees them: a body announced
    larger than the limit (413, worded as the application words it), a
    ``Content-Length`` that is not a number, a broken chunk, a malformed
    request line or header (400). (Its own answers are plain text.) Through
    its server's ``channel_class`` and that channel's ``error_task_class``
    (waitress 3, which the ``serve`` extra asks for); a waitress without
    them is left as it is."""
    try:
        channel = importlib.import_module("waitress.channel").HTTPChannel
        task = importlib.import_module("waitress.task").ErrorTask
    except (ImportError, AttributeError):
        return
    if getattr(httpd, "channel_class", None) is not channel \
            or getattr(channel, "error_task_class", None) is not task:
        return

    class JsonErrorTask(task):  # type: ignore[misc,valid-type]  # (waitress is untyped)
        def execute(self) -> None:
            error = self.request.error
            length = getattr(self.request, "content_length", 0) or 0
            if error.code == 413:
                cap = self.channel.server.adj.max_request_body_size
                message = (_too_long(length, limit) if length > limit else
                           f"the chunked body came to over {cap - 1} bytes with its framing; "
                           f"the limit is {limit} bytes of body (max_body_bytes)")
            else:
                message = f"{error.reason}: {error.body}"
            body = _encode({"error": message})
            self.status = f"{error.code} {error.reason}"
            self.response_headers.append(("Content-Type", "application/json"))
            self.set_close_on_finish()
            self.content_length = len(body)
            self.write(body)

    class JsonErrorChannel(channel):  # type: ignore[misc,valid-type]  # (waitress is untyped)
        error_task_class = JsonErrorTask

    httpd.channel_class = JsonErrorChannel


def _banner(name: str, host: str, port: int) -> None:
    print(f"pylighthouse {__version__} serving on http://{host}:{port}/ with {name} "
          f"(POST /assign-workloads, GET /health, GET /openapi.json, GET /problem.schema.json)",
          file=sys.stderr, flush=True)
