"""Columns over several resources at once: joint, masked and set columns, frontiers.

Bounds are per column, so a block whose cpu bound is on one node and whose
memory bound is on another passes a workload that neither node takes.
The methods here, part of every :class:`~.blocks.NodeClass`, make and keep
the columns that see several resources of one node together (each keyed
by a :class:`~.columns.JointColumn`, a node's value the least of its
scaled quantities left):

* *joint* columns (:meth:`DerivedColumns.make_joint`): two resources every
  node of the class has, the second scaled at five ratios, so that a
  workload finds one whose ratio is near its own;
* a *frontier* per block (:meth:`DerivedColumns.frontier`), in a class with
  joint columns, kept by a block that refused a search: whether some node
  has at least both of two quantities, by one bisection; any change of the
  block's columns forgets it;
* a *masked* column per resource only some nodes of the class have
  (:meth:`DerivedColumns.mask`; at most :data:`MAX_MASKED` a class), in a
  class with joint columns: the joint column of ratio one, on the nodes
  that have some of the resource left, minus infinity elsewhere; its
  bounds turn away the blocks whose nodes having the resource are full;
* a *set column* per set of two or more such resources that a search found
  on no node (:meth:`DerivedColumns.mask_set`), where nodes keep their
  order (Prioritized, RoundRobin) and in a class of at least
  :data:`~.nodes.SET_BLOCKS` blocks: the same over all of them, so that
  later searches for the set pass in C the blocks whose nodes having the
  set have no room. It alone is kept lazily: a placement leaves a node's
  value as it was (at least its own, so it still passes every node that
  fits), and a search that looked inside a block in vain brings the
  block's values and bound down (:meth:`DerivedColumns.sharpen`).

Cost: making a column O(N); keeping joint and masked columns up to date,
a few float operations a placement (see :meth:`~.blocks.NodeClass.update`);
a frontier O(L log L) to make, a few steps to use.
"""
import math
from typing import (TYPE_CHECKING, Any, Dict, FrozenSet, Iterable, List, Optional, Sequence,
                    Set, Tuple)

from .columns import (INF, LOWEST, MASK, MAX_HOLDING, MIDDLE, NEG, RATIOS, JointColumn,
                      column_value)

if TYPE_CHECKING:  # pragma: no cover - for the type checker only
    from .blocks import Block

__all__ = ["DerivedColumns", "MAX_MASKED", "SAMPLED"]

#: Blocks :meth:`DerivedColumns.tightest` reads, at most (about 2,000 nodes).
SAMPLED = 32
#: At most this many masked columns a class makes (see
#: :meth:`DerivedColumns.mask`); a search for a resource beyond them leads
#: with the resource's own column. A change of a node's joint resources
#: rewrites its value in the masked column of every resource it has, so
#: nodes bearing hundreds of kinds of device, each asked for now and then,
#: made every placement rewrite hundreds (2000 nodes with 270 of 300 kinds
#: each: see HISTORY).
MAX_MASKED = 32


class DerivedColumns:
    """The part of :class:`~.blocks.NodeClass` that makes and keeps the
    columns over several resources (see the module docstring)."""

    __slots__ = ("joint", "scales", "masked", "masked_held", "set_masked", "set_held",
                 "set_pair", "typicals")

    # The joint columns, once made: each the least of two resources
    # multiplied by fixed scales, one per ratio of the two (see
    # :meth:`make_joint`); their two resources, the first's scale and the
    # second's scales.
    joint: Any
    scales: Any
    # The masked columns, per resource (see :meth:`mask`); per node, the
    # masked columns of the resources it has, with them.
    masked: Dict[str, Any]
    masked_held: Dict[Any, List[Tuple[str, Any]]]
    # The set columns, per set of resources (see :meth:`mask_set`), and per
    # node those of the sets it has all of; the two resources they all use.
    set_masked: Dict[FrozenSet[str], Any]
    set_held: Dict[Any, List[Any]]
    set_pair: Optional[Tuple[Tuple[str, float], ...]]
    # (per resource, :meth:`typical`'s scale and how many nodes had the
    # resource when it was found)
    typicals: Dict[str, Tuple[int, float]]

    def start_derived(self) -> None:
        """No joint, masked or set column yet (for a new class). O(1)."""
        self.joint = self.scales = self.set_pair = None
        self.masked = {}
        self.masked_held = {}
        self.set_masked = {}
        self.set_held = {}
        self.typicals = {}

    if TYPE_CHECKING:  # pragma: no cover - what NodeClass gives them
        columns: List[Any]
        blocks: List["Block"]
        bounds: Dict[Any, List[float]]
        tops: Dict[Any, float]
        stale: Set[Any]
        bearers: Dict[str, Set[Any]]
        sparse: Dict[Any, str]
        sparse_by_name: Dict[str, List[Any]]
        sparse_held: Dict[Any, List[Any]]

        def add_column(self, key: Any, made: Optional[List[List[float]]] = None) -> None:
            ...

    def _joint_values(self, slot: Any, one_read: Optional[float] = None,
                      two_read: Optional[float] = None) -> List[float]:
        """The node's values in the joint columns: those of
        :func:`column_value`, with each float made once; from ``one_read``
        and ``two_read``, its values in the columns of the two resources,
        when given and above :data:`LOWEST` (then they are its quantities
        exactly: it is open and has both)."""
        first, scale, second, scales = self.scales
        if one_read is not None and two_read is not None \
                and one_read > LOWEST and two_read > LOWEST:
            one_float, two_float = one_read * scale, two_read
            return [one_float if one_float < other else other
                    for other in [two_float * times for times in scales]]
        remaining = slot.remaining
        one, two = remaining.get(first), remaining.get(second)
        if slot.cordoned or one is None or two is None:
            return [NEG] * len(scales)
        one_float, two_float = float(one) * scale, float(two)
        return [one_float if one_float < other else other
                for other in [two_float * times for times in scales]]

    def _masked_of(self, slot: Any) -> List[Tuple[str, Any]]:
        """The resources ``slot`` has that have a masked column, each with
        that column (see :meth:`mask`). A node's value in it is the least of
        its value in the resource's own column (:func:`column_value`: a
        quantity below :data:`LOWEST` reads as that, whose product with
        :data:`MASK` is minus infinity all the same) times :data:`MASK` and
        its value in the joint column of ratio one: :meth:`~.blocks.NodeClass.move` and
        :meth:`~.blocks.NodeClass.update` compute it inline, on the path of every placement.
        O(1) mostly."""
        held = self.masked_held.get(slot)
        if held is None:
            resources = slot.node.resources
            held = self.masked_held[slot] = [(name, key) for name, key in self.masked.items()
                                             if name in resources]
        return held

    def _set_columns(self, slot: Any) -> List[Any]:
        """The set columns of the sets of resources ``slot`` has all of.
        O(1) mostly."""
        held = self.set_held.get(slot)
        if held is None:
            keys = slot.node.resources.keys()
            held = self.set_held[slot] = [key for names, key in self.set_masked.items()
                                          if names <= keys]
        return held

    def mask_set(self, names: FrozenSet[str], asked: Sequence[str]) -> Any:
        """The *set column* of ``names`` (two or more resources only some
        nodes of the class have), made at the first call if ``asked``
        (resources every node has, asked for) holds two: a node's value is
        the least of its quantities left of ``names`` times :data:`MASK`
        and of two resources scaled as a joint column scales them (those of
        the joint column of ratio one, if the class has it and ``asked``
        holds them; else the two of ``asked`` the class has the least left
        of, chosen at the class's first set column and kept), so minus
        infinity where it lacks one of ``names`` and at most zero where it
        has none left of one. A workload asking for ``names`` and both
        resources meets it with the same least of its own quantities.
        ``None`` when there is no such column (nor will be: at most
        :data:`MAX_HOLDING` a class).

        Unlike every other column, its values come down lazily: a node
        losing room keeps its value (at least its own, so that it still
        passes every node that fits), and :meth:`sharpen` rewrites a
        block's when a search looked inside the block in vain. A node
        gaining room or joining gets its own value at once. (Made only
        where nodes keep their order: no node of the class ever moves.)
        Cost: O(N) once (each block's nodes having ``names``, see
        :meth:`~.blocks.Block.holding`, and their values from the block's columns);
        choosing the two resources (see :meth:`tightest`), once a class."""
        column = self.set_masked.get(names)
        if column is not None or len(self.set_masked) >= MAX_HOLDING:
            return column
        if self.joint is not None and all(name in asked for name, _ in self.joint[MIDDLE][1]):
            pair = self.joint[MIDDLE][1]
        else:
            if self.set_pair is None and len(asked) >= 2:
                two = self.tightest(asked)
                scales = self.typical(two)
                self.set_pair = tuple((name, scales[name]) for name in two)
            pair = self.set_pair
            if pair is None or any(name not in asked for name, _ in pair):
                return None
        column = self.set_masked[names] = JointColumn(
            ("set", tuple((name, MASK) for name in sorted(names)) + pair))
        made = []
        set_held = self.set_held
        for block in self.blocks:
            values = [NEG] * len(block.slots)
            positions = block.holding(names)
            self._set_values(block, positions, column, values)
            for at in positions:
                known = set_held.get(block.slots[at])
                if known is not None:
                    known.append(column)
            made.append(values)
        self.add_column(column, made)
        return column

    def sharpen(self, index: int, names: FrozenSet[str], key: Any) -> None:
        """Bring the values of block ``index`` in the set column ``key`` (of
        ``names``) down to the nodes' own, and its bound with them. O(L);
        O(1) when they are already, the block unchanged since (a block
        refusing workloads for their aversion groups, not for want of room,
        is looked inside again and again)."""
        block = self.blocks[index]
        sharp = block.sharp
        if sharp is not None and key in sharp:
            return
        values = block.cols[key]
        self._set_values(block, block.holding(names), key, values)
        bounds = self.bounds[key]
        if bounds[index] >= self.tops[key]:
            self.stale.add(key)
        bounds[index] = max(values)
        if sharp is None:
            block.sharp = {key}
        else:
            sharp.add(key)

    def _set_values(self, block: "Block", positions: List[int], key: Any,
                    values: List[float]) -> None:
        """Write into ``values`` the value in set column ``key`` of the
        nodes of ``block`` at ``positions`` (nodes having every resource
        of it): read from the block's columns of those resources where it
        has them all (its floats, kept exact as nodes change: a quantity
        below :data:`LOWEST` reads as that, which only passes more), else
        as :func:`column_value` reads it, from the node's Decimals (a
        float made of a Decimal costs several times a column's read).
        O(len(positions) x S) for S resources in the column."""
        if not positions:
            return
        cols = block.cols
        try:
            scaled = [(cols[name], scale) for name, scale in key[1]]
        except KeyError:  # (a resource of it with no column)
            slots = block.slots
            for at in positions:
                values[at] = column_value(slots[at], key)
            return
        for at in positions:
            least = INF
            for found, scale in scaled:
                value = found[at] * scale
                if value < least:
                    least = value
            values[at] = least

    def tightest(self, names: Iterable[str]) -> List[str]:
        """Two of ``names`` (every node of the class has them) with the least
        left of the class's capacity, as floats, read on a sample: the
        nodes of :data:`SAMPLED` blocks spread evenly over the class (all
        of them in a class of fewer). Only how fast searches run depends
        on the choice. O(R x SAMPLED x L)."""
        blocks = self.blocks
        sample = blocks[::max(1, -(-len(blocks) // SAMPLED))]
        shares = {}
        for name in names:
            left = total = 0.0
            for block in sample:
                for slot in block.slots:
                    total += float(slot.node.resources[name])
                    left += float(slot.remaining[name])
            shares[name] = left / total if 0 < total < INF else INF
        return sorted(sorted(shares, key=shares.__getitem__)[:2])

    def typical(self, names: Iterable[str]) -> Dict[str, float]:
        """Per resource of ``names`` (every node of the class has them), one
        over a power of two near its typical capacity (kept within float
        range), found again only when the number of nodes having the
        resource changed since it was last found (only how fast searches
        run depends on it). O(N) then, O(1) else."""
        scales = {}
        typicals = self.typicals
        for name in names:
            bearers = self.bearers[name]
            known = typicals.get(name)
            if known is None or known[0] != len(bearers):
                sizes = [float(slot.node.resources[name]) for slot in bearers]
                logs = [math.log2(size) for size in sizes if 0 < size < INF]
                power = round(sum(logs) / len(logs)) if logs else 0
                known = typicals[name] = (len(bearers), 2.0 ** -max(-1000, min(1000, power)))
            scales[name] = known[1]
        return scales

    def make_joint(self, names: List[str]) -> None:
        """Make the joint columns over two resources ``names``: scaled by
        :meth:`typical`, the second one also by each power of four of
        :data:`RATIOS`, so that a workload finds one column whose ratio is
        near its own (its threshold is then tight on both). O(N x J)."""
        scales = self.typical(names)
        first, second = names
        joint = self.joint = tuple(
            JointColumn(("joint", ((first, scales[first]),
                                   (second, scales[second] * 4.0 ** power))))
            for power in RATIOS)
        self.scales = (first, scales[first], second,
                       tuple(key[1][1][1] for key in joint))
        # The values of all of them, a node at a time (two lookups and two
        # floats a node), rather than column by column.
        rows = [[self._joint_values(slot) for slot in block.slots] for block in self.blocks]
        for at, key in enumerate(joint):
            self.add_column(key, [[row[at] for row in block] for block in rows])

    def maskable(self, name: str) -> bool:
        """Whether :meth:`mask` may be asked for ``name``: its masked column
        exists, or the class has fewer than :data:`MAX_MASKED`. O(1)."""
        return name in self.masked or len(self.masked) < MAX_MASKED

    def mask(self, name: str) -> JointColumn:
        """The *masked* column of resource ``name`` (which only some nodes
        of the class have; the class must have joint columns), made at the
        first call: a node's value is the least of its quantity left of
        ``name`` times :data:`MASK` and of its two joint resources as the
        joint column of ratio one scales them, so minus infinity where it
        lacks ``name`` and at most zero where it has none left. A workload
        asking for ``name`` and both joint resources gets the same least
        of its own quantities as threshold: a block whose nodes having
        ``name`` are full fails it by its bound, and inside a block only
        the nodes having room pass it. Kept with the joint columns. O(N)
        once."""
        column = self.masked.get(name)
        if column is None:
            middle = self.joint[MIDDLE]
            column = self.masked[name] = JointColumn(("masked", ((name, MASK),) + middle[1]))
            self.masked_held = {}
            self.add_column(column)
        return column

    def drop_joint(self) -> None:
        """Forget the joint columns, and the masked ones. O(B x J)."""
        dropped = self.joint + tuple(self.masked.values())
        self.joint = self.scales = None
        self.masked = {}
        self.masked_held = {}
        for key in dropped:
            del self.bounds[key]
            del self.tops[key]
            self.stale.discard(key)
            name = self.sparse.pop(key, None)
            if name is not None:
                self.sparse_by_name[name].remove(key)
                if not self.sparse_by_name[name]:
                    del self.sparse_by_name[name]
                for block in self.blocks:
                    block.sparse.pop(key, None)
                self.sparse_held.clear()
                continue
            self.columns.remove(key)
            for block in self.blocks:
                block.frontier = None
                del block.cols[key]

    @staticmethod
    def _values_of(block: "Block", name: str) -> List[float]:
        """The values of the nodes of ``block`` in the column of resource
        ``name``: the block's own list where the column is dense, else read
        as :func:`column_value` reads them (a joint column's resource may
        have a sparse column, made while some node of the class lacked
        it). O(1), or O(L)."""
        values = block.cols.get(name)
        if values is None:
            return [column_value(slot, name) for slot in block.slots]
        return values

    def frontier(self, block: "Block") -> Tuple[List[float], ...]:
        """Make and keep ``block.frontier``, for the two resources of the
        joint columns (which the class must have): the nodes no other node
        of the block beats on both (a staircase), by the first resource
        rising (``xs``), the second falling (``ys``). Some node of the block
        has at least ``x`` and ``y`` of them if and only if, at ``at =
        bisect_left(xs, x)``, ``at < len(xs)`` and ``ys[at] >= y`` (that
        step has the most of the second resource of the nodes with enough
        of the first): two resources checked together, not bound by bound.
        O(L log L) to make, a few steps to keep."""
        (first, _), (second, _) = self.joint[0][1]
        xs, ys = self._values_of(block, first), self._values_of(block, second)
        steps_x: List[float] = []
        steps_y: List[float] = []
        most = NEG
        # From the most of the first resource down: a node is a step when
        # it has more of the second than every node with more of the first.
        for at in sorted(range(len(xs)), key=xs.__getitem__, reverse=True):
            y = ys[at]
            if y > most:
                most = y
                steps_x.append(xs[at])
                steps_y.append(y)
        steps_x.reverse()
        steps_y.reverse()
        block.frontier = (steps_x, steps_y)
        return block.frontier
