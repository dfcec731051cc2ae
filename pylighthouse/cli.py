"""The ``pylighthouse`` command: assign a problem file, validate one, serve HTTP, or manage.

Exit status: 0 when every workload was placed (or the file is valid), 1
when some workload was not placed, 2 for bad input (one message on stderr).
"""
import argparse
import json
import sys
from decimal import Decimal
from typing import Any, Dict, Optional, Sequence

from . import __version__
from .errors import LighthouseException
from .problem import Outcome, Problem, check_problem, load_problem, parse_json, solve
from .quantities import to_number

__all__ = ["main", "render_table"]

#: Width, in characters, of the bars of ``--format table``.
BAR_WIDTH = 20


class _BadInput(Exception):
    """Input the command cannot use; its message goes to stderr, exit status 2."""


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``).

    Returns the exit status instead of exiting, except for argument errors,
    where argparse prints the usage and raises ``SystemExit(2)``.
    """
    args = _parser().parse_args(argv)
    try:
        return int(args.run(args))
    except _BadInput as error:
        print(f"pylighthouse: {error}", file=sys.stderr)
        return 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pylighthouse",
        description="Place workloads onto nodes from a JSON problem file, check such a "
                    "file, or serve the HTTP endpoint.")
    parser.add_argument("--version", action="version", version=f"pylighthouse {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    assign = commands.add_parser(
        "assign", help="place the workloads of a problem file and print where they went",
        description="Place the workloads of a problem file. Places what fits by default; "
                    "exit status 0 when all were placed, 1 when some were not.")
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
                    "Exit status 0 when valid, 2 otherwise.")
    validate.add_argument("file", metavar="FILE", help="the problem file, or - for stdin")
    validate.set_defaults(run=_validate)

    serve = commands.add_parser(
        "serve", help="serve POST /assign-workloads over HTTP",
        description="Serve the HTTP endpoint with the standard library's threading "
                    "WSGI server until interrupted.")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on "
                                                           "(default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8087, help="port (default 8087)")
    serve.add_argument("--max-body-bytes", type=int, default=1 << 20,
                       help="largest request body accepted (default 1048576)")
    serve.set_defaults(run=_serve)
    _add_manage(commands)
    return parser


def _read(path: str) -> bytes:
    if path == "-":
        stream = getattr(sys.stdin, "buffer", None)
        return stream.read() if stream is not None else sys.stdin.read().encode("utf-8")
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as error:
        raise _BadInput(f"{path}: cannot read: {error.strerror or error}") from None


def _source(path: str) -> str:
    return "stdin" if path == "-" else path


def _assign(args: argparse.Namespace) -> int:
    data = _parse(args.file)
    if isinstance(data, dict):
        if args.strategy is not None:
            data["strategy"] = args.strategy
        if args.rubric is not None:
            try:
                data["rubric"] = parse_json(args.rubric, "--rubric")
            except LighthouseException as error:
                raise _BadInput(str(error)) from None
    try:
        problem = load_problem(data)
    except LighthouseException as error:
        more = len(check_problem(data)) - 1
        hint = (f" (and {more} more: run pylighthouse validate)" if more > 0 else "")
        raise _BadInput(f"{_source(args.file)}: {error}{hint}") from None
    # The command line places what fits unless told otherwise, by an option
    # or by the file's own "partial" field.
    partial = args.partial
    if partial is None:
        partial = True if problem.partial is None else problem.partial
    outcome = solve(problem, partial=partial)
    if args.format == "table":
        sys.stdout.write(render_table(problem, outcome))
    else:
        print(json.dumps(outcome.to_dict(), indent=2))
    return 0 if outcome.successful else 1


def _parse(path: str) -> Any:
    try:
        return parse_json(_read(path), _source(path))
    except LighthouseException as error:
        raise _BadInput(str(error)) from None


def _validate(args: argparse.Namespace) -> int:
    data = _parse(args.file)
    errors = check_problem(data)
    source = _source(args.file)
    for error in errors:
        print(f"{source}: {error}", file=sys.stderr)
    if errors:
        print(f"{source}: {len(errors)} error{'s' if len(errors) > 1 else ''}",
              file=sys.stderr)
        return 2
    problem = load_problem(data)
    print(f"{source}: valid ({_count(len(problem.nodes), 'node')}, "
          f"{_count(len(problem.workloads), 'workload')}, strategy {problem.strategy})")
    return 0


def _serve(args: argparse.Namespace) -> int:
    from .service import serve  # the command line does not need wsgiref otherwise

    try:
        serve(args.host, args.port, args.max_body_bytes)
    except (OSError, ValueError) as error:
        raise _BadInput(f"serve: {error}") from None
    return 0


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


# ------------------------------------------------------------------ table

def render_table(problem: Problem, outcome: Outcome) -> str:
    """Return the ``--format table`` report: each node with its workloads and
    a bar per resource showing how full it is, then the unplaced workloads
    with their reasons.

    Workloads that were already running are marked ``(running)``.
    """
    distributor = outcome.distributor
    placed = sum(node is not None for node in outcome.assignments.values())
    running = {load.name for loads in problem.running.values() for load in loads}
    lines = [f"{placed} of {_count(len(outcome.assignments), 'workload')} placed "
             f"({problem.strategy}, {'partial' if outcome.partial else 'all-or-nothing'})", ""]
    usage = distributor.utilization()["nodes"]
    for state in distributor.node_states():
        names = [f"{name} (running)" if name in running else name for name in state.workloads]
        lines.append(f"{state.name}: {', '.join(names) if names else '(empty)'}")
        width = max((len(key) for key in usage[state.name]), default=0)
        for key, figures in usage[state.name].items():
            lines.append(f"  {key.ljust(width)}  {_gauge(figures)}")
    lines.append("")
    if outcome.unplaced:
        lines.append(f"Not placed ({len(outcome.unplaced)}):")
        lines.extend(f"  {name}: {reason}" for name, reason in outcome.unplaced.items())
    else:
        lines.append("Not placed: none")
    return "\n".join(lines) + "\n"


def _gauge(figures: Dict[str, Any]) -> str:
    """One resource's line: a bar for a finite capacity, words otherwise."""
    capacity, used = _exact(figures["capacity"]), _exact(figures["used"])
    if capacity.is_nan() or used.is_nan():
        return "unknown"
    if capacity.is_infinite():
        return f"unlimited ({_plain(used)} used)" if capacity > 0 else "ward (below zero)"
    if capacity < 0:
        return f"shortcoming {_plain(capacity)} ({_plain(_exact(figures['free']))} left)"
    if capacity == 0:
        return "tag" if used == 0 else f"tag ({_plain(used)} used)"
    share = used / capacity if used.is_finite() else Decimal(1)
    filled = min(BAR_WIDTH, max(0, int((share * BAR_WIDTH).to_integral_value())))
    bar = "#" * filled + "." * (BAR_WIDTH - filled)
    over = ", over capacity" if used > capacity else ""
    percent = int((share * 100).to_integral_value())
    return f"[{bar}] {_plain(used)}/{_plain(capacity)} used ({percent}%{over})"


def _exact(number: Any) -> Decimal:
    return number if isinstance(number, Decimal) else Decimal(repr(number)) \
        if isinstance(number, float) else Decimal(number)


def _plain(number: Decimal) -> str:
    return str(to_number(number))


# ------------------------------------------------------------------ manage

def _add_manage(commands: Any) -> None:
    manage = commands.add_parser(
        "manage", help="run an elastic manager (or its simulated demo) from a config file",
        description="Keep a cluster the right size as work comes and goes, as the config "
                    "file describes. --simulate replays the config's workload trace on a "
                    "simulated provider, one line per cycle.")
    manage.add_argument("config", metavar="CONFIG", help="the manager's JSON config")
    manage.add_argument("--store", metavar="PATH",
                        help="SQLite file holding the manager's state (resumed if it exists)")
    manage.add_argument("--simulate", action="store_true",
                        help="run the deterministic demo on a simulated provider")
    manage.add_argument("--cycles", type=int, metavar="N",
                        help="stop after N cycles (default: the config's, or forever)")
    manage.add_argument("--rpc", metavar="HOST:PORT",
                        help="serve the elasticslice XML-RPC methods while running")
    manage.set_defaults(run=_manage)


def _manage(args: argparse.Namespace) -> int:
    from .elastic.command import load_config, run_manage  # sqlite3 and xmlrpc only here

    rpc = None
    if args.rpc is not None:
        host, _, port = args.rpc.rpartition(":")
        if not host or not port.isdigit():
            raise _BadInput(f"--rpc: expected HOST:PORT, got {args.rpc!r}")
        rpc = (host, int(port))
    if args.cycles is not None and args.cycles < 0:
        raise _BadInput(f"--cycles: must be at least 0, got {args.cycles}")
    try:
        config = load_config(_parse(args.config))
        return run_manage(config, sys.stdout, store=args.store, simulate_run=args.simulate,
                          cycles=args.cycles, rpc=rpc)
    except LighthouseException as error:
        raise _BadInput(f"{_source(args.config)}: {error}") from None
    except OSError as error:
        raise _BadInput(f"manage: {error}") from None
