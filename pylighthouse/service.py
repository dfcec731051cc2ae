"""The HTTP endpoint: a WSGI application answering ``POST /assign-workloads``.

Any WSGI server can run :data:`app` (``gunicorn pylighthouse.service:app``);
:func:`serve` runs it on the standard library's wsgiref server, one thread
per request. Every answer is JSON, errors included::

    POST /assign-workloads  a problem -> 200 {"successful": ..., "assignments": {...}}
    GET  /health            -> 200 {"status": "ok", "version": "..."}

A bad request gets 400 with ``{"error": "<JSON path>: <what is wrong>"}``,
a body over the limit 413, another method 405 (with ``Allow``), another
path 404. Each request builds its own distributor: nothing is shared
between requests.
"""
import json
import socketserver
import sys
from typing import Any, Callable, Dict, Iterable, List, Tuple
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from . import __version__
from .errors import LighthouseException
from .problem import load_problem, solve

__all__ = ["make_app", "app", "serve", "make_wsgi_server", "ThreadingWSGIServer",
           "DEFAULT_MAX_BODY_BYTES"]

#: The default largest request body, in bytes (1 MiB).
DEFAULT_MAX_BODY_BYTES = 1 << 20

_READ_CHUNK = 1 << 16

StartResponse = Callable[..., Any]
Application = Callable[[Dict[str, Any], StartResponse], Iterable[bytes]]

_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found",
            405: "Method Not Allowed", 411: "Length Required",
            413: "Payload Too Large", 500: "Internal Server Error"}


class _Answer(Exception):
    """An HTTP answer other than 200, raised from deep inside a request."""

    def __init__(self, status: int, message: str, headers: Tuple[Tuple[str, str], ...] = ()):
        super().__init__(message)
        self.status = status
        self.headers = list(headers)


def make_app(max_body_bytes: int = DEFAULT_MAX_BODY_BYTES) -> Application:
    """Return the WSGI application, refusing bodies over ``max_body_bytes``.

    The body's size is judged by ``Content-Length`` before anything is read,
    and no more than that many bytes are ever read. A request without
    ``Content-Length`` gets 411, unless the server marks its input as
    terminated (``wsgi.input_terminated``, as for chunked bodies), in which
    case at most ``max_body_bytes + 1`` bytes are read to tell.
    """
    if isinstance(max_body_bytes, bool) or not isinstance(max_body_bytes, int) \
            or max_body_bytes < 0:
        raise ValueError(f"max_body_bytes: expected a whole number >= 0, got {max_body_bytes!r}")

    routes: Dict[str, Tuple[str, Callable[[Dict[str, Any]], Dict[str, Any]]]] = {
        "/assign-workloads": ("POST", lambda environ: _assign(
            _body(environ, max_body_bytes))),
        "/health": ("GET", lambda environ: {"status": "ok", "version": __version__}),
    }

    def application(environ: Dict[str, Any], start_response: StartResponse) -> List[bytes]:
        try:
            route = routes.get(environ.get("PATH_INFO") or "/")
            if route is None:
                raise _Answer(404, "no such path; try POST /assign-workloads "
                                   "or GET /health")
            method, handler = route
            if environ.get("REQUEST_METHOD") != method:
                raise _Answer(405, f"use {method} here", (("Allow", method),))
            return _respond(start_response, 200, handler(environ))
        except _Answer as answer:
            return _respond(start_response, answer.status, {"error": str(answer)},
                            answer.headers)
        except Exception:  # noqa: BLE001 - a server must answer, whatever broke
            return _respond(start_response, 500, {"error": "internal error"})

    return application


def _assign(body: bytes) -> Dict[str, Any]:
    try:
        return solve(load_problem(body)).to_dict()
    except LighthouseException as error:
        raise _Answer(400, str(error)) from None


def _body(environ: Dict[str, Any], limit: int) -> bytes:
    stream = environ["wsgi.input"]
    declared = environ.get("CONTENT_LENGTH") or ""
    if not declared.strip():
        if not environ.get("wsgi.input_terminated"):
            raise _Answer(411, "a Content-Length header is required")
        body = _read(stream, limit + 1)
        if len(body) > limit:
            raise _Answer(413, f"the body is over {limit} bytes")
        return body
    try:
        length = int(declared.strip())
    except ValueError:
        length = -1
    if length < 0:
        raise _Answer(400, f"Content-Length: not a byte count: {declared[:40]!r}")
    if length > limit:
        raise _Answer(413, f"the body is {length} bytes; the limit is {limit}")
    return _read(stream, length)


def _read(stream: Any, length: int) -> bytes:
    """Read ``length`` bytes, or fewer if the stream ends first."""
    chunks = []
    while length > 0:
        chunk = stream.read(min(length, _READ_CHUNK))
        if not chunk:
            break
        chunks.append(chunk)
        length -= len(chunk)
    return b"".join(chunks)


def _respond(start_response: StartResponse, status: int, body: Dict[str, Any],
             headers: Iterable[Tuple[str, str]] = ()) -> List[bytes]:
    data = (json.dumps(body) + "\n").encode("ascii")
    start_response(f"{status} {_REASONS[status]}", [
        ("Content-Type", "application/json"),
        ("Content-Length", str(len(data))),
        *headers])
    return [data]


#: The application with the default body limit, for WSGI servers
#: (``gunicorn pylighthouse.service:app``, ``waitress-serve pylighthouse.service:app``).
app = make_app()


class ThreadingWSGIServer(socketserver.ThreadingMixIn, WSGIServer):
    """wsgiref's server, answering each connection on its own thread."""

    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - base's name
        pass


def make_wsgi_server(host: str = "127.0.0.1", port: int = 8087,
                     max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
                     quiet: bool = False) -> ThreadingWSGIServer:
    """Return a bound (not yet serving) threading wsgiref server for the app.

    Port 0 picks a free port: read it back from ``server.server_port``.
    Call ``serve_forever()`` to serve and ``shutdown()`` then
    ``server_close()`` to stop.
    """
    handler = _QuietHandler if quiet else WSGIRequestHandler
    return make_server(host, port, make_app(max_body_bytes),
                       server_class=ThreadingWSGIServer, handler_class=handler)


def serve(host: str = "127.0.0.1", port: int = 8087,
          max_body_bytes: int = DEFAULT_MAX_BODY_BYTES) -> None:
    """Serve the application until interrupted (Ctrl-C), logging requests to stderr."""
    with make_wsgi_server(host, port, max_body_bytes) as server:
        print(f"pylighthouse {__version__} serving on http://{host}:{server.server_port}/ "
              f"(POST /assign-workloads, GET /health)", file=sys.stderr, flush=True)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
