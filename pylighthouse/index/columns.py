"""What a node shows in a column of the index: one float a column, read from its room.

A *column* is a resource some workload asked for (its key is the
resource's name), :data:`OPEN` (0 for an open node), a
:class:`JointColumn`, the least of several resources each multiplied by a
scale (the joint, masked and set columns of :mod:`.derived`), or a
:class:`GroupColumn`, 0 for an open node not hosting an aversion group.
:func:`column_value` gives a node's value in any of them; minus infinity
means only that the node lacks a resource of the column, is cordoned or
(a group column) hosts the group. O(1) each.
"""
from operator import attrgetter
from typing import Any, Tuple

__all__ = ["JointColumn", "GroupColumn", "column_value", "NEG", "INF", "LOWEST", "OPEN", "MASK",
           "RATIOS", "MIDDLE", "MAX_HOLDING", "BY_KEY"]

NEG = float("-inf")
INF = float("inf")
#: The powers of four between the two resources of the joint columns.
RATIOS = (-2, -1, 0, 1, 2)
#: A masked column's scale on its own resource (see :meth:`.derived.DerivedColumns.mask`):
#: any quantity of it above zero times this passes the joint part, of
#: scale about one over the class's typical capacity.
MASK = 2.0 ** 64
#: Where the joint column of ratio one sits among the joint columns
#: (:data:`RATIOS` runs by steps of one).
MIDDLE = RATIOS.index(0)
#: The lowest float a node that has a resource shows for it (raising a
#: quantity only lets more nodes through the sieve, never fewer).
LOWEST = -1.7976931348623157e308
#: At most this many sets of resources whose holders a block keeps (and
#: four times as many single resources); also the most set columns a
#: class keeps.
MAX_HOLDING = 256
#: A node's order key (to sort nodes by; the index, the search and the
#: kept bearer orders all use this one).
BY_KEY = attrgetter("key")
#: The column that reads 0 for an open node and minus infinity for a
#: cordoned one ("" is never a resource name).
OPEN = ""


class _Key(Tuple[Any, ...]):
    """A column key hashed and compared by identity: a search and a
    placement look columns up by key a score of times, and a plain tuple's
    hash is computed anew each time, over its nested tuples. Each key is
    made once and used as that object."""

    __slots__ = ()
    __hash__ = object.__hash__
    __eq__ = object.__eq__
    __ne__ = object.__ne__


class JointColumn(_Key):
    """The key of a joint column, ``("joint", ((first, scale), (second,
    scale)))`` (see :meth:`.derived.DerivedColumns.make_joint`), or of a masked one,
    ``("masked", ((name, MASK), (first, scale), (second, scale)))`` (see
    :meth:`.derived.DerivedColumns.mask`): a node's value is the least of its scaled
    quantities left (:func:`column_value`)."""

    __slots__ = ()


class GroupColumn(_Key):
    """The key of a group column, ``("group", name)`` (see
    :meth:`~.groups.GroupColumns.group_column`): 0 for an open node hosting no
    workload of aversion group ``name``, minus infinity for the others."""

    __slots__ = ()


def column_value(slot: Any, key: Any) -> float:
    """The float a node shows in column ``key``: its remaining quantity (at
    least :data:`LOWEST`, so that minus infinity means only "lacks a
    resource of ``key``, is cordoned or hosts the group of ``key``"). O(1)."""
    if slot.cordoned:
        return NEG
    if key == OPEN:
        return 0.0
    if type(key) is GroupColumn:
        return NEG if key[1] in slot.groups else 0.0
    if type(key) is JointColumn:
        remaining = slot.remaining
        least = INF
        for name, scale in key[1]:
            value = remaining.get(name)
            if value is None:
                return NEG
            scaled = float(value) * scale
            if scaled < least:
                least = scaled
        return least
    value = slot.remaining.get(key)
    if value is None:
        return NEG
    number = float(value)
    return number if number >= LOWEST else LOWEST
