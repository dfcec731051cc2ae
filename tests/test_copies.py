"""Copies of every value, plan, outcome, report and distributor: copy, deepcopy, pickle.

A copy compares equal to its original, and a copied or unpickled distributor
is independent of it and makes exactly the same decisions afterwards, for
every registered strategy, after random histories of every lifecycle call.
"""
import copy
import pickle
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pylighthouse import (Distributor, Node, Rubric, Workload, plan_scale_down,
                          plan_scale_up)
from pylighthouse.problem import load_problem, solve
from instances import RUBRICS, clusters, operations
from test_differential import concrete, run

PROTOCOLS = range(pickle.HIGHEST_PROTOCOL + 1)


def copiers():
    """Every way to copy an object, by name."""
    ways = {"copy": copy.copy, "deepcopy": copy.deepcopy}
    for protocol in PROTOCOLS:
        ways[f"pickle{protocol}"] = \
            lambda value, protocol=protocol: pickle.loads(pickle.dumps(value, protocol))
    return ways


COPIERS = copiers()


def strategy_names():
    return sorted(Distributor._strategies)


def build(strategy, nodes, rubric=None):
    """A distributor of any registered strategy, through the snapshot every
    strategy reads (a strategy that needs a rubric finds one there)."""
    return Distributor.from_dict({
        "format": 1, "strategy": strategy, "rubric": rubric or {"cpu": 1, "mem": 0.5},
        "nodes": [dict(node, cordoned=False) for node in nodes], "placements": []})


def a_busy_distributor(strategy):
    distributor = build(strategy, [
        {"name": "a", "resources": {"cpu": 4, "mem": 0.3, "gpu": 1, "spiders": "-inf"}},
        {"name": "b", "resources": {"cpu": "inf", "mem": 8}},
        {"name": "c", "resources": {"cpu": 2, "mem": 2}}])
    distributor.attempt_assign_loads([
        {"name": "w1", "requirements": {"cpu": 1, "mem": 0.1}, "aversion_groups": ["g"]},
        {"name": "w2", "requirements": {"cpu": 1, "mem": 0.1}, "aversion_groups": ["g"]},
        {"name": "w3", "requirements": {"gpu": 1}, "immunities": ["spiders"]}])
    distributor.cordon("c")
    return distributor


VALUES = [
    Node("n", {"cpu": 0.1, "mem": Decimal("0.30"), "ward": float("-inf"), "tag": 0}),
    Workload("w", {"cpu": 0.1, "flies": -5}, immunities={"spiders"}, aversion_groups=["g"]),
    Workload("plain"),
    Rubric({"cpu": 1, "mem": 0.025}),
    Node("odd", {"cpu": Decimal("0.1000000000000000000001"), "room": float("inf")}),
]


@pytest.mark.parametrize("way", COPIERS)
@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_values_copy_equal_and_repr_round_trips(value, way):
    copied = COPIERS[way](value)
    assert copied == value and type(copied) is type(value)
    assert hash(copied) == hash(value)
    names = {"Node": Node, "Workload": Workload, "Rubric": Rubric, "Decimal": Decimal}
    assert eval(repr(value), names) == value


@pytest.mark.parametrize("way", COPIERS)
@pytest.mark.parametrize("strategy", strategy_names())
def test_reports_plans_and_outcomes_copy_equal(strategy, way):
    distributor = a_busy_distributor(strategy)
    reports = [distributor.node_state("a"), distributor.node_states(),
               distributor.explain({"name": "x", "requirements": {"cpu": 3}}),
               distributor.explain({"name": "y", "requirements": {"gpu": 1}}).reasons["b"],
               plan_scale_up(distributor, [{"name": "p", "requirements": {"cpu": 3}}],
                             {"name": "big", "resources": {"cpu": 8, "mem": 8}}),
               plan_scale_down(distributor)]
    for report in reports:
        assert COPIERS[way](report) == report
    outcome = solve(load_problem({"strategy": strategy, "rubric": {"cpu": 1},
                                  "nodes": [{"name": "n", "resources": {"cpu": 1}}],
                                  "workloads": [{"name": "w", "requirements": {"cpu": 2}}],
                                  "partial": True}))
    copied = COPIERS[way](outcome)
    assert copied.to_dict() == outcome.to_dict()
    assert copied.distributor.to_dict() == outcome.distributor.to_dict()


@pytest.mark.parametrize("way", COPIERS)
@pytest.mark.parametrize("strategy", strategy_names())
def test_a_copied_distributor_is_independent(strategy, way):
    original = a_busy_distributor(strategy)
    before = original.to_dict()
    copied = COPIERS[way](original)
    assert type(copied) is type(original)
    assert copied.to_dict() == before
    copied.release_loads(["w1"])
    copied.attempt_assign_loads([{"name": "new", "requirements": {"cpu": 1}}])
    copied.remove_nodes(["b"])
    copied.uncordon("c")
    assert original.to_dict() == before
    original.attempt_assign_loads([{"name": "other", "requirements": {"cpu": 1}}])
    assert "other" not in copied.assignments


@settings(max_examples=60, deadline=None, derandomize=True)
@given(strategy=st.sampled_from(strategy_names()), nodes=clusters(), rubric=RUBRICS,
       before=operations(max_steps=6), after=operations(max_steps=6, prefix="t"),
       way=st.sampled_from(sorted(COPIERS)))
def test_a_copy_decides_like_the_original_after_any_history(
        strategy, nodes, rubric, before, after, way):
    original = build(strategy, nodes, rubric)
    for step in before:
        run(concrete(step, original.assignments, [node.name for node in original.nodes]),
            original)
    copied = COPIERS[way](original)
    assert copied.to_dict() == original.to_dict()
    for step in after:
        operation = concrete(step, original.assignments, [node.name for node in original.nodes])
        assert run(operation, copied) == run(operation, original), operation
        assert copied.to_dict() == original.to_dict()
        assert copied.node_states() == original.node_states()
