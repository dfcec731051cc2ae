"""The node index: a distributor's nodes by class, in strategy order, searchable by fit.

:class:`NodeIndex` is what a distributor asks "which node first?". It keeps
every node in one :class:`~.blocks.NodeClass` (nodes sharing the resources
below zero at capacity), a map resource -> nodes inside each class, the order
(join order, or a :class:`NodeOrder`'s key of remaining room: BinPack's
:class:`RubricOrder`, BestFit's room order), and per
workload shape a :class:`~.plans.Plan`. :meth:`NodeIndex.first_fit` takes
the earliest answer of the plan's classes (:mod:`.search`), and remembers
what was proven to fit nowhere (per set of names asked for) until some
node gains room, and what was proven to fit no node hosting none of a
workload's aversion groups (per set of names and groups) until then or
until some node loses a workload of a group.

The interface a strategy uses (all a distributor calls):

* ``add(slot)``, ``remove(slot)``: a node joins or leaves;
* ``changed(slot, before, grew)``: its remaining room changed (``before``
  holds the old quantities of the names that changed; ``grew``: whether a
  quantity may have gone up);
* ``cordoned(slot)``: its ``cordoned`` flag was flipped;
* ``grouped(slot, groups)``, ``touched(slot, groups)``: a workload of
  aversion groups ``groups`` was placed on it, or left it (after
  ``slot.groups`` changed);
* ``first_fit(workload, groups, start)``: the first node in order from
  rank ``start`` (wrapping around) that takes the workload, skipping nodes
  that host one of ``groups``;
* ``first_fit_after(...)``, ``first_fit_from(...)`` (BinPack, BestFit): a
  search resumed after an earlier one of the same call, or from a node;
* ``grown`` (a count of the times some node gained room), ``rank(slot)``;
  BestFit also calls ``keep_columns_of``, ``bearer_count`` and
  ``bearers``.

A slot is any object with ``name``, ``node`` (its capacity in
``node.resources``), ``remaining``, ``below`` (the set of its resources
below zero, see :func:`pylighthouse.fit.below_zero`), ``groups`` (a
Counter of aversion groups), ``cordoned`` and a writable ``key``, which the
index sets to the node's order key. A copied or pickled distributor builds
its index anew from its snapshot.
"""
from bisect import bisect_left
from decimal import Decimal
from heapq import merge
from operator import ge
from typing import (Any, Dict, FrozenSet, Iterable, Iterator, List, Mapping, Optional,
                    Protocol, Sequence, Tuple)

from ..model import Workload
from ..quantities import ZERO, floats_of
from .blocks import MAX_DENSE, SPARSE, NodeClass
from . import plans
from .columns import BY_KEY, GroupColumn
from .groups import MAX_GROUP_COLUMNS
from .floors import floor_policy, floor_run, knows_run
from .kept import KeptOrders
from .records import Shape
from .plans import (SORTED_AT_SEARCH, Entry, Plan, asked_by_all, few_bearers, joint_policy,
                    make_plan, review_joint)
from .search import acceptable, first_among, first_in_class


__all__ = ["NodeIndex", "NodeOrder", "RubricOrder", "DEFAULT_LOAD"]

#: Nodes per block, in join order.
DEFAULT_LOAD = 64
#: Nodes per block where nodes move in the order as their room changes
#: (BinPack, BestFit): a move rewrites its block's lists and, when the node
#: held a bound, finds the bound again, each O(L); smaller blocks also
#: keep tighter bounds, at the cost of more of them to pass.
MOVING_LOAD = 40
#: At most this many shapes' plans, and shapes proven to fit nowhere, kept
#: (the tables start afresh past it). Workloads asking for one or two of 200
#: kinds of device, 100,000 of them on 10,000 nodes, make 25,000 shapes:
#: at 4096, plans were made 39,000 times instead of 25,000, and placing
#: took 6% more; the plans of 25,000 shapes take about 40 MB.
MAX_SHAPES = 32768
#: Set columns (see :meth:`~.derived.DerivedColumns.mask_set`) are made in classes
#: of at least this many blocks only (about 1,500 nodes): a search that finds
#: nothing in fewer is answered faster without one (measured on the
#: ``kinds`` mix of ``benchmarks/mixes.py``, RoundRobin's failing searches:
#: at 1,000 nodes set columns made them 11% dearer, at 2,000 and 3,000
#: nodes 11% and 25% cheaper).
SET_BLOCKS = 24

#: A search that steps over this many nodes of a class hosting a group it
#: avoids, one by one, makes the class's group column of the group (see
#: :meth:`~.groups.GroupColumns.group_column`).
AVERSE_RUN = 32


#: Requirement vectors kept per set of names proven to fit nowhere.
MAX_FAILED = 16
NO_GROUPS: FrozenSet[str] = frozenset()


class NodeOrder(Protocol):
    """How a strategy that re-ranks nodes as they fill orders them."""

    def key(self, slot: Any) -> Any:
        """The node's sort key now: totally ordered, and different for
        every node (end it with something unique to the node)."""

    def after(self, slot: Any, before: Mapping[str, Decimal]) -> Any:
        """:meth:`key` once the remaining quantities named in ``before``
        changed from those (``slot.key`` is still the key before)."""


class RubricOrder:
    """Nodes by a rubric's score of their remaining room, least first, ties by
    name (BinPack's order). O(R) a key."""

    __slots__ = ("rubric",)

    def __init__(self, rubric: Any):
        self.rubric = rubric

    def key(self, slot: Any) -> Any:
        flag, score, name = self.rubric._sort_key(slot.remaining, slot.name)
        # The float in front orders the same (rounding never reverses two
        # decimals; equal floats fall through to the decimals) and compares fast.
        return (flag, float(score), score, name)

    def after(self, slot: Any, before: Mapping[str, Decimal]) -> Any:
        """:meth:`key` from the key before the change: a finite score moves
        by the weighted change of the quantities that changed, exactly (the
        sum is exact, so this is the score of the new quantities). O(k) for
        k changed quantities; O(R) when the score was not finite."""
        flag, _, score, name = slot.key
        if flag or not score.is_finite():
            return self.key(slot)
        # (a finite score has finite weighed quantities; requirements are
        # finite, so they stay finite)
        score = self.rubric.moved(score, slot.remaining, before)
        return (0, float(score), score, name)


class NodeIndex(KeptOrders):
    """A distributor's nodes, by class and in order; see the module docstring.

    ``order`` (a :class:`NodeOrder`, such as :class:`RubricOrder` for
    BinPack, or BestFit's room order) orders nodes by a key of their remaining room, recomputed
    after every change; without one, nodes keep the order they joined in.
    ``load`` is the number of nodes per block (by default
    :data:`DEFAULT_LOAD`, or :data:`MOVING_LOAD` with an ``order``).
    """

    def __init__(self, order: Optional["NodeOrder"] = None, load: Optional[int] = None):
        self._ordering = order
        if load is None:
            load = DEFAULT_LOAD if order is None else MOVING_LOAD
        self._load = max(1, load)
        self._classes: Dict[FrozenSet[str], NodeClass] = {}
        self._home: Dict[str, NodeClass] = {}
        self._joins = 0
        self._order: List[Any] = []  # join order keys, when there is no order
        self._layout = 0  # moves when classes appear, vanish or gain names
        self._grown = 0  # moves when any open node gains room
        self._plans: Dict[Shape, Plan] = {}
        # (per set of names asked for and immunities, the plan made last)
        self._named_plans: Dict[Tuple[FrozenSet[str], FrozenSet[str]], Plan] = {}
        # Per set of requirement names and immunities, the least vectors
        # proven to fit nowhere, with :attr:`grown` then, their quantities
        # in the order of the names of the first shape of the set that
        # failed (``_named``); per shape, its set and where each of those
        # names sits in it (``None``: in the same order). Keyed by the set
        # and groups too, with (:attr:`grown`, ``_freed``): the vectors
        # proven to fit no node hosting none of those aversion groups
        # (``_freed`` moves whenever a node loses a workload of a group).
        self._nowhere: Dict[Any, Tuple[Any, List[Tuple[Decimal, ...]]]] = {}
        self._freed = 0
        self._named: Dict[Any, Tuple[str, ...]] = {}
        self._sets: Dict[Shape, Tuple[Any, Optional[Tuple[int, ...]]]] = {}
        self._joint = joint_policy()  # (when classes make joint columns)
        self._floors = floor_policy()  # (when classes use their floors)
        self._set_blocks = SET_BLOCKS  # (when classes make set columns)
        self._sparse = SPARSE  # (which columns classes make sparse)
        # (how many dense columns a class keeps at most, where nodes move)
        self._dense = MAX_DENSE if order is not None else None
        # (when classes make group columns, and how many at most)
        self._grouping = (AVERSE_RUN, MAX_GROUP_COLUMNS)
        # (how many refusals a resource's put-off column waits for)
        self._denials = plans.DENIALS

    def __len__(self) -> int:
        return len(self._home)

    def __iter__(self) -> Iterator[Any]:
        """The nodes in order. O(N log K) for K classes."""
        return merge(*self._classes.values(), key=BY_KEY)

    @property
    def grown(self) -> int:
        """A count that moves whenever an open node gains room, joins or is
        uncordoned (the only ways a node that refused a workload may take
        it): equal counts mean every refusal still stands. O(1)."""
        return self._grown

    # --------------------------------------------------------------- order

    def _key(self, slot: Any) -> Any:
        assert self._ordering is not None
        return self._ordering.key(slot)

    def rank(self, slot: Any) -> int:
        """How many nodes come before ``slot`` in order. O(log N), or
        O(N / L) with an ``order``."""
        if self._ordering is None:
            return bisect_left(self._order, slot.key)
        return sum(nodes.count_before(slot.key) for nodes in self._classes.values())

    def key_at(self, rank: int) -> Any:
        """The order key of the node ``rank`` nodes from the first; ``None``
        for the first (or past the last). O(1), or O(N) with an ``order``."""
        if not 0 < rank < len(self._home):
            return None
        if self._ordering is None:
            return self._order[rank]
        for at, slot in enumerate(self):
            if at == rank:
                return slot.key
        return None  # pragma: no cover - rank is below len(self)

    # --------------------------------------------------------- membership

    def add(self, slot: Any) -> None:
        """Node ``slot`` joins (last in join order). O(log N + R + C x L)."""
        resources = slot.node.resources
        signed = frozenset(key for key, value in resources.items() if value < ZERO)
        nodes = self._classes.get(signed)
        if nodes is None:
            nodes = self._classes[signed] = NodeClass(signed, self._load, self._sparse,
                                                      self._grouping[1], self._dense)
            nodes.denials_most = self._denials
            self._layout += 1
        if self._ordering is None:
            self._joins += 1
            slot.key = self._joins
            self._order.append(slot.key)
        else:
            slot.key = self._key(slot)
        past = few_bearers(self._ordering is not None) + 1
        for key in resources:
            bearers = nodes.bearers.get(key)
            if bearers is None:
                bearers = nodes.bearers[key] = set()
                self._layout += 1
            bearers.add(slot)
            if len(bearers) == past:
                self._layout += 1  # searched by column from now on
        nodes.insert(slot)
        nodes.members += 1
        self._home[slot.name] = nodes
        self._grown += 1

    def remove(self, slot: Any) -> None:
        """Node ``slot`` leaves. O(log N + R + C x L), plus O(N) in C to drop
        its join-order key where nodes keep their order."""
        nodes = self._home.pop(slot.name)
        nodes.delete(*nodes.locate(slot.key))
        nodes.forget(slot)
        nodes.members += 1
        for key in slot.node.resources:
            bearers = nodes.bearers[key]
            bearers.discard(slot)
            if not bearers:
                del nodes.bearers[key]
                self._layout += 1  # (the plans asking for it pass this class from now on)
        if not nodes.size:
            del self._classes[nodes.keys]
            self._layout += 1
        if self._ordering is None:
            del self._order[bisect_left(self._order, slot.key)]

    def cordoned(self, slot: Any) -> None:
        """``slot.cordoned`` was flipped. O(log N + C x L)."""
        nodes = self._home[slot.name]
        nodes.refresh(*nodes.locate(slot.key))
        if not slot.cordoned:
            self._grown += 1

    def changed(self, slot: Any, before: Mapping[str, Decimal], grew: bool) -> None:
        """The remaining quantities of ``slot`` named in ``before`` changed
        (``before`` holds the old ones; ``grew``: whether one may have gone
        up). O(log N + k) mostly, O(C x L) when the node moves in the
        order."""
        nodes = self._home[slot.name]
        nodes.changes += 1
        index, position = nodes.locate(slot.key)
        grew = grew and not slot.cordoned
        if grew:
            self._grown += 1
        ordering = self._ordering
        if ordering is not None:
            key = ordering.after(slot, before)
            if key != slot.key:
                nodes.move(index, position, key, before, grew)
                return
        nodes.update(index, position, before, grew)

    def touched(self, slot: Any, groups: Iterable[str] = ()) -> None:
        """A workload of aversion groups ``groups`` left ``slot`` (after
        ``slot.groups`` changed): the node may take workloads of those
        groups again, and the group columns of its class follow. O(log N),
        and O(1) a group column mostly."""
        nodes = self._home[slot.name]
        index, position = nodes.locate(slot.key)
        nodes.renew(index)
        if nodes.grouped:
            nodes.regroup(index, position, groups)
        self._freed += 1

    def grouped(self, slot: Any, groups: Iterable[str]) -> None:
        """A workload of aversion groups ``groups`` was placed on ``slot``
        (after ``slot.groups`` changed): the group columns of its class
        follow (see :meth:`~.groups.GroupColumns.group_column`). O(1) for a
        class without any; else O(log N) and O(1) a column, mostly."""
        nodes = self._home[slot.name]
        if nodes.grouped:
            index, position = nodes.locate(slot.key)
            nodes.regroup(index, position, groups)

    def bearer_count(self, key: str) -> int:
        """How many nodes have resource ``key`` (any quantity, cordoned
        ones too). O(K) for K classes."""
        return sum(len(nodes.bearers.get(key, ())) for nodes in self._classes.values())

    def bearers(self, key: str) -> List[Any]:
        """The nodes that have resource ``key`` (any quantity, cordoned
        ones too), in no particular order. O(K + B) for B of them."""
        return [slot for nodes in self._classes.values() for slot in nodes.bearers.get(key, ())]

    # ------------------------------------------------------------- search

    def first_fit(self, workload: Workload, groups: FrozenSet[str] = NO_GROUPS,
                  start: int = 0) -> Optional[Any]:
        """The first open node, in order from rank ``start`` and wrapping
        around, where ``workload`` fits, skipping nodes that host a workload
        of one of ``groups``; ``None`` when there is none.

        Cost: O(F x R) for a shape proven to fit nowhere since the last gain
        of room (F vectors kept, R requirements; with ``groups``, or to fit
        no node hosting none of them since then and since a node last lost
        a workload of some group); else, per class that can host the shape,
        O(B) comparisons in C plus O(L) per block whose bounds pass, and
        one check of the fit rule per node that passes them
        (:mod:`.search`).
        """
        shape = (tuple(workload.requirements), workload.immunities)
        if self._fits_nowhere(shape, workload.requirements, groups):
            return None
        low = self.key_at(start)
        # From ``low`` on, then wrapping around to the nodes before it.
        return self._search(workload, shape, groups,
                            ((None, None),) if low is None else ((low, None), (None, low)))

    def keep_columns_of(self, other: "NodeIndex") -> None:
        """Make the columns ``other`` (an index over the same nodes) has,
        its joint columns over the same resources too: an index built again
        then searches as the one it replaces did, not with joint columns
        chosen afresh by whichever workload comes first. O(N x C)."""
        self._joint = other._joint
        self._floors = other._floors
        self._set_blocks = other._set_blocks
        self._sparse = other._sparse
        self._dense = other._dense
        self._grouping = other._grouping
        self._denials = other._denials
        for keys, nodes in self._classes.items():
            nodes.dense_most = self._dense
            nodes.denials_most = self._denials
            before = other._classes.get(keys)
            if before is None:
                continue
            # (the refusals met for the resources whose columns were put off)
            nodes.denials.update(before.denials)
            joint = set(before.joint or ()) | set(before.masked.values()) \
                | set(before.set_masked.values())
            for column in [*before.columns, *before.sparse]:
                # (the joint ones are made below; the masked ones, keyed by
                # the other index's joint columns, by the plans that use them)
                if type(column) is GroupColumn:
                    nodes.group_column(column[1])
                elif column not in joint:
                    nodes.add_column(column)
            if before.joint is not None and nodes.joint is None \
                    and all(nodes.bearers.get(name) for name, _ in before.joint[0][1]):
                nodes.make_joint([name for name, _ in before.joint[0][1]])

    def first_fit_after(self, workload: Workload, changed: Sequence[Tuple[Any, Any]],
                        key: Any, groups: FrozenSet[str] = NO_GROUPS,
                        at: Optional[Any] = None, unproven: bool = False) -> Optional[Any]:
        """:meth:`first_fit` (from the first node) when the answer
        is known not to lie before order key ``key`` but in ``changed``:
        every node ordered before ``key`` refused a workload that fits
        exactly as ``workload`` does, or, ``unproven``, one that ``workload``
        asks at least as much as (or hosted a workload of one of ``groups``,
        the groups to avoid), and since then only the nodes of ``changed``
        changed, each by taking a workload (given with its order key before
        it did). A node that only lost room, or gained a group, still
        refuses: those of ``changed`` that sat at or after ``key`` and now
        sit before it are asked; if none takes it, ``at`` (the node that sat
        at ``key``, if given) when it still does and takes the workload;
        else the rest is searched from ``key`` on, without wrapping around.
        An equal workload found a node there, so its shape is looked up
        among those proven to fit nowhere only with ``groups``;
        ``unproven`` looks it up always.

        Cost: one check of the fit rule per such node and ``at``; then, if none
        takes it, :meth:`first_fit`'s over the blocks from ``key`` on.
        """
        shape = (tuple(workload.requirements), workload.immunities)
        if (groups or unproven) and self._fits_nowhere(shape, workload.requirements, groups):
            return None
        best = None
        for slot, before in changed:
            if before < key:
                continue  # it refused then, and has only lost room since
            here = slot.key
            if here < key and (best is None or here < best.key) \
                    and acceptable(slot, workload, groups):
                best = slot
        if best is not None:
            return best
        if at is not None and at.key == key and acceptable(at, workload, groups):
            return at  # (the first node from ``key`` on: nothing sits between)
        return self._search(workload, shape, groups, ((key, None),))

    def first_fit_from(self, workload: Workload, key: Any,
                       groups: FrozenSet[str]) -> Optional[Any]:
        """The first open node from order key ``key`` on (no wrapping
        around) where ``workload`` fits, skipping nodes that host a
        workload of one of ``groups``; ``None`` when there is none.

        Cost: :meth:`first_fit`'s over the blocks from ``key`` on.
        """
        shape = (tuple(workload.requirements), workload.immunities)
        if groups and self._fits_nowhere(shape, workload.requirements, groups):
            return None
        return self._search(workload, shape, groups, ((key, None),))

    def _search(self, workload: Workload, shape: Shape, groups: FrozenSet[str],
                spans: Tuple[Tuple[Any, Any], ...]) -> Optional[Any]:
        """The earliest answer in the first of ``spans`` (order key ranges
        [low, high), ``None`` for an open end) that has one. When none has,
        every node refused (the nodes outside the spans are known to, or to
        host one of ``groups``): the shape is remembered as fitting nowhere
        at these requirements (with ``groups``, on no node hosting none of
        them)."""
        requirements = workload.requirements
        needed = tuple(requirements.values())
        for low, high in spans:
            # (the plan again for each span: a class searched in the one
            # before may have made or dropped its joint columns)
            plan = self._plan(shape, requirements)
            found = self._earliest(plan, workload, groups, low, high, shape, needed)
            if found is not None:
                return found
        self._remember_nowhere(shape, requirements, groups)
        if not groups:
            # (a set of kinds found nowhere gets its set column in a class
            # of many blocks, see :meth:`~.derived.DerivedColumns.mask_set`;
            # not when the few nodes having them all were tried instead)
            for entry in plan.entries:
                if entry.settable is not None and entry.holding is not None \
                        and entry.holding not in entry.nodes.set_masked \
                        and len(entry.nodes.blocks) >= self._set_blocks \
                        and (entry.together is None or entry.crowded()):
                    entry.nodes.mask_set(entry.holding, asked_by_all(
                        entry.nodes, requirements, entry.settable))
        return None

    def _earliest(self, plan: Plan, workload: Workload, groups: FrozenSet[str],
                  low: Any, high: Any, shape: Shape,
                  needed: Tuple[Decimal, ...]) -> Optional[Any]:
        """The earliest answer of the plan's classes in [low, high): in
        each, among the few nodes having every resource asked that only
        some have (:meth:`~.plans.Entry.few_having_all`), or the bearers of
        the entry's tag, or else a few of the nodes having those resources
        in order (:meth:`~.kept.KeptOrders._scan`) and then by the class's columns
        (:meth:`_by_columns`)."""
        best = None
        for entry in plan.entries:
            if entry.wards and entry.closed():
                continue  # (the usual case for a class of warded nodes)
            if entry.later is not None:
                entry.used_by(workload)  # (see plans.FEW_NEW)
            few = entry.few_having_all()
            if few is not None:
                found = first_among(few, workload, groups, low, high)
            elif entry.tag is not None:
                tag = entry.tag
                # (a tuple where nodes keep their order: see plans.FEW_ALL_KEPT)
                bearers = () if isinstance(tag, tuple) else entry.nodes.bearers.get(tag, ())
                if self._ordering is None and (isinstance(tag, tuple)
                                               or len(bearers) > SORTED_AT_SEARCH):
                    # (kept in order by the class: see FEW_KEPT)
                    found = self._first_kept(entry.nodes, tag, workload, groups, low, high)[0]
                else:
                    found = first_among(bearers, workload, groups, low, high)
            else:
                answered, start = False, low
                if entry.scan is not None and self._ordering is None:
                    # (a few of the nodes having the resources asked for,
                    # in order, first: see plans.SCAN_LIMIT)
                    answered, found, start = self._scan(entry, workload, groups, low, high)
                if not answered:
                    found = self._by_columns(entry, workload, groups, start, high, shape,
                                             needed)
            if found is not None:
                best, high = found, found.key
        return best

    def _by_columns(self, entry: Entry, workload: Workload, groups: FrozenSet[str],
                    start: Any, high: Any, shape: Shape,
                    needed: Tuple[Decimal, ...]) -> Optional[Any]:
        """The earliest answer of the entry's class in [``start``, ``high``)
        by its sieve (see :func:`~.search.first_in_class`). The class keeps
        the sieve of a requirement vector with what its blocks refused of
        it, for as long as the entry stands: a workload of a flavour seen
        before reads no float and makes no sieve. (The entry keeps the last
        sieve it made, with ``needed``, the object: the next span of the
        same search, whose record of the vector is new, takes it.) What the
        search found out stays with the class: a column to lead with,
        columns no longer put off, joint columns, and, after a search that
        stepped over :data:`AVERSE_RUN` nodes hosting one of ``groups``
        one by one, a group column for one of them (see
        :meth:`~.groups.GroupColumns.group_column`), which the next searches
        for the group use."""
        if entry.pending is not None:
            entry.complete()  # (the nodes having every kind asked are many)
        nodes = entry.nodes
        refused = nodes.refused((shape, groups) if groups else shape, needed)
        if refused.made_by != entry.serial:
            if entry.last is needed:
                refused.sieve = entry.last_sieve
            else:
                # (read again for each class that makes a sieve in one
                # search: sharing them cost more, most searches make one)
                refused.sieve = entry.last_sieve = entry.sieve(
                    floats_of(workload.requirements), self._ordering is None)
                entry.last = needed
            refused.made_by = entry.serial
        skip = 0
        # (a vector searched before starts from its own record, and
        # a grouped one from the record of its vector without groups
        # when that knows of refusing blocks; a search from a node on
        # starts where the caller asked; a class of few blocks is
        # scanned in no time; and a shape asking for resources only
        # some nodes have keeps no floor: finding its run again cost
        # more than the run saved)
        if refused is nodes.scratch and start is None and entry.holding is None \
                and len(nodes.blocks) >= self._floors[0] \
                and not (groups and knows_run(nodes, shape, needed)):
            if nodes.floor_idle:
                nodes.floor_idle -= 1
            else:
                skip = floor_run(nodes, entry, shape, needed, self._floors)
        # (inside a block, the nodes having the resources only some
        # nodes have, kept until a node joins, leaves or moves in
        # it: not where nodes move at every placement; and, for two
        # or more such resources, blocks where no node has them all
        # passed by their count, which moves only as nodes join or
        # leave a block: one alone is in the bounds already)
        holding = entry.holding
        counted = holding if holding is not None and len(holding) > 1 \
            and self._ordering is not None and nodes.counting(holding) else None
        # (a group column of one of the groups to avoid, if the
        # class has one: see :meth:`~.groups.GroupColumns.group_column`)
        apart = None
        if groups and nodes.grouped:
            for group in groups:
                apart = nodes.grouped.get(group)
                if apart is not None:
                    break
        found = first_in_class(nodes, refused.sieve, workload, groups, start, high,
                               shape, needed, refused, skip,
                               holding if self._ordering is None else None, counted,
                               apart)
        if nodes.misled is not None:
            # (many nodes passing the sieve's first column were
            # short of another: the next sieves may lead with it)
            entry.promote(nodes.misled)
        if nodes.denied and entry.deferred and self._denied(nodes, entry):
            self._layout += 1  # (the plans sieve on those columns from now on)
        if groups and nodes.stepped >= self._grouping[0] and apart is None:
            # (it stepped over many nodes hosting its groups, one by one)
            for group in sorted(groups):
                if nodes.group_column(group) is not None:
                    break
        nodes.countdown -= 1
        if not nodes.countdown and review_joint(nodes, workload.requirements,
                                                workload.immunities, self._joint):
            self._layout += 1  # (the plans sieve on the joint columns from now on)
        return found

    @staticmethod
    def _denied(nodes: NodeClass, entry: Entry) -> bool:
        """Count the nodes the last search of ``entry`` found refusing after
        its sieve passed them against each resource whose column its plan
        put off; whether one reached :data:`~.plans.DENIALS`, as the index
        was made with it (its column is made from now on, see
        :func:`~.plans.deferrable`). O(R)."""
        denials, denied, most = nodes.denials, nodes.denied, nodes.denials_most
        hot = False
        for name in entry.deferred:
            number = denials[name] = denials.get(name, 0) + denied
            hot = hot or most is not None and number >= most
        return hot

    def _plan(self, shape: Shape, requirements: Mapping[str, Decimal]) -> Plan:
        """The shape's plan: the one kept, made again once the classes
        changed; for a shape asking for the same names as one planned in
        this layout, in another order, that one's entries twinned (what a
        plan holds does not depend on the order of the names: workloads
        asking for a few of many devices name them in any order)."""
        plan = self._plans.get(shape)
        if plan is None or plan.layout != self._layout:
            if len(self._plans) >= MAX_SHAPES:
                self._plans.clear()
                self._named_plans.clear()
            names = (frozenset(shape[0]), shape[1])
            twin = self._named_plans.get(names)
            if twin is not None and twin.layout == self._layout:
                plan = Plan(self._layout, [entry.twin() for entry in twin.entries])
            else:
                plan = self._named_plans[names] = make_plan(
                    self._classes, requirements, shape[1], self._layout,
                    self._ordering is not None)
            self._plans[shape] = plan
        return plan

    # ---------------------------------------------------- fitting nowhere

    def _fits_nowhere(self, shape: Shape, requirements: Mapping[str, Decimal],
                      groups: FrozenSet[str] = NO_GROUPS) -> bool:
        """Whether a workload asking for the same names (in any order) with
        the same immunities, and no more than ``requirements`` of each, was
        proven to fit nowhere since the last gain of room: fit only gets
        harder with larger requirements and less room. With ``groups``:
        or to fit no node hosting none of them, since the last gain of room
        and the last node that lost a workload of some group (a node only
        takes more groups otherwise). O(1) for a shape whose names never
        failed; else O(F x R), F vectors kept."""
        known = self._sets.get(shape)
        if known is None:
            return False
        key, order = known
        return self._proven(key, self._grown, requirements, order) or bool(groups) and \
            self._proven((key, groups), (self._grown, self._freed), requirements, order)

    def _proven(self, place: Any, now: Any, requirements: Mapping[str, Decimal],
                order: Optional[Tuple[int, ...]]) -> bool:
        """Whether the vectors kept at ``place``, when kept at ``now``, tell
        that ``requirements`` fit nowhere. O(F x R)."""
        failed = self._nowhere.get(place)
        if failed is None or failed[0] != now:
            return False
        needed = _in_order(requirements, order)
        return any(all(map(ge, needed, least)) for least in failed[1])

    def _remember_nowhere(self, shape: Shape, requirements: Mapping[str, Decimal],
                          groups: FrozenSet[str] = NO_GROUPS) -> None:
        """``requirements`` (of ``shape``) fit nowhere (with ``groups``: on
        no node hosting none of them): kept, in place of any kept vector
        asking at least as much of each name (this one tells of those too),
        up to :data:`MAX_FAILED` a set of names (and groups), the oldest
        let go first. O(F x R)."""
        known = self._sets.get(shape)
        if known is None:
            if len(self._sets) >= MAX_SHAPES:
                self._sets.clear()
                self._named.clear()
                self._nowhere.clear()
            names = shape[0]
            key = (frozenset(names), shape[1])
            first = self._named.setdefault(key, names)
            known = self._sets[shape] = (
                key, None if first == names else tuple([names.index(name) for name in first]))
        key, order = known
        place, now = ((key, groups), (self._grown, self._freed)) if groups \
            else (key, self._grown)
        failed = self._nowhere.get(place)
        if failed is None or failed[0] != now:
            if failed is None and len(self._nowhere) >= 2 * MAX_SHAPES:
                self._nowhere.clear()  # (groups make more places than there are shapes)
            failed = self._nowhere[place] = (now, [])
        needed = _in_order(requirements, order)
        least = failed[1]
        least[:] = [vector for vector in least if not all(map(ge, vector, needed))]
        if len(least) >= MAX_FAILED:
            del least[0]
        least.append(needed)


def _in_order(requirements: Mapping[str, Decimal],
              order: Optional[Tuple[int, ...]]) -> Tuple[Decimal, ...]:
    """The quantities of ``requirements``, in ``order`` (positions) if given. O(R)."""
    values = tuple(requirements.values())
    return values if order is None else tuple([values[at] for at in order])
