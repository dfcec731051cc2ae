"""The node index: a distributor's nodes in strategy order, searchable by fit bounds.

Node choice is "the first node, in the strategy's order, where the workload
fits". Scanning every node answers it in O(N) per placement; this index
answers it in about O(log N) by skipping runs of nodes that provably cannot
fit, and leaves every yes to :func:`pylighthouse.fit.check_fit`.

Layout (chosen for pure Python): the nodes sit in a list of *blocks*, each a
short list kept sorted by the node's order key (its join sequence for
Prioritized and RoundRobin, its rubric sort key for BinPack), as in
sortedcontainers. Each block keeps, per resource, a *column*: one list of
its nodes' float copies of their remaining quantity (see below), so that
reading a block's worth touches a list and the floats, not every node, its
dict and the dict's table. Over the blocks, flat segment trees hold, for every block
and every run of blocks, upper bounds over its open (not cordoned) nodes,
which are the only ones a search may take, one tree per *term*:

* a resource name: the largest remaining quantity of that resource in the
  block (a node lacking it counts as minus infinity);
* :data:`OPEN`: zero when some node in the block is not cordoned;
* a *mixed* term, one per workload shape met (up to three of its positive
  requirements, those most nodes have, and the power of four nearest each):
  the largest, over the block's nodes, of the least of the node's remaining
  quantities each divided by that power of four (minus infinity for a node
  lacking one: the shape requires each); a workload of the shape fits only
  where it reaches the least of its own scaled requirements. It sees what
  per-resource maxima cannot: that the cpu left sits on one node and the
  memory on another.

Per-resource maxima cannot see that the room and the right resources sit on
different nodes, so the trees come in *families*, each bounding a subset of
the nodes: :data:`ALL` nodes; the :data:`CLEAN` nodes (no resource below
zero: most workloads cannot use the others, and a roomy warded node in every
block would otherwise defeat the bounds); and, for resources that some but
not all nodes have (tags, semaphores) once they are common enough, the clean
nodes having that resource. A workload that neither requires nor is immune
to any resource ever seen below zero searches the clean family of its
rarest such resource (or :data:`CLEAN`); any other workload searches
:data:`ALL`.

A search walks the family's trees leftmost first from a start block and
skips every subtree where a required, non-immune resource (immunity
ignores the value, so immune ones are not pruned on) is bounded below the
requirement, where every node is cordoned, or where the workload's mixed
term falls short. Inside a surviving block it tries the first few nodes,
sieves the rest on the block's columns for up to two positive requirements
(in C), tests each candidate with the same cheap bounds, skips the averse
ones in the first aversion pass, and asks ``check_fit``: the first yes is
the answer.

Bounds and the sieve work on float copies of the quantities (each node
keeps one, ``floats``, and its block's columns another; every change of a
node's room writes both, O(R) at the node's known place): conversion to
the nearest float never reverses the order of two quantities, so a float
bound below the float of a requirement means the exact quantity falls short
too; the decimals are compared only where a node is tried. Mixed terms,
which scale, are raised past rounding.

Bounds are upper bounds, not always exact ones. A node that gains room
raises its block's bounds at once (O(F x T log B) for F families and T
terms); a node that loses room changes nothing, and a search that scans a
whole block in vain makes that block's bounds for its terms exact (O(L x T)
for L nodes a block, from the block's columns). Blocks split above
``2 * load`` nodes and merge at ``load / 4`` or fewer, keeping the largest
bound of the blocks they replace (and their columns, cut or joined in C).
The blocks' leaves are spread along the trees' leaf row with gaps between
(minus infinity in every tree, so never searched): a merge leaves a gap
where a block was, and a split's second half takes the gap after its first
half, or else the nearest one, the leaves between shifting by one towards
it (O(F x T x D) pointer moves for D leaves to the gap, one slice a tree,
in C), which happens about once every ``load`` moves; the internal levels
above the leaves rewritten are recomputed (in list comprehensions) when a
search next uses the tree. Only when the blocks outgrow the row, or shrink
to a quarter of it, are the leaves spread out again, in trees of the new
size (O(F x T x B)). The sum tree of block sizes (for ranks) is summed over
the leaves changed since when a rank is next needed, and a rank near the
last one found is counted from it, without the tree.

Per workload shape (requirements and immunities) the index keeps its search
context (family, trees, checks, mixed term, floor, sieve: see
:meth:`NodeIndex._search`) until a node joins or leaves or blocks split or
merge, and, while no open node gains room and none joins or is
uncordoned, whether the shape was proven to fit nowhere: such a search then
costs O(R). Per shape and aversion groups it also keeps the last
answer of a search from the start of the order; while few nodes changed
since, the next such search tries those nodes and resumes at the old answer
(see :meth:`NodeIndex._resumed`). After a split or merge, trees' internal
levels are recomputed lazily, when a search needs the tree.
"""
import math
from bisect import bisect_left
from collections import Counter
from decimal import Decimal
from itertools import compress, repeat
from operator import and_, ge
from typing import (Any, Callable, Dict, FrozenSet, Iterable, Iterator, List, Mapping,
                    Optional, Sequence, Set, Tuple, cast)

from .fit import check_fit
from .model import Workload
from .quantities import ZERO

__all__ = ["NodeIndex", "OPEN", "ALL", "CLEAN"]

#: A missing resource in a node's exact checks (the trees use ``-INF``).
NEG = Decimal("-Infinity")
INF = float("inf")
#: Term: zero where some node takes new workloads (not cordoned).
OPEN = ("open",)
#: Family: every node.
ALL = ("all",)
#: Family: the nodes with no resource below zero.
CLEAN = ("clean",)
NO_GROUPS: FrozenSet[str] = frozenset()

DEFAULT_LOAD = 48
#: At most this many resource families (beyond ALL and CLEAN).
MAX_FAMILIES = 8
#: At most this many mixed terms.
MAX_MIXES = 128
#: At most this many resources in a mixed term.
MIX_WIDTH = 3
#: At most this many workload shapes remembered as fitting nowhere.
MAX_NOWHERE = 1024
#: At most this many shapes' search contexts (and last answers) kept.
MAX_PLANS = 4096
#: Relative slack of the float arithmetic of mixed terms (far above its error).
SLACK = 1e-9
#: Nodes of a block tried one by one before the rest are sieved.
HEAD = 4
#: A search may resume from the last answer for its shape when at most this
#: many changes to nodes came since (see :meth:`NodeIndex.first_fit`).
RESUME = 64
#: A rank within this many blocks of the last one found is counted from it.
NEAR = 2

Tree = List[Any]


class _Block(list[Any]):  # (the builtin generic: a plain list subclass at run time)
    """A block: its nodes in order, and ``columns``: resource -> the float
    copies of the nodes' remaining quantity of it (a list, minus
    infinity where a node lacks it), in the same order, for every resource
    some node of the block has (and perhaps one none has any more). The
    sieve and the exact bounds read these: a column holds the nodes' own
    float objects, so reading one touches the float alone, not the node,
    its dict and the dict's table, which lie scattered over the heap and
    miss the processor's caches on a large cluster."""

    __slots__ = ("columns",)

    def __init__(self, nodes: Iterable[Any] = (),
                 columns: Optional[Dict[str, Any]] = None):
        super().__init__(nodes)
        if columns is None:
            keys = dict.fromkeys(key for slot in self for key in slot.floats)
            columns = {key: [slot.floats.get(key, -INF) for slot in self]
                       for key in keys}
        self.columns: Dict[str, Any] = columns

    def insert_node(self, position: int, slot: Any) -> None:
        """Insert ``slot`` at ``position``, its floats in the columns.
        Cost: O(C x L) for C columns, in C."""
        self.insert(position, slot)
        floats = slot.floats
        columns = self.columns
        for key, column in columns.items():
            column.insert(position, floats.get(key, -INF))
        if not columns.keys() >= floats.keys():
            for key, value in floats.items():
                if key not in columns:
                    column = columns[key] = [-INF] * len(self)
                    column[position] = value

    def rewrite_node(self, position: int, floats: Mapping[str, float],
                     keys: Iterable[str]) -> None:
        """Write the node at ``position``'s new ``floats`` of ``keys`` (each
        a resource it has). Cost: O(len(keys))."""
        columns = self.columns
        for key in keys:
            columns[key][position] = floats[key]

    def delete_node(self, position: int) -> None:
        """Remove the node at ``position``. Cost: O(C x L), in C."""
        del self[position]
        for column in self.columns.values():
            del column[position]

    def halves(self) -> Tuple["_Block", "_Block"]:
        """The block cut in two, columns and all."""
        half = len(self) // 2
        columns = self.columns
        return (_Block(self[:half], {key: column[:half] for key, column in columns.items()}),
                _Block(self[half:], {key: column[half:] for key, column in columns.items()}))

    def joined(self, other: "_Block") -> "_Block":
        """This block's nodes, then ``other``'s, columns joined (a merge)."""
        first, second = self.columns, other.columns
        columns = {}
        for key in dict.fromkeys([*first, *second]):
            head, tail = first.get(key), second.get(key)
            columns[key] = (([-INF] * len(self) if head is None else head)
                            + ([-INF] * len(other) if tail is None else tail))
        return _Block([*self, *other], columns)


class NodeIndex:
    """Nodes (the distributor's slots) in order, with per-block upper bounds.

    ``key`` gives a node's order key; it is read when the node joins and,
    when ``rekey`` is set, again after each change of its remaining
    resources. Slots must have ``remaining``, ``cordoned``, ``groups``, and
    the index's own ``key``, ``negative`` and ``floats`` attributes (the last
    a float copy of ``remaining``, for mixed terms).
    """

    def __init__(self, key: Callable[[Any], Any], rekey: bool = False,
                 load: int = DEFAULT_LOAD):
        self._key = key
        self._rekey = rekey
        self._load = load
        self._blocks: List[_Block] = []
        self._keys: List[List[Any]] = []
        self._lasts: List[Any] = []
        self._cap = 1
        #: Block number -> the offset of its leaf in the trees' leaf rows
        #: (tree position ``_cap + offset``), increasing, with gaps between:
        #: a split takes the nearest gap, a merge leaves one (see _replace).
        self._leaves: List[int] = []
        #: Leaf offset -> the nodes of the block whose leaf it is, or None
        #: for a gap (minus infinity in every tree, zero in the counts).
        self._row: List[Optional[_Block]] = [None]
        self._families: Dict[Any, Dict[Any, Tree]] = {
            ALL: {OPEN: [-INF, -INF]}, CLEAN: {OPEN: [-INF, -INF]}}
        #: Resource -> its family, for the resources that have one.
        self._selected: Dict[str, Any] = {}
        self._present: Counter[str] = Counter()
        self._counts: List[int] = [0, 0]
        #: Leaves ``_dirty_from`` to ``_dirty_to`` (excluded) of ``_counts``
        #: changed since its internal levels were last summed (see
        #: _settle_counts): node counts are read only to find ranks.
        self._dirty_from, self._dirty_to = 1, 0
        #: (rank, block, position) of the node whose rank was last found or
        #: looked up, while no block has changed since: a rank or position
        #: a few blocks from it is counted from it (see rank, _at).
        self._known: Optional[Tuple[int, int, int]] = None
        #: (node, block, position) of the node a search last returned, while
        #: no node has joined, left or moved since: placing a workload on it
        #: changes it next, and needs no bisection to find it (see _locate).
        self._found: Optional[Tuple[Any, int, int]] = None
        #: Resource names (sorted tuple) -> their mixed term.
        self._mixes: Dict[Tuple[Tuple[str, int], ...], Any] = {}
        #: Resources seen below zero on some node (only ever grows).
        self.negative: Set[str] = set()
        #: Workload shapes (requirements, immunities) that fit no open node,
        #: kept while no open node gains room and none joins or reopens.
        self._nowhere: Set[Any] = set()
        #: (shape, groups) -> (serial, answer, the answer's key then) of the
        #: last search from the start for it: every node before that key
        #: failed it then, and still does unless it changed since.
        self._answers: Dict[Any, Tuple[int, Any, Any]] = {}
        #: Every noted change (see :meth:`touched`) counts one (its serial);
        #: the last ones as (node, old key or None), oldest first, the first
        #: with serial ``_log_start``.
        self._serial = 0
        self._log: List[Any] = []
        self._log_start = 1
        #: id(tree) -> (tree, first leaf, end leaf): trees whose internal
        #: levels above those leaves are out of date since a split or merge
        #: shifted them; brought up to date when a search needs them.
        self._stale: Dict[int, Tuple[Tree, int, int]] = {}
        self._size = 0
        #: Family -> its mixed terms' (term, tree) pairs, in a fixed order
        #: (see _mixed_trees); emptied whenever trees are made or replaced.
        self._mixed: Dict[Any, List[Tuple[Any, Tree]]] = {}
        #: Shape -> its search context (see _search), valid for one version.
        self._searches: Dict[Any, Tuple[Any, ...]] = {}
        self._version = 0

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Any]:
        """The nodes in order. Cost: O(N)."""
        for block in self._blocks:
            yield from block

    # ------------------------------------------------------------- values

    @staticmethod
    def _member(slot: Any, family: Any) -> bool:
        if family is ALL:
            return True
        if slot.negative:
            return False
        return family is CLEAN or family[1] in slot.remaining

    def _leaf(self, block: _Block, family: Any, term: Any) -> float:
        """The exact bound of ``term`` over the family's open (not cordoned)
        nodes in ``block``: a search never takes a cordoned node, so those
        need no bound, and a drained node's room loosens no bound.
        Cost: O(len(block))."""
        return _exact_bounds(block, family, (term,))[0]

    def _tighten(self, nodes: _Block, family: Any,
                 terms: Sequence[Tuple[Tree, Any, Any]], index: int) -> None:
        """Make the bounds of ``terms`` exact at tree leaf ``index``."""
        values = _exact_bounds(nodes, family, [term for _, _, term in terms])
        for (tree, _, _), value in zip(terms, values):
            self._set(tree, index, value)

    @staticmethod
    def _set(tree: Tree, index: int, value: float) -> None:
        """Set leaf ``index`` (a tree position) and fix its ancestors. O(log B)."""
        old = tree[index]
        if value == old:
            return
        tree[index] = value
        if value > old:
            index >>= 1
            while index and tree[index] < value:
                tree[index] = value
                index >>= 1
            return
        while index > 1:
            index >>= 1
            left, right = tree[2 * index], tree[2 * index + 1]
            best = left if left >= right else right
            if tree[index] == best:
                return
            tree[index] = best

    def _count(self, block: int, delta: int) -> None:
        self._known = self._found = None
        leaf = self._leaves[block]
        self._counts[self._cap + leaf] += delta
        if leaf < self._dirty_from:
            self._dirty_from = leaf
        if leaf >= self._dirty_to:
            self._dirty_to = leaf + 1

    def _settle_counts(self) -> None:
        """Sum the internal levels of ``_counts`` above the leaves changed
        since. Cost: O(D + log B) for D leaves between the first and the
        last changed."""
        if self._dirty_from < self._dirty_to:
            _rebuild(self._counts, self._cap, self._dirty_from, self._dirty_to, counts=True)
        self._dirty_from, self._dirty_to = self._cap, 0

    def touched(self, slot: Any, old_key: Any = None) -> None:
        """Note a change after which ``slot`` may take a workload it refused
        before: it joined, gained room, was uncordoned or lost an aversion
        group (``old_key`` None); or it moved in the order from ``old_key``
        (BinPack, after a placement). A change that only makes a node refuse
        more and keeps its place (a placement in Prioritized or RoundRobin,
        a cordon, a removal) needs no note. The index's own changing methods
        note theirs; a caller notes the others (releasing a workload with
        aversion groups but no requirements). Cost: O(1) amortized."""
        self._serial += 1
        log = self._log
        log.append((slot, old_key))
        if len(log) > 2 * RESUME:
            del log[:RESUME]
            self._log_start += RESUME

    # ------------------------------------------------------------ locating

    def _locate(self, slot: Any) -> Tuple[int, int]:
        """(block, position in block) of ``slot``. Cost: O(log N); O(1) for
        the node a search last returned, while no node joined, left or moved."""
        found = self._found
        if found is not None and found[0] is slot:
            return found[1], found[2]
        key = slot.key
        block = bisect_left(self._lasts, key)
        return block, bisect_left(self._keys[block], key)

    def rank(self, slot: Any) -> int:
        """The number of nodes before ``slot`` in order. Cost: O(log N), plus
        O(D) for D blocks between the first and the last changed since a
        rank was last found. When the last rank found or looked up lies at
        most ``NEAR`` blocks away and no block has changed since
        (RoundRobin's cursor, placement after placement), it is counted
        from that one instead: two bisections, no walk up the sum tree."""
        block, position = self._locate(slot)
        known = self._known
        if known is not None:
            before, start, at = known
            if start <= block <= start + NEAR:
                before += position - at + sum(map(len, self._blocks[start:block]))
                self._known = before, block, position
                return before
            if block < start <= block + NEAR:
                before += position - at - sum(map(len, self._blocks[block:start]))
                self._known = before, block, position
                return before
        if self._dirty_from < self._dirty_to:
            self._settle_counts()
        index = self._cap + self._leaves[block]
        counts = self._counts
        before = position
        while index > 1:
            if index & 1:
                before += counts[index - 1]
            index >>= 1
        self._known = before, block, position
        return before

    def _at(self, rank: int) -> Tuple[int, int]:
        """(block, position) of the node with ``rank`` nodes before it.
        Cost: O(log B), plus O(D) as in :meth:`rank`; O(1) when it lies at
        most ``NEAR`` blocks after the last rank found or looked up and no
        block has changed since (see :meth:`rank`)."""
        wanted = rank
        known = self._known
        if known is not None and rank >= known[0]:
            _, block, position = known
            position += rank - known[0]
            blocks = self._blocks
            for block in range(block, min(block + NEAR + 1, len(blocks))):
                if position < len(blocks[block]):
                    self._known = rank, block, position
                    return block, position
                position -= len(blocks[block])
        if self._dirty_from < self._dirty_to:
            self._settle_counts()
        counts = self._counts
        index = 1
        while index < self._cap:
            index *= 2
            if counts[index] <= rank:
                rank -= counts[index]
                index += 1
        # (A gap counts no node, so the walk ends at a block's leaf.)
        block = bisect_left(self._leaves, index - self._cap)
        self._known = wanted, block, rank
        return block, rank

    # ------------------------------------------------------------ changing

    def add(self, slot: Any) -> None:
        """A node joins. Cost: O(F x T log N) for F families and T terms, plus
        O(F x T x D) when its block splits (once every ``load`` joins to it;
        D leaves to the nearest gap, see :meth:`_replace`), O(F x T x B) when
        the blocks outgrow the trees."""
        self._nowhere.clear()
        self._version += 1
        self.touched(slot)
        slot.key = self._key(slot)
        remaining = slot.remaining
        slot.floats = {key: float(value) for key, value in remaining.items()}
        slot.negative = _negative(remaining)
        if slot.negative:
            self.negative.update(k for k, v in remaining.items() if v < ZERO)
        for trees in self._families.values():
            for term in remaining:
                if term not in trees:
                    trees[term] = [-INF] * (2 * self._cap)
                    self._mixed.clear()
        self._size += 1
        self._present.update(remaining.keys())
        self._insert(slot)
        for term in remaining:
            # (Not for a resource seen below zero: the clean nodes having it
            # would be the nodes where it is not, and a workload needing it
            # searches every node anyway.)
            if term not in self._selected and len(self._selected) < MAX_FAMILIES \
                    and term not in self.negative \
                    and 2 * self._load <= self._present[term] < self._size:
                family = ("with", term)
                self._selected[term] = family
                self._mixed.clear()
                self._families[family] = {
                    term: [-INF] * (2 * self._cap) for term in self._families[ALL]
                    if type(term) is not tuple or term is OPEN}
                self._replace(0, 0, 0, (family,))

    def remove(self, slot: Any) -> None:
        """A node leaves. Cost: O(log N), plus O(F x T) when its block merges
        or empties (about once every ``load / 2`` removals from it; it
        leaves a gap, see :meth:`_replace`), O(F x T x B) when the blocks
        shrink to a quarter of the trees."""
        self._size -= 1
        self._version += 1
        self._present.subtract(slot.remaining.keys())
        self._take(slot, *self._locate(slot))
        slot.key = None  # gone: no resumed search may take it

    def cordoned(self, slot: Any) -> None:
        """``slot.cordoned`` changed. Cost: O(F x T log N) when it was
        uncordoned (its block's bounds rise to its room), O(1) otherwise."""
        if not slot.cordoned:
            self.touched(slot)
            self._nowhere.clear()
            self._raise(slot, self._locate(slot)[0], self._terms())

    def changed(self, slot: Any, before: Mapping[str, Decimal]) -> None:
        """``slot.remaining`` changed; ``before`` holds the old values of the
        resources that changed. Cost: O(R + log N) when it lost room (O(R)
        for the node a search just returned, see :meth:`_locate`), plus
        O(F x T log N) when it gained some; for BinPack, plus a move to its
        new place, O(log N + C x load) for C columns and, for a block that
        splits or merges, as in :meth:`add` and :meth:`remove`."""
        remaining = slot.remaining
        floats = slot.floats
        gained = signed = False
        for key, old in before.items():
            value = remaining[key]
            floats[key] = float(value)
            if value > old:
                gained = True
            if value < ZERO or old < ZERO:
                signed = True
        if gained:
            self.touched(slot)
            if not slot.cordoned:
                self._nowhere.clear()  # something may fit now
        elif self._rekey:
            self.touched(slot, slot.key)
        was_negative = slot.negative
        if signed:
            slot.negative = _negative(remaining)
            for key in before:
                if remaining[key] < ZERO and key not in self.negative:
                    self.negative.add(key)
                    self._version += 1
        if self._rekey:
            key = self._key(slot)
            if key != slot.key:
                self._move(slot, key, before, was_negative, gained)
                return
        block, position = self._locate(slot)
        self._blocks[block].rewrite_node(position, floats, before)
        if gained or slot.negative != was_negative:
            # (A loss of room in place leaves the bounds as they are.)
            self._refresh(slot, block, before, was_negative)

    def _refresh(self, slot: Any, block: int, before: Mapping[str, Decimal],
                 was_negative: bool) -> None:
        """Raise the bounds of ``block`` where ``slot`` (in it) gained room.

        A loss of room leaves the bounds as they are: still upper bounds,
        only looser, and :meth:`_scan` tightens a block when it finds
        nothing in it. Cost: O(F x R log B) for R resources that grew.
        """
        remaining = slot.remaining
        if slot.negative != was_negative:
            grown = self._terms()
        else:
            grown = [term for term, old in before.items() if remaining[term] > old]
            if grown:
                grown.extend(term for term in self._mixes.values()
                             if any(key in grown for key in term[1]))
        if grown:
            self._raise(slot, block, grown)

    def _terms(self) -> List[Any]:
        """Every term some family has a tree for."""
        return list(dict.fromkeys([*self._families[ALL], *self._mixes.values()]))

    def _raise(self, slot: Any, block: int, terms: Iterable[Any]) -> None:
        if slot.cordoned:
            return  # bounds are over open nodes only (see _leaf)
        leaf = self._cap + self._leaves[block]
        values: Dict[Any, Any] = {}
        floats = slot.floats
        member = self._member
        for family, trees in self._families.items():
            if family is ALL or member(slot, family):
                for term in terms:
                    tree = trees.get(term)
                    if tree is None:
                        continue  # a mixed term this family has not needed yet
                    value = values.get(term)
                    if value is None:
                        # The node's value for the term, written out: this
                        # runs for every term after every release.
                        if type(term) is not tuple:
                            value = floats.get(term, -INF)
                        elif term is OPEN:
                            value = 0.0  # not cordoned
                        else:
                            value = term[1].bound(floats)
                        values[term] = value
                    if value > tree[leaf]:
                        self._set(tree, leaf, value)

    def _move(self, slot: Any, key: Any, before: Mapping[str, Decimal],
              was_negative: bool, gained: bool) -> None:
        """Re-key ``slot`` (BinPack: its score changed; ``gained``: some
        resource of ``before`` grew)."""
        raising = gained or slot.negative != was_negative
        block, position = self._locate(slot)
        keys = self._keys[block]
        if position:
            after_previous = keys[position - 1] < key
        else:
            after_previous = block == 0 or self._lasts[block - 1] < key
        if position + 1 < len(keys):
            before_next = key < keys[position + 1]
        else:
            before_next = block + 1 == len(self._keys) or key < self._keys[block + 1][0]
        if after_previous and before_next:
            # Still between its neighbours: same block, same position.
            keys[position] = key
            slot.key = key
            self._blocks[block].rewrite_node(position, slot.floats, before)
            if position + 1 == len(keys):
                self._lasts[block] = key
            if raising:
                self._refresh(slot, block, before, was_negative)
            return
        if (block == 0 or self._lasts[block - 1] < key) and \
                (block + 1 == len(self._keys) or key < self._keys[block + 1][0]):
            # Still within its block's range: move it inside the block; its
            # bounds need raising only where it gained room.
            self._found = None  # positions in the block change
            nodes = self._blocks[block]
            nodes.delete_node(position)
            del keys[position]
            position = bisect_left(keys, key)
            keys.insert(position, key)
            nodes.insert_node(position, slot)
            slot.key = key
            self._lasts[block] = keys[-1]
            if raising:
                self._refresh(slot, block, before, was_negative)
            return
        carried = None
        if not raising:
            # It lost room, so its mixed values are still below its old
            # block's bounds: carry those instead of computing ~100 values.
            leaf = self._cap + self._leaves[block]
            carried = [(family, [tree[leaf] for _, tree in self._mixed_trees(family)])
                       for family in self._families if self._member(slot, family)]
        self._take(slot, block, position)
        slot.key = key
        self._insert(slot, carried)

    def _insert(self, slot: Any,
                carried: Optional[List[Tuple[Any, List[Any]]]] = None) -> None:
        key = slot.key
        if not self._blocks:
            self._blocks.append(_Block([slot]))
            self._keys.append([key])
            self._lasts.append(key)
            self._replace(0, 0, 1)
            return
        block = bisect_left(self._lasts, key)
        if block == len(self._blocks):
            block -= 1
            self._lasts[block] = key
        nodes, keys = self._blocks[block], self._keys[block]
        position = bisect_left(keys, key)
        keys.insert(position, key)
        nodes.insert_node(position, slot)
        self._count(block, 1)
        if carried is None:
            self._raise(slot, block, self._terms())
        elif not slot.cordoned:
            # (Its own resources: for one it lacks, its value is minus infinity.)
            self._raise(slot, block, [*slot.floats, OPEN])
            leaf = self._cap + self._leaves[block]
            values: Dict[Any, float] = {}
            floats = slot.floats
            for family, bounds in carried:
                for (term, tree), bound in zip(self._mixed_trees(family), bounds):
                    if bound <= tree[leaf]:
                        continue
                    # The old bound would do; the node's own value is tighter.
                    value = values.get(term)
                    if value is None:
                        value = values[term] = term[1].bound(floats)
                    if value > tree[leaf]:
                        self._set(tree, leaf, value)
        if len(nodes) > 2 * self._load:
            self._halve(block, 1, nodes, keys)

    def _mixed_trees(self, family: Any) -> List[Tuple[Any, Tree]]:
        """The family's mixed terms and their trees, in the same order until
        a tree is made or replaced. Cost: O(1), O(T) after such a change."""
        found = self._mixed.get(family)
        if found is None:
            found = self._mixed[family] = [
                (term, tree) for term, tree in self._families[family].items()
                if type(term) is tuple and term is not OPEN]
        return found

    def _halve(self, first: int, count: int, nodes: _Block, keys: List[Any]) -> None:
        """Replace ``count`` blocks from ``first`` on by two halves of ``nodes``."""
        half = len(nodes) // 2
        self._blocks[first:first + count] = nodes.halves()
        self._keys[first:first + count] = [keys[:half], keys[half:]]
        self._lasts[first:first + count] = [keys[half - 1], keys[-1]]
        self._replace(first, count, 2)

    def _take(self, slot: Any, block: int, position: int) -> None:
        nodes, keys = self._blocks[block], self._keys[block]
        nodes.delete_node(position)
        del keys[position]
        if not nodes:
            del self._blocks[block], self._keys[block], self._lasts[block]
            self._replace(block, 1, 0)
            return
        if position == len(keys):
            self._lasts[block] = keys[-1]
        if len(nodes) <= self._load // 4 and len(self._blocks) > 1:
            first = block if block + 1 < len(self._blocks) else block - 1
            merged = self._blocks[first].joined(self._blocks[first + 1])
            keys = self._keys[first] + self._keys[first + 1]
            if len(merged) > 2 * self._load:
                self._halve(first, 2, merged, keys)
            else:
                self._blocks[first:first + 2] = [merged]
                self._keys[first:first + 2] = [keys]
                self._lasts[first:first + 2] = [keys[-1]]
                self._replace(first, 2, 1)
            return
        self._count(block, -1)
        # The bounds stay as they are: upper bounds still (see _refresh).

    def _settle(self, trees: Optional[Iterable[Tree]] = None) -> None:
        """Bring the internal levels of ``trees`` (of every tree, by
        default) up to date. Cost: O(B) a tree that a split or merge left
        out of date, O(1) otherwise."""
        stale = self._stale
        if trees is None:
            self._settle_counts()
            trees = [tree for tree, _, _ in stale.values()]
        for tree in trees:
            entry = stale.pop(id(tree), None)
            if entry is not None:
                _rebuild(tree, self._cap, entry[1], entry[2])

    def _mix(self, family: Any, term: Any) -> Tree:
        """Give ``family`` a tree for the mixed ``term``, every bound infinite
        at first: searches make the bounds of the blocks they scan in vain
        exact. Cost: O(B) for B blocks."""
        self._mixed.clear()
        tree = self._families[family][term] = self._made(lambda nodes: INF)
        return tree

    def _made(self, bound: Callable[[_Block], float]) -> Tree:
        """A tree with ``bound(nodes)`` at each block's leaf, minus infinity
        at the gaps, its internal levels computed. Cost: O(B) calls."""
        cap = self._cap
        tree = [-INF] * cap + [-INF if nodes is None else bound(nodes) for nodes in self._row]
        _rebuild(tree, cap, 0, cap)
        return tree

    def _replace(self, first: int, removed: int, added: int,
                 families: Optional[Sequence[Any]] = None) -> None:
        """``removed`` blocks from ``first`` on were replaced by ``added``
        blocks holding the same nodes, give or take the one that came or went
        (a split, a merge, a block emptied). The new blocks take the leaves
        of the old ones, and the largest bound among them, an upper bound
        still; a leaf left over becomes a gap. A split's second half takes
        the gap after its first half, or else the nearest gap, the leaves
        between shifting by one towards it. The internal levels above the
        leaves rewritten are marked out of date (see :meth:`_settle`).

        Cost: O(T x D) for T trees and D leaves between the block and the
        nearest gap, in slices (none for a merge); O(T x B) for B blocks
        when they outgrow the trees or shrink well below them (the leaves
        are spread out again, with gaps between, in trees of the new size);
        O(T x N) for the ``families`` given (whose trees are computed afresh).
        """
        self._version += 1  # trees may be new lists (see _search)
        self._mixed.clear()
        self._known = self._found = None  # blocks changed
        if families is not None:
            for family in families:
                trees = self._families[family]
                for term in trees:
                    # (The bound is called at once, with this family and term.)
                    trees[term] = self._made(lambda nodes: self._leaf(nodes, family, term))
            return
        count = len(self._blocks)
        if count > self._cap or (count <= self._cap // 4 and self._cap > 1):
            self._resize(max(count, count - added + removed))
        cap, leaves, row = self._cap, self._leaves, self._row
        blocks = self._blocks
        old = leaves[first:first + removed]
        # ``moved``: the leaves from ``source`` on shift by ``step`` (one
        # towards the gap taken); ``begin`` to ``end``: the leaves rewritten.
        source = shifted = step = 0
        moved: Iterable[int] = ()
        if added <= removed:  # a merge or an emptied block: no shift
            new = old[:added]
            begin, end = old[0], old[-1] + 1
        elif not removed:  # the first block
            new = [0]
            begin, end = 0, 1
        else:  # a split: the second half takes the nearest gap
            at = old[0]
            after = leaves[first + 1] if first + 1 < len(leaves) else cap
            if at + 1 < after:
                new = [at, at + 1]
                begin, end = at, at + 2
            else:
                # The nearest gap on either side (one exists: count <= cap);
                # on a tie, the one on the right.
                try:
                    right = row.index(None, at + 1)
                except ValueError:
                    right = cap + cap  # none: farther than any on the left
                gap = at - 1
                while gap >= 0 and row[gap] is not None and at - gap < right - at:
                    gap -= 1
                if gap >= 0 and row[gap] is None and at - gap < right - at:
                    # The leaves after the gap, up to the block's, move left.
                    source, shifted, step = gap + 1, at - gap, -1
                    moved = range(first - (at - gap - 1), first)
                    new = [at - 1, at]
                    begin, end = gap, at + 1
                else:  # those after the block, up to the gap, move right
                    source, shifted, step = at + 1, right - at - 1, 1
                    moved = range(first + 1, first + (right - at))
                    new = [at, at + 1]
                    begin, end = at, right + 1
        stale = self._stale
        for family, trees in self._families.items():
            for term, tree in trees.items():
                if not removed:
                    bound = self._leaf(blocks[first], family, term)
                elif removed == 1:
                    bound = tree[cap + old[0]]
                else:
                    bound = max(tree[cap + old[0]], tree[cap + old[1]])
                if step:
                    tree[cap + source + step:cap + source + step + shifted] = \
                        tree[cap + source:cap + source + shifted]
                for leaf in old:
                    tree[cap + leaf] = -INF
                for leaf in new:
                    tree[cap + leaf] = bound
                # The internal levels are recomputed when a search needs
                # this tree (most mixed terms' trees wait long); _set stays
                # correct meanwhile: every ancestor of an out-of-date node
                # is out of date too.
                marked = stale.get(id(tree))
                if marked is not None:
                    stale[id(tree)] = (tree, min(begin, marked[1]), max(end, marked[2]))
                else:
                    stale[id(tree)] = (tree, begin, end)
        counts = self._counts
        if step:
            counts[cap + source + step:cap + source + step + shifted] = \
                counts[cap + source:cap + source + shifted]
            row[source + step:source + step + shifted] = row[source:source + shifted]
            for block in moved:
                leaves[block] += step
        for leaf in old:
            counts[cap + leaf] = 0
            row[leaf] = None
        for leaf, nodes in zip(new, blocks[first:first + added]):
            counts[cap + leaf] = len(nodes)
            row[leaf] = nodes
        leaves[first:first + removed] = new
        self._dirty_from = min(self._dirty_from, begin)
        self._dirty_to = max(self._dirty_to, end)

    def _resize(self, size: int) -> None:
        """Spread the blocks' leaves out again, evenly, with gaps between,
        in trees of the least power of two that holds ``size``, every tree
        marked out of date. Cost: O(T x B)."""
        cap, leaves = self._cap, self._leaves
        new_cap = 1
        while new_cap < size:
            new_cap *= 2
        step = new_cap // len(leaves)
        positions = [cap + leaf for leaf in leaves]
        stale = self._stale
        stale.clear()
        for trees in self._families.values():
            for term, tree in trees.items():
                fresh = trees[term] = _relaid(tree, positions, new_cap, step, -INF)
                stale[id(fresh)] = (fresh, 0, new_cap)
        self._counts = _relaid(self._counts, positions, new_cap, step, 0)
        row: List[Optional[_Block]] = [None] * new_cap
        row[:step * len(leaves):step] = [self._row[leaf] for leaf in leaves]
        self._row = row
        self._leaves = list(range(0, step * len(leaves), step))
        self._cap = new_cap
        self._dirty_from, self._dirty_to = 0, new_cap

    # ------------------------------------------------------------ searching

    def first_fit(self, workload: Workload, groups: FrozenSet[str] = frozenset(),
                  start: int = 0) -> Optional[Any]:
        """The first node, in order from the node of rank ``start`` and
        wrapping around once, where ``workload`` fits and that hosts none of
        ``groups``; ``None`` when there is none.

        Cost: O(T log N) for T pruning terms, plus O(L) per block whose
        bounds pass without a node of it fitting (L nodes a block); O(R) for
        a workload whose requirements and immunities were already proven to
        fit nowhere since the last time an open node gained room (a drain or
        a removal on a full cluster meets the same shapes again and again).
        """
        if not self._size:
            return None
        requirements = workload.requirements
        immunities = workload.immunities
        shape = (frozenset(requirements.items()), immunities)
        if shape in self._nowhere:
            return None
        search = self._searches.get(shape)
        if search is None or search[0] != self._version:
            if len(self._searches) >= MAX_PLANS:
                self._searches.clear()
            search = self._searches[shape] = self._search(requirements, immunities)
        _, family, terms, checks, skip_negative, sieve = search
        if family is None:
            return None  # no node has a required resource
        if start:
            block, position = self._at(start % self._size)
            found = self._scan(workload, family, terms, checks, groups, skip_negative,
                               block, position, len(self._blocks), 0, sieve)
            if found is None and (block or position):
                found = self._scan(workload, family, terms, checks, groups, skip_negative,
                                   0, 0, block, position, sieve)
        else:
            found = self._resumed(workload, shape, groups, family, terms, checks,
                                  skip_negative, sieve)
        if found is None and not groups:
            if len(self._nowhere) >= MAX_NOWHERE:
                self._nowhere.clear()
            self._nowhere.add(shape)
        return found

    def _search(self, requirements: Mapping[str, Decimal], immunities: FrozenSet[str]
                ) -> Tuple[int, Any, List[Tuple[Tree, Any, Any]],
                           List[Tuple[str, Decimal]], bool, Any]:
        """What a search for ``shape`` needs: (the index version it holds
        for, the family searched or ``None`` when no node has a required
        resource, the pruning terms as (tree, least value, term), their
        trees brought up to date (see :meth:`_settle`), the
        (resource, requirement) pairs checked, whether to skip nodes with a
        resource below zero, the sieve of :meth:`_scan`). It holds until a
        node joins or leaves, blocks split or merge, or a resource is first
        seen below zero (each bumps ``_version``). Cost: O(R) for R
        requirements, plus O(B) a tree left out of date by a split."""
        negative = self.negative
        clean = not negative or (negative.isdisjoint(requirements)
                                 and negative.isdisjoint(immunities))
        family = ALL
        if clean:
            family = CLEAN
            fewest = self._size
            for key in requirements:
                chosen = self._selected.get(key)
                if chosen is not None and self._present[key] < fewest:
                    family, fewest = chosen, self._present[key]
        trees = self._families[family]
        terms: List[Tuple[Tree, Any, Any]] = []
        checks: List[Tuple[str, Decimal]] = []
        for key, needed in requirements.items():
            tree = trees.get(key)
            if tree is None:
                return self._version, None, [], [], False, None
            if key not in immunities:
                terms.append((tree, float(needed), key))
                checks.append((key, needed))
        terms.append((trees[OPEN], 0.0, OPEN))
        term, floor, sieve = self._plan(requirements, checks)
        if term is not None:
            tree = trees.get(term)
            if tree is None:
                tree = self._mix(family, term)
            terms.insert(0, (tree, floor, term))
        # Only a split or merge leaves a tree out of date, and it bumps the
        # version: trees brought up to date now stay so while this holds.
        self._settle([tree for tree, _, _ in terms])
        return self._version, family, terms, checks, clean and bool(negative), sieve

    def _resumed(self, workload: Workload, shape: Any, groups: FrozenSet[str], family: Any,
                 terms: List[Tuple[Tree, Any, Any]], checks: List[Tuple[str, Decimal]],
                 skip_negative: bool,
                 sieve: Optional[Tuple[str, float, str, float]]) -> Optional[Any]:
        """The first node from the start of the order that takes ``workload``
        and hosts none of ``groups``, resuming the last such search for the
        same shape and groups when few nodes changed since.

        Nodes are ordered by key. The last search found that every node keyed
        below its answer's key then failed; a node that has not changed since
        still fails (whether a node takes a workload depends on the node's
        room, cordon and groups and on the workload's shape and groups, and
        its key changes only with its room), and a node that only lost room
        or gained groups fails it still. So the answer is the first of the
        nodes now keyed below that key that gained room or came from at or
        after it, if one takes the workload, or else the first node from that
        key on. Replicas of one workload, placed one after another, mostly
        resume where the last one landed. A search with groups may also
        resume the last search for the shape without groups: a node that
        fails a workload fails it with groups.
        Cost: O(C) for C <= ``RESUME`` noted changes, plus a search from the
        old answer on; a full search otherwise.
        """
        memo = (shape, groups)
        last = self._recent(memo)
        if last is None and groups:
            last = self._recent((shape, NO_GROUPS))
        block = position = 0
        if last is not None:
            serial, _, bound = last
            # The nodes that may pass now: those keyed before the old answer
            # that gained room (or joined, ...) or came from at or after it.
            changed = list({slot for slot, old in self._log[serial - self._log_start:]
                            if slot.key is not None and (
                                old is None if bound is None else
                                slot.key < bound and (old is None or not old < bound))})
            changed.sort(key=_key_of)
            found = None
            for slot in changed:
                if not slot.cordoned and check_fit(slot.remaining, workload) is None \
                        and not (groups and any(group in slot.groups for group in groups)):
                    found = slot
                    break
            if found is not None or bound is None:
                self._remember(memo, found)
                return found
            block = bisect_left(self._lasts, bound)
            if block == len(self._blocks):
                self._remember(memo, None)
                return None
            position = bisect_left(self._keys[block], bound)
        found = self._scan(workload, family, terms, checks, groups, skip_negative,
                           block, position, len(self._blocks), 0, sieve)
        self._remember(memo, found)
        return found

    def _recent(self, memo: Any) -> Optional[Tuple[int, Any, Any]]:
        """The last answer for ``memo`` if the log still holds every change
        since, and they are few."""
        last = self._answers.get(memo)
        if last is not None and last[0] >= self._log_start \
                and self._serial - last[0] <= RESUME:
            return last
        return None

    def _remember(self, memo: Any, found: Optional[Any]) -> None:
        answers = self._answers
        if len(answers) >= MAX_PLANS:
            answers.clear()
        answers[memo] = (self._serial + 1, found, None if found is None else found.key)

    def _plan(self, requirements: Mapping[str, Decimal],
              checks: List[Tuple[str, Decimal]]) -> Tuple[Any, float, Any]:
        """What a shape's searches need beyond its requirements: its mixed
        term (made now if there is room for one more) and the least scaled
        requirement it must reach, and the sieve of :meth:`_scan`; kept in
        the shape's search context (see :meth:`_search`)."""
        term, floor = None, 0.0
        # At most MIX_WIDTH resources, the ones most nodes have: any subset
        # of the requirements gives a true bound, and common resources let
        # shapes share terms (a semaphore is pruned on by its own term).
        present = self._present
        widest = sorted((key for key, needed in checks if needed > ZERO),
                        key=lambda key: (-present[key], key))[:MIX_WIDTH]
        mixed = tuple(sorted((key, _bucket(requirements[key])) for key in widest))
        if len(mixed) > 1:
            term = self._mixes.get(mixed)
            if term is None and len(self._mixes) < MAX_MIXES:
                term = self._mixes[mixed] = ("mixed", _Scales(
                    {key: 2.0 ** -bucket for key, bucket in mixed}))
            if term is not None:
                least = min(float(requirements[key]) * scale for key, scale in term[1].items())
                floor = least - abs(least) * SLACK - SLACK
        positive = [(key, float(needed)) for key, needed in checks if needed > ZERO][:2]
        sieve = (*positive[0], *positive[-1]) if positive else None
        return term, floor, sieve

    def _scan(self, workload: Workload, family: Any, terms: List[Tuple[Tree, Any, Any]],
              checks: List[Tuple[str, Decimal]], groups: FrozenSet[str],
              skip_negative: bool, block: int, position: int,
              end_block: int, end_position: int,
              sieve: Optional[Tuple[str, float, str, float]] = None) -> Optional[Any]:
        """Search from (block, position) up to, not including, (end_block,
        end_position). A block whose bounds pass but where no node fits has
        its bounds for these terms made exact."""
        cap = self._cap
        height = cap.bit_length()  # of a leaf's position
        # (``row`` names a node's floats below.) A gap (None) is never read:
        # its bounds are minus infinity.
        owners = cast(List[_Block], self._row)
        leaves = self._leaves
        index = start = cap + leaves[block]
        # (Past the last block: beyond every leaf.)
        last = cap + leaves[end_block] if end_block < len(leaves) else cap + cap
        while True:
            for tree, needed, _ in terms:
                if tree[index] < needed:
                    break
            else:
                if index < cap:
                    index *= 2
                    continue
                if index > last or (index == last and not end_position):
                    return None
                # (Never a gap: its bounds are minus infinity.)
                nodes = owners[index - cap]
                stop = end_position if index == last else len(nodes)
                begin = position if index == start else 0
                # The first few nodes are tried as they are (RoundRobin
                # usually takes the first); the rest are sieved first on the
                # float copy of one positive requirement: floats round
                # monotonically, so a node whose float falls short falls short
                # exactly too. check_fit still decides.
                head = begin + HEAD if sieve is not None else stop
                part: Optional[Iterable[Any]]
                for part in (nodes[begin:head], None):
                    if part is None:
                        if head >= stop:
                            break
                        assert sieve is not None  # else head is stop
                        key, floor, other, least = sieve
                        columns = nodes.columns
                        first, second = columns.get(key), columns.get(other)
                        if first is None or second is None:
                            break  # no node of the block has the resource
                        # (In C, from the block's columns of floats.)
                        part = compress(nodes[head:stop], map(
                            and_, map(ge, first[head:stop], repeat(floor)),
                            map(ge, second[head:stop], repeat(least))))
                    for slot in part:
                        if slot.cordoned or (skip_negative and slot.negative):
                            continue
                        remaining = slot.remaining
                        for key, needed in checks:
                            if remaining.get(key, NEG) < needed:
                                break
                        else:
                            if groups:
                                hosted = slot.groups
                                if any(group in hosted for group in groups):
                                    continue
                            if check_fit(remaining, workload) is None:
                                self._found = (slot, bisect_left(leaves, index - cap),
                                               nodes.index(slot, begin))
                                return slot
                if begin == 0 and stop == len(nodes):
                    self._tighten(nodes, family, terms, index)
            # On to the next subtree: up past the right children (trailing
            # ones), then to the right sibling.
            index >>= (index ^ (index + 1)).bit_length() - 1
            if not index:
                return None
            index += 1
            # A subtree starting right of the end holds nothing wanted (its
            # first leaf: the subtree's root shifted down to the leaves).
            probe = index << (height - index.bit_length())
            if probe > last or (probe == last and not end_position):
                return None


class _Scales(dict[str, float]):  # (a plain dict subclass at run time)
    """A mixed term's resources and their scales (hashable by identity);
    ``least(floats)``: the least scaled quantity of a node (minus infinity
    when it lacks one of the resources: a workload of a shape using the
    term requires each of them, above zero); and ``largest(column)``: the
    exact bound of the term over a block, the largest ``least`` raised past
    rounding, from ``column(resource)``, the block's floats for the
    resource, or ``None`` when no node of it has the resource (both written
    out for two and three resources, the usual cases: ``largest`` runs for
    every block made exact)."""

    __hash__ = object.__hash__  # type: ignore[assignment]  # by identity, unlike a dict

    def __init__(self, scales: Mapping[str, float]):
        super().__init__(scales)
        self.least, self.largest = _least_of(tuple(scales.items()))

    def __eq__(self, other: object) -> bool:
        return self is other

    def bound(self, floats: Mapping[str, float]) -> float:
        """A node's value for the mixed term: the least of its scaled
        remaining quantities, raised past float rounding (see
        :func:`_upper`), so an upper bound still. A workload needing all
        these resources fits only where this reaches the least of its own
        scaled requirements."""
        return _upper(self.least(floats))


Column = Callable[[str], Optional[Sequence[float]]]


def _least_of(items: Tuple[Tuple[str, float], ...]) -> Tuple[
        Callable[[Mapping[str, float]], float], Callable[[Column], Any]]:
    """``least(floats)`` and ``largest(column)`` of :class:`_Scales`."""
    if len(items) == 2:
        (first, one), (second, two) = items

        def least(floats: Mapping[str, float]) -> float:
            x, y = floats.get(first, -INF) * one, floats.get(second, -INF) * two
            return x if x < y else y

        def largest(column: Column) -> Any:
            xs, ys = column(first), column(second)
            if xs is None or ys is None:
                return -INF
            return _upper(max([x if (x := a * one) < (y := b * two) else y
                               for a, b in zip(xs, ys)], default=-INF))
    elif len(items) == 3:
        (first, one), (second, two), (third, three) = items

        def least(floats: Mapping[str, float]) -> float:
            x, y = floats.get(first, -INF) * one, floats.get(second, -INF) * two
            z = floats.get(third, -INF) * three
            x = x if x < y else y
            return x if x < z else z

        def largest(column: Column) -> Any:
            xs, ys, zs = column(first), column(second), column(third)
            if xs is None or ys is None or zs is None:
                return -INF
            return _upper(max([
                least if (least := x if (x := a * one) < (y := b * two) else y)
                < (z := c * three) else z for a, b, c in zip(xs, ys, zs)], default=-INF))
    else:
        def least(floats: Mapping[str, float]) -> float:
            return min([floats.get(key, -INF) * scale for key, scale in items])

        def largest(column: Column) -> Any:
            found = [values for key, _ in items if (values := column(key)) is not None]
            if len(found) < len(items):
                return -INF
            return _upper(max(map(min, *[[value * scale for value in values]
                                         for values, (_, scale) in zip(found, items)]),
                              default=-INF))
    return least, largest


def _upper(value: float) -> float:
    """``value`` raised by far more than float rounding could have lowered
    it; increasing, so the largest of raised values is the raised largest."""
    if value in (INF, -INF):
        return value
    return value + abs(value) * SLACK + SLACK


def _bucket(quantity: Decimal) -> int:
    """The exponent of 2 of the power of 4 nearest a requirement: workloads
    of similar shape share a mixed term, scaled to them (measured: powers of
    4 prune about as well as powers of 2, with fewer terms to keep up)."""
    magnitude = abs(float(quantity))
    return 2 * round(math.log(magnitude, 4)) if 0 < magnitude < INF else 0


def _open_mask(nodes: Sequence[Any], family: Any) -> List[bool]:
    """Which of ``nodes`` are open (not cordoned) members of ``family``
    (:meth:`NodeIndex._member`, written out for speed)."""
    if family is ALL:
        return [not slot.cordoned for slot in nodes]
    if family is CLEAN:
        return [not (slot.cordoned or slot.negative) for slot in nodes]
    key = family[1]
    return [not (slot.cordoned or slot.negative) and key in slot.remaining
            for slot in nodes]


def _exact_bounds(nodes: _Block, family: Any, terms: Sequence[Any]) -> List[float]:
    """The exact bound of each of ``terms`` over the open members of
    ``family`` in the block ``nodes``, from its columns: for a resource the
    largest float (see the module docstring), for a mixed term its
    :meth:`_Scales.largest`. Cost: O(L) a term, in C for resources."""
    mask = _open_mask(nodes, family)
    if not any(mask):
        return [-INF] * len(terms)
    every = all(mask)
    columns = nodes.columns

    def column(key: str) -> Optional[Sequence[float]]:
        found = columns.get(key)
        if found is None or every:
            return found
        return list(compress(found, mask))

    values = []
    for term in terms:
        if term is OPEN:
            values.append(0.0)
        elif type(term) is tuple:
            values.append(term[1].largest(column))
        else:
            found = column(term)
            values.append(-INF if found is None else max(found))
    return values


def _key_of(slot: Any) -> Any:
    return slot.key


def _negative(remaining: Mapping[str, Decimal]) -> bool:
    return any(value < ZERO for value in remaining.values())


def _relaid(row: List[Any], positions: List[int], cap: int, step: int,
            empty: Any) -> List[Any]:
    """The leaves of ``row`` at ``positions``, laid out ``step`` apart from
    the first leaf of a row for ``cap`` leaves (internal levels left to
    recompute), ``empty`` elsewhere."""
    fresh = [empty] * (2 * cap)
    fresh[cap:cap + step * len(positions):step] = list(map(row.__getitem__, positions))
    return fresh


def _rebuild(tree: List[Any], cap: int, first: int, end: int, counts: bool = False) -> None:
    """Recompute the internal nodes above leaves ``first`` to ``end``
    (excluded), level by level: each the larger of its children (their sum
    in a tree of ``counts``). List comprehensions over pairs: ``map(max,
    ...)`` costs about four times as much (``max`` parses its arguments on
    every call)."""
    low, high = (cap + first) >> 1, ((cap + end - 1) >> 1) + 1
    while low:
        pairs = iter(tree[2 * low:2 * high])
        if counts:
            tree[low:high] = [left + right for left, right in zip(pairs, pairs)]
        else:
            tree[low:high] = [left if left >= right else right
                              for left, right in zip(pairs, pairs)]
        low >>= 1
        high = ((high - 1) >> 1) + 1
