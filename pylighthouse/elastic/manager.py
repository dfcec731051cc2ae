"""The elastic manager: keeps a cluster the right size as work comes and goes, durably."""
import contextlib
import math
import numbers
import os
import threading
import time
from collections.abc import Mapping as MappingABC
from decimal import Decimal
from fractions import Fraction
from types import MappingProxyType
from typing import (Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional,
                    Tuple, Union)

import attr

from .. import __version__
from ..distributors import Distributor, workload_from_json, workload_json
from ..errors import (DuplicateNameError, InvalidInputError, InvalidTypeError,
                      LighthouseException, UnknownNameError, counted, shown)
from ..fit import reason_of
from ..model import Node, Workload, check_flag
from ..planning import _orders, accept_templates, plan_scale_down, plan_scale_up
from ..quantities import from_json_quantity, seconds_of, to_json_quantity, to_quantity
from .provider import FAILED, READY, Provider, _count as _whole
from .store import Store, StoreError, StoreInUse

__all__ = ["ElasticManager", "CycleReport", "API_VERSION", "DEFAULT_INTERVALS"]

#: The version of the RPC methods' behaviour (``get_version`` reports it).
API_VERSION = 1

#: Seconds between scale-up and between scale-down attempts (elasticslice's defaults).
DEFAULT_INTERVALS = {"add": 300, "delete": 300}

Clock = Callable[[], float]

#: The parts of a manager's state, each a row of its store.
_PARTS = ("config", "distributor", "static", "pending", "requested", "deleting",
          "revocations", "values", "marks", "serial")
#: The parts a store may lack: it was written before they were kept.
_LATER_PARTS = ("going",)


@attr.s(auto_attribs=True, kw_only=True)
class CycleReport:
    """What one :meth:`ElasticManager.manage_once` did.

    ``added``: nodes that became ready and joined the distributor;
    ``failed``: nodes asked for whose creation failed (or that vanished
    before they were ready); ``requested``: nodes asked of the provider this
    cycle; ``placed``: ``{workload: node}`` placed this cycle; ``moved``:
    ``{workload: node}`` moved off nodes the provider is taking or has
    taken (a lost node's work placed again at once), or off nodes scale-down
    gives back; ``deleted``:
    nodes given back to the provider; ``lost``: nodes that vanished from the
    provider without being given back (revoked), or that it reports failed
    after they joined (those are given back); ``requeued``: workloads put
    back in the queue because their node went; ``pending``: the queue at the
    end of the cycle; ``errors``: one line per provider call that raised
    (the step it belonged to changed nothing).
    """

    added: List[str] = attr.ib(factory=list)
    failed: List[str] = attr.ib(factory=list)
    requested: List[str] = attr.ib(factory=list)
    placed: Dict[str, str] = attr.ib(factory=dict)
    moved: Dict[str, str] = attr.ib(factory=dict)
    deleted: List[str] = attr.ib(factory=list)
    lost: List[str] = attr.ib(factory=list)
    requeued: List[str] = attr.ib(factory=list)
    pending: List[str] = attr.ib(factory=list)
    errors: List[str] = attr.ib(factory=list)

    def to_dict(self) -> Dict[str, Any]:
        """Return the report as plain data (new lists and dicts)."""
        return {key: (dict(value) if isinstance(value, dict) else list(value))
                for key, value in attr.asdict(self).items()}


class ElasticManager:
    """Keeps a distributor's cluster the right size, and every change in a store.

    The manager owns a copy of ``distributor`` (any strategy) and a queue of
    pending workloads. Each :meth:`manage_once` cycle polls the ``provider``,
    adds the nodes that became ready, places what waits, asks for new nodes
    (:func:`~pylighthouse.plan_scale_up` over ``templates``) when work still
    waits and the add interval has passed, and, with ``enable_delete``, gives
    idle nodes back (:func:`~pylighthouse.plan_scale_down`) when no
    waiting work could be taken by some node (an empty node of a template,
    or a node of the cluster at its capacity) and the delete interval has
    passed. The provider's revocation
    calls (:meth:`notify_delete_pending`, :meth:`notify_delete_complete`)
    move or requeue work, never lose it.

    The nodes ``distributor`` already holds are *static*: the manager never
    gives them back nor expects the provider to list them. ``max_nodes``
    caps every node held (static ones, ready ones, ones being created or
    given back); ``min_nodes`` is the floor scale-down keeps. ``intervals``
    gives the seconds between attempts, ``{"add": 300, "delete": 300}`` by
    default. ``store`` is the path of an SQLite file that receives the whole
    state, committed before every call that changes it returns; ``None``
    keeps the state in memory. ``clock`` returns the time in seconds, a
    finite number (a scale step that reads anything else, or whose reading
    raises, fails, and says so in the cycle's ``errors``).

    Every public method takes one lock, so the manage loop and RPC threads
    may share the manager. A call that raises leaves the state as it was.

    Raises:
        InvalidInputError, InvalidTypeError: bad templates, limits or
            intervals; or the store already holds a manager (use
            :meth:`open`), cannot be opened or written, holds a database of
            something else, or another manager has it open (a store has one
            manager at a time, until :meth:`close` or the process ends).
        StoreError: (from this and every call that changes the state) the
            store could not be written: the change is undone, and the
            call can be made again once the store can be written.
    """

    def __init__(self, distributor: Distributor, provider: Provider,
                 templates: Any, *, min_nodes: int = 0, max_nodes: Optional[int] = None,
                 enable_delete: bool = False, intervals: Optional[Mapping[str, Any]] = None,
                 store: Optional[str] = None, clock: Clock = time.time):
        if not isinstance(distributor, Distributor):
            raise InvalidTypeError(
                f"distributor: expected a Distributor, got {type(distributor).__name__}")
        _check_provider(provider)
        config = {"templates": [_template_json(item) for item in accept_templates(templates)],
                  **_limits(min_nodes, max_nodes, enable_delete, intervals)}
        snapshot = distributor.to_dict()
        static = len(snapshot["nodes"])
        if config["max_nodes"] is not None and config["max_nodes"] < static:
            raise InvalidInputError(
                f"max_nodes: must be at least the {counted(static, 'node')} "
                f"the distributor holds (static nodes count), got {config['max_nodes']}")
        parts = {"config": config, "distributor": snapshot,
                 "static": [node["name"] for node in snapshot["nodes"]],
                 "pending": [], "requested": [], "deleting": [], "going": [], "revocations": {},
                 "values": {}, "marks": {"add": None, "delete": None}, "serial": {}}
        made = _claim(store)
        try:
            store_ = Store(store)
        except StoreInUse:
            raise  # (another manager opened the file since: it is theirs now)
        except BaseException:
            _unmake(made)
            raise
        try:
            if store_.load():
                made = None  # (another manager's state, saved since we made the file)
                raise InvalidInputError(
                    f"store {store}: already holds a manager; resume it with ElasticManager.open")
            self._setup(provider, store_, clock)
            self._apply(parts)
            self._commit()
        except BaseException:
            store_.close()
            _unmake(made)
            raise

    @classmethod
    def open(cls, store: str, provider: Provider, *, clock: Clock = time.time) -> "ElasticManager":
        """Resume the manager saved in ``store``, exactly as its last change left it.

        Raises:
            InvalidInputError: ``store`` holds no manager (a missing file is
                not made), a state of another format or a damaged one (each
                names the store and the part), or another manager has it
                open.

        Cost: reading the state and rebuilding the distributor,
        O((N + W) x R log N).
        """
        _check_provider(provider)
        store_ = Store(store, create=False)
        manager = cls.__new__(cls)
        try:
            parts = store_.load()
            if "config" not in parts:
                raise InvalidInputError(f"store {store}: holds no manager")
            missing = [part for part in _PARTS if part not in parts]
            if missing:
                raise InvalidInputError(f"store {store}: part {missing[0]!r}: missing "
                                        "(the store is damaged)")
            unknown = sorted(set(parts) - set(_PARTS) - set(_LATER_PARTS) - {"format"})
            if unknown:
                raise InvalidInputError(f"store {store}: part {shown(unknown[0])}: not a "
                                        "part of a manager's state (the store is damaged)")
            manager._setup(provider, store_, clock)
            try:
                manager._apply(parts)
            except LighthouseException as error:
                raise InvalidInputError(f"store {store}: {error}") from None
            except (KeyError, TypeError, ValueError, AttributeError) as error:
                raise InvalidInputError(f"store {store}: damaged: {type(error).__name__}: "
                                        f"{error}") from None
        except BaseException:
            store_.close()
            raise
        manager._committed = parts
        return manager

    _config: Dict[str, Any]
    _templates: List[Dict[str, Any]]
    _distributor: Distributor
    _static: List[str]
    _pending: List[Workload]
    _requested: Dict[str, Node]
    _deleting: List[str]
    _going: List[str]
    _revocations: Dict[str, Any]
    _values: Dict[str, Decimal]
    _marks: Dict[str, Optional[float]]
    _serial: Dict[str, int]
    _committed: Dict[str, Any]

    def _setup(self, provider: Provider, store: Store, clock: Clock) -> None:
        self._provider = provider
        self._store = store
        self._clock = clock
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._closed = False

    # ------------------------------------------------------------ reading

    @property
    def pending(self) -> Tuple[str, ...]:
        """The names of the workloads waiting, in queue order. O(W)."""
        with self._lock:
            return tuple(load.name for load in self._pending)

    @property
    def assignments(self) -> Mapping[str, str]:
        """A read-only ``{workload: node}`` of every placed workload. O(W)."""
        with self._lock:
            return MappingProxyType(self._distributor.assignments)

    @property
    def nodes(self) -> Tuple[str, ...]:
        """The names of the nodes in the distributor, in its order. O(N)."""
        with self._lock:
            return tuple(node.name for node in self._distributor.nodes)

    @property
    def creating(self) -> Tuple[str, ...]:
        """The names of the nodes asked of the provider and not ready yet. O(1)."""
        with self._lock:
            return tuple(self._requested)

    @property
    def deleting(self) -> Tuple[str, ...]:
        """The names of the nodes being given back.

        First those the provider is yet to be told to take, then those it
        was told to take since the last poll; these count against
        ``max_nodes`` until a poll lists them no more. O(N).
        """
        with self._lock:
            return tuple(self._deleting) + tuple(self._going)

    @property
    def revocations(self) -> Mapping[str, Any]:
        """``{node: last max_wait_time}`` of the nodes the provider said it will take."""
        with self._lock:
            return MappingProxyType(dict(self._revocations))

    @property
    def distributor(self) -> Distributor:
        """A copy of the manager's distributor (changing it changes nothing here).

        Cost: O((N + W) x R log N).
        """
        with self._lock:
            return Distributor.from_dict(self._distributor.to_dict())

    @property
    def settings(self) -> Dict[str, Any]:
        """The templates (as plain data), limits and intervals the manager runs with."""
        with self._lock:
            settings: Dict[str, Any] = _copy(self._config)
            return settings

    # ----------------------------------------------------------- workloads

    def submit(self, workloads: Iterable[Any]) -> Dict[str, Optional[str]]:
        """Place what fits now; queue the rest, in the order given.

        Returns ``{name: node or None}`` for every workload, in the order
        given; ``None`` means it waits in :attr:`pending`.

        Raises:
            InvalidInputError, InvalidTypeError: a workload is malformed.
            DuplicateNameError: a name repeats, or is already placed or
                pending. Nothing is placed or queued when anything is raised.

        Cost: one placement call, plus saving the state.
        """
        with self._change():
            loads = Workload.from_list(workloads)
            waiting = {load.name for load in self._pending}
            for index, load in enumerate(loads):
                if load.name in waiting:
                    raise DuplicateNameError(
                        f"workloads[{index}]: workload {load.name!r}: already pending")
            result = self._distributor.attempt_assign_loads(loads)
            self._pending.extend(load for load in loads if result[load.name] is None)
            return result

    def finish(self, names: Union[str, Iterable[str]]) -> Dict[str, Optional[str]]:
        """The named workloads are done: placed ones are released, pending ones dropped.

        Returns ``{name: node it left, or None if it was pending}``. A single
        name is accepted too.

        Raises:
            InvalidTypeError: ``names`` is not a name or a list of names.
            UnknownNameError: a name is neither placed nor pending.
            DuplicateNameError: a name is given twice. Nothing changes when
                anything is raised.
        """
        if not isinstance(names, str) and (isinstance(names, (MappingABC, bytes, bytearray))
                                           or not isinstance(names, Iterable)):
            raise InvalidTypeError(f"finish: expected a workload name or a list of names, "
                                   f"got {type(names).__name__}")
        wanted = [names] if isinstance(names, str) else list(names)
        with self._change():
            placed = self._distributor.assignments
            waiting = {load.name for load in self._pending}
            seen = set()
            for index, name in enumerate(wanted):
                if not isinstance(name, str):
                    raise InvalidTypeError(f"finish[{index}]: expected a workload name, "
                                           f"got {type(name).__name__}")
                if name not in placed and name not in waiting:
                    raise UnknownNameError(f"finish[{index}]: workload {shown(name)}: "
                                           "neither placed nor pending")
                if name in seen:
                    raise DuplicateNameError(f"finish[{index}]: workload {shown(name)}: "
                                             "given twice")
                seen.add(name)
            released = self._distributor.release_loads([n for n in wanted if n in placed])
            self._pending = [load for load in self._pending if load.name not in wanted]
            return {name: released.get(name) for name in wanted}

    # ------------------------------------------------------------- cycles

    def manage_once(self, force: bool = False) -> CycleReport:
        """Run one cycle: poll, add ready nodes, place, scale up, scale down.

        With ``force``, scaling up and down ignore their intervals. Each step
        is saved before the next begins; a provider call that raises undoes
        its step only, and its line goes to the report's ``errors``. A cycle
        whose poll failed does not scale up (what the provider holds is not
        known then).

        Cost: the poll, one placement of the queue (and, in a cycle where it
        places some of the waiting work but not all, up to three more on
        copies of the distributor, see the elastic manager's docs), and,
        when they run, the planners (see :func:`~pylighthouse.plan_scale_up` and
        :func:`~pylighthouse.plan_scale_down`), plus a save a step.
        """
        report = CycleReport()
        with self._lock:
            polled = self._step(report, "poll", lambda: self._reconcile(report))
            if self._deleting:
                self._step(report, "delete_nodes", lambda: self._give_back(report))
            with self._change():
                self._place_pending(report)
            # (not without a poll: a creation that raised after part of its
            # work left nodes no record names, which only a poll shows, and
            # the room under max_nodes cannot be known before)
            if polled and self._waiting() and (force or self._due("add", report)):
                self._step(report, "create_nodes", lambda: self._scale_up(report))
            if self._config["enable_delete"] and (force or self._due("delete", report)) \
                    and not self._waiting_for_room():
                self._step(report, "delete_nodes", lambda: self._scale_down(report))
            report.pending = [load.name for load in self._pending]
        return report

    def manage(self, cycles: Optional[int] = None, period: Optional[float] = None) -> int:
        """Run :meth:`manage_once` every ``period`` seconds until :meth:`stop` (or
        ``cycles`` cycles); return the number of cycles run.

        ``period`` defaults to the shorter interval, from 1 to 60 seconds.
        """
        if cycles is not None:
            if isinstance(cycles, bool) or not isinstance(cycles, numbers.Integral) \
                    or cycles < 0:
                raise InvalidInputError(f"cycles: expected a whole number, at least 0, "
                                        f"got {shown(cycles)}")
            cycles = int(cycles)
        if period is None:
            period = max(1.0, min(60.0, *self._config["intervals"].values()))
        else:
            seconds = seconds_of(period)
            if not 0 <= seconds <= threading.TIMEOUT_MAX:
                raise InvalidInputError(f"period: expected a number of seconds, at least 0, "
                                        f"got {shown(period)}")
            period = seconds
        done = 0
        try:
            while cycles is None or done < cycles:
                if self._stop.is_set():  # (asked before this call began, or between cycles)
                    break
                self.manage_once()
                done += 1
                if (cycles is not None and done >= cycles) or self._stop.wait(period):
                    break
        finally:
            self._stop.clear()  # (the request is used up: the next call runs)
        return done

    def stop(self) -> None:
        """Make :meth:`manage` return after its current cycle (or, called
        before :meth:`manage` starts, before its first)."""
        self._stop.set()

    def close(self) -> None:
        """Close the store (the state stays in it; the lock on it goes).

        The manager is done with: a call that would change its state
        raises :class:`~pylighthouse.InvalidInputError` from then on (the
        state could not be saved, and another manager may now open the
        store). Reading it still works. Closing twice does nothing.
        """
        with self._lock:
            self._closed = True
            self._store.close()

    # ------------------------------------------------------ provider's calls

    def notify_delete_pending(self, nodelist: Any) -> List[Dict[str, Any]]:
        """The provider will take these nodes: cordon them and move their work away.

        ``nodelist`` holds dicts with ``node_id`` and/or ``client_id`` (the
        node's name is ``client_id`` when given) and ``max_wait_time``
        (seconds the provider still waits). All the listed nodes are
        cordoned first, then each is drained, so work does not move onto a
        node about to go. A node with ``max_wait_time`` 0 is being taken now:
        what is still on it goes back to the front of the queue. Returns the
        list with ``max_wait_time`` set to 0 for each node that holds no
        workload now (the provider may take it), as new dicts; nodes the
        manager does not hold count as empty. A node still being created
        never joins: it is given back in the next cycle, and counts against
        ``max_nodes`` until the provider no longer lists it.

        Raises:
            InvalidInputError, InvalidTypeError: a malformed entry (nothing
                changes).
        """
        entries = _nodelist(nodelist, "nodelist", wait=True)
        with self._change():
            for name, _, _ in entries:
                if name in self._requested:
                    # (given back in the next cycle, and counted against
                    # max_nodes until then: the provider still holds it)
                    del self._requested[name]
                    self._retire(name)
                    if name not in self._deleting:
                        self._deleting.append(name)
            known = [(name, wait) for name, _, wait in entries if self._has(name)]
            for name, wait in known:
                self._revocations[name] = wait
                self._distributor.cordon(name)
            for name, wait in known:
                if wait == 0:
                    self._requeue_from(name)
                else:
                    self._distributor.drain(name)
            reply = []
            for name, item, _ in entries:
                answer = dict(item)
                if not self._has(name) or not self._distributor.node_state(name).workloads:
                    answer["max_wait_time"] = 0
                reply.append(answer)
            return reply

    def notify_delete_complete(self, nodelist: Any) -> List[str]:
        """The provider took these nodes: remove them, requeue what was on them.

        Workloads that fit elsewhere are placed again at once; the others go
        to the front of the queue. Nodes the manager does not hold are
        ignored, so a repeated call changes nothing. Returns the names
        removed.

        Raises:
            InvalidInputError, InvalidTypeError: a malformed entry (nothing
                changes).
        """
        entries = _nodelist(nodelist, "nodelist", wait=False)
        with self._change():
            gone = list(dict.fromkeys(name for name, _, _ in entries))
            self._requested = {k: v for k, v in self._requested.items() if k not in gone}
            self._deleting = [name for name in self._deleting if name not in gone]
            self._going = [name for name in self._going if name not in gone]
            removed = [name for name in gone if self._has(name)]
            self._remove(removed)
            return removed

    def set_resource_values(self, nodelist: Any) -> Dict[str, float]:
        """Keep how much the provider wants each node back (0 to 1; higher: given back first).

        ``nodelist`` holds dicts with ``node_id`` (or ``client_id``) and
        ``value``. Scale-down tries nodes of higher value first among equally
        empty ones. A value above 0 but below 1e-300 is kept as 0. A value
        for a node the manager does not hold (in the cluster or being
        created) is not kept, as no node of that name can come later
        (names are never reused); a node's value goes with the node.
        Returns every value kept, by node.

        Raises:
            InvalidInputError, InvalidTypeError: an entry lacks a name, or its
                value is not a number from 0 to 1 (nothing is kept).
        """
        entries = _nodelist(nodelist, "nodelist", wait=False)
        values = {}
        for index, (name, item, _) in enumerate(entries):
            if "value" not in item:
                raise InvalidInputError(f"nodelist[{index}]: node {name!r}: missing field 'value'")
            values[name] = _resource_value(item["value"], f"nodelist[{index}]: node {name!r}")
        with self._change():
            self._values.update(values)
            self._keep_held_values()
            return {name: float(value) for name, value in self._values.items()}

    def get_version(self) -> Dict[str, Any]:
        """Return ``{"version": <pylighthouse version>, "api": <API version>}``."""
        return {"version": __version__, "api": API_VERSION}

    # ------------------------------------------------------------- steps

    def _reconcile(self, report: CycleReport) -> None:
        """Poll, then bring the books in line with what the provider holds."""
        statuses = self._provider.poll()
        if not isinstance(statuses, MappingABC):
            raise InvalidTypeError(f"poll: expected a mapping of node name to status, "
                                   f"got {type(statuses).__name__}")
        for name in list(self._requested):
            status = statuses.get(name)
            if status == READY:
                self._distributor.add_nodes([self._requested.pop(name)])
                report.added.append(name)
            elif status is None or status == FAILED:
                del self._requested[name]
                report.failed.append(name)
                if status == FAILED:
                    self._deleting.append(name)
        self._deleting = [name for name in self._deleting if name in statuses]
        # (given back since the last poll: gone once the provider no longer
        # lists them, else given back again in this cycle, as a request the
        # provider lost would leave them for good)
        still = [name for name in self._going if name in statuses]
        self._going = []
        self._deleting.extend(name for name in still if name not in self._deleting)
        # (a node that vanished, or that failed after it joined: its work is
        # placed again or queued, and a failed one is given back)
        lost = [name for name in self.nodes if name not in self._static
                and (name not in statuses or statuses[name] == FAILED)]
        report.lost.extend(lost)
        report.requeued.extend(self._remove(lost, report.moved))
        self._deleting.extend(name for name in lost if name in statuses)
        known = set(self.nodes) | set(self._requested) | set(self._deleting)
        # Nodes the provider holds for us that no record names (a creation that
        # raised after doing part of its work): give them back.
        self._deleting.extend(name for name in statuses if name not in known)
        for name in self._deleting:  # (their names are never handed out again)
            self._retire(name)

    def _give_back(self, report: CycleReport) -> None:
        names = list(self._deleting)
        self._provider.delete_nodes(names)
        self._deleting = []
        self._gone_back(names)
        report.deleted.extend(names)

    def _gone_back(self, names: List[str]) -> None:
        """The provider was told to take ``names``: they count against
        ``max_nodes`` until a poll no longer lists them (a provider may
        take its time: a cloud deletes a machine in minutes), and are given
        back again at each poll that still lists them."""
        self._going.extend(name for name in names if name not in self._going)

    def _place_pending(self, report: CycleReport) -> None:
        """Move what it can off the nodes the provider is taking, then place
        the queue in its order. When that leaves some of this work waiting
        but places some, try the other ways the planner counts on (see
        :func:`~pylighthouse.plan_scale_up`), each from the state last
        saved, and keep the one that leaves the fewest waiting, the first
        on a tie: the moves, then the queue largest first; the work it
        moved and the queue in one placement call, in that order and
        largest first (work it could not move stays where it is, and none
        of the rest may be left on a node being taken). The queue keeps its
        order. Cost: the moves and one placement call; in a cycle where
        the other ways are tried, a copy of the distributor and one
        placement call for each, three at most."""
        stuck = [self._distributor.workload(load) for name in self._revocations
                 for load in self._distributor.node_state(name).workloads]
        if not stuck and not self._pending:
            return
        moved, result = self._arrange(self._distributor, stuck, self._pending, None)
        waiting = _waiting_in(moved, result)
        # (all of it placed needs no other way; none of it placed left every
        # node as it was, so each workload was refused by the cluster as it
        # is, in any order)
        if 0 < waiting < len(moved) + len(result):
            templates = accept_templates(self._templates)
            tries: List[Tuple[List[Workload], Optional[List[Workload]]]] = [
                (order, None) for order in _orders(self._distributor, self._pending,
                                                   templates)[1:]]
            free = [load for load in stuck if moved[load.name] is not None]
            if free:
                tries.extend((order, free) for order in _orders(
                    self._distributor, free + self._pending, templates))
            for order, released in tries:
                # (the state this step started from is the one last saved:
                # every step ends saved, or undone to what was saved)
                other = Distributor.from_dict(self._committed["distributor"])
                tried = self._arrange(other, stuck, order, released)
                # (work left on a node being taken cannot be put back there)
                if _waiting_in(*tried) < waiting and (
                        released is None
                        or all(tried[0][load.name] is not None for load in released)):
                    self._distributor, (moved, result) = other, tried
                    waiting = _waiting_in(moved, result)
        report.moved.update({load: node for load, node in moved.items() if node is not None})
        report.placed.update({name: node for name, node in result.items() if node is not None})
        self._pending = [load for load in self._pending if result[load.name] is None]

    def _arrange(self, distributor: Distributor, stuck: List[Workload], order: List[Workload],
                 released: Optional[List[Workload]]
                 ) -> Tuple[Dict[str, Optional[str]], Dict[str, Optional[str]]]:
        """On ``distributor``, move the ``stuck`` work off the nodes being
        taken and place the queue; return ``{workload: node or None}`` for
        the stuck work and for the queue. Without ``released``: drain those
        nodes, then place ``order`` (the queue); with it: release that part
        of the stuck work (the rest stays) and place ``order`` (it and the
        queue) in one call."""
        if released is None:
            moved: Dict[str, Optional[str]] = {}
            for name in self._revocations:
                if distributor.node_state(name).workloads:
                    moved.update(distributor.drain(name))
            return moved, distributor.attempt_assign_loads(order) if order else {}
        distributor.release_loads([load.name for load in released])
        placed = distributor.attempt_assign_loads(order)
        return ({load.name: placed.get(load.name) for load in stuck},
                {load.name: placed[load.name] for load in self._pending})

    def _scale_up(self, report: CycleReport) -> None:
        """Plan new nodes for the queue (and for work stuck on revoked nodes) and ask for them."""
        self._marks["add"] = self._now()
        held = len(self._distributor.nodes) + len(self._requested) + len(self._deleting) \
            + len(self._going)
        room = None if self._config["max_nodes"] is None else self._config["max_nodes"] - held
        if room is not None and room <= 0:
            return
        trial = Distributor.from_dict(self._distributor.to_dict())
        trial.add_nodes(list(self._requested.values()))
        stuck: List[Workload] = []
        for name in self._revocations:
            loads = trial.node_state(name).workloads
            stuck.extend(trial.workload(load) for load in loads)
            trial.release_loads(loads)
        plan = plan_scale_up(trial, stuck + list(self._pending), self._templates,
                             max_new_nodes=room)
        nodes = [Node(self._fresh_name(node.name), node.resources) for node in plan.new_nodes]
        if not nodes:
            return
        self._requested.update((node.name, node) for node in nodes)
        # Written before the provider is asked: after a crash, the node is
        # adopted when ready, or forgotten when the provider never heard of it.
        self._commit()
        self._provider.create_nodes(list(nodes))
        report.requested.extend(node.name for node in nodes)

    def _scale_down(self, report: CycleReport) -> None:
        """Give back the nodes the planner finds removable (static nodes stay)."""
        self._marks["delete"] = self._now()
        nodes = self.nodes
        limit = len(nodes) - self._config["min_nodes"]
        if limit <= 0:
            return
        values = {name: value for name, value in self._values.items() if name in nodes}
        # (static nodes stay: not candidates, so they take no share of the
        # limit and no plan counts on one going)
        plan = plan_scale_down(self._distributor, max_nodes=limit, values=values,
                               keep=self._static)
        removing = list(plan.removable)
        moved: Dict[str, str] = {}  # (reported once the provider took the nodes)
        for name in removing:
            # (in the plan's order, each drain moves what the plan says; what
            # a drain could not move, none by the planner's contract, would
            # go back to the queue as any removed node's work does)
            moves = self._distributor.drain(name)
            moved.update({load: node for load, node in moves.items() if node})
            self._remove([name])
        if not removing:
            return
        self._deleting.extend(removing)
        self._commit()
        self._provider.delete_nodes(list(removing))
        self._deleting = [name for name in self._deleting if name not in removing]
        self._gone_back(removing)
        report.moved.update(moved)
        report.deleted.extend(removing)

    # ----------------------------------------------------------- helpers

    def _step(self, report: CycleReport, call: str, action: Callable[[], None]) -> bool:
        """Run ``action`` as one saved step; if it raises, undo it, and what
        it wrote in ``report``, and report the error. Return whether it ran
        through."""
        written = {field: _copy(value)
                   for field, value in attr.asdict(report, recurse=False).items()}
        try:
            with self._change():
                action()
        except StoreError:
            raise  # (not the provider's: nothing more can be saved)
        except Exception as error:  # the provider may raise anything
            for field, value in written.items():
                setattr(report, field, value)
            report.errors.append(f"{call}: {_failure(error)}")
            return False
        return True

    @contextlib.contextmanager
    def _change(self) -> Iterator[None]:
        """Hold the lock; save the state after the block, or restore it if
        the block or the save raises."""
        with self._lock:
            if self._closed:
                raise _ManagerClosed(
                    f"manager: closed; resume it with ElasticManager.open"
                    f"({self._store.path!r}, provider)" if self._store.path is not None
                    else "manager: closed (it kept its state in memory only)")
            before = self._committed
            try:
                yield
                self._commit()
            except BaseException as error:
                serial = self._serial
                # (a store that failed takes the manager back to what it
                # holds, which a step may have saved midway, its provider
                # call done: not to before the step)
                self._apply(self._committed if isinstance(error, StoreError) else before)
                # (a name handed out stays used, even by a step undone: the
                # provider may have made the node before it raised)
                for prefix, number in serial.items():
                    self._serial[prefix] = max(number, self._serial.get(prefix, 0))
                try:
                    self._commit()
                except StoreError:
                    # (the store cannot take the undoing either: the manager
                    # holds what the store holds, and says why)
                    self._apply(self._committed)
                    if isinstance(error, StoreError):
                        raise
                    raise StoreError(f"store {self._store.path}: cannot be written; "
                                     f"undoing {type(error).__name__}: {error}") from error
                raise

    def _requeue_from(self, name: str) -> List[str]:
        """Put the workloads on node ``name`` back at the front of the queue."""
        loads = [self._distributor.workload(load)
                 for load in self._distributor.node_state(name).workloads]
        self._distributor.release_loads([load.name for load in loads])
        self._pending[:0] = loads
        return [load.name for load in loads]

    def _remove(self, names: List[str],
                moved: Optional[Dict[str, str]] = None) -> List[str]:
        """Remove nodes; place their work elsewhere (into ``moved``, if given)
        or put it at the front of the queue; return the names queued."""
        if not names:
            return []
        displaced: List[Workload] = []
        for name in names:
            displaced.extend(self._distributor.workload(load)
                             for load in self._distributor.node_state(name).workloads)
            self._forget(name)
        placed = self._distributor.remove_nodes(names)
        if moved is not None:
            moved.update({name: node for name, node in placed.items() if node is not None})
        waiting = [load for load in displaced if placed[load.name] is None]
        self._pending[:0] = waiting
        return [load.name for load in waiting]

    def _forget(self, name: str) -> None:
        self._retire(name)
        self._revocations.pop(name, None)
        if name in self._static:
            self._static.remove(name)

    def _waiting(self) -> bool:
        """Whether work waits: queued, or stuck on a node the provider is taking."""
        return bool(self._pending) or any(self._distributor.node_state(name).workloads
                                          for name in self._revocations)

    def _waiting_for_room(self) -> bool:
        """Whether work waits (see :meth:`_waiting`) that some node could
        take: an empty node of a template, or a node not being taken at its
        capacity. Work that no such node could take holds no scale-down:
        keeping idle nodes would never give it a home. O(P x T x R) for P
        workloads waiting, T templates and R resources, and O(N x R) more
        for each shape of waiting work that fits no template."""
        waiting: List[Workload] = list(self._pending)
        for name in self._revocations:
            waiting.extend(self._distributor.workload(load)
                           for load in self._distributor.node_state(name).workloads)
        shapes = [template["resources"] for template in self._templates]
        capacities: Optional[List[Mapping[str, Any]]] = None
        judged: Dict[Any, bool] = {}
        for load in waiting:
            key = (tuple(load.requirements.items()), load.immunities)
            hostable = judged.get(key)
            if hostable is None:
                hostable = any(reason_of(shape, load) is None for shape in shapes)
                if not hostable:
                    if capacities is None:
                        capacities = [node.resources for node in self._distributor.nodes
                                      if node.name not in self._revocations]
                    hostable = any(reason_of(capacity, load) is None
                                   for capacity in capacities)
                judged[key] = hostable
            if hostable:
                return True
        return False

    def _has(self, name: str) -> bool:
        try:
            self._distributor.node_state(name)
        except UnknownNameError:
            return False
        return True

    def _due(self, kind: str, report: CycleReport) -> bool:
        """Whether the interval of ``kind`` has passed since its last run; a
        clock set back since then (the last run seems to lie ahead) makes it
        due at once, rather than for as long as the clock was set back. A
        clock reading no number, or raising, is reported in ``report`` (not
        due)."""
        last = self._marks[kind]
        if last is None:
            return True
        step = 'create_nodes' if kind == 'add' else 'delete_nodes'
        try:
            elapsed = self._now() - last
        except (InvalidTypeError, _ClockFailed) as error:
            report.errors.append(f"{step}: {_failure(error)}")
            return False
        return elapsed >= self._config["intervals"][kind] or elapsed < 0

    def _now(self) -> float:
        """The clock's reading, in seconds, as a float.

        Raises:
            InvalidTypeError: the clock gave something else than a finite
                real number (no such time could be saved and resumed).
            _ClockFailed: the clock raised.
        """
        try:
            now = self._clock()
        except Exception as error:  # noqa: BLE001 - the caller's clock may raise anything
            raise _ClockFailed(error) from error
        seconds = seconds_of(now)
        if not math.isfinite(seconds):
            raise InvalidTypeError(f"clock: expected a finite number of seconds, "
                                   f"got {shown(now)}")
        return seconds

    def _retire(self, name: str) -> None:
        """``name`` leaves the manager's books: a name ``<prefix>-<number>``
        keeps the prefix's next names above its number, so that it is never
        handed out again (a static node's name too)."""
        prefix, _, number = name.rpartition("-")
        if prefix and number.isdigit() and number.isascii():
            self._serial[prefix] = max(int(number), self._serial.get(prefix, 0))

    def _fresh_name(self, planned: str) -> str:
        """A name never used by this manager, from the planned name's prefix.

        Names are not reused, so a node the provider still remembers (a
        failed one, one being given back) is never confused with a new one.
        """
        prefix = planned.rsplit("-", 1)[0]
        taken = set(self.nodes) | set(self._requested) | set(self._deleting) | set(self._going)
        number = self._serial.get(prefix, 0)
        while True:
            number += 1
            if f"{prefix}-{number}" not in taken:
                self._serial[prefix] = number
                return f"{prefix}-{number}"

    # ---------------------------------------------------------- the state

    def _parts(self) -> Dict[str, Any]:
        return {"config": self._config, "distributor": self._distributor.to_dict(),
                "static": list(self._static),
                "pending": [workload_json(load) for load in self._pending],
                "requested": [_node_json(node) for node in self._requested.values()],
                "deleting": list(self._deleting), "going": list(self._going),
                "revocations": dict(self._revocations),
                "values": {k: to_json_quantity(v) for k, v in self._values.items()},
                "marks": dict(self._marks), "serial": dict(self._serial)}

    def _apply(self, parts: Mapping[str, Any]) -> None:
        """Take ``parts`` (see :meth:`_parts`, every one of :data:`_PARTS`) as
        the state, each checked, and checked against the others; a mistake
        is named by its part."""
        with _reading_part("config"):
            self._config = _config_from_json(_copy(parts["config"]))
            self._templates = [_template_from_json(item) for item in self._config["templates"]]
            accept_templates(self._templates)
        with _reading_part("distributor"):
            self._distributor = Distributor.from_dict(parts["distributor"])
        known = {node.name for node in self._distributor.nodes}
        with _reading_part("static"):
            self._static = _names_part(parts, "static")
            _all_known(self._static, known, "static")
        with _reading_part("pending"):
            if not isinstance(parts["pending"], list):
                raise InvalidInputError("expected a list of workloads")
            self._pending = [workload_from_json(item, f"pending[{index}]")
                             for index, item in enumerate(parts["pending"])]
        with _reading_part("requested"):
            if not isinstance(parts["requested"], list):
                raise InvalidInputError("expected a list of nodes")
            self._requested = {}
            for item in parts["requested"]:
                node = _node_from_json(item)
                if node.name in self._requested:
                    raise InvalidInputError(f"node {shown(node.name)} is there twice "
                                            "(the store is damaged)")
                if node.name in known:
                    raise InvalidInputError(f"node {shown(node.name)} is also in the cluster "
                                            "(the store is damaged)")
                self._requested[node.name] = node
        with _reading_part("deleting"):
            self._deleting = _names_part(parts, "deleting")
            for name in self._deleting:
                if name in known or name in self._requested:
                    where = "in the cluster" if name in known else "asked for"
                    raise InvalidInputError(f"node {shown(name)} is also {where} "
                                            "(the store is damaged)")
        with _reading_part("going"):
            # (a store written before this part was kept has none: nothing
            # given back was counted then)
            self._going = _names_part(parts, "going") if "going" in parts else []
            for index, name in enumerate(self._going):
                if name in self._going[:index]:
                    raise InvalidInputError(f"node {shown(name)} is there twice "
                                            "(the store is damaged)")
                if name in known or name in self._requested or name in self._deleting:
                    where = "in the cluster" if name in known else "asked for" \
                        if name in self._requested else "to be given back"
                    raise InvalidInputError(f"node {shown(name)} is also {where} "
                                            "(the store is damaged)")
        with _reading_part("revocations"):
            self._revocations = _map_part(parts, "revocations", _seconds, "seconds")
            _all_known(self._revocations, known, "revocations")
        with _reading_part("values"):
            self._values = _map_part(parts, "values", lambda value: True, "values")
            for name, value in self._values.items():
                self._values[name] = from_json_quantity(value, f"node {shown(name)}",
                                                        decimal_strings=True)
                if not 0 <= self._values[name] <= 1:
                    raise InvalidInputError(f"node {shown(name)}: expected a value from 0 "
                                            f"to 1, got {shown(value)}")
            # (a store written before values were kept for held nodes only
            # may hold others: dropped, as no node of their name can come)
            self._keep_held_values()
        with _reading_part("marks"):
            marks = _map_part(parts, "marks", _time_or_none, "times")
            if set(marks) != {"add", "delete"}:
                raise InvalidInputError("expected the times of add and delete")
            self._marks = marks
        with _reading_part("serial"):
            self._serial = _map_part(parts, "serial", _serial_number, "whole numbers")
        # (what no change of the manager's can leave behind: a workload
        # twice in the queue or both queued and placed; the next cycle
        # would fail on it)
        placed = self._distributor.assignments
        queued: Dict[str, None] = {}
        for load in self._pending:
            if load.name in queued or load.name in placed:
                where = f"on node {shown(placed[load.name])}" if load.name in placed \
                    else "in the queue"
                raise InvalidInputError(f"part 'pending': workload {shown(load.name)} is "
                                        f"also {where} (the store is damaged)")
            queued[load.name] = None

    def _keep_held_values(self) -> None:
        """Drop the resource values of nodes the manager no longer holds (in
        the cluster or being created): a node's value goes with the node,
        however it goes. O(V) for V values."""
        if any(name not in self._requested and not self._has(name) for name in self._values):
            self._values = {name: value for name, value in self._values.items()
                            if name in self._requested or self._has(name)}

    def _commit(self) -> None:
        # (every change ends here, so the values follow the nodes held)
        self._keep_held_values()
        parts = self._parts()
        if parts == getattr(self, "_committed", None):
            return  # nothing changed: no write, no fsync
        self._store.save(parts)
        self._committed = parts

    def __repr__(self) -> str:
        return (f"ElasticManager(nodes={len(self.nodes)}, creating={len(self._requested)}, "
                f"placed={len(self._distributor.assignments)}, pending={len(self._pending)})")


# ----------------------------------------------------------- validation

def _waiting_in(moved: Mapping[str, Optional[str]], placed: Mapping[str, Optional[str]]) -> int:
    """How many workloads of a placement step found no node."""
    return sum(node is None for node in moved.values()) + \
        sum(node is None for node in placed.values())


def _claim(store: Any) -> Optional[str]:
    """Make the file ``store`` names, empty, when none is there, and return
    its absolute path (the file this call made); else ``None``. Made at
    once, exclusively: a file another process makes in the meantime is
    never taken for ours."""
    if not isinstance(store, (str, os.PathLike)) or isinstance(store, bytes):
        return None
    path = os.path.abspath(os.fspath(store))
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    except OSError:  # (there already, or not makeable: the store says why)
        return None
    return path


def _unmake(path: Optional[str]) -> None:
    """Remove the store file :func:`_claim` made (and SQLite's files beside
    it), so that a constructor that failed leaves nothing behind."""
    if path is None:
        return
    for made in (path, f"{path}-wal", f"{path}-shm"):
        with contextlib.suppress(OSError):
            os.remove(made)


def _check_provider(provider: Any) -> None:
    missing = [name for name in ("create_nodes", "delete_nodes", "poll")
               if not callable(getattr(provider, name, None))]
    if missing:
        raise InvalidTypeError(f"provider: expected an object with create_nodes, "
                               f"delete_nodes and poll, got {type(provider).__name__} "
                               f"(no {missing[0]})")


#: Resource values nearer 0 than this are kept as 0 (the smallest size a
#: quantity may have, see :data:`~pylighthouse.quantities.MAX_EXPONENT`).
_TINY = Fraction(1, 10 ** 300)


def _resource_value(given: Any, where: str) -> Decimal:
    """A provider's value of a node, from 0 to 1, as a quantity: one of the
    exact number types is compared exactly first, so that a value out of
    range is refused as such however small or large, and one above 0 but
    below :data:`_TINY` is kept as 0; the rest is read as any quantity."""
    exact: Optional[Fraction] = None
    if isinstance(given, (int, float, Decimal, Fraction)) and not isinstance(given, bool):
        try:
            exact = Fraction(given)
        except (ValueError, OverflowError, ArithmeticError):  # (NaN, infinities)
            pass
    if exact is None or 0 <= exact <= 1:
        value = to_quantity(0 if exact is not None and exact < _TINY else given,
                            f"{where}: value")
        if 0 <= value <= 1:
            return value
    raise InvalidInputError(f"{where}: value must be from 0 to 1, got {given!r}")


def _nodelist(value: Any, where: str, wait: bool) -> List[Tuple[str, Dict[str, Any], Any]]:
    """``(name, entry, max_wait_time)`` for each entry of an elasticslice node list."""
    if isinstance(value, MappingABC):
        if "nodelist" not in value:
            raise InvalidInputError(f"{where}: missing (give a list, or a struct with 'nodelist')")
        value = value["nodelist"]
    if isinstance(value, (str, bytes)) or isinstance(value, MappingABC) \
            or not isinstance(value, Iterable):
        raise InvalidTypeError(f"{where}: expected a list of dicts, got {type(value).__name__}")
    entries = []
    for index, item in enumerate(value):
        label = f"{where}[{index}]"
        if not isinstance(item, MappingABC):
            raise InvalidTypeError(f"{label}: expected a dict, got {type(item).__name__}")
        name = item.get("client_id") or item.get("node_id")
        if not isinstance(name, str) or not name:
            raise InvalidInputError(f"{label}: needs a node_id or client_id (a non-empty string)")
        seconds = item.get("max_wait_time")
        if wait:
            if "max_wait_time" not in item:
                raise InvalidInputError(f"{label}: node {name!r}: missing field 'max_wait_time'")
            if not _seconds(seconds):
                raise InvalidInputError(f"{label}: node {name!r}: max_wait_time must be a "
                                        f"number of seconds, at least 0, got {seconds!r}")
        entry = dict(item)
        if wait:
            # (the answer echoes the entries: a copy, nested lists, dicts
            # and tuples too, so that it never shares them with the caller)
            for key, field in entry.items():
                try:
                    entry[key] = _copy(field)
                except RecursionError:
                    raise InvalidInputError(f"{label}: node {name!r}: field {shown(key)}: "
                                            "nested too deep") from None
        entries.append((name, entry, seconds))
    return entries


@contextlib.contextmanager
def _reading_part(part: str) -> Iterator[None]:
    """Name ``part`` in the message of whatever reading it raises (the
    store is damaged, or was edited by hand)."""
    try:
        yield
    except LighthouseException as error:
        message = str(error)
        if message.startswith("part "):
            raise
        raise InvalidInputError(f"part {part!r}: {message}") from None
    except (KeyError, TypeError, ValueError, AttributeError, RecursionError) as error:
        raise InvalidInputError(f"part {part!r}: damaged: {type(error).__name__}: "
                                f"{error}") from None


def _all_known(names: Iterable[str], known: Iterable[str], part: str) -> None:
    """Refuse a name of ``names`` that is not a node of the cluster."""
    strangers = [name for name in names if name not in known]
    if strangers:
        raise InvalidInputError(f"part {part!r}: node {shown(strangers[0])} is not in "
                                "the cluster (the store is damaged)")


def _names_part(parts: Mapping[str, Any], part: str) -> List[str]:
    """A stored list of node names (a copy)."""
    value = parts[part]
    if not isinstance(value, list) or not all(isinstance(name, str) for name in value):
        raise InvalidInputError(f"part {part!r}: expected a list of node names")
    return list(value)


def _map_part(parts: Mapping[str, Any], part: str, good: Callable[[Any], bool],
              what: str) -> Dict[str, Any]:
    """A stored object of names to values that ``good`` accepts (a copy)."""
    value = parts[part]
    if not isinstance(value, dict) or not all(map(good, value.values())):
        raise InvalidInputError(f"part {part!r}: expected an object of names to {what}")
    return dict(value)


def _seconds(value: Any) -> bool:
    """A revocation's wait, given or kept in the store: seconds, at least 0
    (infinity too; not NaN)."""
    return not isinstance(value, bool) and isinstance(value, (int, float)) and value >= 0


def _time_or_none(value: Any) -> bool:
    """A time kept in the store, as the clock gave it (``None``: none yet)."""
    return value is None or not isinstance(value, bool) and isinstance(value, (int, float)) \
        and not math.isnan(value)


def _serial_number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int) and value >= 0


#: The fields of a manager's config, as its constructor makes it.
_CONFIG = ("templates", "min_nodes", "max_nodes", "enable_delete", "intervals")


def _config_from_json(data: Any) -> Dict[str, Any]:
    """A stored config, its fields checked as the constructor checks its
    arguments (the templates are read by :func:`_template_from_json`)."""
    if not isinstance(data, dict) or set(data) != set(_CONFIG):
        raise InvalidInputError(f"part 'config': expected an object with {', '.join(_CONFIG)}")
    if not isinstance(data["templates"], list):
        raise InvalidInputError("part 'config': templates: expected a list")
    try:
        return {"templates": data["templates"], **_limits(
            data["min_nodes"], data["max_nodes"], data["enable_delete"], data["intervals"])}
    except LighthouseException as error:
        raise InvalidInputError(f"part 'config': {error}") from None


def _limits(min_nodes: Any, max_nodes: Any, enable_delete: Any,
            intervals: Any) -> Dict[str, Any]:
    """A config's limits and intervals, checked (the constructor's
    arguments, or a stored config's fields)."""
    config: Dict[str, Any] = {
        "min_nodes": _whole(min_nodes, "min_nodes"),
        "max_nodes": None if max_nodes is None else _whole(max_nodes, "max_nodes"),
        "enable_delete": check_flag(enable_delete, "enable_delete"),
        "intervals": _intervals(intervals)}
    if config["max_nodes"] is not None and config["max_nodes"] < config["min_nodes"]:
        raise InvalidInputError(
            f"max_nodes: must be at least min_nodes ({min_nodes}), got {max_nodes}")
    return config


def _intervals(value: Optional[Mapping[str, Any]]) -> Dict[str, float]:
    intervals: Dict[str, float] = dict(DEFAULT_INTERVALS)
    if value is None:
        return intervals
    if not isinstance(value, MappingABC):
        raise InvalidTypeError(f"intervals: expected a mapping, got {type(value).__name__}")
    for key, seconds in value.items():
        if key not in intervals:
            raise InvalidInputError(f"intervals: unknown key {shown(key)} (valid: add, delete)")
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) \
                or not 0 <= seconds < math.inf:
            raise InvalidInputError(
                f"intervals: {key}: expected a number of seconds, at least 0, "
                f"got {shown(seconds)}")
        intervals[key] = seconds
    return intervals


# ---------------------------------------------------------- plain data

def _template_json(template: Any) -> Dict[str, Any]:
    return {"name": template.prefix, "cost": to_json_quantity(template.cost),
            "resources": {k: to_json_quantity(v) for k, v in template.shape.resources.items()}}


def _template_from_json(data: Mapping[str, Any]) -> Dict[str, Any]:
    return {"name": data["name"],
            "cost": from_json_quantity(data["cost"], "store: template cost",
                                       decimal_strings=True),
            "resources": {k: from_json_quantity(v, "store: template", decimal_strings=True)
                          for k, v in data["resources"].items()}}


def _node_json(node: Node) -> Dict[str, Any]:
    return {"name": node.name,
            "resources": {k: to_json_quantity(v) for k, v in node.resources.items()}}


def _node_from_json(data: Mapping[str, Any]) -> Node:
    return Node(data["name"], {k: from_json_quantity(v, "store: node", decimal_strings=True)
                               for k, v in data["resources"].items()})


class _ManagerClosed(InvalidInputError):
    """The manager was closed: a change could not be saved (answered over
    XML-RPC as the manager's failure, code 2, not as bad parameters)."""


class _ClockFailed(Exception):
    """The manager's clock raised ``error`` (reported as the clock's, not
    the provider's)."""

    def __init__(self, error: Exception):
        super().__init__(f"clock: {type(error).__name__}: {error}")


def _failure(error: Exception) -> str:
    """How a step's failure reads in a cycle's ``errors``."""
    if isinstance(error, _ClockFailed):
        return str(error)
    return f"{type(error).__name__}: {error}"


def _copy(value: Any) -> Any:
    """A deep copy of plain data (dicts, lists, tuples and scalars)."""
    if isinstance(value, dict):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy(item) for item in value]
    if isinstance(value, tuple):
        return tuple(_copy(item) for item in value)
    return value
