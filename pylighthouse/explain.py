"""Explanations: why a workload fits where it fits, and why not elsewhere.

An :class:`Explanation` is assembled by a distributor from the reasons the
fit rule (:func:`pylighthouse.fit.check_fit`) gives for each node; nothing
here re-checks a fit.
"""
from typing import Any, Dict, List, Mapping, Optional, Tuple

import attr

from .fit import INSUFFICIENT, Reason
from .quantities import to_number

__all__ = ["Explanation"]


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
        fitting = len(self.fits) + len(self.averse)
        line = f"{fitting}/{self.total} nodes fit"
        if self.averse:
            line += (f" ({len(self.averse)} only by sharing an aversion group"
                     f"{' with it' if len(self.averse) == 1 else ''})")
        summary = self.summary()
        return f"{line}: {', '.join(summary)}" if summary else line

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
        parts = []
        for reasons in ranked:
            first = reasons[0]
            if first.kind == INSUFFICIENT:
                # An INSUFFICIENT reason carries both numbers.
                most = max(reason.left for reason in reasons if reason.left is not None)
                assert first.needed is not None
                text = (f"insufficient {first.resource} (needs {to_number(first.needed)}, "
                        f"most left {to_number(most)})")
            else:
                text = str(first)
            parts.append(f"{len(reasons)} {text}")
        return parts

    def to_dict(self) -> Dict[str, Any]:
        """Return the explanation as plain data (reasons as their strings)."""
        return {"workload": self.workload, "total": self.total,
                "fits": list(self.fits), "averse": list(self.averse),
                "reasons": {node: str(reason) for node, reason in self.reasons.items()},
                "choice": self.choice, "summary": str(self)}
