"""The distributors against the reference reading of SPEC.md, on random clusters.

Every strategy, every lifecycle operation, several calls in a row: each
result and the whole state after each step must agree exactly.
"""
import json

from hypothesis import given, settings
from hypothesis import strategies as st

import pylighthouse as lighthouse
from reference import Load, Reference, exact
from instances import RUBRICS, batches, clusters, operations, recorded_specs

STRATEGIES = st.sampled_from(["Prioritized", "RoundRobin", "BinPack"])


def build(strategy, nodes, rubric):
    if strategy == "BinPack":
        return lighthouse.BinPackDistributor.from_list(rubric, nodes), \
            Reference(strategy, nodes, rubric)
    cls = {"Prioritized": lighthouse.PrioritizedDistributor,
           "RoundRobin": lighthouse.RoundRobinDistributor}[strategy]
    return cls.from_list(nodes), Reference(strategy, nodes)


def assert_same_state(distributor, reference):
    ours = {state.name: ({k: exact(v) for k, v in state.remaining.items()},
                         list(state.workloads), state.cordoned)
            for state in distributor.node_states()}
    assert ours == reference.state()
    assert list(ours) == list(reference.state())
    assert distributor.assignments == reference.assignments()
    if reference.strategy == "RoundRobin":  # (where the next search starts)
        machines = len(reference.machines)
        assert distributor.cursor == (reference.cursor % machines if machines else 0)


def concrete(step, placed, nodes):
    """Resolve a drawn step into an operation with names, from the current state."""
    kind, argument = step
    if kind in ("assign", "all_or_nothing", "add"):
        return kind, argument
    if kind == "release":
        return kind, argument.sample(sorted(placed), argument.randint(0, len(placed)))
    if not nodes:
        return "nothing", None
    if kind == "remove":
        return kind, argument.sample(nodes, argument.randint(1, min(2, len(nodes))))
    if kind == "record":
        rng, prefix = argument
        return kind, (rng.choice(nodes), rng.randrange(1 << 30), prefix)
    return kind, argument.choice(nodes)


def run(operation, distributor):
    kind, argument = operation
    if kind in ("assign", "all_or_nothing"):
        return distributor.attempt_assign_loads(
            argument, all_or_nothing=kind == "all_or_nothing")
    if kind == "record":  # (workloads already running there, no fit check)
        node, seed, prefix = argument
        return distributor.record_running(node, recorded_specs(
            distributor.node_state(node).capacity, seed, prefix))
    method = {"release": "release_loads", "add": "add_nodes",
              "remove": "remove_nodes"}.get(kind, kind)
    return None if kind == "nothing" else getattr(distributor, method)(argument)


def run_reference(operation, reference):
    kind, argument = operation
    if kind in ("assign", "all_or_nothing"):
        return reference.assign(argument, all_or_nothing=kind == "all_or_nothing")
    if kind == "record":  # (the same workloads as ``run`` records)
        node, seed, prefix = argument
        return reference.record(node, recorded_specs(
            reference.machine(node).capacity, seed, prefix))
    return None if kind == "nothing" else getattr(reference, kind)(argument)


def step_both(step, distributor, reference):
    operation = concrete(step, reference.assignments(), [m.name for m in reference.machines])
    return operation, run(operation, distributor), run_reference(operation, reference)


@settings(max_examples=150, deadline=None)
@given(strategy=STRATEGIES, nodes=clusters(), rubric=RUBRICS, first=batches("w"))
def test_one_call_matches_reference(strategy, nodes, rubric, first):
    distributor, reference = build(strategy, nodes, rubric)
    result = distributor.attempt_assign_loads(first)
    expected = reference.assign(first)
    assert result == expected
    assert list(result) == [spec["name"] for spec in first]
    assert_same_state(distributor, reference)


@settings(max_examples=150, deadline=None)
@given(strategy=STRATEGIES, nodes=clusters(), rubric=RUBRICS, steps=operations())
def test_lifecycle_sequences_match_reference(strategy, nodes, rubric, steps):
    distributor, reference = build(strategy, nodes, rubric)
    for step in steps:
        operation, ours, theirs = step_both(step, distributor, reference)
        assert ours == theirs, operation
        if ours is not None and not isinstance(ours, (str, type(None))):
            assert list(ours) == list(theirs)
        assert_same_state(distributor, reference)


@settings(max_examples=100, deadline=None)
@given(strategy=STRATEGIES, nodes=clusters(), rubric=RUBRICS,
       before=operations(max_steps=5), after=operations(max_steps=5, prefix="t"))
def test_restored_snapshot_decides_like_the_original(strategy, nodes, rubric, before, after):
    distributor, reference = build(strategy, nodes, rubric)
    for step in before:
        step_both(step, distributor, reference)
    snapshot = json.loads(json.dumps(distributor.to_dict()))
    restored = lighthouse.Distributor.from_dict(snapshot)
    assert type(restored) is type(distributor)
    assert restored.to_dict() == distributor.to_dict()
    for step in after:
        operation, ours, _ = step_both(step, distributor, reference)
        assert run(operation, restored) == ours, operation
        assert restored.to_dict() == distributor.to_dict()


@settings(max_examples=150, deadline=None)
@given(strategy=STRATEGIES, nodes=clusters(), rubric=RUBRICS, first=batches("w"),
       probes=batches("p", max_size=4))
def test_explain_names_the_node_the_reference_would_choose(strategy, nodes, rubric, first,
                                                           probes):
    distributor, reference = build(strategy, nodes, rubric)
    distributor.attempt_assign_loads(first)
    reference.assign(first)
    for probe in probes:
        expected = reference.choose(Load(probe))
        explanation = distributor.explain(probe)
        assert explanation.choice == (None if expected is None else expected.name)
        assert set(explanation.fits + explanation.averse) | set(explanation.reasons) == \
            {m.name for m in reference.machines}
