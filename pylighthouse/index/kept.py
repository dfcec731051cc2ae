"""Bearers kept in order: a tag's few nodes tried one by one, from those known to refuse on.

Where nodes keep their order (Prioritized, RoundRobin), a class keeps the
bearers of a tag, or of a set of resources asked together, sorted by
order key (:meth:`~.bearers.Bearers.in_order`), and a search for a
workload asking for it tries them in turn (:func:`~.search.first_in_order`)
instead of sieving every block: a hostname tag's one node, a rare
device's few. The methods here, part of :class:`~.nodes.NodeIndex`, keep
that cheap when the bearers are many and the first of them full:

* :meth:`KeptOrders._floor`, :meth:`KeptOrders._cursor`: per tag and
  immunities, the *floor* of the workloads searched for (the names each
  asked for, with the least of each) and how many bearers from the first
  refuse it, moved on as bearers are found refusing and kept while no node
  gains room, joins, leaves or is uncordoned;
* :meth:`KeptOrders._kept_from`: a search from any bearer on (as
  RoundRobin searches from its cursor) that passes those, and the bearers
  further on that a search found refusing the floor, by marks followed as
  a union-find's;
* :meth:`KeptOrders._scan`: at most :data:`~.plans.SCAN_LIMIT` bearers
  tried before a class's sieve, given up while such tries seldom answer.

Cost: O(F) for a floor of F names, plus O(F) per bearer passed once for
as long as the count is kept; one check of the fit rule per bearer
checked, near O(1) per bearer passed by its mark.
"""
from bisect import bisect_left
from typing import TYPE_CHECKING, Any, FrozenSet, Optional, Sequence, Tuple

from ..model import Workload
from . import plans
from .bearers import Tag
from .blocks import NodeClass
from .plans import Entry
from .records import Cursor
from .search import acceptable, first_in_order

__all__ = ["KeptOrders", "CURSOR_AT", "MAX_CURSORS"]

#: Bearers of a tag kept in order searched from a count of those known to
#: refuse (see :meth:`KeptOrders._cursor`) when more than this many.
CURSOR_AT = 32
#: Counts kept per class at most (cleared when full).
MAX_CURSORS = 4096


class KeptOrders:
    """The part of :class:`~.nodes.NodeIndex` that searches the bearers a
    class keeps in order (see the module docstring)."""

    if TYPE_CHECKING:  # pragma: no cover - what NodeIndex gives them
        _grown: int

    def _scan(self, entry: Entry, workload: Workload, groups: FrozenSet[str],
              low: Any, high: Any) -> Tuple[bool, Optional[Any], Any]:
        """Try at most :data:`~.plans.SCAN_LIMIT` of the nodes of the
        entry's class having every resource of ``entry.scan``, in order in
        [``low``, ``high``), from those known to refuse on (see
        :meth:`_cursor`). Return whether that answered for the class, the
        node found (or ``None``), and where its sieve is to search from
        when not answered: the order key of the first of those nodes not
        tried (the nodes before it lacking such a resource refuse too), or
        ``low`` when the class no longer tries them (see
        :data:`~.plans.SCAN_MISSES`, until nodes gained room as often as
        :data:`~.plans.SCAN_REGAINED` of the class's nodes since). O(S) for
        S nodes tried, plus O(S) of the cursor's moves."""
        nodes, tag = entry.nodes, entry.scan
        assert tag is not None
        tally = nodes.scans
        tried, missed, mark = tally
        if tried >= plans.SCAN_TRIAL and missed > plans.SCAN_MISSES * tried:
            if mark < 0:
                tally[2] = mark = self._grown  # (given up: from now on)
            if self._grown - mark < plans.SCAN_REGAINED * nodes.size:
                return False, None, low
            # (many nodes gained room since: such searches are tried again,
            # and judged afresh)
            tried = missed = tally[1] = 0
            tally[2] = -1
        found, stop = self._first_kept(nodes, tag, workload, groups, low, high,
                                       plans.SCAN_LIMIT)
        tally[0] = tried + 1
        if stop is None:
            return True, found, None
        tally[1] = missed + 1
        return False, None, stop

    def _first_kept(self, nodes: NodeClass, tag: Tag, workload: Workload,
                    groups: FrozenSet[str], low: Any, high: Any,
                    limit: int = 0) -> Tuple[Optional[Any], Any]:
        """:func:`~.search.first_in_order` over the bearers of ``tag`` that
        the class keeps in order, from those known to refuse on (see
        :meth:`_cursor`, which passes at most ``limit`` a call), trying at
        most ``limit`` (0: every one): the node found (or ``None``), and
        the order key of the first bearer not tried when the limit stopped
        the search (else ``None``)."""
        slots, keys = nodes.in_order(tag)
        if len(slots) <= CURSOR_AT:
            found, stop = first_in_order(slots, keys, workload, groups, low, high, limit)
        else:
            record = self._floor(nodes, tag, workload)
            if low is None:
                # (past the bearers known to refuse from the first; then
                # those found refusing the floor since are passed by their
                # marks, as from a cursor: a search from the first node
                # follows searches that went round, as RoundRobin's do, and
                # met the same bearers)
                self._cursor(record, workload, slots, limit)
            found, stop = self._kept_from(record, workload, groups, slots, keys, low, high,
                                          limit)
        return found, None if stop is None else keys[stop]

    @staticmethod
    def _cursor(record: Cursor, workload: Workload, slots: Sequence[Any],
                limit: int = 0) -> int:
        """How many of ``slots`` (the bearers of a tag in the class's
        order) from the first are known to refuse ``workload``: a count
        kept per tag and immunities with the *floor* of the workloads
        searched for (the names each asked for, and the least of each), and
        moved on past every bearer that refuses the floor on one of its
        names (or is cordoned). Such a bearer refuses every workload asking
        for those names and at least as much of each, whatever else it asks
        for. Kept while no node gains room, joins, leaves or is uncordoned
        (:attr:`grown`, :attr:`~.blocks.NodeClass.members`); started again
        when a workload asks for less than the floor or for fewer names.
        O(F) for F names of the floor, plus O(F) per bearer passed, each
        once for as long as the count is kept; with ``limit``, at most that
        many bearers passed a call (the next goes on from there).
        ``record``: what :meth:`_floor` gives for the tag and workload."""
        least = record.least
        at = record.at
        # (at most ``limit`` bearers passed a call, if given: the next
        # call goes on from there)
        count = len(slots) if not limit else min(len(slots), at + limit)
        immunities = workload.immunities
        while at < count:
            slot = slots[at]
            if not slot.cordoned:
                # (the requirements' half of :func:`~pylighthouse.fit.takes`
                # alone: a resource below zero that the floor does not ask
                # for may be offset by a workload that does)
                remaining = slot.remaining
                for name, value in least.items():
                    left = remaining.get(name)
                    if left is None or left < value and name not in immunities:
                        break  # (it refuses the floor on ``name``)
                else:
                    break  # (it may take a workload at the floor)
            at += 1
        record.at = at
        return at

    def _floor(self, nodes: NodeClass, tag: Tag, workload: Workload) -> Cursor:
        """The record of which bearers of ``tag`` refuse (see :meth:`_cursor`)
        for the workload's immunities, its floor brought down to the
        workload's requirements (forgetting the bearers known to refuse
        when that lowered it), or a new one when a node gained room,
        joined, left or was uncordoned. O(F) for F names of the floor."""
        cursors = nodes.cursors
        key = (tag, workload.immunities)
        record = cursors.get(key)
        requirements = workload.requirements
        if record is None or record.grown != self._grown or record.members != nodes.members:
            if len(cursors) >= MAX_CURSORS:
                cursors.clear()
            record = cursors[key] = Cursor(self._grown, nodes.members, dict(requirements))
            return record
        least = record.least
        if not least.keys() <= requirements.keys():
            for name in least.keys() - requirements.keys():
                del least[name]
            record.lowered()
        for name, value in least.items():
            needed = requirements[name]
            if needed < value:
                least[name] = needed
                record.lowered()
        return record

    @staticmethod
    def _kept_from(record: Cursor, workload: Workload, groups: FrozenSet[str],
                   slots: Sequence[Any], keys: Sequence[Any], low: Any, high: Any,
                   limit: int = 0) -> Tuple[Optional[Any], Optional[int]]:
        """:func:`~.search.first_in_order` from order key ``low`` (as
        RoundRobin searches from its cursor; ``None``: from the first),
        passing without a check the bearers that ``record``, the tag's
        record for the workload (see :meth:`_floor`), knows to refuse: the
        first ``at`` of them, and each one a search from a cursor found
        refusing the floor (or cordoned) since, which this search marks in
        turn. The marks are next pointers, followed and shortened as a
        union-find's (path compression). The same bearers count toward
        ``limit`` as when each is checked, so where a limited search stops
        is unchanged. O(log K) for K bearers, plus one check of the fit rule
        and O(F) for F names of the floor for each bearer checked, plus
        near O(1) a bearer passed."""
        least, passed, immunities = record.least, record.passed, workload.immunities
        start = 0 if low is None else bisect_left(keys, low)
        if start < record.at:
            start = record.at
        stop = len(keys) if high is None else bisect_left(keys, high)
        end = stop if not limit or start + limit >= stop else start + limit
        at = start
        while at < end:
            if at in passed:
                first = at
                while at in passed:
                    at = passed[at]
                while first != at:  # (every mark on the way points past them all)
                    following = passed[first]
                    passed[first] = at
                    first = following
                continue
            slot = slots[at]
            if acceptable(slot, workload, groups):
                return slot, None
            if slot.cordoned:
                passed[at] = at + 1
            else:
                # (as in :meth:`_cursor`: the requirements' half of the fit rule)
                remaining = slot.remaining
                for name, value in least.items():
                    left = remaining.get(name)
                    if left is None or left < value and name not in immunities:
                        passed[at] = at + 1  # (it refuses the floor on ``name``)
                        break
            at += 1
        return None, (end if end < stop else None)
