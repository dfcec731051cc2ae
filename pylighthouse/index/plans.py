"""Search plans: for one workload shape, which node classes to search and how.

A *shape* is a workload's requirement names and immunities. Its
:class:`Plan` lists, per node class that can host it (some node of the
class has each required name), either the sieve's columns (see
:mod:`.search`) or, when the workload asks for a resource only a few nodes
of the class have, that resource: those nodes are tried directly (a
workload pinned by a hostname tag costs a lookup, not a scan). A workload
asking for two or more resources that only some nodes have, all of them
on few nodes together (two kinds of device among hundreds), tries those
nodes directly too, while they are few (:meth:`Entry.few_having_all`); its
entry's sieve is made only once they are not (:meth:`Entry.complete`).
Where nodes keep their order, the nodes having every such resource are
kept in order per set (see :data:`FEW_ALL_KEPT`), a set on many nodes from
its second workload on (:data:`FEW_NEW`, :meth:`Entry.used_by`). Plans are
kept per shape until the classes change. A class's joint columns are made
and dropped here too, only where they pay (:func:`review_joint`), and its
masked columns made, where nodes move at every placement
(:func:`make_plan`); where they keep their order, a set column leads the
sieves of a set of resources only some nodes have once a search for it
found no node (:meth:`Entry.sieve`). A sieve led by a requirement that
every node of the class has, where a search found many nodes passing it
and short of another such requirement (much memory asked a cpu, on nodes
with little), is led by that one from then on, for every shape asking
for the same such requirements (:meth:`Entry.promote`). A resource that
only some nodes of a class have, on many of them, gets its column only
once searches lacking it were refused often enough (:func:`deferrable`).

Cost: making a plan O(K x R log R) for K classes and R names, plus O(N)
for each column it has a class make and, where nodes keep their order, for
the lists of nodes in order or having all its names it has a class keep;
using one O(K).
"""
import math
from bisect import bisect_left
from itertools import count
from typing import AbstractSet, Any, Dict, FrozenSet, List, Mapping, Optional, Tuple

from .bearers import Tag
from .blocks import NodeClass
from .records import Floor
from .columns import LOWEST, MIDDLE, OPEN, RATIOS

__all__ = ["Entry", "Plan", "make_plan", "joint_policy", "review_joint", "FEW",
           "FEW_KEPT", "FEW_ALL_KEPT", "FEW_NEW", "FEW_SETS", "SCAN_LIMIT", "SCAN_REGAINED",
           "SORTED_AT_SEARCH", "few_bearers", "deferrable", "DENIALS"]

#: A tag borne by at most this many nodes of a class is searched node by
#: node, where nodes move in their order at every placement (BinPack,
#: BestFit): their bearers are sorted at each search.
FEW = 32
#: The same where nodes keep their order (Prioritized, RoundRobin): their
#: bearers are kept sorted by the class (see
#: :meth:`~.bearers.Bearers.in_order`), so trying them one by one costs
#: no sort, and a search starts past the bearers known to refuse it (see
#: :meth:`~.kept.KeptOrders._cursor`): the full ones at the front of the
#: order, which the blocks' search would look inside again and again (each
#: block holding one or two of them, whose bounds pass it for the others'
#: room).
FEW_KEPT = 400
#: Where nodes keep their order, a shape asking for two or more resources
#: only some nodes have tries the nodes having them all, which the class
#: keeps in order (see :meth:`~.bearers.Bearers.in_order`), when at most
#: this many, however many have each, or when the bearers of the rarest are
#: few (:data:`FEW_KEPT`): where kinds of device each sit on 3 nodes in 10,
#: a shape asking for two tries about one node in ten, not the bearers of
#: one kind, two thirds of which lack the other. 0: never (the bearers of
#: the rarest are tried, when few).
FEW_ALL_KEPT = 400
#: Where nodes keep their order, a set of resources (see
#: :data:`FEW_ALL_KEPT`) whose rarest is on more than :data:`FEW_KEPT`
#: nodes, that more than this many nodes have all of, and whose list the
#: class does not keep yet, is searched the first time as if the class
#: kept no sets (a few bearers of the rarest, then the sieve), and by its
#: list from the search for a second workload asking for it on (see
#: :meth:`Entry.used_by`): hundreds of kinds, each on half the nodes and
#: three asked at a time, make millions of sets, most asked once, and a
#: list made for one search (an intersection and a filter of the rarest's
#: bearers, then a walk past the full nodes from the front) cost more than
#: it saved. A set on at most this many nodes has its list made at once
#: (a few nodes to try against the rarest's hundreds), and so does one
#: that would be on at most half as many if its resources sat on the nodes
#: independently of each other, and one of a class with few such sets
#: (:data:`FEW_SETS`); the others are counted without making the list
#: (:meth:`~.bearers.Bearers.having_all`).
FEW_NEW = 64
#: See :data:`FEW_NEW`: a class having at most this many sets of as many
#: resources as a shape asks for, of the resources on more than
#: :data:`FEW_KEPT` of its nodes but not all, makes the list of a set at
#: once: each set will be asked again (nine kinds make 84 sets of three).
FEW_SETS = 1024
#: At most this many sets of resources a class notes the first workload
#: searched for of (see :meth:`Entry.used_by`); past it, it starts afresh.
MAX_ASKED = 16384
#: Where nodes keep their order, a shape asking for resources only some
#: nodes have, on more nodes than :data:`FEW_KEPT` (or, two or more, than
#: :data:`FEW_ALL_KEPT` together), tries at most this many of the nodes
#: having them in order first, from those known to refuse it on (see
#: :meth:`~.kept.KeptOrders._cursor`), then its sieve from the next of them
#: on: most searches find a node among the first few, where the blocks'
#: search would pass blocks of full nodes and look inside blocks whose
#: bounds pass on resources that sit on different nodes. A class stops
#: trying them once more than :data:`SCAN_MISSES` of such searches, for
#: whatever resources, went on to the sieve: where they do, the class is
#: full for most workloads, and each resource's trial would cost as much
#: (hundreds of sets of kinds asked); it tries them again, and judges
#: afresh, once nodes gained room (a release, an uncordon) as many times
#: as :data:`SCAN_REGAINED` of its nodes since. 0: never.
SCAN_LIMIT = 64
#: See :data:`SCAN_LIMIT`: a share, once at least ``SCAN_TRIAL`` searches tried.
SCAN_MISSES = 0.25
SCAN_TRIAL = 32
#: See :data:`SCAN_LIMIT`: a share of the class's nodes.
SCAN_REGAINED = 0.25
#: Bearers of a tag at most this many are sorted at each search all the
#: same (a hostname's one node costs less so than looked up).
SORTED_AT_SEARCH = 8
#: A shape asking for two or more resources only some nodes of a class
#: have, the fewest of them on at most this many nodes, looks first for
#: the nodes having them all (see :meth:`Entry.few_having_all`): a
#: cluster of hundreds of kinds of device, each on its own few nodes.
TOGETHER = 256
_NONE: FrozenSet[Any] = frozenset()
#: The threshold of a joint column: the workload's own scaled least.
JOINT = "joint"
#: The threshold of a masked column (:meth:`~.derived.DerivedColumns.mask`): the
#: same, over its three resources.
MASKED = "masked"
#: A class's joint columns are tried when, over a window of this many of its
#: searches, the searches looked inside at least ``JOINT_WASTE`` blocks that
#: refused for each search or each change to the class's nodes (a
#: placement, mostly), whichever there were more of, and kept if the next
#: window looks inside ``JOINT_GAIN`` fewer, or under half as many, counted
#: the same way (:func:`review_joint`). Timed end to end, keeping the joint
#: columns (and the masked columns made from them) up to date costs a
#: change about as much as two or three refusing blocks looked inside.
#: Changes outnumber searches where nodes move and workloads come in a few
#: sizes (BinPack: most placements resume an earlier search, about three
#: a search), each paying for the columns; searches outnumber changes
#: where most fail (an over-full cluster), each having paid for its looks.
#: HISTORY.rst has the measurements behind the rule.
JOINT_WINDOW = 256
JOINT_WASTE = 3.0
JOINT_GAIN = 2.25
#: Classes of at most this many nodes never make joint columns.
JOINT_SIZE = FEW
#: A class changes the lead of the sieves of shapes asking for the same
#: requirements at most this many times (see :meth:`Entry.promote`).
MAX_PROMOTED = 4
#: A resource that only some nodes of a class have, and that the class
#: keeps no column of, gets none for the shapes asking for it until their
#: searches found this many nodes refusing after every column of the
#: sieve passed them (see :func:`deferrable`); ``None``: never put off.
DENIALS: Optional[int] = 64


def few_bearers(moving: bool) -> int:
    """How many bearers of a tag a class tries one by one at most:
    :data:`FEW` where nodes move in their order at every placement
    (``moving``), :data:`FEW_KEPT` where they keep it. (Read at each call,
    so that a test may patch either.)"""
    return FEW if moving else FEW_KEPT


_SERIALS = count()


class Entry:
    """How to search one class for a shape: ``tag`` (try the few nodes that
    have that resource, or, a tuple, every one of those resources: see
    :func:`_entry`) or ``pairs`` (sieve on these columns: a fixed
    threshold, ``None`` for the workload's own requirement, :data:`JOINT`
    or :data:`MASKED` for the workload's own scaled least). ``wards``:
    the class's resources below zero that the shape neither asks for nor is
    immune to (a node must have offset them to zero or more), either way
    (each has a column, for :meth:`closed`). ``floor``: the shape's
    :class:`~.records.Floor` in the class, once a search made it.
    ``holding``: the resources the shape asks for that only some nodes of
    the class have (a node lacking one cannot take it), or ``None``;
    ``kinds_last``: ``pairs`` with those last, when there are two or more
    (see :meth:`sieve`). ``settable``: the shape's immunities, when its
    sieves may be led by the set column of :attr:`holding` (two or more
    resources, asked for, not immune to, where nodes keep their order), or
    ``None``."""

    __slots__ = ("nodes", "pairs", "tag", "wards", "shut", "serial", "floor", "holding",
                 "kinds_last", "settable", "last", "last_sieve", "together", "few",
                 "pending", "deferred", "scan", "later")

    def __init__(self, nodes: NodeClass, pairs: List[Tuple[Any, Any]],
                 tag: Optional[Tag], wards: Tuple[str, ...] = (),
                 holding: Optional[FrozenSet[str]] = None,
                 kinds_last: Optional[List[Tuple[Any, Any]]] = None):
        self.nodes = nodes
        self.holding = holding
        self.pairs = pairs
        self.tag = tag
        self.wards = wards
        self.shut = -1  # (the class's clock when last found closed)
        # (names this entry, unlike its id, for as long as the process runs:
        # a class keeps the sieves an entry made by this number)
        self.serial = next(_SERIALS)
        self.floor: Optional[Floor] = None
        self.kinds_last = pairs
        # (two or more resources only some nodes have, the fewest first,
        # when few enough nodes have the first that the nodes having them
        # all are quickly found: see :meth:`few_having_all`)
        self.together: Optional[Tuple[str, ...]] = None
        # (the class's count of joins and leaves when those nodes were
        # last found, and they, or ``None`` when they were too many)
        self.few: Tuple[int, Optional[AbstractSet[Any]]] = (-1, None)
        # (the shape's immunities, when a set column of :attr:`holding` may
        # lead its sieves, see :meth:`~.derived.DerivedColumns.mask_set`)
        self.settable: Optional[FrozenSet[str]] = None
        # (the requirement values the last sieve was made for, the object,
        # and that sieve: see :meth:`.nodes.NodeIndex._by_columns`)
        self.last: Any = None
        self.last_sieve: List[Tuple[Any, float]] = []
        # (what :meth:`complete` needs to make the pairs of an entry made
        # without them, see :func:`_entry`; ``None`` once they are made)
        self.pending: Optional[Tuple[Mapping[str, Any], FrozenSet[str], bool]] = None
        # (the resources asked for whose columns were put off, see
        # :func:`deferrable`: nodes lacking them, or short of them, are
        # found so by :func:`~pylighthouse.fit.takes`)
        self.deferred: FrozenSet[str] = _NONE
        # (where nodes keep their order, the resource, or tuple of them,
        # whose bearers in order a search tries first, a few, before the
        # sieve: see :data:`SCAN_LIMIT`)
        self.scan: Optional[Tag] = None
        # (a set of resources whose list the entry takes to from a search
        # for another workload than the set's first on, and how many nodes
        # have them all: see :meth:`used_by`)
        self.later: Optional[Tuple[Tuple[str, ...], int]] = None
        if kinds_last is not None:  # (a twin's: see :meth:`twin`)
            self.kinds_last = kinds_last
        elif holding is not None and len(holding) > 1:
            self.kinds_last = [pair for pair in pairs if pair[0] not in holding] + \
                [pair for pair in pairs if pair[0] in holding]

    def promote(self, key: Any) -> bool:
        """Have the sieves lead with the column of requirement ``key`` where
        they are led by another requirement that every node of the class
        has (a search found many nodes passing that one and short of
        ``key``, as where workloads ask for much memory a cpu and nodes
        have little); whether the pairs changed. The class remembers it for
        the shapes asking for the same such requirements (see
        :attr:`~.blocks.NodeClass.leads`), at most :data:`MAX_PROMOTED`
        times, so that two columns never take turns for long. Every pair is
        still compared: only the order of the work changes. O(R) for R
        pairs."""
        if type(key) is not str:
            return False
        names = self.plain_names()
        if key not in names:
            return False
        leads = self.nodes.leads
        times = leads[names][1] if names in leads else 0
        if times >= MAX_PROMOTED or not self.lead_with(key, names):
            return False
        leads[names] = (key, times + 1)
        return True

    def plain_names(self) -> FrozenSet[str]:
        """The requirements the shape asks for (not immune) that every
        node of the class has: those whose order in the sieve only the
        work depends on. O(R)."""
        size, bearers = self.nodes.size, self.nodes.bearers
        return frozenset([key for key, fixed in self.pairs if fixed is None and type(key) is str
                          and len(bearers.get(key, _NONE)) == size])

    def lead_with(self, key: str, names: FrozenSet[str]) -> bool:
        """Put the pair of requirement ``key`` first in :attr:`pairs` and
        :attr:`kinds_last` where another of ``names`` (the entry's
        :meth:`plain_names`) leads them; whether either changed (the class
        then makes the shape's sieves again: a new serial). O(R)."""
        changed = False
        lists = []
        for pairs in (self.pairs, self.kinds_last):
            if pairs and pairs[0][0] in names and pairs[0][0] != key:
                at = next(at for at, pair in enumerate(pairs) if pair[0] == key)
                pairs = [pairs[at]] + pairs[:at] + pairs[at + 1:]
                changed = True
            lists.append(pairs)
        if not changed:
            return False
        same = self.kinds_last is self.pairs
        self.pairs = lists[0]
        self.kinds_last = lists[0] if same else lists[1]
        self.serial = next(_SERIALS)
        self.last = None
        return True

    def used_by(self, workload: Any) -> None:
        """Count a search for ``workload`` with an entry made for a set of
        resources whose list the class did not keep (:attr:`later`, see
        :data:`FEW_NEW`): the class notes the first workload searched for
        with the set (of whatever shape, by any entry: plans are made
        again), and from the search for another on, the entry tries the
        nodes having them all, as one made with the list kept does
        (:func:`_entry`). O(1)."""
        later = self.later
        assert later is not None
        every, having = later
        asked = self.nodes.asked
        first = asked.get(every)
        if first is None:
            if len(asked) >= MAX_ASKED:
                asked.clear()
            asked[every] = id(workload)
            return
        if first == id(workload):
            return  # (the same workload's search again: another span, its groups)
        self.later = None
        if self.tag is not None or having <= FEW_ALL_KEPT:
            self.tag = every
        elif SCAN_LIMIT:
            self.scan = every

    def twin(self) -> "Entry":
        """A new entry for another shape asking for the same names (in
        another order) with the same immunities, in the same layout: the
        same pairs and fields, its own serial and no floor (a floor's
        quantities follow its shape's order). O(1)."""
        twin = Entry(self.nodes, self.pairs, self.tag, self.wards, self.holding,
                     self.kinds_last)
        twin.settable = self.settable
        twin.together = self.together
        twin.pending = self.pending
        twin.deferred = self.deferred
        twin.scan = self.scan
        twin.later = self.later
        return twin

    def complete(self) -> None:
        """Make the pairs of an entry made without them (its nodes having
        every resource of :attr:`together` were expected to be few, see
        :func:`_entry`), now that a search needs its sieve: as a plan made
        now would. (Some node of the class still has every name asked:
        the index makes its plans again when the last node having one
        leaves.) O(R)."""
        assert self.pending is not None
        needed, immunities, masking = self.pending
        full = _entry(self.nodes, needed, immunities, masking, False)
        assert full is not None
        self.pending = None
        self.pairs, self.kinds_last, self.settable = full.pairs, full.kinds_last, full.settable
        self.tag, self.wards = full.tag, full.wards
        self.holding, self.together = full.holding, full.together
        self.deferred = full.deferred
        self.scan = full.scan
        if self.later is not None:
            self.later = full.later  # (``None`` once the class keeps the set's list)

    def few_having_all(self) -> Optional[AbstractSet[Any]]:
        """The nodes of the class having every resource of
        :attr:`together`, when there are at most :data:`FEW` of them (a
        search then tries them in order, as it tries the bearers of a rare
        tag); else ``None``. O(T) for T nodes having the first; O(1)
        again until a node joins or leaves the class (only then do the
        nodes having a resource change); ``None`` at once without
        :attr:`together`, or when there were too many and no node joined
        or left the class since."""
        together = self.together
        if together is None:
            return None
        members = self.nodes.members
        known, few = self.few
        if known == members:
            return few  # (no node joined or left the class since they were found)
        bearers = self.nodes.bearers
        having = bearers.get(together[0], _NONE).intersection(
            *(bearers.get(name, _NONE) for name in together[1:]))
        few = having if len(having) <= FEW else None
        self.few = (members, few)
        return few

    def crowded(self) -> bool:
        """Whether :meth:`few_having_all` found too many nodes having every
        resource of :attr:`together` since a node last joined or left the
        class. O(1)."""
        known, few = self.few
        return known == self.nodes.members and few is None

    def closed(self) -> bool:
        """Whether no node of the class has offset one of :attr:`wards` (so
        none can take the shape). O(B) in C per ward, for B blocks; O(1)
        again while the class's clock stands (no node of it gained room,
        joined or opened: a ward column's bounds only fell)."""
        nodes = self.nodes
        if self.shut == nodes.clock:
            return True
        bounds = nodes.bounds
        if any(max(bounds[key], default=-math.inf) < 0.0 for key in self.wards):
            self.shut = nodes.clock
            return True
        return False

    def sieve(self, floats: Mapping[str, float],
              kinds_last: bool = False) -> List[Tuple[Any, float]]:
        """The (column, threshold) pairs for a workload with these float
        requirements. The joint column nearest the workload's ratio comes
        where the plan put it, the two next to it (whose thresholds every
        fitting node meets too) just after: of the blocks whose bounds pass
        the first column, they reject the most, so the comparisons in
        Python stop soonest.

        ``kinds_last``: two or more resources asked for that only some nodes
        of the class have come last (for a search where nodes keep their
        order). Each sits on enough nodes that nearly every block has some,
        so that their bounds pass nearly every block, while the other
        columns (a joint column, cpu) turn away full blocks in C; inside a
        block, only the nodes having them all are looked at (see
        :meth:`~.blocks.Block.holding`). One such resource alone still
        leads: when it runs out, as a scarce device does, its bounds turn
        away runs of blocks. (Such a shape keeps no floor, see
        :func:`.floors.floor_run`.) Once the class has a set column for the
        two or more (made when a search for them found no node, see
        :meth:`~.derived.DerivedColumns.mask_set`), it leads, if the workload
        asks for, and is not immune to, its two other resources."""
        pairs: List[Tuple[Any, float]] = []
        holding = self.holding
        if self.settable is not None and holding is not None and self.nodes.set_masked:
            key = self.nodes.set_masked.get(holding)
            if key is not None and all(name in floats and name not in self.settable
                                       for name, _ in key[1]):
                pairs.append((key, _scaled_least(floats, key)))
        for key, fixed in (self.kinds_last if kinds_last else self.pairs):
            if fixed is JOINT:
                pairs.extend(_joints(floats, key))
            elif fixed is MASKED:
                pairs.append((key, _scaled_least(floats, key)))
            else:
                pairs.append((key, floats[key] if fixed is None else fixed))
        return pairs


def deferrable(nodes: NodeClass, name: str, bearers: int) -> bool:
    """Whether a plan puts off the column of ``name``, a resource that only
    some nodes of the class have (``bearers`` of them, more than one in
    :data:`~.blocks.SPARSE`; not below zero on any): yes while the class
    keeps no column of it and searches lacking one did not find
    :data:`DENIALS` nodes refusing after their sieves passed them (see
    :meth:`~.nodes.NodeIndex._by_columns`, which then has the plans made
    again, with the column). Nodes with hundreds of kinds of device, each
    on many nodes and asked for by a few workloads, would otherwise have
    hundreds of columns made, and kept up to date at every placement where
    nodes move in their order at each, for searches that a check of the
    node found fitting at once. (A resource on fewer nodes costs little to
    keep: only its bearers carry it.) O(1)."""
    return nodes.denials_most is not None and nodes.size > bearers \
        and bearers * nodes.sparse_share > nodes.size and name not in nodes.bounds \
        and nodes.denials.get(name, 0) < nodes.denials_most and name not in nodes.keys


def _scaled_least(floats: Mapping[str, float], key: Any) -> float:
    """A workload's threshold on a masked or set column ``key``: the least
    of its requirements of the column's resources, each times the column's
    scale for it (the same float operations as on a node's room)."""
    least: float = min([floats[name] * scale for name, scale in key[1]])
    return least


def asked_by_all(nodes: NodeClass, needed: Mapping[str, Any],
                 immunities: FrozenSet[str]) -> List[str]:
    """The resources the shape asks for (not immune) that every node of the class has."""
    return [name for name in needed if name not in immunities
            and len(nodes.bearers[name]) == nodes.size]


def _add_joint(nodes: NodeClass, needed: Mapping[str, Any], immunities: FrozenSet[str],
               pairs: List[Tuple[Any, Any]]) -> None:
    """Sieve on the class's joint column too, if it has one and the shape
    asks for each of its resources."""
    joint = nodes.joint
    if joint is not None:
        asked = asked_by_all(nodes, needed, immunities)
        if all(name in asked for name, _ in joint[0][1]):
            pairs.insert(0, (joint, JOINT))


Policy = Tuple[int, float, float, int]


def joint_policy() -> Policy:
    """(:data:`JOINT_WINDOW`, :data:`JOINT_WASTE`, :data:`JOINT_GAIN`,
    :data:`JOINT_SIZE`) as they are now: an index keeps them from when it is
    made."""
    return JOINT_WINDOW, JOINT_WASTE, JOINT_GAIN, JOINT_SIZE


def review_joint(nodes: NodeClass, needed: Mapping[str, Any], immunities: FrozenSet[str],
                 policy: Policy) -> bool:
    """Called when the class's ``countdown`` of searches ran out, the last
    one for a workload asking ``needed``; whether the class's joint columns
    were made or dropped (the plans must then be made again).

    Per-resource bounds cannot see that the cpu left and the memory left
    sit on different nodes; the joint columns
    (:meth:`~.derived.DerivedColumns.make_joint`) can, but every placement then
    keeps five more columns up to date. So they are made on trial, over the
    two resources the workload asks for with the least left of the class's
    capacity, when the window of :data:`JOINT_WINDOW` searches just ended
    looked inside at least :data:`JOINT_WASTE` blocks that refused for each
    of its searches or each change to the class's nodes in it, whichever
    there were more of (each change would have paid for keeping the
    columns); they are kept if the next window looks inside
    :data:`JOINT_GAIN` fewer, counted the same way, or under half as many,
    else dropped and tried again after a wait that grows fourfold each
    time; never in a class of at most :data:`JOINT_SIZE` nodes.
    ``policy``: these four, from :func:`joint_policy` (``JOINT_WASTE`` 0
    makes the columns at the first search, ``JOINT_GAIN`` minus infinity
    keeps them).

    Cost: O(N x R) when the columns are made, O(B x J) when dropped, O(R)
    else."""
    window, waste, gain, size = policy
    period = nodes.period
    rate = nodes.wasted / max(nodes.changes, period) if period else 0.0
    nodes.changes = 0
    changed = False
    if nodes.joint is None:
        if (period or not waste) and rate >= waste and nodes.size > size:
            asked = asked_by_all(nodes, needed, immunities)
            if len(asked) >= 2:
                nodes.make_joint(nodes.tightest(asked))
                nodes.trial = rate
                changed = True
    elif nodes.trial is not None:
        if nodes.trial - rate < gain and 2 * rate >= nodes.trial:
            nodes.drop_joint()
            nodes.trial = None
            nodes.patience *= 4
            nodes.countdown = nodes.period = window * nodes.patience
            nodes.wasted = 0
            return True
        nodes.trial = None  # kept
    if nodes.joint is None or nodes.trial is not None:
        nodes.countdown = nodes.period = window
        nodes.wasted = 0
    else:
        nodes.countdown = -1  # (kept: never reviewed again)
    return changed


class Plan:
    """The entries of one shape, made when the classes were at ``layout``."""

    __slots__ = ("layout", "entries")

    def __init__(self, layout: int, entries: List[Entry]):
        self.layout = layout
        self.entries = entries


#: The ratios halfway (in logarithm) between those of two joint columns
#: next to each other: ``bisect_left`` over them gives the nearest column.
_HALFWAY = tuple(4.0 ** (power + 0.5) for power in RATIOS[:-1])


def _joints(floats: Mapping[str, float], joint: Tuple[Any, ...]) -> List[Tuple[Any, float]]:
    """The joint column whose ratio is nearest the workload's, then the ones
    next to it, each with the workload's threshold on it: the same float
    operations on its requirements as on a node's room (so rounding keeps
    every node that has enough of both)."""
    (first, scale), (second, base) = joint[MIDDLE][1]
    one, two = floats[first], floats[second]
    at = MIDDLE
    below = two * base
    if 0 < below < math.inf:
        ratio = one * scale / below
        if 0 < ratio < math.inf:  # (it may round to 0 or infinity)
            at = bisect_left(_HALFWAY, ratio)
    pairs = []
    for index in (at, at - 1, at + 1):
        if 0 <= index < len(joint):
            key = joint[index]
            (_, scale), (_, other) = key[1]
            one_scaled, two_scaled = one * scale, two * other
            pairs.append((key, two_scaled if two_scaled < one_scaled else one_scaled))
    return pairs


def make_plan(classes: Dict[Any, NodeClass], needed: Mapping[str, Any],
              immunities: FrozenSet[str], layout: int, masking: bool = False) -> Plan:
    """The plan for a shape requiring what ``needed`` names (its quantities
    choose a new joint column's resources, and which resource gets a
    masked column) and immune to ``immunities``. ``masking``: a resource
    only some nodes of a class with joint columns have, asked for more
    than none of, is sieved on its masked column first (see
    :meth:`~.derived.DerivedColumns.mask`), as where nodes move at every
    placement: there the nodes having it that are full gather at the front,
    where each search starts. (Where nodes keep their order, their blocks
    are passed by the joint columns' bounds, and a search looks inside a
    block at the nodes having the resource only: the masked columns cost
    more there than they save.)"""
    entries = []
    for nodes in classes.values():
        entry = _entry(nodes, needed, immunities, masking)
        if entry is not None:
            entries.append(entry)
    return Plan(layout, entries)


def _entry(nodes: NodeClass, needed: Mapping[str, Any],
           immunities: FrozenSet[str], masking: bool, defer: bool = True) -> Optional[Entry]:
    """The class's entry for a shape (see :func:`make_plan`), or ``None``
    when no node of the class has every name it asks for. With ``defer``, a
    shape asking for two or more resources that only some nodes have, the
    fewest of them on at most :data:`TOGETHER` nodes, gets an entry without
    pairs: a search tries the nodes having them all
    (:meth:`Entry.few_having_all`), and makes the pairs only when those
    are too many (:meth:`Entry.complete`). Hundreds of kinds of device
    make tens of thousands of such shapes, most searched once, and their
    sieves (a masked column each, where nodes move) were made for
    nothing. O(R log R), plus O(N) for each column it has the class make."""
    names = tuple(needed)
    bearers = nodes.bearers
    counts: Dict[str, int] = {}  # (per name, how many nodes have it)
    for name in names:
        having = bearers.get(name)
        if not having:
            return None  # no node of the class has every required name
        counts[name] = len(having)
    # Resources below zero must be offset (or the workload immune to them)
    # even when it does not ask for them.
    wards = tuple(key for key in sorted(nodes.keys)
                  if key not in immunities and key not in names) if nodes.keys else ()
    for key in wards:
        nodes.add_column(key)
    size = nodes.size
    # (the resources asked for that only some nodes of the class have: a
    # node lacking one refuses the shape; two or more, the fewest of them
    # on at most TOGETHER nodes, are tried together: the nodes having them
    # all, see :meth:`Entry.few_having_all`)
    holding = frozenset([name for name, number in counts.items() if number < size])
    together = None
    if len(holding) > 1:
        together = tuple(sorted(holding, key=counts.__getitem__))
        if counts[together[0]] > TOGETHER:
            together = None
    scan: Optional[Tag] = None
    later: Optional[Tuple[Tuple[str, ...], int]] = None
    if names:
        rarest = min(counts, key=counts.__getitem__)
        # (where nodes keep their order, a shape asking for two or more
        # resources only some nodes have tries the nodes having them all,
        # which the class keeps in order, when they are few enough, however
        # many have each: see FEW_ALL_KEPT)
        every = None if masking or len(holding) < 2 or not FEW_ALL_KEPT else \
            tuple(sorted(sorted(holding), key=counts.__getitem__))
        few = counts[rarest] <= few_bearers(masking) and counts[rarest] < size
        all_count = 0  # (how many nodes have them all, when that decides)
        if every is not None and not few:
            # (as many as if the resources sat on the nodes independently
            # of each other: where that is few, or where so few resources
            # are on that many nodes that their sets of this size are few,
            # the list is made at once, with no count first)
            guess = float(size)
            for name in every:
                guess *= counts[name] / size
            if nodes.keeps(every) or guess <= FEW_NEW / 2 or math.comb(
                    nodes.many_held(few_bearers(masking)), len(every)) <= FEW_SETS:
                all_count = len(nodes.in_order(every)[0])
            else:
                all_count = nodes.having_all(every)
                if all_count > FEW_NEW:
                    # (its list from the next workload's search on: see FEW_NEW)
                    later = (every, all_count)
                    every = None
        if few or every is not None and all_count <= FEW_ALL_KEPT:
            entry = Entry(nodes, [], rarest if every is None else every, wards)
            entry.together = together  # (tried first, when few)
            entry.later = later
            return entry
        if not masking and counts[rarest] < size:
            scan = rarest if every is None else every  # (too many: see SCAN_LIMIT)
    if together is not None and defer:
        entry = Entry(nodes, [], None, wards, holding)
        entry.together = together
        entry.pending = (needed, immunities, masking)
        entry.later = later
        return entry
    pairs: List[Tuple[Any, Any]] = []
    deferred = []
    for name in names:
        if name not in immunities:
            if deferrable(nodes, name, counts[name]):
                deferred.append(name)  # (no column yet: see :func:`deferrable`)
                continue
            pairs.append((name, None))  # at least the requirement
        elif len(bearers[name]) < nodes.size:
            pairs.append((name, LOWEST))  # has it, whatever is left
    _add_joint(nodes, needed, immunities, pairs)
    # A resource only some nodes of the class bear (a semaphore, a tag)
    # rejects more of them than any other column: it leads.
    partial = sorted((pair for pair in pairs if pair[1] is not JOINT
                      and len(bearers[pair[0]]) < nodes.size),
                     key=lambda pair: len(bearers[pair[0]]))
    if partial:
        pairs = partial + [pair for pair in pairs if pair not in partial]
        # (the one fewest nodes have, masked by the joint columns, leads:
        # see :meth:`~.derived.DerivedColumns.mask`; of those asked for
        # more than none: a tag's masked column would pass the nodes
        # having the tag, as the tag's own column does, and every node
        # having it would keep one more column up to date at each placement)
        masked: Optional[str] = next((key for key, fixed in partial
                                      if fixed is None and needed[key] > 0), None)
        if masking and masked is not None and nodes.joint is not None \
                and len(pairs) > len(partial) and pairs[len(partial)][1] is JOINT \
                and nodes.maskable(masked):
            pairs.insert(0, (nodes.mask(masked), MASKED))
    pairs.extend((key, 0.0) for key in wards)
    for key, fixed in pairs:
        if fixed is not JOINT:
            nodes.add_column(key)
    entry = Entry(nodes, pairs or [(OPEN, 0.0)], None, wards, holding or None)
    entry.together = together
    entry.deferred = frozenset(deferred)
    entry.scan = scan if SCAN_LIMIT else None
    entry.later = later
    if nodes.leads:
        # (a requirement the class found its sieves better led by)
        plain = entry.plain_names()
        led = nodes.leads.get(plain)
        if led is not None:
            entry.lead_with(led[0], plain)
    if not masking and len(partial) > 1 and all(fixed is None for _, fixed in partial):
        entry.settable = immunities
    return entry
