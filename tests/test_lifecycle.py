"""Release, add, cordon, drain, remove, all-or-nothing, explain, utilization, snapshots."""
import decimal
import json
import re
from decimal import Decimal
from math import inf

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from pylighthouse import (BestFitDistributor, BinPackDistributor, Distributor, DuplicateNameError,
                          InvalidInputError, InvalidTypeError, LighthouseException, Node,
                          PrioritizedDistributor, RoundRobinDistributor, UnknownNameError)
from instances import RUBRICS, clusters, operations
from test_differential import concrete, run

NODES = [{"name": "a", "resources": {"cpu": 4, "mem": 8}},
         {"name": "b", "resources": {"cpu": 4, "mem": 8}},
         {"name": "c", "resources": {"cpu": 2, "mem": 2, "gpu": 1}}]


def loads(*specs):
    return [{"name": name, "requirements": {"cpu": cpu}} for name, cpu in specs]


def test_release_returns_resources_exactly():
    distributor = PrioritizedDistributor.from_list([{"name": "n", "resources": {"cpu": 0.3}}])
    distributor.attempt_assign_loads(loads(("x", 0.1), ("y", 0.1), ("z", 0.1)))
    assert distributor.release_loads(["y", "x"]) == {"y": "n", "x": "n"}
    assert distributor.release_loads("z") == {"z": "n"}
    assert distributor.node_state("n").remaining == {"cpu": 0.3}
    assert distributor.assignments == {}


def test_a_node_given_back_all_it_gave_reads_as_written():
    # (0.3...01 less 0.1...010 plus it again was 0.3...010: equal, but the
    # reasons printed a number the caller never wrote)
    capacity = Decimal("0.3000000000000000000001")
    distributor = PrioritizedDistributor([{"name": "n", "resources": {"cpu": capacity}}])
    distributor.attempt_assign_loads(
        [{"name": "w", "requirements": {"cpu": Decimal("0.10000000000000000000010")}}])
    distributor.release_loads(["w"])
    assert str(distributor.node_state("n").remaining["cpu"]) == str(capacity)
    assert str(distributor.explain({"name": "x", "requirements": {"cpu": 1}})) == \
        "0/1 nodes fit: 1 insufficient cpu (needs 1, most left 0.3000000000000000000001)"


def test_release_of_an_unknown_name_changes_nothing():
    distributor = PrioritizedDistributor.from_list(NODES)
    distributor.attempt_assign_loads(loads(("x", 1)))
    before = distributor.to_dict()
    with pytest.raises(UnknownNameError, match="workload 'ghost': not placed"):
        distributor.release_loads(["x", "ghost"])
    with pytest.raises(DuplicateNameError):
        distributor.release_loads(["x", "x"])
    with pytest.raises(KeyError):
        distributor.release_loads(["ghost"])
    # (a name of the wrong type is a TypeError, as everywhere else)
    with pytest.raises(InvalidTypeError, match="release_loads: expected workload names, "
                       "got int 5"):
        distributor.release_loads(["x", 5])
    with pytest.raises(InvalidTypeError, match="remove_nodes: expected node names, got int 5"):
        distributor.remove_nodes([5])
    assert distributor.to_dict() == before


@pytest.mark.parametrize("call, what", [
    (lambda d, name: d.node_state(name), "node_state: expected a node name"),
    (lambda d, name: d.cordon(name), "cordon: expected a node name"),
    (lambda d, name: d.uncordon(name), "uncordon: expected a node name"),
    (lambda d, name: d.drain(name), "drain: expected a node name"),
    (lambda d, name: d.record_running(name, []), "record_running: expected a node name"),
    (lambda d, name: d.workload(name), "workload: expected a workload name"),
    (lambda d, name: d.room_score(name), "room_score: expected a node name"),
])
@pytest.mark.parametrize("name, shown", [(["a"], "list ['a']"), (5, "int 5"),
                                         (None, "NoneType None")])
def test_a_single_name_of_the_wrong_type_is_a_type_error(call, what, name, shown):
    # (a list given where one name goes is a mistake of type, not an
    # unknown node; nothing changes)
    distributor = BestFitDistributor.from_list(NODES)
    distributor.attempt_assign_loads(loads(("x", 1)))
    before = distributor.to_dict()
    with pytest.raises(InvalidTypeError, match=re.escape(f"{what}, got {shown}")):
        call(distributor, name)
    assert distributor.to_dict() == before


@pytest.mark.parametrize("flag", ["false", "", b"0", 2, 0.5, [True]])
def test_all_or_nothing_takes_true_or_false_only(flag):
    # (a string from a config file, "false", read as true: nothing was placed)
    distributor = BinPackDistributor({"cpu": 1}, NODES)
    before = distributor.to_dict()
    with pytest.raises(InvalidTypeError, match="all_or_nothing: expected True or False"):
        distributor.attempt_assign_loads(loads(("x", 1), ("huge", 99)), all_or_nothing=flag)
    assert distributor.to_dict() == before
    for value, placed in ((False, {"x": "c", "huge": None}), (None, {"x": "c", "huge": None}),
                          (0, {"x": "c", "huge": None}), (1, {"x": None, "huge": None}),
                          (True, {"x": None, "huge": None})):
        copy = Distributor.from_dict(before)
        assert copy.attempt_assign_loads(loads(("x", 1), ("huge", 99)),
                                         all_or_nothing=value) == placed


def test_added_nodes_go_last_or_by_score():
    prioritized = PrioritizedDistributor.from_list([{"name": "z", "resources": {"cpu": 1}}])
    prioritized.add_nodes([Node("y", {"cpu": 5})])
    assert [node.name for node in prioritized.nodes] == ["z", "y"]
    assert prioritized.attempt_assign_loads(loads(("w", 1), ("v", 1))) == {"w": "z", "v": "y"}
    binpack = BinPackDistributor.from_list({"cpu": 1}, [{"name": "z", "resources": {"cpu": 5}}])
    binpack.add_nodes([{"name": "y", "resources": {"cpu": 2}}])
    assert binpack.attempt_assign_loads(loads(("w", 1))) == {"w": "y"}


def test_round_robin_treats_an_added_node_as_the_next_one():
    distributor = RoundRobinDistributor.from_list(NODES[:2])
    assert distributor.attempt_assign_loads(loads(("w", 1), ("v", 1))) == {"w": "a", "v": "b"}
    distributor.add_nodes([{"name": "d", "resources": {"cpu": 1}}])
    assert distributor.attempt_assign_loads(loads(("u", 1))) == {"u": "d"}


def test_cordoned_nodes_keep_their_workloads_but_take_no_new_ones():
    distributor = PrioritizedDistributor.from_list(NODES)
    distributor.attempt_assign_loads(loads(("x", 1)))
    distributor.cordon("a")
    assert distributor.attempt_assign_loads(loads(("y", 1))) == {"y": "b"}
    assert distributor.node_state("a").workloads == ("x",)
    assert distributor.node_state("a").cordoned
    distributor.uncordon("a")
    assert distributor.attempt_assign_loads(loads(("z", 1))) == {"z": "a"}
    with pytest.raises(UnknownNameError, match="node 'nope': no such node"):
        distributor.cordon("nope")


def test_drain_moves_what_it_can_and_keeps_the_rest():
    distributor = PrioritizedDistributor.from_list(NODES)
    distributor.attempt_assign_loads(loads(("x", 3), ("y", 1)) + [
        {"name": "g", "requirements": {"gpu": 1}}])
    assert distributor.assignments == {"x": "a", "y": "a", "g": "c"}
    assert distributor.drain("a") == {"x": "b", "y": "b"}
    assert distributor.node_state("a").workloads == ()
    assert distributor.drain("c") == {"g": None}  # nowhere else has a gpu
    assert distributor.assignments == {"x": "b", "y": "b", "g": "c"}
    assert distributor.node_state("c").cordoned


def test_binpack_drains_biggest_first():
    distributor = BinPackDistributor.from_list({"cpu": 1}, [
        {"name": "full", "resources": {"cpu": 4}}, {"name": "spare", "resources": {"cpu": 3}}])
    distributor.cordon("spare")
    distributor.attempt_assign_loads(loads(("small", 1), ("big", 3)))
    distributor.uncordon("spare")
    assert list(distributor.drain("full")) == ["big", "small"]


def test_remove_nodes_replaces_workloads_or_reports_them_lost():
    distributor = RoundRobinDistributor.from_list(NODES)
    distributor.attempt_assign_loads(loads(("x", 3), ("y", 3), ("z", 2)))
    assert distributor.assignments == {"x": "a", "y": "b", "z": "c"}
    assert distributor.remove_nodes(["a", "c"]) == {"x": None, "z": None}
    assert distributor.assignments == {"y": "b"}
    assert [node.name for node in distributor.nodes] == ["b"]
    with pytest.raises(UnknownNameError):
        distributor.remove_nodes(["b", "a"])
    assert [node.name for node in distributor.nodes] == ["b"]


def test_all_or_nothing_places_everything_or_nothing():
    for distributor in (PrioritizedDistributor.from_list(NODES),
                        RoundRobinDistributor.from_list(NODES),
                        BinPackDistributor.from_list({"cpu": 1}, NODES)):
        distributor.attempt_assign_loads(loads(("first", 1)))
        before = distributor.to_dict()
        result = distributor.attempt_assign_loads(loads(("p", 2), ("q", 9)), all_or_nothing=True)
        assert result == {"p": None, "q": None}
        assert distributor.to_dict() == before
        result = distributor.attempt_assign_loads(loads(("p", 2), ("q", 2)), all_or_nothing=True)
        assert None not in result.values()
        assert {name: distributor.assignments[name] for name in result} == result


def test_explain_counts_the_reasons_of_every_node():
    distributor = PrioritizedDistributor.from_list(NODES + [
        {"name": "d", "resources": {"cpu": 8, "mem": 8, "spiders": -inf}},
        {"name": "e", "resources": {"cpu": 8, "mem": 8}}])
    distributor.cordon("e")
    explanation = distributor.explain({"name": "big", "requirements": {"cpu": 5}})
    assert str(explanation) == ("0/5 nodes fit: 3 insufficient cpu (needs 5, most left 4), "
                                "1 spiders below zero and not tolerated, 1 cordoned")
    assert explanation.choice is None and explanation.fits == ()
    gpu = distributor.explain({"name": "g", "requirements": {"gpu": 1}})
    assert str(gpu) == "1/5 nodes fit: 3 missing resource gpu, 1 cordoned"
    assert gpu.fits == ("c",) and gpu.choice == "c"
    assert distributor.to_dict()["placements"] == []


def test_explain_reports_aversion_conflicts():
    distributor = PrioritizedDistributor.from_list(NODES[:2])
    distributor.attempt_assign_loads([{"name": "x", "requirements": {"cpu": 1},
                                       "aversion_groups": ["db"]}])
    explanation = distributor.explain({"name": "y", "requirements": {"cpu": 1},
                                       "aversion_groups": ["db"]})
    assert explanation.averse == ("a",) and explanation.fits == ("b",)
    assert explanation.choice == "b"
    assert str(explanation) == "2/2 nodes fit (1 only by sharing an aversion group with it)"
    assert explanation.to_dict()["summary"] == str(explanation)


def test_utilization_reports_capacity_use_and_room():
    distributor = PrioritizedDistributor.from_list([
        {"name": "n", "resources": {"cpu": 2, "ssd": 0, "disk": inf}},
        {"name": "m", "resources": {"cpu": 1.5, "spiders": -inf}}])
    distributor.attempt_assign_loads([{"name": "w", "requirements": {"cpu": 0.5, "disk": 7}}])
    assert distributor.utilization() == {
        "cluster": {"cpu": {"capacity": 3.5, "used": 0.5, "free": 3},
                    "ssd": {"capacity": 0, "used": 0, "free": 0},
                    "disk": {"capacity": inf, "used": 7, "free": inf},
                    "spiders": {"capacity": -inf, "used": 0, "free": -inf}},
        "nodes": {"n": {"cpu": {"capacity": 2, "used": 0.5, "free": 1.5},
                        "ssd": {"capacity": 0, "used": 0, "free": 0},
                        "disk": {"capacity": inf, "used": 7, "free": inf}},
                  "m": {"cpu": {"capacity": 1.5, "used": 0, "free": 1.5},
                        "spiders": {"capacity": -inf, "used": 0, "free": -inf}}}}


def test_snapshots_are_standard_json_and_restore_the_right_class():
    distributor = RoundRobinDistributor.from_list([
        {"name": "n", "resources": {"cpu": inf, "spiders": -inf, "mem": 0.1}}])
    distributor.attempt_assign_loads([{"name": "w", "requirements": {"mem": 0.1},
                                       "immunities": ["spiders"], "aversion_groups": ["g"]}])
    distributor.cordon("n")
    text = json.dumps(distributor.to_dict(), allow_nan=False)
    assert '"-inf"' in text and '"inf"' in text
    restored = Distributor.from_dict(json.loads(text))
    assert isinstance(restored, RoundRobinDistributor)
    assert restored.to_dict() == distributor.to_dict()
    assert restored.node_state("n") == distributor.node_state("n")
    assert restored.workload("w") == distributor.workload("w")
    with pytest.raises(InvalidInputError, match="holds a RoundRobin distributor"):
        PrioritizedDistributor.from_dict(json.loads(text))


@pytest.mark.parametrize("change, message", [
    (lambda s: s.update(format=9), "snapshot: format: expected 1"),
    (lambda s: s.update(strategy="Random"), "snapshot: strategy: unknown strategy 'Random'"),
    (lambda s: s.update(cursor=7), "snapshot: cursor: expected a whole number from 0 to 1"),
    (lambda s: s["placements"][0].update(node="zz"), r"snapshot: placements\[0\].node"),
    (lambda s: s["nodes"][0]["resources"].update(cpu="lots"),
     'snapshot: nodes\\[0\\].resources.cpu: expected a number, got "lots"'),
    (lambda s: s["placements"].append(s["placements"][0]), "is placed twice"),
    # (numbers written as strings beyond any decimal's exponent: one raised
    # decimal.Overflow, the other was read as 0)
    (lambda s: s["nodes"][0]["resources"].update(cpu="1e1000000000000000000"),
     r"snapshot: nodes\[0\].resources.cpu: '1e1000000000000000000' is out of range"),
    (lambda s: s["placements"][0]["workload"]["requirements"].update(
        cpu="-5e-99999999999999999999999"),
     r"snapshot: placements\[0\].workload.requirements.cpu: '-5e-99999999999999999999999' "
     r"is out of range"),
    # (a misspelt field, at any level, is refused: it used to be dropped)
    (lambda s: s.update(cursour=0), "snapshot: unknown field 'cursour' .a snapshot has: "
     "format, strategy, cursor, rubric, nodes, placements."),
    (lambda s: s["nodes"][0].update(cordonned=True),
     r"snapshot: nodes\[0\]: unknown field 'cordonned' \(a node has: name, resources, "
     r"cordoned\)"),
    (lambda s: s["placements"][0].update(at=3),
     r"snapshot: placements\[0\]: unknown field 'at' \(a placement has: node, workload\)"),
    (lambda s: s["placements"][0]["workload"].update(bogus=1),
     r"snapshot: placements\[0\].workload: unknown field 'bogus' \(a workload has: name, "
     r"requirements, immunities, aversion_groups\)"),
    # (a name that is not plain is quoted, and a long one cut: a message
    # stays short whatever the snapshot holds)
    (lambda s: s["nodes"][0]["resources"].update({"a b": "lots"}),
     r'snapshot: nodes\[0\].resources\["a b"\]: expected a number, got "lots"\Z'),
    (lambda s: s["nodes"][0]["resources"].update({"x" * 5000: None}),
     r'snapshot: nodes\[0\].resources\["x{60}"... \(5000 characters\)\]: '
     r"expected a number, got NoneType None\Z"),
    (lambda s: s["placements"][0]["workload"]["requirements"].update({"y" * 5000: "nan"}),
     r'snapshot: placements\[0\].workload.requirements\["y{60}"... \(5000 characters\)\]: '),
])
def test_bad_snapshots_are_refused(change, message):
    distributor = RoundRobinDistributor.from_list([{"name": "n", "resources": {"cpu": 1}}])
    distributor.attempt_assign_loads(loads(("w", 1)))
    snapshot = distributor.to_dict()
    change(snapshot)
    with pytest.raises(LighthouseException, match=message):
        Distributor.from_dict(snapshot)


@settings(max_examples=120, deadline=None)
@given(strategy=st.sampled_from(["Prioritized", "RoundRobin", "BinPack"]),
       nodes=clusters(), rubric=RUBRICS, steps=operations())
def test_invariants_hold_through_any_sequence(strategy, nodes, rubric, steps):
    distributor = (BinPackDistributor.from_list(rubric, nodes) if strategy == "BinPack" else
                   {"Prioritized": PrioritizedDistributor,
                    "RoundRobin": RoundRobinDistributor}[strategy].from_list(nodes))
    for step in steps:
        operation = concrete(step, distributor.assignments,
                             [node.name for node in distributor.nodes])
        run(operation, distributor)
        check_books(distributor)
        # A failing call changes nothing.
        before = distributor.to_dict()
        with pytest.raises(LighthouseException):
            distributor.release_loads(list(distributor.assignments) + ["no-such-workload"])
        assert distributor.to_dict() == before
    distributor.release_loads(list(distributor.assignments))
    for state in distributor.node_states():
        assert state.remaining == state.capacity
        assert state.workloads == ()


#: Sums with no rounding, whatever the numbers (Python's default context
#: keeps 28 digits: 1e300 - 2 would read 1e300).
WHOLE = decimal.Context(prec=decimal.MAX_PREC, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)


def check_books(distributor):
    seen = set()
    for state in distributor.node_states():
        capacity = Node("n", state.capacity).resources
        used = {key: Decimal(0) for key in capacity}
        for name in state.workloads:
            assert name not in seen  # each workload on at most one node
            seen.add(name)
            assert distributor.assignments[name] == state.name
            for key, needed in distributor.workload(name).requirements.items():
                used[key] = WHOLE.add(used[key], needed)
        remaining = Node("n", state.remaining).resources
        for key in capacity:
            expected = capacity[key] if capacity[key].is_infinite() else \
                WHOLE.subtract(capacity[key], used[key])
            assert remaining[key] == expected
    assert seen == set(distributor.assignments)


def test_books_stay_exact_at_any_size():
    """A capacity of 1e300 less two workloads of 1 leaves 300 nines and an
    eight, after a snapshot too (a sum rounded to 28 digits would read
    1e300)."""
    distributor = RoundRobinDistributor.from_list(
        [{"name": "n", "resources": {"cpu": Decimal("1e300")}}])
    distributor.attempt_assign_loads(loads(("a", 1), ("b", 1)))
    for each in (distributor, Distributor.from_dict(json.loads(json.dumps(distributor.to_dict())))):
        assert each.node_state("n").remaining["cpu"] == 10 ** 300 - 2
        check_books(each)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(
        st.sampled_from(["name", "node", "workload", "resources", "requirements", "cpu",
                         "immunities", "aversion_groups", "cordoned", "x"]), children,
        max_size=4), max_leaves=12)


quantity_maps = st.dictionaries(st.sampled_from(["cpu", "mem"]), json_values, max_size=2)
node_items = st.fixed_dictionaries(
    {"name": st.sampled_from(["n", "m"]) | json_values, "resources": quantity_maps | json_values},
    optional={"cordoned": json_values})
placement_items = st.fixed_dictionaries({
    "node": st.sampled_from(["n", "m"]) | json_values,
    "workload": st.fixed_dictionaries(
        {"name": st.sampled_from(["w", "v"]) | json_values,
         "requirements": quantity_maps | json_values},
        optional={"immunities": json_values, "aversion_groups": json_values}) | json_values})


@settings(max_examples=300, deadline=None)
@given(nodes=st.lists(node_items | json_values, max_size=2),
       placements=st.lists(placement_items | json_values, max_size=2),
       strategy=st.sampled_from(["Prioritized", "RoundRobin", "BinPack"]),
       extra=st.dictionaries(st.sampled_from(["cursor", "rubric"]), json_values))
def test_malformed_snapshots_only_raise_library_errors(nodes, placements, strategy, extra):
    snapshot = {"format": 1, "strategy": strategy, "nodes": nodes, "placements": placements}
    snapshot.update(extra)
    try:
        restored = Distributor.from_dict(snapshot)
    except LighthouseException as error:
        event(type(error).__name__)
        return
    event("restored")
    assert Distributor.from_dict(restored.to_dict()).to_dict() == restored.to_dict()
