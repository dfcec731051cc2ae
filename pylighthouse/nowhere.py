"""Why workloads fit no node, counted over sorted columns of nodes.

The answer to a batch (:func:`~pylighthouse.problem.solve`, so the command
line and the HTTP endpoint) gives every workload left without a node one
line: ``0/N nodes fit`` and the refusals counted by kind and resource, the
line of its :class:`~pylighthouse.explain.Explanation`. Counting needs no
:class:`~pylighthouse.fit.Reason` per node.

Nodes are counted in *layouts*. A node's names are its resources that
can refuse some workload of the batch: it has less left than the most a
workload asks for, or less than zero (a tag asked for, or more than anyone
asks, only matters to a workload asking for what the node lacks). Only
the order of two names that can refuse one workload matters (both asked
for by it, or one below zero): a node's names are put in an order that
keeps those pairs as the node has them and the others as first met.
Nodes whose orders agree (one order of all their names keeps each node's,
as cpu, mem, disk, then gpu on some nodes and a licence on others) are
counted together, up to :data:`BITS_MOST` nodes and :data:`NAMES` names;
a node reads nothing short in a column of a resource it lacks, and a
workload visits only the names that can refuse it. A layout is counted a
resource at a time, in its order, the order
:func:`~pylighthouse.fit.check_fit` follows, so that each node is
counted once, for the first resource it fails on; first the nodes lacking
a resource the workload asks for (in the workload's order). Each
resource's quantities are sorted once (:class:`_Sorted`): the nodes short
of a workload's quantity are found by bisection, as a set of bits, and the
sets of the resources before it are taken away
(:func:`_refused_by_bits`), so that workloads of quantities of their own,
which share no explanation, each cost a few operations on machine words
per resource, not a comparison per node. A layout of more than
:data:`BITS_MOST` nodes compares its quantities with the workload's instead,
in C (``map``, :func:`_refused_by`). The nodes of layouts of fewer than
:data:`FEW` nodes are checked one by one with ``check_fit``'s rule, and
so are those of a layout where at most :data:`DIRECT` nodes have every
resource a workload asks for (a pinned workload, or two kinds of device
among hundreds): the others are counted as lacking one, over every layout
at once (:class:`_Lacking`). Where more nodes have them all but still few
of the layouts' nodes (one kind of device among hundreds), they are
counted as one layout of their own from the second workload asking for
the same names on (:meth:`_Lacking.gather`). Where no layout is left to
count on (every node lacks a resource asked for but those few), the line
is counted at once, not looked up among the lines kept for sharing, from
the parts for the nodes lacking a resource (and the cordoned), written
once per set of names asked, and those of the few checked alone.

Where most nodes have names of their own (the open nodes have more sets
of names than one per :data:`DISTINCT` nodes, as with a few kinds of
device among hundreds), grouping them into layouts costs more than it
saves: when every workload of the batch can be counted so, no layout is
made (:func:`_direct`). The nodes lacking a resource are counted over every
open node at once, as above, and the nodes having every resource a
workload asks for, when more than :data:`DIRECT`, make layouts of their
own per set of names asked and immunities (:meth:`_Lacking.own`), the
first workload on: one per order of what can refuse the workload (most
often one), and those too few to make one are checked alone.

Workloads that ask for the same resources, are immune to the same and fall
at the same place of every sorted column they are counted on share their
line but for the quantities they need (kept per batch, up to :data:`KEPT`).
The place on the last of those columns does not matter: that resource
refuses every node the ones before it left, however much the workload
needs, so that workloads of quantities of their own mostly share one.
A differential test holds the lines to those of
:meth:`~pylighthouse.Distributor.explain_all`, counted both ways.

Cost: O(N x R) once for N nodes (and O(P x R) to group P sets of names,
or, without layouts, O(H x R) per set of names asked for its H nodes
having them all), and O(L log L) to sort a resource of a layout of L
nodes the first time a workload is counted there; then per workload, for
each layout, O(R x (log L + L / 64)) (bisections and operations on sets
of L bits), or O(R) comparisons in C per node of a layout too large for
sets of bits, or one check per node of the small layouts and of the few
having every resource asked.
"""
from bisect import bisect_left, bisect_right
from heapq import heapify, heappop, heappush
from decimal import Decimal
from functools import reduce
from itertools import combinations, compress, count, repeat
from operator import and_, eq, gt, itemgetter, lt, or_
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Set, Tuple

from .explain import one_line, shortfall
from .fit import CORDONED, INSUFFICIENT, MISSING, NOT_TOLERATED, Reason, first_refusal
from .model import Workload
from .quantities import ZERO, number_text, to_number

__all__ = ["nowhere_lines", "FEW"]

#: Layouts of fewer nodes are checked a node at a time.
FEW = 4
#: Layouts of at least this many nodes (and at most :data:`BITS_MOST`) are
#: counted with sorted columns and sets of nodes as bits (see
#: :class:`_Sorted`); others a column at a time. (From the smallest: on
#: 500 nodes of seven layouts, 4 to 314 nodes each, the answer to 10,000
#: workloads of their own quantities took 0.32 s so, 0.35 s from 16 nodes,
#: 0.42 s from 64.)
BITS = FEW
#: Above this many nodes a layout's sets of bits would take too much
#: memory (a set every :data:`STEP` nodes of the sorted order, each of one
#: bit a node): columns are compared a resource at a time again.
BITS_MOST = 20_000
#: A set of names whose order disagrees with the order kept for the nodes
#: counted together so far is still counted with them if some order agrees
#: with all: looked for when they are of at most this many sets of names.
JOINS = 64
#: A set of names is counted with the nodes of one of the first this many
#: layouts (begun by the largest sets) or alone: many sets of names in
#: orders of their own are not each compared with all the others.
TRIES = 64
#: Nodes are counted together while their sets of names hold this many
#: names in all, at most (each one a column).
NAMES = 256
#: A layout where at most this many nodes have every resource a workload
#: asks for (the others are counted as lacking one, over every layout: see
#: :class:`_Lacking`) checks those nodes one by one, as the small layouts'
#: nodes are (:func:`~pylighthouse.fit.first_refusal`). (On ``devices`` of
#: ``benchmarks/mixes.py``, over-subscribed, the lines took a fifth less
#: time at 5,000 nodes with 2 to 8; 16 saved less.)
DIRECT = 4
#: The nodes having every resource a workload asks for, over the layouts
#: where some do, are counted as one layout of their own (see
#: :meth:`_Lacking.gather`) when they are at most one in this many of
#: those layouts' nodes, or all of them.
GATHER = 4
#: No layouts are made (see :func:`_direct`) when the open nodes have more
#: sets of names than one per this many nodes (most nodes bear a few kinds
#: of device among hundreds), and each workload can be counted so. (On
#: ``devices`` of ``benchmarks/mixes.py``, over-subscribed, 4,653 sets for
#: 5,000 nodes; on ``kinds``, 562.)
DISTINCT = 4
#: Nodes of a column's sorted order between two kept sets of bits.
STEP = 16
#: Bytes of the sets of bits a sorted column keeps once made for a number
#: of nodes (workloads of quantities of their own still fall between the
#: same nodes of a column, so the same few hundred numbers come back).
MADE_BYTES = 1 << 22


def _count_bits(bits: int) -> int:
    return bin(bits).count("1")


#: How many bits are set (``int.bit_count`` from Python 3.10 on, in C).
_popcount: Callable[[int], int] = getattr(int, "bit_count", _count_bits)

# (The nodes of a set ``x`` not in ``y`` are written ``x ^ (x & y)``, not
# ``x & ~y``: ``~y`` is a negative number, and ``&`` with one converts its
# digits, a few times the cost on sets of thousands of nodes.)


def _indices(bits: int) -> List[int]:
    """The indices of the bits set in ``bits``, lowest first. A few are
    taken from the top (O(size) in C each, on a set shrinking as they go);
    more, from the set written in binary (O(size) in C once, then one
    search of the text in C per bit)."""
    if _popcount(bits) <= _FEW_BITS:
        return _few_indices(bits)
    text = format(bits, "b")[::-1]
    found = []
    at = text.find("1")
    while at >= 0:
        found.append(at)
        at = text.find("1", at + 1)
    return found


def _few_indices(bits: int) -> List[int]:
    """:func:`_indices` of a set of a few bits, taken from the top."""
    found = []
    while bits:
        top = bits.bit_length() - 1
        found.append(top)
        bits ^= 1 << top
    found.reverse()
    return found


#: Sets of at most this many bits are read a bit at a time (see :func:`_indices`).
_FEW_BITS = 8
#: The lowest bits of a set, those looked at first for its lowest (see
#: :func:`_lowest`): ``&`` with a short positive number is as short.
_WINDOW = (1 << 60) - 1


#: The set of one node, by its index: ``_BIT(i) == 1 << i``.
_BIT: Callable[[int], int] = (1).__lshift__


def _lowest(bits: int) -> int:
    """The index of the lowest bit set in ``bits`` (not 0). O(1) when it is
    among the first 60 (most sets of nodes begin there), else O(size) in C."""
    low = bits & _WINDOW
    if not low:
        low = bits
    return (low & -low).bit_length() - 1


#: A step's resource and how many nodes have less than needed (see :data:`_Step`).
_KEY_AND_NUMBER = itemgetter(0, 4)
#: The nodes in the strategy's order: (name, remaining, cordoned).
Order = Sequence[Tuple[str, Dict[str, Decimal], bool]]
#: Per (kind, resource): [how many, first position, needed, most left,
#: position of the first node with the most left].
_Tally = Dict[Tuple[str, str], List[Any]]
#: A step of counting a workload in a layout (see :meth:`_Layout.walk`): a
#: resource, what the workload needs of it, the least any node has, its
#: sorted column, how many nodes have less than needed and their set.
_Step = Tuple[str, Decimal, Decimal, "_Sorted", int, int]


class _Layout:
    """Open nodes counted together: those of one or more sets of names
    (*parts*: the resources that can refuse some workload of the batch, see
    :func:`nowhere_lines`) whose orders agree, so that one order of ``keys``
    is that of every node (a node without a key reads :data:`_ABSENT`
    there, never short of anything). Nodes sit in the strategy's order.
    ``lacking``: per resource asked for that some of them lack, those nodes
    as bits (a resource none of them has is lacked by all). ``holding``:
    every node has every resource of ``asked`` (the nodes having all that
    a workload asks for, see :meth:`_Lacking.own` and
    :meth:`_Lacking.gather`), so none lacks one and its nodes' resources
    are not gone through."""

    __slots__ = ("keys", "names", "positions", "columns", "lowest", "sorted", "refused_by",
                 "everyone", "lacking", "rows", "place", "remainings", "visits",
                 "negative", "apart")

    def __init__(self, keys: Sequence[str],
                 members: Sequence[Tuple[Sequence[str], List[int],
                                         List[Dict[str, Decimal]]]],
                 asked: Set[str], holding: bool = False,
                 below_zero: Optional[Set[str]] = None, ordered: bool = False):
        self.keys = tuple(keys)
        if ordered:  # (one member, its positions in order: see :meth:`_Lacking.own`)
            self.positions, remainings = members[0][1], members[0][2]
        else:
            placed = sorted((position, remaining)
                            for _, positions, remainings in members
                            for position, remaining in zip(positions, remainings))
            self.positions = [position for position, _ in placed]  # (in the strategy's order)
            remainings = [remaining for _, remaining in placed]
        self.place = {key: at for at, key in enumerate(self.keys)}
        self.remainings = remainings
        # (each made at its first use: a layout may have hundreds of names,
        # kinds of device, of which a workload asks for one or two)
        self.columns: Dict[str, List[Decimal]] = {}
        self.lowest: Dict[str, Decimal] = {}
        self.sorted: Dict[str, _Sorted] = {}
        # (per names asked and immunities: the keys that can refuse, in order)
        self.visits: Dict[Any, Tuple[str, ...]] = {}
        # (how its refusals are counted, by its size: see :data:`BITS`)
        self.refused_by: Callable[[_Layout, Workload, _Tally], bool] = \
            _refused_by_bits if BITS <= len(remainings) <= BITS_MOST else _refused_by
        everyone = self.everyone = (1 << len(remainings)) - 1
        self.rows: Dict[str, List[bool]] = {}  # (``lacking`` as bools, made at first use)
        # (per names asked, in order: the nodes lacking one and the few
        # having them all, see :meth:`lacked`)
        self.apart: Dict[Tuple[str, ...], Tuple[int, Optional[List[int]]]] = {}
        if holding:
            # (the names below zero from the keys' columns, which a
            # workload counted here reads anyway)
            # (only of those some open node has less than zero of, when
            # known: ``below_zero``)
            self.negative = [key for key in self.keys
                             if (below_zero is None or key in below_zero)
                             and self.lowest_of(key) < ZERO]
            self.names = frozenset(asked)
            self.lacking: Dict[str, int] = {}
            return
        having: Dict[str, int] = {}
        below: Set[str] = set()  # (the names some node has less than zero of)
        if len(asked) + len(self.keys) < NARROW:
            # (few keys and names asked, as a gathered layout has, see
            # :meth:`_Lacking.gather`: those looked up in each node, not
            # every resource of its nodes gone through)
            interest = tuple(set(asked).union(self.keys))
            for index, remaining in enumerate(remainings):
                bit = 1 << index
                for key in interest:
                    left = remaining.get(key)
                    if left is not None:
                        if key in asked:
                            having[key] = having.get(key, 0) | bit
                        if left < ZERO:
                            below.add(key)
        else:
            for index, remaining in enumerate(remainings):
                bit = 1 << index
                for key, left in remaining.items():
                    if key in asked:
                        having[key] = having.get(key, 0) | bit
                    if left < ZERO:
                        below.add(key)
        self.negative = [key for key in self.keys if key in below]
        # (the resources asked for that every node has)
        self.names = frozenset(key for key, bits in having.items() if bits == everyone)
        self.lacking = {key: everyone ^ (everyone & bits) for key, bits in having.items()
                        if bits != everyone}

    def lacked(self, load: Workload, names: Tuple[str, ...]) -> Tuple[int, Optional[List[int]]]:
        """The nodes (as bits) lacking a resource ``load`` asks for
        (``names``, its requirements' names in order); and the indices of
        the others when there are at most :data:`DIRECT` of them and some
        lack one (else ``None``). O(R) operations on sets of bits the first
        time for these names, O(1) again."""
        found = self.apart.get(names)
        if found is None:
            failed = _missing(self, load, None)
            having = self.everyone ^ (self.everyone & failed) if failed else 0
            few = _few_indices(having) if having and _popcount(having) <= DIRECT else None
            found = self.apart[names] = (failed, few)
        return found

    def reach(self, load: Workload, failed: int) -> Optional[List["_Step"]]:
        """The steps of counting ``load`` here (see :meth:`walk`), up to
        the first resource where every node has failed (lacking a resource
        asked for, or short of one so far): per resource, how many nodes
        have less of it than ``load`` needs, on which the counting of
        :func:`_refused_by_bits` depends and nothing else (on the last
        step's resource alone: it refuses every node the others left,
        whatever that number); ``None`` when
        some node fails on none (it takes ``load``). ``failed``: the nodes
        lacking a resource asked for (:meth:`lacked`). O(R) bisections and
        operations on sets of bits."""
        if failed == self.everyone:
            return []
        steps, failed = self.walk(load, failed)
        return steps if failed == self.everyone else None

    def walk(self, load: Workload, failed: int) -> Tuple[List["_Step"], int]:
        """The steps of counting ``load`` in the layout (see :data:`_Step`):
        one per resource that can refuse it, in order, where some node has
        less than it needs, up to the first where every node has failed
        (``failed``: those failed before any, lacking a resource asked
        for); and the nodes failed after the last. O(R) bisections and
        operations on sets of bits."""
        requirements = load.requirements
        everyone = self.everyone
        kept = self.sorted
        steps = []
        for key in self.visit(load):
            needed = requirements.get(key, ZERO)
            lowest = self.lowest_of(key)
            if not lowest < needed:
                continue  # (no node fails here)
            index = kept.get(key) or self.sorted_column(key)
            number = bisect_left(index.values, needed)
            below = index.first(number)
            steps.append((key, needed, lowest, index, number, below))
            failed |= below
            if failed == everyone:
                break
        return steps, failed

    def visit(self, load: Workload) -> Tuple[str, ...]:
        """The names that can refuse ``load``, in the layout's order: those
        it asks for, not immune to, and those some node has less than zero
        of. O(1) again for the same names and immunities."""
        requirements, immunities = load.requirements, load.immunities
        shape = (tuple(requirements), immunities)
        found = self.visits.get(shape)
        if found is None:
            place = self.place
            keys = {key for key in requirements if key in place}
            keys.update(self.negative)
            found = self.visits[shape] = tuple(
                sorted((key for key in keys if key not in immunities), key=place.__getitem__))
        return found

    def column(self, key: str) -> List[Decimal]:
        """What each node has left of ``key`` (:data:`_ABSENT` where it
        lacks it). O(L) the first time."""
        found = self.columns.get(key)
        if found is None:
            found = self.columns[key] = list(map(
                dict.get, self.remainings, repeat(key), repeat(_ABSENT)))  # (in C)
        return found

    def lowest_of(self, key: str) -> Decimal:
        """The least any node has left of ``key``. O(L) the first time."""
        found = self.lowest.get(key)
        if found is None:
            found = self.lowest[key] = min(self.column(key))
        return found

    def sorted_column(self, key: str) -> "_Sorted":
        found = self.sorted.get(key)
        if found is None:
            found = self.sorted[key] = _Sorted(self.column(key))
        return found

    def lacking_row(self, key: str) -> List[bool]:
        """Per node, whether it lacks ``key`` (a resource asked for that
        not every node has). O(L) the first time."""
        found = self.rows.get(key)
        if found is None:
            lack = self.lacking.get(key, self.everyone)
            found = self.rows[key] = [bool(lack >> index & 1)
                                      for index in range(len(self.positions))]
        return found


#: What a node without a resource reads in its layout's column for it
#: (never less than a quantity asked; a node lacking a resource the workload
#: asks for is counted as missing it first).
_ABSENT = Decimal("Infinity")


def _canonical(keys: Tuple[str, ...], together: Set[Tuple[str, str]], negative: Set[str],
               rank: Dict[str, int]) -> Tuple[str, ...]:
    """``keys`` (a node's names, in its order) in the order that keeps
    every pair of them that may refuse one workload as the node has it
    (see :func:`nowhere_lines`) and puts the others by ``rank``: of the
    keys no such pair puts after one still left, the least ranked, in
    turn. O(R^2 + R log R)."""
    size = len(keys)
    # (per key, how many keys before it it must follow, and which follow it)
    waiting = [0] * size
    following: List[List[int]] = [[] for _ in keys]
    for at, first in enumerate(keys):
        loose = first not in negative
        for later in range(at + 1, size):
            second = keys[later]
            if not loose or second in negative or (first, second) in together \
                    or (second, first) in together:
                waiting[later] += 1
                following[at].append(later)
    ready = [(rank[key], at) for at, key in enumerate(keys) if not waiting[at]]
    heapify(ready)
    found: List[str] = []
    while ready:
        _, at = heappop(ready)
        found.append(keys[at])
        for later in following[at]:
            waiting[later] -= 1
            if not waiting[later]:
                heappush(ready, (rank[keys[later]], later))
    return tuple(found)


def _agrees(order: Dict[str, int], keys: Sequence[str]) -> bool:
    """Whether the keys of ``keys`` that ``order`` places come in its order."""
    last = -1
    for key in keys:
        place = order.get(key)
        if place is not None:
            if place < last:
                return False
            last = place
    return True


def _ordered(chains: Sequence[Sequence[str]]) -> Optional[List[str]]:
    """One order of every key of ``chains`` that keeps the order of each
    (the keys in order of first appearance where free), or ``None`` when
    they disagree. O(K log K) for K keys in all."""
    first: Dict[str, int] = {}
    after: Dict[str, Set[str]] = {}
    waiting: Dict[str, int] = {}
    for chain in chains:
        for key in chain:
            if key not in first:
                first[key] = len(first)
                after[key] = set()
                waiting[key] = 0
        for key, following in zip(chain, chain[1:]):
            if following not in after[key]:
                after[key].add(following)
                waiting[following] += 1
    keys = list(first)
    ready = [place for key, place in first.items() if not waiting[key]]
    heapify(ready)
    found: List[str] = []
    while ready:
        key = keys[heappop(ready)]
        found.append(key)
        for following in after[key]:
            waiting[following] -= 1
            if not waiting[following]:
                heappush(ready, first[following])
    return found if len(found) == len(keys) else None


def _merged(first: Sequence[str], second: Sequence[str],
            places: Mapping[str, int]) -> Optional[List[str]]:
    """One order of the keys of both, keeping each one's order (their
    shared keys come in the same order in both: see :func:`_agrees`;
    ``places``: where each key of ``first`` sits in it): each key of
    ``second`` that ``first`` lacks comes just before the next shared key
    after it in ``second`` (after the keys of ``first`` before that one),
    or last. ``None`` when ``first`` has every key of ``second``.
    O(len(first)) in C, and O(len(second))."""
    merged: List[str] = []
    start = 0
    waiting: List[str] = []
    new = False
    for key in second:
        at = places.get(key)
        if at is None:
            waiting.append(key)
            new = True
        elif waiting:
            merged.extend(first[start:at])
            merged.extend(waiting)
            start = at
            waiting = []
    if not new:
        return None
    merged.extend(first[start:])
    merged.extend(waiting)
    return merged


class _Sorted:
    """A column in ascending order of its values (ties in the layout's
    order), with the set of its first ``c x`` :data:`STEP` nodes kept as
    bits (bit ``i``: the layout's ``i``-th node) for every ``c``: the nodes
    below any quantity are a run from the start of this order, found by
    bisection, and their set is a kept one and at most ``STEP - 1`` bits
    more. Cost: O(L log L) to make, O(L^2 / STEP) bits kept."""

    __slots__ = ("values", "order", "marks", "made", "room")

    def __init__(self, column: List[Decimal]):
        self.made: Dict[int, int] = {}  # (number: the set of the first ``number`` nodes)
        self.room = max(16, MADE_BYTES // (len(column) // 8 + 1))  # (how many it keeps)
        self.order = sorted(range(len(column)), key=column.__getitem__)
        order = self.order
        self.values = list(map(column.__getitem__, order))
        marks = [0]
        bits = 0
        for end in range(STEP, len(order) + 1, STEP):  # (each run's bits joined in C)
            bits = reduce(or_, map(_BIT, order[end - STEP:end]), bits)
            marks.append(bits)
        self.marks = marks

    def first(self, number: int) -> int:
        """The set of the first ``number`` nodes of the order. O(STEP), O(1)
        again while kept (:data:`MADE_BYTES`)."""
        bits = self.made.get(number)
        if bits is not None:
            return bits
        kept = number // STEP
        bits = self.marks[kept]
        order = self.order
        for at in range(kept * STEP, number):
            bits |= 1 << order[at]
        if len(self.made) < self.room:
            self.made[number] = bits
        return bits

    def below(self, needed: Decimal) -> Tuple[int, int]:
        """How many nodes have less than ``needed``, and their set."""
        number = bisect_left(self.values, needed)
        return number, self.first(number)

    def highest(self, among: int, number: int) -> int:
        """The place in the order of the last node of ``among`` (a set of
        nodes all among the first ``number``): it has the most of them.
        The kept sets hold ever more of the order, so the first holding all
        of ``among`` is found by bisection, and the node among the
        :data:`STEP` before it. O(log L + STEP) operations on sets."""
        marks = self.marks
        low, high = 0, len(marks)  # (``high``: past every kept set)
        while low < high:
            middle = (low + high) // 2
            if among & marks[middle] == among:
                high = middle
            else:
                low = middle + 1
        order = self.order
        for at in range(min(low * STEP, number) - 1, (low - 1) * STEP - 1, -1):
            if among >> order[at] & 1:
                return at
        raise ValueError("no node")  # (never: ``among`` is not empty)


def nowhere_lines(order: Order, loads: Sequence[Workload]) -> List[Optional[str]]:
    """Per workload of ``loads``, its explanation's line against the nodes
    of ``order`` when it fits none of them; ``None`` when it fits some
    (their aversion groups then matter: ask ``explain_all``).

    Cost: see the module docstring.
    """
    grouped: Dict[Tuple[str, ...], Tuple[List[int], List[Dict[str, Decimal]]]] = {}
    asked: Set[str] = set().union(*(load.requirements for load in loads))
    # A node's resource refuses some workload of the batch only if the node
    # has less of it left than the most a workload asks for (or zero, as
    # for any resource): the others (a tag asked for, more than anyone asks)
    # matter only to those that ask for what the node lacks.
    bars: Dict[str, Decimal] = {}
    for load in loads:
        for key, needed in load.requirements.items():
            if needed > bars.get(key, ZERO):
                bars[key] = needed
    # A node's names: the resources that can refuse some workload of the
    # batch, in its order.
    names_of: List[Optional[Tuple[str, ...]]] = [
        None if closed else
        tuple([key for key, left in remaining.items() if left < bars.get(key, ZERO)])
        for _, remaining, closed in order]
    cordoned = [position for position, names in enumerate(names_of) if names is None]
    # (the names some open node has less than zero of: among its names,
    # as the most asked is never below zero; only the nodes whose least
    # is below zero, found in C, are gone through)
    negative = {key for names, (_, remaining, _) in zip(names_of, order)
                if names and min(remaining.values()) < ZERO
                for key in names if remaining[key] < ZERO}
    words = _Words()
    if KEPT and BITS <= FEW and \
            len(set(names_of)) * DISTINCT > len(order) - len(cordoned):
        # (most nodes have names of their own, as with a few kinds of device
        # among hundreds: grouping them into layouts would cost more than
        # gathering, per set of names asked, the nodes having them)
        direct = _direct(order, loads, asked, names_of, negative)
        if direct is not None:
            kept_lines: Dict[Any, _Kept] = {}
            return [_line(load, [], [], cordoned, len(order), kept_lines, words, direct)
                    for load in loads]
    # Only the order of two names that refuse one workload matters (both
    # asked for by it, or one below zero on some node, which refuses any
    # workload not immune to it): a node's names are put in an order that
    # keeps those pairs as the node has them, the others as first met in
    # the batch, so that nodes listing devices in orders of their own are
    # counted together.
    together = {pair for names in {tuple(load.requirements) for load in loads}
                for pair in combinations(names, 2)}
    rank: Dict[str, int] = {}
    canonical: Dict[Tuple[str, ...], Tuple[str, ...]] = {}
    for position, keys in enumerate(names_of):
        if keys is None:
            continue
        found = canonical.get(keys)
        if found is None:
            for key in keys:
                rank.setdefault(key, len(rank))
            found = canonical[keys] = _canonical(keys, together, negative, rank)
        positions, remainings = grouped.setdefault(found, ([], []))
        positions.append(position)
        remainings.append(order[position][1])
    # Sets of names whose orders agree are counted together, largest first,
    # up to :data:`BITS_MOST` nodes (a larger one alone; see :data:`TRIES`).
    merged: List[Tuple[List[str], Dict[str, int], List[Any], List[int]]] = []
    by_size = sorted(grouped.items(), key=lambda item: -len(item[1][0]))
    for keys, (positions, remainings) in by_size:
        member = (keys, positions, remainings)
        for names, places, members, size in merged[:TRIES]:
            if size[0] + len(positions) > BITS_MOST or \
                    len(places) + len(keys) > NAMES and not places.keys() >= set(keys):
                continue
            if _agrees(places, keys):
                grown = _merged(names, keys, places)
                if grown is not None:
                    names[:] = grown
                    places.clear()
                    places.update(zip(names, count()))
            else:
                agreed = _ordered([chain for chain, _, _ in members] + [keys]) \
                    if len(members) <= JOINS else None
                if agreed is None:
                    continue
                names[:] = agreed
                places.clear()
                places.update(zip(names, count()))
            members.append(member)
            size[0] += len(positions)
            break
        else:
            merged.append((list(keys), {key: place for place, key in enumerate(keys)},
                           [member], [len(positions)]))
    layouts = []
    singles: List[Tuple[int, Dict[str, Decimal]]] = []
    for names, _, members, size in merged:
        if size[0] >= FEW:
            layouts.append(_Layout(names, members, asked))
        else:
            singles.extend((position, remaining) for _, positions, remainings in members
                           for position, remaining in zip(positions, remainings))
    # (workloads that meet the nodes alike share a line: see :func:`_line`)
    kept: Optional[Dict[Any, _Kept]] = {} if KEPT and all(
        layout.refused_by is _refused_by_bits for layout in layouts) else None
    lacking = _Lacking(layouts, asked, order) if kept is not None and len(layouts) > 1 else None
    return [_line(load, layouts, singles, cordoned, len(order), kept, words, lacking)
            for load in loads]


def _direct(order: Order, loads: Sequence[Workload], asked: Set[str],
            names_of: Sequence[Optional[Tuple[str, ...]]],
            negative: Set[str]) -> Optional["_Lacking"]:
    """The open nodes as one :class:`_Lacking` without layouts, when every
    workload of ``loads`` can be counted without them: at most
    :data:`DIRECT` nodes have every resource it asks for (each checked
    alone), or every open node has them, or at most one in :data:`GATHER`
    does, and no more than :data:`BITS_MOST` (they are then counted as
    layouts of their own, :meth:`_Lacking.own`). ``None`` otherwise.
    O(N x R), and O(R) operations on sets of N bits per set of names
    asked (:meth:`_Lacking.of`, which the lines then read again)."""
    lacking = _Lacking(None, asked, order)
    lacking.names_of = names_of
    lacking.negative = negative
    total = lacking.count
    for names in {tuple(load.requirements) for load in loads}:
        number = lacking.holders(names)[1]
        if number <= DIRECT:
            continue
        if number > BITS_MOST or number < total < number * GATHER:
            return None
    return lacking


#: What :meth:`_Lacking.of` gives for the layouts to count on when, without
#: layouts, more than :data:`DIRECT` nodes have every resource asked for.
_MANY = [0]


class _Lacking:
    """The nodes of every layout lacking a resource asked for, as one set of
    bits over their positions (each layout's nodes apart in ``masks``):
    which nodes lack a resource, and which lacked none before it in the
    order a workload names them, does not depend on the layout's order of
    names. So the refusals for want of a resource are counted once over
    every layout, and a layout where every node lacks one is not counted
    at all (a workload asking for two kinds of device among hundreds meets
    nodes having both in one layout or two). Made without layouts (see
    :func:`_direct`), it holds every open node, and the nodes having every
    resource a workload asks for make layouts of their own (:meth:`own`).
    O(N x R) bits to make; per set of names asked, O(R) operations on N
    bits once."""

    __slots__ = ("nodes", "count", "having", "masks", "known", "held", "asked", "gathered", "seen",
                 "everywhere", "order", "made", "direct", "gathered_own", "names_of", "negative",
                 "written", "alone")

    def __init__(self, layouts: Optional[List["_Layout"]], asked: Set[str],
                 order: Order) -> None:
        self.asked = asked
        self.order = order  # (the nodes by position: what a node checked alone has left)
        # (per names asked and immunities: see :meth:`gather`; the layout,
        # or ``None`` for none; and those seen once)
        self.gathered: Dict[Any, Optional[_Layout]] = {}
        self.seen: Set[Any] = set()
        # (the layouts gathered, per their nodes and the immunities they
        # were gathered for: see :meth:`gather`)
        self.made: Dict[Any, List[_Layout]] = {}
        self.masks = []
        # (without layouts, see :func:`_direct`: every open node; and per
        # names asked and immunities, the layouts of the nodes having
        # them all and those checked alone, see :meth:`own`)
        self.direct = layouts is None
        self.gathered_own: Dict[Any, Tuple[List[_Layout], List[int]]] = {}
        # (set by :func:`_direct`: each node's names, see :func:`nowhere_lines`,
        # and the names some open node has less than zero of)
        self.names_of: Sequence[Optional[Tuple[str, ...]]] = ()
        self.negative: Set[str] = set()
        # (per names asked: the parts of a line for the nodes lacking one
        # and the cordoned, see :func:`_apart_line`)
        self.written: Dict[Tuple[str, ...], List[Tuple[int, int, str]]] = {}
        # (per resource: what :meth:`of` finds of it when it is the first
        # resource asked that some node lacks)
        self.alone: Dict[str, Tuple[int, int, int]] = {}
        having: Dict[str, int] = {}
        nodes = 0
        if layouts is None:
            for position, (_, remaining, closed) in enumerate(order):
                if closed:
                    continue
                bit = 1 << position
                nodes |= bit
                for key in remaining:
                    if key in asked:
                        having[key] = having.get(key, 0) | bit
        for layout in layouts or ():
            mask = 0
            for position, remaining in zip(layout.positions, layout.remainings):
                bit = 1 << position
                mask |= bit
                for key in remaining:
                    if key in asked:
                        having[key] = having.get(key, 0) | bit
            self.masks.append(mask)
            nodes |= mask
        self.nodes = nodes
        self.count = _popcount(nodes)
        self.having = having
        # (the resources every node has: none lacks them)
        self.everywhere = {key for key, bits in having.items() if bits == nodes}
        # (per names asked, in order: the refusals for want of one, as
        # (resource, how many, first position), and the layouts where some
        # node has them all, with their places)
        self.known: Dict[Tuple[str, ...],
                         Tuple[List[Tuple[str, int, int]], List[int], List[int]]] = {}
        # (and the nodes having them all, as bits, and how many: see
        # :meth:`holders`)
        self.held: Dict[Tuple[str, ...], Tuple[int, int]] = {}

    def of(self, names: Tuple[str, ...]) -> Tuple[List[Tuple[str, int, int]], List[int],
                                                  List[int]]:
        """For a workload asking for ``names`` (in order): the refusals for
        want of one, as (resource, how many, first position); the layouts
        where some node has them all; and, when at most :data:`DIRECT`
        nodes have them all, their positions instead of those layouts
        (none then: each of those nodes is checked alone)."""
        found = self.known.get(names)
        if found is None:
            having, everywhere = self.having, self.everywhere
            left = self.nodes  # (those lacking none of the names so far)
            number = self.count  # (how many)
            refusals = []
            for key in names:
                if key in everywhere:
                    continue
                if left is self.nodes:  # (the first some node lacks: once per resource)
                    alone = self.alone.get(key)
                    if alone is None:
                        kept = having.get(key, 0)  # (of open nodes only)
                        counted = _popcount(kept)
                        alone = self.alone[key] = (
                            kept, counted, _lowest(left ^ kept) if counted < number else 0)
                    kept, counted, first = alone
                    if counted < number:
                        refusals.append((key, number - counted, first))
                        left, number = kept, counted
                    continue
                kept = left & having.get(key, 0)
                counted = _popcount(kept)
                if counted < number:  # (some lack it: how many, and the first)
                    refusals.append((key, number - counted, _lowest(left ^ kept)))
                    left, number = kept, counted
            if number <= DIRECT:
                found = (refusals, [], _few_indices(left))
            elif self.direct:
                found = (refusals, _MANY, [])
            else:
                found = (refusals, [at for at, mask in enumerate(self.masks) if left & mask], [])
            self.known[names] = found
            self.held[names] = (left, number)
        return found

    def holders(self, names: Tuple[str, ...]) -> Tuple[int, int]:
        """The nodes having every one of ``names`` (as bits) and how many
        they are, as :meth:`of` found them. O(1) again for the same names."""
        self.of(names)
        return self.held[names]

    def own(self, load: Workload, names: Tuple[str, ...]) -> Tuple[List[_Layout], List[int]]:
        """Without layouts (see :func:`_direct`): the open nodes having
        every resource ``load`` asks for (``names``), as layouts of their
        own, and those of too few nodes to make one (fewer than
        :data:`FEW`), to be checked alone. A node's keys are those that can
        refuse ``load``, not immune to: asked for, where it has less than
        the most a workload of the batch asks, or below zero on some node
        (see :func:`nowhere_lines`). Nodes whose keys' orders agree make
        one layout (those of one order first, then the orders in turn, each
        joining the first layout it agrees with). Made once per names
        asked and immunities; where the same nodes made a layout for names
        that include these, it is counted on, as :meth:`gather` does.
        O(H x R) for H nodes the first time, O(1) again."""
        key = (names, load.immunities)
        found = self.gathered_own.get(key)
        if found is not None:
            return found
        order, names_of, asked = self.order, self.names_of, set(names)
        # (of a node's names, those that can refuse some workload of the
        # batch: those ``load`` asks for or some open node has less than
        # zero of, not immune to)
        relevant = (asked | self.negative) - load.immunities
        chains: Dict[Tuple[str, ...], List[int]] = {}
        for position in _indices(self.holders(names)[0]):
            chain = tuple(filter(relevant.__contains__, names_of[position] or ()))
            found_positions = chains.get(chain)
            if found_positions is None:
                chains[chain] = [position]
            else:
                found_positions.append(position)
        # (per group: its chains, nodes, keys in order and their places)
        groups: List[Tuple[List[Tuple[str, ...]], List[int], List[str], Dict[str, int]]] = []
        for chain, positions in chains.items():
            for members, places, keys, rank in groups:
                if _agrees(rank, chain):  # (most often: the same order, or part of it)
                    agreed = _merged(keys, chain, rank)
                else:
                    agreed = _ordered(members + [chain])
                    if agreed is None:
                        continue
                if agreed is not None:
                    keys[:] = agreed
                    rank.clear()
                    rank.update(zip(keys, count()))
                members.append(chain)
                places.extend(positions)
                break
            else:
                groups.append(([chain], list(positions), list(chain),
                               {key: at for at, key in enumerate(chain)}))
        layouts: List[_Layout] = []
        alone: List[int] = []
        for _, places, keys, _ in groups:
            if len(places) < FEW:
                alone.extend(places)
                continue
            places.sort()
            same = self.made.setdefault((tuple(places), load.immunities), [])
            for layout in same:
                if layout.names.issuperset(names) and list(layout.visit(load)) == keys:
                    break
            else:
                layout = _Layout(keys, [(keys, places, [order[at][1] for at in places])],
                                 asked, holding=True, below_zero=self.negative, ordered=True)
                same.append(layout)
            layouts.append(layout)
        alone.sort()
        found = self.gathered_own[key] = (layouts, alone)
        return found

    def gather(self, load: Workload, names: Tuple[str, ...],
               layouts: List[_Layout]) -> Optional[_Layout]:
        """The nodes of ``layouts`` (those where some node has every
        resource ``load`` asks for, ``names``) having them all, as one
        layout of their own, from the second workload asking for the same
        names with the same immunities on. Its keys are only the names
        that can refuse ``load``, in an order agreeing with each layout's
        (so with each node's): a workload asking for one kind of device
        among hundreds is counted once over its few holders instead of
        once per layout they sit in, and one asking for none of them once
        over every node.

        ``None`` for the first such workload, and where those nodes are
        at most :data:`DIRECT`, more than :data:`BITS_MOST`, more than one
        in :data:`GATHER` of the nodes of ``layouts`` but not all of them,
        or in layouts whose orders of those names disagree. O(H x R) for H
        nodes the first time, O(1) again."""
        key = (names, load.immunities)
        if key in self.gathered:
            return self.gathered[key]
        if key not in self.seen:
            self.seen.add(key)
            return None
        self.gathered[key] = None
        positions: List[int] = []
        remainings: List[Dict[str, Decimal]] = []
        size = 0
        for layout in layouts:
            size += len(layout.positions)
            for at in _indices(layout.everyone ^ layout.lacked(load, names)[0]):
                positions.append(layout.positions[at])
                remainings.append(layout.remainings[at])
        if len(positions) <= DIRECT or len(positions) > BITS_MOST \
                or len(positions) < size < len(positions) * GATHER:
            return None
        order = _ordered([layout.visit(load) for layout in layouts])
        if order is None:
            return None
        # (the same nodes gathered for names that include these, with more
        # keys around the same ones in the same order, as cpu, memory, disk
        # and a kind against cpu, memory and the kind, are counted on too)
        same = self.made.setdefault((tuple(positions), load.immunities), [])
        for found in same:
            if found.names.issuperset(names) and list(found.visit(load)) == order:
                self.gathered[key] = found
                return found
        # (only workloads asking for ``names`` are counted here)
        found = self.gathered[key] = _Layout(order, [(order, positions, remainings)],
                                             set(names), holding=True)
        same.append(found)
        return found


#: The mark of a line counted over a gathered layout (see
#: :meth:`_Lacking.gather`) among the places that key kept lines.
_GATHERED = "gathered"


#: A line kept for workloads that meet the nodes alike (see :func:`_line`):
#: its parts, each a text or, for a shortfall, (count, resource, most
#: left), written with the workload's own quantity.
_Kept = List[Any]
#: A layout whose keys and names asked are fewer than this looks up those
#: in each node's resources, instead of going through all of them.
NARROW = 16
#: Lines kept per batch, at most (then no more are kept).
KEPT = 1 << 16


class _Words:
    """The words of a batch's lines, each made once: per kind and resource
    for refusals that name no quantity, per quantity for the others (by
    value: equal quantities are written alike, but for those no float
    holds, written as they are, each time)."""

    __slots__ = ("plain", "numbers")

    def __init__(self) -> None:
        self.plain: Dict[Tuple[str, str], str] = {}
        self.numbers: Dict[Decimal, str] = {}

    def number(self, quantity: Decimal) -> str:
        text = self.numbers.get(quantity)
        if text is None:
            plain = to_number(quantity)
            text = number_text(plain)
            if type(plain) is not Decimal:
                self.numbers[quantity] = text
        return text

    def part(self, kind: str, resource: str, number: int) -> str:
        """The part of a line for ``number`` refusals of a kind that names
        no quantity (missing, below zero, cordoned)."""
        text = self.plain.get((kind, resource))
        if text is None:
            text = self.plain[kind, resource] = str(Reason(kind, resource))
        return f"{number} {text}"


def _line(load: Workload, layouts: List[_Layout],
          singles: List[Tuple[int, Dict[str, Decimal]]], cordoned: List[int],
          total: int, kept: Optional[Dict[Any, _Kept]], words: _Words,
          lacking: Optional[_Lacking] = None) -> Optional[str]:
    requirements = load.requirements
    known: Any = None
    wanting: List[Tuple[str, int, int]] = []
    # (each node checked alone: its reason, read once)
    reasons: List[Tuple[int, Any]] = []
    names = tuple(requirements)
    if lacking is not None:
        # (the refusals for want of a resource, counted over every layout;
        # only the layouts where some node has every resource asked are
        # counted on, from what their nodes lack, or, where those nodes
        # are few, each of them alone)
        wanting, live, apart = lacking.of(names)
        if not live:
            # (no layout is counted on: every node lacks a resource asked
            # for but the few having them all, each checked alone, as for
            # two kinds of device among hundreds; such lines are rarely
            # shared, and cost less to count than to key for sharing)
            if not singles:
                return _apart_line(load, names, lacking, apart, cordoned, total, words)
            kept = None  # (the nodes checked alone may lack one too: counted together)
            layouts = []
        elif lacking.direct:  # (the nodes having them all: layouts of their own)
            layouts, lone = lacking.own(load, names)
            if lone and not _refused_alone(
                    load, [(position, lacking.order[position][1]) for position in lone],
                    reasons):
                return None
        else:
            layouts = [layouts[at] for at in live]
        if apart and not _refused_alone(
                load, [(position, lacking.order[position][1]) for position in apart], reasons):
            return None
    if kept is not None:
        # Counted as sets of bits, a layout refuses the same nodes the same
        # way to every workload that asks for the same resources, is immune
        # to the same, and falls at the same place of each sorted column
        # until every node has failed: such workloads share their line but
        # for the quantities they need.
        places: List[Any] = [names, load.immunities]
        if lacking is not None and len(layouts) > 1:
            gathered = lacking.gather(load, names, layouts)
            if gathered is not None:
                layouts = [gathered]
                places.append(_GATHERED)
        walks = []
        counted = []
        alone = []  # (layouts whose nodes were checked alone)
        for layout in layouts:
            lacked, few = layout.lacked(load, names)
            if few is not None:
                # (the few nodes having every resource asked, each checked
                # alone as the small layouts' nodes are: which nodes they
                # are follows from the names asked, as a walk's layouts do)
                remainings, positions = layout.remainings, layout.positions
                if not _refused_alone(load, [(positions[at], remainings[at]) for at in few],
                                      reasons):
                    return None
                alone.append(layout)
                continue
            steps = layout.reach(load, lacked)
            if steps is None:
                return None  # (some node of the layout takes it)
            # (with the resources: a resource where no node is short has no
            # step, so two workloads may fall at the same places on other
            # resources; of the last, the resource alone: it refuses every
            # node the steps before it left, however much the workload
            # needs, so that workloads of quantities of their own share a
            # line whenever they fall at the same places on the others)
            places.append(tuple(map(_KEY_AND_NUMBER, steps[:-1])) + (steps[-1][0],)
                          if steps else ())
            walks.append(steps)
            counted.append(layout)
    if singles and not _refused_alone(load, singles, reasons):
        return None
    if kept is not None:
        if reasons:
            places.extend([(kind, resource, id(left))
                           for _, (kind, resource, _, left) in reasons])
        known = tuple(places)
        parts = kept.get(known)
        if parts is not None:
            return _written(parts, requirements, total, words)
        if len(kept) >= KEPT:
            kept = None
    tally: _Tally = {}
    if cordoned:
        tally[CORDONED, ""] = [len(cordoned), cordoned[0], None, None, 0]
    for key, number, first in wanting:  # (each resource once, the first of its kind)
        tally[MISSING, key] = [number, first, None, None, 0]
    if known is not None:
        # (every layout counted as sets of bits, from the steps of its reach)
        if lacking is None:
            for layout in alone:
                _missing(layout, load, tally)  # (its nodes lacking a resource asked)
        for layout, steps in zip(counted, walks):
            if not _refused_by_bits(layout, load, tally, steps,
                                    None if lacking is None else layout.lacked(load, names)[0]):
                return None
    else:
        for layout in layouts:
            if not layout.refused_by(layout, load, tally):
                return None
    for position, (kind, resource, needed, left) in reasons:
        _add(tally, kind, resource, 1, position, needed,
             left if kind == INSUFFICIENT else None, position)
    # (most refusals first, then by their first node: no two kinds of
    # refusal share a first node, so the tuples never compare further)
    ranked = sorted([(-entry[0], entry[1], kind, resource, entry[3])
                     for (kind, resource), entry in tally.items()])
    numeral = words.number
    if kept is None:  # (written at once: no parts kept to write again)
        return one_line(0, 0, total, [
            f"{-negated} {shortfall(resource, numeral(requirements[resource]), numeral(most))}"
            if kind == INSUFFICIENT else words.part(kind, resource, -negated)
            for negated, _, kind, resource, most in ranked])
    parts = [(-negated, resource, numeral(most)) if kind == INSUFFICIENT
             else words.part(kind, resource, -negated)
             for negated, _, kind, resource, most in ranked]
    kept[known] = parts
    return _written(parts, requirements, total, words)


def _apart_line(load: Workload, names: Tuple[str, ...], lacking: _Lacking, apart: List[int],
                cordoned: List[int], total: int, words: _Words) -> Optional[str]:
    """:func:`_line` of a workload asking for ``names`` where no layout is
    counted on and no node is checked alone but ``apart``: every node
    lacks one of them (counted by ``lacking``, :meth:`_Lacking.of`), is
    cordoned, or is one of the few having them all (``apart``). ``None``
    when one of those takes it. The parts for the nodes lacking one and
    the cordoned are written once per ``names``; the few having them all
    lack none, so their parts never meet those. O(R) plus one check per
    node of ``apart``."""
    tally: _Tally = {}
    if not _tally_alone(load, apart, lacking.order, tally):
        return None
    parts = lacking.written.get(names)
    if parts is None:
        parts = [(-many, first, words.part(MISSING, key, many))
                 for key, many, first in lacking.of(names)[0]]
        if cordoned:
            parts.append((-len(cordoned), cordoned[0], words.part(CORDONED, "", len(cordoned))))
        parts = lacking.written[names] = sorted(parts)
    if tally:
        # (most refusals first, then by their first node: no two share a
        # first node, so the tuples never compare further)
        requirements, numeral = load.requirements, words.number
        parts = sorted(parts + [
            (-entry[0], entry[1],
             f"{entry[0]} {shortfall(resource, numeral(requirements[resource]), numeral(entry[3]))}"
             if kind == INSUFFICIENT else words.part(kind, resource, entry[0]))
            for (kind, resource), entry in tally.items()])
    return one_line(0, 0, total, [text for _, _, text in parts])


def _tally_alone(load: Workload, positions: List[int], order: Order, tally: _Tally) -> bool:
    """Check each node of ``order`` at ``positions`` alone, counting its
    refusal in ``tally``; ``False`` as soon as one takes ``load``."""
    for position in positions:
        reason = first_refusal(order[position][1], load)
        if reason is None:
            return False
        kind, resource, needed, left = reason
        _add(tally, kind, resource, 1, position, needed,
             left if kind == INSUFFICIENT else None, position)
    return True


def _refused_alone(load: Workload, nodes: Sequence[Tuple[int, Dict[str, Decimal]]],
                   reasons: List[Tuple[int, Any]]) -> bool:
    """Check each of ``nodes`` (position, room left) alone, adding its
    refusal to ``reasons``; ``False`` as soon as one takes ``load``."""
    for position, remaining in nodes:
        reason = first_refusal(remaining, load)
        if reason is None:
            return False
        reasons.append((position, reason))
    return True


def _written(parts: List[Any], requirements: Mapping[str, Decimal], total: int,
             words: _Words) -> str:
    """The line of a workload of ``requirements`` from its kept ``parts``."""
    summary = []  # (a loop, not a comprehension: this runs once per line)
    for part in parts:
        summary.append(part if type(part) is str else f"{part[0]} " + shortfall(
            part[1], words.number(requirements[part[1]]), part[2]))
    return one_line(0, 0, total, summary)


def _refused_by(layout: _Layout, load: Workload, tally: _Tally) -> bool:
    """Count, in ``tally``, why each node of ``layout`` refuses ``load``;
    ``False`` (and a partial count) as soon as one of them takes it."""
    # per node: lacks a resource asked for, or failed on an earlier one
    failed = _missing_list(layout, load, tally)
    if failed is not None and False not in failed:
        return True
    positions = layout.positions
    requirements = load.requirements
    for key in layout.visit(load):
        needed = requirements.get(key, ZERO)
        lowest = layout.lowest_of(key)
        if not lowest < needed:
            continue  # no node fails here
        column = layout.column(key)
        below = list(map(lt, column, repeat(needed)))
        new = below if failed is None else list(map(gt, below, failed))  # (and not)
        if True not in new:
            continue
        if lowest < ZERO:
            negative = list(map(and_, new, map(lt, column, repeat(ZERO))))
            if True in negative:
                _add(tally, NOT_TOLERATED, key, sum(negative),
                     positions[negative.index(True)], needed, None, 0)
                new = list(map(gt, new, negative))
        if True in new:
            most = max(compress(column, new))
            at = next(compress(count(), map(and_, new, map(eq, column, repeat(most)))))
            _add(tally, INSUFFICIENT, key, sum(new), positions[new.index(True)], needed,
                 most, positions[at])
        failed = below if failed is None else list(map(or_, failed, below))
        if False not in failed:
            return True
    return False


def _missing(layout: _Layout, load: Workload, tally: Optional[_Tally]) -> int:
    """The nodes of ``layout`` (as bits) that lack a resource ``load`` asks
    for, each counted in ``tally`` for the first it lacks (when given: a
    workload's reach needs the nodes only). O(R) operations on sets of
    bits."""
    requirements = load.requirements
    if layout.names.issuperset(requirements):
        return 0
    failed = 0
    lacking, names = layout.lacking, layout.names
    for key in requirements:
        if key in names:
            continue  # (every node has it)
        new = lacking.get(key, layout.everyone)
        new ^= new & failed
        if new:
            if tally is not None:
                _add(tally, MISSING, key, _popcount(new), layout.positions[_lowest(new)], None,
                     None, 0)
            failed |= new
    return failed


def _missing_list(layout: _Layout, load: Workload, tally: _Tally) -> Optional[List[bool]]:
    """:func:`_missing` for a layout counted a column at a time: per node,
    whether it lacks one (``None`` when none does)."""
    requirements = load.requirements
    if layout.names.issuperset(requirements):
        return None
    failed: Optional[List[bool]] = None
    for key in requirements:
        if key in layout.names:
            continue
        lack = layout.lacking_row(key)
        new = lack if failed is None else list(map(gt, lack, failed))
        if True in new:
            positions = layout.positions
            _add(tally, MISSING, key, sum(new), positions[new.index(True)], None, None, 0)
            failed = new if failed is None else list(map(or_, failed, new))
    return failed


def _refused_by_bits(layout: _Layout, load: Workload, tally: _Tally,
                     steps: Optional[List[_Step]] = None, lacked: Optional[int] = None) -> bool:
    """:func:`_refused_by`, with each resource's failing nodes found by
    bisection in its sorted column and kept as bits: O(log L + L / 30) per
    resource instead of O(L) comparisons of Decimals (the sets are machine
    words; most of it runs in C), so that many workloads of their own
    quantities, each explained against the same nodes, do not each pay a
    pass over them all. The same counts, first nodes and most left.
    ``steps``: those of the workload's :meth:`_Layout.reach`, when the
    caller took it; ``lacked``: the nodes lacking a resource asked for,
    when the caller counted them (see :class:`_Lacking`)."""
    requirements = load.requirements
    # the nodes that lack a resource asked for, or failed on an earlier one
    if lacked is not None:
        failed = lacked
    else:
        failed = 0 if layout.names.issuperset(requirements) else _missing(layout, load, tally)
    everyone = layout.everyone
    if failed == everyone:
        return True
    positions = layout.positions
    if steps is None:
        steps = layout.walk(load, failed)[0]
    for key, needed, lowest, index, number, below in steps:
        new = below ^ (below & failed)
        if not new:
            continue
        if lowest < ZERO:
            negative = new & index.below(ZERO)[1]
            if negative:
                _add(tally, NOT_TOLERATED, key, _popcount(negative),
                     positions[_lowest(negative)], needed, None, 0)
                new ^= negative
        if new:
            # (the most left: the last of ``new`` in the sorted order; the
            # first node in order of those with as much, its value as written;
            # equal values sit in the layout's order in the sorted one)
            values = index.values
            if new == below:  # (no node of the run failed before: its last)
                at = index.order[bisect_left(values, values[number - 1])]
            else:
                place = index.highest(new, number)
                most = values[place]
                if not place or values[place - 1] != most:
                    at = index.order[place]  # (the first with as much)
                else:
                    # (of those with as much, the first in the layout's order)
                    tied = new & index.first(bisect_right(values, most))
                    at = _lowest(tied ^ (tied & index.first(bisect_left(values, most))))
            _add(tally, INSUFFICIENT, key, _popcount(new), positions[_lowest(new)], needed,
                 layout.column(key)[at], positions[at])
        failed |= below
        if failed == everyone:
            return True
    return False


def _add(tally: _Tally, kind: str, resource: str, number: int, first: int,
         needed: Optional[Decimal], most: Optional[Decimal], at: int) -> None:
    """Count ``number`` refusals of ``kind`` for ``resource``, the first at
    position ``first``; for INSUFFICIENT, the most left of them ``most``,
    first at position ``at``."""
    known = tally.get((kind, resource))
    if known is None:
        tally[kind, resource] = [number, first, needed, most, at]
        return
    known[0] += number
    if first < known[1]:
        known[1] = first
        known[2] = needed
    if most is not None and (most > known[3] or (most == known[3] and at < known[4])):
        known[3] = most
        known[4] = at
