"""One class of nodes in the strategy's order: blocks of nodes, float columns, exact bounds.

A :class:`NodeClass` holds the nodes that share one set of resources below
zero at capacity (shortcomings, wards: the resources a workload must
offset or be immune to even when it does not ask for them). They sit in a
list of :class:`Block`, each a short list kept sorted by the nodes' order
keys, as in sortedcontainers. Per block and per *column* (a resource some
workload asked for, the class's resources below zero, and :data:`OPEN`) the
block keeps its nodes' remaining quantities as floats, side by side, and
the class keeps, per column, the largest value of each block: its *bound*.
A node lacking the resource, or cordoned, reads minus infinity, so bounds
cover the open nodes that have it. Columns are made when a search first
needs them: a resource that at most :func:`~.plans.few_bearers` nodes of
the class have (32 where nodes move, 400 where they keep their order; a
hostname tag) never gets one, it is found through ``bearers``, resource ->
the nodes that have it. A
resource that few nodes of the class have (at most one in :data:`SPARSE`:
one kind of device among hundreds) gets a *sparse* column
(:meth:`NodeClass.add_column`): a block keeps, by node, the values of its
nodes having it, so that a node moving between blocks carries its own few
values, not one per column; its bounds are kept as any column's.

Bounds are exact at all times (set columns aside, see :mod:`.derived`):
raising a value raises the bound, lowering the value that was the bound
recomputes it from the block's column (O(L) in C for L nodes a block).
Floats never reverse the order of two quantities, so a float bound below
a requirement's float proves that no node of the block has enough. Per
column the class also keeps a *top*, at least its largest bound: raised
with the bounds, brought down only by a search that found no node in the
whole class (:meth:`NodeClass.settle`), and only where it may be above
the largest bound: a column is marked *stale* when the bound that held its
top falls.

A *group column* (:meth:`~.groups.GroupColumns.group_column`) reads 0 for an open node
hosting no workload of one aversion group and minus infinity for the
others: made for a group whose members' searches stepped over many nodes
hosting it, it lets the next ones pass those nodes, and the blocks made
of them, in C.

Bounds are per column, so a block whose cpu bound is on one node and
whose memory bound is on another passes a workload that neither node
takes: the columns over several resources at once (joint, masked and set
columns, and frontiers) are made and kept by :mod:`.derived`. A workload
asking for resources that only some nodes of the class have (devices of
several kinds, each on part of the nodes) looks inside a block at the
nodes having them all, which the block keeps per set of such resources
(:meth:`Block.holding`) until a node joins, leaves or moves in it.

A node re-ranked by a change of its room (BinPack, BestFit) moves with the
column values it keeps (:meth:`NodeClass.move`). A move inside the node's
block costs least, and a node that only lost room leaves the block's
refusals standing (a block that refused a workload still refuses it); a
move to another block is a delete and an insert. The share of moves that
stay inside falls as the cluster grows (more nodes between a node's old
and new place): with BinPack at 10000 nodes about four in five where
workloads come in a few sizes, one in five where they go to nodes spread
over the order (a device on few nodes).

Cost: inserting or deleting a node O(log N + C x L), C dense columns,
plus O(1) per sparse column it has a value in and O(S) list operations
in C when a block splits or merges, S sparse columns; a change of k
quantities O(log N + k x L) at worst, O(k) mostly; a move inside a
block O(C + L).
"""
from bisect import bisect_left
from typing import Any, Dict, FrozenSet, Iterable, Iterator, List, Optional, Set, Tuple, Union

from .bearers import Bearers, Tag
from .columns import (LOWEST, MASK, MAX_HOLDING, MIDDLE, NEG, OPEN, GroupColumn, JointColumn,
                      column_value)
from .derived import DerivedColumns
from .groups import MAX_GROUP_COLUMNS, GroupColumns
from .records import Cursor, Refused, halve

__all__ = ["Block", "NodeClass"]


#: At most this many requirement vectors whose refusals a class keeps.
MAX_REFUSED = 4096
#: At most this many vectors searched for once that a class remembers
#: (see :meth:`NodeClass.refused`).
MAX_SEEN = 16384
#: A resource that at most one node of the class in this many has (and
#: its masked column) gets a *sparse* column when first needed (see
#: :meth:`NodeClass.add_column`): a cluster may have hundreds of kinds of
#: device, each on a few nodes in a hundred.
SPARSE = 16
#: Where nodes move at every placement (BinPack, BestFit), a class keeps at
#: most this many dense columns: beyond, a column of a resource that some
#: of its nodes lack is sparse whatever its share. A node moving from block
#: to block carries its value in every dense column, so a cluster whose
#: workloads ask, over time, for hundreds of kinds each on a fifth of the
#: nodes (a column and a masked column each) made every move cost hundreds
#: (2000 nodes with 60 of 300 kinds each: BinPack placed 7,400 workloads a
#: second with 557 dense columns).
MAX_DENSE = 64


class Block:
    """A run of nodes in order: their slots, order keys and float columns;
    ``frontier``: see :meth:`NodeClass.frontier`, ``None`` whenever a
    column changes, ``()`` once the block refused a search since;
    ``holders``, ``ones``: see :meth:`holding`, ``None`` whenever a node joins,
    leaves or moves in the block; ``sparse``: per sparse column (see
    :meth:`NodeClass.add_column`) that some node of the block has a value
    in, the value of each node of the block that has its resource, by
    node."""

    __slots__ = ("slots", "keys", "cols", "frontier", "holders", "ones", "sparse", "sharp")

    def __init__(self, slots: List[Any], columns: List[str],
                 cols: Optional[Dict[Any, List[float]]] = None):
        self.slots = slots
        self.keys = [slot.key for slot in slots]
        # (``cols``: the nodes' columns when known, as when blocks split or merge)
        self.cols: Dict[Any, List[float]] = {
            key: [column_value(slot, key) for slot in slots] for key in columns} \
            if cols is None else cols
        self.frontier: Optional[Tuple[List[float], ...]] = None
        # (keyed by a set of names; by one name in ``ones``: see
        # :meth:`_holding_one`)
        self.holders: Optional[Dict[Any, List[int]]] = None
        self.ones: Optional[Dict[str, List[int]]] = None
        self.sparse: Dict[Any, Dict[Any, float]] = {}
        # (the set columns whose values are the nodes' own since the block
        # last changed: see :meth:`NodeClass.sharpen`)
        self.sharp: Optional[Set[Any]] = None

    def __len__(self) -> int:
        return len(self.slots)

    def holding(self, names: FrozenSet[str]) -> List[int]:
        """The positions of the nodes that have every resource of
        ``names``, kept until a node joins, leaves or moves in the block
        (a node's resources never change: only what is left of them).
        Two or more names are looked for among the holders of the one
        fewest nodes have. O(L) the first time, O(1) after."""
        holders = self.holders
        if holders is None:
            holders = self.holders = {}
        found: Optional[List[int]] = holders.get(names)
        if found is None:
            if len(names) > 1:
                # (the holders of the one fewest nodes have, filtered by
                # the positions of the others)
                ones = sorted([self._holding_one(name) for name in names], key=len)
                others = set(ones[1]).intersection(*ones[2:])
                found = [at for at in ones[0] if at in others]
            else:
                (name,) = names
                found = self._holding_one(name)
            if len(holders) >= MAX_HOLDING:
                halve(holders)
            holders[names] = found
        return found

    def _holding_one(self, name: str) -> List[int]:
        """The positions of the nodes that have resource ``name``, kept as
        :meth:`holding` keeps its lists, apart from them: one list per
        resource asked for (a cluster may have hundreds of kinds of device,
        each on its own few nodes: sets of them fill :meth:`holding`'s
        room, single ones are asked for again and again). O(L) the first
        time, O(1) after."""
        ones = self.ones
        if ones is None:
            ones = self.ones = {}
        found = ones.get(name)
        if found is None:
            found = [at for at, slot in enumerate(self.slots) if name in slot.node.resources]
            if len(ones) >= 4 * MAX_HOLDING:
                halve(ones)
            ones[name] = found
        return found

    def bound(self, key: str) -> float:
        """The largest value of column ``key``. O(L)."""
        return max(self.cols[key], default=NEG)


def _sparse_bound(found: Optional[Dict[Any, float]]) -> float:
    """A block's bound in a sparse column whose values in it are ``found``."""
    return max(found.values()) if found else NEG


class NodeClass(Bearers, GroupColumns, DerivedColumns):
    """The nodes whose resources below zero at capacity are ``keys``, in order.

    ``bearers`` maps every resource some node of the class has to those
    nodes; ``columns`` lists the dense columns, ``sparse`` the sparse
    ones, each with the resource whose nodes have a value in it (see the
    module docstring).
    """

    __slots__ = ("keys", "columns", "blocks", "lasts", "bounds", "bearers", "load", "size",
                 "versions", "clock", "refusals", "countdown", "wasted", "changes", "members",
                 "period", "trial", "patience", "tops", "seen", "scratch", "floor_idle",
                 "held", "sparse", "sparse_by_name", "sparse_share", "sparse_held", "grouped",
                 "stepped", "misled", "leads", "group_columns", "dense_most", "ordered", "cursors",
                 "stale", "denied", "denials", "denials_most", "uncounted", "away", "scans",
                 "masks", "asked", "spread", "tallies")

    def __init__(self, keys: FrozenSet[str], load: int, sparse: int = SPARSE,
                 group_columns: int = MAX_GROUP_COLUMNS, dense_most: Optional[int] = None):
        self.keys = keys
        self.columns: List[str] = [OPEN]
        self.blocks: List[Block] = []
        self.lasts: List[Any] = []  # each block's last key, for bisection
        self.bounds: Dict[Any, List[float]] = {OPEN: []}
        # Per column, at least its largest bound (see :meth:`beyond`):
        # raised with any bound, lowered only by :meth:`settle`; exactly
        # its largest bound but for the columns in ``stale``, where the
        # block holding the top had its bound lowered since.
        self.tops: Dict[Any, float] = {OPEN: NEG}
        self.stale: Set[Any] = set()
        self.bearers: Dict[str, Set[Any]] = {}
        self.load = load
        self.size = 0
        self.start_derived()  # (no joint, masked or set column yet)
        # Whether to make joint columns is reviewed when ``countdown`` searches of the
        # class have run down (see :func:`.plans.review_joint`): ``wasted``
        # counts the blocks those searches looked inside and found refusing,
        # ``changes`` the changes to its nodes meanwhile (placements, mostly).
        self.countdown = 1
        self.wasted = 0
        self.changes = 0
        # (moves whenever a node joins or leaves the class: what its
        # ``bearers`` say may have changed)
        self.members = 0
        self.period = 0  # (the searches counted in ``wasted``)
        # (on trial: the refusing blocks of the window before it, per search or
        # per change, whichever were more)
        self.trial: Optional[float] = None
        self.patience = 1  # (windows to wait before the next trial)
        # Each block's version: a number of this class's clock, never given
        # twice, taken anew whenever a node of the block gains room or loses
        # an aversion group, joins it or is uncordoned (the only ways a
        # refusal turns into a fit).
        self.versions: List[int] = []
        self.clock = 0
        # Per shape and requirement vector, per block, the version at which
        # no node of the block took the vector ("refused").
        self.refusals: Dict[Tuple[Any, Tuple[Any, ...]], Refused] = {}
        # (the vectors searched for once, and the record their search writes)
        self.seen: Set[Tuple[Any, Tuple[Any, ...]]] = set()
        self.scratch = Refused()
        # (searches of new vectors left before floors are used again)
        self.floor_idle = 0
        # Per set of resources whose holders each block counts (see
        # :meth:`~.bearers.Bearers.counting`), per block, how many of its
        # nodes have them all (a list beside ``bounds``, so that a search
        # compares it in C); per node, the sets counted it has all of (made
        # when it first joins a block after they are counted).
        self.tallies: Dict[FrozenSet[str], List[int]] = {}
        # (sets found with too many holders to count, with the count of
        # joins and leaves (``members``) they were found at)
        self.uncounted: Dict[FrozenSet[str], int] = {}
        self.held: Dict[Any, List[FrozenSet[str]]] = {}
        # The sparse columns (see :meth:`add_column`), each with the
        # resource whose nodes have a value in it; per resource, its sparse
        # columns.
        self.sparse: Dict[Any, str] = {}
        self.sparse_by_name: Dict[str, List[Any]] = {}
        self.sparse_share = sparse  # (:data:`SPARSE`, as the index was made with it)
        # (:data:`MAX_DENSE` where nodes move at every placement, else ``None``)
        self.dense_most = dense_most
        # (per node, the sparse columns it has a value in, made when first asked)
        self.sparse_held: Dict[Any, List[Any]] = {}
        # The group columns, per aversion group (see :meth:`~.groups.GroupColumns.group_column`),
        # and how many nodes hosting one of its groups the last search
        # stepped over (set by :func:`.search.first_in_class`).
        self.grouped: Dict[str, GroupColumn] = {}
        self.stepped = 0
        # Per aversion group, per block, the version at which the block's
        # open nodes free of the group were found to show at most the
        # figures kept per column (see :meth:`~.groups.GroupColumns.keep_away`).
        self.away: Dict[str, Tuple[List[int], Dict[Any, List[float]]]] = {}
        # (the column the last search found nodes short of after they
        # passed its sieve's first, when many were: see
        # :meth:`.plans.Entry.promote`)
        self.misled: Any = None
        # (per set of requirements every node of the class has, the one
        # whose column leads the sieves of shapes asking for them, and how
        # many times it changed: see :meth:`.plans.Entry.promote`)
        self.leads: Dict[FrozenSet[str], Tuple[str, int]] = {}
        # (how many nodes the last search found refusing the workload after
        # every column of its sieve passed them, set by
        # :func:`.search.first_in_class`; per resource whose column the
        # plans put off, how many such refusals searches lacking it met:
        # see :func:`.plans.deferrable` and :attr:`hot`)
        self.denied = 0
        self.denials: Dict[str, int] = {}
        self.denials_most: Optional[int] = None  # (:data:`.plans.DENIALS`, set by the index)
        self.group_columns = group_columns  # (:data:`MAX_GROUP_COLUMNS`, as the index was made)
        # (per resource, or tuple of resources, its bearers in order with
        # their keys, and the count of joins and leaves they were sorted
        # at: see :meth:`~.bearers.Bearers.in_order`)
        self.ordered: Dict[Tag, Tuple[int, List[Any], List[Any]]] = {}
        # (per tag and immunities, how many of its bearers in order refuse
        # the workloads searched for: see :meth:`~.kept.KeptOrders._cursor`)
        self.cursors: Dict[Tuple[Tag, FrozenSet[str]], Cursor] = {}
        # (how many searches tried the bearers of a tag in order first, how
        # many of them went on to the sieve, and, once the class gave up
        # trying them, the index's count of nodes gaining room then, else
        # -1: see :data:`.plans.SCAN_LIMIT`)
        self.scans: List[int] = [0, 0, -1]
        # (the count of joins and leaves the nodes were numbered at, each
        # node's number, and per resource its bearers as bits of those
        # numbers: see :meth:`~.bearers.Bearers.having_all`)
        self.masks: Tuple[int, Dict[Any, int], Dict[str, int]] = (-1, {}, {})
        # (per set of resources asked together whose list is not kept yet,
        # the id of the first workload searched for with it: see
        # :meth:`.plans.Entry.used_by`)
        self.asked: Dict[Tuple[str, ...], int] = {}
        # (the count of joins and leaves when :meth:`~.bearers.Bearers.many_held` counted,
        # and its count)
        self.spread = (-1, 0)

    def forget(self, slot: Any) -> None:
        """``slot`` left the class (after :meth:`delete`). O(1)."""
        self.held.pop(slot, None)
        self.set_held.pop(slot, None)
        self.masked_held.pop(slot, None)
        self.sparse_held.pop(slot, None)

    def refused(self, shape: Any, needed: Tuple[Any, ...], keep: bool = False) -> "Refused":
        """What the blocks refused of ``needed`` (of ``shape``), to be
        compared with :attr:`versions`, and written when a block refuses.

        A vector searched for the first time gets the class's *scratch*
        record, emptied (nothing refused, no sieve made, no stamps: a
        search writes none into it): most vectors of
        quantities drawn from a wide range are searched once, and a record
        of their own would be made, filled and thrown away for nothing.
        The second search of a vector makes its own record, kept from then
        on; so does the first when ``keep`` is true (a search avoiding
        aversion groups asks so for the same vector without groups: when
        it finds nothing, the search over all nodes comes next).
        O(1), plus O(B) for B blocks when a record is made."""
        key = (shape, needed)
        refusals = self.refusals
        refused = refusals.get(key)
        if refused is None:
            seen = self.seen
            if key not in seen and not keep:
                if len(seen) >= MAX_SEEN:
                    seen.clear()
                seen.add(key)
                scratch = self.scratch
                scratch.stamped = False
                scratch.prefix = 0
                scratch.made_by = -1  # (so the caller makes the vector's sieve)
                return scratch
            seen.discard(key)
            if len(refusals) >= MAX_REFUSED:
                refusals.clear()
            refused = refusals[key] = Refused(len(self.blocks))
            return refused
        stamps = refused.stamps
        missing = len(self.blocks) - len(stamps)
        if missing > 0:
            stamps.extend([0] * missing)
        return refused

    def _tick(self) -> int:
        self.clock += 1
        return self.clock

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

    def beyond(self, sieve: Iterable[Tuple[Any, float]]) -> bool:
        """Whether a threshold of ``sieve`` (column, threshold pairs) is
        above its column's top: then no node of the class meets it, and a
        workload that fits nowhere passes the class without a scan. O(S)."""
        tops = self.tops
        for key, threshold in sieve:
            if threshold > tops[key]:
                return True
        return False

    def settle(self, sieve: Iterable[Tuple[Any, float]]) -> None:
        """Bring the tops of the columns of ``sieve`` down to their largest
        bound (tops only rise as nodes change), for those whose top may be
        above it (:attr:`stale`). O(B) in C per such column."""
        stale = self.stale
        if not stale:
            return
        tops, bounds = self.tops, self.bounds
        for key, _ in sieve:
            if key in stale:
                stale.discard(key)
                tops[key] = max(bounds[key], default=NEG)

    # ------------------------------------------------------------- changing

    def add_column(self, key: Any, made: Optional[List[List[float]]] = None) -> None:
        """Keep a column for ``key`` from now on; ``made``: its values, per
        block, when the caller has them (else computed). O(N).

        A resource that some nodes of the class lack, at most one in
        :data:`SPARSE`, gets a *sparse* column instead, and so does its
        masked column (see :meth:`mask`): a block keeps only the values of
        its nodes having the resource, by node (:attr:`Block.sparse`), and
        a node moving from block to block carries only its own, not one
        value per column (hundreds of kinds of device, each on a few
        nodes, would make every move cost hundreds). Its bounds are kept
        as a dense column's. O(H log N) for the H nodes having it."""
        if key in self.bounds:
            return
        name = None if made is not None else self._sparse_name(key)
        if name is not None:
            bearers = self.bearers.get(name, ())
            if len(bearers) < self.size and (
                    len(bearers) * self.sparse_share <= self.size
                    or self.dense_most is not None and len(self.columns) >= self.dense_most):
                self._add_sparse(key, name, bearers)
                return
        self.columns.append(key)
        for at, block in enumerate(self.blocks):
            block.frontier = None
            block.cols[key] = [column_value(slot, key) for slot in block.slots] \
                if made is None else made[at]
        self.bounds[key] = [block.bound(key) for block in self.blocks]
        self.tops[key] = max(self.bounds[key], default=NEG)
        self.stale.discard(key)

    def _sparse_name(self, key: Any) -> Optional[str]:
        """The resource a column of ``key`` would be sparse over: its own,
        or a masked column's; ``None`` for the other kinds of column (and
        for a resource below zero of the class, read by its bounds)."""
        if type(key) is str:
            return None if key == OPEN or key in self.keys else key
        if type(key) is JointColumn and key[0] == "masked":
            name: str = key[1][0][0]
            return name
        return None

    def _add_sparse(self, key: Any, name: str, bearers: Iterable[Any]) -> None:
        """Keep a sparse column for ``key``, over resource ``name`` (see
        :meth:`add_column`). O(H log N)."""
        self.sparse[key] = name
        self.sparse_by_name.setdefault(name, []).append(key)
        blocks, lasts = self.blocks, self.lasts
        held = self.sparse_held
        for slot in bearers:
            block = blocks[bisect_left(lasts, slot.key)]
            found = block.sparse.get(key)
            if found is None:
                found = block.sparse[key] = {}
            found[slot] = column_value(slot, key)
            known = held.get(slot)
            if known is not None:
                known.append(key)
        bounds = self.bounds[key] = [_sparse_bound(block.sparse.get(key)) for block in blocks]
        self.tops[key] = max(bounds, default=NEG)
        self.stale.discard(key)

    def sparse_of(self, slot: Any) -> List[Any]:
        """The sparse columns ``slot`` has a value in. O(1) mostly, O(R)
        the first time for R resources of the node."""
        held = self.sparse_held.get(slot)
        if held is None:
            by_name = self.sparse_by_name
            held = self.sparse_held[slot] = [
                key for name in slot.node.resources for key in by_name.get(name, ())]
        return held

    def insert(self, slot: Any, values: Optional[Dict[Any, float]] = None) -> None:
        """Put ``slot`` at the place of its order key ``slot.key``; ``values``:
        its value in each column, when known (else computed)."""
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
        self.versions[index] = self._tick()
        block.frontier = block.holders = block.ones = block.sharp = None
        tallies = self.tallies
        if tallies:
            for names in self._held(slot):
                tallies[names][index] += 1
        block.slots.insert(position, slot)
        block.keys.insert(position, key)
        all_bounds, tops = self.bounds, self.tops
        for column, known in block.cols.items():
            value = column_value(slot, column) if values is None else values[column]
            known.insert(position, value)
            bounds = all_bounds[column]
            if value > bounds[index]:
                bounds[index] = value
                if value > tops[column]:
                    tops[column] = value
        if self.sparse:
            sparse = block.sparse
            for column in self.sparse_of(slot):
                value = column_value(slot, column) if values is None else values[column]
                found = sparse.get(column)
                if found is None:
                    found = sparse[column] = {}
                found[slot] = value
                bounds = all_bounds[column]
                if value > bounds[index]:
                    bounds[index] = value
                    if value > tops[column]:
                        tops[column] = value
        self.lasts[index] = block.keys[-1]
        if len(block) > 2 * self.load:
            self._split(index)

    def delete(self, index: int, position: int) -> Dict[Any, float]:
        """Take out the node at ``position`` of block ``index``; return its
        value in each column."""
        block = self.blocks[index]
        slot = block.slots.pop(position)
        del block.keys[position]
        self.size -= 1
        tallies = self.tallies
        if tallies:
            for names in self._held(slot):
                tallies[names][index] -= 1
        sparse_keys = self.sparse_of(slot) if self.sparse else ()
        tops, stale = self.tops, self.stale
        if not block.slots:
            taken = {column: values[position] for column, values in block.cols.items()}
            for column in sparse_keys:
                taken[column] = block.sparse[column][slot]
            for column, value in taken.items():  # (the node's values were the bounds)
                if value >= tops[column]:
                    stale.add(column)
            self._drop_block(index)
            return taken
        taken = {}
        all_bounds = self.bounds
        block.frontier = block.holders = block.ones = block.sharp = None
        for column, values in block.cols.items():
            value = taken[column] = values.pop(position)
            bounds = all_bounds[column]
            # The node held the bound: it stands if the first node holds it
            # too, or if it is minus infinity (no node of the block is open
            # and has the resource), else it is found again.
            if value >= bounds[index] and value != NEG and values[0] != value:
                bounds[index] = max(values)
                if value >= tops[column]:
                    stale.add(column)
        sparse = block.sparse
        for column in sparse_keys:
            found = sparse[column]
            value = taken[column] = found.pop(slot)
            if value >= tops[column]:
                stale.add(column)
            if not found:
                del sparse[column]
                all_bounds[column][index] = NEG
                continue
            bounds = all_bounds[column]
            if value >= bounds[index] and value != NEG:
                bounds[index] = max(found.values())
        self.lasts[index] = block.keys[-1]
        if len(block) * 4 < self.load and len(self.blocks) > 1:
            self._merge(index if index + 1 < len(self.blocks) else index - 1)
        return taken

    def move(self, index: int, position: int, key: Any, names: Iterable[str],
             grew: bool) -> None:
        """Move the node at ``position`` of block ``index`` to order key
        ``key``: its remaining quantities of ``names`` changed (``grew``:
        some went up); the other columns keep their values. Within its
        block (the most common case), a node that only lost room leaves the
        block's refusals standing: O(C + L). Else O(log N + C x L)."""
        block = self.blocks[index]
        slot = block.slots[position]
        keys = block.keys
        last = len(keys) - 1
        if (index == 0 or key > self.lasts[index - 1]) and (
                index == len(self.blocks) - 1 or key < self.blocks[index + 1].keys[0]):
            target = bisect_left(keys, key)
            if target > position:
                target -= 1
            if target != position:
                block.holders = block.ones = None
                del keys[position]
                keys.insert(target, key)
                del block.slots[position]
                block.slots.insert(target, slot)
                for column in block.cols.values():
                    column.insert(target, column.pop(position))
            else:
                keys[position] = key
            slot.key = key
            self.lasts[index] = keys[last]
            self.update(index, target, names, grew)
            return
        taken = self.delete(index, position)
        for name in names:
            if name in taken:
                taken[name] = column_value(slot, name)
        joint = self.joint
        if joint is not None and joint[0] in taken:
            first, _, second, _ = self.scales
            joint_values = self._joint_values(slot, taken.get(first), taken.get(second))
            taken.update(zip(joint, joint_values))
            if self.masked:
                middle = joint_values[MIDDLE]
                for name, column in self._masked_of(slot):
                    # (its value in the column of ``name``, already moved
                    # or made again if it changed)
                    amount = taken[name] if name in taken else column_value(slot, name)
                    value = amount * MASK  # (as :meth:`_masked_of` says, inlined)
                    taken[column] = middle if middle < value else value
        slot.key = key
        self.insert(slot, taken)

    def update(self, index: int, position: int, keys: Iterable[str], grew: bool) -> None:
        """Rewrite the node's columns among ``keys`` (resources it has) after
        its room changed (``grew``: some quantity of it went up)."""
        block = self.blocks[index]
        slot = block.slots[position]
        if grew:
            self.versions[index] = self._tick()
        block.frontier = block.sharp = None
        cols = block.cols
        all_bounds = self.bounds
        remaining = slot.remaining
        cordoned = slot.cordoned
        tops = self.tops
        sparse = block.sparse
        for key in keys:  # (resources the node has: column_value and _rewrite, inlined)
            values = cols.get(key)
            if values is None:
                found = sparse.get(key)
                if found is not None:
                    self._rewrite(index, slot, key, found, column_value(slot, key))
                continue
            if cordoned:
                value = NEG
            else:
                value = float(remaining[key])
                if value < LOWEST:
                    value = LOWEST
            old = values[position]
            values[position] = value
            bounds = all_bounds[key]
            if value > bounds[index]:
                bounds[index] = value
                if value > tops[key]:
                    tops[key] = value
            elif value < old and old >= bounds[index]:
                bounds[index] = max(values)
                if old >= tops[key]:
                    self.stale.add(key)
        joint = self.joint
        if joint is not None and joint[0] in cols:
            first, _, second, _ = self.scales
            ones, twos = cols.get(first), cols.get(second)
            joint_values = self._joint_values(
                slot, None if ones is None else ones[position],
                None if twos is None else twos[position])
            for key, value in zip(joint, joint_values):  # (_rewrite, inlined)
                values = cols[key]
                old = values[position]
                values[position] = value
                bounds = all_bounds[key]
                if value > bounds[index]:
                    bounds[index] = value
                    if value > tops[key]:
                        tops[key] = value
                elif value < old and old >= bounds[index]:
                    bounds[index] = max(values)
                    if old >= tops[key]:
                        self.stale.add(key)
            if self.masked:
                middle = joint_values[MIDDLE]
                for name, key in self._masked_of(slot):
                    # (its value in the column of ``name``, rewritten above
                    # if it changed)
                    values = cols.get(name)
                    if values is not None:
                        amount = values[position]
                    else:
                        found = sparse.get(name)
                        amount = found[slot] if found is not None else column_value(slot, name)
                    value = amount * MASK  # (as :meth:`_masked_of` says, inlined)
                    value = middle if middle < value else value
                    values = cols.get(key)
                    if values is not None:
                        self._rewrite(index, position, key, values, value)
                    else:
                        self._rewrite(index, slot, key, sparse[key], value)
        if grew and self.set_masked:
            # (a set column stays as it was while the node only loses room:
            # see :meth:`mask_set`)
            for key in self._set_columns(slot):
                self._rewrite(index, position, key, cols[key], column_value(slot, key))

    def _rewrite(self, index: int, at: Any, key: Any,
                 values: Union[List[float], Dict[Any, float]], value: float) -> None:
        """Set a node's value in a column of block ``index``, keeping the
        block's bound exact (the caller forgets the block's frontier):
        ``values`` is the block's list of the column, ``at`` the node's
        position, or, for a sparse column, the block's values by node and
        ``at`` the node."""
        old = values[at]
        values[at] = value
        bounds = self.bounds[key]
        if value > bounds[index]:
            bounds[index] = value
            if value > self.tops[key]:
                self.tops[key] = value
        elif value < old and old >= bounds[index]:
            bounds[index] = max(values.values()) if type(values) is dict else max(values)
            if old >= self.tops[key]:
                self.stale.add(key)

    def renew(self, index: int) -> None:
        """Forget what block ``index`` refused (a node of it lost a group). O(1)."""
        self.versions[index] = self._tick()

    def refresh(self, index: int, position: int) -> None:
        """Rewrite every column of the node (it was cordoned or uncordoned)."""
        block = self.blocks[index]
        slot = block.slots[position]
        if not slot.cordoned:
            self.versions[index] = self._tick()
        block.frontier = block.sharp = None
        for key, values in block.cols.items():
            self._rewrite(index, position, key, values, column_value(slot, key))
        for key in self.sparse_of(slot):
            self._rewrite(index, slot, key, block.sparse[key], column_value(slot, key))

    # ------------------------------------------------------------- blocks

    def _new_block(self, index: int, slots: List[Any],
                   cols: Optional[Dict[Any, List[float]]] = None,
                   sparse: Optional[Dict[Any, Dict[Any, float]]] = None) -> None:
        block = Block(slots, self.columns, cols)
        if self.sparse:
            if sparse is None:
                sparse = {}
                for slot in slots:
                    for key in self.sparse_of(slot):
                        found = sparse.get(key)
                        if found is None:
                            found = sparse[key] = {}
                        found[slot] = column_value(slot, key)
            block.sparse = sparse
        tallies = self.tallies
        if tallies:
            for tally in tallies.values():
                tally.insert(index, 0)
            for slot in slots:
                for names in self._held(slot):
                    tallies[names][index] += 1
        self.blocks.insert(index, block)
        self.lasts.insert(index, block.keys[-1])
        self.versions.insert(index, self._tick())
        tops = self.tops
        for column in self.columns:
            bound = block.bound(column)
            self.bounds[column].insert(index, bound)
            if bound > tops[column]:
                tops[column] = bound
        if self.sparse:
            bounds = self.bounds
            for column in self.sparse:
                bounds[column].insert(index, NEG)
            for column, found in block.sparse.items():
                bound = bounds[column][index] = max(found.values())
                if bound > tops[column]:
                    tops[column] = bound

    def _drop_block(self, index: int) -> None:
        del self.blocks[index]
        del self.lasts[index]
        del self.versions[index]
        for bounds in self.bounds.values():
            del bounds[index]
        for tally in self.tallies.values():
            del tally[index]

    def _split(self, index: int) -> None:
        block = self.blocks[index]
        slots, cols = block.slots, block.cols.items()
        half = len(slots) // 2
        cut = slots[half].key
        upper: Dict[Any, Dict[Any, float]] = {}
        lower: Dict[Any, Dict[Any, float]] = {}
        for key, found in block.sparse.items():
            for slot, value in found.items():
                part = upper if slot.key >= cut else lower
                kept = part.get(key)
                if kept is None:
                    part[key] = {slot: value}
                else:
                    kept[slot] = value
        self._drop_block(index)
        self._new_block(index, slots[half:], {key: values[half:] for key, values in cols}, upper)
        self._new_block(index, slots[:half], {key: values[:half] for key, values in cols}, lower)

    def _merge(self, index: int) -> None:
        """Join blocks ``index`` and ``index + 1`` (split again if too long)."""
        first, second = self.blocks[index], self.blocks[index + 1]
        slots = first.slots + second.slots
        cols = {key: values + second.cols[key] for key, values in first.cols.items()}
        sparse = first.sparse  # (the first block's own, dropped below)
        for key, found in second.sparse.items():
            kept = sparse.get(key)
            if kept is None:
                sparse[key] = found
            else:
                kept.update(found)
        self._drop_block(index + 1)
        self._drop_block(index)
        self._new_block(index, slots, cols, sparse)
        if len(slots) > 2 * self.load:
            self._split(index)
