"""Distributors: the stateful owners of nodes and placements, and the three strategies.

A :class:`Distributor` validates every call before it changes anything, runs
the two aversion passes, keeps the books (remaining resources, who is where)
and offers the lifecycle of a cluster (release, add, cordon, drain, remove,
explain, snapshot). The strategies only decide the order in which nodes are
tried and the order in which one call's workloads are placed; whether a
workload fits is always decided by :func:`pylighthouse.fit.check_fit`.
"""
import collections.abc
import decimal
import functools
import operator
import threading
from collections import Counter, deque
from decimal import Decimal
from itertools import compress, islice
from operator import ge
from typing import (Any, Callable, ClassVar, Deque, Dict, FrozenSet, Iterable, KeysView,
                    List, Mapping, NoReturn, Optional, Sequence, Set, Tuple, Type, TypeVar,
                    Union, cast)

import attr

from .collector import paused
from .errors import (DuplicateNameError, InvalidInputError, InvalidTypeError,
                     ReentrantCallError, UnknownNameError, json_path, shown)
from .explain import Explanation, RefusalTally, shape_of
from .fit import CORDONED, MISSING, Reason, below_zero, reason_of
from .index import NodeIndex, NodeOrder, RubricOrder
from .model import Node, Workload, check_fields, check_flag, check_name
from .nowhere import nowhere_lines
from .quantities import (EXACT, ZERO, from_json_quantity, to_json_quantity, to_number,
                         use_context)
from .removed import Removed
from .rubric import Rubric

__all__ = ["Distributor", "PrioritizedDistributor", "RoundRobinDistributor",
           "BinPackDistributor", "NodeState"]

SNAPSHOT_FORMAT = 1

_NAME = operator.attrgetter("name")

WorkloadLike = Union[Workload, Mapping[str, Any]]
NodeLike = Union[Node, Mapping[str, Any]]


class _Slot:
    """A node inside a distributor: its capacity and what is on it now."""

    __slots__ = ("node", "name", "remaining", "workloads", "groups", "cordoned", "key", "below")

    def __init__(self, node: Node):
        self.node = node
        self.name = node.name
        self.remaining: Dict[str, Decimal] = dict(node.resources)
        #: Its resources with less than zero left (wards, shortcomings, and
        #: what immune workloads overdrew): the fit rule's search check reads
        #: these instead of every quantity of the node (see
        #: :func:`~pylighthouse.fit.takes`).
        self.below: Set[str] = below_zero(self.remaining)
        self.workloads: Dict[str, Workload] = {}
        self.groups: Counter[str] = Counter()
        self.cordoned = False
        self.key: Any = None  # its place in the node index's order


#: How many nodes a pass may have changed since a search for a workload
#: before :class:`_Pass` no longer lets an equal one resume after it.
RECHECK = 32
#: A pass counts, over this many searches that looked for an earlier
#: search they ask at least as much as (:meth:`_Pass.since`), those
#: that found one; when fewer than one in :data:`DOMINANCE_SHARE` did,
#: the next :data:`DOMINANCE_REST` searches do not look (twice as many
#: after each such count in a row).
DOMINANCE_TRIAL = 64
#: A look compares the quantities of at most this many searches, the
#: latest asking for no name the workload does not.
DOMINANCE_LOOK = 8
DOMINANCE_SHARE = 8
DOMINANCE_REST = 1024

#: What :class:`_Pass` keeps of a search: the requirements mapping, the
#: immunities, the order key it resumes at, how many nodes the pass had
#: changed before, and the node that sat at that key.
_Found = Tuple[Mapping[str, Decimal], FrozenSet[str], Any, int, _Slot]


class _Trial:
    """Whether looking for an earlier search that a workload asks at least
    as much as (see :class:`_Pass`) pays: over :data:`DOMINANCE_TRIAL`
    searches that looked, ``tried`` counts them and ``served`` those that
    found one; ``resting`` searches are still to pass without looking,
    ``rest`` is how many pass at the next rest (doubled at each rest in a
    row). One is kept per distributor, so that a run of small calls, each
    a pass of its own, rests too when looking seldom serves."""

    __slots__ = ("tried", "served", "resting", "rest")

    def __init__(self) -> None:
        self.tried = self.served = self.resting = 0
        self.rest = DOMINANCE_REST


class _Pass:
    """What one pass of placements (one order of one call) knows of its
    searches: the nodes it changed, in order, each with its order key
    before that change (``changed``), and per requirements mapping, where
    the last search for a workload asking it found the first node in order
    that it fits (``found``: the mapping, the immunities, that node's order
    key then, how many nodes the pass had changed before, and the node).

    Every node ordered before that key refused the workload; a node that
    only loses room keeps refusing, so for an equal workload later in the
    pass only the nodes changed since can have moved there and fit: the
    search resumes at the key (:meth:`.NodeIndex.first_fit_after`). Once
    a node gains room (a negative requirement may offset a ward), which
    the index counts (:attr:`.NodeIndex.grown`), the pass forgets every
    search.
    Equal requirements are found by identity: workloads read from the same
    numbers share one mapping (:func:`pylighthouse.quantities.to_quantities`).
    A workload with aversion groups resumes the same way: its node is the
    first where it fits, unless that one hosts one of its groups; then the
    first after it that fits and hosts none, if there is one.

    A workload asking at least as much as the workload of an earlier
    search resumes after that search too: it asks for every resource the
    other asked for, no less of each, nothing below zero, with the same
    immunities, so every node that refused the other refuses it. The
    searches of the last :data:`RECHECK` placements are kept for this
    (``recent``) and looked at latest first (the quantities of at most
    :data:`DOMINANCE_LOOK` of them); a pass stops looking for a
    while when they seldom serve (workloads placed largest first, each
    with its own quantities, are rarely larger than one before them).
    """

    __slots__ = ("changed", "found", "avoided", "first", "index", "grown", "recent",
                 "named", "trial")

    def __init__(self, index: NodeIndex, trial: Optional[_Trial] = None) -> None:
        self.index = index
        self.grown = index.grown  # (the index's count of gains when last forgotten)
        self.changed: List[Tuple[_Slot, Any]] = []
        self.found: Dict[Any, _Found] = {}
        #: As ``found``, per requirements mapping and aversion groups, for
        #: the node a workload took past the first where it fits, which
        #: hosted one of its groups: every node before it refused the
        #: workload or hosted one of its groups (and still does).
        self.avoided: Dict[Any, _Found] = {}
        #: The first node in order where the last workload searched for fits
        #: (set by the search; the node it goes to, unless it avoided that
        #: one for an aversion group).
        self.first: Optional[_Slot] = None
        #: What ``found`` keeps of the searches of the last :data:`RECHECK`
        #: placements (no older one may be resumed after), oldest first,
        #: but while resting (see below), and the names each asked for.
        self.recent: Deque[_Found] = deque(maxlen=RECHECK)
        self.named: Deque[KeysView[str]] = deque(maxlen=RECHECK)
        #: Whether looking in ``recent`` pays (the distributor's, kept
        #: from one call to the next, or this pass's own).
        self.trial = trial if trial is not None else _Trial()

    def since(self, workload: Workload, avoiding: bool = False,
              ) -> Optional[Tuple[List[Tuple[_Slot, Any]], Any, _Slot, bool]]:
        """The nodes changed since the last search for a workload fitting
        exactly as ``workload`` does, the key it resumes at, the node
        that search found there, and ``False``; else, but for ``avoiding``,
        the same of the latest search in ``recent`` for a workload that
        ``workload`` asks at least as much as (see the class docstring),
        and ``True``; ``None`` when there is no such search, or too many
        nodes changed since. ``avoiding``: the search for a node past the
        first where it fits, avoiding its groups. O(1) for an equal
        workload's; else O(S x R) in C for S searches looked at, of R
        requirements."""
        if self.index.grown != self.grown:  # a node gained room: forget
            self.found.clear()
            self.avoided.clear()
            self.recent.clear()
            self.named.clear()
            self.grown = self.index.grown
            return None
        requirements = workload.requirements
        known = self.avoided.get((id(requirements), workload.aversion_groups)) if avoiding \
            else self.found.get(id(requirements))
        if known is not None:
            same, immunities, key, count, node = known
            if same is requirements and immunities == workload.immunities \
                    and len(self.changed) - count <= RECHECK:
                return self.changed[count:], key, node, False
        if avoiding:
            return None
        trial = self.trial
        if trial.resting:
            trial.resting -= 1
            return None
        if not requirements or min(requirements.values()) < ZERO:
            return None  # (a negative requirement may take a node's shortfall away)
        of = requirements.__getitem__
        immunities = workload.immunities
        found = None
        # (the searches asking for no name the workload does not, latest
        # first, picked in C; then their quantities, compared in C)
        for same, others, key, count, node in islice(compress(
                reversed(self.recent), map(requirements.keys().__ge__, reversed(self.named))),
                DOMINANCE_LOOK):
            if others == immunities and all(map(ge, map(of, same), same.values())):
                found = self.changed[count:], key, node, True
                trial.served += 1
                break
        trial.tried += 1
        if trial.tried == DOMINANCE_TRIAL:
            if trial.served * DOMINANCE_SHARE < trial.tried:
                # (rest, keeping no searches: those kept when the rest
                # ends are the latest again, see :meth:`took`)
                trial.resting = trial.rest
                trial.rest *= 2
                self.recent.clear()
                self.named.clear()
            else:
                trial.rest = DOMINANCE_REST
            trial.tried = trial.served = 0
        return found

    def took(self, workload: Workload, slot: _Slot) -> None:
        """``workload`` is about to go to ``slot``; :attr:`first` is the
        first node in order where it fits."""
        first = self.first
        assert first is not None
        requirements = workload.requirements
        count = len(self.changed)
        self.found[id(requirements)] = known = (requirements, workload.immunities, first.key,
                                                count, first)
        if slot is not first:
            self.avoided[id(requirements), workload.aversion_groups] = (
                requirements, workload.immunities, slot.key, count, slot)
        if self.trial.resting < RECHECK:
            # (kept from the end of a rest on: each of the last placements
            # then, which the deques hold, is kept)
            self.recent.append(known)
            self.named.append(requirements.keys())
        self.changed.append((slot, slot.key))


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


_Method = TypeVar("_Method", bound=Callable[..., Any])
#: A distributor class's own type, for the constructors that return one
#: (``RoundRobinDistributor.from_list(...)`` is typed as a RoundRobin one).
_Self = TypeVar("_Self", bound="Distributor")
_BinPack = TypeVar("_BinPack", bound="BinPackDistributor")
_current, _use = decimal.getcontext, use_context


def _reading(method: _Method) -> _Method:
    """Run ``method`` under the distributor's lock, in the exact decimal
    context; refused while a call that changes the distributor is under
    way in this thread (see :func:`_refuse_reentry`)."""
    @functools.wraps(method)
    def locked(self: "Distributor", *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            if self._journal is not None:
                _refuse_reentry(method.__name__, "changes")
            self._reading += 1
            try:
                caller = _current()
                if caller is EXACT:
                    return method(self, *args, **kwargs)
                try:
                    # (inside: the caller's context comes back even when
                    # a KeyboardInterrupt lands as it is switched)
                    _use(EXACT)
                    return method(self, *args, **kwargs)
                finally:
                    _use(caller)
            finally:
                self._reading -= 1
    return cast(_Method, locked)


def _lazy(argument: Any) -> bool:
    """Whether a changing call reads ``argument`` into a list before it
    starts: an iterable that is not a list, tuple, string or mapping (a
    generator, or an object whose ``__iter__`` reads the distributor)."""
    return type(argument) not in _PLAIN and isinstance(argument, collections.abc.Iterable) \
        and not isinstance(argument, _WHOLE)


#: Arguments taken as they are (the common ones, by type: no lookup).
_PLAIN = frozenset([list, tuple, str, dict, bool, int, type(None)])
#: Iterables that are not a sequence of items to read first.
_WHOLE = (str, bytes, bytearray, collections.abc.Mapping)


def _refuse_reentry(name: str, doing: str) -> NoReturn:
    """Raise :class:`ReentrantCallError` for a call of ``name`` made while
    another call of the same thread ``doing`` (reads or changes) the
    distributor. Other threads wait for the lock instead, so a call met
    here came from inside that call: from code of the caller's that it ran
    (a ``__hash__`` or ``__eq__`` of a name given as a subclass of
    :class:`str`, say). Its state is half changed, or half read, at that
    moment."""
    raise ReentrantCallError(
        f"{name}: called from inside another call that {doing} the same distributor "
        f"(from the caller's own code that call runs, such as a name's __hash__); "
        f"a distributor takes one call at a time")


def _changing(method: _Method) -> _Method:
    """:func:`_reading`, and undo everything ``method`` changed if it raises.

    Whatever is raised inside (bad input found late, an internal error, a
    KeyboardInterrupt), the distributor is put back exactly as it was, then
    the exception goes on. The call's garbage is collected once its work
    is done and kept (see :mod:`.collector`): a KeyboardInterrupt arriving
    then, like one arriving as the call returns, finds the work done. A
    call made from inside another one (by the caller's code that it runs)
    is refused, see :func:`_refuse_reentry`.
    """
    @functools.wraps(method)
    def guarded(self: "Distributor", *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            if self._journal is not None or self._reading:
                _refuse_reentry(method.__name__,
                                "changes" if self._journal is not None else "reads")
            # (arguments given as iterators, such as generator expressions,
            # are read now, before anything changes: they may read the
            # distributor, as they always could)
            for arg in args:
                if _lazy(arg):
                    args = tuple(list(arg) if _lazy(arg) else arg for arg in args)
                    break
            if kwargs:
                kwargs = {key: list(arg) if _lazy(arg) else arg for key, arg in kwargs.items()}
            caller = _current()
            try:
                _use(EXACT)
                with paused():
                    # (inside: the caller's context comes back even when
                    # making the journal fails, as a KeyboardInterrupt may
                    # make it)
                    journal = self._journal = _Journal(self)
                    try:
                        return method(self, *args, **kwargs)
                    except _Undone:
                        # (a trial, undone on purpose: the index is sound)
                        self._journal = None
                        try:
                            self._undo_call(journal)
                        except BaseException:
                            self._roll_back(journal)
                            raise
                        raise
                    except BaseException:
                        self._journal = None
                        self._roll_back(journal)
                        raise
                    finally:
                        self._journal = None
            finally:
                self._journal = None
                _use(caller)
    return cast(_Method, guarded)


class _Undone(Exception):
    """Raised inside a changing call to have it undone (see
    :meth:`Distributor._undo_call`), with what the call found out: where
    its workloads went (or would have gone), and why it was undone."""

    def __init__(self, found: Dict[str, Optional[str]], why: str):
        super().__init__(why)
        self.found = found
        self.why = why


_Saved = Tuple[Dict[str, Decimal], Dict[str, Workload], Dict[str, int], bool]


def _put_back(slot: _Slot, saved: _Saved) -> None:
    """Put back the room, workloads and groups a journal kept of ``slot``
    (its cordon is the caller's to put back)."""
    remaining, workloads, groups, _ = saved
    slot.remaining = remaining
    slot.below = below_zero(remaining)
    slot.workloads = workloads
    slot.groups = Counter(groups)


class _Journal:
    """What one call changed, kept so that it can be undone.

    Each node touched is copied the first time it is touched (O(R +
    workloads on it)); the placement table and the node table are copied
    only when an entry that predates the call leaves them (remove_nodes,
    release_loads: O(W) or O(N)). Names placed or nodes joined during the
    call are listed, which is enough to undo their arrival; a workload a
    drain moved keeps its entry in the placement table, its node listed.
    """

    __slots__ = ("slots", "added", "where", "joined", "order", "memento", "moved")

    def __init__(self, distributor: "Distributor"):
        #: Per node touched: its room, workloads, groups and cordon before.
        self.slots: Dict[_Slot, _Saved] = {}
        self.added: Dict[str, None] = {}
        self.where: Optional[Dict[str, _Slot]] = None
        self.joined: Dict[str, None] = {}
        self.order: Optional[Dict[str, _Slot]] = None
        self.memento = distributor._memento()
        #: Per workload a drain moved, the node it was on before the call.
        self.moved: Dict[str, _Slot] = {}

    def touch(self, slot: _Slot) -> None:
        """Keep ``slot``'s state as it was before this call changed it."""
        if slot not in self.slots:
            # (the groups as a plain dict: copied in C; made a Counter again
            # only if the call is rolled back)
            self.slots[slot] = (dict(slot.remaining), dict(slot.workloads),
                                dict(slot.groups), slot.cordoned)

    def leaving(self, table: Dict[str, _Slot], fresh: Dict[str, None]) -> Dict[str, _Slot]:
        """A copy of ``table`` without the entries that arrived during this
        call. O(len(table)), in C when none arrived (mostly)."""
        if not fresh:
            return dict(table)
        return {name: slot for name, slot in table.items() if name not in fresh}


class Distributor:
    """Owns nodes and placements; places workloads in its strategy's order.

    Use one of the strategies: :class:`PrioritizedDistributor`,
    :class:`RoundRobinDistributor`, :class:`BinPackDistributor` or
    :class:`~pylighthouse.bestfit.BestFitDistributor`. A
    distributor is stateful: every call sees what earlier calls placed. Every
    method validates its input before changing anything, and undoes what it
    changed if anything is raised later (an internal error included), so a
    call that raises leaves the distributor exactly as it was.

    A distributor may be shared between threads: every public method runs
    under the distributor's own lock (a ``threading.RLock``), one call
    at a time, in the library's own decimal context whatever the caller's
    is. Copies (``copy.copy``, ``copy.deepcopy``, ``pickle``) are
    independent and make the same decisions as the original; they are
    rebuilt from the :meth:`to_dict` snapshot, O(N x R + W x R).
    """

    #: The strategy's name, as used in snapshots and JSON problems. A
    #: subclass that sets it is registered under that name; one that only
    #: inherits it is not (it would take the name from its parent).
    strategy: ClassVar[str] = ""
    #: Whether node choice uses the node index, ``pylighthouse.index`` (``False``
    #: keeps the plain scan, the readable statement of each strategy, which
    #: the tests compare with the index).
    _indexed: ClassVar[bool] = True
    #: Whether one call places its workloads the same whatever order they
    #: are given in (BinPack sorts them itself; the planner relies on this).
    _sorts_each_call: ClassVar[bool] = False
    #: Nodes per block of the index, ``None`` for the index's own choice
    #: (tests make it small to exercise splits).
    _index_load: ClassVar[Optional[int]] = None
    #: Whether to log the names of the nodes that change (their room, their
    #: workloads, their cordon; joining, leaving) in ``_changed_nodes``,
    #: for a strategy that keeps sums over its nodes and brings them up to
    #: date when it reads them (BestFit).
    _logs_changes: ClassVar[bool] = False
    #: Whether a search may resume an earlier one of the same pass
    #: (:class:`_Pass`): worth it where nodes move in the order as they
    #: fill (BinPack, BestFit), which resets what the index remembers of
    #: refusals; only for strategies whose searches start at the first node.
    _resumable: ClassVar[bool] = False
    _strategies: ClassVar[Dict[str, Type["Distributor"]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("strategy"):
            Distributor._strategies[cls.strategy] = cls

    def __init__(self, nodes: Iterable[NodeLike] = ()):
        if type(self) is Distributor:
            raise InvalidTypeError(
                "Distributor is the base class: use PrioritizedDistributor, "
                "RoundRobinDistributor, BinPackDistributor or BestFitDistributor")
        self._lock = threading.RLock()
        self._journal: Optional[_Journal] = None
        self._reading = 0  # (reading calls under way in the thread holding the lock)
        self._slots: Dict[str, _Slot] = {}
        self._where: Dict[str, _Slot] = {}
        self._group_nodes: Dict[str, Counter[str]] = {}
        self._index: Optional[NodeIndex] = \
            NodeIndex(self._index_order(), self._index_load) if self._indexed else None
        self._changed_nodes: Optional[Dict[str, None]] = {} if self._logs_changes else None
        self._dominance = _Trial()  # (see _Pass: kept from one call to the next)
        with paused():
            self._join(self._accept_nodes(nodes))

    @classmethod
    def from_list(cls: Type[_Self], nodes: Iterable[NodeLike]) -> _Self:
        """Return a distributor of the class it is called on over ``nodes``
        (Node objects or dicts), in order.

        Cost: O(N x R log N), amortised.
        """
        return cls(nodes)

    # ----------------------------------------------------------------- reading

    @property
    @_reading
    def nodes(self) -> List[Node]:
        """The nodes, with their capacities, in the order they were given. O(N)."""
        return [slot.node for slot in self._slots.values()]

    @property
    @_reading
    def assignments(self) -> Dict[str, str]:
        """A new dict of every placed workload's name to its node's name. O(W)."""
        return {name: slot.name for name, slot in self._where.items()}

    @_reading
    def node_state(self, name: str) -> NodeState:
        """Return the :class:`NodeState` of node ``name``.

        Raises:
            InvalidTypeError: ``name`` is not a string (nor a :class:`Node`).
            UnknownNameError: no node has that name.

        Cost: O(R + workloads on the node).
        """
        slot = self._slot(name, "node_state")
        return NodeState(slot.name, _plain(slot.node.resources),
                         _plain(slot.remaining), tuple(slot.workloads),
                         slot.cordoned)

    @_reading
    def node_states(self) -> List[NodeState]:
        """Return the :class:`NodeState` of every node, in the order given.

        Cost: O(N x R + placed workloads).
        """
        return [self.node_state(name) for name in self._slots]

    @_reading
    def workload(self, name: str) -> Workload:
        """Return the placed workload called ``name``.

        Raises:
            InvalidTypeError: ``name`` is not a string.
            UnknownNameError: no placed workload has that name.

        Cost: O(1).
        """
        return self._placed_slot(name, "workload").workloads[name]

    # --------------------------------------------------------------- placing

    @_changing
    def attempt_assign_loads(self, workloads: Iterable[WorkloadLike],
                             all_or_nothing: bool = False) -> Dict[str, Optional[str]]:
        """Place ``workloads`` (Workload objects or dicts) onto the nodes.

        Returns a dict of every workload name, in the order given, to the name
        of the node it now runs on, or ``None`` when it fits nowhere. With
        ``all_or_nothing``, either every workload is placed or none is (the
        distributor is then exactly as before and every value is ``None``).

        Raises:
            InvalidInputError, InvalidTypeError: a workload is malformed, or
                ``all_or_nothing`` is not True or False (or 1, 0, None: a
                string such as ``"false"`` would have read as true).
            DuplicateNameError: a name repeats within the call or is already
                placed. Nothing is placed when anything is raised.

        Cost: O(W x R) to validate W workloads (R resources each; BinPack
        adds O(W log W) to sort them), then per workload the node index's
        search: about O(N / 64) comparisons made in C for N nodes, plus
        the nodes of each block of about 64 (40 for BinPack and BestFit,
        whose nodes move in their order) whose bounds pass while none
        of them fits (a few blocks on realistic clusters, all of them at
        worst), and O(R log N) to book the placement. See
        :doc:`/performance`.
        """
        return self._assign(self._accept_workloads(workloads), check_flag(
            all_or_nothing, "all_or_nothing"))

    @_changing
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
        # Each name leaves the placement table at the end, so that the
        # table's order needs no copy for an undo.
        released = {name: self._unplace(name, keep_entry=True).name for name in wanted}
        for name in wanted:
            del self._where[name]
        return released

    @_changing
    def add_nodes(self, nodes: Iterable[NodeLike]) -> None:
        """New nodes join: at the end of the order (BinPack: by their score).

        Raises:
            DuplicateNameError: a name is taken or repeats (nothing joins).
            InvalidInputError, InvalidTypeError: a node is malformed.

        Cost: O(M x R log N) for M nodes, amortised.
        """
        self._join(self._accept_nodes(nodes))

    @_changing
    def record_running(self, node: str, workloads: Iterable[WorkloadLike]) -> None:
        """Record ``workloads`` as already running on node ``node``, with no fit check.

        For workloads placed before this distributor knew of them (a JSON
        problem's node ``workloads``, a cluster's inventory): they use the
        node's resources, even beyond its capacity, and count for aversion.
        The strategy's own state (RoundRobin's cursor) does not move.
        Nothing is recorded when anything is raised.

        Raises:
            InvalidTypeError: ``node`` is not a string (nor a :class:`Node`).
            UnknownNameError: no node has that name.
            DuplicateNameError: a workload name repeats or is already placed.
            InvalidInputError, InvalidTypeError: a workload is malformed, or
                requires a resource the node does not have.

        Cost: O(K x R) for K workloads.
        """
        slot = self._slot(node, "record_running")
        loads = self._accept_workloads(workloads)
        for load in loads:
            # Over capacity is allowed here; a resource the node lacks is not.
            reason = reason_of(slot.remaining, load)
            if reason is not None and reason.kind == MISSING:
                raise InvalidInputError(
                    f"workload {shown(load.name)}: requires {shown(reason.resource)}, "
                    f"which node {shown(slot.name)} does not have")
        for load in loads:
            self._put(load, slot)

    @_changing
    def cordon(self, name: str) -> None:
        """Node ``name`` takes no new workloads; those on it stay.

        Raises:
            InvalidTypeError: ``name`` is not a string (nor a :class:`Node`).
            UnknownNameError: no node has that name.

        Cost: O(log N).
        """
        self._cordon(self._slot(name, "cordon"), True)

    @_changing
    def uncordon(self, name: str) -> None:
        """Node ``name`` takes new workloads again.

        Raises:
            InvalidTypeError: ``name`` is not a string (nor a :class:`Node`).
            UnknownNameError: no node has that name.

        Cost: O(log N).
        """
        self._cordon(self._slot(name, "uncordon"), False)

    @_changing
    def drain(self, name: str) -> Dict[str, Optional[str]]:
        """Cordon node ``name`` and move each of its workloads elsewhere.

        Workloads are moved in the strategy's order (BinPack: biggest first)
        to the node the strategy chooses. Returns ``{workload: new node, or
        None when it could not move}``; a workload that cannot move stays.

        Raises:
            InvalidTypeError: ``name`` is not a string (nor a :class:`Node`).
            UnknownNameError: no node has that name.

        Cost: that of placing the node's workloads, plus a copy of the
        placement table kept to undo the call should it fail (O(W) in C).
        """
        moves = self._drain(self._slot(name, "drain"))
        journal = self._journal
        if journal is not None and journal.where is None:
            # (to put the table back exactly should the call be stopped
            # while the moved workloads go to its end)
            journal.where = dict(self._where)
        self._moved_last(moves)
        return moves

    def _drain(self, slot: _Slot) -> Dict[str, Optional[str]]:
        """:meth:`drain`'s work, on a node found; the workloads it moves
        keep their entries in the placement table where they are (see
        :meth:`_moved_last`), so that undoing it needs no copy of the table."""
        self._cordon(slot, True)
        moves: Dict[str, Optional[str]] = {}
        journal = self._journal
        for workload in self._sequence(list(slot.workloads.values())):
            target = self._choose(workload)
            if target is not None:
                if journal is not None:
                    journal.moved.setdefault(workload.name, slot)
                self._unplace(workload.name, keep_entry=True)
                self._place(workload, target)
            moves[workload.name] = None if target is None else target.name
        return moves

    def _moved_last(self, moves: Mapping[str, Optional[str]]) -> None:
        """A drain that made ``moves`` is kept: the workloads it moved go to
        the end of the placement table, in the order they moved, as taking
        each off its node and placing it again puts it (snapshots list the
        placements in that order). O(1) a workload moved."""
        where = self._where
        for name, target in moves.items():
            if target is not None:
                where[name] = where.pop(name)

    def _drain_or_undo(self, name: str, known: Optional[Dict[Any, RefusalTally]] = None,
                       ) -> Tuple[Dict[str, Optional[str]], Optional[str]]:
        """:meth:`drain` when every workload of node ``name`` moves: its
        moves, and ``None``. Else the moves it found, and the first workload
        that could not move, with why (as the drain left the cluster) unless
        ``known`` is ``None``; the drain is then undone (the planner's
        trial, see :func:`~pylighthouse.plan_scale_down`). ``known``: the
        reasons nodes refused workloads for, counted by their
        :func:`shape_of`, in the cluster as it is (filled as they are read;
        the caller clears it when a node changes).

        Cost: :meth:`drain`'s but for its copy of the placement table,
        plus, for the reason, one check of the fit
        rule per node the drain changed and per node not read since
        ``known`` was cleared for that shape, and O(C x (G + log N) + G log
        G) to count them, for C nodes the drain changed and G kinds of
        reason (see :class:`~pylighthouse.explain.RefusalTally`); undoing
        it, O(R log N) per node it changed, instead of building the
        distributor again."""
        try:
            return self._drain_trial(name, known), None
        except _Undone as undone:
            return undone.found, undone.why

    def _placed_on_trial(self, nodes: List[Node],
                         loads: Iterable[WorkloadLike]) -> Dict[str, Optional[str]]:
        """What ``attempt_assign_loads(loads)`` would return once ``nodes``
        (new names) joined, the distributor left as it was: the placement is
        undone and the nodes leave again (the planner's trial, see
        :func:`~pylighthouse.plan_scale_up`). Cost: the placement's, plus
        O(R log N) per node it changed, to undo, instead of a copy of the
        distributor per trial."""
        try:
            self._placing_on_trial(nodes, loads)
        except _Undone as undone:
            return undone.found
        raise AssertionError("a trial is always undone")  # pragma: no cover

    @_changing
    def _placing_on_trial(self, nodes: List[Node], loads: Iterable[WorkloadLike]) -> None:
        accepted = self._accept_workloads(loads)
        self._join(nodes)
        raise _Undone(self._assign(accepted, False), "a trial")

    @_changing
    def _drain_trial(self, name: str, known: Optional[Dict[Any, RefusalTally]],
                     ) -> Dict[str, Optional[str]]:
        slot = self._slots[name]
        moves = self._drain(slot)
        for load, target in moves.items():
            if target is None:
                raise _Undone(moves, load if known is None else
                              f"{load} cannot move: {self._stuck(slot.workloads[load], known)}")
        # (no copy of the table, as drain keeps: this is the planner's own
        # copy of the distributor, dropped if the planning is stopped)
        self._moved_last(moves)
        return moves

    def _stuck(self, load: Workload, known: Dict[Any, RefusalTally]) -> str:
        """The line of :meth:`explain` of ``load``, which fits no node, in a
        drain. The reasons of the nodes the drain did not change are counted
        in ``known``, per :func:`shape_of` (see :meth:`_drain_or_undo`), as
        they are first read: the line then reads only the nodes the drain
        changed (:class:`~pylighthouse.explain.RefusalTally`), each at its
        order key, the strategy's order where the index orders nodes by
        their room, else the order given, from RoundRobin's cursor on."""
        assert self._journal is not None  # (inside the drain, see _drain_trial)
        index = self._index
        if index is None:  # pragma: no cover - drains run with the index
            return str(self._explained([load])[load.name])
        changed = self._journal.slots
        shape = shape_of(load)
        tally = known.get(shape)
        if tally is None:
            tally = known[shape] = RefusalTally(self._slots)
        given = []
        unread = [self._slots[name] for name in tally.unread]
        for slot in [*changed, *(slot for slot in unread if slot not in changed)]:
            reason = _CORDONED if slot.cordoned else reason_of(slot.remaining, load)
            if reason is None:  # (it fits here after all: no shortcut)
                return str(self._explained([load])[load.name])
            if slot in changed:
                given.append((reason, slot.key))
            else:
                tally.add(slot.name, reason, slot.key)
        start = self._start()
        return tally.line(len(self._slots), given,
                          [slot.name for slot in changed if slot.name in tally],
                          index.key_at(start) if start else None)

    @_changing
    def remove_nodes(self, names: Iterable[str]) -> Dict[str, Optional[str]]:
        """The named nodes leave now; their workloads are placed elsewhere.

        Returns ``{workload: new node or None}``; ``None`` means the workload
        is no longer placed anywhere, so the caller can act on it.

        Raises:
            UnknownNameError: a name is not a node (nothing is removed).
            DuplicateNameError: a name is given twice.

        Cost: O(R log N) per node removed and per workload released, plus
        placing the displaced workloads, plus a copy of the node table and
        of the placement table, kept to undo the call should it fail (O(N +
        W) in C, about 0.1 ms per 10,000 entries: removing nodes one call
        at a time costs that each time).
        """
        leaving = self._accept_node_names(names)
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

    @_reading
    def explain(self, workload: WorkloadLike) -> Explanation:
        """Say why ``workload`` does, or would not, fit right now; change nothing.

        The :class:`~pylighthouse.explain.Explanation` lists the nodes where
        it fits (those sharing an aversion group with it apart), the reason
        for every other node, and the node the strategy would choose.

        Cost: O(N x R), plus O(N log N) for BinPack's order.
        """
        load = workload if isinstance(workload, Workload) \
            else Workload.from_dict(workload)
        return self.explain_all([load])[load.name]

    @_reading
    def explain_all(self, workloads: Iterable[WorkloadLike]) -> Dict[str, Explanation]:
        """Return :meth:`explain`'s answer for each of ``workloads``, by name
        (in the order given; a name given twice keeps its last workload).

        Workloads with the same requirements (in the same order) and the same
        immunities get their reasons from one pass over the nodes, and share
        the ``reasons`` mapping (treat it as read-only) and its summary; the
        aversion groups only split the fitting nodes. Change nothing.

        Raises:
            InvalidTypeError, InvalidInputError: a workload is not valid.

        Cost: O(N x R) once, then per distinct (requirements, immunities)
        O(N) and one fit check per distinct state of the nodes (nodes with
        the same remaining quantities, written alike, share one); plus O(F)
        per workload for the F nodes where it fits; O(N log N) once for
        BinPack's order.
        """
        return self._explained(Workload.from_list(workloads))

    def _explained(self, loads: List[Workload]) -> Dict[str, Explanation]:
        """:meth:`explain_all`'s work, on workloads read (and from inside a
        call that changes the distributor: see :meth:`_drain_or_undo`)."""
        explained: Dict[str, Explanation] = {}
        refusals: Dict[Any, Tuple[Dict[str, Reason], List[str], Explanation]] = {}
        with decimal.localcontext(EXACT):
            order = [(slot.name, slot.remaining, slot.cordoned) for slot in self._order()]
            shapes = [shape_of(load) for load in loads]
            # Nodes left in the same state (as full nodes of one machine type
            # often are) get the same reason: one fit check a state, when
            # there is more than one shape to explain.
            states: Sequence[int] = (_states(order) if len(set(shapes)) > 1
                                     else range(len(order)))
            for load, shape in zip(loads, shapes):
                known = refusals.get(shape)
                if known is None:
                    reasons: Dict[str, Reason] = {}
                    fitting: List[str] = []
                    seen: List[Any] = [_UNSEEN] * len(order)
                    for (name, remaining, cordoned), state in zip(order, states):
                        reason = seen[state]
                        if reason is _UNSEEN:
                            reason = seen[state] = (_CORDONED if cordoned
                                                    else reason_of(remaining, load))
                        if reason is None:
                            fitting.append(name)
                        else:
                            reasons[name] = reason
                else:
                    reasons, fitting, first = known
                averse = self._averse(load) if fitting else ()
                fits = tuple(name for name in fitting if name not in averse)
                averse_fits = tuple(name for name in fitting if name in averse)
                # The two aversion passes in the strategy's order, read off the scan.
                choice = (fits or averse_fits or (None,))[0]
                explanation = Explanation(workload=load.name, total=len(self._slots),
                                          fits=fits, averse=averse_fits, reasons=reasons,
                                          choice=choice)
                if known is None:
                    refusals[shape] = (reasons, fitting, explanation)
                else:
                    explanation._share_summary(first)
                explained[load.name] = explanation
        return explained

    @_reading
    def _nowhere_lines(self, loads: Sequence[Workload]) -> List[Optional[str]]:
        """Per workload, the line of its explanation when it fits no node,
        else ``None`` (see :func:`pylighthouse.nowhere.nowhere_lines`)."""
        with decimal.localcontext(EXACT):
            return nowhere_lines([(slot.name, slot.remaining, slot.cordoned)
                                  for slot in self._order()], loads)

    @_reading
    def utilization(self) -> Dict[str, Dict[str, Any]]:
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
                figures: Dict[str, Dict[str, Any]] = {}
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

    @_reading
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
            {"node": slot.name, "workload": workload_json(slot.workloads[name])}
            for name, slot in self._where.items()]
        return snapshot

    @classmethod
    @paused()
    def from_dict(cls: Type[_Self], snapshot: Mapping[str, Any]) -> _Self:
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
        found = snapshot.get("format")
        if type(found) is not int or found != SNAPSHOT_FORMAT:
            raise InvalidInputError(
                f"snapshot: format: expected {SNAPSHOT_FORMAT}, got {shown(found)}")
        strategy = snapshot.get("strategy")
        target = Distributor._strategies.get(strategy) if isinstance(strategy, str) else None
        if target is None:
            raise InvalidInputError(
                f"snapshot: strategy: unknown strategy {shown(strategy)} "
                f"(valid: {', '.join(Distributor._strategies)})")
        if cls is not Distributor and not issubclass(cls, target):
            raise InvalidInputError(
                f"snapshot: strategy: holds a {strategy} distributor, "
                f"not a {cls.strategy} one")
        check_fields(snapshot, _SNAPSHOT_FIELDS, "snapshot", "snapshot")
        nodes = []
        for index, item in enumerate(_field(snapshot, "nodes", list, "snapshot")):
            where = f"snapshot: nodes[{index}]"
            resources = _field(item, "resources", Mapping, where)
            check_fields(item, _NODE_FIELDS, where, "node")
            nodes.append(Node(check_name(item.get("name"), where), {
                key: from_json_quantity(value, json_path(f"{where}.resources", key),
                                        decimal_strings=True)
                for key, value in resources.items()}))
        # (a subclass of the snapshot's strategy, asked for, is made)
        distributor = (target if cls is Distributor else cls)._restore(snapshot, nodes)
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
                check_fields(item, _PLACEMENT_FIELDS, where, "placement")
                if node_name not in distributor._slots:
                    raise InvalidInputError(f"{where}.node: no node named {shown(node_name)}")
                workload = workload_from_json(_field(item, "workload", Mapping, where),
                                              f"{where}.workload")
                if workload.name in distributor._where:
                    raise DuplicateNameError(
                        f"{where}.workload: workload {shown(workload.name)} is placed twice")
                slot = distributor._slots[node_name]
                for key in workload.requirements:
                    if key not in slot.remaining:
                        raise InvalidInputError(
                            f"{where}.workload: workload {shown(workload.name)} requires "
                            f"{shown(key)}, which node {shown(node_name)} does not have")
                distributor._put(workload, slot)
        return cast(_Self, distributor)  # (the class asked for, or the snapshot's)

    # ------------------------------------------------------------- copies

    @paused()
    def _replica(self) -> "Distributor":
        """A copy, as :meth:`from_dict` makes it from :meth:`to_dict` (of the
        snapshot's strategy class, its nodes joining in order, cordoned as
        they are, then the workloads placed in the order they were), but
        from the nodes and workloads themselves (they are frozen), not read
        again. For a distributor made by :meth:`from_dict`, whose quantities
        are written as a snapshot writes them, the copy is the same to the
        last digit written; the planners copy such a one. Cost:
        O((N + W) x R log N), without reading or checking any input."""
        settings: Dict[str, Any] = {"strategy": self.strategy}
        settings.update(self._settings())
        copy = Distributor._strategies[self.strategy]._restore(
            settings, [slot.node for slot in self._slots.values()])
        slots = copy._slots
        for slot in self._slots.values():
            copy._cordon(slots[slot.name], slot.cordoned)
        with decimal.localcontext(EXACT):
            for name, slot in self._where.items():
                copy._put(slot.workloads[name], slots[slot.name])
        return copy

    def __reduce__(self) -> Tuple[Any, Tuple[Any, ...]]:
        # Rebuilt from the snapshot: the lock and the node index are made
        # anew, whatever the index keeps inside.
        return (_from_snapshot, (type(self), self.to_dict()))

    def __copy__(self: _Self) -> _Self:
        return cast(_Self, _from_snapshot(type(self), self.to_dict()))

    def __deepcopy__(self: _Self, memo: Dict[int, Any]) -> _Self:
        return cast(_Self, _from_snapshot(type(self), self.to_dict()))

    # ------------------------------------------------------ strategy hooks

    def _order(self) -> Sequence[_Slot]:
        """The nodes in the order this strategy tries them now."""
        return list(self._slots.values())

    def _sequence(self, workloads: List[Workload]) -> List[Workload]:
        """The order in which one call's workloads are placed."""
        return workloads

    def _index_order(self) -> Optional[NodeOrder]:
        """How the index orders nodes by their remaining room (re-keyed after
        every change); ``None`` keeps them in the order they joined."""
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

    def _rolled_back(self) -> None:
        """Called when a failed call was undone (the nodes, their order and
        the placements are as they were; the index is made again next): the
        strategy forgets what it derived from the undone changes."""

    @classmethod
    def _restore(cls, snapshot: Mapping[str, Any], nodes: List[Node]) -> "Distributor":
        return cls(nodes)

    # ------------------------------------------------------------- pipeline

    def _assign(self, loads: List[Workload], all_or_nothing: bool) -> Dict[str, Optional[str]]:
        result: Dict[str, Optional[str]] = {load.name: None for load in loads}
        memento = self._memento()
        placed: List[str] = []
        run = _Pass(self._index, self._dominance) \
            if self._resumable and self._index is not None else None
        for load in self._sequence(loads):
            slot = self._choose(load, run)
            if slot is None:
                if all_or_nothing:
                    for name in reversed(placed):
                        self._unplace(name)
                    self._recall(memento)
                    return {load.name: None for load in loads}
                continue
            if run is not None:
                run.took(load, slot)
            self._place(load, slot)
            placed.append(load.name)
            result[load.name] = slot.name
        return result

    def _choose(self, workload: Workload, run: Optional[_Pass] = None) -> Optional[_Slot]:
        """The node the strategy picks for ``workload``: first the nodes that
        share no aversion group with it, then, if none fits, all of them.
        ``run``: the pass this search belongs to, when the strategy is
        :attr:`_resumable` and the caller records its placements there
        (:meth:`_Pass.took`); it may then resume an earlier search (same
        answer, less searching)."""
        if self._index is not None:
            if run is not None:
                return self._choose_in_pass(workload, run)
            return self._indexed_choice(workload)
        order = self._order()
        averse = self._averse(workload)
        if averse:
            slot = self._first_fit(workload, order, averse)
            if slot is not None:
                return slot
        return self._first_fit(workload, order, ())

    def _choose_in_pass(self, workload: Workload, run: _Pass) -> Optional[_Slot]:
        """:meth:`_choose` for a strategy that searches from the first node
        (no wrapping around), within ``run``: the first node where the
        workload fits (resuming an earlier search when ``run`` allows), and,
        if that one hosts a workload of one of its aversion groups, the
        first after it that fits and hosts none, if any (every node before
        the first refuses, so this is the node the avoiding pass finds)."""
        index = self._index
        assert index is not None
        resume = run.since(workload)
        first: Optional[_Slot] = index.first_fit(workload) if resume is None \
            else index.first_fit_after(workload, resume[0], resume[1], at=resume[2],
                                       unproven=resume[3])
        run.first = first
        groups = workload.aversion_groups
        if first is not None and groups and not first.groups.keys().isdisjoint(groups):
            # (from where an equal workload of the same groups went, when it
            # also avoided the first node it fitted: replicas spread one by one)
            resume = run.since(workload, avoiding=True)
            avoiding: Optional[_Slot] = index.first_fit_from(workload, first.key, groups) \
                if resume is None \
                else index.first_fit_after(workload, resume[0], resume[1], groups, resume[2])
            if avoiding is not None:
                return avoiding
        return first

    def _indexed_choice(self, workload: Workload) -> Optional[_Slot]:
        """:meth:`_choose` through the node index: the same two passes, in the
        same order, with nodes that cannot fit skipped in runs."""
        index = self._index
        assert index is not None
        start = self._start()
        groups = workload.aversion_groups
        if groups and not self._group_nodes.keys().isdisjoint(groups):
            slot: Optional[_Slot] = index.first_fit(workload, groups, start)
            if slot is not None:
                return slot
        found: Optional[_Slot] = index.first_fit(workload, frozenset(), start)
        return found

    @staticmethod
    def _first_fit(workload: Workload, order: Iterable[_Slot],
                   avoid: Any) -> Optional[_Slot]:
        for slot in order:
            if not slot.cordoned and slot.name not in avoid \
                    and reason_of(slot.remaining, workload) is None:
                return slot
        return None

    def _averse(self, workload: Workload) -> Set[str]:
        """Names of the nodes hosting a workload that shares a group with ``workload``."""
        averse: Set[str] = set()
        for group in workload.aversion_groups:
            averse.update(self._group_nodes.get(group, ()))
        return averse

    def _place(self, workload: Workload, slot: _Slot) -> None:
        self._put(workload, slot)
        self._placed(slot)

    def _put(self, workload: Workload, slot: _Slot) -> None:
        journal = self._journal
        if journal is not None:
            if slot not in journal.slots:
                journal.touch(slot)
            journal.added[workload.name] = None
        if self._changed_nodes is not None:
            self._changed_nodes[slot.name] = None
        remaining = slot.remaining
        before = {}
        grew = False  # (a negative requirement gives room)
        for key, needed in workload.requirements.items():
            before[key] = left = remaining[key]
            remaining[key] = now = left - needed
            if needed < ZERO:
                grew = True
                if left < ZERO <= now:
                    slot.below.discard(key)
            elif left < needed and left >= ZERO:  # (now below zero: an immune workload)
                slot.below.add(key)
        if self._index is not None and before:
            self._index.changed(slot, before, grew)
        slot.workloads[workload.name] = workload
        self._where[workload.name] = slot
        for group in workload.aversion_groups:
            slot.groups[group] += 1
            nodes = self._group_nodes.get(group)
            if nodes is None:
                nodes = self._group_nodes[group] = Counter()
            nodes[slot.name] += 1
        if self._index is not None and workload.aversion_groups:
            self._index.grouped(slot, workload.aversion_groups)

    def _unplace(self, name: str, keep_entry: bool = False) -> _Slot:
        """Take workload ``name`` off its node; ``keep_entry`` leaves its
        entry in the placement table for the caller to delete."""
        slot = self._where[name]
        journal = self._journal
        if journal is not None:
            journal.touch(slot)
            if not keep_entry and journal.where is None and name not in journal.added:
                journal.where = journal.leaving(self._where, journal.added)
        if not keep_entry:
            del self._where[name]
        workload = slot.workloads.pop(name)
        if self._changed_nodes is not None:
            self._changed_nodes[slot.name] = None
        remaining = slot.remaining
        capacity = slot.node.resources
        before = {}
        grew = False  # (a positive requirement given back)
        for key, needed in workload.requirements.items():
            before[key] = left = remaining[key]
            now = left + needed
            if now == capacity[key]:
                # (back to the capacity as written: 0.30 less 0.10, plus
                # 0.10 again, is 0.30, not 0.300)
                now = capacity[key]
            remaining[key] = now
            if needed > ZERO:
                grew = True
                if left < ZERO <= now:
                    slot.below.discard(key)
            elif now < ZERO <= left:  # (a negative requirement given back)
                slot.below.add(key)
        if self._index is not None and before:
            self._index.changed(slot, before, grew)
        for group in workload.aversion_groups:
            _decrement(slot.groups, group)
            nodes = self._group_nodes[group]
            _decrement(nodes, slot.name)
            if not nodes:
                del self._group_nodes[group]
        if self._index is not None and workload.aversion_groups:
            # (it may take that group's workloads again)
            self._index.touched(slot, workload.aversion_groups)
        return slot

    def _join(self, nodes: List[Node]) -> None:
        for node in nodes:
            slot = _Slot(node)
            if self._journal is not None:
                self._journal.joined[node.name] = None
            self._slots[node.name] = slot
            if self._changed_nodes is not None:
                self._changed_nodes[node.name] = None
            if self._index is not None:
                self._index.add(slot)
            self._joined(slot)

    def _leave(self, slot: _Slot) -> None:
        journal = self._journal
        if journal is not None and journal.order is None:
            journal.order = journal.leaving(self._slots, journal.joined)
        self._take_out(slot)

    def _take_out(self, slot: _Slot) -> None:
        """``slot`` leaves the strategy's state, the index and the node table
        (the caller saw to the journal, and to its workloads)."""
        self._leaving(slot)
        if self._changed_nodes is not None:
            self._changed_nodes[slot.name] = None
        if self._index is not None:
            self._index.remove(slot)
        del self._slots[slot.name]

    def _cordon(self, slot: _Slot, cordoned: bool) -> None:
        if slot.cordoned != cordoned:
            if self._journal is not None:
                self._journal.touch(slot)
            slot.cordoned = cordoned
            if self._changed_nodes is not None:
                self._changed_nodes[slot.name] = None
            if self._index is not None:
                self._index.cordoned(slot)

    def _roll_back(self, journal: _Journal) -> None:
        """Put back everything recorded in ``journal``, then rebuild the
        index from the restored nodes (the failure may have come from the
        index itself, halfway through a change). Cost: O(N x R log N + W)."""
        for slot, saved in journal.slots.items():
            _put_back(slot, saved)
            slot.cordoned = saved[3]
        if journal.order is not None:
            self._slots = journal.order
        for name in journal.joined:
            self._slots.pop(name, None)
        self._placements_back(journal)
        # A released name deleted before the failure is put back at its
        # place from its node (release_loads deletes them last, in one go).
        for slot in self._slots.values():
            for name in slot.workloads:
                if name not in self._where:
                    self._where[name] = slot
        self._group_nodes = {}
        for slot in self._slots.values():
            for group, count in slot.groups.items():
                self._group_nodes.setdefault(group, Counter())[slot.name] = count
        self._recall(journal.memento)
        self._rolled_back()
        if self._changed_nodes is not None:
            self._changed_nodes.update(dict.fromkeys(self._slots))
        if self._index is not None:
            self._index = self._indexed_again()

    def _undo_call(self, journal: _Journal) -> None:
        """Put back what a call that removed no node recorded in
        ``journal``, telling the index of each node put back (it is sound:
        the call was undone on purpose, not stopped halfway through a
        change), instead of :meth:`_roll_back`'s index built again; the
        nodes that joined during the call leave it. Cost: O(R log N + G)
        per node touched, for G aversion groups on it, plus O(W) in C for
        the placement table when an entry left it, and O(R log N) per node
        that joined (it leaves as :meth:`remove_nodes` takes a node out)."""
        assert journal.order is None
        index, table = self._index, self._group_nodes
        joined = journal.joined
        for slot, saved in journal.slots.items():
            if slot.name in joined:
                # (it leaves below, the index not told of it first: its groups
                # leave the group table, and its workloads the node, so that
                # the placement table forgets them, see _placements_back)
                for group in slot.groups:
                    hosts = table[group]
                    del hosts[slot.name]
                    if not hosts:
                        del table[group]
                _put_back(slot, saved)
                continue
            remaining, _, groups, cordoned = saved
            now, had = slot.remaining, slot.groups
            _put_back(slot, saved)
            left: List[str] = []
            came: List[str] = []
            for group in had.keys() | groups.keys():
                count, was = groups.get(group, 0), had.get(group, 0)
                if count == was:
                    continue
                (left if count < was else came).append(group)
                nodes = table.get(group)
                if count:
                    if nodes is None:
                        nodes = table[group] = Counter()
                    nodes[slot.name] = count
                elif nodes is not None:
                    del nodes[slot.name]
                    if not nodes:
                        del table[group]
            if index is not None:
                # (the quantities that differ, as they are before the undo)
                before = {key: value for key, value in now.items() if value != remaining[key]}
                if before:
                    index.changed(slot, before, True)
                if left:
                    index.touched(slot, left)
                if came:
                    index.grouped(slot, came)
            if slot.cordoned != cordoned:
                slot.cordoned = cordoned
                if index is not None:
                    index.cordoned(slot)
            if self._changed_nodes is not None:
                self._changed_nodes[slot.name] = None
        for name in joined:
            self._take_out(self._slots[name])
        self._placements_back(journal)
        self._recall(journal.memento)

    def _placements_back(self, journal: _Journal) -> None:
        """The placement table as ``journal`` kept it, without the names
        placed during the call that are no longer on their node."""
        if journal.where is not None:
            self._where = journal.where
        for name, slot in journal.moved.items():
            self._where[name] = slot  # (its entry never left: see _drain)
        for name in journal.added:
            if name in self._where and name not in self._where[name].workloads:
                del self._where[name]

    def _indexed_again(self) -> NodeIndex:
        """A new node index over the nodes as they are now, built the way
        :meth:`from_dict` builds one (join, then cordon)."""
        index = NodeIndex(self._index_order(), self._index_load)
        for slot in self._slots.values():
            cordoned, slot.cordoned = slot.cordoned, False
            index.add(slot)
            if cordoned:
                slot.cordoned = True
                index.cordoned(slot)
        return index

    def _rank(self, slot: _Slot) -> int:
        """The number of nodes before ``slot`` in the order given."""
        if self._index is not None:
            return self._index.rank(slot)
        return list(self._slots).index(slot.name)

    # ----------------------------------------------------------- validation

    def _slot(self, name: Any, what: str, expected: str = "a node name") -> _Slot:
        """The node called ``name`` (or the node's own, for a
        :class:`Node`), for the call ``what`` (which ``expected`` names)."""
        if isinstance(name, Node):
            name = name.name
        elif not isinstance(name, str):
            raise InvalidTypeError(f"{what}: expected {expected}, got "
                                   f"{type(name).__name__} {shown(name)}")
        try:
            return self._slots[name]
        except KeyError:
            raise UnknownNameError(f"node {shown(name)}: no such node") from None

    def _placed_slot(self, name: Any, what: str, expected: str = "a workload name") -> _Slot:
        """The node of the placed workload called ``name``, for the call
        ``what`` (which ``expected`` names)."""
        if not isinstance(name, str):
            raise InvalidTypeError(f"{what}: expected {expected}, got "
                                   f"{type(name).__name__} {shown(name)}")
        try:
            return self._where[name]
        except KeyError:
            raise UnknownNameError(f"workload {shown(name)}: not placed") from None

    def _accept_nodes(self, nodes: Iterable[NodeLike]) -> List[Node]:
        accepted = Node.from_list(nodes)
        seen = set()
        for node in accepted:
            if node.name in self._slots:
                raise DuplicateNameError(f"node {shown(node.name)}: name already taken")
            if node.name in seen:
                raise DuplicateNameError(f"node {shown(node.name)}: name given twice")
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
                    f"workload {shown(workload.name)}: already placed on node "
                    f"{shown(self._where[workload.name].name)}")
            if workload.name in seen:
                raise DuplicateNameError(f"workload {shown(workload.name)}: name given twice")
            seen.add(workload.name)
        return accepted

    def _accept_placed_names(self, names: Any, what: str) -> List[str]:
        wanted: List[str] = []
        seen = set()
        for name in _single_or_many(names, what):
            if isinstance(name, Workload):
                name = name.name
            self._placed_slot(name, what, "workload names")
            if name in seen:
                raise DuplicateNameError(f"workload {shown(name)}: given twice")
            seen.add(name)
            wanted.append(name)
        return wanted

    def _accept_node_names(self, names: Any) -> List[str]:
        wanted: List[str] = []
        seen = set()
        for name in _single_or_many(names, "remove_nodes"):
            name = self._slot(name, "remove_nodes", "node names").name
            if name in seen:
                raise DuplicateNameError(f"node {shown(name)}: given twice")
            seen.add(name)
            wanted.append(name)
        return wanted

    def __repr__(self) -> str:
        # (not guarded: a debugger or a log line may show a distributor from
        # inside one of its calls; two lengths read at once need no lock)
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
    next = Removed("the position where the next search starts is cursor; it now "
                   "moves past the node that took a workload")

    def __init__(self, nodes: Iterable[NodeLike] = ()):
        self._cursor = 0
        super().__init__(nodes)

    @property
    @_reading
    def cursor(self) -> int:
        """The position in the node order where the next search starts."""
        return self._start()

    def _start(self) -> int:
        # (:attr:`cursor`, as a call reads it from inside)
        return self._cursor % len(self._slots) if self._slots else 0

    def _order(self) -> Sequence[_Slot]:
        slots = list(self._slots.values())
        start = self._start()
        return slots[start:] + slots[:start]

    def _placed(self, slot: _Slot) -> None:
        # Kept unwrapped: a node added after the last one is "the next node".
        self._cursor = self._rank(slot) + 1

    def _leaving(self, slot: _Slot) -> None:
        if self._rank(slot) < self._cursor:
            self._cursor -= 1

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
                f"got {shown(cursor)}")
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
    _resumable = True
    scores = Removed("a node's score is rubric.score(node_state(name).remaining); nodes "
                     "are tried from the lowest score up, ties by name")
    _sorts_each_call = True

    def __init__(self, rubric: Union[Rubric, Mapping[str, Any]],
                 nodes: Iterable[NodeLike] = ()):
        self._rubric = Rubric(rubric)
        super().__init__(nodes)

    @classmethod
    def from_list(  # type: ignore[override]  # 0.2.0's call: the rubric comes first
            cls: Type[_BinPack], rubric: Union[Rubric, Mapping[str, Any]],
            nodes: Iterable[NodeLike]) -> _BinPack:
        """Return a distributor over ``nodes`` that scores with ``rubric``.

        Cost: O(N x R log N), amortised.
        """
        return cls(rubric, nodes)

    @property
    def rubric(self) -> Rubric:
        """The rubric the distributor scores with."""
        return self._rubric

    def _order(self) -> Sequence[_Slot]:
        key = self._rubric._sort_key
        return sorted(self._slots.values(), key=lambda slot: key(slot.remaining, slot.name))

    def _index_order(self) -> Optional[NodeOrder]:
        return RubricOrder(self._rubric)

    def _sequence(self, workloads: List[Workload]) -> List[Workload]:
        # Biggest score first, ties by name. Workloads come in a few flavours,
        # and workloads of one flavour share one requirement map: each map is
        # scored once, and the workloads are grouped by score, so that only
        # names are sorted.
        score = self._rubric._score
        scores: Dict[int, Decimal] = {}  # (the maps stay alive in ``workloads``)
        groups: Dict[Decimal, List[Workload]] = {}
        for load in workloads:
            requirements = load.requirements
            size = scores.get(id(requirements))
            if size is None:
                size = scores[id(requirements)] = score(requirements)
            groups.setdefault(size, []).append(load)
        ordered: List[Workload] = []
        for size in sorted(groups, reverse=True):
            group = groups[size]  # (of one workload when each brings its own quantities)
            ordered.extend(group if len(group) == 1 else sorted(group, key=_NAME))
        return ordered

    def _settings(self) -> Dict[str, Any]:
        return {"rubric": {key: to_json_quantity(weight)
                           for key, weight in self._rubric.weights.items()}}

    @classmethod
    def _restore(cls, snapshot: Mapping[str, Any], nodes: List[Node]) -> "Distributor":
        rubric = _field(snapshot, "rubric", Mapping, "snapshot")
        return cls({key: from_json_quantity(value, json_path("snapshot: rubric", key),
                                            finite=True, decimal_strings=True)
                    for key, value in rubric.items()}, nodes)


_CORDONED = Reason(CORDONED, "")
_UNSEEN = object()


def _states(order: Sequence[Tuple[str, Mapping[str, Decimal], bool]]) -> List[int]:
    """Per node of ``order`` ((name, remaining, cordoned) triples), a number
    shared by the nodes whose remaining quantities are written alike (2 and
    2.0 differ: a reason shows them) in the same order, and cordoned alike:
    :func:`~pylighthouse.fit.check_fit` gives them the same answer. O(N x R)."""
    numbers: Dict[Any, int] = {}
    return [numbers.setdefault((cordoned, tuple((key, str(value))
                                                for key, value in remaining.items())),
                               len(numbers))
            for _, remaining, cordoned in order]


def _decrement(counter: Counter[str], key: str) -> None:
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
        raise InvalidInputError(f"{where}: missing field {shown(key)}")
    value = data[key]
    if not isinstance(value, kind):
        raise InvalidTypeError(
            f"{where}.{key}: expected {getattr(kind, '__name__', kind)}, "
            f"got {type(value).__name__}")
    return value


#: A snapshot's fields (a strategy with no cursor or rubric ignores those,
#: as a problem's strategy other than BinPack and BestFit ignores its rubric).
_SNAPSHOT_FIELDS = ("format", "strategy", "cursor", "rubric", "nodes", "placements")
_NODE_FIELDS = ("name", "resources", "cordoned")
_PLACEMENT_FIELDS = ("node", "workload")
_WORKLOAD_FIELDS = ("name", "requirements", "immunities", "aversion_groups")


def workload_json(workload: Workload) -> Dict[str, Any]:
    return {"name": workload.name,
            "requirements": {k: to_json_quantity(v) for k, v in workload.requirements.items()},
            "immunities": sorted(workload.immunities),
            "aversion_groups": sorted(workload.aversion_groups)}


def workload_from_json(data: Mapping[str, Any], where: str) -> Workload:
    requirements = _field(data, "requirements", Mapping, where)
    check_fields(data, _WORKLOAD_FIELDS, where, "workload")
    return Workload(
        check_name(data.get("name"), where),
        {key: from_json_quantity(value, json_path(f"{where}.requirements", key),
                                 finite=True, decimal_strings=True)
         for key, value in requirements.items()},
        data.get("immunities", ()), data.get("aversion_groups", ()))


def _from_snapshot(cls: Type[Distributor], snapshot: Mapping[str, Any]) -> Distributor:
    """The distributor of class ``cls`` that ``snapshot`` describes (a copy)."""
    made = Distributor.from_dict(snapshot)
    if type(made) is not cls:  # a subclass of a strategy: same state, its class
        copy = cls.__new__(cls)
        copy.__dict__.update(made.__dict__)
        if copy._index is not None:
            copy._index = copy._indexed_again()
        made = copy
    return made


def distributor_class(name: str) -> Type[Distributor]:
    """Return the distributor class of strategy ``name`` (any letter case).

    Raises:
        InvalidInputError: no strategy has that name; the message lists them.
    """
    for strategy, cls in Distributor._strategies.items():
        # (ASCII letters only: str.lower maps the Kelvin sign to "k", which
        # the schema's pattern does not)
        if isinstance(name, str) and name.isascii() and strategy.lower() == name.lower():
            return cls
    raise InvalidInputError(
        f"strategy: unknown strategy {shown(name)} "
        f"(valid: {', '.join(Distributor._strategies)})")
