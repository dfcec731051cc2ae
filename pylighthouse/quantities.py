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
import functools
import math
import numbers
import operator
from decimal import Decimal
from collections.abc import Mapping as MappingABC
from fractions import Fraction
from types import MappingProxyType
from typing import Any, Callable, Dict, Hashable, Mapping, Optional, TypeVar, Union, cast

from .errors import SHOWN_LIMIT, InvalidInputError, InvalidTypeError, shown

#: The arithmetic context used for every computation on quantities.
EXACT = decimal.Context(
    prec=decimal.MAX_PREC,
    Emax=decimal.MAX_EMAX,
    Emin=decimal.MIN_EMIN,
    traps=[decimal.InvalidOperation, decimal.DivisionByZero, decimal.Overflow],
)

_Function = TypeVar("_Function", bound=Callable[..., Any])


def exactly(function: _Function) -> _Function:
    """Run ``function`` in the :data:`EXACT` context, whatever the caller's
    context is (its precision, its traps), and give the caller's back.

    :data:`EXACT` itself becomes the thread's context for the call (no copy
    is made: its flags are never read, and its traps are the library's).
    Cost: about 0.2 us a call; nothing when already in it.
    """
    @functools.wraps(function)
    def run(*args: Any, **kwargs: Any) -> Any:
        caller = _current()
        if caller is EXACT:
            return function(*args, **kwargs)
        _use(EXACT)
        try:
            return function(*args, **kwargs)
        finally:
            _use(caller)
    return cast(_Function, run)


_current = decimal.getcontext
#: Make a context the thread's current one, without copying it.
use_context = _use = decimal.setcontext


INFINITY = Decimal("Infinity")
ZERO = Decimal(0)

#: Finite quantities other than zero must lie within 10**-MAX_EXPONENT and
#: 10**MAX_EXPONENT in magnitude, with at most MAX_EXPONENT decimal places
#: (a double's range, roughly), however they are given: exact arithmetic on
#: wilder numbers would need millions of digits.
MAX_EXPONENT = 300

Number = Union[int, float, Decimal, Fraction]

#: Decimals already made from plain ints and floats: callers repeat the same
#: few quantities (cpu 0.5, mem 4), and a Decimal is immutable, so one object
#: serves them all. Bounded: cleared when full (see :func:`_made`), so that
#: the quantities of the latest requests are the ones kept; zero floats are
#: left out (-0.0 == 0.0).
_MADE: Dict[Any, Decimal] = {}
_MADE_LIMIT = 4096


def _made(kind: type, value: Any, quantity: Decimal) -> None:
    """Keep ``quantity`` as the Decimal made from ``value``; a full table
    starts afresh. O(1) amortised."""
    if len(_MADE) >= _MADE_LIMIT:
        _MADE.clear()
    _MADE[kind, value] = quantity


#: Floats of the decimals converted by :func:`floats_of`: requirements share
#: their Decimal objects (see :data:`_MADE`), whose hash each keeps, so a
#: float is found again in one lookup where converting it anew formats and
#: parses the decimal. Bounded as :data:`_MADE` is. (Equal decimals, such
#: as 1 and 1.0, have the same float.)
_FLOATS: Dict[Decimal, float] = {}


def floats_of(quantities: Mapping[str, Decimal]) -> Dict[str, float]:
    """``quantities`` with each value as the nearest float (as ``float``
    gives it). O(len(quantities)) lookups."""
    known = _FLOATS
    made = {}
    for key, value in quantities.items():
        number = known.get(value)
        if number is None:
            if len(known) >= _MADE_LIMIT:
                known.clear()
            number = known[value] = float(value)
        made[key] = number
    return made


def to_quantity(value: Any, where: str, finite: bool = False) -> Decimal:
    """Return ``value`` as an exact :class:`~decimal.Decimal`.

    ``where`` names the item and field for error messages, for example
    ``"workload 'web-1' requirements['cpu']"``.

    Any ``numbers.Real`` is accepted when its value can be read
    exactly: ints and other integers (numpy's too) as they are; floats, and
    binary floats of other widths (numpy ``float32``...), through their
    shortest decimal text, ``0.1`` meaning 0.1; fractions with an exact
    decimal form. Anything else is refused, never rounded.

    Raises:
        InvalidTypeError: ``value`` is not a real number (bools are refused).
        InvalidInputError: ``value`` is NaN, is infinite when ``finite`` is
            set, has no exact decimal form, or lies outside the range
            :data:`MAX_EXPONENT` sets.
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
        quantity = value if type(value) is Decimal else Decimal(value)
    elif isinstance(value, int):
        # (An int too long to be in range is refused before it is converted.)
        quantity = Decimal(value) if value.bit_length() <= _MAX_BITS else INFINITY
    elif isinstance(value, float):
        quantity = _float_to_decimal(float(value))
    elif isinstance(value, numbers.Integral):
        number = operator.index(value)
        quantity = Decimal(number) if number.bit_length() <= _MAX_BITS else INFINITY
    elif isinstance(value, numbers.Rational):
        quantity = _rational_to_decimal(value, where)
    else:
        quantity = _other_real(value, where)
    if quantity.is_nan():
        raise InvalidInputError(f"{where}: NaN is not a quantity")
    if quantity.is_infinite():
        if isinstance(value, numbers.Rational):  # an integer too long for the range
            raise _out_of_range(value, where)
        if finite:
            raise InvalidInputError(f"{where}: must be finite, got {shown(value)}")
    elif not quantity:
        quantity = ZERO  # 0E-999999999 would make every sum it meets that long
    elif quantity.adjusted() >= MAX_EXPONENT and (quantity.adjusted() > MAX_EXPONENT
                                                  or quantity.copy_abs() > _HIGHEST):
        raise _out_of_range(value, where)
    elif int(quantity.as_tuple().exponent) < -MAX_EXPONENT:  # finite here: an int
        # (the places of the value, not of its spelling: 1.0E-300 is 1e-300)
        try:
            quantity = quantity.quantize(_LEAST, context=_QUANTIZE)
        except decimal.Inexact:
            raise _out_of_range(value, where) from None
    if kind is int or kind is float:  # (both float zeros are ZERO: one key)
        _made(kind, value, quantity)
    return quantity


#: The largest magnitude of a finite quantity.
_HIGHEST = Decimal(f"1e{MAX_EXPONENT}")
#: Integers of smaller magnitude than this are in range, whatever they are.
_PLAIN_INT = 10 ** MAX_EXPONENT
#: The last decimal place a quantity may have, and the context that drops
#: only zeros beyond it.
_LEAST = Decimal(f"1e-{MAX_EXPONENT}")
_QUANTIZE = EXACT.copy()
_QUANTIZE.traps[decimal.Inexact] = True
#: Integers longer than this (in bits) are out of range whatever they hold.
_MAX_BITS = 4 * MAX_EXPONENT
#: Floats whose magnitude lies between these are in range (at most 17
#: significant digits: 10 ** -(MAX_EXPONENT - 20) has no more than
#: MAX_EXPONENT decimal places).
_PLAIN_LOW = float(10 ** -(MAX_EXPONENT - 20))
_PLAIN_HIGH = float(10 ** MAX_EXPONENT)


def _out_of_range(value: Any, where: str) -> InvalidInputError:
    text = shown(value)
    if type(value) in (Decimal, float):  # as JSON would write it
        text = str(value)
        text = text if len(text) <= SHOWN_LIMIT else text[:SHOWN_LIMIT] + "..."
    return InvalidInputError(f"{where}: {text} is out of range ({RANGE})")


#: The range of quantities, as messages give it.
RANGE = (f"magnitudes from 1e-{MAX_EXPONENT} to 1e{MAX_EXPONENT}, at most "
         f"{MAX_EXPONENT} decimal places")


#: How far beyond the input range a sum the library made may reach (digits):
#: a million quantities of 1e300 add up to 1e306.
_MADE_DIGITS = 20
_MADE_BITS = 4 * (MAX_EXPONENT + _MADE_DIGITS)


def made_quantity(value: Any, where: str) -> Decimal:
    """``value``, a number the library itself gave out (a node state's
    ``remaining``, as :func:`to_number` makes it), as the exact decimal it
    stands for: ints and Decimals as they are, floats through their
    shortest text; anything else through :func:`to_quantity`. No range
    check for the first three: a sum the library made may lie beyond the
    range accepted as input (1e300 plus 1e300), by up to twenty digits; no
    more decimal places than input may have. O(1) for those."""
    kind = type(value)
    made: Optional[Decimal] = None
    if kind is Decimal:
        made = value
    elif kind is int:
        if value.bit_length() <= _MADE_BITS:
            made = Decimal(value)
    elif kind is float and value == value:
        made = _float_to_decimal(value)
    if made is None or made.is_nan():
        return to_quantity(value, where)  # (which names what it refuses)
    if not made:
        return ZERO
    if made.is_finite() and not _within_made(made):
        return to_quantity(value, where)  # (no sum of quantities is that far out)
    return made


def _within_made(quantity: Decimal) -> bool:
    """Whether a finite quantity lies where the library's own sums may:
    up to :data:`_MADE_DIGITS` digits beyond the input range, no more
    decimal places than input may have. O(digits)."""
    return quantity.adjusted() <= MAX_EXPONENT + _MADE_DIGITS \
        and int(quantity.as_tuple().exponent) >= -MAX_EXPONENT


def seconds_of(value: Any) -> float:
    """``value``, a setting in seconds (any real number: ints, floats,
    decimals, fractions, numpy's; not a bool), as a float; NaN when it is
    not one, or no float holds it (a signalling NaN, an int of 400
    digits), for the caller's range check to refuse by name. O(1)."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, Decimal)):
        return math.nan
    try:
        return float(value)
    except (OverflowError, ValueError, ArithmeticError):
        return math.nan


def _float_to_decimal(value: float) -> Decimal:
    """A float (a subclass's value too) as the decimal of its shortest repr."""
    if math.isnan(value):
        return Decimal("NaN")
    if math.isinf(value):
        return INFINITY if value > 0 else -INFINITY
    return Decimal(float.__repr__(value))


def _other_real(value: Any, where: str) -> Decimal:
    """A real number of some other type (numpy's ``float32``, ``longdouble``...):
    the decimal of its own text when that text reads back as the same value,
    else the float it equals exactly; refused otherwise."""
    try:
        text = str(value)
        if type(value)(text) == value:
            return EXACT.create_decimal(text.strip())
    except Exception:  # the type cannot read its own text: try the float
        pass
    try:
        as_float = float(value)
        if math.isnan(as_float) or as_float == value:
            return _float_to_decimal(as_float)
    except Exception:
        pass
    raise InvalidInputError(f"{where}: {shown(value)} cannot be read exactly "
                            f"({type(value).__name__}); give an int, float or Decimal")


def _rational_to_decimal(value: numbers.Rational, where: str) -> Decimal:
    fraction = Fraction(int(value.numerator), int(value.denominator))
    # A denominator this long needs more decimal places than the range
    # allows (or has no decimal form at all); a numerator this much longer
    # is too large.
    if fraction.denominator.bit_length() > _MAX_BITS or \
            fraction.numerator.bit_length() > _MAX_BITS + fraction.denominator.bit_length():
        return INFINITY
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


#: Integers of more digits than this are written in exponent form by
#: :func:`quantity_text` where that is shorter (as JavaScript writes them).
LONG_INTEGER = 21


def quantity_text(quantity: Decimal) -> str:
    """``quantity`` written for a person: as :func:`to_number` gives it,
    but an integer of more than :data:`LONG_INTEGER` digits ending in zeros
    in exponent form (``1e+300``, ``-1.5e+300``), exactly, where that is
    shorter. Reasons, explanations and tables write quantities so.
    O(digits)."""
    return number_text(to_number(quantity))


def number_text(plain: Union[int, float, Decimal]) -> str:
    """:func:`quantity_text` of what :func:`to_number` gave (for a caller
    that has it already). O(digits)."""
    text = str(plain)
    if type(plain) is not int or len(text) <= LONG_INTEGER:
        return text
    sign = "-" if plain < 0 else ""
    digits = text.lstrip("-")
    kept = digits.rstrip("0")
    short = f"{sign}{kept[0]}{'.' if len(kept) > 1 else ''}{kept[1:]}e+{len(digits) - 1}"
    return short if len(short) < len(text) else text


def to_json_quantity(quantity: Decimal) -> Union[int, float, str]:
    """Return ``quantity`` as standard JSON can carry it, without loss.

    Infinities become the strings ``"inf"`` and ``"-inf"``; a decimal that no
    float holds exactly becomes its decimal string.
    """
    if quantity.is_infinite():
        return "inf" if quantity > 0 else "-inf"
    number = to_number(quantity)
    return str(number) if isinstance(number, Decimal) else number


#: The spaces around an infinity's word: those of the schema's ``\s``
#: (ECMA-262's white space and line ends), not every character Python
#: strips (the separators U+001C to U+001F, U+0085).
_SPACES = ("\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
           "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff")

_INFINITE_WORDS = {"inf": INFINITY, "+inf": INFINITY, "infinity": INFINITY,
                   "+infinity": INFINITY, "-inf": -INFINITY,
                   "-infinity": -INFINITY}


#: Reads a decimal string exactly, and raises where the number is beyond
#: any decimal's exponent rather than rounding it to zero or infinity.
_READ_STRING = EXACT.copy()
_READ_STRING.traps[decimal.Underflow] = True


def from_json_quantity(value: Any, where: str, finite: bool = False,
                       decimal_strings: bool = False) -> Decimal:
    """Read a quantity written by :func:`to_json_quantity` (or by a person).

    Numbers are read exactly; the strings ``"inf"``, ``"-inf"``,
    ``"Infinity"`` and ``"-Infinity"`` (any case, a ``+`` allowed before
    the word and spaces around it) mean the infinities. With
    ``decimal_strings``, a string holding a decimal number is read too.

    Raises:
        InvalidTypeError: anything else, naming ``where``.
    """
    if isinstance(value, str):
        word = value.strip(_SPACES).lower()
        if word in _INFINITE_WORDS:
            return to_quantity(_INFINITE_WORDS[word], where, finite)
        if decimal_strings:
            try:
                parsed = _READ_STRING.create_decimal(value.strip(_SPACES))
            except (decimal.Overflow, decimal.Underflow):
                # (a number, beyond what a decimal holds at all: it was
                # rounded to zero, or raised past its label)
                raise _out_of_range(value, where) from None
            except (decimal.InvalidOperation, ValueError):
                parsed = None
            if parsed is not None and parsed.is_finite():
                return to_quantity(parsed, where, finite)
        text = value if len(value) <= SHOWN_LIMIT else value[:SHOWN_LIMIT] + "..."
        raise InvalidTypeError(f'{where}: expected a number, got "{text}"')
    return to_quantity(value, where, finite)


def to_quantities(value: Any, where: str, field: str, finite: bool,
                  table: Optional[Dict[Any, Mapping[str, Decimal]]] = None,
                  read: Optional[Callable[[Any, str], Decimal]] = None
                  ) -> Mapping[str, Decimal]:
    """Return a read-only copy of the mapping ``value`` with exact quantities.

    ``where`` names the item and ``field`` the mapping in error messages
    (``"node 'n': resources['cpu']: ..."``); an empty ``where`` leaves the
    item out (``"rubric['cpu']: ..."``). Equal mappings share one copy
    through ``table`` (:data:`SHARED_MAPS` unless given; nodes use
    :data:`NODE_MAPS`, so that a cluster of nodes each of its own does not
    push the few flavours of workloads out). ``read`` reads each quantity
    the quick path does not vouch for (:func:`made_quantity` for numbers
    the library gave out); :func:`to_quantity` unless given.

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
    table = SHARED_MAPS if table is None else table
    quick = quick_quantities(value, finite, table)
    if quick is not None:
        return quick
    # Something on the way may be refused: each quantity through
    # to_quantity, with the label its error needs.
    checked: Dict[str, Decimal] = {}
    for key, quantity in value.items():
        if type(key) is not str or not key:
            _check_key(key, where, field)
        if type(quantity) is Decimal and _plain_decimal(quantity, finite, read is not None):
            checked[key] = quantity  # (as read would give it: no label to build)
            continue
        label = f"{_field_label(where, field)}[{shown(key)}]"
        checked[key] = to_quantity(quantity, label, finite) if read is None \
            else read(quantity, label)
    return _shared_copy(checked, table)


def made_quantities(value: Any, where: str, field: str) -> Mapping[str, Decimal]:
    """``value``, a mapping of quantities the library may have made (a node
    state's ``remaining``), read as :func:`to_quantities` reads it with
    :func:`made_quantity`: the mapping itself when it holds only exact
    quantities that reading gives back as they are (nothing to copy or
    label), else the read copy. O(len(value))."""
    if type(value) is dict or isinstance(value, MappingABC):
        for key, quantity in value.items():
            if type(key) is not str or not key or type(quantity) is not Decimal \
                    or not _plain_decimal(quantity, False, True):
                break
        else:
            return value
    return to_quantities(value, where, field, False, {}, read=made_quantity)


def _plain_decimal(quantity: Decimal, finite: bool, made: bool) -> bool:
    """Whether :func:`to_quantity` (``made``: :func:`made_quantity`) gives
    ``quantity`` back as it is, refusing nothing. O(digits)."""
    if quantity.is_finite():
        if not quantity:
            return False  # (read as ZERO, whatever its exponent)
        return _within_made(quantity) and (made or quantity.adjusted() < MAX_EXPONENT)
    return quantity.is_infinite() and not finite


def quick_quantities(value: Any, finite: bool, table: Dict[Any, Mapping[str, Decimal]]
                     ) -> Optional[Mapping[str, Decimal]]:
    """:func:`to_quantities` of ``value`` when no check on the way can
    fail: a plain dict of non-empty string keys and int or float quantities
    met before (or floats well inside the range, which cannot be refused);
    else ``None``, and the caller takes the path that names what is wrong.
    No error label is built here: this runs for every workload of a batch.
    Cost: O(len(value))."""
    if type(value) is not dict:
        return None
    checked: Dict[str, Decimal] = {}
    made = _MADE
    for key, quantity in value.items():
        kind = type(quantity)
        if type(key) is not str or not key or (kind is not float and kind is not int):
            return None
        known = made.get((kind, quantity))
        if known is None:
            # (a float of its own, such as 3.17 cpu, converted as
            # to_quantity would, without its checks, which it passes)
            if kind is float and _PLAIN_LOW <= abs(quantity) <= _PLAIN_HIGH:
                known = _float_to_decimal(quantity)
            elif kind is int and -_PLAIN_INT < quantity < _PLAIN_INT:
                known = Decimal(quantity) if quantity else ZERO
            else:
                return None
            _made(kind, quantity, known)
        elif finite and kind is float and known.is_infinite():
            return None
        checked[key] = known
    return _shared_copy(checked, table)


def _shared_copy(checked: Dict[str, Decimal], table: Dict[Any, Mapping[str, Decimal]]
                 ) -> Mapping[str, Decimal]:
    # Workloads come in a few flavours: equal mappings (the same keys, the
    # same Decimal objects) share one read-only copy, which keeps those
    # objects alive, so their ids stay theirs. Fewer long-lived objects also
    # means fewer passes of the garbage collector over a large heap.
    # (the read-only copy made only when the table has none yet)
    flavour = (tuple(checked), tuple(map(id, checked.values())))
    found = table.get(flavour)
    return share(table, flavour, MappingProxyType(checked)) if found is None else found


#: Read-only mappings already handed out by :func:`to_quantities`, by their
#: keys and the ids of their values (bounded, see :func:`share`): workloads'
#: requirements and rubrics.
SHARED_MAPS: Dict[Any, Mapping[str, Decimal]] = {}
#: The same for nodes' resources.
NODE_MAPS: Dict[Any, Mapping[str, Decimal]] = {}
#: At most this many values kept by each :func:`share` table.
SHARED_LIMIT = 4096


_Key = TypeVar("_Key", bound=Hashable)
_Value = TypeVar("_Value")


def share(table: Dict[_Key, _Value], key: _Key, value: _Value) -> _Value:
    """The value ``table`` already holds for ``key``, else ``value``, then
    kept there: one immutable object handed out for many equal ones. A table
    holding :data:`SHARED_LIMIT` values starts afresh, so that it keeps
    serving the values of the latest calls (a table that stopped taking
    values once full would share nothing in a long-lived process that has
    met many). Values handed out stay valid: their holders keep them.
    Cost: O(1) amortised."""
    found = table.get(key)
    if found is None:
        found = value
        if len(table) >= SHARED_LIMIT:
            table.clear()
        table[key] = value
    return found


def _field_label(where: str, field: str) -> str:
    """``field`` of the item ``where`` for :func:`to_quantities`' messages;
    built only when one is needed."""
    return f"{where}: {field}" if where else field


def _check_key(key: Any, where: str, field: str) -> None:
    """Raise unless ``key`` is a non-empty string (a subclass of str is kept)."""
    if not isinstance(key, str) or not key:
        raise (InvalidInputError if isinstance(key, str) else InvalidTypeError)(
            f"{_field_label(where, field)} keys must be non-empty strings, got {shown(key)}")
