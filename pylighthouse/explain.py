"""Explanations: why a workload fits where it fits, and why not elsewhere.

An :class:`Explanation` is assembled by a distributor from the reasons the
fit rule (:func:`pylighthouse.fit.check_fit`) gives for each node; nothing
here re-checks a fit.
"""
from bisect import bisect_left, bisect_right
from decimal import Decimal
from typing import Any, Collection, Dict, Iterable, Iterator, List, Mapping, Optional, Tuple

import attr

from .fit import INSUFFICIENT, Reason
from .quantities import quantity_text

__all__ = ["Explanation", "RefusalTally", "summary_parts", "one_line", "shape_of", "shortfall",
           "printable"]


@attr.s(frozen=True, slots=True, auto_attribs=True, kw_only=True)
class Explanation:
    """Where one workload could go now, and why every other node refuses it.

    ``fits`` names the nodes where it fits and that share no aversion group
    with it; ``averse`` the nodes where it fits but would share one;
    ``reasons`` maps every other node to the :class:`~pylighthouse.fit.Reason`
    it refuses the workload for (a cordoned node gives a ``cordoned``
    reason); ``choice`` is the node the distributor's strategy would pick
    now, or ``None``; ``total`` counts the nodes. All node lists follow the
    strategy's current order.

    ``str()`` gives one line, for example
    ``0/5 nodes fit: 3 insufficient cpu (needs 4, most left 2), 1 missing
    resource gpu, 1 cordoned``.
    """

    workload: str
    total: int
    fits: Tuple[str, ...]
    averse: Tuple[str, ...]
    reasons: Mapping[str, Reason]
    choice: Optional[str]
    #: The summary, once computed; explanations of workloads that share
    #: their reasons share it too (see :meth:`Distributor.explain_all`).
    _summary: Optional[Tuple[str, ...]] = attr.ib(default=None, init=False, eq=False,
                                                  repr=False)

    def __str__(self) -> str:
        return one_line(len(self.fits), len(self.averse), self.total, self.summary())

    def summary(self) -> List[str]:
        """The refusals counted by kind and resource, most frequent first.

        Cost: O(N) the first time, then O(kinds of refusal).
        """
        if self._summary is None:
            object.__setattr__(self, "_summary", tuple(self._count()))
        assert self._summary is not None
        return list(self._summary)

    def _share_summary(self, other: "Explanation") -> None:
        """Take ``other``'s summary, computed once for both: the caller
        vouches that both have the same reasons."""
        if other._summary is None:
            other.summary()
        object.__setattr__(self, "_summary", other._summary)

    def _count(self) -> List[str]:
        groups: Dict[Tuple[str, str], List[Reason]] = {}
        for reason in self.reasons.values():
            groups.setdefault((reason.kind, reason.resource), []).append(reason)
        ranked = sorted(groups.values(), key=len, reverse=True)  # stable: first seen first
        # (an INSUFFICIENT reason carries both numbers; max keeps the first
        # of equal quantities, which may be written differently)
        return summary_parts(
            (reasons[0], len(reasons),
             max(reason.left for reason in reasons if reason.left is not None)
             if reasons[0].kind == INSUFFICIENT else None)
            for reasons in ranked)

    def to_dict(self) -> Dict[str, Any]:
        """Return the explanation as plain data (reasons as their strings)."""
        return {"workload": self.workload, "total": self.total,
                "fits": list(self.fits), "averse": list(self.averse),
                "reasons": {node: str(reason) for node, reason in self.reasons.items()},
                "choice": self.choice, "summary": str(self)}


class RefusalTally:
    """The reasons nodes refuse one workload, grouped as
    :meth:`Explanation.summary` groups them, for the line of an explanation
    in which no node fits, found again and again with a few nodes changed.

    Each node is added with its reason and its *place*, its order key in the
    strategy's order (any values that compare as the nodes come). The line
    of every node added but a few left out, with a few reasons of other
    nodes given (:meth:`line`: the nodes a trial changed, as they are now),
    is then worked out from the groups without reading the other nodes
    again: the count of each group, the first of its nodes in order (ties
    of counts go to the group seen first) and, for
    :data:`~pylighthouse.fit.INSUFFICIENT`, the most any of them has left
    (the first in order of equal quantities, which may be written
    differently). :func:`~pylighthouse.plan_scale_down` asks this for
    every node it keeps, whose drain left a workload behind.

    Cost: O(1) to add a node; a line O(F x (G + log N) + G log G) for F
    nodes left out or given, G groups and N nodes added, once the groups
    are sorted (O(N log N), after nodes were added).
    """

    __slots__ = ("groups", "kinds", "unread")

    def __init__(self, unread: Iterable[str] = ()) -> None:
        self.groups: Dict[Tuple[str, str], _Group] = {}
        #: Per node added, its group.
        self.kinds: Dict[str, Tuple[str, str]] = {}
        #: The names of the nodes not added yet (the caller's to keep).
        self.unread = set(unread)

    def __contains__(self, name: object) -> bool:
        return name in self.kinds

    def add(self, name: str, reason: Reason, place: Any) -> None:
        """Count node ``name``, at ``place``, refusing for ``reason``."""
        kind = (reason.kind, reason.resource)
        group = self.groups.get(kind)
        if group is None:
            group = self.groups[kind] = _Group(reason)
        group.add(name, reason, place)
        self.kinds[name] = kind
        self.unread.discard(name)

    def line(self, total: int, given: Iterable[Tuple[Reason, Any]],
             left_out: Collection[str] = (), pivot: Any = None) -> str:
        """:func:`one_line` of ``total`` nodes of which none fits: the
        nodes added but those named in ``left_out``, and the nodes of
        ``given`` ((reason, place) pairs). ``pivot``: the place where the
        order starts, when it starts past the first node (RoundRobin's
        cursor): the nodes from it on come first, then those before it."""
        def turned(place: Any) -> Any:
            return place if pivot is None else (place < pivot, place)

        counts: Dict[Tuple[str, str], int] = {
            kind: len(group.places) for kind, group in self.groups.items()}
        out = set(left_out)
        for name in out:
            counts[self.kinds[name]] -= 1
        # (per group: its count, the first place of its nodes, a reason of
        # it and, for INSUFFICIENT, the most left and where)
        found: Dict[Tuple[str, str], List[Any]] = {}
        for kind, group in self.groups.items():
            if counts[kind] > 0:
                group.sort()
                first = group.first(out, pivot)
                most = group.most(out, pivot) if kind[0] == INSUFFICIENT else None
                found[kind] = [counts[kind], turned(first), group.reason,
                               None if most is None else most[0],
                               None if most is None else turned(most[1])]
        for reason, place in given:
            kind = (reason.kind, reason.resource)
            place = turned(place)
            entry = found.get(kind)
            if entry is None:
                found[kind] = [1, place, reason,
                               reason.left if kind[0] == INSUFFICIENT else None, place]
                continue
            entry[0] += 1
            if place < entry[1]:
                entry[1] = place
            if kind[0] == INSUFFICIENT and (reason.left > entry[3] or
                                            reason.left == entry[3] and place < entry[4]):
                entry[3], entry[4] = reason.left, place
        ranked = sorted(found.values(), key=lambda entry: (-entry[0], entry[1]))
        return one_line(0, 0, total, summary_parts(
            (entry[2], entry[0], entry[3]) for entry in ranked))


class _Group:
    """The nodes of a :class:`RefusalTally` that refuse for one kind of
    reason and one resource: (place, name) sorted by place, and for
    :data:`~pylighthouse.fit.INSUFFICIENT` (quantity left, negated; place;
    name; quantity left), most left first, each sorted when read after
    nodes were added."""

    __slots__ = ("reason", "places", "lefts", "sorted")

    def __init__(self, reason: Reason) -> None:
        self.reason = reason
        self.places: List[Tuple[Any, str]] = []
        self.lefts: List[Tuple[Decimal, Any, str, Decimal]] = []
        self.sorted = True

    def add(self, name: str, reason: Reason, place: Any) -> None:
        self.places.append((place, name))
        if reason.kind == INSUFFICIENT:
            assert reason.left is not None  # (set with INSUFFICIENT)
            self.lefts.append((reason.left.copy_negate(), place, name, reason.left))
        self.sorted = False

    def sort(self) -> None:
        if not self.sorted:
            self.places.sort()
            self.lefts.sort()
            self.sorted = True

    def first(self, out: Collection[str], pivot: Any) -> Any:
        """The place of the first node in order not named in ``out``."""
        places = self.places
        start = 0 if pivot is None else bisect_left(places, (pivot,))
        for place, name in _round(places, start, 0, len(places)):
            if name not in out:
                return place
        raise AssertionError("no node of the group is left")  # pragma: no cover

    def most(self, out: Collection[str], pivot: Any) -> Tuple[Decimal, Any]:
        """The most left of a node not named in ``out``, and the place of
        the first such node in order with that much."""
        lefts = self.lefts
        for at, (negated, _, name, _) in enumerate(lefts):
            if name not in out:
                break
        else:  # pragma: no cover - the caller asks only when one is left
            raise AssertionError("no node of the group is left")
        # (the nodes with as much left sit from ``at`` to ``end``, in order)
        end = bisect_right(lefts, (negated, _LAST), at)
        start = at if pivot is None else bisect_left(lefts, (negated, pivot), at, end)
        for _, place, name, left in _round(lefts, start, at, end):
            if name not in out:
                return left, place
        raise AssertionError("no node of the group is left")  # pragma: no cover


class _Last:
    """Above every place (for a bisection past the entries of one quantity)."""

    def __lt__(self, other: object) -> bool:
        return False

    def __gt__(self, other: object) -> bool:
        return True


_LAST = _Last()


def _round(entries: List[Any], start: int, low: int, high: int) -> Iterator[Any]:
    """``entries[low:high]`` from ``start`` on, then those before it."""
    for at in range(start, high):
        yield entries[at]
    for at in range(low, start):
        yield entries[at]


def shape_of(workload: Any) -> Tuple[Any, ...]:
    """What workloads share when they share an explanation: their
    requirements as written (2 and 2.0 are equal but a reason shows each as
    written), in order, and their immunities. O(R)."""
    requirements = workload.requirements
    return tuple(requirements), tuple(map(str, requirements.values())), workload.immunities


def summary_parts(groups: Iterable[Tuple[Reason, int, Optional[Decimal]]]) -> List[str]:
    """The parts of a summary, from its groups of refusals, most frequent
    first: each the group's first reason, how many refused so, and for
    :data:`~pylighthouse.fit.INSUFFICIENT` the most any of them has left."""
    parts = []
    for first, number, most in groups:
        if first.kind == INSUFFICIENT:
            assert first.needed is not None and most is not None
            text = shortfall(first.resource, quantity_text(first.needed),
                             quantity_text(most))
        else:
            text = str(first)
        parts.append(f"{number} {text}")
    return parts


def shortfall(resource: str, needed: Any, most: Any) -> str:
    """The words of a group of :data:`~pylighthouse.fit.INSUFFICIENT`
    refusals: the quantity needed and the most any of them has left (each
    as :func:`~pylighthouse.quantities.to_number` gives it)."""
    return f"insufficient {resource} (needs {needed}, most left {most})"


def one_line(fits: int, averse: int, total: int, summary: List[str]) -> str:
    """An explanation's line: of ``total`` nodes, ``fits`` fit and
    ``averse`` more fit only by sharing an aversion group; then the
    ``summary``."""
    line = f"{fits + averse}/{total} nodes fit"
    if averse:
        line += (f" ({averse} only by sharing an aversion group"
                 f"{' with it' if averse == 1 else ''})")
    return f"{line}: {', '.join(summary)}" if summary else line


def printable(text: str) -> str:
    """``text`` for a terminal: each character that is not printable written
    as its escape (``unicode_escape``: ``\\n``, ``\\x1b``, ``\\u200b``), others,
    accented letters too, as they are; so a name cannot break or forge a
    line of a table or a report."""
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else char.encode("unicode_escape").decode("ascii")
                   for char in text)
