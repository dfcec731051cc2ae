"""The node index: a distributor's nodes in strategy order, searchable by fit bounds.

Node choice is "the first node, in the strategy's order, where the workload
fits". Scanning every node answers it in O(N) per placement; this index
answers it in about O(log N) by skipping runs of nodes that provably cannot
fit, and leaves every yes to :func:`pylighthouse.fit.check_fit`.

Layout (chosen for pure Python): the nodes sit in a list of *blocks*, each a
short list kept sorted by the node's order key (its join sequence for
Prioritized and RoundRobin, its rubric sort key for BinPack), as in
sortedcontainers. Over the blocks, one flat segment tree per *term* holds,
for every block and every run of blocks, an upper bound:

* a resource name: the largest remaining quantity of that resource in the
  block (a node lacking it counts as minus infinity);
* :data:`OPEN`: zero when some node in the block is not cordoned;
* :data:`CLEAN`: zero when some node in the block has no resource below zero.

A search walks the trees leftmost first from a start block and skips every
subtree where a required, non-immune resource is bounded below the
requirement, where every node is cordoned, or (for a workload that neither
requires nor is immune to any resource ever seen below zero) where every
node has a shortcoming or a ward. Inside a surviving block it tests each node
with the same cheap bounds, then with ``check_fit``.

The bounds are exact maxima, kept up to date after every change of one node
(O(R log B) for R changed resources and B blocks, plus O(L) to recompute a
block of L nodes when the changed node held its maximum). Blocks split above
``2 * load`` nodes and merge at ``load / 4`` or fewer; only then are the trees'
leaves shifted and the internal levels right of the change recomputed.
"""
from bisect import bisect_left, insort
from decimal import Decimal
from typing import (Any, Callable, Dict, FrozenSet, Iterator, List, Mapping,
                    Optional, Sequence, Tuple)

from .fit import check_fit
from .model import Workload
from .quantities import ZERO

__all__ = ["NodeIndex", "OPEN", "CLEAN"]

NEG = Decimal("-Infinity")
#: Term: zero where some node takes new workloads (not cordoned).
OPEN = ("open",)
#: Term: zero where some node has no resource below zero.
CLEAN = ("clean",)

DEFAULT_LOAD = 32


class NodeIndex:
    """Nodes (the distributor's slots) in order, with per-block upper bounds.

    ``key`` gives a node's order key; it is read when the node joins and,
    when ``rekey`` is set, again after each change of its remaining
    resources. Slots must have ``remaining``, ``cordoned``, ``groups``, and
    the index's own ``key`` and ``negative`` attributes.
    """

    def __init__(self, key: Callable[[Any], Any], rekey: bool = False,
                 load: int = DEFAULT_LOAD):
        self._key = key
        self._rekey = rekey
        self._load = load
        self._blocks: List[List[Any]] = []
        self._keys: List[List[Any]] = []
        self._lasts: List[Any] = []
        self._cap = 1
        self._bounds: Dict[Any, List[Decimal]] = {OPEN: [NEG, NEG], CLEAN: [NEG, NEG]}
        self._counts: List[int] = [0, 0]
        #: Resources seen below zero on some node (only ever grows).
        self.negative: set = set()
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Any]:
        """The nodes in order. Cost: O(N)."""
        for block in self._blocks:
            yield from block

    # ------------------------------------------------------------- values

    @staticmethod
    def _value(slot: Any, term: Any) -> Decimal:
        if term is OPEN:
            return NEG if slot.cordoned else ZERO
        if term is CLEAN:
            return NEG if slot.negative else ZERO
        return slot.remaining.get(term, NEG)

    def _bound(self, block: Sequence[Any], term: Any) -> Decimal:
        """The exact bound of ``term`` over ``block``. Cost: O(len(block))."""
        if term is OPEN:
            return ZERO if any(not slot.cordoned for slot in block) else NEG
        if term is CLEAN:
            return ZERO if any(not slot.negative for slot in block) else NEG
        return max([slot.remaining.get(term, NEG) for slot in block], default=NEG)

    def _set(self, tree: List[Decimal], index: int, value: Decimal) -> None:
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
        index = self._cap + block
        counts = self._counts
        while index:
            counts[index] += delta
            index >>= 1

    # ------------------------------------------------------------ locating

    def _locate(self, slot: Any) -> Tuple[int, int]:
        """(block, position in block) of ``slot``. Cost: O(log N)."""
        key = slot.key
        block = bisect_left(self._lasts, key)
        return block, bisect_left(self._keys[block], key)

    def rank(self, slot: Any) -> int:
        """The number of nodes before ``slot`` in order. Cost: O(log N)."""
        block, position = self._locate(slot)
        index = self._cap + block
        counts = self._counts
        before = position
        while index > 1:
            if index & 1:
                before += counts[index - 1]
            index >>= 1
        return before

    def _at(self, rank: int) -> Tuple[int, int]:
        """(block, position) of the node with ``rank`` nodes before it. O(log B)."""
        counts = self._counts
        index = 1
        while index < self._cap:
            index *= 2
            if counts[index] <= rank:
                rank -= counts[index]
                index += 1
        return index - self._cap, rank

    # ------------------------------------------------------------ changing

    def add(self, slot: Any) -> None:
        """A node joins. Cost: O(R log N), amortised."""
        slot.key = self._key(slot)
        slot.negative = _negative(slot.remaining)
        if slot.negative:
            self.negative.update(k for k, v in slot.remaining.items() if v < ZERO)
        for term in slot.remaining:
            if term not in self._bounds:
                self._bounds[term] = [NEG] * (2 * self._cap)
        self._size += 1
        self._insert(slot)

    def remove(self, slot: Any) -> None:
        """A node leaves. Cost: O(R log N + load x R), amortised."""
        self._size -= 1
        self._take(slot, *self._locate(slot))

    def cordoned(self, slot: Any) -> None:
        """``slot.cordoned`` changed. Cost: O(load + log N)."""
        block, _ = self._locate(slot)
        self._set(self._bounds[OPEN], self._cap + block,
                  self._bound(self._blocks[block], OPEN))

    def changed(self, slot: Any, before: Mapping[str, Decimal]) -> None:
        """``slot.remaining`` changed; ``before`` holds the old values of the
        resources that changed. Cost: O(R log N), plus O(load) per resource
        whose block maximum the node held, plus a move for BinPack."""
        remaining = slot.remaining
        was_negative = slot.negative
        if any(value < ZERO for value in before.values()) or \
                any(remaining[key] < ZERO for key in before):
            slot.negative = _negative(remaining)
            self.negative.update(k for k in before if remaining[k] < ZERO)
        if self._rekey:
            key = self._key(slot)
            if key != slot.key:
                self._move(slot, key, before, was_negative)
                return
        block, _ = self._locate(slot)
        self._refresh(slot, block, before, was_negative)

    def _refresh(self, slot: Any, block: int, before: Mapping[str, Decimal],
                 was_negative: bool) -> None:
        """Fix the bounds of ``block`` after ``slot`` (in it) changed."""
        leaf = self._cap + block
        nodes = self._blocks[block]
        bounds = self._bounds
        remaining = slot.remaining
        for term, old in before.items():
            tree = bounds[term]
            value = remaining[term]
            if value > tree[leaf]:
                self._set(tree, leaf, value)
            elif value < old and old >= tree[leaf]:
                self._set(tree, leaf, self._bound(nodes, term))
        if slot.negative != was_negative:
            self._set(bounds[CLEAN], leaf, self._bound(nodes, CLEAN))

    def _move(self, slot: Any, key: Any, before: Mapping[str, Decimal],
              was_negative: bool) -> None:
        """Re-key ``slot`` (BinPack: its score changed)."""
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
            if position + 1 == len(keys):
                self._lasts[block] = key
            self._refresh(slot, block, before, was_negative)
            return
        # Out with the old values, in with the new.
        current = {term: slot.remaining[term] for term in before}
        slot.remaining.update(before)
        negative_now, slot.negative = slot.negative, was_negative
        self._take(slot, block, position)
        slot.remaining.update(current)
        slot.negative = negative_now
        slot.key = key
        self._insert(slot)

    def _insert(self, slot: Any) -> None:
        key = slot.key
        if not self._blocks:
            self._blocks.append([slot])
            self._keys.append([key])
            self._lasts.append(key)
            self._restructure(0)
            return
        block = bisect_left(self._lasts, key)
        if block == len(self._blocks):
            block -= 1
            self._lasts[block] = key
        nodes, keys = self._blocks[block], self._keys[block]
        position = bisect_left(keys, key)
        keys.insert(position, key)
        nodes.insert(position, slot)
        if len(nodes) > 2 * self._load:
            half = len(nodes) // 2
            self._blocks[block:block + 1] = [nodes[:half], nodes[half:]]
            self._keys[block:block + 1] = [keys[:half], keys[half:]]
            self._lasts[block:block + 1] = [keys[half - 1], keys[-1]]
            self._restructure(block)
            return
        self._count(block, 1)
        leaf = self._cap + block
        for term, tree in self._bounds.items():
            value = self._value(slot, term)
            if value > tree[leaf]:
                self._set(tree, leaf, value)

    def _take(self, slot: Any, block: int, position: int) -> None:
        nodes, keys = self._blocks[block], self._keys[block]
        del nodes[position]
        del keys[position]
        if not nodes:
            del self._blocks[block], self._keys[block], self._lasts[block]
            self._restructure(block)
            return
        if position == len(keys):
            self._lasts[block] = keys[-1]
        if len(nodes) <= self._load // 4 and len(self._blocks) > 1:
            other = block + 1 if block + 1 < len(self._blocks) else block - 1
            first, second = sorted((block, other))
            self._blocks[first:second + 1] = [self._blocks[first] + self._blocks[second]]
            self._keys[first:second + 1] = [self._keys[first] + self._keys[second]]
            self._lasts[first:second + 1] = [self._lasts[second]]
            merged = self._blocks[first]
            if len(merged) > 2 * self._load:
                half = len(merged) // 2
                keys = self._keys[first]
                self._blocks[first:first + 1] = [merged[:half], merged[half:]]
                self._keys[first:first + 1] = [keys[:half], keys[half:]]
                self._lasts[first:first + 1] = [keys[half - 1], keys[-1]]
            self._restructure(first)
            return
        self._count(block, -1)
        leaf = self._cap + block
        for term, tree in self._bounds.items():
            if self._value(slot, term) >= tree[leaf]:
                self._set(tree, leaf, self._bound(nodes, term))

    def _restructure(self, first: int) -> None:
        """Blocks from ``first`` on changed: recompute their leaves and the
        internal levels above them. Cost: O((B - first) x terms + load x terms)."""
        count = len(self._blocks)
        if count > self._cap or (count <= self._cap // 4 and self._cap > 1):
            cap = 1
            while cap < count:
                cap *= 2
            self._cap = cap
            first = 0
            for term in self._bounds:
                self._bounds[term] = [NEG] * (2 * cap)
            self._counts = [0] * (2 * cap)
        cap = self._cap
        blocks = self._blocks[first:]
        for term, tree in self._bounds.items():
            tree[cap + first:2 * cap] = [self._bound(nodes, term) for nodes in blocks] + \
                [NEG] * (cap - count)
            _rebuild(tree, cap, first, max)
        self._counts[cap + first:2 * cap] = [len(nodes) for nodes in blocks] + \
            [0] * (cap - count)
        _rebuild(self._counts, cap, first, _add)

    # ------------------------------------------------------------ searching

    def first_fit(self, workload: Workload, groups: FrozenSet[str] = frozenset(),
                  start: int = 0) -> Optional[Any]:
        """The first node, in order from the node of rank ``start`` and
        wrapping around once, where ``workload`` fits and that hosts none of
        ``groups``; ``None`` when there is none.

        Cost: O(T log N + L) per surviving block, with T the workload's
        pruning terms and L the block's nodes; on clusters where whole runs
        of nodes are full, a few blocks.
        """
        if not self._size:
            return None
        terms: List[Tuple[List[Decimal], Decimal]] = []
        checks: List[Tuple[str, Decimal]] = []
        immunities = workload.immunities
        requirements = workload.requirements
        bounds = self._bounds
        for key, needed in requirements.items():
            tree = bounds.get(key)
            if tree is None:
                return None  # no node has the resource
            if key not in immunities:
                terms.append((tree, needed))
                checks.append((key, needed))
        terms.append((bounds[OPEN], ZERO))
        negative = self.negative
        clean = not negative or (negative.isdisjoint(requirements)
                                 and negative.isdisjoint(immunities))
        if clean and negative:
            terms.append((bounds[CLEAN], ZERO))
        if start:
            block, position = self._at(start % self._size)
        else:
            block = position = 0
        found = self._scan(workload, terms, checks, groups, clean and bool(negative),
                           block, position, len(self._blocks), 0)
        if found is None and (block or position):
            found = self._scan(workload, terms, checks, groups,
                               clean and bool(negative), 0, 0, block, position)
        return found

    def _scan(self, workload: Workload, terms: List[Tuple[List[Decimal], Decimal]],
              checks: List[Tuple[str, Decimal]], groups: FrozenSet[str], clean: bool,
              block: int, position: int, end_block: int, end_position: int) -> Optional[Any]:
        """Search from (block, position) up to, not including, (end_block,
        end_position)."""
        cap = self._cap
        blocks = self._blocks
        index = cap + block
        last = cap + end_block
        while True:
            for tree, needed in terms:
                if tree[index] < needed:
                    break
            else:
                if index < cap:
                    index *= 2
                    continue
                if index > last or (index == last and not end_position):
                    return None
                nodes = blocks[index - cap]
                stop = end_position if index == last else len(nodes)
                begin = position if index == cap + block else 0
                for at in range(begin, stop):
                    slot = nodes[at]
                    if slot.cordoned or (clean and slot.negative):
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
                            return slot
            while index & 1:
                index >>= 1
            if not index:
                return None
            index += 1
            # A subtree starting right of the end holds nothing wanted.
            probe = index
            while probe < cap:
                probe *= 2
            if probe > last or (probe == last and not end_position):
                return None


def _negative(remaining: Mapping[str, Decimal]) -> bool:
    return any(value < ZERO for value in remaining.values())


def _add(left: int, right: int) -> int:
    return left + right


def _rebuild(tree: List[Any], cap: int, first: int, combine: Callable[[Any, Any], Any]) -> None:
    """Recompute the internal nodes above leaves ``first`` and after, level
    by level (slices and ``map`` keep the loop in C)."""
    low, high = (cap + first) // 2, cap
    while high > 1:
        tree[low:high] = map(combine, tree[2 * low:2 * high:2], tree[2 * low + 1:2 * high:2])
        low //= 2
        high //= 2
