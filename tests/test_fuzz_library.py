"""Every public library entry point, fed hostile values: only the library's errors.

Hostile values: wrong types, huge and tiny numbers, NaN and infinity in
every spelling, unicode digits, empty, duplicate and very long names, lone
surrogates and NUL in names, deep nesting, numpy scalars (when numpy is
installed). Each call either succeeds or raises a
:class:`~pylighthouse.LighthouseException` whose message is short and says
where (``item: field: problem``); a distributor that raised is unchanged
(its snapshot), and one that did not still keeps exact books.

Examples per test: ``PYLIGHTHOUSE_FUZZ_EXAMPLES`` (default 300, a third of
that for each of the 15 distributor methods: 3,000 examples in all,
derandomized so CI runs the same cases every time); set it to thousands for
a long local run, with ``PYLIGHTHOUSE_FUZZ_RANDOM=1`` to draw new cases
each time.
"""
import math
import os
import re
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pylighthouse import (BinPackDistributor, Distributor, LighthouseException, Node,
                          PrioritizedDistributor, Rubric, Workload, check_fit,
                          plan_scale_down, plan_scale_up)
from pylighthouse.errors import SHOWN_LIMIT
from instances import picked
from test_copies import build, strategy_names
from test_lifecycle import check_books

EXAMPLES = int(os.environ.get("PYLIGHTHOUSE_FUZZ_EXAMPLES", "300"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None,
                derandomize=not os.environ.get("PYLIGHTHOUSE_FUZZ_RANDOM"),
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

try:
    import numpy
except ImportError:  # numpy is optional: its scalars are left out
    numpy = None


def nested(depth):
    value = "x"
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


NUMBER_WORDS = ["nan", "NaN", "-nan", "inf", "+inf", "-inf", "Infinity", "-Infinity",
                "infinity", "1e999", "-1e999", "1e-999", "0x10", "1_000", " 1 ", "",
                "\u0663", "\uff15", "\u00bd", "1,5", "1e300", "sNaN"]
ODD_NAMES = ["", "\ud800", "a\udfffb", "a\x00b", "\x00", " ", "x" * 5000,
             "\u0663", "\uff15", "n0", "w0", "\u202e"]
SPECIAL = [None, True, False, 10 ** 5000, -10 ** 400, 2 ** 64, 10 ** 301, 5e-324, 1e-310,
           1.7976931348623157e308, math.inf, -math.inf, math.nan, -0.0,
           Decimal("NaN"), Decimal("sNaN"), Decimal("-Infinity"), Decimal("1e999999999"),
           Decimal("1e-999999999999999999"), Decimal("0E-999999999"), Fraction(1, 3),
           Fraction(1, 2 ** 2000), Fraction(3, 8), b"cpu", bytearray(b"1"), object(),
           nested(60), nested(3000), [1, 2], (1,), {"a": 1}, set(), frozenset({"a"}), 1j,
           range(3)]
if numpy is not None:
    SPECIAL += [numpy.float32(0.5), numpy.float32("nan"), numpy.float64(0.1), numpy.int64(3),
                numpy.float16(0.25), numpy.longdouble(0.1), numpy.bool_(True),
                numpy.float32("inf"), numpy.array([1.0])]


scalars = st.one_of(
    picked(SPECIAL), st.sampled_from(NUMBER_WORDS), picked(ODD_NAMES),
    st.integers(), st.floats(), st.decimals(), st.text(max_size=8),
    st.fractions(max_denominator=1000))
#: Hashable odd keys for mappings.
keys = st.one_of(picked(ODD_NAMES), st.sampled_from([1, None, True, 2.5, Decimal(1), ("a",)]))
hostile = st.recursive(scalars, lambda children: st.one_of(
    st.lists(children, max_size=3),
    st.dictionaries(st.one_of(st.sampled_from(["name", "id", "resources", "requirements",
                                               "immunities", "tolerations",
                                               "aversion_groups", "cpu", "mem"]),
                              keys), children, max_size=4)),
    max_leaves=8)
names = st.one_of(st.sampled_from(["n0", "n1", "w0", "w1", "a", "b"]), picked(ODD_NAMES),
                  scalars)
quantities = st.one_of(st.integers(-3, 9), st.sampled_from([0.5, 0.1, "inf"]), scalars)
quantity_maps = st.one_of(
    st.dictionaries(st.one_of(st.sampled_from(["cpu", "mem", "gpu"]), keys), quantities,
                    max_size=3), hostile)
node_dicts = st.one_of(st.fixed_dictionaries(
    {"name": names, "resources": quantity_maps},
    optional={"id": names, "assigned_workloads": hostile, "x": hostile}), hostile)
name_lists = st.one_of(st.lists(names, max_size=3), hostile)
workload_dicts = st.one_of(st.fixed_dictionaries(
    {"name": names, "requirements": quantity_maps},
    optional={"immunities": name_lists, "aversion_groups": name_lists,
              "tolerations": name_lists, "id": names}), hostile)
node_lists = st.one_of(st.lists(node_dicts, max_size=3), hostile)
workload_lists = st.one_of(st.lists(workload_dicts, max_size=4), hostile)


#: How a message starts: the item it is about (and then its field).
ITEM = re.compile(r"(node|workload|nodes\[\d+\]|workloads\[\d+\]|nodes|workloads|rubric|"
                  r"pending(\[\d+\])?|"
                  r"snapshot|templates(\[\d+\])?|values|max_nodes|max_new_nodes|distributor|"
                  r"check_fit|release_loads|remove_nodes|node_state|cordon|uncordon|drain|"
                  r"record_running|room_score)\b")


def check_error(error):
    """The library's own error, with a short message that starts with the
    item it is about."""
    assert isinstance(error, LighthouseException), repr(error)
    message = str(error)
    assert ITEM.match(message), message[:300]
    assert len(message) < 8 * SHOWN_LIMIT + 200, message[:300]


def attempt(call, *args, **kwargs):
    """Run ``call``; return (True, result) or (False, the library's error)."""
    try:
        return True, call(*args, **kwargs)
    except Exception as error:  # anything else fails the test in check_error
        check_error(error)
        return False, error


def busy(strategy):
    distributor = build(strategy, [
        {"name": "n0", "resources": {"cpu": 4, "mem": 4, "gpu": 1}},
        {"name": "n1", "resources": {"cpu": 2, "mem": "inf", "spiders": "-inf"}}])
    distributor.attempt_assign_loads([
        {"name": "w0", "requirements": {"cpu": 1}, "aversion_groups": ["g"]},
        {"name": "w1", "requirements": {"cpu": 1, "gpu": 1}}])
    return distributor


@FUZZ
@given(name=names, resources=quantity_maps, node=node_dicts, items=node_lists)
def test_nodes(name, resources, node, items):
    attempt(Node, name, resources)
    attempt(Node.from_dict, node)
    attempt(Node.from_list, items)


@FUZZ
@given(name=names, requirements=quantity_maps, immunities=name_lists, groups=name_lists,
       load=workload_dicts, items=workload_lists)
def test_workloads_and_rubrics(name, requirements, immunities, groups, load, items):
    attempt(Workload, name, requirements, immunities, groups)
    attempt(Workload.from_dict, load)
    attempt(Workload.from_list, items)
    attempt(Rubric, requirements)


@FUZZ
@given(strategy=st.sampled_from(strategy_names()), items=node_lists, rubric=quantity_maps)
def test_building_distributors(strategy, items, rubric):
    cls = Distributor._strategies[strategy]
    if cls is BinPackDistributor:
        ok, made = attempt(cls.from_list, rubric, items)
    else:
        ok, made = attempt(cls.from_list, items)
    if ok:
        check_books(made)


def snapshot_paths(snapshot, prefix=()):
    """Every path into a snapshot, to replace one value with a hostile one."""
    yield prefix
    if isinstance(snapshot, dict):
        for key, value in snapshot.items():
            yield from snapshot_paths(value, prefix + (key,))
    elif isinstance(snapshot, list):
        for index, value in enumerate(snapshot):
            yield from snapshot_paths(value, prefix + (index,))


@FUZZ
@given(strategy=st.sampled_from(strategy_names()), data=st.data(), value=hostile,
       drop=st.booleans())
def test_restoring_mutated_snapshots(strategy, data, value, drop):
    snapshot = busy(strategy).to_dict()
    path = data.draw(st.sampled_from(list(snapshot_paths(snapshot))[1:]))
    parent = snapshot
    for key in path[:-1]:
        parent = parent[path[0]] if parent is snapshot and False else parent[key]
    if drop and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    ok, made = attempt(Distributor.from_dict, snapshot)
    if ok:
        check_books(made)


METHODS = {
    "attempt_assign_loads": lambda d, draw: d.attempt_assign_loads(
        draw(workload_lists), all_or_nothing=draw(st.booleans())),
    "release_loads": lambda d, draw: d.release_loads(draw(name_lists)),
    "release_one": lambda d, draw: d.release_loads(draw(names)),
    "add_nodes": lambda d, draw: d.add_nodes(draw(node_lists)),
    "record_running": lambda d, draw: d.record_running(draw(names), draw(workload_lists)),
    "cordon": lambda d, draw: d.cordon(draw(names)),
    "uncordon": lambda d, draw: d.uncordon(draw(names)),
    "drain": lambda d, draw: d.drain(draw(names)),
    "remove_nodes": lambda d, draw: d.remove_nodes(draw(name_lists)),
    "explain": lambda d, draw: d.explain(draw(workload_dicts)),
    "node_state": lambda d, draw: d.node_state(draw(names)),
    "workload": lambda d, draw: d.workload(draw(names)),
    "plan_scale_up": lambda d, draw: plan_scale_up(
        d, draw(workload_lists), draw(st.one_of(node_lists, node_dicts)),
        draw(st.one_of(st.none(), st.integers(-1, 3), scalars))),
    "plan_scale_down": lambda d, draw: plan_scale_down(
        d, draw(st.one_of(st.none(), st.integers(-1, 3), scalars)),
        draw(st.one_of(st.none(), st.dictionaries(st.one_of(st.just("n0"), keys), quantities,
                                                  max_size=2), hostile))),
    "check_fit": lambda d, draw: check_fit(
        draw(st.one_of(quantity_maps, st.just(d.node_state("n0").remaining))),
        draw(st.one_of(st.builds(Workload, st.just("w"), st.just({"cpu": 1})), hostile))),
}


@pytest.mark.parametrize("method", sorted(METHODS))
@settings(FUZZ, max_examples=max(1, EXAMPLES // 3))
@given(strategy=st.sampled_from(strategy_names()), data=st.data())
def test_distributor_methods(method, strategy, data):
    distributor = busy(strategy)
    before = distributor.to_dict()
    ok, _ = attempt(METHODS[method], distributor, data.draw)
    if not ok:
        assert distributor.to_dict() == before, method
    check_books(distributor)
    after = distributor.to_dict()
    if method in ("explain", "node_state", "workload", "plan_scale_up", "plan_scale_down",
                  "check_fit"):
        assert after == before, method


@pytest.mark.parametrize("value", [v for v in SPECIAL if not isinstance(v, float)
                                   or not math.isnan(v)][:12] + ODD_NAMES[:4],
                         ids=lambda value: type(value).__name__)
def test_each_special_value_as_every_field_of_a_node(value):
    """Not random: every special value in every slot of a node once."""
    for make in (lambda: Node(value, {"cpu": 1}), lambda: Node("n", {"cpu": value}),
                 lambda: Node("n", {value: 1}) if _hashable(value) else Node("n", value),
                 lambda: PrioritizedDistributor.from_list([{"name": "n",
                                                            "resources": value}])):
        attempt(make)


def _hashable(value):
    try:
        hash(value)
    except TypeError:
        return False
    return True
