"""Exact quantities: reading numbers in, writing them out, and never drifting."""
from decimal import Decimal
from fractions import Fraction
from math import inf, isnan

import pytest
from hypothesis import given
from hypothesis import strategies as st

import pylighthouse as lighthouse
from pylighthouse import InvalidInputError, InvalidTypeError
from pylighthouse import quantities
from pylighthouse.problem import load_problem, solve
from pylighthouse.quantities import (floats_of, from_json_quantity, quantity_text, to_json_quantity,
                                     to_number, to_quantities, to_quantity)


@pytest.mark.parametrize("value, expected", [
    (0.1, Decimal("0.1")), (3, Decimal(3)), (Decimal("2.50"), Decimal("2.50")),
    (Fraction(3, 8), Decimal("0.375")), (1e-7, Decimal("1e-7")),
    (inf, Decimal("Infinity")), (-inf, Decimal("-Infinity")),
])
def test_to_quantity_reads_numbers_exactly(value, expected):
    assert to_quantity(value, "x") == expected


def test_to_quantity_refuses_what_is_not_a_real_number():
    for value in ("1", None, True, [1], 1j):
        with pytest.raises(InvalidTypeError, match="^here: expected a number"):
            to_quantity(value, "here")
    with pytest.raises(InvalidInputError, match="NaN"):
        to_quantity(float("nan"), "here")
    with pytest.raises(InvalidInputError, match="must be finite"):
        to_quantity(inf, "here", finite=True)


def test_to_quantities_checks_each_item_in_order_and_names_the_first_bad_one():
    class Name(str):
        pass

    read = to_quantities({Name("cpu"): Decimal("1.50"), "mem": 4, "fast": 0.5},
                         "node 'n'", "resources", False)
    assert [(type(key), key) for key in read] == \
        [(Name, "cpu"), (str, "mem"), (str, "fast")]
    assert str(read[Name("cpu")]) == "1.50" and str(read["fast"]) == "0.5"
    to_quantity(inf, "x")  # an infinity already made still counts as one
    with pytest.raises(InvalidInputError, match=r"^item: map\['a'\]: must be finite"):
        to_quantities({"a": inf}, "item", "map", True)
    assert to_quantities({"a": inf}, "item", "map", False)["a"] == Decimal("Infinity")
    with pytest.raises(InvalidTypeError, match="^map keys must be non-empty strings, got 5$"):
        to_quantities({"a": 1, 5: "x", "b": "y"}, "", "map", False)
    with pytest.raises(InvalidInputError, match="^item: map keys must be non-empty strings, "
                       "got ''$"):
        to_quantities({"a": 1, "": 2}, "item", "map", False)
    with pytest.raises(InvalidTypeError, match=r"^map\['b'\]: expected a number, got str 'y'$"):
        to_quantities({"a": 1, "b": "y", 5: 1}, "", "map", False)
    with pytest.raises(InvalidTypeError, match="^item: map must be a mapping of name to "
                       "number, got list$"):
        to_quantities([("a", 1)], "item", "map", False)


@pytest.mark.parametrize("value", [[1], {}, {"a": 1}, set()])
def test_an_unhashable_quantity_is_named_like_any_other_bad_one(value):
    with pytest.raises(InvalidTypeError, match=r"^workload 'w': requirements\['cpu'\]: "
                                               r"expected a number, got"):
        lighthouse.Workload("w", {"cpu": value})
    with pytest.raises(InvalidTypeError, match=r"^node 'n': resources\['cpu'\]: "
                                               r"expected a number, got"):
        lighthouse.Node("n", {"cpu": value})


def test_to_number_gives_the_plainest_exact_form():
    assert to_number(Decimal("4.000")) == 4 and isinstance(to_number(Decimal("4.0")), int)
    assert to_number(Decimal("0.3")) == 0.3
    long = Decimal("0.12345678901234567890")
    assert to_number(long) is long
    assert to_number(Decimal("-Infinity")) == -inf
    assert isnan(to_number(Decimal("NaN")))


@pytest.mark.parametrize("quantity, text", [
    ("1e300", "1e+300"), ("-1.5e300", "-1.5e+300"), ("12e20", "1.2e+21"),
    ("1e20", "100000000000000000000"), ("123456789012345678901234567890",
                                        "123456789012345678901234567890"),
    ("10000000000000000000001000", "10000000000000000000001000"), ("0.5", "0.5"),
    ("2e-300", "2e-300"), ("0.12345678901234567890", "0.12345678901234567890"),
    ("Infinity", "inf")])
def test_quantities_are_written_for_people_exactly(quantity, text):
    assert quantity_text(Decimal(quantity)) == text


@given(st.integers(-10 ** 320, 10 ** 320))
def test_a_written_integer_reads_back_as_itself(number):
    assert Decimal(quantity_text(Decimal(number))) == number


def test_a_reason_writes_a_huge_quantity_short():
    distributor = lighthouse.PrioritizedDistributor.from_list(
        [{"name": "n", "resources": {"cpu": 1e300, "mem": 5e299}}])
    load = {"name": "b", "requirements": {"cpu": 1e300, "mem": 1e299}}
    distributor.attempt_assign_loads([{"name": "a", "requirements": {"cpu": 5e299}}])
    assert str(distributor.explain(load)) == (
        "0/1 nodes fit: 1 insufficient cpu (needs 1e+300, most left 5e+299)")
    assert str(distributor.explain(load).reasons["n"]) == (
        "insufficient cpu (needs 1e+300, 5e+299 left)")
    # (the answer's lines for many workloads left over, counted together)
    problem = load_problem({
        "nodes": [{"name": "n", "resources": {"cpu": 1e300, "mem": 5e299}}],
        "workloads": [{"name": "a", "requirements": {"cpu": 5e299}}, dict(load),
                      dict(load, name="c")], "partial": True})
    assert solve(problem).unplaced == {
        name: "0/1 nodes fit: 1 insufficient cpu (needs 1e+300, most left 5e+299)"
        for name in ("b", "c")}


def test_json_quantities_round_trip():
    for quantity in (Decimal("0.1"), Decimal(7), Decimal("Infinity"), Decimal("-Infinity"),
                     Decimal("0.12345678901234567890")):
        written = to_json_quantity(quantity)
        assert from_json_quantity(written, "q", decimal_strings=True) == quantity
    assert to_json_quantity(Decimal("-Infinity")) == "-inf"
    assert from_json_quantity("Infinity", "q") == Decimal("Infinity")
    # (a zero of any exponent is zero; a number beyond any decimal's
    # exponent is out of range, not read as zero or raised as Overflow)
    for zero in ["0e-3000000000000000000", "-0E+1000000000000000000"]:
        assert from_json_quantity(zero, "q", decimal_strings=True) == 0
    for beyond in ["1e1000000000000000000", "-5e-99999999999999999999999"]:
        with pytest.raises(InvalidInputError, match=f"q: '{beyond}' is out of range"):
            from_json_quantity(beyond, "q", decimal_strings=True)
    # (the spellings the documentation lists, and the schema's pattern)
    for word in ["inf", "INF", " +inf", "+Infinity ", "infinity"]:
        assert from_json_quantity(word, "q") == Decimal("Infinity")
    for word in ["-inf", " -INFINITY ", "-Inf"]:
        assert from_json_quantity(word, "q") == Decimal("-Infinity")
    for word in ["\u00a0inf\u3000", "\ufeff-inf", "\t+inf\n"]:  # (the schema's \s)
        assert abs(from_json_quantity(word, "q")) == Decimal("Infinity")
    # (what Python strips but the schema's \s does not: refused, as the schema does)
    for word in ["++inf", "in f", "infinite", "∞", "+-inf", "\x1finf", "\x85inf"]:
        with pytest.raises(InvalidTypeError):
            from_json_quantity(word, "q")
    with pytest.raises(InvalidTypeError, match='^a.b: expected a number, got "lots"'):
        from_json_quantity("lots", "a.b")
    with pytest.raises(InvalidTypeError):
        from_json_quantity("1.5", "a.b")


@given(st.lists(st.integers(1, 99).map(lambda n: n / 100), min_size=1, max_size=30))
def test_sums_of_decimals_are_exact(values):
    quantities = [to_quantity(value, "v") for value in values]
    total = sum(quantities, Decimal(0))
    assert total == sum(Fraction(repr(v)) for v in values)
    for quantity in quantities:
        total -= quantity
    assert total == 0


@given(st.one_of(st.floats(), st.floats(min_value=-1e-270, max_value=1e-270),
                 st.sampled_from([1e-280, 1e300, -1e300, 1e-281, 1.0000000000000002e300,
                                  1.2345678901234567e-280, 1.2345678901234567e-290, 0.0,
                                  -0.0])))
def test_to_quantities_reads_each_float_as_to_quantity_does(value):
    """Mappings read floats inside the range on a shorter path: the same
    Decimal (to the digit) as :func:`to_quantity`, and the same refusals."""
    try:
        expected = to_quantity(value, "x")
    except InvalidInputError as error:
        with pytest.raises(InvalidInputError) as raised:
            to_quantities({"cpu": value}, "workload 'w'", "requirements", False)
        assert str(raised.value).endswith("requirements['cpu']: " + str(error)[len("x: "):])
        return
    got = to_quantities({"cpu": value}, "workload 'w'", "requirements", False)["cpu"]
    assert str(got) == str(expected) and got == expected


@given(st.lists(st.decimals(allow_nan=False), min_size=1, max_size=20))
def test_floats_of_gives_what_float_gives_however_often_asked(values):
    # (asked twice: the second answer comes from the table of floats made)
    asked = {f"r{at}": value for at, value in enumerate(values)}
    for _ in range(2):
        assert floats_of(asked) == {key: float(value) for key, value in asked.items()}


def test_floats_of_equal_decimals_of_other_exponents_and_a_full_table():
    assert floats_of({"a": Decimal("1.50")}) == {"a": 1.5}
    assert floats_of({"a": Decimal("1.5000")}) == {"a": 1.5}
    for number in range(quantities._MADE_LIMIT + 10):
        floats_of({"n": Decimal(number) / 7})
    assert len(quantities._FLOATS) <= quantities._MADE_LIMIT
    assert floats_of({"x": Decimal(10) / 7}) == {"x": float(Decimal(10) / 7)}


def test_the_range_ends_at_1e300_exactly():
    # (the check looked at the exponent only: 9.99e300 and 5 * 10**300 were
    # taken, where the documentation gives 1e300 as the largest magnitude)
    for inside in [1e300, -1e300, 10 ** 300, -(10 ** 300), Decimal("1E+300"), 1e-300,
                   Decimal("9.999E+299")]:
        assert to_quantity(inside, "q").copy_abs() <= Decimal("1e300")
    for outside in [9.99e300, -1.5e300, 10 ** 300 + 1, 5 * 10 ** 300,
                    Decimal("1.0000000000000000000000000000001E+300"), 9.99e-301]:
        with pytest.raises(InvalidInputError, match="out of range|digits is"):
            to_quantity(outside, "q")
