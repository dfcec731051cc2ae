"""The quick builders of ``from_list`` against the full path.

``Node.from_list`` and ``Workload.from_list`` build the usual item (a plain
dict, an ASCII name, numbers met before) without making the error labels
only a fault would show, and hand anything else to ``from_dict``. These
tests hold the quick path to what the full path makes, quantity by quantity
(each one against :func:`to_quantity`, which the quick path does not call),
and check that every refusal still comes from the full path, unchanged.
"""
from decimal import Decimal
from fractions import Fraction
from math import inf, nan

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pylighthouse import LighthouseException, Node, Workload
from pylighthouse.model import _quick_node, _quick_workload
from pylighthouse.quantities import to_quantity
from instances import picked

#: Quantities of every kind the full path meets: plain ones the quick path
#: takes, and ones it must hand over (refused, odd types, zeros, extremes).
QUANTITIES = st.one_of(
    st.integers(-3, 40), st.floats(allow_nan=False, allow_infinity=False, width=32),
    picked([0.0, -0.0, 0, 1, 0.1, 0.2, 0.3, 3.17, 1e-300, 1e-281, 1e300, 10 ** 5000,
            inf, -inf, nan, True, False, "1", None, Decimal("0.30"), Decimal("1E+2"),
            Fraction(1, 4), Fraction(1, 3)]))
KEYS = st.sampled_from(["cpu", "mem", "disk", "gpu", "host-n1", "", 7, "ключ"])
NAMES = st.sampled_from(["w", "n-1", "ümlaut", "", 3, None, "a\ud800", "x" * 300])
NAME_LISTS = st.one_of(
    st.lists(st.sampled_from(["g1", "g2", "web", "", 5]), max_size=3).flatmap(
        lambda names: st.sampled_from([names, tuple(names), set(map(str, names)),
                                       frozenset(map(str, names))])),
    st.sampled_from(["spiders", None, {"g": 1}, [["g"]], ("g", "g")]))


def _items(fields):
    return st.fixed_dictionaries({}, optional=fields)


#: Items the quick path may take (one odd quantity at most spoils them) and
#: items of every other sort.
GOOD_NAMES = st.sampled_from(["w", "n-1", "x" * 300])
GOOD_KEYS = st.sampled_from(["cpu", "mem", "disk", "gpu", "host-n1"])
GOOD_LISTS = st.lists(st.sampled_from(["g1", "g2", "web"]), max_size=3)
WORKLOADS = st.one_of(
    st.fixed_dictionaries({"name": GOOD_NAMES,
                           "requirements": st.dictionaries(GOOD_KEYS, QUANTITIES, max_size=4)},
                          optional={"immunities": GOOD_LISTS, "aversion_groups": GOOD_LISTS}),
    _items({"name": NAMES, "requirements": st.dictionaries(KEYS, QUANTITIES, max_size=4),
            "immunities": NAME_LISTS, "aversion_groups": NAME_LISTS,
            "tolerations": NAME_LISTS, "id": NAMES, "colour": st.just("red")}))
NODES = st.one_of(
    st.fixed_dictionaries({"name": GOOD_NAMES,
                           "resources": st.dictionaries(GOOD_KEYS, QUANTITIES, max_size=4)}),
    _items({"name": NAMES, "resources": st.dictionaries(KEYS, QUANTITIES, max_size=4),
            "id": NAMES, "assigned_workloads": st.just([]), "colour": st.just("red")}))


def _same_quantities(got, data, finite):
    assert list(got) == list(data)
    for key, value in data.items():
        expected = to_quantity(value, "x", finite)
        assert type(got[key]) is Decimal
        assert str(got[key]) == str(expected) and got[key] == expected
    with pytest.raises(TypeError):
        got["cpu"] = 1  # (a read-only copy)


def _full_or_error(build, *arguments):
    try:
        return build(*arguments), None
    except LighthouseException as error:
        return None, error


def _from_list_agrees(cls, data, expected, error):
    """``cls.from_list([data])`` gives what the full path gave: the same
    value, or the same error with the same message."""
    if error is None:
        assert cls.from_list([data]) == [expected]
        return
    with pytest.raises(type(error)) as raised:
        cls.from_list([data])
    assert str(raised.value) == str(error)


def _quick_agrees(cls, builder, data, where, field, finite):
    """The quick ``builder``'s item of ``data`` (or ``None``) agrees with
    ``cls.from_dict``'s, quantity by quantity; ``from_list`` too."""
    expected, error = _full_or_error(cls.from_dict, data, where)
    quick = builder(data)
    if quick is not None:
        assert expected is not None
        assert quick == expected and type(quick) is cls
        _same_quantities(getattr(quick, field), data.get(field, {}), finite)
    _from_list_agrees(cls, data, expected, error)
    return quick


@settings(max_examples=400, deadline=None)
@given(WORKLOADS)
def test_quick_workloads_are_the_full_paths_and_refusals_come_unchanged(data):
    # (a node of the same quantities first, and the full path, so that the
    # quantities are met before: infinities too, which only nodes may have)
    _full_or_error(Node, "seed", data.get("requirements"))
    quick = _quick_agrees(Workload, _quick_workload, data, "workloads[0]", "requirements", True)
    if quick is not None:
        assert quick.immunities == frozenset(data.get("immunities", ()))
        assert quick.aversion_groups == frozenset(data.get("aversion_groups", ()))


@settings(max_examples=300, deadline=None)
@given(NODES)
def test_quick_nodes_are_the_full_paths_and_refusals_come_unchanged(data):
    _quick_agrees(Node, _quick_node, data, "nodes[0]", "resources", False)


def test_the_usual_items_take_the_quick_path_and_others_the_full_one():
    # Met before by the full path: ints, float zero and infinities; floats
    # inside the range never need it.
    Workload("seen", {"cpu": 2, "gpu": 1, "t": 0.0})
    Node("seen", {"disk": inf})
    assert _quick_workload({"name": "w", "requirements": {"cpu": 2, "mem": 3.17, "t": 0.0},
                            "aversion_groups": ["web"]}) is not None
    assert _quick_node({"name": "n", "resources": {"cpu": 2, "disk": inf}}) is not None
    for handed_over in ({"name": "w", "requirements": {"cpu": inf}},  # refused
                        {"name": "w", "requirements": {"cpu": True}},  # refused
                        {"name": "w", "requirements": {"cpu": Decimal(1)}},  # another type
                        {"id": "w"},  # another spelling
                        {"name": "w", "tolerations": ["x"]},  # merged with immunities
                        {"name": "ümlaut"},  # a name that needs the Unicode check
                        {"name": "w", "requirements": None}):  # read as no requirements
        assert _quick_workload(handed_over) is None
    assert _quick_node({"name": "n", "resources": {"cpu": nan}}) is None


def test_subclasses_build_through_their_own_from_dict():
    class Tagged(Workload):
        __slots__ = ()

    built = Tagged.from_list([{"name": "w", "requirements": {"cpu": 1}}])
    assert type(built[0]) is Tagged
