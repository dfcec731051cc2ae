"""Rubric scoring: the "size" of a workload or of a node's room, for BinPack."""
from decimal import Decimal, InvalidOperation
from types import MappingProxyType
from typing import Any, Dict, List, Mapping, Tuple, Union

import attr

from .model import quantities_repr
from .quantities import EXACT, ZERO, made_quantities, to_number, to_quantities
from .removed import Removed

__all__ = ["Rubric"]

_ADD, _MULTIPLY, _SUBTRACT = EXACT.add, EXACT.multiply, EXACT.subtract


@attr.s(frozen=True, slots=True, eq=True, hash=False, repr=False, init=False)
class Rubric:
    """Weights per resource: ``score(map) = sum(weight * quantity)``.

    Only resources named in the rubric count; a resource the map lacks counts
    as 0; a zero weight contributes 0 even against an infinite quantity.
    Weights must be finite numbers. When a map's terms hold both +inf and
    -inf, its score is undefined and sorts after every number.

    Raises:
        InvalidTypeError, InvalidInputError: the weights are not a mapping of
            non-empty names to finite numbers.
    """

    weights: Mapping[str, Decimal] = attr.ib()

    rubric = Removed("the weights are in weights (a read-only mapping of resource to weight)")
    keys_rubric = Removed("the resources weighed are the keys of weights "
                          "(a read-only mapping of resource to weight)")
    size = Removed("the number of resources weighed is len(rubric.weights)")
    sort_workloads = Removed(
        "BinPack sorts each call's workloads itself (largest score first, equal scores by "
        "name); to sort them yourself: sorted(workloads, key=lambda load: "
        "rubric.score(load.requirements), reverse=True)")

    def __init__(self, weights: Union["Rubric", Mapping[str, Any]]):
        if isinstance(weights, Rubric):
            # Checked already, and read-only: shared, not checked again (a
            # problem's rubric of thousands of weights is read once).
            object.__setattr__(self, "weights", weights.weights)
            return
        checked = {key: weight
                   for key, weight in to_quantities(weights, "", "rubric", True).items()
                   if weight != ZERO}
        object.__setattr__(self, "weights", MappingProxyType(checked))

    def __hash__(self) -> int:
        return hash(frozenset(self.weights.items()))

    def __repr__(self) -> str:
        return f"Rubric({quantities_repr(self.weights)})"

    def __reduce__(self) -> Tuple[Any, Tuple[Any, ...]]:
        return (Rubric, (dict(self.weights),))

    def to_dict(self) -> Dict[str, Any]:
        """Return the non-zero weights as plain numbers."""
        return {key: to_number(weight) for key, weight in self.weights.items()}

    def score(self, quantities: Mapping[str, Any]) -> Decimal:
        """Return the weighted sum of ``quantities`` (NaN when undefined).

        ``quantities`` maps names to decimals, or to plain numbers (a
        :class:`~pylighthouse.NodeState`'s ``remaining``), read exactly.

        Raises:
            InvalidTypeError, InvalidInputError: ``quantities`` is not a
                mapping of names to numbers.

        Cost: O(len(quantities)).
        """
        # (every quantity read as the library reads a node's, those it made
        # beyond the input range too: NaN, bools and bad names are refused)
        return self._score(_read(quantities))

    def _score(self, quantities: Mapping[str, Decimal]) -> Decimal:
        """:meth:`score` of exact quantities (the library's own), not read
        again. O(min(len(quantities), number of weights))."""
        total = ZERO
        weights = self.weights
        try:
            # (read from the smaller side, as :meth:`_terms` does, without
            # making its list: BinPack scores every new requirement map)
            if len(weights) <= len(quantities):
                for key, weight in weights.items():
                    quantity = quantities.get(key)
                    if quantity is not None:
                        total = _ADD(total, _MULTIPLY(weight, quantity))
            else:
                for key, quantity in quantities.items():
                    factor = weights.get(key)
                    if factor is not None:
                        total = _ADD(total, _MULTIPLY(factor, quantity))
        except InvalidOperation:  # +inf and -inf terms: the careful pass says so
            return self._infinite_score(quantities)
        if total.is_finite():
            return total
        return self._infinite_score(quantities)

    def moved(self, score: Decimal, quantities: Mapping[str, Decimal],
              before: Mapping[str, Decimal]) -> Decimal:
        """The score of ``quantities`` given ``score``, a finite score of
        the same map when the names in ``before`` held those quantities
        instead: ``score`` plus the weighted change, exactly (the sum is
        exact, so this is what :meth:`score` gives). The changed quantities
        must be finite, as they are when ``score`` is and the change is.
        Cost: O(len(before))."""
        weights = self.weights
        for key, old in before.items():
            weight = weights.get(key)
            if weight is not None:
                score = _ADD(score, _MULTIPLY(weight, _SUBTRACT(quantities[key], old)))
        return score

    def _terms(self, quantities: Mapping[str, Decimal]) -> List[Tuple[str, Decimal, Decimal]]:
        """The (resource, weight, quantity) of every resource in both, read
        from the smaller side: a rubric of thousands of resources costs
        nothing against a node that has three. The sum is exact, so the
        order of its terms does not matter. (A list, made in one
        comprehension: BinPack scores a node after every placement.)"""
        weights = self.weights
        if len(weights) <= len(quantities):
            return [(key, weight, quantity) for key, weight in weights.items()
                    if (quantity := quantities.get(key)) is not None]
        return [(key, weight, quantity) for key, quantity in quantities.items()
                if (weight := weights.get(key)) is not None]

    def relevant(self, quantities: Mapping[str, Decimal]) -> Tuple[Tuple[str, Decimal], ...]:
        """The (resource, quantity) pairs of ``quantities`` that the rubric
        weighs: maps that give the same pairs get the same score.

        Raises:
            InvalidTypeError, InvalidInputError: as :meth:`score`.

        Cost: O(len(quantities)).
        """
        return tuple((key, quantity) for key, _, quantity in self._terms(_read(quantities)))

    def _infinite_score(self, quantities: Mapping[str, Decimal]) -> Decimal:
        """:meth:`score` when some term is infinite, term by term."""
        total = ZERO
        positive = negative = False
        for key, weight, quantity in self._terms(quantities):
            term = EXACT.multiply(weight, quantity)
            if term.is_infinite():
                if term > ZERO:
                    positive = True
                else:
                    negative = True
            else:
                total = EXACT.add(total, term)
        if positive and negative:
            return Decimal("NaN")
        if positive:
            return Decimal("Infinity")
        if negative:
            return Decimal("-Infinity")
        return total

    def sort_key(self, quantities: Mapping[str, Decimal], name: str) -> Tuple[int, Decimal, str]:
        """Return a key that orders by score ascending, then by ``name``;
        undefined scores go last.

        Raises:
            InvalidTypeError, InvalidInputError: as :meth:`score`.
        """
        return self._sort_key(_read(quantities), name)

    def _sort_key(self, quantities: Mapping[str, Decimal], name: str) -> Tuple[int, Decimal, str]:
        """:meth:`sort_key` of exact quantities (the library's own)."""
        score = self._score(quantities)
        if score.is_nan():
            return (1, ZERO, name)
        return (0, score, name)


def _read(quantities: Any) -> Mapping[str, Decimal]:
    """``quantities`` read as the library reads a node's, those it made
    beyond the input range too: NaN, bools and bad names are refused."""
    return made_quantities(quantities, "", "quantities")
