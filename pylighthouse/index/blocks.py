"""One class of nodes in the strategy's order: blocks of nodes, float columns, exact bounds.

A :class:`NodeClass` holds the nodes that share one set of counted resources
(every resource whose capacity is not zero: quantities, semaphores,
shortcomings, wards). They sit in a list of :class:`Block`, each a short list
kept sorted by the nodes' order keys, as in sortedcontainers. Per block and
per *column* (a counted resource, a tag asked for often, and :data:`OPEN`)
the block keeps its nodes' remaining quantities as floats, side by side,
and the class keeps, per column, the largest value of each block: its
*bound*. A cordoned node reads minus infinity in every column, so bounds
cover the open nodes only.

Bounds are exact at all times: raising a value raises the bound, lowering
the value that was the bound recomputes it from the block's column (O(L) in
C for L nodes a block). Floats never reverse the order of two quantities,
so a float bound below a requirement's float proves that no node of the
block has enough.

Cost: inserting or deleting a node O(log N + C x L), C columns; a change
of k quantities O(log N + k x L) at worst, O(k) mostly.
"""
from bisect import bisect_left
from collections import Counter
from typing import Any, Dict, Iterable, Iterator, List, Set, Tuple

__all__ = ["Block", "NodeClass", "OPEN", "NEG", "column_value", "at_least"]

NEG = float("-inf")
#: At most this many shapes, and vectors per shape, remembered as refused by a block.
MAX_REFUSED = 256
MAX_VECTORS = 4
#: The column that reads 0 for an open node and minus infinity for a
#: cordoned one ("" is never a resource name).
OPEN = ""


def column_value(slot: Any, key: str) -> float:
    """The float a node shows in column ``key``: its remaining quantity,
    minus infinity when it lacks ``key`` or is cordoned. O(1)."""
    if slot.cordoned:
        return NEG
    if key == OPEN:
        return 0.0
    value = slot.remaining.get(key)
    return NEG if value is None else float(value)


class Block:
    """A run of nodes in order: their slots, order keys and float columns.

    ``refused`` remembers, per workload shape, requirement vectors that no
    node of the block takes, as of ``version``; the version moves whenever
    a node of the block gains room, joins it or is uncordoned, which is
    the only way a refusal can turn into a fit.
    """

    __slots__ = ("slots", "keys", "cols", "version", "refused")

    def __init__(self, slots: List[Any], columns: List[str]):
        self.slots = slots
        self.keys = [slot.key for slot in slots]
        self.cols: Dict[str, List[float]] = {
            key: [column_value(slot, key) for slot in slots] for key in columns}
        self.version = 0
        self.refused: Dict[Any, Tuple[int, List[Any]]] = {}

    def refuses(self, shape: Any, needed: Tuple[Any, ...]) -> bool:
        """Whether a vector of ``shape`` at most ``needed`` was refused by
        every node since the block last grew. O(V x R)."""
        known = self.refused.get(shape)
        if known is None or known[0] != self.version:
            return False
        return any(all(map(at_least, needed, old)) for old in known[1])

    def refuse(self, shape: Any, needed: Tuple[Any, ...]) -> None:
        """Remember that no node of the block takes ``needed`` of ``shape``."""
        known = self.refused.get(shape)
        if known is None or known[0] != self.version:
            if len(self.refused) >= MAX_REFUSED:
                self.refused.clear()
            known = self.refused[shape] = (self.version, [])
        vectors = known[1]
        if len(vectors) >= MAX_VECTORS:
            del vectors[0]
        vectors.append(needed)

    def __len__(self) -> int:
        return len(self.slots)

    def bound(self, key: str) -> float:
        """The largest value of column ``key``. O(L)."""
        return max(self.cols[key], default=NEG)


class NodeClass:
    """The nodes with one set of counted resources (``keys``), in order.

    ``tags`` maps each tag (a resource of capacity 0) that some node of the
    class has to those nodes; ``signed`` counts, per resource, the nodes whose
    capacity is below zero (shortcomings, wards): those resources are sieved
    even for workloads that do not ask for them.
    """

    __slots__ = ("keys", "columns", "blocks", "lasts", "bounds", "tags", "signed",
                 "load", "size")

    def __init__(self, keys: frozenset, load: int):
        self.keys = keys
        self.columns: List[str] = sorted(keys) + [OPEN]
        self.blocks: List[Block] = []
        self.lasts: List[Any] = []  # each block's last key, for bisection
        self.bounds: Dict[str, List[float]] = {key: [] for key in self.columns}
        self.tags: Dict[str, Set[Any]] = {}
        self.signed: Counter = Counter()
        self.load = load
        self.size = 0

    def __iter__(self) -> Iterator[Any]:
        for block in self.blocks:
            yield from block.slots

    # -------------------------------------------------------------- finding

    def locate(self, key: Any) -> Tuple[int, int]:
        """The block and position of the node with order key ``key``. O(log N)."""
        index = bisect_left(self.lasts, key)
        return index, bisect_left(self.blocks[index].keys, key)

    def count_before(self, key: Any) -> int:
        """How many nodes of the class come before order key ``key``. O(N / L)."""
        index = bisect_left(self.lasts, key)
        before = sum(len(block) for block in self.blocks[:index])
        if index < len(self.blocks):
            before += bisect_left(self.blocks[index].keys, key)
        return before

    # ------------------------------------------------------------- changing

    def add_column(self, key: str) -> None:
        """Keep a column for ``key`` (a tag asked for often). O(N)."""
        if key in self.bounds:
            return
        self.columns.append(key)
        for block in self.blocks:
            block.cols[key] = [column_value(slot, key) for slot in block.slots]
        self.bounds[key] = [block.bound(key) for block in self.blocks]

    def insert(self, slot: Any) -> None:
        """Put ``slot`` at the place of its order key ``slot.key``."""
        key = slot.key
        blocks = self.blocks
        self.size += 1
        if not blocks:
            self._new_block(0, [slot])
            return
        index = bisect_left(self.lasts, key)
        if index == len(blocks):
            index -= 1
            if len(blocks[index]) >= self.load:  # appending: start a new block
                self._new_block(index + 1, [slot])
                return
        block = blocks[index]
        position = bisect_left(block.keys, key)
        block.version += 1
        block.slots.insert(position, slot)
        block.keys.insert(position, key)
        for column, values in block.cols.items():
            value = column_value(slot, column)
            values.insert(position, value)
            bounds = self.bounds[column]
            if value > bounds[index]:
                bounds[index] = value
        self.lasts[index] = block.keys[-1]
        if len(block) > 2 * self.load:
            self._split(index)

    def delete(self, index: int, position: int) -> None:
        """Take out the node at ``position`` of block ``index``."""
        block = self.blocks[index]
        del block.slots[position]
        del block.keys[position]
        self.size -= 1
        if not block.slots:
            self._drop_block(index)
            return
        for column, values in block.cols.items():
            value = values.pop(position)
            bounds = self.bounds[column]
            if value >= bounds[index]:
                bounds[index] = max(values)
        self.lasts[index] = block.keys[-1]
        if len(block) * 4 < self.load and len(self.blocks) > 1:
            self._merge(index if index + 1 < len(self.blocks) else index - 1)

    def update(self, index: int, position: int, keys: Iterable[str], grew: bool) -> None:
        """Rewrite the node's columns among ``keys`` after its room changed
        (``grew``: some quantity of it went up, or it was uncordoned)."""
        block = self.blocks[index]
        slot = block.slots[position]
        if grew:
            block.version += 1
        cols = block.cols
        for key in keys:
            values = cols.get(key)
            if values is None:
                continue
            old = values[position]
            value = values[position] = column_value(slot, key)
            bounds = self.bounds[key]
            if value > bounds[index]:
                bounds[index] = value
            elif value < old and old >= bounds[index]:
                bounds[index] = max(values)

    def refresh(self, index: int, position: int) -> None:
        """Rewrite every column of the node (it was cordoned or uncordoned)."""
        block = self.blocks[index]
        self.update(index, position, list(block.cols), not block.slots[position].cordoned)

    # ------------------------------------------------------------- blocks

    def _new_block(self, index: int, slots: List[Any]) -> None:
        block = Block(slots, self.columns)
        self.blocks.insert(index, block)
        self.lasts.insert(index, block.keys[-1])
        for column in self.columns:
            self.bounds[column].insert(index, block.bound(column))

    def _drop_block(self, index: int) -> None:
        del self.blocks[index]
        del self.lasts[index]
        for bounds in self.bounds.values():
            del bounds[index]

    def _split(self, index: int) -> None:
        slots = self.blocks[index].slots
        half = len(slots) // 2
        self._drop_block(index)
        self._new_block(index, slots[half:])
        self._new_block(index, slots[:half])

    def _merge(self, index: int) -> None:
        """Join blocks ``index`` and ``index + 1`` (split again if too long)."""
        slots = self.blocks[index].slots + self.blocks[index + 1].slots
        self._drop_block(index + 1)
        self._drop_block(index)
        self._new_block(index, slots)
        if len(slots) > 2 * self.load:
            self._split(index)


def at_least(needed: Any, known: Any) -> bool:
    """``needed >= known``, for ``map``."""
    return bool(needed >= known)
