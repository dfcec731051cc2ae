"""Where a node is chosen: the first node of a class, in order, where a workload fits.

A search is a short pipeline, read top to bottom in :func:`first_in_class`:

1. the *sieve*: a few (column, threshold) pairs, each a condition every
   fitting node meets (its float in that column is at least the threshold),
   led by the most telling (see :func:`.plans.make_plan`; a workload
   asking for two or more resources that only some nodes of the class have
   is led by its other columns where nodes keep their order; a search
   whose blocks held many nodes passing the first column and short on
   another has the shape's sieves led by that one from then on, see
   :meth:`.plans.Entry.promote`);
   a threshold above its column's *top* (at least every bound of the
   column, see :meth:`~.blocks.NodeClass.beyond`) means that no node of
   the class fits: the first pair's is compared before the scan, the
   others' once the scan meets a block passing the first pair and short
   on another (a workload larger than any node's room
   stops there, not at the end of the class);
2. blocks whose bounds pass every pair: those passing the first pair (and
   not known to refuse, see below; for a workload of an aversion
   group that has a *group column* in the class, having an open node not
   hosting the group, see :meth:`~.groups.GroupColumns.group_column`;
   and, for a workload asking for two or more resources that only some
   nodes of the class have, where nodes move at every placement, having
   a node that has them all, by the count the class keeps per block, see
   :meth:`~.bearers.Bearers.counting`) are
   found in C (``compress`` over ``map(ge, ...)`` on the class's bound
   column), and only those are compared on the other pairs, in Python
   (chaining every column through ``map`` in C costs more than it saves:
   most blocks fail the first), the pair that turned the last block away
   first;
3. a block that keeps a *frontier* (a class with joint columns, see
   :meth:`~.derived.DerivedColumns.frontier`) and has no node with enough of
   both joint resources, by one bisection; else, inside the
   block, the nodes whose floats pass every pair, found the same way on
   the block's columns, the group column's too (for a workload asking for
   resources that only some nodes of the class have, where nodes keep
   their order, in Python over the nodes having them all, which the block
   keeps per set of such resources until a node joins, leaves or moves in
   it, each checked on those
   resources first: see
   :meth:`~.blocks.Block.holding`; for a sieve led by a sparse column,
   over the block's nodes having its resource), the pair that turned
   away the last node turned away in the blocks before compared first;
4. for each of those, in order: skip it if cordoned or averse (it hosts a
   workload sharing an aversion group: a search that steps over many such
   nodes one by one has the class make the group's column for the next
   ones, see :meth:`.nodes.NodeIndex._by_columns`), else ask the fit rule,
   :func:`pylighthouse.fit.takes` (the answer of
   :func:`~pylighthouse.fit.check_fit`, without its argument checks and
   reason, and of the node's resources not asked for reading only those
   below zero, ``below``, whose names the distributor keeps: a node's
   labels cost nothing each). The
   first yes is the answer.

A vector never searched for before starts after the run of blocks that
refuse its shape's *floor*, the least quantities of that shape searched
for (:func:`.floors.floor_run`, found by :func:`refusing_run`): in a
cluster that fills from the front, the full nodes.

A block whose nodes all said no (or were averse) is remembered for the
workload's shape, aversion groups and requirements
(:meth:`~.blocks.NodeClass.refused`) until one of its nodes gains room or
loses a group: the next search for the same vector skips the block in
step 2, in C (and reuses the vector's sieve, kept there too: see
:meth:`.nodes.NodeIndex._by_columns`). So averse nodes that fit are
stepped over one by one once per block, not once per search. For a
workload of an aversion group, a block also passes when what its open
nodes free of the group show at most, kept by the block since a search for
the group looked inside it in vain twice (see
:meth:`~.groups.GroupColumns.keep_away`), falls short of the sieve: in C for
the first column kept, in Python for the others where the bounds pass. A vector's
record is its own from its second search on: the first writes into a
scratch record, forgotten at once, since most vectors of finely drawn
quantities are searched once. A block looked inside in vain
twice with no change between also makes its frontier, kept until one of
its columns changes: a workload of other quantities that the bounds let
through (the cpu left on one node, the memory on another) is then
refused without looking inside. (Where nodes keep their order, only a
workload asking for no resource that just some nodes of the class have
makes one: another is mostly refused for want of a node having those.)

The sieve only ever rejects nodes that cannot fit, so every decision is the
one :func:`~pylighthouse.fit.check_fit` makes in the strategy's order.
:func:`first_among` is the same last step over a short list of candidates
(the nodes bearing a rare tag the workload asks for), sorted at the
search; :func:`first_in_order` over such a list that the class keeps in
order, where nodes keep their order (see :data:`~.plans.FEW_KEPT`).

Cost: O(B) comparisons in C for B blocks of the class, plus O(log L) per
block whose bounds pass and that keeps a frontier, O(L) in C (and
O(L log L) to make the frontier when it refuses) per other such block,
and, per candidate node, one check of the fit rule.
"""
from bisect import bisect_left
from itertools import compress, count, islice, repeat
from operator import and_, ge, ne, or_, truth
from typing import Any, Dict, FrozenSet, Iterable, Iterator, List, Optional, Sequence, Tuple

from ..fit import takes
from ..model import Workload
from .blocks import NodeClass
from .columns import BY_KEY, INF, NEG, GroupColumn, JointColumn
from .records import Refused

__all__ = ["first_in_class", "first_among", "first_in_order", "acceptable", "refusing_run",
           "Sieve"]

#: (column, threshold) pairs.
Sieve = List[Tuple[Any, float]]
#: An aversion group's figures as a search compares them in C (see :func:`_figured`):
#: the versions they were kept at, per block, those of one column, and the
#: search's threshold in that column.
Away = Tuple[List[int], List[float], float]

#: Columns sieved inside a block (the first of the sieve, in C: a resource
#: only some nodes of the class bear, else the joint column when there is
#: one; the next ones in Python); the rest is left to
#: the fit rule, which few nodes reach, since the block's bounds passed
#: every column.
NEAR = 9
#: A search in whose blocks this many nodes passing the first column fell
#: short on another, and more than twice as many as passed every column,
#: names that column in ``misled`` (see :meth:`.plans.Entry.promote`).
MISLED = 32


def _passing(columns: Dict[Any, List[float]], sieve: Sieve, start: int,
             versions: List[int], stamps: Optional[List[int]],
             plain: Optional[List[int]] = None,
             apart: Optional[GroupColumn] = None,
             away: Optional["Away"] = None,
             tally: Optional[List[int]] = None) -> Tuple[Iterator[int], List[Any]]:
    """Indices from ``start`` on where the first sieve column reaches its
    threshold, whose stamp (and ``plain`` stamp, if given) is not the
    current version (they refused already), given group column
    ``apart``, where some open node does not host its group, given
    ``tally`` (a count per block), where it is not zero, and, given
    ``away`` (a group's versions, figures of one column and its threshold,
    see :meth:`~.groups.GroupColumns.keep_away`), where the figure kept at the
    block's version reaches the threshold, found in C (``None`` for stamps
    never written: no comparing); and the other (column, threshold) pairs,
    for the caller to compare where those pass (a generator doing it costs
    more)."""
    (key, threshold), rest = sieve[0], sieve[1:]
    values = columns[key]
    passes: Iterator[bool] = map(ge, islice(values, start, None), repeat(threshold))
    if apart is not None:
        passes = map(and_, passes, map(ge, islice(columns[apart], start, None), repeat(0.0)))
    if tally is not None:
        passes = map(and_, passes, map(truth, islice(tally, start, None)))
    if stamps is not None:
        passes = map(and_, passes, map(ne, islice(versions, start, None),
                                       islice(stamps, start, None)))
    if plain is not None:
        passes = map(and_, passes, map(ne, islice(versions, start, None),
                                       islice(plain, start, None)))
    if away is not None:
        seen, figures, least = away
        passes = map(and_, passes, map(or_, map(ne, islice(versions, start, None),
                                                islice(seen, start, None)),
                                       map(ge, islice(figures, start, None), repeat(least))))
    return compress(count(start), passes), [(columns[key], threshold) for key, threshold in rest]


def acceptable(slot: Any, workload: Workload, groups: FrozenSet[str]) -> bool:
    """Whether the search may take ``slot``: open, not averse, and fits.
    (The candidates asked here, the nodes bearing a rare resource the
    workload asks for, often lack another it asks for: that is found
    first, in C.)"""
    if slot.cordoned or (groups and not slot.groups.keys().isdisjoint(groups)):
        return False
    remaining = slot.remaining
    return workload.requirements.keys() <= remaining.keys() and \
        takes(remaining, workload, slot.below)


def first_in_class(nodes: NodeClass, sieve: Sieve, workload: Workload,
                   groups: FrozenSet[str], low: Any, high: Any,
                   shape: Any, needed: Tuple[Any, ...], refused: Refused,
                   skip: int = 0, holding: Optional[FrozenSet[str]] = None,
                   counted: Optional[FrozenSet[str]] = None,
                   apart: Optional[GroupColumn] = None) -> Optional[Any]:
    """The first node of ``nodes`` with order key in [``low``, ``high``) that
    takes ``workload`` (``None`` for an open end), avoiding nodes that host
    one of ``groups``; ``None`` when there is none. ``shape`` and ``needed``
    (the workload's requirement values) name what blocks remember refusing;
    ``refused`` is what ``nodes.refused`` gives for them and ``groups``
    (the caller looks it up: it keeps the vector's sieve there). The first
    ``skip`` blocks are known to refuse the workload (its shape's floor,
    see :func:`refusing_run`). ``holding``: the resources the workload
    asks for that only some nodes of the class have, when inside a block
    only the nodes having them all are to be looked at (see
    :meth:`~.blocks.Block.holding`); ``None`` to look at every node.
    ``counted``: such resources (two or more) whose holders each block
    counts (see :meth:`~.bearers.Bearers.counting`), when a block where
    no node has them all is to be passed without looking inside.
    ``apart``: the class's group column of one of ``groups``, if it has
    one: a block whose every node hosts the group is passed by its bound,
    and inside a block the nodes hosting it are passed in C.

    With ``groups``, the blocks that refuse the same vector without groups
    are passed too (avoiding nodes only ever refuses more), and a block
    looked inside where no node was passed over for a group is remembered
    as refusing the vector without groups as well: workloads of many groups
    share what workloads of one shape have found.

    Cost: see the module docstring.
    """
    blocks = nodes.blocks
    nodes.stepped = nodes.denied = 0
    nodes.misled = None
    if not blocks:
        return None
    if low is None:
        first = offset = 0
    else:
        first = bisect_left(nodes.lasts, low)
        if first == len(blocks):
            return None
        offset = bisect_left(blocks[first].keys, low)
    stamps, versions = refused.stamps, nodes.versions
    # (the scratch record of a vector's first search is never read: no
    # stamp is written into it, see :meth:`~.blocks.NodeClass.refused`)
    write = refused is not nodes.scratch
    # (the same vector without groups)
    plain: Optional[Refused] = nodes.refused(shape, needed, True) if groups else None
    plain_stamps = None if plain is None else plain.stamps
    done = first  # blocks before this one are known to refuse (or out of range)
    if first == 0 and offset == 0:
        # Blocks that refused this vector last time, still at those versions,
        # are passed by one comparison of two lists (in C).
        prefix = refused.prefix
        if prefix and stamps[:prefix] == versions[:prefix]:
            done = prefix
        if plain is not None:
            prefix = plain.prefix
            if prefix > done and plain.stamps[:prefix] == versions[:prefix]:
                if write:
                    stamps[done:prefix] = versions[done:prefix]
                done = prefix
        if skip > done:  # (the shape's floor: given only for a search from the first)
            if write:
                stamps[done:skip] = versions[done:skip]
            done = skip
    (lead, least), rest = sieve[0], sieve[1:NEAR]
    # (sparse columns, see :meth:`~.blocks.NodeClass.add_column`: read by
    # node, not by position; one that leads gives the positions to look at)
    sparse_lead = False
    rest_sparse: Optional[List[Tuple[Any, float]]] = None
    if nodes.sparse:
        sparse_lead = lead in nodes.sparse
        rest, rest_sparse = _split_sparse(nodes, rest)
    # (a set column leads: a block looked inside in vain brings its values
    # down, see :meth:`~.derived.DerivedColumns.sharpen`)
    sharpening = holding if type(lead) is JointColumn and lead[0] == "set" else None
    # (the thresholds of the joint columns' two resources, when the class
    # has joint columns, looked up at the first block with a frontier)
    both: Any = _UNKNOWN if nodes.joint is not None else None
    # (a workload of aversion groups: the group whose nodes' room a block
    # keeps, see :meth:`~.groups.GroupColumns.keep_away`, and the sieve's pairs of
    # dense columns, compared with it)
    shut: Optional[str] = None
    near: Sieve = []
    kept: Optional[Away] = None
    # (and the other columns' figures with their thresholds, compared where
    # a block's bounds pass: the nodes free of the group often fall short
    # on another column than the one compared in C)
    figured: Optional[Tuple[List[int], List[Tuple[List[float], float]]]] = None
    if groups:
        shut = apart[1] if apart is not None else min(groups)
        dense = blocks[0].cols
        near = [pair for pair in sieve[:NEAR] if pair[0] in dense]
        known = nodes.away.get(shut)
        if known is not None:
            seen, found = _figured(known, near, len(blocks))
            if found:  # (else no column of the sieve has figures)
                first_figures, first_least = found[0]
                kept = (seen, first_figures, first_least)
                if len(found) > 1:
                    figured = (seen, found[1:])
    looked = False  # (some block was looked inside)
    asked = False  # (whether the tops were asked, at the first short block)
    if least > nodes.tops[lead]:
        return None  # (no node of the class has enough of the first: see the tops)
    # (stamps no search wrote are all 0: no block refused the vector yet,
    # as with quantities never seen before, and they need no comparing)
    candidates, bounded = _passing(nodes.bounds, sieve, done, versions,
                                   stamps if refused.stamped else None,
                                   plain_stamps if plain is not None and plain.stamped else None,
                                   apart, kept, None if counted is None else nodes.tallies[counted])
    refused.stamped = True
    if plain is not None:
        plain.stamped = True
    missed: Any = None  # (the column that turned the last node away)
    stepped = 0  # (nodes passed over one by one for a group)
    failed = 0  # (nodes passing the first column, short on another)
    reached = 0  # (nodes passing every column compared)
    # (the nodes hosting a group passed in C among those of ``holding`` or of
    # a sparse lead too: see below)
    narrowing = apart is not None and (sparse_lead or holding is not None)
    # (inside a block, the nodes having every kind asked check those kinds
    # first: where the kinds sit on most nodes, the nodes with cpu left have
    # often used them up; put in that order at the first block looked
    # inside, as many searches look inside none)
    inner: Optional[List[Tuple[Any, float]]] = \
        rest if holding is None or sparse_lead else None
    for index in candidates:
        for column, threshold in bounded:
            if column[index] < threshold:
                break  # (the block's bounds fall short on ``column``)
        else:
            column = None
        if column is not None:
            if column is not bounded[0][0]:
                # (the column that turned this block away is compared
                # first at the next: blocks near each other fall short on
                # the same resource, mostly)
                _to_front(bounded, column)
            if not asked:
                asked = True
                if nodes.beyond(sieve):
                    return None  # (no node of the class has enough: see the tops)
            continue
        if figured is not None and figured[0][index] == versions[index]:
            for figures, threshold in figured[1]:
                if figures[index] < threshold:
                    break  # (the nodes free of the group fall short on it)
            else:
                figures = None
            if figures is not None:
                continue
        # Every block skipped on the way refused too: by its bounds or its
        # stamp, which hold while its version does.
        if write:
            stamps[done:index] = versions[done:index]
        if first == 0 and offset == 0:
            refused.prefix = index
        done = index + 1
        block = blocks[index]
        if high is not None and block.keys[0] >= high:
            nodes.stepped = stepped
            return None
        start = offset if index == first else 0
        # (no node of the block has enough of both joint resources, by its
        # frontier: the whole block refuses)
        refuses = False
        frontier = block.frontier
        if frontier and both is not None:
            if both is _UNKNOWN:
                both = _thresholds(nodes, sieve)
            refuses = both is not None and short_of_both(frontier, both)
        if refuses:
            if write:
                stamps[index] = versions[index]
            if plain_stamps is not None:
                plain_stamps[index] = versions[index]
            if first == 0 and offset == 0:
                refused.prefix = done
            continue
        looked = True
        if inner is None:
            kinds = holding or frozenset()
            inner = [pair for pair in rest if pair[0] in kinds] + \
                [pair for pair in rest if pair[0] not in kinds]
        slots = block.slots
        whole = not start  # every node of the block was looked at, none taken
        cols = block.cols
        values = cols[lead] if not sparse_lead else []
        averse = False  # a node was passed over for a group
        # The same two stages as over the blocks: the first column in C,
        # the others in Python where it passes; or, for a workload asking
        # for resources only some nodes have, the nodes having them all.
        # (the other columns are read by name at each node passing the
        # first: few do, and a list of them made per block cost more)
        if sparse_lead:
            positions: Iterable[int] = _sparse_positions(block, lead, least, start)
        elif holding is None:
            passes = map(ge, islice(values, start, None) if start else values, repeat(least))
            if apart is not None:
                # (and not hosting the group: a block keeping nodes that
                # do counts as one where a node was passed over for it)
                away = cols[apart]
                passes = map(and_, passes, map(ge, islice(away, start, None) if start
                                               else away, repeat(0.0)))
                averse = NEG in away
            positions = compress(count(start), passes)
        else:
            positions = block.holding(holding)
            if start:
                positions = [at for at in positions if at >= start]
        if narrowing:
            # (the nodes hosting the group passed in C here too)
            away = cols[apart]
            positions = compress(positions, map(ge, map(away.__getitem__, positions),
                                                repeat(0.0)))
            averse = NEG in away
        checking = holding is not None and not sparse_lead
        for position in positions:
            if checking and values[position] < least:
                continue
            for key, threshold in inner:
                if cols[key][position] < threshold:
                    # (the column that turned this node away is compared
                    # first in the next block: moved once a block, not at
                    # every node turned away)
                    failed += 1
                    missed = key
                    break
            else:
                reached += 1
                slot = slots[position]
                if rest_sparse and not _meets(block.sparse, slot, rest_sparse):
                    continue
                if high is not None and slot.key >= high:
                    nodes.stepped = stepped
                    return None
                if slot.cordoned:
                    continue
                if groups and not slot.groups.keys().isdisjoint(groups):
                    averse = True
                    stepped += 1
                    continue
                if takes(slot.remaining, workload, slot.below):
                    nodes.stepped = stepped
                    return slot
                nodes.denied += 1  # (on a resource the sieve lacks, mostly)
        if missed is not None:
            if missed is not inner[0][0]:
                _to_front(inner, missed)
            missed = None
        if failed >= MISLED and failed > 2 * reached:
            # (most nodes passing the first column fell short on another,
            # many of them: the caller may have the shape's sieves led by
            # that one)
            nodes.misled = inner[0][0]
        if sharpening is not None:
            nodes.sharpen(index, sharpening, lead)
        if whole:
            if write:
                stamps[index] = versions[index]
            if plain_stamps is not None and not averse:
                plain_stamps[index] = versions[index]
            if averse and shut is not None:
                nodes.keep_away(index, shut, near, apart)
            nodes.wasted += 1
            if first == 0 and offset == 0:
                refused.prefix = done
        if not frontier and both is not None and holding is None and counted is None:
            # (made when the block refuses a second time without a change:
            # a block that changes at every placement would not use it; not
            # for a workload asking for resources only some nodes have,
            # which the block mostly refuses for want of a node having
            # them, where nodes keep their order (``holding`` is None
            # where they move): such frontiers were made and almost never
            # used)
            if frontier is None:
                block.frontier = ()
            else:
                nodes.frontier(block)
    nodes.stepped = stepped
    total = len(blocks)
    if write:
        stamps[done:total] = versions[done:total]
    if first == 0 and offset == 0:
        refused.prefix = total
        if looked and high is None:
            # (the whole class refused after looking inside blocks: the
            # tops, made exact, may pass the next such workload at once)
            nodes.settle(sieve)
    return None


_UNKNOWN = object()


def _figured(known: Tuple[List[int], Dict[Any, List[float]]], near: Sieve,
             total: int) -> Tuple[List[int], List[Tuple[List[float], float]]]:
    """A group's figures as a search compares them (see
    :meth:`~.groups.GroupColumns.keep_away`): its versions, and per column of
    ``near`` with figures kept, those and the column's threshold, each list
    at least ``total`` long (blocks made since are not read: their
    versions are new). The first column's are compared in C (see
    :func:`_passing`), the others in Python where a block's bounds pass.
    Only one in C: on a random mix of every workload in one of 40 groups,
    comparing every column's figures there passed no more blocks than the
    first's, and the comparisons cost 15% of the run. The others are
    still compared: on another such mix, of workloads asking ten times as
    much memory as cpu, of the blocks looked inside in vain again with
    their figures kept, those of some column fell short in 99 in 100, the
    first column's in 2. O(P), plus O(B) when blocks were made since."""
    seen, most = known
    if len(seen) < total:
        seen.extend([0] * (total - len(seen)))
    found = []
    for key, least in near:
        figures = most.get(key)
        if figures is not None:
            if len(figures) < total:
                figures.extend([INF] * (total - len(figures)))
            found.append((figures, least))
    return seen, found


def _to_front(pairs: List[Any], column: Any) -> None:
    """Move the pair of ``column`` to the front of ``pairs``. O(len(pairs))."""
    for at, pair in enumerate(pairs):
        if pair[0] is column:
            pairs.insert(0, pairs.pop(at))
            return


def _split_sparse(nodes: NodeClass, pairs: Sieve) -> Tuple[Sieve, Optional[Sieve]]:
    """``pairs`` parted into those of dense columns and those of sparse
    ones (``None`` when there are none). O(len(pairs))."""
    sparse = nodes.sparse
    for key, _ in pairs:
        if key in sparse:
            break
    else:
        return list(pairs), None  # (the usual case: none of them is sparse)
    return ([pair for pair in pairs if pair[0] not in sparse],
            [pair for pair in pairs if pair[0] in sparse])


def _sparse_positions(block: Any, key: Any, least: float, start: int) -> List[int]:
    """The positions, from ``start`` on and in order, of the nodes of
    ``block`` whose value in sparse column ``key`` is at least ``least``.
    O(H log L) for the H nodes of the block having its resource."""
    values = block.sparse.get(key)
    if values is None:
        return []
    keys = block.keys
    if len(values) == 1:  # (the usual case: a rare resource, one node of the block)
        [(slot, value)] = values.items()
        at = bisect_left(keys, slot.key)
        return [at] if value >= least and at >= start else []
    found = sorted([bisect_left(keys, slot.key) for slot, value in values.items()
                    if value >= least])
    return [at for at in found if at >= start] if start else found


def _meets(sparse: Dict[Any, Dict[Any, float]], slot: Any,
           pairs: List[Tuple[Any, float]]) -> bool:
    """Whether ``slot`` meets every threshold of ``pairs`` (of sparse
    columns; a node lacking the resource reads minus infinity)."""
    for key, threshold in pairs:
        values = sparse.get(key)
        if values is None or values.get(slot, NEG) < threshold:
            return False
    return True


def refusing_run(nodes: NodeClass, sieve: Sieve, refused: Refused) -> int:
    """How many blocks of ``nodes``, from the first, hold no open node
    meeting ``sieve`` (those whose floats pass its first :data:`NEAR`
    pairs count as meeting it); the run is stamped in ``refused``, the
    record of the vector the sieve was made for, and starts from its last
    :attr:`~.records.Refused.prefix` while those stamps stand. A block of
    the run refuses every workload of the vector's shape that asks at
    least as much of everything (see :func:`.floors.floor_run`).

    Cost: O(P) in C for a run of P blocks standing, then as a search that
    looks inside blocks until the first meeting the sieve, where it stops
    at its first node passing the floats, with no check of the fit rule.
    """
    blocks, versions, stamps = nodes.blocks, nodes.versions, refused.stamps
    done = 0
    prefix = refused.prefix
    if prefix and stamps[:prefix] == versions[:prefix]:
        done = prefix
    # (a shape with a floor asks only for resources every node of the
    # class has, but one of their columns may have been made sparse while
    # some node lacked it: those are read node by node)
    (lead, least), rest = sieve[0], sieve[1:NEAR]
    dense, by_node = _split_sparse(nodes, sieve[:NEAR]) if nodes.sparse else ([], None)
    total = len(blocks)
    if least <= nodes.tops[lead]:
        candidates, bounded = _passing(nodes.bounds, sieve, done, versions,
                                       stamps if refused.stamped else None)
        both: Any = _UNKNOWN if nodes.joint is not None else None
        for index in candidates:
            for column, threshold in bounded:
                if column[index] < threshold:
                    if column is not bounded[0][0]:
                        _to_front(bounded, column)  # (as in :func:`first_in_class`)
                    break
            else:
                block = blocks[index]
                frontier = block.frontier
                if frontier and both is not None:
                    if both is _UNKNOWN:
                        both = _thresholds(nodes, sieve)
                    if both is not None and short_of_both(frontier, both):
                        continue  # (no node has enough of both)
                cols = block.cols
                if by_node is not None:
                    for position, slot in enumerate(block.slots):
                        if all(cols[key][position] >= threshold for key, threshold in dense) \
                                and _meets(block.sparse, slot, by_node):
                            total = index
                            break
                    if total == index:
                        break
                    continue
                for position in compress(count(), map(ge, cols[lead], repeat(least))):
                    for key, threshold in rest:
                        if cols[key][position] < threshold:
                            break
                    else:
                        total = index  # (a node meets the sieve: the run ends here)
                        break
                if total == index:
                    break
    refused.stamped = True
    stamps[done:total] = versions[done:total]
    refused.prefix = total
    return total


def short_of_both(frontier: Tuple[List[float], ...], both: Tuple[float, float]) -> bool:
    """Whether no node of a block with this frontier (see
    :meth:`~.derived.DerivedColumns.frontier`) has at least both thresholds of
    ``both``. O(log L)."""
    xs, ys = frontier
    at = bisect_left(xs, both[0])
    return at == len(xs) or ys[at] < both[1]


def _thresholds(nodes: NodeClass, sieve: Sieve) -> Optional[Tuple[float, float]]:
    """The sieve's thresholds on the two resources of the class's joint
    columns, or ``None`` when it does not sieve on both."""
    (first, _), (second, _) = nodes.joint[0][1]
    found = dict(pair for pair in sieve if pair[0] == first or pair[0] == second)
    return (found[first], found[second]) if len(found) == 2 else None


def first_among(candidates: Iterable[Any], workload: Workload, groups: FrozenSet[str],
                low: Any, high: Any) -> Optional[Any]:
    """:func:`first_in_class` over a few ``candidates`` given in any order.

    Cost: O(K log K) for K candidates, plus one check of the fit rule each at most.
    """
    for slot in sorted(candidates if low is None and high is None
                       else _in_range(candidates, low, high), key=BY_KEY):
        if acceptable(slot, workload, groups):
            return slot
    return None


def first_in_order(slots: Sequence[Any], keys: Sequence[Any], workload: Workload,
                   groups: FrozenSet[str], low: Any, high: Any,
                   limit: int = 0) -> Tuple[Optional[Any], Optional[int]]:
    """:func:`first_among` over candidates already in order (``keys``:
    their order keys, ascending): no sort at each search; at most
    ``limit`` are tried (0: every one). The node found (or ``None``), and
    the position of the first candidate not tried when the limit stopped
    the search (else ``None``). (Many candidates are searched by
    :meth:`~.kept.KeptOrders._kept_from` instead, which passes those known
    to refuse.)

    Cost: O(log K) for K candidates, plus one check of the fit rule each at most.
    """
    start = 0 if low is None else bisect_left(keys, low)
    stop = len(keys) if high is None else bisect_left(keys, high)
    end = stop if not limit or start + limit >= stop else start + limit
    for at in range(start, end):
        slot = slots[at]
        if acceptable(slot, workload, groups):
            return slot, None
    return None, (end if end < stop else None)


def _in_range(candidates: Iterable[Any], low: Any, high: Any) -> Iterator[Any]:
    for slot in candidates:
        key = slot.key
        if (low is None or key >= low) and (high is None or key < high):
            yield slot
