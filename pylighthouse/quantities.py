"""Exact quantities: turning what callers hand in into decimals, and back.

Every resource, requirement and rubric weight is kept as a
:class:`decimal.Decimal`. A float is read through its shortest ``repr``, so
``0.1`` means the decimal 0.1 and a capacity of 0.3 takes exactly three
workloads of 0.1. Arithmetic runs under :data:`EXACT`, a context whose
precision is large enough that additions, subtractions and products never
round: placing and releasing workloads returns a node to exactly its
starting numbers.
"""
import decimal
import math
import numbers
from decimal import Decimal
from collections.abc import Mapping as MappingABC
from fractions import Fraction
from types import MappingProxyType
from typing import Any, Dict, Mapping, Union

from .errors import InvalidInputError, InvalidTypeError, shown

#: The arithmetic context used for every computation on quantities.
EXACT = decimal.Context(
    prec=decimal.MAX_PREC,
    Emax=decimal.MAX_EMAX,
    Emin=decimal.MIN_EMIN,
    traps=[decimal.InvalidOperation, decimal.DivisionByZero, decimal.Overflow],
)

INFINITY = Decimal("Infinity")
ZERO = Decimal(0)

Number = Union[int, float, Decimal, Fraction]

#: Decimals already made from plain ints and floats: callers repeat the same
#: few quantities (cpu 0.5, mem 4), and a Decimal is immutable, so one object
#: serves them all. Bounded; zero floats are left out (-0.0 == 0.0).
_MADE: Dict[Any, Decimal] = {}
_MADE_LIMIT = 4096


def to_quantity(value: Any, where: str, finite: bool = False) -> Decimal:
    """Return ``value`` as an exact :class:`~decimal.Decimal`.

    ``where`` names the item and field for error messages, for example
    ``"workload 'web-1' requirements['cpu']"``.

    Raises:
        InvalidTypeError: ``value`` is not a real number (bools are refused).
        InvalidInputError: ``value`` is NaN, is infinite when ``finite`` is
            set, or is a fraction with no exact decimal form.
    """
    kind = type(value)
    if kind is int or kind is float:
        quantity = _MADE.get((kind, value))
        if quantity is not None:
            if finite and quantity.is_infinite():
                raise InvalidInputError(f"{where}: must be finite, got {shown(value)}")
            return quantity
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, Decimal)):
        raise InvalidTypeError(
            f"{where}: expected a number, got {type(value).__name__} {shown(value)}")
    if isinstance(value, Decimal):
        quantity = value
    elif isinstance(value, int):
        quantity = Decimal(value)
    elif isinstance(value, float):
        if math.isnan(value):
            quantity = Decimal("NaN")
        elif math.isinf(value):
            quantity = INFINITY if value > 0 else -INFINITY
        else:
            quantity = Decimal(repr(value))
    else:
        quantity = _rational_to_decimal(value, where)
    if quantity.is_nan():
        raise InvalidInputError(f"{where}: NaN is not a quantity")
    if finite and quantity.is_infinite():
        raise InvalidInputError(f"{where}: must be finite, got {shown(value)}")
    if (kind is int or (kind is float and value)) and len(_MADE) < _MADE_LIMIT:
        _MADE[kind, value] = quantity
    return quantity


def _rational_to_decimal(value: numbers.Real, where: str) -> Decimal:
    try:
        fraction = Fraction(value)
    except (TypeError, ValueError, OverflowError):
        # An infinite or NaN value of some other Real type.
        as_float = float(value)
        if math.isnan(as_float):
            return Decimal("NaN")
        return INFINITY if as_float > 0 else -INFINITY
    denominator = fraction.denominator
    twos = fives = 0
    while denominator % 2 == 0:
        denominator //= 2
        twos += 1
    while denominator % 5 == 0:
        denominator //= 5
        fives += 1
    if denominator != 1:
        raise InvalidInputError(
            f"{where}: {shown(value)} has no exact decimal form")
    scale = max(twos, fives)
    numerator = fraction.numerator * (10 ** scale // fraction.denominator)
    return Decimal(numerator).scaleb(-scale, EXACT)


def to_number(quantity: Decimal) -> Union[int, float, Decimal]:
    """Return ``quantity`` in the plainest form that keeps its exact value.

    Integral values come back as ``int``, values a float holds exactly (as
    its shortest repr) as ``float``, infinities as ``float('inf')`` or
    ``-inf``, anything else as the :class:`~decimal.Decimal` itself.
    """
    if quantity.is_nan():
        return math.nan
    if quantity.is_infinite():
        return math.inf if quantity > 0 else -math.inf
    if quantity == quantity.to_integral_value():
        return int(quantity)
    as_float = float(quantity)
    if Decimal(repr(as_float)) == quantity:
        return as_float
    return quantity


def to_json_quantity(quantity: Decimal) -> Union[int, float, str]:
    """Return ``quantity`` as standard JSON can carry it, without loss.

    Infinities become the strings ``"inf"`` and ``"-inf"``; a decimal that no
    float holds exactly becomes its decimal string.
    """
    if quantity.is_infinite():
        return "inf" if quantity > 0 else "-inf"
    number = to_number(quantity)
    return str(number) if isinstance(number, Decimal) else number


_INFINITE_WORDS = {"inf": INFINITY, "+inf": INFINITY, "infinity": INFINITY,
                   "+infinity": INFINITY, "-inf": -INFINITY,
                   "-infinity": -INFINITY}


def from_json_quantity(value: Any, where: str, finite: bool = False,
                       decimal_strings: bool = False) -> Decimal:
    """Read a quantity written by :func:`to_json_quantity` (or by a person).

    Numbers are read exactly; the strings ``"inf"``, ``"-inf"``,
    ``"Infinity"`` and ``"-Infinity"`` (any case) mean the infinities. With
    ``decimal_strings``, a string holding a decimal number is read too.

    Raises:
        InvalidTypeError: anything else, naming ``where``.
    """
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _INFINITE_WORDS:
            return to_quantity(_INFINITE_WORDS[word], where, finite)
        if decimal_strings:
            try:
                parsed = Decimal(value.strip())
            except decimal.InvalidOperation:
                parsed = None
            if parsed is not None and parsed.is_finite():
                return parsed
        raise InvalidTypeError(f'{where}: expected a number, got "{value}"')
    return to_quantity(value, where, finite)


def to_quantities(value: Any, where: str, field: str,
                  finite: bool) -> Mapping[str, Decimal]:
    """Return a read-only copy of the mapping ``value`` with exact quantities.

    ``where`` names the item and ``field`` the mapping in error messages
    (``"node 'n': resources['cpu']: ..."``); an empty ``where`` leaves the
    item out (``"rubric['cpu']: ..."``).

    Raises:
        InvalidTypeError: ``value`` is not a mapping, or a quantity is not a
            number.
        InvalidInputError: a key is not a non-empty string, or a quantity is
            refused by :func:`to_quantity`.

    Cost: O(len(value)).
    """
    if type(value) is not dict and not isinstance(value, MappingABC):
        raise InvalidTypeError(f"{_field_label(where, field)} must be a mapping "
                               f"of name to number, got {type(value).__name__}")
    checked: Dict[str, Decimal] = {}
    for key, quantity in value.items():
        if type(key) is not str or not key:
            _check_key(key, where, field)
        # to_quantity's cache, read first: most quantities are plain numbers
        # seen before, and this skips building an error label.
        kind = type(quantity)
        known = _MADE.get((kind, quantity)) if kind is int or kind is float else None
        if known is None or (finite and known.is_infinite()):
            known = to_quantity(quantity, f"{_field_label(where, field)}[{shown(key)}]", finite)
        checked[key] = known
    # Workloads come in a few flavours: equal mappings (the same keys, the
    # same Decimal objects) share one read-only copy, which keeps those
    # objects alive, so their ids stay theirs. Fewer long-lived objects also
    # means fewer passes of the garbage collector over a large heap.
    return share(_SHARED, (tuple(checked), tuple(map(id, checked.values()))),
                 MappingProxyType(checked))


#: Read-only mappings already handed out by :func:`to_quantities`, by their
#: keys and the ids of their values (bounded).
_SHARED: Dict[Any, Mapping[str, Decimal]] = {}
#: At most this many values kept by each :func:`share` table.
SHARED_LIMIT = 4096


def share(table: Dict[Any, Any], key: Any, value: Any) -> Any:
    """The value ``table`` already holds for ``key``, else ``value``, kept
    there while the table holds fewer than :data:`SHARED_LIMIT` values: one
    immutable object handed out for many equal ones. Cost: O(1)."""
    found = table.get(key)
    if found is None:
        found = value
        if len(table) < SHARED_LIMIT:
            table[key] = value
    return found


def _field_label(where: str, field: str) -> str:
    """``field`` of the item ``where`` for :func:`to_quantities`' messages;
    built only when one is needed."""
    return f"{where}: {field}" if where else field


def _check_key(key: Any, where: str, field: str) -> None:
    """Raise unless ``key`` is a non-empty string (a subclass of str is kept)."""
    if not isinstance(key, str) or not key:
        raise InvalidInputError(
            f"{_field_label(where, field)} keys must be non-empty strings, got {shown(key)}")
