"""The three strategies: the documented examples, statefulness, errors, properties."""
import copy
from decimal import Decimal
from math import inf

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pylighthouse.pylighthouse as lighthouse
from pylighthouse import (BinPackDistributor, Distributor, DuplicateNameError,
                          InvalidInputError, InvalidTypeError, PrioritizedDistributor,
                          RoundRobinDistributor)
from pylighthouse.distributors import distributor_class
import reference
from instances import RUBRICS, batches, clusters

RUBRIC = {"cpu": 1, "mem": 0.5, "disk": 0.025}
STRATEGY_NODES = [{"name": "node-1", "resources": {"cpu": 8, "mem": 8, "disk": 80}},
                  {"name": "node-2", "resources": {"cpu": 8, "mem": 8, "disk": 80}},
                  {"name": "node-3", "resources": {"cpu": 8, "mem": 8, "disk": 60}}]
STRATEGY_LOADS = [{"name": f"req-{i}", "requirements": {"cpu": 2, "mem": 2, "disk": 10}}
                  for i in (1, 2, 3)]
TOUR_NODES = [{"name": "node-1", "resources": {"cpu": 2, "mem": 8, "disk": 60}},
              {"name": "node-2", "resources": {"cpu": 6, "mem": 6, "disk": 20}},
              {"name": "node-3", "resources": {"cpu": 4, "mem": 2, "disk": 40}}]
TOUR_LOADS = [{"name": "req-1", "requirements": {"cpu": 1, "mem": 2, "disk": 10}},
              {"name": "req-2", "requirements": {"cpu": 3, "mem": 2, "disk": 5}},
              {"name": "req-3", "requirements": {"cpu": 2, "mem": 4, "disk": 50}}]


def every_strategy(nodes):
    return [PrioritizedDistributor.from_list(nodes), RoundRobinDistributor.from_list(nodes),
            BinPackDistributor.from_list(RUBRIC, nodes)]


def test_strategy_examples_of_the_spec():
    nodes = lighthouse.Node.from_list(STRATEGY_NODES)
    loads = lighthouse.Workload.from_list(STRATEGY_LOADS)
    assert lighthouse.PrioritizedDistributor.from_list(nodes).attempt_assign_loads(loads) == \
        {"req-1": "node-1", "req-2": "node-1", "req-3": "node-1"}
    assert lighthouse.RoundRobinDistributor.from_list(nodes).attempt_assign_loads(loads) == \
        {"req-1": "node-1", "req-2": "node-2", "req-3": "node-3"}
    assert lighthouse.BinPackDistributor.from_list(RUBRIC, nodes).attempt_assign_loads(
        loads) == {"req-1": "node-3", "req-2": "node-3", "req-3": "node-3"}


def test_tour_examples_of_the_spec():
    binpack = BinPackDistributor.from_list(RUBRIC, TOUR_NODES).attempt_assign_loads(TOUR_LOADS)
    assert binpack == {"req-1": "node-2", "req-2": "node-3", "req-3": "node-1"}
    assert list(binpack) == ["req-1", "req-2", "req-3"]  # the caller's order
    assert PrioritizedDistributor.from_list(TOUR_NODES).attempt_assign_loads(TOUR_LOADS) == \
        {"req-1": "node-1", "req-2": "node-2", "req-3": None}


def test_basic_scheduling_example_of_the_manual():
    distributor = lighthouse.PrioritizedDistributor.from_list(nodes=lighthouse.Node.from_list([
        {"name": "cluster-member-1", "resources": {"cpu": 6, "mem": 12, "disk": 50}},
        {"name": "cluster-member-2", "resources": {"cpu": 4, "mem": 16, "disk": 40}},
        {"name": "cluster-member-3", "resources": {"cpu": 0.7, "mem": 1.3, "disk": 17}}]))
    assert distributor.attempt_assign_loads(lighthouse.Workload.from_list([
        {"name": "vm-1", "requirements": {"cpu": 0.2, "mem": 0.1}},
        {"name": "vm-2", "requirements": {"cpu": 0.3, "mem": 0.3, "disk": 1}}])) == \
        {"vm-1": "cluster-member-1", "vm-2": "cluster-member-1"}


def test_distributors_remember_earlier_calls():
    parent = lighthouse.Node.from_list([{"name": "parent", "resources": {"patience": 1}}])
    a = lighthouse.Workload.from_dict({"name": "kid-a", "requirements": {"patience": 1}})
    b = lighthouse.Workload.from_dict({"name": "kid-b", "requirements": {"patience": 1}})
    distributor = lighthouse.PrioritizedDistributor.from_list(parent)
    assert distributor.attempt_assign_loads([a]) == {"kid-a": "parent"}
    assert distributor.attempt_assign_loads([b]) == {"kid-b": None}


def test_tags_semaphores_wards_and_aversion_as_in_the_manual():
    princes = [{"name": "phillip", "resources": {"bravery": 25, "kindness": 25}},
               {"name": "charming", "resources": {"bravery": 25, "kindness": 25,
                                                  "nice-castle": 0}}]
    snow_white = [{"name": "snow-white", "requirements": {"nice-castle": 0}}]
    for distributor in every_strategy(princes):
        assert distributor.attempt_assign_loads(snow_white) == {"snow-white": "charming"}
    for distributor in every_strategy(princes[:1]):
        assert distributor.attempt_assign_loads(snow_white) == {"snow-white": None}

    prince = [{"name": "prince", "resources": {"bravery": 25, "kindness": 25,
                                               "nice-castle": 0, "wife": 1}}]
    princesses = [{"name": name, "requirements": {"bravery": 12, "nice-castle": 0, "wife": 1}}
                  for name in ("aurora", "buttercup", "cinderella")]
    for distributor in every_strategy(prince):
        assert distributor.attempt_assign_loads(princesses) == \
            {"aurora": "prince", "buttercup": None, "cinderella": None}

    warded = [{"name": "node1", "resources": {"spiders": -float("inf"), "flies": -5.0}}]
    loads = [{"name": "plain", "requirements": {}},
             {"name": "offset", "requirements": {"flies": -5.0}},
             {"name": "immune", "requirements": {"flies": -5.0}, "immunities": {"spiders"}}]
    for distributor in every_strategy(warded):
        assert distributor.attempt_assign_loads(loads) == \
            {"plain": None, "offset": None, "immune": "node1"}

    houses = [{"name": "house-1", "resources": {"bathroom": 25, "bedroom": 10, "kitchen": 10}},
              {"name": "house-2", "resources": {"bathroom": 25, "bedroom": 10, "kitchen": 15}}]
    students = [{"name": f"college-student-{i}",
                 "requirements": {"bathroom": 5, "bedroom": 2, "kitchen": 2},
                 "aversion_groups": ["north_south_rivalry"]} for i in (1, 2)]
    for distributor in every_strategy(houses)[:2]:
        assert distributor.attempt_assign_loads(students) == \
            {"college-student-1": "house-1", "college-student-2": "house-2"}
    for distributor in every_strategy(houses[:1]):
        assert distributor.attempt_assign_loads(students) == \
            {"college-student-1": "house-1", "college-student-2": "house-1"}


def test_exact_decimals_take_exactly_three_tenths():
    for distributor in every_strategy([{"name": "n", "resources": {"cpu": 0.3}}]):
        result = distributor.attempt_assign_loads(
            [{"name": f"w{i}", "requirements": {"cpu": 0.1}} for i in range(4)])
        assert list(result.values()) == ["n", "n", "n", None]
        assert distributor.node_state("n").remaining == {"cpu": 0}


def test_round_robin_cursor_moves_past_the_chosen_node():
    nodes = [{"name": "a", "resources": {"cpu": 1}}, {"name": "b", "resources": {"cpu": 0}},
             {"name": "c", "resources": {"cpu": 5}}]
    distributor = RoundRobinDistributor.from_list(nodes)
    # a takes w1; the cursor is at b, which is full, so w2 goes to c; then the
    # search starts after c, wraps to a (full), b (full), c again.
    assert distributor.attempt_assign_loads(
        [{"name": f"w{i}", "requirements": {"cpu": 1}} for i in (1, 2, 3)]) == \
        {"w1": "a", "w2": "c", "w3": "c"}
    assert distributor.cursor == 0
    assert distributor.attempt_assign_loads([{"name": "big", "requirements": {"cpu": 9}}]) == \
        {"big": None}
    assert distributor.cursor == 0  # a failed search leaves the cursor


def test_binpack_orders_workloads_by_score_then_name_and_nodes_by_room_then_name():
    distributor = BinPackDistributor.from_list({"cpu": 1}, [
        {"name": "b", "resources": {"cpu": 4}}, {"name": "a", "resources": {"cpu": 4}}])
    assert distributor.attempt_assign_loads([
        {"name": "small", "requirements": {"cpu": 1}},
        {"name": "y-big", "requirements": {"cpu": 3}},
        {"name": "x-big", "requirements": {"cpu": 3}}]) == \
        {"small": "a", "y-big": "b", "x-big": "a"}


def test_binpack_ties_equal_scores_by_name_whatever_their_spelling():
    distributor = BinPackDistributor.from_list({"cpu": 1, "mem": 0.5}, [
        {"name": f"n{i}", "resources": {"cpu": 1, "mem": 2}} for i in range(4)])
    # 1 cpu, 1.0 cpu and 2 mem all score 1; an unscored tag changes nothing.
    loads = lighthouse.Workload.from_list([
        {"name": "d", "requirements": {"cpu": 1}},
        {"name": "c", "requirements": {"cpu": Decimal("1.0"), "tag": 0}},
        {"name": "e", "requirements": {"mem": 0.5}},
        {"name": "b", "requirements": {"mem": 2}},
        {"name": "a", "requirements": {"cpu": 1, "mem": -2}}])
    assert [load.name for load in distributor._sequence(loads)] == ["b", "c", "d", "e", "a"]
    assert [load.name for load in loads] == ["d", "c", "e", "b", "a"]


def test_the_first_name_taken_or_repeated_is_the_one_refused():
    distributor = PrioritizedDistributor.from_list(TOUR_NODES)
    distributor.attempt_assign_loads(TOUR_LOADS[:1])
    with pytest.raises(DuplicateNameError, match="^workload 'x': name given twice$"):
        distributor.attempt_assign_loads([{"name": "x"}, {"name": "x"}, TOUR_LOADS[0]])
    with pytest.raises(DuplicateNameError, match="^workload 'req-1': already placed on "
                       "node 'node-1'$"):
        distributor.attempt_assign_loads([{"name": "x"}, TOUR_LOADS[0], {"name": "x"}])


def test_binpack_needs_a_valid_rubric():
    with pytest.raises(InvalidTypeError, match=r"rubric\['cpu'\]: expected a number"):
        BinPackDistributor.from_list({"cpu": "heavy"}, [])
    with pytest.raises(InvalidInputError, match=r"rubric\['cpu'\]: must be finite"):
        BinPackDistributor.from_list({"cpu": float("inf")}, [])
    with pytest.raises(InvalidTypeError, match="use PrioritizedDistributor, "
                       "RoundRobinDistributor, BinPackDistributor or BestFitDistributor"):
        Distributor([])


def test_duplicate_names_are_refused_and_change_nothing():
    with pytest.raises(DuplicateNameError, match="node 'a': name given twice"):
        PrioritizedDistributor.from_list([{"name": "a"}, {"name": "a"}])
    for distributor in every_strategy(TOUR_NODES):
        distributor.attempt_assign_loads(TOUR_LOADS[:1])
        before = distributor.to_dict()
        with pytest.raises(DuplicateNameError, match="workload 'x': name given twice"):
            distributor.attempt_assign_loads([{"name": "x"}, {"name": "x"}])
        with pytest.raises(DuplicateNameError, match="workload 'req-1': already placed"):
            distributor.attempt_assign_loads([{"name": "new"}, TOUR_LOADS[0]])
        with pytest.raises(InvalidInputError, match="workload 'bad': requirements"):
            distributor.attempt_assign_loads(
                [{"name": "ok"}, {"name": "bad", "requirements": {"cpu": float("nan")}}])
        with pytest.raises(DuplicateNameError):
            distributor.add_nodes([{"name": "fresh"}, {"name": "node-1"}])
        assert distributor.to_dict() == before


def test_the_callers_data_is_never_changed():
    nodes = copy.deepcopy(TOUR_NODES)
    loads = copy.deepcopy(TOUR_LOADS) + [{"name": "g", "requirements": {"cpu": 0.5},
                                          "aversion_groups": {"x"}, "immunities": ["y"]}]
    frozen_nodes, frozen_loads = copy.deepcopy(nodes), copy.deepcopy(loads)
    for distributor in every_strategy(nodes):
        distributor.attempt_assign_loads(loads)
        distributor.release_loads(["req-1"])
        distributor.drain("node-1")
    assert nodes == frozen_nodes and loads == frozen_loads


@settings(max_examples=100, deadline=None)
@given(strategy=st.sampled_from(["Prioritized", "RoundRobin", "BinPack"]),
       nodes=clusters(), rubric=RUBRICS, first=batches("a"), second=batches("b"))
def test_properties_of_every_placement(strategy, nodes, rubric, first, second):
    def build():
        if strategy == "BinPack":
            return BinPackDistributor.from_list(rubric, nodes)
        cls = PrioritizedDistributor if strategy == "Prioritized" else RoundRobinDistributor
        return cls.from_list(nodes)

    distributor, twin = build(), build()
    results = [distributor.attempt_assign_loads(first), distributor.attempt_assign_loads(second)]
    # Same input, same output.
    assert results == [twin.attempt_assign_loads(first), twin.attempt_assign_loads(second)]
    placed = {w["name"]: w for w in first + second}
    for state in distributor.node_states():
        on_node = [placed[name] for name in state.workloads]
        immune = set().union(*(set(w.get("immunities", ())) for w in on_node))
        for key, left in state.remaining.items():
            # Once a node hosts workloads, none of its resources is below zero
            # unless one of them is immune to it (placements only, no releases).
            if on_node and key not in immune:
                assert left == float("inf") or Decimal(str(left)) >= 0
        for workload in on_node:
            for key in workload["requirements"]:
                assert key in state.capacity  # tags and every requirement are present
            for key, quantity in state.capacity.items():
                if quantity == float("-inf"):  # wards need an immunity
                    assert key in workload.get("immunities", ())


@given(st.dictionaries(st.sampled_from("abc"), st.integers(-3, 3)),
       st.dictionaries(st.sampled_from("abcd"), st.one_of(
           st.integers(-5, 5), st.sampled_from([inf, -inf]))))
def test_rubric_scores_like_the_reference_infinities_included(weights, quantities):
    got = lighthouse.Rubric(weights).score(lighthouse.Node("n", quantities).resources)
    expected = reference.score(weights, quantities)
    if expected == reference.UNDEFINED:
        assert got.is_nan()
    else:
        assert got == expected


def test_a_subclass_that_keeps_its_parents_strategy_name_does_not_take_it_over():
    class Local(lighthouse.PrioritizedDistributor):
        pass

    class Named(lighthouse.PrioritizedDistributor):
        strategy = "LocalTestStrategy"

    try:
        assert distributor_class("Prioritized") is lighthouse.PrioritizedDistributor
        assert distributor_class("localteststrategy") is Named
        assert Local.from_list([]).to_dict()["strategy"] == "Prioritized"
    finally:
        del Distributor._strategies["LocalTestStrategy"]
