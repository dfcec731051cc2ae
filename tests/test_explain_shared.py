"""Shared explanations (Distributor.explain_all, problem.solve) against the unshared path.

Workloads of one shape share one pass over the nodes; every explanation they
get must equal the one computed for that workload alone.
"""
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

import pylighthouse as lighthouse
from instances import RUBRICS, batches, clusters
from pylighthouse.fit import check_fit
from pylighthouse.problem import load_problem, solve

STRATEGIES = st.sampled_from(["Prioritized", "RoundRobin", "BinPack"])


def build(strategy, nodes, rubric):
    if strategy == "BinPack":
        return lighthouse.BinPackDistributor(rubric, nodes)
    return lighthouse.distributors.distributor_class(strategy)(nodes)


@st.composite
def repeated_shapes(draw, prefix):
    """Workloads drawn as a few shapes, each repeated under new names and,
    sometimes, other aversion groups."""
    shapes = draw(batches(f"{prefix}-shape", max_size=4))
    loads = []
    for index in range(draw(st.integers(0, 12))) if shapes else ():
        spec = dict(draw(st.sampled_from(shapes)))
        spec["name"] = f"{prefix}-{index}"
        if draw(st.booleans()):
            spec["aversion_groups"] = draw(st.lists(st.sampled_from(["a", "b", "c"]),
                                                    max_size=2, unique=True))
        loads.append(spec)
    return loads


@settings(max_examples=120, deadline=None)
@given(strategy=STRATEGIES, nodes=clusters(), rubric=RUBRICS, first=batches("w"),
       probes=repeated_shapes("p"), cordon=st.integers(0, 6))
def test_explain_all_equals_explaining_each_alone(strategy, nodes, rubric, first, probes,
                                                  cordon):
    distributor = build(strategy, nodes, rubric)
    distributor.attempt_assign_loads(first)
    if cordon < len(nodes):
        distributor.cordon(nodes[cordon]["name"])
    shared = distributor.explain_all(probes)
    assert list(shared) == [probe["name"] for probe in probes]
    for probe in probes:
        alone = distributor.explain(probe)
        assert shared[probe["name"]] == alone
        assert str(shared[probe["name"]]) == str(alone)
        assert shared[probe["name"]].summary() == alone.summary()


@settings(max_examples=80, deadline=None)
@given(strategy=STRATEGIES, nodes=clusters(), rubric=RUBRICS, loads=repeated_shapes("w"),
       partial=st.booleans())
def test_solve_explains_each_unplaced_workload_as_alone(strategy, nodes, rubric, loads,
                                                        partial):
    problem = load_problem({"nodes": nodes, "workloads": loads, "strategy": strategy,
                            "rubric": rubric})
    outcome = solve(problem, partial=partial)
    # The unshared path: the same placement, each leftover explained alone.
    distributor = build(strategy, nodes, rubric)
    result = distributor.attempt_assign_loads(loads)
    if partial:
        assert outcome.assignments == result
        assert outcome.successful == all(node is not None for node in result.values())
        expected = {load["name"]: str(distributor.explain(load))
                    for load in loads if result[load["name"]] is None}
        assert outcome.unplaced == expected
    else:
        stuck = [name for name, node in result.items() if node is None]
        assert outcome.successful == (not stuck)
        assert outcome.to_dict()["assignments"] == ({} if stuck else result)
        for load in loads:
            if load["name"] in stuck:
                assert outcome.unplaced[load["name"]] == str(distributor.explain(load))
            elif stuck:
                assert outcome.unplaced[load["name"]].startswith("held back")
        assert bool(outcome.unplaced) == bool(stuck)


def test_all_or_nothing_decides_success_without_computing_reasons(monkeypatch):
    problem = load_problem({"nodes": [{"name": "n", "resources": {"cpu": 1}}],
                            "workloads": [{"name": "a", "requirements": {"cpu": 1}},
                                          {"name": "b", "requirements": {"cpu": 1}}]})
    calls = []
    for method in ("explain_all", "_nowhere_lines"):
        real = getattr(lighthouse.Distributor, method)
        monkeypatch.setattr(lighthouse.Distributor, method,
                            lambda self, loads, real=real: calls.append(loads) or real(self, loads))
    outcome = solve(problem, partial=False)
    assert outcome.to_dict() == {"successful": False, "assignments": {}}
    assert not outcome.successful and calls == []
    assert outcome.unplaced == {
        "a": "held back: the call is all-or-nothing and 1 workload found no node",
        "b": "0/1 nodes fit: 1 insufficient cpu (needs 1, most left 0)"}
    assert len(calls) == 1


def test_a_reason_keeps_the_quantities_as_written():
    # Reasons are reused between calls; equal quantities written differently
    # (2 and 2.0) must still come back as written.
    load = lighthouse.Workload("w", {"cpu": Decimal("2.00")})
    whole = check_fit({"cpu": Decimal("1")}, load)
    again = check_fit({"cpu": Decimal("1.0")}, lighthouse.Workload("v", {"cpu": Decimal("2")}))
    assert str(whole.needed) == "2.00" and str(whole.left) == "1"
    assert str(again.needed) == "2" and str(again.left) == "1.0"


@settings(max_examples=80, deadline=None)
@given(strategy=STRATEGIES, nodes=clusters(), rubric=RUBRICS, first=batches("w"),
       probes=repeated_shapes("p"))
def test_the_lines_of_solve_equal_explaining_each_alone_even_where_nodes_fit(
        strategy, nodes, rubric, first, probes):
    from pylighthouse.problem import _reasons
    distributor = build(strategy, nodes, rubric)
    distributor.attempt_assign_loads(first)
    loads = lighthouse.Workload.from_list(probes)
    assert _reasons(distributor, loads) == {
        load.name: str(distributor.explain(load)) for load in loads}


def _written_otherwise(value):
    """A finite number as a Decimal with one more digit (2 as 2.0)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
        return value
    number = Decimal(str(value))
    return number + Decimal("0.0") if number.is_finite() else value


def copied_nodes(kinds, copies, rewrite, other=None):
    """``copies`` copies of each node of ``kinds`` (named ``<name>-<copy>``):
    with ``rewrite``, every second copy has its quantities written otherwise
    (2 as 2.0); else ``other(copy, resources)``, if given, may give a copy
    other quantities."""
    nodes = []
    for copy in range(copies):
        for kind in kinds:
            resources = dict(kind["resources"])
            if rewrite and copy % 2:
                resources = {key: _written_otherwise(value) for key, value in resources.items()}
            elif other is not None:
                resources = other(copy, resources)
            nodes.append(dict(kind, name=f"{kind['name']}-{copy}", resources=resources))
    return nodes


def _reason_lines(explanation):
    return {name: (str(reason), repr(reason.left)) for name, reason in explanation.reasons.items()}


@settings(max_examples=80, deadline=None)
@given(strategy=STRATEGIES, kinds=clusters(max_nodes=3), copies=st.integers(2, 4),
       rubric=RUBRICS, first=batches("w"), probes=repeated_shapes("p"),
       cordon=st.integers(0, 8), rewrite=st.booleans())
def test_nodes_in_one_state_share_a_fit_check_and_keep_their_own_reasons(
        strategy, kinds, copies, rubric, first, probes, cordon, rewrite):
    # Copies of a few nodes, some with their quantities written otherwise
    # (2 as 2.0): nodes left alike share one fit check in explain_all, and
    # each must still get exactly the reasons it gets explained alone.
    nodes = copied_nodes(kinds, copies, rewrite)
    distributor = build(strategy, nodes, rubric)
    distributor.attempt_assign_loads(first)
    if cordon < len(nodes):
        distributor.cordon(nodes[cordon]["name"])
    shared = distributor.explain_all(probes)
    for probe in probes:
        alone = distributor.explain(probe)
        assert shared[probe["name"]] == alone
        assert _reason_lines(shared[probe["name"]]) == _reason_lines(alone)
        assert str(shared[probe["name"]]) == str(alone)


def test_equal_quantities_written_otherwise_keep_their_own_reason():
    distributor = lighthouse.PrioritizedDistributor.from_list([
        {"name": "a", "resources": {"cpu": Decimal("1")}},
        {"name": "b", "resources": {"cpu": Decimal("1.0")}},
        {"name": "c", "resources": {"cpu": Decimal("1")}}])
    explained = distributor.explain_all([{"name": "x", "requirements": {"cpu": 2}},
                                         {"name": "y", "requirements": {"cpu": 3}}])
    assert {name: str(reason.left) for name, reason in explained["x"].reasons.items()} == {
        "a": "1", "b": "1.0", "c": "1"}
    assert str(explained["y"].reasons["b"].left) == "1.0"


def test_equal_quantities_written_differently_keep_their_own_words():
    # 0.1000000000000000000001 and 0.10000000000000000000010 are equal, but
    # each workload's line shows its quantity as it was written, shared or not.
    text = ('{"nodes": [{"name": "n", "resources": {"cpu": 0.01}}], "partial": true,'
            ' "workloads": [{"name": "a", "requirements": {"cpu": 0.1000000000000000000001}},'
            ' {"name": "b", "requirements": {"cpu": 0.10000000000000000000010}}]}')
    problem = load_problem(text)
    distributor = lighthouse.PrioritizedDistributor(problem.nodes)
    alone = {load.name: str(distributor.explain(load)) for load in problem.workloads}
    assert alone["a"] != alone["b"]
    assert "needs 0.10000000000000000000010," in alone["b"]
    for order in (problem.workloads, problem.workloads[::-1]):
        shared = distributor.explain_all(order)
        assert {name: str(explanation) for name, explanation in shared.items()} == alone
    assert dict(solve(problem).unplaced) == alone


def test_a_workload_left_out_before_room_was_given_back_is_told_where_it_fits_now():
    # "big" finds no room; "giver", placed after it, asks less than zero and
    # frees room: the line of "big" is that of explaining it after the call.
    problem = load_problem({"nodes": [{"name": "n", "resources": {"cpu": 1}}], "partial": True,
                            "workloads": [{"name": "big", "requirements": {"cpu": 2}},
                                          {"name": "giver", "requirements": {"cpu": -5}}]})
    outcome = solve(problem)
    assert outcome.assignments == {"big": None, "giver": "n"}
    after = lighthouse.PrioritizedDistributor(problem.nodes)
    after.attempt_assign_loads([problem.workloads[1]])
    assert dict(outcome.unplaced) == {"big": str(after.explain(problem.workloads[0]))}
    assert outcome.unplaced["big"] == "1/1 nodes fit"


def test_the_answer_counts_one_line_per_requirements_and_immunities(monkeypatch):
    # Equal requirements are one map in the model: workloads asking alike,
    # immune to the same, are counted once and share the line.
    problem = load_problem({
        "nodes": [{"name": "n", "resources": {"cpu": 1}}], "partial": True,
        "workloads": [{"name": f"w{index}", "requirements": {"cpu": 2, "mem": 1}}
                      for index in range(3)]
        + [{"name": "x", "requirements": {"cpu": 3}},
           {"name": "y", "requirements": {"cpu": 2, "mem": 1}, "immunities": ["mem"]}]})
    counted = []
    real = lighthouse.Distributor._nowhere_lines
    monkeypatch.setattr(lighthouse.Distributor, "_nowhere_lines",
                        lambda self, loads: counted.append([load.name for load in loads])
                        or real(self, loads))
    outcome = solve(problem)
    assert counted == [["w0", "x", "y"]]
    assert outcome.unplaced == {
        "w0": "0/1 nodes fit: 1 missing resource mem",
        "w1": "0/1 nodes fit: 1 missing resource mem",
        "w2": "0/1 nodes fit: 1 missing resource mem",
        "x": "0/1 nodes fit: 1 insufficient cpu (needs 3, most left 1)",
        "y": "0/1 nodes fit: 1 missing resource mem"}
