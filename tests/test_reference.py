"""The reference keeps each node's sort key until the node changes: its
orders must be the literal sort's, step by step."""
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

import reference
from instances import RUBRICS, clusters, operations
from reference import Reference
from reference_bestfit import BestFitReference
from test_differential import concrete, run_reference
from test_index import sys_path_benchmarks


def built(strategy, nodes, rubric):
    if strategy == "BestFit":
        return BestFitReference(nodes, rubric)
    return Reference(strategy, nodes, rubric)


def step_through(strategy, nodes, rubric, steps):
    """Every operation of ``steps`` on a reference that also sorts every
    node anew at every order and asserts the orders agree; returns how many
    orders were checked."""
    twin = built(strategy, nodes, rubric)
    orders = []
    sorted_by = twin.sorted_by

    def counted(key):
        orders.append(None)
        return sorted_by(key)
    with mock.patch.object(reference, "CHECK", True), \
            mock.patch.object(twin, "sorted_by", counted):
        for step in steps:
            run_reference(concrete(step, twin.assignments(), [m.name for m in twin.machines]),
                          twin)
    return len(orders)


@settings(max_examples=120, deadline=None)
@given(strategy=st.sampled_from(["BinPack", "BestFit"]), nodes=clusters(),
       rubric=st.one_of(st.none(), RUBRICS), steps=operations())
def test_remembered_orders_are_the_literal_sort(strategy, nodes, rubric, steps):
    """Through every lifecycle operation (places, releases, cordons,
    drains, removals, new nodes), with and without a rubric."""
    if strategy == "BinPack" and rubric is None:
        rubric = {}
    step_through(strategy, nodes, rubric, steps)


@settings(max_examples=8, deadline=None)
@given(strategy=st.sampled_from(["BinPack", "BestFit"]), seed=st.integers(0, 10 ** 6))
def test_remembered_orders_hold_on_a_larger_cluster(strategy, seed):
    """Forty nodes of many kinds, two calls and a release: orders are made
    at every placement, each one checked."""
    sys_path_benchmarks()
    import mixes
    nodes, workloads = mixes.problem("kinds", 40, 120, seed=seed)
    steps = [("assign", workloads[:60]), ("release", _Half()), ("assign", workloads[60:])]
    rubric = {"cpu": 1, "mem": 0.25} if strategy == "BinPack" else None
    assert step_through(strategy, nodes, rubric, steps) >= 60


class _Half:
    """As a drawn ``random.Random``: the release of every other placed workload."""

    @staticmethod
    def randint(low, high):
        return high // 2

    @staticmethod
    def sample(names, count):
        return names[::2][:count]
