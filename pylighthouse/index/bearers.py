"""Which nodes of a class have a resource: bearers in order, masks, counts per block.

The methods here, part of every :class:`~.blocks.NodeClass`, answer
questions about the nodes *having* resources (the class's ``bearers``,
resource -> its nodes), not about what they have left, so their answers
change only when a node joins or leaves the class (a node's resources
never change, only its room):

* :meth:`Bearers.in_order`: the bearers of a resource, or of every
  resource of a tuple, sorted by order key, for a class whose nodes keep
  their order: a hostname tag's one node, a rare device's few, tried one
  by one instead of a search (see :mod:`.plans`);
* :meth:`Bearers.having_all`: how many nodes have every resource of a
  set, from bit masks of the bearers, in C;
* :meth:`Bearers.counting`: per block, how many of its nodes have every
  resource of a set, so that a search passes a block where none does by
  one look (kept as nodes join, leave or move between blocks).

Cost: O(H log H) to sort H bearers, once until a node joins or leaves;
O(N / 8) word operations for a count of holders; a counted set O(B + H
log N) once, then O(1) per node moving between blocks.
"""
from bisect import bisect_left
from collections import deque
from itertools import repeat
from typing import (TYPE_CHECKING, Any, Callable, Dict, FrozenSet, List, Sequence, Set,
                    Tuple, Union)

from .columns import BY_KEY

if TYPE_CHECKING:  # pragma: no cover - for the type checker only
    from .blocks import Block

__all__ = ["Bearers", "Tag", "MAX_COUNTED", "COUNTED_PER_BLOCK", "MAX_UNCOUNTED",
           "MAX_ORDERED", "MAX_MASKS"]

#: At most this many sets of resources a class counts the holders of per
#: block (a cluster may have hundreds of kinds of device, asked for in
#: pairs and threes). Each count moves with every node having the set that
#: moves from block to block: a node with fifteen kinds of thirty has 560
#: of their pairs and threes, and counting thousands of sets made every
#: move pay for hundreds (2000 nodes of that sort: BinPack placed 8,900
#: workloads a second counting up to 4096 sets, 14,400 counting 256; the
#: ``kinds`` mix, 120 sets in all, the same either way).
MAX_COUNTED = 256
#: A set of resources is counted only when at most this many nodes per
#: block of the class have them all (see :meth:`Bearers.counting`): more
#: holders than that (a fifth of the nodes, in blocks of 40) leave every
#: block with one, where a count passes no block, and every node moving
#: between blocks would carry the count all the same. (At 2, the ``kinds``
#: mix counted 84 of its 120 sets instead of all, and read slower.)
COUNTED_PER_BLOCK = 8
#: At most this many sets of resources found with too many holders to
#: count (see :meth:`Bearers.counting`) a class remembers.
MAX_UNCOUNTED = 16384
#: At most this many resources (or tuples of them) whose bearers a class
#: keeps in order (see :meth:`Bearers.in_order`); past it, it starts afresh.
MAX_ORDERED = 4096
#: At most this many resources whose bearers a class keeps as a mask (see
#: :meth:`Bearers.having_all`): a byte a node each; past it, it starts
#: afresh.
MAX_MASKS = 512
#: What a class keeps bearers in order for: one resource, or a tuple of
#: resources (the nodes bearing every one).
Tag = Union[str, Tuple[str, ...]]


def _bits_set(value: int) -> int:
    """The number of bits set in ``value`` (at least 0), before Python 3.10."""
    return bin(value).count("1")


#: The number of bits set in a non-negative int (``int.bit_count`` from
#: Python 3.10 on).
_ones: Callable[[int], int] = getattr(int, "bit_count", _bits_set)


class Bearers:
    """The part of :class:`~.blocks.NodeClass` that knows which of its
    nodes have which resources (see the module docstring)."""

    # (its state is in NodeClass's slots, declared below for the type
    # checker, which would otherwise refuse the assignments of a class
    # whose own slots are empty)
    if not TYPE_CHECKING:
        __slots__ = ()

    if TYPE_CHECKING:  # pragma: no cover - what NodeClass gives them
        blocks: List["Block"]
        lasts: List[Any]
        bearers: Dict[str, Set[Any]]
        size: int
        members: int
        ordered: Dict[Tag, Tuple[int, List[Any], List[Any]]]
        spread: Tuple[int, int]
        masks: Tuple[int, Dict[Any, int], Dict[str, int]]
        uncounted: Dict[FrozenSet[str], int]
        held: Dict[Any, List[FrozenSet[str]]]
        tallies: Dict[FrozenSet[str], List[int]]
        denials: Dict[str, int]
        denials_most: Any

    @property
    def hot(self) -> Set[str]:
        """The resources whose columns the plans no longer put off: those
        whose searches lacking the column met :attr:`denials_most` refusals
        (see :func:`.plans.deferrable`), as the index counts them in
        ``NodeIndex._denied``; read by the tests. O(R)."""
        most = self.denials_most
        return set() if most is None else {
            name for name, number in self.denials.items() if number >= most}

    def in_order(self, name: Tag) -> Tuple[List[Any], List[Any]]:
        """The nodes of the class bearing ``name`` (a tuple: every one of
        its names), in order, and their keys; for a class whose nodes keep
        their order (their keys never change), so that only a node joining
        or leaving the class changes them. O(H log H) for H bearers the
        first time (for a tuple, the first name's list filtered by the
        intersection of the names' bearers, in C: give the rarest first),
        O(1) again until a node joins or leaves."""
        known = self.ordered.get(name)
        if known is None or known[0] != self.members:
            if len(self.ordered) >= MAX_ORDERED:
                self.ordered.clear()
            bearers = self.bearers
            if isinstance(name, tuple):
                # (the first name's bearers, in order, that bear the others:
                # filtered in C, with no sort)
                having = bearers.get(name[0], set()).intersection(
                    *(bearers.get(other, ()) for other in name[1:]))
                slots = list(filter(having.__contains__, self.in_order(name[0])[0]))
            else:
                slots = sorted(bearers.get(name, ()), key=BY_KEY)
            known = self.ordered[name] = (self.members, slots, list(map(BY_KEY, slots)))
        return known[1], known[2]

    def many_held(self, least: int) -> int:
        """How many resources more than ``least`` nodes of the class have,
        but not all. O(R) for R resources of the class, once until a node
        joins or leaves the class (``least`` is a constant of the caller's,
        :data:`.plans.FEW_KEPT`)."""
        members, number = self.spread
        if members != self.members:
            size = self.size
            number = sum(least < len(having) < size for having in self.bearers.values())
            self.spread = (self.members, number)
        return number

    def keeps(self, name: Tag) -> bool:
        """Whether :meth:`in_order` has the bearers of ``name`` in order
        already (no node joined or left the class since it made them).
        O(1)."""
        known = self.ordered.get(name)
        return known is not None and known[0] == self.members

    def having_all(self, names: Sequence[str]) -> int:
        """How many nodes of the class have every resource of ``names``
        (two or more): the bits in common of their bearers' masks (a byte a
        node, 1 for a bearer, read as one int), made per resource when
        first asked and kept until a node joins or leaves the class (at
        most :data:`MAX_MASKS`). O(N / 8) word operations in C for N
        nodes, no set built; O(H) in C for a mask made, for H bearers, and
        O(N) to number the nodes once a node joined or left."""
        members, numbers, masks = self.masks
        if members != self.members:
            numbers = {slot: at for at, slot in enumerate(
                slot for block in self.blocks for slot in block.slots)}
            masks = {}
            self.masks = (self.members, numbers, masks)
        common = -1  # (every bit)
        for name in names:
            mask = masks.get(name)
            if mask is None:
                if len(masks) >= MAX_MASKS:
                    masks.clear()
                # (a byte a node, 1 for a bearer, set in C, read as one int)
                marks = bytearray(self.size)
                deque(map(marks.__setitem__, map(numbers.__getitem__,
                                                 self.bearers.get(name, ())), repeat(1)), 0)
                mask = masks[name] = int.from_bytes(marks, "little")
            common &= mask
        return _ones(common)

    def counting(self, names: FrozenSet[str]) -> bool:
        """Whether each block counts its nodes having every resource of
        ``names`` (per set, a count per block in :attr:`~.blocks.NodeClass.tallies`,
        beside the bounds), starting now if it did not (at
        most :data:`MAX_COUNTED` sets a class, and only for sets that at
        most :data:`COUNTED_PER_BLOCK` nodes a block have all of: where more
        do, nearly every block has one). A node's resources never change,
        only what is left of them: a count moves only when a node joins or
        leaves the block, however often nodes are re-ranked within it. O(1)
        when counted, or found to have too many holders since the last node
        joined or left; else O(B + H log N) once, for the H nodes having
        them all."""
        tallies = self.tallies
        if names in tallies:
            return True
        if len(tallies) >= MAX_COUNTED or self.uncounted.get(names) == self.members:
            return False
        having = set.intersection(*(self.bearers[name] for name in names))
        if len(having) > COUNTED_PER_BLOCK * len(self.blocks):
            if len(self.uncounted) >= MAX_UNCOUNTED:
                self.uncounted.clear()
            self.uncounted[names] = self.members
            return False
        held = self.held
        blocks, lasts = self.blocks, self.lasts
        if not tallies:
            # (the first set counted: no node of the class has any yet, and
            # each gets the sets it has all of as they are counted, instead
            # of looking through every set counted when it first moves)
            for block in blocks:
                held.update(zip(block.slots, map(list, repeat((), len(block.slots)))))
        tally = tallies[names] = [0] * len(blocks)
        for slot in having:
            known = held.get(slot)
            if known is not None:
                known.append(names)
            tally[bisect_left(lasts, slot.key)] += 1
        return True

    def _held(self, slot: Any) -> List[FrozenSet[str]]:
        """The counted sets of resources ``slot`` has all of. O(1) mostly."""
        held = self.held.get(slot)
        if held is None:
            keys = slot.node.resources.keys()
            held = self.held[slot] = [names for names in self.tallies if names <= keys]
        return held
