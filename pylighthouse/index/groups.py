"""Aversion groups in a class of nodes: group columns, and what nodes free of a group have left.

A workload of an aversion group avoids the nodes hosting a member of it
(in its first pass; see the specification). Where a few groups have many
members, the nodes with room soon host them all, and a search would step
over them one by one. The methods here, part of every
:class:`~.blocks.NodeClass`, let it pass them in C instead:

* :meth:`GroupColumns.group_column`: a column per group (at most
  :data:`MAX_GROUP_COLUMNS` a class), 0 for an open node hosting none of
  the group, minus infinity for the others, whose bounds pass the blocks
  every node of which hosts it (kept by :meth:`GroupColumns.regroup` as
  nodes gain and lose workloads of the group);
* :meth:`GroupColumns.keep_away`: per group (at most :data:`MAX_AWAY`),
  per block looked inside in vain, the most its nodes free of the group
  show in each column searched, so that a later search of the group
  asking for more passes the block in C while its version stands.

Cost: a group column O(N) to make, O(1) a node changed mostly; a block's
figures O(L) per column, the second time a search looks inside it in
vain at one version.
"""
from itertools import compress, count, repeat
from operator import ge
from typing import (TYPE_CHECKING, Any, Dict, Iterable, List, Optional, Sequence, Tuple,
                    Union)

from .columns import INF, NEG, GroupColumn, column_value
from .records import halve

if TYPE_CHECKING:  # pragma: no cover - for the type checker only
    from .blocks import Block

__all__ = ["GroupColumns", "MAX_GROUP_COLUMNS", "MAX_AWAY"]

#: At most this many group columns a class keeps (see
#: :meth:`GroupColumns.group_column`): each costs a float a node, and a list
#: operation whenever a node moves within its block.
MAX_GROUP_COLUMNS = 16
#: At most this many aversion groups a class keeps what its blocks' nodes
#: not hosting them show (see :meth:`GroupColumns.keep_away`); past it, the
#: older half is forgotten.
MAX_AWAY = 64


class GroupColumns:
    """The part of :class:`~.blocks.NodeClass` that keeps aversion groups'
    columns and figures (see the module docstring)."""

    __slots__ = ()

    if TYPE_CHECKING:  # pragma: no cover - what NodeClass gives them
        blocks: List["Block"]
        versions: List[int]
        grouped: Dict[str, GroupColumn]
        group_columns: int
        away: Dict[str, Tuple[List[int], Dict[Any, List[float]]]]

        def add_column(self, key: Any, made: Optional[List[List[float]]] = None) -> None:
            ...

        def _rewrite(self, index: int, at: Any, key: Any,
                     values: Union[List[float], Dict[Any, float]], value: float) -> None:
            ...

    def group_column(self, name: str) -> Optional[GroupColumn]:
        """The group column of aversion group ``name``, made now if the class
        has none yet (``None`` when it keeps :data:`MAX_GROUP_COLUMNS`, as
        the index was made with it, already): 0 for an open node hosting no
        workload of the group, minus infinity for the others. A search for
        a workload of the group passes in C the blocks whose every node
        hosts it, and inside a block the nodes that do: a BinPack cluster
        fills its first nodes with one member of each of a few groups, and
        the next member of one would step over them all, one by one. Kept
        by :meth:`regroup`. O(N) once."""
        key = self.grouped.get(name)
        if key is None:
            if len(self.grouped) >= self.group_columns:
                return None
            key = self.grouped[name] = GroupColumn(("group", name))
            self.add_column(key)
        return key

    def keep_away(self, index: int, group: str, pairs: Sequence[Tuple[Any, float]],
                  apart: Optional[GroupColumn]) -> None:
        """A search avoiding aversion group ``group`` looked inside the
        whole of block ``index`` in vain, passing over nodes hosting it.
        The second time at the block's version, keep for each (dense)
        column of ``pairs`` the most that an open node of the block not
        hosting the group shows in it (found in C by the group's column
        ``apart``, if the class has one), in ``away``. Until the
        block's version moves (a node of it gains room, loses a group,
        joins or is uncordoned) those are at least what such nodes show, so
        a search for a workload of the group asking for more passes the
        block in C (see :func:`.search.first_in_class`). In a cluster
        filling from the front, the first blocks keep room only on nodes
        hosting the groups that came first.

        The lists are by block position and read only where the version
        kept is the block's: a block's version is never another's, so a
        block inserted or dropped before makes the figures after it unread,
        not wrong. O(1) the first time at a version, O(L) per column the
        second."""
        version = self.versions[index]
        total = len(self.blocks)
        away = self.away
        known = away.get(group)
        if known is None:
            if len(away) >= MAX_AWAY:
                halve(away)
            known = away[group] = ([0] * total, {})
        seen, most = known
        if len(seen) < total:
            seen.extend([0] * (total - len(seen)))
        if seen[index] != version:
            if seen[index] != -version:
                seen[index] = -version  # (the first look in vain at this version)
                return
            for column in most.values():  # (figures of another version)
                if index < len(column):
                    column[index] = INF
        block = self.blocks[index]
        cols = block.cols
        if apart is not None:
            positions: List[int] = list(compress(count(), map(ge, cols[apart], repeat(0.0))))
        else:  # (the group column's rule, see :func:`.columns.column_value`, inlined)
            positions = [at for at, slot in enumerate(block.slots)
                         if not slot.cordoned and group not in slot.groups]
        for key, _ in pairs:
            figures = most.get(key)
            if figures is None:
                figures = most[key] = [INF] * total
            elif len(figures) < total:
                figures.extend([INF] * (total - len(figures)))
            values = cols[key]
            figures[index] = max(map(values.__getitem__, positions)) if positions else NEG
        seen[index] = version

    def regroup(self, index: int, position: int, names: Iterable[str]) -> None:
        """The node at ``position`` of block ``index`` gained or lost a
        workload of each of aversion groups ``names``: its values in their
        group columns follow (its block's version is the caller's: losing
        a group is a gain, see :meth:`.blocks.NodeClass.renew`). O(1) a column mostly, O(L)
        when the node held its block's bound."""
        grouped = self.grouped
        block = self.blocks[index]
        slot = block.slots[position]
        for name in names:
            key = grouped.get(name)
            if key is not None:
                self._rewrite(index, position, key, block.cols[key], column_value(slot, key))
