"""Why workloads fit no node, counted a column of nodes at a time.

The answer to a batch (:func:`~pylighthouse.problem.solve`, so the command
line and the HTTP endpoint) gives every workload left without a node one
line: ``0/N nodes fit`` and the refusals counted by kind and resource, the
line of its :class:`~pylighthouse.explain.Explanation`. Counting needs no
:class:`~pylighthouse.fit.Reason` per node.

Nodes whose remaining quantities name the same resources in the same order
(a *layout*: the nodes of one machine type share one) are compared a
resource at a time, in C (``map`` over the layout's quantities of that
resource), in the order :func:`~pylighthouse.fit.check_fit` follows, so
that each node is counted once, for the first resource it fails on. A
layout leaves out the resources no workload of the batch asks for and of
which the node has nothing below zero left (none of them can refuse for
those): nodes that differ only by a tag of their own (a hostname) share
one. The nodes of layouts shared by fewer than :data:`FEW` nodes are
checked one by one with ``check_fit``.
A differential test holds the lines to those of
:meth:`~pylighthouse.Distributor.explain_all`.

Cost: O(N x R) once for N nodes; then per workload, for each layout,
O(R) comparisons in C per node of it, or one ``check_fit`` per node of
the small layouts.
"""
from decimal import Decimal
from itertools import compress, count, repeat
from operator import and_, eq, gt, lt, or_
from typing import Any, Dict, List, Mapping, Optional, Sequence, Set, Tuple

from .explain import one_line, summary_parts
from .fit import CORDONED, INSUFFICIENT, MISSING, NOT_TOLERATED, Reason, check_fit
from .model import Workload
from .quantities import ZERO

__all__ = ["nowhere_lines", "FEW"]

#: Layouts of fewer nodes are checked a node at a time.
FEW = 4

#: The nodes in the strategy's order: (name, remaining, cordoned).
Order = Sequence[Tuple[str, Mapping[str, Decimal], bool]]
#: Per (kind, resource): [how many, first position, needed, most left,
#: position of the first node with the most left].
_Tally = Dict[Tuple[str, str], List[Any]]


class _Layout:
    """The open nodes whose remaining quantities name ``keys``, in order."""

    __slots__ = ("keys", "names", "positions", "columns", "lowest")

    def __init__(self, keys: Tuple[str, ...], positions: List[int],
                 remainings: List[Mapping[str, Decimal]]):
        self.keys = keys
        self.names = frozenset(keys)
        self.positions = positions  # (in the strategy's order)
        self.columns = {key: [remaining[key] for remaining in remainings] for key in keys}
        self.lowest = {key: min(column) for key, column in self.columns.items()}


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
        if not _refused_by(layout, load, tally):
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
    positions = layout.positions
    requirements = load.requirements
    for key in requirements:
        if key not in layout.names:
            _add(tally, MISSING, key, len(positions), positions[0], None, None, 0)
            return True
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
