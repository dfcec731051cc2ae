"""The fit rule: whether a workload fits a node's remaining resources, and if not, why.

This is the only place the rule is written down for one node. Strategies
decide the order in which nodes are tried; explanations count the reasons
returned here. :mod:`pylighthouse.nowhere` applies the same rule to whole
columns of nodes at once, to count why a workload fits nowhere; a
differential test holds it to :func:`check_fit`.
"""
from decimal import Decimal
from itertools import compress, repeat
from operator import lt
from typing import AbstractSet, Any, Dict, Mapping, Optional, Set, Tuple, Union

import attr

from .errors import InvalidTypeError, shown
from .model import Workload
from .quantities import ZERO, made_quantities, quantity_text

__all__ = ["Reason", "check_fit", "fits", "MISSING", "INSUFFICIENT", "NOT_TOLERATED",
           "CORDONED"]

#: The node lacks a resource the workload requires.
MISSING = "missing"
#: The node has the resource but too little of it left.
INSUFFICIENT = "insufficient"
#: The node's resource is below zero (a shortcoming or a ward) and the
#: workload neither offsets it nor is immune to it.
NOT_TOLERATED = "not tolerated"
#: The distributor's mark for a node that takes no new workloads (it is not
#: an outcome of the fit rule), so that explanations can count it beside
#: the fit reasons.
CORDONED = "cordoned"


@attr.s(frozen=True, slots=True, auto_attribs=True)
class Reason:
    """Why a workload does not fit a node: the first failing resource.

    ``kind`` is :data:`~pylighthouse.fit.MISSING`,
    :data:`~pylighthouse.fit.INSUFFICIENT` or
    :data:`~pylighthouse.fit.NOT_TOLERATED` (or
    :data:`~pylighthouse.fit.CORDONED`, which distributors add for cordoned
    nodes);
    ``needed`` is what the workload requires of ``resource`` (0 when it does
    not mention it) and ``left`` what the node has left of it (``None`` when
    the node lacks the resource).
    """

    kind: str
    resource: str
    needed: Optional[Decimal] = None
    left: Optional[Decimal] = None

    def __str__(self) -> str:
        if self.kind == MISSING:
            return f"missing resource {self.resource}"
        if self.kind == CORDONED:
            return "cordoned"
        if self.kind == INSUFFICIENT:
            assert self.needed is not None and self.left is not None  # set with INSUFFICIENT
            return (f"insufficient {self.resource} (needs {quantity_text(self.needed)}, "
                    f"{quantity_text(self.left)} left)")
        return f"{self.resource} below zero and not tolerated"


def check_fit(remaining: Mapping[str, Any],
              workload: Union[Workload, Mapping[str, Any]]) -> Optional[Reason]:
    """Return ``None`` when ``workload`` fits a node with ``remaining`` resources,
    else the :class:`Reason` naming the first failing resource.

    The workload fits when every resource it requires exists on the node, and
    no resource of the node would end below zero after subtracting the
    requirement, except the resources the workload is immune to.
    Requirements are checked for presence first (in the workload's order),
    then the node's resources in the node's order.

    ``remaining`` may hold any numbers the library reads as quantities
    (ints, floats, decimals; a :class:`~pylighthouse.NodeState`'s
    ``remaining`` as it comes): they are read as the
    distributors read them, a float ``0.3`` meaning 0.3, so the answer is
    the one a distributor gives. The reason's quantities are decimals.
    ``workload`` may be a dict, read as
    :meth:`Workload.from_dict <pylighthouse.Workload.from_dict>` reads it,
    as the distributors take one.

    Raises:
        InvalidTypeError: ``workload`` is neither a :class:`Workload` nor
            a dict, or ``remaining`` is not a mapping of names to numbers.
        InvalidInputError: a quantity in ``remaining`` is not acceptable
            (NaN...), as for a node's resources.

    Cost: O(number of requirements + number of node resources).
    """
    if not isinstance(workload, Workload):
        if not isinstance(workload, Mapping):
            raise InvalidTypeError(f"check_fit: workload: expected a Workload or a dict, "
                                   f"got {type(workload).__name__}")
        workload = Workload.from_dict(workload)
    if not isinstance(remaining, Mapping):
        raise InvalidTypeError(f"check_fit: remaining: expected a mapping of resource "
                               f"name to number, got {type(remaining).__name__}")
    # (read as the library reads a node's, exact quantities included: a
    # node state's sums beyond the input range too)
    remaining = made_quantities(remaining, "check_fit", "remaining")
    return reason_of(remaining, workload)


def reason_of(remaining: Mapping[str, Decimal], workload: Workload) -> Optional[Reason]:
    """:func:`check_fit` for the library's own callers, whose ``remaining``
    already holds exact quantities: not read again. A bad argument
    still raises :class:`~pylighthouse.errors.InvalidTypeError`, found
    only on the way. O(number of requirements + number of node
    resources)."""
    try:
        found = first_refusal(remaining, workload)
        return None if found is None else _reason(*found)
    except (AttributeError, TypeError, ArithmeticError):  # (a signalling NaN...)
        if not isinstance(workload, Workload):
            raise InvalidTypeError(f"check_fit: workload: expected a Workload, "
                                   f"got {type(workload).__name__}") from None
        raise InvalidTypeError(f"check_fit: remaining: expected a mapping of resource "
                               f"name to number, got {shown(remaining)}") from None


#: A refusal as :func:`first_refusal` gives it: (kind, resource, needed, left).
Refusal = Tuple[str, str, Optional[Decimal], Optional[Decimal]]


def first_refusal(remaining: Mapping[str, Decimal],
                  workload: Workload) -> Optional[Refusal]:
    """The fit rule itself (see :func:`check_fit`, which checks its
    arguments and makes a :class:`Reason` of the answer): ``None`` when
    ``workload`` fits, else the first refusal as a tuple, (kind, resource,
    needed, left), the quantity left being the node's own. For counting
    the refusals of many nodes (see :mod:`pylighthouse.nowhere`), where
    a reason made per node costs more than the check. ``remaining`` and
    ``workload`` are taken as valid. O(number of requirements + number of
    node resources)."""
    requirements = workload.requirements
    for key in requirements:
        if key not in remaining:
            return MISSING, key, None, None
    immunities = workload.immunities
    for key, left in remaining.items():
        needed = requirements.get(key, ZERO)
        if left < needed and key not in immunities:
            return (NOT_TOLERATED if left < ZERO else INSUFFICIENT), key, needed, left
    return None


def below_zero(remaining: Mapping[str, Decimal]) -> Set[str]:
    """The resources of ``remaining`` below zero, found in C: what
    :func:`takes` reads of a node beyond the resources asked for. O(number
    of node resources)."""
    return set(compress(remaining, map(lt, remaining.values(), repeat(ZERO))))


def takes(remaining: Mapping[str, Decimal], workload: Workload,
          below: Optional[AbstractSet[str]] = None) -> bool:
    """Whether :func:`first_refusal` finds nothing, for a search, which needs
    no refusal: every resource asked for is there, with enough left or
    immune to, and no other is below zero unless immune to (a resource not
    asked for, a tag of the node, say, with zero or more left, refuses
    nothing). Of the resources not asked for, only those below zero are
    read: ``below``, their names (:func:`below_zero`), as the distributor
    keeps them per node, else found here in C. A node bearing dozens of
    labels, or hundreds of devices and a shortcoming, costs a workload
    asking for three resources three checks in Python, plus one per
    resource below zero, not one per label. The same answer as the rule's,
    always. O(number of requirements + resources below zero) in Python,
    plus, without ``below``, O(number of node resources) in C."""
    requirements = workload.requirements
    immunities = workload.immunities
    for key, needed in requirements.items():
        left = remaining.get(key)
        if left is None or left < needed and key not in immunities:
            return False
    if below is None:
        below = below_zero(remaining)
    # (one asked for was compared above: with less left than asked, it
    # refused unless immune)
    for key in below:
        if key not in requirements and key not in immunities:
            return False
    return True


#: Reasons already made, keyed by their fields, the quantities by identity
#: (equal decimals may be written differently: 2 and 2.0; and the reason
#: kept in the table keeps its quantities alive, so an identity is never
#: reused while its key is). Explaining a batch meets the same reasons again
#: and again, and a lookup costs a third of building a frozen Reason.
#: Bounded: cleared when full.
_MADE: Dict[Tuple[str, int, int], Reason] = {}
_MADE_LIMIT = 4096


def _reason(kind: str, resource: str, needed: Optional[Decimal],
            left: Optional[Decimal]) -> Reason:
    # The kind follows from the other three: missing has no quantities,
    # and a quantity left below zero is not tolerated.
    fields = (resource, id(needed), id(left))
    reason = _MADE.get(fields)
    if reason is None:
        if len(_MADE) >= _MADE_LIMIT:
            _MADE.clear()
        reason = _MADE[fields] = Reason(kind, resource, needed, left)
    return reason


def fits(remaining: Mapping[str, Decimal], workload: Workload) -> bool:
    """Return whether ``workload`` fits; see :func:`check_fit`."""
    return check_fit(remaining, workload) is None
