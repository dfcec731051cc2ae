"""Why workloads fit no node, counted over sorted columns of nodes.

The answer to a batch (:func:`~pylighthouse.problem.solve`, so the command
line and the HTTP endpoint) gives every workload left without a node one
line: ``0/N nodes fit`` and the refusals counted by kind and resource, the
line of its :class:`~pylighthouse.explain.Explanation`. Counting needs no
:class:`~pylighthouse.fit.Reason` per node.

Nodes whose remaining quantities name the same resources in the same order
(a *layout*: the nodes of one machine type share one) are counted a
resource at a time, in the order :func:`~pylighthouse.fit.check_fit`
follows, so that each node is counted once, for the first resource it
fails on. Each resource's quantities are sorted once (:class:`_Sorted`):
the nodes short of a workload's quantity are found by bisection, as a set
of bits, and the sets of the resources before it are taken away
(:func:`_refused_by_bits`), so that workloads of quantities of their own,
which share no explanation, each cost a few operations on machine words
per resource, not a comparison per node. A layout of more than
:data:`BITS_MOST` nodes compares its quantities with the workload's instead,
in C (``map``, :func:`_refused_by`). A layout leaves out the resources no
workload of the batch asks for and of which the node has nothing below
zero left (none of them can refuse for those): nodes that differ only by a
tag of their own (a hostname) share one. The nodes of layouts shared by
fewer than :data:`FEW` nodes are checked one by one with ``check_fit``.
A differential test holds the lines to those of
:meth:`~pylighthouse.Distributor.explain_all`, counted both ways.

Cost: O(N x R) once for N nodes, and O(L log L) to sort a resource of a
layout of L nodes the first time a workload is counted there; then per
workload, for each layout, O(R x (log L + L / 64)) (bisections and
operations on sets of L bits), or O(R) comparisons in C per node of a
layout too large for sets of bits, or one ``check_fit`` per node of the
small layouts.
"""
from bisect import bisect_left
from decimal import Decimal
from itertools import compress, count, repeat
from operator import and_, eq, gt, lt, or_
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Set, Tuple

from .explain import one_line, summary_parts
from .fit import CORDONED, INSUFFICIENT, MISSING, NOT_TOLERATED, Reason, check_fit
from .model import Workload
from .quantities import ZERO

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


def _lowest(bits: int) -> int:
    """The index of the lowest bit set in ``bits`` (not 0). O(size) in C."""
    return (bits & -bits).bit_length() - 1


#: The nodes in the strategy's order: (name, remaining, cordoned).
Order = Sequence[Tuple[str, Mapping[str, Decimal], bool]]
#: Per (kind, resource): [how many, first position, needed, most left,
#: position of the first node with the most left].
_Tally = Dict[Tuple[str, str], List[Any]]


class _Layout:
    """The open nodes whose remaining quantities name ``keys``, in order."""

    __slots__ = ("keys", "names", "positions", "columns", "lowest", "sorted", "refused_by")

    def __init__(self, keys: Tuple[str, ...], positions: List[int],
                 remainings: List[Mapping[str, Decimal]]):
        self.keys = keys
        self.names = frozenset(keys)
        self.positions = positions  # (in the strategy's order)
        self.columns = {key: [remaining[key] for remaining in remainings] for key in keys}
        self.lowest = {key: min(column) for key, column in self.columns.items()}
        self.sorted: Dict[str, _Sorted] = {}  # (made at a column's first use)
        # (how its refusals are counted, by its size: see :data:`BITS`)
        self.refused_by: Callable[[_Layout, Workload, _Tally], bool] = \
            _refused_by_bits if BITS <= len(positions) <= BITS_MOST else _refused_by

    def sorted_column(self, key: str) -> "_Sorted":
        found = self.sorted.get(key)
        if found is None:
            found = self.sorted[key] = _Sorted(self.columns[key])
        return found


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
        self.values = [column[index] for index in self.order]
        marks = [0]
        bits = 0
        for at, index in enumerate(self.order, 1):
            bits |= 1 << index
            if at % STEP == 0:
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
        O(STEP) per kept set passed."""
        order, marks = self.order, self.marks
        top = number
        bottom = number // STEP * STEP
        while top > 0:
            if top == number or (marks[top // STEP] ^ marks[bottom // STEP]) & among:
                for at in range(top - 1, bottom - 1, -1):
                    if among >> order[at] & 1:
                        return at
            top, bottom = bottom, bottom - STEP
        raise ValueError("no node")  # (never: ``among`` is not empty)

    def lowest_of(self, among: int, start: int) -> int:
        """The place in the order of the first node of ``among`` from place
        ``start`` on (there is one). O(places passed)."""
        order = self.order
        at = start
        while not among >> order[at] & 1:
            at += 1
        return at


def nowhere_lines(order: Order, loads: Sequence[Workload]) -> List[Optional[str]]:
    """Per workload of ``loads``, its explanation's line against the nodes
    of ``order`` when it fits none of them; ``None`` when it fits some
    (their aversion groups then matter: ask ``explain_all``).

    Cost: see the module docstring.
    """
    grouped: Dict[Tuple[str, ...], Tuple[List[int], List[Mapping[str, Decimal]]]] = {}
    cordoned: List[int] = []
    asked: Set[str] = set().union(*(load.requirements for load in loads))
    for position, (_, remaining, closed) in enumerate(order):
        if closed:
            cordoned.append(position)
            continue
        # (a resource no workload asks for, with nothing below zero left,
        # refuses none of them: a node's tag of its own does not split it off)
        keys = tuple(key for key, left in remaining.items() if key in asked or left < ZERO)
        positions, remainings = grouped.setdefault(keys, ([], []))
        positions.append(position)
        remainings.append(remaining)
    layouts = []
    singles: List[Tuple[int, Mapping[str, Decimal]]] = []
    for keys, (positions, remainings) in grouped.items():
        if len(positions) >= FEW:
            layouts.append(_Layout(keys, positions, remainings))
        else:
            singles.extend(zip(positions, remainings))
    return [_line(load, layouts, singles, cordoned, len(order)) for load in loads]


def _line(load: Workload, layouts: List[_Layout],
          singles: List[Tuple[int, Mapping[str, Decimal]]], cordoned: List[int],
          total: int) -> Optional[str]:
    tally: _Tally = {}
    if cordoned:
        tally[CORDONED, ""] = [len(cordoned), cordoned[0], None, None, 0]
    for layout in layouts:
        if not layout.refused_by(layout, load, tally):
            return None
    for position, remaining in singles:
        reason = check_fit(remaining, load)
        if reason is None:
            return None
        _add(tally, reason.kind, reason.resource, 1, position, reason.needed,
             reason.left if reason.kind == INSUFFICIENT else None, position)
    ranked = sorted(tally.items(), key=lambda item: (-item[1][0], item[1][1]))
    return one_line(0, 0, total, summary_parts(
        (Reason(kind, resource, needed, most), number, most)
        for (kind, resource), (number, _, needed, most, _) in ranked))


def _refused_by(layout: _Layout, load: Workload, tally: _Tally) -> bool:
    """Count, in ``tally``, why each node of ``layout`` refuses ``load``;
    ``False`` (and a partial count) as soon as one of them takes it."""
    if _missing(layout, load, tally):
        return True
    positions = layout.positions
    requirements = load.requirements
    immunities = load.immunities
    failed: Optional[List[bool]] = None  # per node: failed on an earlier resource
    for key in layout.keys:
        needed = requirements.get(key, ZERO)
        lowest = layout.lowest[key]
        if not lowest < needed or key in immunities:
            continue  # no node fails here
        column = layout.columns[key]
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


def _missing(layout: _Layout, load: Workload, tally: _Tally) -> bool:
    """Whether ``layout``'s nodes lack a resource ``load`` asks for (the
    first, counted in ``tally`` for them all). O(R)."""
    for key in load.requirements:
        if key not in layout.names:
            positions = layout.positions
            _add(tally, MISSING, key, len(positions), positions[0], None, None, 0)
            return True
    return False


def _refused_by_bits(layout: _Layout, load: Workload, tally: _Tally) -> bool:
    """:func:`_refused_by`, with each resource's failing nodes found by
    bisection in its sorted column and kept as bits: O(log L + L / 30) per
    resource instead of O(L) comparisons of Decimals (the sets are machine
    words; most of it runs in C), so that many workloads of their own
    quantities, each explained against the same nodes, do not each pay a
    pass over them all. The same counts, first nodes and most left."""
    if _missing(layout, load, tally):
        return True
    positions = layout.positions
    requirements = load.requirements
    immunities = load.immunities
    everyone = (1 << len(positions)) - 1
    failed = 0  # the nodes that failed on an earlier resource
    for key in layout.keys:
        needed = requirements.get(key, ZERO)
        lowest = layout.lowest[key]
        if not lowest < needed or key in immunities:
            continue  # no node fails here
        index = layout.sorted_column(key)
        number, below = index.below(needed)
        new = below & ~failed
        if not new:
            continue
        if lowest < ZERO:
            negative = new & index.below(ZERO)[1]
            if negative:
                _add(tally, NOT_TOLERATED, key, _popcount(negative),
                     positions[_lowest(negative)], needed, None, 0)
                new &= ~negative
        if new:
            # (the most left: the last of ``new`` in the sorted order; the
            # first node in order of those with as much, its value as written)
            top = index.highest(new, number)
            # (equal values sit in the layout's order in the sorted one)
            at = index.order[index.lowest_of(new, bisect_left(index.values,
                                                              index.values[top]))]
            _add(tally, INSUFFICIENT, key, _popcount(new), positions[_lowest(new)], needed,
                 layout.columns[key][at], positions[at])
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
