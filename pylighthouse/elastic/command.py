"""``pylighthouse manage``: run an elastic manager from a JSON config, or its simulated demo."""
import contextlib
import importlib
import json
import math
import os
import pathlib
import signal
import sqlite3
import threading
import time
from collections.abc import Mapping as MappingABC
from decimal import Decimal
from typing import IO, Any, Dict, Iterator, List, Optional, Tuple

import attr

from ..distributors import Distributor
from ..errors import InvalidInputError, InvalidTypeError, shown
from ..explain import printable
from ..model import Node, Workload
from ..problem import new_distributor
from .manager import ElasticManager
from .provider import Provider, SimulatedProvider
from .rpc import RPCServer, answer_for

__all__ = ["load_config", "run_manage", "simulate"]

_FIELDS = ("strategy", "rubric", "nodes", "templates", "min_nodes", "max_nodes",
           "enable_delete", "intervals", "provider", "provider_options", "simulation")
_SIMULATION = ("ready_after", "fail", "capacity", "cycles", "seconds_per_cycle", "trace",
               "revocations")


@attr.s(frozen=True, auto_attribs=True)
class _Arrival:
    at: int
    workload: Workload
    duration: int


def load_config(data: Any) -> Dict[str, Any]:
    """Check a manage config (parsed JSON) and return it with its defaults filled in.

    Raises:
        InvalidInputError, InvalidTypeError: an unknown or malformed field,
            named with its path.
    """
    if not isinstance(data, MappingABC):
        raise InvalidTypeError(f"config: expected an object, got {type(data).__name__}")
    unknown = sorted(set(data) - set(_FIELDS))
    if unknown:
        raise InvalidInputError(f"config: unknown field {shown(unknown[0])} "
                                f"(valid: {', '.join(_FIELDS)})")
    if "templates" not in data:
        raise InvalidInputError("config: missing field 'templates'")
    config = dict(data)
    for key in ("min_nodes", "max_nodes", "intervals"):
        if key in config:
            config[key] = _plain(config[key])
    config.setdefault("strategy", "Prioritized")
    config["simulation"] = _simulation(config.get("simulation", {}))
    return config


#: Whole decimals of more digits than this are not made ints (the int of
#: 1e2000000 takes minutes): they are made floats, infinite, and refused.
_LARGEST = 300


def _plain(value: Any) -> Any:
    """``value`` with the decimals JSON's fractions are read as (``2.5``,
    ``1e1``) made the ints or floats the manager's settings take; inside
    dicts and lists too. (A quantity of a node or workload stays exact: this
    is for counts and seconds.)"""
    if isinstance(value, Decimal) and value.is_finite():
        # (only what a count or a number of seconds can plainly be: a
        # decimal too large for a float, or too small to be told from 0,
        # stays as it is, and the check refuses it by its value)
        if value == value.to_integral_value() and value.adjusted() < _LARGEST:
            return int(value)
        return float(value)  # (beyond a float's range: inf, which the checks refuse)
    if isinstance(value, MappingABC):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def _simulation(data: Any) -> Dict[str, Any]:
    if not isinstance(data, MappingABC):
        raise InvalidTypeError("config: simulation: expected an object")
    unknown = sorted(set(data) - set(_SIMULATION))
    if unknown:
        raise InvalidInputError(f"config: simulation: unknown field {shown(unknown[0])} "
                                f"(valid: {', '.join(_SIMULATION)})")
    simulation = {key: value if key == "trace" else _plain(value)
                  for key, value in data.items()}
    for key in ("ready_after", "cycles"):
        if key in simulation:
            _cycle(simulation[key], f"config: simulation.{key}")
    if simulation.get("capacity") is not None:
        _cycle(simulation["capacity"], "config: simulation.capacity")
    if "seconds_per_cycle" in simulation:
        _seconds(simulation["seconds_per_cycle"], "config: simulation.seconds_per_cycle")
    fail = simulation.get("fail", [])
    if not isinstance(fail, list) or not all(isinstance(name, str) for name in fail):
        raise InvalidTypeError("config: simulation.fail: expected a list of node names")
    trace = simulation.get("trace", [])
    if not isinstance(trace, list):
        raise InvalidTypeError("config: simulation.trace: expected a list")
    arrivals = []
    seen: Dict[str, int] = {}
    for index, item in enumerate(trace):
        where = f"config: simulation.trace[{index}]"
        _entry(item, ("at", "workload", "duration"), where, needed="workload")
        arrivals.append(_Arrival(
            _cycle(_plain(item.get("at", 0)), f"{where}.at"),
            Workload.from_dict(item.get("workload", {}), f"{where}.workload"),
            _cycle(_plain(item.get("duration", 1)), f"{where}.duration")))
        name = arrivals[-1].workload.name
        if name in seen:  # (the demo keeps a duration, and a workload, per name)
            raise InvalidInputError(f"{where}.workload: name {shown(name)} is also "
                                    f"simulation.trace[{seen[name]}]'s; names are unique")
        seen[name] = index
    simulation["trace"] = arrivals
    revocations = simulation.get("revocations", [])
    if not isinstance(revocations, list):
        raise InvalidTypeError("config: simulation.revocations: expected a list")
    checked = []
    for index, item in enumerate(revocations):
        where = f"config: simulation.revocations[{index}]"
        _entry(item, ("at", "node", "max_wait_time"), where, needed="node")
        at, wait = _cycle(item.get("at", 0), f"{where}.at"), item.get("max_wait_time", 0)
        _seconds(wait, f"{where}.max_wait_time")
        # (as checked, the defaults filled in: the demo reads every field)
        checked.append({"at": at, "node": item["node"], "max_wait_time": wait})
    simulation["revocations"] = checked
    return simulation


def _entry(item: Any, fields: Tuple[str, ...], where: str, needed: str) -> None:
    """Check that an entry of the simulation's lists is an object of ``fields``
    only, ``needed`` among them (a non-empty string for a revocation's node)."""
    if not isinstance(item, MappingABC):
        raise InvalidTypeError(f"{where}: expected an object with {', '.join(fields)}, "
                               f"got {type(item).__name__}")
    unknown = sorted(set(map(str, item)) - set(fields))
    if unknown:
        raise InvalidInputError(f"{where}: unknown field {shown(unknown[0])} "
                                f"(valid: {', '.join(fields)})")
    if needed not in item:
        raise InvalidInputError(f"{where}: missing field {needed!r}")
    if needed == "node" and not (isinstance(item[needed], str) and item[needed]):
        raise InvalidInputError(f"{where}.node: expected a node name, got {shown(item[needed])}")


def _cycle(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInputError(f"{where}: expected a whole number, at least 0, got {shown(value)}")
    whole: int = value
    return whole


def _seconds(value: Any, where: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not 0 <= value < math.inf:
        raise InvalidInputError(f"{where}: expected a number of seconds, at least 0, "
                                f"got {shown(value)}")


def _distributor(config: Dict[str, Any]) -> Distributor:
    try:
        return new_distributor(config["strategy"], Node.from_list(config.get("nodes", [])),
                               config.get("rubric"))
    except InvalidInputError as error:
        raise InvalidInputError(f"config: {error}") from None


def _manager(config: Dict[str, Any], provider: Provider, store: Optional[str],
             clock: Any) -> ElasticManager:
    if store is not None and _holds_something(store):
        return ElasticManager.open(store, provider, clock=clock)
    return ElasticManager(
        _distributor(config), provider, config["templates"],
        min_nodes=config.get("min_nodes", 0), max_nodes=config.get("max_nodes"),
        enable_delete=config.get("enable_delete", False), intervals=config.get("intervals"),
        store=store, clock=clock)


def _holds_something(store: str) -> bool:
    """Whether ``store`` names a file that may hold a manager: anything but
    an empty file (as ``mktemp`` makes) or a store whose first state was
    never saved (a start killed before it), both taken as new. What cannot
    be read (another manager's, another database, not a database) counts:
    opening it says why."""
    try:
        if os.path.getsize(store) == 0 and not os.path.lexists(f"{store}-wal"):
            return False
    except OSError:
        return os.path.lexists(store)  # (a dangling link: let opening it say why)
    try:
        database = sqlite3.connect(pathlib.Path(store).absolute().as_uri() + "?mode=rw",
                                   uri=True, timeout=0)
        try:
            tables = {row[0] for row in database.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")}
            if tables != {"state"}:
                return bool(tables)
            rows: int = database.execute("SELECT count(*) FROM state").fetchone()[0]
            return rows > 0
        finally:
            database.close()
    except sqlite3.Error:
        return True


def _plain_json(value: Any) -> Any:
    """``value`` as :func:`json.loads` would give it: the config is read
    with exact decimals (``2.5`` as ``Decimal('2.5')``), which a provider
    written for plain JSON does not expect (``time.sleep`` refuses one).
    O(size of ``value``)."""
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, MappingABC):
        return {key: _plain_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain_json(item) for item in value]
    return value


def _provider(config: Dict[str, Any]) -> Provider:
    """The provider the config names as ``"module:callable"``, called with its options."""
    spec = config.get("provider")
    if not isinstance(spec, str) or ":" not in spec:
        raise InvalidInputError("config: provider: give \"module:callable\" returning a "
                                "Provider, or run with --simulate")
    module, _, name = spec.partition(":")
    try:
        factory = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as error:
        raise InvalidInputError(f"config: provider: cannot load {shown(spec)}: {error}") from None
    options = config.get("provider_options", {})
    if not isinstance(options, MappingABC) or not all(isinstance(key, str) for key in options):
        raise InvalidTypeError("config: provider_options: expected an object (the keyword "
                               f"arguments of {spec}), got {type(options).__name__}")
    try:
        provider: Provider = factory(**_plain_json(options))
    except TypeError as error:  # (options it does not take, or a value of the wrong type)
        raise InvalidInputError(f"config: provider_options: {spec} refused them: "
                                f"{error}") from None
    except Exception as error:  # (the factory's own: a value it refuses, a cloud not there)
        raise InvalidInputError(f"config: provider: {spec} failed: "
                                f"{type(error).__name__}: {error}") from None
    return provider


def run_manage(config: Dict[str, Any], out: IO[str], *, store: Optional[str] = None,
               simulate_run: bool = False, cycles: Optional[int] = None,
               rpc: Optional[Tuple[str, int]] = None) -> int:
    """Run the manager a checked config describes; return the exit status (0).

    With ``simulate_run``, run :func:`simulate` (its provider keeps its state
    beside the store, in ``<store>.provider.json``, when a store is given).
    Otherwise the config's ``provider`` is loaded and the manager loops
    (``cycles`` cycles, or until interrupted). ``rpc`` serves the
    elasticslice methods while it runs; the address is printed first.
    """
    if simulate_run:
        if store is not None and _holds_something(store):
            raise InvalidInputError(f"--store {store}: exists; the demo replays its trace "
                                    "from the start, so give it a new file")
        settings = config["simulation"]
        path = None if store is None else f"{store}.provider.json"
        provider: Provider = SimulatedProvider(settings.get("ready_after", 0),
                                               settings.get("fail", ()),
                                               settings.get("capacity"), path=path)
    else:
        provider = _provider(config)
    server = None
    if rpc is not None:  # (bound first: a busy address is refused before a store is made)
        try:
            server = RPCServer(rpc)
        except (OSError, OverflowError) as error:
            raise OSError(f"--rpc {rpc[0]}:{rpc[1]}: "
                          f"{getattr(error, 'strerror', None) or error}") from None
    clock = _Tick()
    try:
        manager = _manager(config, provider, store, clock if simulate_run else time.time)
    except BaseException:
        if server is not None:
            server.server_close()
        raise
    try:
        if server is not None:
            answer_for(manager, server).start()
            host, port = server.server_address[:2]
            out.write(f"rpc: serving on {host!s}:{port}\n")
        if simulate_run:
            simulate(manager, provider, config["simulation"], clock, out,
                     config["simulation"].get("cycles", 40) if cycles is None else cycles)
        else:
            try:
                with _terminate_as_interrupt():
                    manager.manage(cycles)
            except KeyboardInterrupt:
                pass
    finally:
        if server is not None:
            server.shutdown()
        manager.close()
    return 0


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """Take SIGTERM (a service manager's stop) as SIGINT within the block:
    the manager stops as it does on Ctrl-C, its last change saved, its RPC
    server shut, and the command exits 0. Only where signals can be
    handled (the main thread, a platform with SIGTERM)."""
    if not hasattr(signal, "SIGTERM") or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class _Tick:
    """The demo's clock: seconds that pass only when the demo says so."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def simulate(manager: ElasticManager, provider: Any, settings: Dict[str, Any],
             clock: "_Tick", out: IO[str], cycles: int) -> Dict[str, Any]:
    """Replay a workload trace through ``manager``, one line a cycle, then a summary.

    At cycle ``t`` the trace's arrivals for ``t`` are submitted, the
    workloads whose duration has run out since they were placed finish, the
    revocations for ``t`` are delivered (the provider takes the node when
    ``max_wait_time`` is 0), and one :meth:`~ElasticManager.manage_once`
    runs; the clock advances ``seconds_per_cycle`` (default 1). Everything
    is deterministic. Returns the summary's figures.
    """
    step = settings.get("seconds_per_cycle", 1)
    trace: List[_Arrival] = settings["trace"]
    durations = {arrival.workload.name: arrival.duration for arrival in trace}
    started: Dict[str, int] = {}
    done: List[str] = []
    waited = 0
    peak = 0
    for cycle in range(cycles):
        for name, node in manager.submit([a.workload for a in trace if a.at == cycle]).items():
            if node is not None:
                started[name] = cycle
        finished = [name for name, since in started.items() if since + durations[name] <= cycle]
        if finished:
            manager.finish(finished)
            done.extend(finished)
            for name in finished:
                del started[name]
        revoked = []
        for item in settings.get("revocations", []):
            if item["at"] == cycle:
                revoked.append(item["node"])
                wait = item.get("max_wait_time", 0)
                entry = [{"node_id": item["node"], "max_wait_time": wait}]
                manager.notify_delete_pending(entry)
                if wait == 0 and isinstance(provider, SimulatedProvider):
                    provider.revoke([item["node"]])
                    manager.notify_delete_complete(entry)
        report = manager.manage_once()
        for name in report.requeued:
            started.pop(name, None)
        for name in report.placed:
            started[name] = cycle
        for name in list(started):
            if name not in manager.assignments:
                del started[name]
        waited += len(report.pending)
        peak = max(peak, len(manager.nodes) + len(manager.creating))
        events = "".join(f"  {what} {','.join(map(printable, names))}" for what, names in (
            ("revoked", revoked), ("added", report.added), ("requested", report.requested),
            ("failed", report.failed), ("lost", report.lost), ("deleted", report.deleted),
            ("errors", report.errors)) if names)
        out.write(f"cycle {cycle:3d}: nodes {len(manager.nodes):2d}  creating "
                  f"{len(manager.creating):2d}  pending {len(report.pending):3d}{events}\n")
        clock.now += step
    summary = {"cycles": cycles, "finished": len(done), "running": len(manager.assignments),
               "pending": len(manager.pending), "peak_nodes": peak, "nodes": len(manager.nodes),
               "workload_cycles_waited": waited}
    out.write("summary: " + json.dumps(summary) + "\n")
    return summary
