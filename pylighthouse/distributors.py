"""Distributors: the stateful owners of nodes and placements, and the three strategies.

A :class:`Distributor` validates every call before it changes anything, runs
the two aversion passes, keeps the books (remaining resources, who is where)
and offers the lifecycle of a cluster (release, add, cordon, drain, remove,
explain, snapshot). The strategies only decide the order in which nodes are
tried and the order in which one call's workloads are placed; whether a
workload fits is always decided by :func:`pylighthouse.fit.check_fit`.
"""
import decimal
import operator
from collections import Counter
from decimal import Decimal
from typing import (Any, ClassVar, Dict, Iterable, List, Mapping,
                    Optional, Sequence, Tuple, Type, Union)

import attr

from .errors import (DuplicateNameError, InvalidInputError, InvalidTypeError,
                     UnknownNameError)
from .explain import Explanation
from .fit import CORDONED, MISSING, Reason, check_fit
from .index import DEFAULT_LOAD, NodeIndex
from .model import Node, Workload, check_name
from .quantities import EXACT, ZERO, from_json_quantity, to_json_quantity, to_number
from .rubric import Rubric

__all__ = ["Distributor", "PrioritizedDistributor", "RoundRobinDistributor",
           "BinPackDistributor", "NodeState"]

SNAPSHOT_FORMAT = 1

_NAME = operator.attrgetter("name")

WorkloadLike = Union[Workload, Mapping[str, Any]]
NodeLike = Union[Node, Mapping[str, Any]]


class _Slot:
    """A node inside a distributor: its capacity and what is on it now."""

    __slots__ = ("node", "name", "remaining", "workloads", "groups", "cordoned", "key")

    def __init__(self, node: Node):
        self.node = node
        self.name = node.name
        self.remaining: Dict[str, Decimal] = dict(node.resources)
        self.workloads: Dict[str, Workload] = {}
        self.groups: Counter = Counter()
        self.cordoned = False
        self.key: Any = None  # its place in the node index's order


@attr.s(frozen=True, slots=True, auto_attribs=True)
class NodeState:
    """What a distributor knows of one node, as plain numbers.

    ``capacity`` is what the node was created with, ``remaining`` what is left
    after the workloads on it (``workloads``, in placement order);
    ``cordoned`` says whether it refuses new workloads.
    """

    name: str
    capacity: Dict[str, Any]
    remaining: Dict[str, Any]
    workloads: Tuple[str, ...]
    cordoned: bool


def _plain(quantities: Mapping[str, Decimal]) -> Dict[str, Any]:
    return {key: to_number(value) for key, value in quantities.items()}


def _single_or_many(names: Any, what: str) -> List[Any]:
    if isinstance(names, (str, Workload, Node)):
        return [names]
    if isinstance(names, Mapping) or not isinstance(names, Iterable):
        raise InvalidTypeError(
            f"{what}: expected a list of names, got {type(names).__name__}")
    return list(names)


class Distributor:
    """Owns nodes and placements; places workloads in its strategy's order.

    Use one of the strategies: :class:`PrioritizedDistributor`,
    :class:`RoundRobinDistributor` or :class:`BinPackDistributor`. A
    distributor is stateful: every call sees what earlier calls placed. Every
    method validates its input before changing anything, so a call that
    raises leaves the distributor exactly as it was. It is not thread-safe:
    share one between threads only behind a lock.
    """

    #: The strategy's name, as used in snapshots and JSON problems.
    strategy: ClassVar[str] = ""
    #: Whether node choice uses the :mod:`~pylighthouse.index` (``False``
    #: keeps the plain scan, the readable statement of each strategy, which
    #: the tests compare with the index).
    _indexed: ClassVar[bool] = True
    #: Whether one call places its workloads the same whatever order they
    #: are given in (BinPack sorts them itself; the planner relies on this).
    _sorts_each_call: ClassVar[bool] = False
    #: Nodes per block of the index (tests make it small to exercise splits).
    _index_load: ClassVar[int] = DEFAULT_LOAD
    _strategies: ClassVar[Dict[str, Type["Distributor"]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.strategy:
            Distributor._strategies[cls.strategy] = cls

    def __init__(self, nodes: Iterable[NodeLike] = ()):
        if type(self) is Distributor:
            raise InvalidTypeError(
                "Distributor is the base class: use PrioritizedDistributor, "
                "RoundRobinDistributor or BinPackDistributor")
        self._slots: Dict[str, _Slot] = {}
        self._where: Dict[str, _Slot] = {}
        self._group_nodes: Dict[str, Counter] = {}
        self._index: Optional[NodeIndex] = \
            NodeIndex(self._index_rubric(), self._index_load) if self._indexed else None
        self._join(self._accept_nodes(nodes))

    @classmethod
    def from_list(cls, nodes: Iterable[NodeLike]) -> "Distributor":
        """Return a distributor over ``nodes`` (Node objects or dicts), in order.

        Cost: O(N x R log N), amortised.
        """
        return cls(nodes)

    # ----------------------------------------------------------------- reading

    @property
    def nodes(self) -> List[Node]:
        """The nodes, with their capacities, in the order they were given. O(N)."""
        return [slot.node for slot in self._slots.values()]

    @property
    def assignments(self) -> Dict[str, str]:
        """A new dict of every placed workload's name to its node's name. O(W)."""
        return {name: slot.name for name, slot in self._where.items()}

    def node_state(self, name: str) -> NodeState:
        """Return the :class:`NodeState` of node ``name``.

        Raises:
            UnknownNameError: no node has that name.

        Cost: O(R + workloads on the node).
        """
        slot = self._slot(name)
        return NodeState(slot.name, _plain(slot.node.resources),
                         _plain(slot.remaining), tuple(slot.workloads),
                         slot.cordoned)

    def node_states(self) -> List[NodeState]:
        """Return the :class:`NodeState` of every node, in the order given.

        Cost: O(N x R + placed workloads).
        """
        return [self.node_state(name) for name in self._slots]

    def workload(self, name: str) -> Workload:
        """Return the placed workload called ``name``.

        Raises:
            UnknownNameError: no placed workload has that name.

        Cost: O(1).
        """
        return self._placed_slot(name).workloads[name]

    # --------------------------------------------------------------- placing

    def attempt_assign_loads(self, workloads: Iterable[WorkloadLike],
                             all_or_nothing: bool = False) -> Dict[str, Optional[str]]:
        """Place ``workloads`` (Workload objects or dicts) onto the nodes.

        Returns a dict of every workload name, in the order given, to the name
        of the node it now runs on, or ``None`` when it fits nowhere. With
        ``all_or_nothing``, either every workload is placed or none is (the
        distributor is then exactly as before and every value is ``None``).

        Raises:
            InvalidInputError, InvalidTypeError: a workload is malformed.
            DuplicateNameError: a name repeats within the call or is already
                placed. Nothing is placed when anything is raised.

        Cost: O(W x R) to validate W workloads (R resources each; BinPack
        adds O(W log W) to sort them), then per workload the node index's
        search: about O(N / 64) comparisons made in C for N nodes, plus
        the nodes of each block of about 64 whose bounds pass while none
        of them fits (a few blocks on realistic clusters, all of them at
        worst), and O(R log N) to book the placement. See
        :doc:`/performance`.
        """
        loads = self._accept_workloads(workloads)
        with decimal.localcontext(EXACT):
            return self._assign(loads, all_or_nothing)

    def release_loads(self, names: Iterable[Union[str, Workload]]) -> Dict[str, str]:
        """The named workloads finish: give their resources back exactly.

        Returns ``{workload: node it left}``. A single name is accepted too.

        Raises:
            UnknownNameError: a name is not placed (nothing is released).
            DuplicateNameError: a name is given twice.

        Cost: O(K x R log N) for K workloads (BinPack: each node also moves
        in its order, O(log N) amortised).
        """
        wanted = self._accept_placed_names(names, "release_loads")
        with decimal.localcontext(EXACT):
            return {name: self._unplace(name).name for name in wanted}

    def add_nodes(self, nodes: Iterable[NodeLike]) -> None:
        """New nodes join: at the end of the order (BinPack: by their score).

        Raises:
            DuplicateNameError: a name is taken or repeats (nothing joins).
            InvalidInputError, InvalidTypeError: a node is malformed.

        Cost: O(M x R log N) for M nodes, amortised.
        """
        self._join(self._accept_nodes(nodes))

    def record_running(self, node: str, workloads: Iterable[WorkloadLike]) -> None:
        """Record ``workloads`` as already running on node ``node``, with no fit check.

        For workloads placed before this distributor knew of them (a JSON
        problem's node ``workloads``, a cluster's inventory): they use the
        node's resources, even beyond its capacity, and count for aversion.
        The strategy's own state (RoundRobin's cursor) does not move.

        Raises:
            UnknownNameError: no node has that name.
            DuplicateNameError: a workload name repeats or is already placed.
            InvalidInputError, InvalidTypeError: a workload is malformed, or
                requires a resource the node does not have.
            Nothing is recorded when anything is raised.

        Cost: O(K x R) for K workloads.
        """
        slot = self._slot(node)
        loads = self._accept_workloads(workloads)
        for load in loads:
            # Over capacity is allowed here; a resource the node lacks is not.
            reason = check_fit(slot.remaining, load)
            if reason is not None and reason.kind == MISSING:
                raise InvalidInputError(
                    f"workload {load.name!r}: requires {reason.resource!r}, which node "
                    f"{slot.name!r} does not have")
        with decimal.localcontext(EXACT):
            for load in loads:
                self._put(load, slot)

    def cordon(self, name: str) -> None:
        """Node ``name`` takes no new workloads; those on it stay.

        Raises:
            UnknownNameError: no node has that name.

        Cost: O(log N).
        """
        self._cordon(self._slot(name), True)

    def uncordon(self, name: str) -> None:
        """Node ``name`` takes new workloads again.

        Raises:
            UnknownNameError: no node has that name.

        Cost: O(log N).
        """
        self._cordon(self._slot(name), False)

    def drain(self, name: str) -> Dict[str, Optional[str]]:
        """Cordon node ``name`` and move each of its workloads elsewhere.

        Workloads are moved in the strategy's order (BinPack: biggest first)
        to the node the strategy chooses. Returns ``{workload: new node, or
        None when it could not move}``; a workload that cannot move stays.

        Raises:
            UnknownNameError: no node has that name.

        Cost: that of placing the node's workloads.
        """
        slot = self._slot(name)
        self._cordon(slot, True)
        moves: Dict[str, Optional[str]] = {}
        with decimal.localcontext(EXACT):
            for workload in self._sequence(list(slot.workloads.values())):
                target = self._choose(workload)
                if target is not None:
                    self._unplace(workload.name)
                    self._place(workload, target)
                moves[workload.name] = None if target is None else target.name
        return moves

    def remove_nodes(self, names: Iterable[str]) -> Dict[str, Optional[str]]:
        """The named nodes leave now; their workloads are placed elsewhere.

        Returns ``{workload: new node or None}``; ``None`` means the workload
        is no longer placed anywhere, so the caller can act on it.

        Raises:
            UnknownNameError: a name is not a node (nothing is removed).
            DuplicateNameError: a name is given twice.

        Cost: O(R log N) per node removed and per workload released, plus
        placing the displaced workloads.
        """
        leaving = self._accept_node_names(names)
        with decimal.localcontext(EXACT):
            displaced = []
            for name in leaving:
                slot = self._slots[name]
                # Cordoned first, so that the room its workloads give back
                # raises no bound of the index on the way out.
                self._cordon(slot, True)
                for workload_name in list(slot.workloads):
                    displaced.append(slot.workloads[workload_name])
                    self._unplace(workload_name)
            for name in leaving:
                self._leave(self._slots[name])
            return self._assign(displaced, False)

    def explain(self, workload: WorkloadLike) -> Explanation:
        """Say why ``workload`` does, or would not, fit right now; change nothing.

        The :class:`~pylighthouse.explain.Explanation` lists the nodes where
        it fits (those sharing an aversion group with it apart), the reason
        for every other node, and the node the strategy would choose.

        Cost: O(N x R), plus O(N log N) for BinPack's order.
        """
        load = workload if isinstance(workload, Workload) \
            else Workload.from_dict(workload)
        with decimal.localcontext(EXACT):
            averse = self._averse(load)
            reasons: Dict[str, Reason] = {}
            fitting: List[str] = []
            for slot in self._order():
                reason = Reason(CORDONED, "") if slot.cordoned \
                    else check_fit(slot.remaining, load)
                if reason is None:
                    fitting.append(slot.name)
                else:
                    reasons[slot.name] = reason
        fits = tuple(name for name in fitting if name not in averse)
        averse_fits = tuple(name for name in fitting if name in averse)
        # The two aversion passes in the strategy's order, read off the scan.
        choice = (fits or averse_fits or (None,))[0]
        return Explanation(workload=load.name, total=len(self._slots), fits=fits,
                           averse=averse_fits, reasons=reasons, choice=choice)

    def utilization(self) -> Dict[str, Dict[str, Dict[str, Dict[str, Any]]]]:
        """Return capacity, use and free room per resource, per node and overall.

        ``{"cluster": {resource: {"capacity": c, "used": u, "free": f}},
        "nodes": {node: {resource: {...}}}}``, with plain numbers. Tags and
        wards appear as they are; a sum that meets both infinities is NaN.

        Cost: O(N x R + placed workloads x R).
        """
        nodes: Dict[str, Dict[str, Dict[str, Any]]] = {}
        cluster: Dict[str, Dict[str, List[Decimal]]] = {}
        with decimal.localcontext(EXACT):
            for slot in self._slots.values():
                used = {key: ZERO for key in slot.remaining}
                for workload in slot.workloads.values():
                    for key, needed in workload.requirements.items():
                        used[key] += needed
                figures = {}
                for key, capacity in slot.node.resources.items():
                    row = {"capacity": capacity, "used": used[key],
                           "free": slot.remaining[key]}
                    figures[key] = {k: to_number(v) for k, v in row.items()}
                    total = cluster.setdefault(
                        key, {"capacity": [], "used": [], "free": []})
                    for field, value in row.items():
                        total[field].append(value)
                nodes[slot.name] = figures
            summed = {key: {field: to_number(_sum(values))
                            for field, values in fields.items()}
                      for key, fields in cluster.items()}
        return {"cluster": summed, "nodes": nodes}

    # -------------------------------------------------------------- snapshot

    def to_dict(self) -> Dict[str, Any]:
        """Return a JSON-serialisable snapshot of the whole distributor.

        Cost: O(N x R + placed workloads x R).

        It holds the strategy, its settings (rubric, cursor), the nodes with
        their capacities and cordons, and the placed workloads in placement
        order. Infinite quantities are written ``"inf"`` / ``"-inf"``.
        :meth:`from_dict` restores it losslessly.
        """
        snapshot: Dict[str, Any] = {"format": SNAPSHOT_FORMAT, "strategy": self.strategy}
        snapshot.update(self._settings())
        snapshot["nodes"] = [
            {"name": slot.name,
             "resources": {k: to_json_quantity(v) for k, v in slot.node.resources.items()},
             "cordoned": slot.cordoned}
            for slot in self._slots.values()]
        snapshot["placements"] = [
            {"node": slot.name, "workload": _workload_json(slot.workloads[name])}
            for name, slot in self._where.items()]
        return snapshot

    @classmethod
    def from_dict(cls, snapshot: Mapping[str, Any]) -> "Distributor":
        """Rebuild the distributor a :meth:`to_dict` snapshot describes.

        Called on :class:`Distributor`, returns the snapshot's strategy class;
        called on a strategy class, the snapshot must be of that strategy.

        Raises:
            InvalidInputError, InvalidTypeError: the snapshot is malformed.

        Cost: O((N + placed workloads) x R log N).
        """
        if not isinstance(snapshot, Mapping):
            raise InvalidTypeError(
                f"snapshot: expected a mapping, got {type(snapshot).__name__}")
        if snapshot.get("format") != SNAPSHOT_FORMAT:
            raise InvalidInputError(
                f"snapshot: format: expected {SNAPSHOT_FORMAT}, got {snapshot.get('format')!r}")
        strategy = snapshot.get("strategy")
        target = Distributor._strategies.get(strategy)  # type: ignore[arg-type]
        if target is None:
            raise InvalidInputError(
                f"snapshot: strategy: unknown strategy {strategy!r} "
                f"(valid: {', '.join(Distributor._strategies)})")
        if cls is not Distributor and cls is not target:
            raise InvalidInputError(
                f"snapshot: strategy: holds a {strategy} distributor, "
                f"not a {cls.strategy} one")
        nodes = []
        for index, item in enumerate(_field(snapshot, "nodes", list, "snapshot")):
            where = f"snapshot: nodes[{index}]"
            resources = _field(item, "resources", Mapping, where)
            nodes.append(Node(check_name(item.get("name"), where), {
                key: from_json_quantity(value, f"{where}.resources.{key}",
                                        decimal_strings=True)
                for key, value in resources.items()}))
        distributor = target._restore(snapshot, nodes)
        for index, item in enumerate(_field(snapshot, "nodes", list, "snapshot")):
            cordoned = item.get("cordoned", False)
            if not isinstance(cordoned, bool):
                raise InvalidTypeError(
                    f"snapshot: nodes[{index}].cordoned: expected true or false")
            distributor._cordon(distributor._slots[nodes[index].name], cordoned)
        with decimal.localcontext(EXACT):
            for index, item in enumerate(_field(snapshot, "placements", list, "snapshot")):
                where = f"snapshot: placements[{index}]"
                node_name = _field(item, "node", str, where)
                if node_name not in distributor._slots:
                    raise InvalidInputError(f"{where}.node: no node named {node_name!r}")
                workload = _workload_from_json(_field(item, "workload", Mapping, where),
                                               f"{where}.workload")
                if workload.name in distributor._where:
                    raise DuplicateNameError(
                        f"{where}.workload: workload {workload.name!r} is placed twice")
                distributor._put(workload, distributor._slots[node_name])
        return distributor

    # ------------------------------------------------------ strategy hooks

    def _order(self) -> Sequence[_Slot]:
        """The nodes in the order this strategy tries them now."""
        return list(self._slots.values())

    def _sequence(self, workloads: List[Workload]) -> List[Workload]:
        """The order in which one call's workloads are placed."""
        return workloads

    def _index_rubric(self) -> Optional[Rubric]:
        """The rubric whose score of remaining room orders the index's nodes;
        ``None`` keeps them in the order they joined."""
        return None

    def _start(self) -> int:
        """How many nodes of the order a search passes over before it starts."""
        return 0

    def _placed(self, slot: _Slot) -> None:
        """Called after a workload landed on ``slot``."""

    def _joined(self, slot: _Slot) -> None:
        """Called after ``slot`` joined."""

    def _leaving(self, slot: _Slot) -> None:
        """Called before ``slot`` leaves."""

    def _settings(self) -> Dict[str, Any]:
        """The strategy's own state, for snapshots."""
        return {}

    def _memento(self) -> Any:
        """The strategy's own state, for undoing an all-or-nothing call."""
        return None

    def _recall(self, memento: Any) -> None:
        """Restore what :meth:`_memento` returned."""

    @classmethod
    def _restore(cls, snapshot: Mapping[str, Any], nodes: List[Node]) -> "Distributor":
        return cls(nodes)

    # ------------------------------------------------------------- pipeline

    def _assign(self, loads: List[Workload], all_or_nothing: bool) -> Dict[str, Optional[str]]:
        result: Dict[str, Optional[str]] = {load.name: None for load in loads}
        memento = self._memento()
        placed: List[str] = []
        for load in self._sequence(loads):
            slot = self._choose(load)
            if slot is None:
                if all_or_nothing:
                    for name in reversed(placed):
                        self._unplace(name)
                    self._recall(memento)
                    return {load.name: None for load in loads}
                continue
            self._place(load, slot)
            placed.append(load.name)
            result[load.name] = slot.name
        return result

    def _choose(self, workload: Workload) -> Optional[_Slot]:
        """The node the strategy picks for ``workload``: first the nodes that
        share no aversion group with it, then, if none fits, all of them."""
        if self._index is not None:
            return self._indexed_choice(workload)
        order = self._order()
        averse = self._averse(workload)
        if averse:
            slot = self._first_fit(workload, order, averse)
            if slot is not None:
                return slot
        return self._first_fit(workload, order, ())

    def _indexed_choice(self, workload: Workload) -> Optional[_Slot]:
        """:meth:`_choose` through the node index: the same two passes, in the
        same order, with nodes that cannot fit skipped in runs."""
        index = self._index
        assert index is not None
        start = self._start()
        groups = workload.aversion_groups
        if groups and not self._group_nodes.keys().isdisjoint(groups):
            slot = index.first_fit(workload, groups, start)
            if slot is not None:
                return slot
        return index.first_fit(workload, frozenset(), start)

    @staticmethod
    def _first_fit(workload: Workload, order: Iterable[_Slot],
                   avoid: Any) -> Optional[_Slot]:
        for slot in order:
            if not slot.cordoned and slot.name not in avoid \
                    and check_fit(slot.remaining, workload) is None:
                return slot
        return None

    def _averse(self, workload: Workload) -> set:
        """Names of the nodes hosting a workload that shares a group with ``workload``."""
        averse: set = set()
        for group in workload.aversion_groups:
            averse.update(self._group_nodes.get(group, ()))
        return averse

    def _place(self, workload: Workload, slot: _Slot) -> None:
        self._put(workload, slot)
        self._placed(slot)

    def _put(self, workload: Workload, slot: _Slot) -> None:
        remaining = slot.remaining
        before = {key: remaining[key] for key in workload.requirements}
        for key, needed in workload.requirements.items():
            remaining[key] -= needed
        if self._index is not None and before:
            self._index.changed(slot, before)
        slot.workloads[workload.name] = workload
        self._where[workload.name] = slot
        for group in workload.aversion_groups:
            slot.groups[group] += 1
            nodes = self._group_nodes.get(group)
            if nodes is None:
                nodes = self._group_nodes[group] = Counter()
            nodes[slot.name] += 1

    def _unplace(self, name: str) -> _Slot:
        slot = self._where.pop(name)
        workload = slot.workloads.pop(name)
        remaining = slot.remaining
        before = {key: remaining[key] for key in workload.requirements}
        for key, needed in workload.requirements.items():
            remaining[key] += needed
        if self._index is not None:
            if before:
                self._index.changed(slot, before)
            if workload.aversion_groups:
                self._index.touched(slot)  # it may take that group's workloads again
        for group in workload.aversion_groups:
            _decrement(slot.groups, group)
            nodes = self._group_nodes[group]
            _decrement(nodes, slot.name)
            if not nodes:
                del self._group_nodes[group]
        return slot

    def _join(self, nodes: List[Node]) -> None:
        for node in nodes:
            slot = _Slot(node)
            self._slots[node.name] = slot
            if self._index is not None:
                self._index.add(slot)
            self._joined(slot)

    def _leave(self, slot: _Slot) -> None:
        self._leaving(slot)
        if self._index is not None:
            self._index.remove(slot)
        del self._slots[slot.name]

    def _cordon(self, slot: _Slot, cordoned: bool) -> None:
        if slot.cordoned != cordoned:
            slot.cordoned = cordoned
            if self._index is not None:
                self._index.cordoned(slot)

    def _rank(self, slot: _Slot) -> int:
        """The number of nodes before ``slot`` in the order given."""
        if self._index is not None:
            return self._index.rank(slot)
        return list(self._slots).index(slot.name)

    # ----------------------------------------------------------- validation

    def _slot(self, name: Any) -> _Slot:
        if isinstance(name, Node):
            name = name.name
        try:
            return self._slots[name]
        except (KeyError, TypeError):
            raise UnknownNameError(f"node {name!r}: no such node") from None

    def _placed_slot(self, name: Any) -> _Slot:
        try:
            return self._where[name]
        except (KeyError, TypeError):
            raise UnknownNameError(f"workload {name!r}: not placed") from None

    def _accept_nodes(self, nodes: Iterable[NodeLike]) -> List[Node]:
        accepted = Node.from_list(nodes)
        seen = set()
        for node in accepted:
            if node.name in self._slots:
                raise DuplicateNameError(f"node {node.name!r}: name already taken")
            if node.name in seen:
                raise DuplicateNameError(f"node {node.name!r}: name given twice")
            seen.add(node.name)
        return accepted

    def _accept_workloads(self, workloads: Iterable[WorkloadLike]) -> List[Workload]:
        accepted = Workload.from_list(workloads)
        names = [workload.name for workload in accepted]
        unique = set(names)
        if len(unique) == len(names) and self._where.keys().isdisjoint(unique):
            return accepted
        # Some name is taken or repeats: find the first, in order.
        seen = set()
        for workload in accepted:
            if workload.name in self._where:
                raise DuplicateNameError(
                    f"workload {workload.name!r}: already placed on node "
                    f"{self._where[workload.name].name!r}")
            if workload.name in seen:
                raise DuplicateNameError(f"workload {workload.name!r}: name given twice")
            seen.add(workload.name)
        return accepted

    def _accept_placed_names(self, names: Any, what: str) -> List[str]:
        wanted: List[str] = []
        seen = set()
        for name in _single_or_many(names, what):
            if isinstance(name, Workload):
                name = name.name
            self._placed_slot(name)
            if name in seen:
                raise DuplicateNameError(f"workload {name!r}: given twice")
            seen.add(name)
            wanted.append(name)
        return wanted

    def _accept_node_names(self, names: Any) -> List[str]:
        wanted: List[str] = []
        seen = set()
        for name in _single_or_many(names, "remove_nodes"):
            name = self._slot(name).name
            if name in seen:
                raise DuplicateNameError(f"node {name!r}: given twice")
            seen.add(name)
            wanted.append(name)
        return wanted

    def __repr__(self) -> str:
        return (f"<{type(self).__name__}: {len(self._slots)} nodes, "
                f"{len(self._where)} workloads placed>")


class PrioritizedDistributor(Distributor):
    """Tries the nodes in the order they were given (nodes added later go last)."""

    strategy = "Prioritized"


class RoundRobinDistributor(Distributor):
    """Tries the nodes in order, starting at a cursor and wrapping around once.

    After a workload lands on the node at position ``i``, the cursor moves to
    ``i + 1``, the node after it; a failed search leaves the cursor alone.
    """

    strategy = "RoundRobin"

    def __init__(self, nodes: Iterable[NodeLike] = ()):
        self._cursor = 0
        super().__init__(nodes)

    @property
    def cursor(self) -> int:
        """The position in the node order where the next search starts."""
        return self._cursor % len(self._slots) if self._slots else 0

    def _order(self) -> Sequence[_Slot]:
        slots = list(self._slots.values())
        start = self.cursor
        return slots[start:] + slots[:start]

    def _placed(self, slot: _Slot) -> None:
        # Kept unwrapped: a node added after the last one is "the next node".
        self._cursor = self._rank(slot) + 1

    def _leaving(self, slot: _Slot) -> None:
        if self._rank(slot) < self._cursor:
            self._cursor -= 1

    def _start(self) -> int:
        return self.cursor

    def _settings(self) -> Dict[str, Any]:
        return {"cursor": self._cursor}

    def _memento(self) -> Any:
        return self._cursor

    def _recall(self, memento: Any) -> None:
        self._cursor = memento

    @classmethod
    def _restore(cls, snapshot: Mapping[str, Any], nodes: List[Node]) -> "Distributor":
        distributor = cls(nodes)
        cursor = snapshot.get("cursor", 0)
        if isinstance(cursor, bool) or not isinstance(cursor, int) \
                or not 0 <= cursor <= len(nodes):
            raise InvalidInputError(
                f"snapshot: cursor: expected a whole number from 0 to {len(nodes)}, "
                f"got {cursor!r}")
        distributor._cursor = cursor
        return distributor


class BinPackDistributor(Distributor):
    """Packs workloads onto the nodes with the least room, biggest first.

    The ``rubric`` (resource -> weight) scores a workload's requirements and a
    node's remaining resources. Within one call workloads go biggest score
    first (ties by name); nodes are tried smallest score of remaining room
    first (ties by name), re-scored after every placement.
    """

    strategy = "BinPack"
    _sorts_each_call = True

    def __init__(self, rubric: Union[Rubric, Mapping[str, Any]],
                 nodes: Iterable[NodeLike] = ()):
        self._rubric = Rubric(rubric)
        super().__init__(nodes)

    @classmethod
    def from_list(cls, rubric: Union[Rubric, Mapping[str, Any]],  # type: ignore[override]
                  nodes: Iterable[NodeLike]) -> "BinPackDistributor":
        """Return a distributor over ``nodes`` that scores with ``rubric``.

        Cost: O(N x R log N), amortised.
        """
        return cls(rubric, nodes)

    @property
    def rubric(self) -> Rubric:
        """The rubric the distributor scores with."""
        return self._rubric

    def _order(self) -> Sequence[_Slot]:
        key = self._rubric.sort_key
        return sorted(self._slots.values(), key=lambda slot: key(slot.remaining, slot.name))

    def _index_rubric(self) -> Optional[Rubric]:
        return self._rubric

    def _sequence(self, workloads: List[Workload]) -> List[Workload]:
        # Biggest score first, ties by name. Workloads come in a few flavours:
        # each distinct set of the rubric's quantities is scored once, and the
        # workloads are grouped by score, so that only names are sorted.
        score = self._rubric.score
        resources = tuple(self._rubric.weights)
        scores: Dict[Tuple[Optional[Decimal], ...], Decimal] = {}
        groups: Dict[Decimal, List[Workload]] = {}
        for load in workloads:
            quantities = tuple(map(load.requirements.get, resources))
            size = scores.get(quantities)
            if size is None:
                size = scores[quantities] = score(load.requirements)
            groups.setdefault(size, []).append(load)
        return [load for size in sorted(groups, reverse=True)
                for load in sorted(groups[size], key=_NAME)]

    def _settings(self) -> Dict[str, Any]:
        return {"rubric": {key: to_json_quantity(weight)
                           for key, weight in self._rubric.weights.items()}}

    @classmethod
    def _restore(cls, snapshot: Mapping[str, Any], nodes: List[Node]) -> "Distributor":
        rubric = _field(snapshot, "rubric", Mapping, "snapshot")
        return cls({key: from_json_quantity(value, f"snapshot: rubric.{key}",
                                            finite=True, decimal_strings=True)
                    for key, value in rubric.items()}, nodes)


def _decrement(counter: Counter, key: str) -> None:
    counter[key] -= 1
    if not counter[key]:
        del counter[key]


def _sum(values: Iterable[Decimal]) -> Decimal:
    """Sum exactly; both infinities together give NaN instead of raising."""
    values = list(values)
    if any(v == Decimal("Infinity") for v in values) and \
            any(v == Decimal("-Infinity") for v in values):
        return Decimal("NaN")
    return sum(values, ZERO)


def _field(data: Any, key: str, kind: Any, where: str) -> Any:
    if not isinstance(data, Mapping):
        raise InvalidTypeError(f"{where}: expected an object, got {type(data).__name__}")
    if key not in data:
        raise InvalidInputError(f"{where}: missing field {key!r}")
    value = data[key]
    if not isinstance(value, kind):
        raise InvalidTypeError(
            f"{where}.{key}: expected {getattr(kind, '__name__', kind)}, "
            f"got {type(value).__name__}")
    return value


def _workload_json(workload: Workload) -> Dict[str, Any]:
    return {"name": workload.name,
            "requirements": {k: to_json_quantity(v) for k, v in workload.requirements.items()},
            "immunities": sorted(workload.immunities),
            "aversion_groups": sorted(workload.aversion_groups)}


def _workload_from_json(data: Mapping[str, Any], where: str) -> Workload:
    requirements = _field(data, "requirements", Mapping, where)
    return Workload(
        check_name(data.get("name"), where),
        {key: from_json_quantity(value, f"{where}.requirements.{key}",
                                 finite=True, decimal_strings=True)
         for key, value in requirements.items()},
        data.get("immunities", ()), data.get("aversion_groups", ()))


def distributor_class(name: str) -> Type[Distributor]:
    """Return the distributor class of strategy ``name`` (any letter case).

    Raises:
        InvalidInputError: no strategy has that name; the message lists them.
    """
    for strategy, cls in Distributor._strategies.items():
        if isinstance(name, str) and strategy.lower() == name.lower():
            return cls
    raise InvalidInputError(
        f"strategy: unknown strategy {name!r} "
        f"(valid: {', '.join(Distributor._strategies)})")
