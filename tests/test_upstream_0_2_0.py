"""What the 0.2.0 test suite checked, written in this version's API.

The 0.2.0 suite placed workloads on mutable nodes directly
(``attempt_attach``, ``detach_all``) and compared nodes through their
``__dict__``; here the same behaviours are checked through a distributor,
its node states, and the node values, which never change. Each test names
the behaviour it keeps; the strategies are the three of 0.2.0 (BinPack
with every non-negative resource weighing 1, as that suite did). The
manual's first example, which that suite ran too, is in test_distributors.
"""
import pytest

import pylighthouse.pylighthouse as lighthouse
from pylighthouse import (BinPackDistributor, LighthouseException, Node,
                          PrioritizedDistributor, RoundRobinDistributor, Workload, check_fit)
from pylighthouse.errors import RemovedAPIError

GOOD = {"name": "good", "requirements": {"cpu": 38, "mem": 24}}


def rubric_of(nodes):
    return {key: 1 for node in nodes for key, value in node.resources.items() if value >= 0}


def each_strategy(nodes, rubric=None):
    nodes = lighthouse.Node.from_list(nodes)
    return [PrioritizedDistributor.from_list(nodes), RoundRobinDistributor.from_list(nodes),
            BinPackDistributor.from_list(rubric_of(nodes) if rubric is None else rubric, nodes)]


def placed_alone(node, workload):
    """Place ``workload`` on a cluster of ``node`` alone with every strategy;
    return the node each put it on, after checking the fit rule agrees and
    that releasing gives every resource back exactly."""
    node = Node.from_dict(node)
    load = Workload.from_dict(workload)
    fits = check_fit(node.resources, load) is None
    found = set()
    for distributor in each_strategy([node]):
        result = distributor.attempt_assign_loads([load])
        found.add(result[load.name])
        if result[load.name] is not None:
            assert distributor.release_loads([load.name]) == {load.name: node.name}
        state = distributor.node_state(node.name)
        assert state.remaining == state.capacity and state.workloads == ()
    assert found == {node.name if fits else None}
    return found.pop()


def test_no_nodes_place_nothing():
    for distributor in each_strategy([], rubric={}):
        assert distributor.attempt_assign_loads([GOOD]) == {"good": None}


def test_the_standard_case_books_the_first_node():
    distributor = PrioritizedDistributor.from_list(
        [{"name": "first", "resources": {"cpu": 40, "mem": 80}},
         {"name": "second", "resources": {"cpu": 20, "mem": 40}}])
    assert distributor.attempt_assign_loads([GOOD]) == {"good": "first"}
    first, second = distributor.node_states()
    assert (first.remaining, first.workloads) == ({"cpu": 2, "mem": 56}, ("good",))
    assert (second.remaining, second.workloads) == ({"cpu": 20, "mem": 40}, ())
    assert distributor.workload("good") == Workload.from_dict(GOOD)
    # The nodes themselves are values: their capacities never change.
    assert distributor.nodes == Node.from_list(
        [{"name": "first", "resources": {"cpu": 40, "mem": 80}},
         {"name": "second", "resources": {"cpu": 20, "mem": 40}}])


def test_distributors_are_stateful():
    distributor = PrioritizedDistributor.from_list([{"name": "parent",
                                                     "resources": {"patience": 1}}])
    kid = {"requirements": {"patience": 1}}
    assert distributor.attempt_assign_loads([dict(kid, name="kid-a")]) == {"kid-a": "parent"}
    assert distributor.attempt_assign_loads([dict(kid, name="kid-b")]) == {"kid-b": None}


@pytest.mark.parametrize("resources", [{"cpu": 10, "mem": 10}, {"disk": 40}, {}],
                         ids=["too-small", "other-resources", "no-resources"])
def test_a_workload_too_big_or_needing_what_a_node_lacks_goes_nowhere(resources):
    assert placed_alone({"name": "mynode", "resources": resources}, GOOD) is None


def test_a_workload_requiring_nothing_goes_anywhere():
    assert placed_alone({"name": "mynode", "resources": {"cpu": 10, "mem": 10}},
                        {"name": "vacuous", "requirements": {}}) == "mynode"


def test_placement_strategies_on_the_consistent_data():
    nodes = [{"name": "node-1", "resources": {"cpu": 8, "mem": 8, "disk": 80}},
             {"name": "node-2", "resources": {"cpu": 8, "mem": 8, "disk": 80}},
             {"name": "node-3", "resources": {"cpu": 8, "mem": 8, "disk": 60}}]
    loads = [{"name": f"req-{i}", "requirements": {"cpu": 2, "mem": 2, "disk": 10}}
             for i in (1, 2, 3)]
    prioritized, round_robin, binpack = each_strategy(
        nodes, rubric={"cpu": 1, "mem": 0.5, "disk": 0.025})
    assert prioritized.attempt_assign_loads(loads) == dict.fromkeys(
        ["req-1", "req-2", "req-3"], "node-1")
    assert round_robin.attempt_assign_loads(loads) == \
        {"req-1": "node-1", "req-2": "node-2", "req-3": "node-3"}
    assert binpack.attempt_assign_loads(loads) == dict.fromkeys(
        ["req-1", "req-2", "req-3"], "node-3")


OLD_HOUSE = {"name": "oldhouse", "resources": {"room": 1, "board": 1, "spiders": -float("inf")}}
BOARDER = {"name": "boarder", "requirements": {"room": 1, "board": 1}}


def test_a_ward_keeps_workloads_off():
    assert placed_alone(OLD_HOUSE, BOARDER) is None


def test_an_immunity_lets_a_workload_past_a_ward():
    assert placed_alone(OLD_HOUSE, dict(BOARDER, immunities={"spiders"})) == "oldhouse"


def test_an_immunity_lets_a_workload_take_more_than_there_is():
    house = {"name": "oldhouse", "resources": {"room": 1, "board": 1}}
    boarder = {"name": "boarder", "requirements": {"room": 4, "board": 1},
               "immunities": ["room"]}
    assert placed_alone(house, boarder) == "oldhouse"
    distributor = PrioritizedDistributor.from_list([house])
    distributor.attempt_assign_loads([boarder])
    assert distributor.node_state("oldhouse").remaining == {"room": -3, "board": 0}


def test_a_shortcoming_needs_a_large_enough_offset():
    house = {"name": "oldhouse", "resources": {"room": 1, "board": 1, "spiders": -5}}
    short = {"name": "boarder", "requirements": {"room": 1, "board": 1, "spiders": -4}}
    assert placed_alone(house, short) is None
    enough = {"name": "boarder", "requirements": {"room": 1, "board": 1, "spiders": -5}}
    assert placed_alone(house, enough) == "oldhouse"


def test_a_tag_is_a_zero_quantity_every_strategy_honours():
    princes = [{"name": "phillip", "resources": {"bravery": 25, "kindness": 25}},
               {"name": "charming", "resources": {"bravery": 25, "kindness": 25,
                                                  "nice-castle": 0}}]
    snow_white = [{"name": "snow-white", "requirements": {"nice-castle": 0}}]
    for distributor in each_strategy(princes):
        assert distributor.attempt_assign_loads(snow_white) == {"snow-white": "charming"}
    untagged = [dict(princes[1], resources={"bravery": 25, "kindness": 25}), princes[0]]
    for distributor in each_strategy(untagged):
        assert distributor.attempt_assign_loads(snow_white) == {"snow-white": None}


def test_a_semaphore_counts_workloads_and_binpack_ties_go_by_name():
    prince = [{"name": "prince", "resources": {"bravery": 25, "kindness": 25,
                                               "nice-castle": 0, "wife": 1}}]
    princesses = [{"name": name, "requirements": {"bravery": 12, "nice-castle": 0, "wife": 1}}
                  for name in ("cinderella", "buttercup", "aurora")]
    prioritized, round_robin, binpack = each_strategy(prince)
    assert prioritized.attempt_assign_loads(princesses) == \
        {"cinderella": "prince", "buttercup": None, "aurora": None}
    assert round_robin.attempt_assign_loads(princesses[::-1]) == \
        {"aurora": "prince", "buttercup": None, "cinderella": None}
    # Equal scores: BinPack takes them by name, whatever order they come in.
    assert binpack.attempt_assign_loads(princesses) == \
        {"cinderella": None, "buttercup": None, "aurora": "prince"}


def test_aversion_groups_spread_workloads_while_there_is_room():
    houses = [{"name": "house-1", "resources": {"bathroom": 25, "bedroom": 10, "kitchen": 10}},
              {"name": "house-2", "resources": {"bathroom": 25, "bedroom": 10, "kitchen": 15}}]
    students = [{"name": f"college-student-{i}",
                 "requirements": {"bathroom": 5, "bedroom": 2, "kitchen": 2},
                 "aversion_groups": ["north_south_rivalry"]} for i in (1, 2)]
    for distributor in each_strategy(houses):
        assert distributor.attempt_assign_loads(students) == \
            {"college-student-1": "house-1", "college-student-2": "house-2"}
    for distributor in each_strategy(houses[:1]):
        assert distributor.attempt_assign_loads(students) == \
            {"college-student-1": "house-1", "college-student-2": "house-1"}


@pytest.mark.parametrize("old", ["attempt_attach", "attempt_attach_amicable", "detach_all",
                                 "assigned_workloads", "has_averse_loads", "add_ward"])
def test_the_old_node_methods_say_what_to_use_instead(old):
    node = Node("n", {"cpu": 1})
    with pytest.raises(RemovedAPIError) as caught:
        getattr(node, old)
    assert isinstance(caught.value, LighthouseException)
    assert f"Node.{old}" in str(caught.value) and "distributor" in str(caught.value) \
        or "Node(" in str(caught.value)
    assert not hasattr(node, old)  # still an AttributeError for duck typing
    assert getattr(node, old, None) is None


def test_a_node_dict_carrying_assigned_workloads_says_what_to_do():
    with pytest.raises(LighthouseException, match="node 'n': .*record_running"):
        Node.from_dict({"name": "n", "resources": {}, "assigned_workloads": {"w": None}})
    with pytest.raises(LighthouseException, match="node 'n': .*record_running"):
        Node("n", {}, {"w": None})
    with pytest.raises(LighthouseException, match="nodes\\[1\\]: .*record_running"):
        Node.from_list([{"name": "m", "resources": {}},
                        {"name": "n", "resources": {}, "assigned_workloads": ["w"]}])


def test_an_empty_assigned_workloads_is_taken_as_0_2_0_took_it():
    # (0.2.0 code built nodes with it empty: a TypeError, or an error asking
    # to record workloads when there were none to record)
    expected = Node("n", {"cpu": 2})
    assert Node("n", {"cpu": 2}, {}) == expected
    assert Node("n", {"cpu": 2}, assigned_workloads=None) == expected
    assert Node.from_dict({"name": "n", "resources": {"cpu": 2}, "assigned_workloads": {}}) \
        == expected
    assert Node.from_list([{"name": "n", "resources": {"cpu": 2}, "assigned_workloads": []}]) \
        == [expected]


@pytest.mark.parametrize("old", ["rubric", "keys_rubric", "size", "sort_workloads"])
def test_the_old_rubric_names_say_what_to_use_instead(old):
    rubric = BinPackDistributor.from_list({"cpu": 1}, []).rubric
    with pytest.raises(RemovedAPIError, match=f"Rubric.{old} was a 0.2.0 name") as caught:
        getattr(rubric, old)
    assert "weights" in str(caught.value) or "sorted(" in str(caught.value)
    assert not hasattr(rubric, old)


def test_an_except_clause_naming_the_0_2_0_rubric_exception_still_runs():
    try:
        lighthouse.BinPackDistributor.from_list({"cpu": "heavy"}, [])
    except lighthouse.LighthouseRubricException:  # (never raised, as in 0.2.0)
        raise AssertionError("not a rubric exception")
    except lighthouse.LighthouseException as error:
        assert "rubric" in str(error)
    assert issubclass(lighthouse.LighthouseRubricException, lighthouse.LighthouseException)


def test_empty_names_are_refused_with_the_field_named():
    with pytest.raises(LighthouseException, match="name must not be empty"):
        Node.from_dict({"name": "", "resources": {}})
    with pytest.raises(LighthouseException, match="name must not be empty"):
        Workload.from_dict({"name": "", "requirements": {}})


def test_the_old_distributor_attributes_say_what_to_use_instead():
    with pytest.raises(RemovedAPIError, match="cursor"):
        RoundRobinDistributor.from_list([]).next
    with pytest.raises(RemovedAPIError, match="rubric.score"):
        BinPackDistributor.from_list({"cpu": 1}, []).scores
    with pytest.raises(RemovedAPIError, match="the weights are in weights"):
        BinPackDistributor.from_list({"cpu": 1}, []).rubric.rubric
