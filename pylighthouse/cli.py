"""The ``pylighthouse`` command: assign a problem file, validate one, serve HTTP, or manage.

Exit status: 0 when every workload was placed (or the file is valid), 1
when some workload was not placed, 2 for bad input or output that cannot be
written (one message on stderr), 141 (128 + SIGPIPE) when the reader of the
output went away, as for any command at the head of a pipe.
"""
import argparse
import decimal
import json
import os
import sys
from decimal import Decimal
from typing import IO, Any, Dict, List, Optional, Sequence, cast

import attr

from . import __version__
from .errors import LighthouseException, counted
from .explain import printable
from .problem import (Outcome, Problem, _read_json, check_problem, load_problem, parse_json,
                      solve)
from .progress import Progress
from .quantities import EXACT, quantity_text

__all__ = ["main", "render_table"]

#: Width, in characters, of the bars of ``--format table``.
BAR_WIDTH = 20


#: The exit status of a command whose output pipe was closed (128 + SIGPIPE).
CLOSED_PIPE_STATUS = 141

_EXAMPLES = """examples (the files named are in a checkout of the repository):
  pylighthouse assign examples/tour.json                 place what fits, print JSON
  pylighthouse assign examples/tour.json --format table  nodes, bars and reasons
  pylighthouse assign - --all-or-nothing < problem.json  read stdin, as HTTP does
  pylighthouse assign p.json --strategy binpack --rubric '{"cpu": 1, "mem": 0.25}'
  pylighthouse validate examples/broken.json             list every mistake
  pylighthouse serve --port 8087 --max-work 5000000      serve POST /assign-workloads
  pylighthouse manage examples/elastic/demo.json --simulate   the elastic manager's demo
"""


class _BadInput(Exception):
    """Input the command cannot use; its message goes to stderr, exit status 2."""


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``).

    Returns the exit status instead of exiting, except for argument errors,
    where argparse prints the usage and raises ``SystemExit(2)``. Output
    that cannot be written (a full disk) is reported in one line on stderr,
    status 2; a closed output pipe ends the command quietly with status
    :data:`CLOSED_PIPE_STATUS`.
    """
    try:
        args = _parser().parse_args(argv)
    except BrokenPipeError:  # printing --help or --version
        _drop(sys.stdout)
        raise SystemExit(CLOSED_PIPE_STATUS) from None
    except OSError as error:
        _drop(sys.stdout)
        _complain(f"pylighthouse: cannot write the output: {error.strerror or error}")
        raise SystemExit(2) from None
    try:
        status = int(args.run(args))
        return _flushed(status)
    except _BadInput as error:
        _complain(f"pylighthouse: {error}")
        return 2
    except BrokenPipeError:
        _drop(sys.stdout)
        return CLOSED_PIPE_STATUS
    except OSError as error:  # writing the output failed (the rest is caught earlier)
        _drop(sys.stdout)
        _complain(f"pylighthouse: cannot write the output: {error.strerror or error}")
        return 2


def _flushed(status: int) -> int:
    """``status`` once what was printed reached stdout; else the status of
    output that cannot be written."""
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
        return status
    except BrokenPipeError:
        _drop(sys.stdout)
        return CLOSED_PIPE_STATUS
    except OSError as error:
        _drop(sys.stdout)
        _complain(f"pylighthouse: cannot write the output: {error.strerror or error}")
        return 2


def _complain(message: str) -> None:
    """Write ``message`` as a line on stderr. A stderr that cannot take it
    (closed, a full disk) loses it: the exit status still says what
    happened."""
    if sys.stderr is None:  # (closed when Python started: print would use stdout)
        return
    try:
        print(message, file=sys.stderr, flush=True)
    except (OSError, ValueError, AttributeError):
        _drop(sys.stderr)


def _drop(stream: Any) -> None:
    """Point ``stream`` (stdout or stderr) at /dev/null, so that the
    interpreter's last flush of what could not be written does not fail
    again at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass  # not a real file (tests capture it): nothing will flush it


class _Parser(argparse.ArgumentParser):
    """argparse's parser, except that help or a version that cannot be
    written to stdout is not passed over in silence (argparse drops the
    error and exits 0): the error goes on, for :func:`main` to report."""

    def _print_message(self, message: str, file: Any = None) -> None:
        if message and file is not None and file is sys.stdout:
            file.write(message)
            file.flush()
        else:
            try:
                super()._print_message(message, file)
            except (AttributeError, OSError):
                pass  # (no stderr to write to: as argparse does from Python 3.11 on)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="pylighthouse",
        description="Place workloads onto nodes from a JSON problem file, check such a "
                    "file, serve the HTTP endpoint, or run an elastic manager.",
        epilog=_EXAMPLES + "\nexit status: 0 all placed (or valid), 1 some not placed, "
                           "2 bad input, 141 output pipe closed.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"pylighthouse {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    assign = commands.add_parser(
        "assign", help="place the workloads of a problem file and print where they went",
        description="Place the workloads of a problem file. Places what fits by default; "
                    "exit status 0 when all were placed, 1 when some were not. On a "
                    "terminal, a long run shows what it is doing on stderr.",
        epilog=_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    assign.add_argument("file", metavar="FILE", help="the problem file, or - for stdin")
    mode = assign.add_mutually_exclusive_group()
    mode.add_argument("--partial", dest="partial", action="store_true", default=None,
                      help="place what fits and explain the rest (the default)")
    mode.add_argument("--all-or-nothing", dest="partial", action="store_false",
                      help="place every workload or none, as the HTTP endpoint does by default")
    assign.add_argument("--strategy", help="Prioritized, RoundRobin, BinPack or BestFit "
                                           "(overrides the file)")
    assign.add_argument("--rubric", metavar="JSON",
                        help='BinPack (or BestFit) weights as JSON, e.g. \'{"cpu": 1}\' '
                             '(overrides the file)')
    assign.add_argument("--format", choices=("json", "table"), default="json",
                        help="json (the HTTP endpoint's answer, the default) or table")
    assign.set_defaults(run=_assign)

    validate = commands.add_parser(
        "validate", help="check a problem file and report every mistake",
        description="Check a problem file; print every mistake with its JSON path. "
                    "Exit status 0 when valid, 2 otherwise.",
        epilog="example (from a checkout of the repository):\n"
               "  pylighthouse validate examples/broken.json",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    validate.add_argument("file", metavar="FILE", help="the problem file, or - for stdin")
    validate.set_defaults(run=_validate)

    serve = commands.add_parser(
        "serve", help="serve POST /assign-workloads over HTTP",
        description="Serve the HTTP endpoint until interrupted: with waitress when it is "
                    "installed (pip install waitress, or the serve extra), else with the standard "
                    "library's threading wsgiref server. Requests over a limit get 413.",
        epilog="examples:\n  pylighthouse serve\n"
               "  pylighthouse serve --host 0.0.0.0 --port 8080 --max-work 5000000 "
               "--server wsgiref",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on "
                                                           "(default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8087, help="port, 0 to 65535 "
                                                              "(default 8087)")
    serve.add_argument("--server", choices=("auto", "waitress", "wsgiref"), default="auto",
                       help="the WSGI server (default auto: waitress if installed)")
    serve.add_argument("--max-body-bytes", type=int, default=None,
                       help="largest request body accepted "
                       "(default $PYLIGHTHOUSE_MAX_BODY_BYTES, else 1048576)")
    serve.add_argument("--max-work", type=int, default=None,
                       help="largest nodes x workloads of one request "
                       "(default $PYLIGHTHOUSE_MAX_WORK, else 2000000)")
    serve.add_argument("--max-rubric", type=int, default=None,
                       help="most rubric entries in one request "
                       "(default $PYLIGHTHOUSE_MAX_RUBRIC, else 1000)")
    serve.add_argument("--max-response-bytes", type=int, default=None,
                       help="largest answer "
                       "(default $PYLIGHTHOUSE_MAX_RESPONSE_BYTES, else 16777216)")
    serve.add_argument("--timeout", type=float, default=30.0,
                       help="seconds a client may stay silent (default 30)")
    serve.add_argument("--max-connections", type=int, default=256,
                       help="connections served at once (default 256)")
    serve.set_defaults(run=_serve)
    _add_manage(commands)
    return parser


def _read(path: str) -> bytes:
    if path == "-":
        if sys.stdin is None:
            raise _BadInput("stdin: cannot read: standard input is closed")
        try:
            stream = getattr(sys.stdin, "buffer", None)
            return stream.read() if stream is not None else sys.stdin.read().encode("utf-8")
        except (OSError, ValueError) as error:
            reason = getattr(error, "strerror", None) or "standard input is closed"
            raise _BadInput(f"stdin: cannot read: {reason}") from None
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as error:
        raise _BadInput(f"{path}: cannot read: {error.strerror or error}") from None


def _source(path: str) -> str:
    return "stdin" if path == "-" else path


def _assign(args: argparse.Namespace) -> int:
    progress = Progress()
    with progress.phase(f"reading {_source(args.file)}"):
        data = _parse(args.file)
    if isinstance(data, dict):
        if args.strategy is not None:
            data["strategy"] = args.strategy
        if args.rubric is not None:
            try:
                data["rubric"] = _read_json(args.rubric, "--rubric", "map")
            except LighthouseException as error:
                raise _BadInput(str(error)) from None
    try:
        problem = load_problem(data, parsed=True)
    except LighthouseException as error:
        more = len(check_problem(data, parsed=True)) - 1
        hint = (f" (and {more} more: run pylighthouse validate)" if more > 0 else "")
        # (a mistake in a value the options gave is theirs, not the file's)
        source = _source(args.file)
        for option, field in (("--strategy", "strategy"), ("--rubric", "rubric")):
            if getattr(args, field) is not None and str(error).startswith(field):
                source = option
        raise _BadInput(f"{source}: {error}{hint}") from None
    # The command line places what fits unless told otherwise, by an option
    # or by the file's own "partial" field.
    partial = args.partial
    if partial is None:
        partial = True if problem.partial is None else problem.partial
    with progress.phase(f"placing {counted(len(problem.workloads), 'workload')} on "
                        f"{counted(len(problem.nodes), 'node')} ({problem.strategy})"):
        outcome = solve(problem, partial=partial)
    with progress.phase("writing the answer"):
        if args.format == "table":
            text = render_table(problem, outcome)
        else:
            text = json.dumps(outcome.to_dict(), indent=2) + "\n"
        _emit(text)
    return 0 if outcome.successful else 1


def _emit(text: str) -> None:
    """Write ``text`` to stdout whole, or raise the OSError that stopped it.

    Writes the bytes in a loop: unbuffered (``PYTHONUNBUFFERED``), a text
    stream hands a long string to a single ``write`` and drops what a pipe
    did not take, which would hide a closed pipe.
    """
    stream = sys.stdout
    if stream is None:  # (started with its standard output closed)
        raise _BadInput("stdout: cannot write: standard output is closed")
    buffer = getattr(stream, "buffer", None)
    if buffer is None:  # a stream without bytes underneath (a test's capture)
        stream.write(text)
        stream.flush()
        return
    stream.flush()
    try:
        data = memoryview(text.encode(stream.encoding or "utf-8", stream.errors or "strict"))
    except UnicodeEncodeError as error:
        raise _BadInput(f"cannot write the output in {stream.encoding}: {error.reason}") \
            from None
    while data:
        written = buffer.write(data)
        data = data[written or 0:]  # None: a non-blocking stream is full; try again
    buffer.flush()


def _parse(path: str) -> Any:
    try:
        return parse_json(_read(path), _source(path))
    except LighthouseException as error:
        raise _BadInput(str(error)) from None


def _validate(args: argparse.Namespace) -> int:
    data = _parse(args.file)
    errors = check_problem(data, parsed=True)
    source = _source(args.file)
    for error in errors:
        _complain(f"{source}: {error}")
    if errors:
        _complain(f"{source}: {counted(len(errors), 'error')}")
        return 2
    problem = load_problem(data, parsed=True)
    _emit(f"{source}: valid ({counted(len(problem.nodes), 'node')}, "
          f"{counted(len(problem.workloads), 'workload')}, strategy {problem.strategy})\n")
    return 0


def _serve(args: argparse.Namespace) -> int:
    from .service import Limits, serve, server_settings  # (not needed otherwise)

    if not 0 <= args.port <= 65535:
        raise _BadInput(f"serve: --port: expected 0 to 65535, got {args.port}")
    given = {name: getattr(args, name) for name in ("max_body_bytes", "max_work",
                                                    "max_rubric", "max_response_bytes")
             if getattr(args, name) is not None}
    try:
        # (an option given wins over its PYLIGHTHOUSE_MAX_* variable, which
        # is then not read at all: a malformed one does not stop the server)
        replaced = {f"PYLIGHTHOUSE_{name.upper()}" for name in given}
        limits = Limits.from_environ(
            {key: value for key, value in os.environ.items() if key not in replaced})
        for name, value in given.items():
            option = "--" + name.replace("_", "-")
            try:
                limits = attr.evolve(limits, **{name: value})
            except (ValueError, OverflowError) as error:  # (named by its option)
                reason = str(error)
                reason = reason[len(name) + 2:] if reason.startswith(f"{name}: ") else reason
                raise _BadInput(f"serve: {option}: {reason}") from None
        server_settings(args.timeout, args.max_connections, ("--timeout", "--max-connections"))
        serve(args.host, args.port, limits.max_body_bytes, limits=limits, server=args.server,
              timeout=args.timeout, max_connections=args.max_connections)
    except (OSError, ValueError, OverflowError) as error:
        raise _BadInput(f"serve: {error}") from None
    return 0


# ------------------------------------------------------------------ table

def render_table(problem: Problem, outcome: Outcome) -> str:
    """Return the ``--format table`` report: each node with its workloads and
    a bar per resource showing how full it is, the unplaced workloads with
    their reasons, and a last line for the cluster (nodes, placed, unplaced,
    fill per counted resource). A resource not used up never shows 100%.

    Workloads that were already running are marked ``(running)``. Names
    and reasons are shown with every character that is not printable (a
    line break, a terminal's escape) written as its escape (``\\n``,
    ``\\x1b``): a name cannot start a line of its own or steer the
    terminal.
    """
    with decimal.localcontext(_SHOWN):  # (whatever the caller's context traps or keeps)
        return _table(problem, outcome)


#: The context in which the table works out its shares: 28 significant
#: digits, rounding half to even, no trap but for a mistake.
_SHOWN = decimal.Context(prec=28, rounding=decimal.ROUND_HALF_EVEN, Emax=decimal.MAX_EMAX,
                         Emin=decimal.MIN_EMIN,
                         traps=[decimal.InvalidOperation, decimal.DivisionByZero])


def _table(problem: Problem, outcome: Outcome) -> str:
    distributor = outcome.distributor
    placed = sum(node is not None for node in outcome.assignments.values())
    running = {load.name for loads in problem.running.values() for load in loads}
    lines = [f"{placed} of {counted(len(outcome.assignments), 'workload')} placed "
             f"({problem.strategy}, {'partial' if outcome.partial else 'all-or-nothing'})", ""]
    usage = distributor.utilization()["nodes"]
    for state in distributor.node_states():
        names = [f"{printable(name)} (running)" if name in running else printable(name)
                 for name in state.workloads]
        lines.append(f"{printable(state.name)}: {', '.join(names) if names else '(empty)'}")
        keys = {key: printable(key) for key in usage[state.name]}
        width = max(map(len, keys.values()), default=0)
        for key, figures in usage[state.name].items():
            lines.append(f"  {keys[key].ljust(width)}  {_gauge(figures)}")
    lines.append("")
    if outcome.unplaced:
        lines.append(f"Not placed ({len(outcome.unplaced)}):")
        lines.extend(f"  {printable(name)}: {printable(reason)}"
                     for name, reason in outcome.unplaced.items())
    else:
        lines.append("Not placed: none")
    lines.extend(["", _summary(problem, outcome)])
    return "\n".join(lines) + "\n"


def _gauge(figures: Dict[str, Any]) -> str:
    """One resource's line: a bar for a finite capacity, words otherwise."""
    capacity, used = _exact(figures["capacity"]), _exact(figures["used"])
    if capacity.is_nan() or used.is_nan():
        return "unknown"
    if capacity.is_infinite():
        return f"unlimited ({quantity_text(used)} used)" if capacity > 0 else "ward (below zero)"
    if capacity < 0:
        free = quantity_text(_exact(figures["free"]))
        return f"shortcoming {quantity_text(capacity)} ({free} left)"
    if capacity == 0:
        return "tag" if used == 0 else f"tag ({quantity_text(used)} used)"
    share = used / capacity if used.is_finite() else Decimal(1)
    filled = min(BAR_WIDTH, max(0, _rounded(share * BAR_WIDTH, used, capacity, BAR_WIDTH)))
    bar = "#" * filled + "." * (BAR_WIDTH - filled)
    over = ", over capacity" if used > capacity else ""
    return (f"[{bar}] {quantity_text(used)}/{quantity_text(capacity)} used "
            f"({_percent(used, capacity)}{over})")


def _rounded(value: Decimal, used: Decimal, capacity: Decimal, full: int) -> int:
    """``value`` rounded, but short of ``full`` unless the resource is used
    up (199/200 is 99%, not 100%), and above 0 when some is used."""
    rounded = int(value.to_integral_value())
    if used < capacity:
        rounded = min(rounded, full - 1)
    if used > 0 and rounded == 0:
        rounded = 1
    return rounded


def _percent(used: Decimal, capacity: Decimal) -> str:
    share = used / capacity if used.is_finite() else Decimal(1)
    return f"{_rounded(share * 100, used, capacity, 100)}%"


def _summary(problem: Problem, outcome: Outcome) -> str:
    """The last line of the table: the whole cluster at a glance."""
    placed = sum(node is not None for node in outcome.assignments.values())
    unplaced = len(outcome.assignments) - placed
    # (over the nodes that get a bar for the resource: finite room above
    # zero; a shortcoming or a ward is no room to fill)
    sums: Dict[str, List[Decimal]] = {}
    for figures in outcome.distributor.utilization()["nodes"].values():
        for key, figure in figures.items():
            capacity, used = _exact(figure["capacity"]), _exact(figure["used"])
            if capacity.is_finite() and capacity > 0:
                both = sums.setdefault(key, [Decimal(0), Decimal(0)])
                both[0] = EXACT.add(both[0], capacity)
                both[1] = EXACT.add(both[1], used)
    fills = [f"{printable(key)} {_percent(used, capacity)}"
             for key, (capacity, used) in sums.items() if used.is_finite()]
    line = (f"Cluster: {counted(len(problem.nodes), 'node')}, {placed} placed, "
            f"{unplaced} unplaced")
    return line + (f"; fill: {', '.join(fills)}" if fills else "")


def _exact(number: Any) -> Decimal:
    return number if isinstance(number, Decimal) else Decimal(repr(number)) \
        if isinstance(number, float) else Decimal(number)


# ------------------------------------------------------------------ manage

def _add_manage(commands: Any) -> None:
    manage = commands.add_parser(
        "manage", help="run an elastic manager (or its simulated demo) from a config file",
        description="Keep a cluster the right size as work comes and goes, as the config "
                    "file describes. --simulate replays the config's workload trace on a "
                    "simulated provider, one line per cycle.",
        epilog="examples (the demo's config is in a checkout of the repository):\n"
               "  pylighthouse manage examples/elastic/demo.json --simulate --cycles 24\n"
               "  pylighthouse manage config.json --store manager.db --rpc 127.0.0.1:8088",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    manage.add_argument("config", metavar="CONFIG", help="the manager's JSON config")
    manage.add_argument("--store", metavar="PATH",
                        help="SQLite file holding the manager's state (resumed if it holds one; "
                             "--simulate needs a new file)")
    manage.add_argument("--simulate", action="store_true",
                        help="run the deterministic demo on a simulated provider")
    manage.add_argument("--cycles", type=int, metavar="N",
                        help="stop after N cycles (default: the config's, or forever)")
    manage.add_argument("--rpc", metavar="HOST:PORT",
                        help="serve the elasticslice XML-RPC methods while running")
    manage.set_defaults(run=_manage)


def _manage(args: argparse.Namespace) -> int:
    from .elastic.command import load_config, run_manage  # sqlite3 and xmlrpc only here

    if sys.stdout is None:  # (started with its standard output closed)
        raise _BadInput("stdout: cannot write: standard output is closed")

    rpc = None
    if args.rpc is not None:
        host, _, port = args.rpc.rpartition(":")
        if not host or not port.isdigit() or not port.isascii():
            raise _BadInput(f"--rpc: expected HOST:PORT, got {args.rpc!r}")
        digits = port.lstrip("0") or "0"
        if len(digits) > 5 or not 0 <= int(digits) <= 65535:  # (int() of 5000 digits raises)
            raise _BadInput(f"--rpc: port: expected 0 to 65535, got {port}")
        rpc = (host, int(port))
    if args.cycles is not None and args.cycles < 0:
        raise _BadInput(f"--cycles: must be at least 0, got {args.cycles}")
    try:
        config = load_config(_parse(args.config))
        return run_manage(config, cast(IO[str], _Output(sys.stdout)), store=args.store,
                          simulate_run=args.simulate, cycles=args.cycles, rpc=rpc)
    except LighthouseException as error:
        raise _BadInput(f"{_source(args.config)}: {error}") from None
    except (_WriteFailed, BrokenPipeError):
        raise  # (the output's: reported as every command reports it)
    except OSError as error:
        raise _BadInput(f"manage: {error}") from None


class _WriteFailed(OSError):
    """Writing the output failed (not the store, not the provider)."""


class _Output:
    """A text stream whose write errors say they are the output's: the
    reader gone stays a BrokenPipeError (status 141), another failure is
    reported as the output's, not as the manager's."""

    def __init__(self, stream: Any):
        self._stream = stream

    def write(self, text: str) -> int:
        written: int = self._writing(self._stream.write, text)
        return written

    def flush(self) -> None:
        self._writing(self._stream.flush)

    @staticmethod
    def _writing(step: Any, *args: Any) -> Any:
        try:
            return step(*args)
        except BrokenPipeError:
            raise
        except OSError as error:
            raise _WriteFailed(error.errno, error.strerror) from None
