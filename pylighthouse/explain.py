"""Explanations: why a workload fits where it fits, and why not elsewhere.

An :class:`Explanation` is assembled by a distributor from the reasons the
fit rule (:func:`pylighthouse.fit.check_fit`) gives for each node; nothing
here re-checks a fit.
"""
from decimal import Decimal
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

import attr

from .fit import INSUFFICIENT, Reason
from .quantities import quantity_text

__all__ = ["Explanation", "summary_parts", "one_line", "shape_of", "shortfall", "printable"]


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
