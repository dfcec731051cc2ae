"""plan_scale_down tries each candidate on one copy of the cluster and undoes
the drains that leave work behind (Distributor._drain_or_undo), instead of a
copy made afresh per candidate: the same plans, and, after an undone drain,
a distributor that decides as a fresh copy of it does."""
import random
from collections import Counter
from unittest import mock

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from instances import RUBRICS, STRATEGIES, distributor_of, node_specs, workload_specs
from planning_twin import one_copy_per_trial
from pylighthouse import (Distributor, Node, PrioritizedDistributor, RoundRobinDistributor,
                          Workload, plan_scale_down)


@st.composite
def busy_clusters(draw, max_nodes=9):
    """A distributor of any strategy whose nodes (every feature of
    instances.py) took two batches of work, gave some back, and were
    cordoned here and there."""
    nodes = [draw(node_specs(f"node-{number}"))
             for number in range(draw(st.integers(1, max_nodes)))]
    distributor = distributor_of(draw(st.sampled_from(STRATEGIES)), draw(RUBRICS), nodes)
    for batch in ("a", "b"):
        distributor.attempt_assign_loads([
            draw(workload_specs(f"{batch}-{number}"))
            for number in range(draw(st.integers(0, 3 * len(nodes))))])
        placed = sorted(distributor.assignments)
        if placed:
            distributor.release_loads(draw(st.lists(st.sampled_from(placed), unique=True,
                                                    max_size=len(placed) // 3)))
    for node in distributor.nodes:
        if draw(st.integers(0, 5)) == 0:
            distributor.cordon(node.name)
    return distributor


def small_blocks(on):
    """Index blocks of two nodes (many blocks, splits and merges), or of the
    index's own size."""
    return mock.patch.object(Distributor, "_index_load", 2 if on else None)


@settings(max_examples=300, deadline=None)
@given(busy_clusters(), st.data(), st.booleans())
def test_scale_down_plans_as_a_fresh_copy_per_trial_does(distributor, data, blocks):
    names = [node.name for node in distributor.nodes]
    values = data.draw(st.dictionaries(st.sampled_from(names), st.sampled_from([0, 0.5, 1])))
    keep = data.draw(st.lists(st.sampled_from(names), unique=True, max_size=2))
    cap = data.draw(st.none() | st.integers(0, 4))
    before = distributor.to_dict()
    with small_blocks(blocks):
        plan = plan_scale_down(distributor, max_nodes=cap, values=values, keep=keep)
        expected = one_copy_per_trial(distributor, max_nodes=cap, values=values, keep=keep)
    assert (plan.removable, plan.moves, plan.kept) == expected
    event(f"nodes removable: {min(len(plan.removable), 3)}, "
          f"drains undone: {min(sum('cannot move' in why for why in plan.kept.values()), 3)}")
    assert distributor.to_dict() == before


def same_state(distributor, other):
    """The two hold the same snapshot, and the same tables of aversion
    groups and counts of quantities below zero (which snapshots leave out)."""
    assert distributor.to_dict() == other.to_dict()
    assert {group: dict(nodes) for group, nodes in distributor._group_nodes.items()} == \
        {group: dict(nodes) for group, nodes in other._group_nodes.items()}
    for slot in distributor._slots.values():
        twin = other._slots[slot.name]
        assert (Counter(slot.groups), slot.below) == (Counter(twin.groups), twin.below)
        assert list(slot.remaining.items()) == list(twin.remaining.items())


@settings(max_examples=300, deadline=None)
@given(busy_clusters(), st.randoms(use_true_random=False), st.booleans(), st.data())
def test_an_undone_drain_leaves_a_distributor_that_decides_as_a_fresh_copy(
        distributor, rng, blocks, data):
    with small_blocks(blocks):
        work = Distributor.from_dict(distributor.to_dict())
        names = [node.name for node in work.nodes]
        undone = 0
        known = {}  # (the reasons of nodes unchanged since it was cleared)
        for name in rng.sample(names, min(len(names), 4)):
            snapshot = work.to_dict()
            twin = Distributor.from_dict(snapshot)
            moves, why = work._drain_or_undo(name, known)
            assert moves == twin.drain(name)
            stuck = [load for load, node in moves.items() if node is None]
            if stuck:
                undone += 1
                assert why == f"{stuck[0]} cannot move: {twin.explain(twin.workload(stuck[0]))}"
                same_state(work, Distributor.from_dict(snapshot))
            else:
                assert why is None
                same_state(work, twin)
                known.clear()
        event(f"drains undone: {undone}")
        # What the distributor decides next: new work, work given back, a
        # drain, as a fresh copy decides it.
        fresh = Distributor.from_dict(work.to_dict())
        batch = [data.draw(workload_specs(f"c-{number}")) for number in range(
            data.draw(st.integers(0, 2 * len(names))))]
        assert work.attempt_assign_loads(batch) == fresh.attempt_assign_loads(batch)
        placed = sorted(work.assignments)
        gone = rng.sample(placed, len(placed) // 3)
        work.release_loads(gone)
        fresh.release_loads(gone)
        again = [dict(spec, name=f"d-{number}") for number, spec in enumerate(batch[::-1])]
        assert work.attempt_assign_loads(again) == fresh.attempt_assign_loads(again)
        name = rng.choice(names)
        assert work.drain(name) == fresh.drain(name)
        same_state(work, fresh)


def test_planning_a_cluster_where_no_node_can_go_changes_one_copy_back_each_time():
    rng = random.Random(7)
    nodes = [{"name": f"node-{number:03d}", "resources": {"cpu": 16, "mem": 64}}
             for number in range(60)]
    distributor = RoundRobinDistributor(nodes)
    distributor.attempt_assign_loads([
        {"name": f"w-{number}", "requirements": {"cpu": rng.choice((1, 2, 4)),
                                                 "mem": rng.choice((2, 4, 8))},
         "aversion_groups": [rng.choice("abc")] if number % 3 == 0 else []}
        for number in range(480)])
    copies = []
    made = Distributor.from_dict.__func__

    def counted(cls, snapshot):
        copies.append(cls)
        return made(cls, snapshot)
    with mock.patch.object(Distributor, "from_dict", classmethod(counted)):
        plan = plan_scale_down(distributor)
    assert len(copies) == 1
    assert (plan.removable, plan.moves, plan.kept) == one_copy_per_trial(distributor)
    assert plan.removable == [] and len(plan.kept) == 60


def test_room_a_drain_took_comes_back_when_it_is_undone_on_a_node_cordoned_before():
    # (n2 is cordoned before the trial, so undoing it uncordons nothing: the
    # room w1 took on n0 must come back by itself)
    for load in (None, 2):
        with small_blocks(load):
            snapshot = PrioritizedDistributor([
                {"name": "n0", "resources": {"cpu": 4}}, {"name": "n1", "resources": {"cpu": 0}},
                {"name": "n2", "resources": {"cpu": 6}}, {"name": "n3", "resources": {"cpu": 6}},
            ]).to_dict()
            snapshot["placements"] = [
                {"node": "n2", "workload": {"name": name, "requirements": {"cpu": 3}}}
                for name in ("w1", "w2")]
            distributor = Distributor.from_dict(snapshot)
            distributor.cordon("n2")
            distributor.cordon("n3")
            moves, why = distributor._drain_or_undo("n2", {})
            assert moves == {"w1": "n0", "w2": None}
            assert why.startswith("w2 cannot move: 0/4 nodes fit: 2 insufficient cpu")
            assert distributor.attempt_assign_loads([Workload("x", {"cpu": 3})]) == {"x": "n0"}


def test_nodes_a_drain_gave_an_aversion_group_are_free_of_it_again_once_undone():
    # (the zero requirements change no room: only the group does; the
    # searches of the drain step over enough nodes hosting it for the
    # index to keep a column of the group)
    for load in (None, 2):
        with small_blocks(load):
            snapshot = PrioritizedDistributor(
                [{"name": f"n{number:02d}", "resources": {"cpu": 4, "mem": 4}}
                 for number in range(80)]
                + [{"name": "c", "resources": {"cpu": 100, "mem": 100}}]).to_dict()
            snapshot["placements"] = [
                {"node": "c", "workload": {"name": f"g{number}",
                                           "requirements": {"cpu": 0, "mem": 0},
                                           "aversion_groups": ["a"]}}
                for number in range(45)] + [
                {"node": "c", "workload": {"name": "big", "requirements": {"cpu": 50}}}]
            distributor = Distributor.from_dict(snapshot)
            distributor.cordon("c")
            moves, why = distributor._drain_or_undo("c", {})
            assert moves["g44"] == "n44" and why.startswith("big cannot move")
            assert distributor.attempt_assign_loads([Workload(
                "x", {"cpu": 0, "mem": 0}, aversion_groups=["a"])]) == {"x": "n00"}


def crowded(strategy, seed, count=150):
    """A seeded cluster of ``count`` nodes (gpus, tags, wards), six
    workloads a node offered (some asking for a tag alone, or nothing;
    groups, immunities), a sixth of the nodes cordoned; and a maker of
    more such workloads."""
    rng = random.Random(f"{strategy}/{seed}")
    nodes = []
    for number in range(count):
        resources = {"cpu": rng.choice((4, 8, 16)), "mem": rng.choice((8, 16, 32, 64))}
        if rng.random() < 0.2:
            resources["gpu"] = rng.randint(1, 2)
        if rng.random() < 0.1:
            resources["ssd"] = 0
        if rng.random() < 0.05:
            resources["spot"] = float("-inf")
        nodes.append({"name": f"n{number:03d}", "resources": resources})

    def load(name):
        requirements = {"cpu": rng.choice((0.5, 1, 2, 3)), "mem": rng.choice((1, 2, 4, 8))}
        if rng.random() < 0.1:
            requirements["gpu"] = 1
        if rng.random() < 0.1:
            requirements["ssd"] = 0
        if rng.random() < 0.15:
            requirements = {"ssd": 0} if rng.random() < 0.5 else {}
        spec = {"name": name, "requirements": requirements}
        if rng.random() < 0.3:
            spec["aversion_groups"] = [rng.choice("abcd")]
        if rng.random() < 0.05:
            spec["immunities"] = ["spot"]
        return spec
    distributor = distributor_of(strategy, {"cpu": 1, "mem": 0.25, "gpu": 3}, nodes)
    distributor.attempt_assign_loads([load(f"w{number}") for number in range(6 * count)])
    for name in rng.sample([node.name for node in distributor.nodes], count // 6):
        distributor.cordon(name)
    return distributor, rng, load


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("seed", range(2))
def test_many_drains_undone_on_a_large_cluster_leave_it_deciding_as_a_fresh_copy(
        strategy, seed):
    distributor, rng, load = crowded(strategy, seed)
    work = Distributor.from_dict(distributor.to_dict())
    names = [node.name for node in work.nodes]
    outcomes = Counter(work._drain_or_undo(name, None)[1] is None
                       for name in rng.sample(names, 60))
    assert outcomes[False] > 30  # (most drains are undone: the cluster is full)
    fresh = Distributor.from_dict(work.to_dict())
    same_state(work, fresh)
    if strategy == "BestFit":  # (the sums of room it keeps as nodes change)
        keys = ["cpu", "mem", "gpu", "ssd", "spot"]
        assert work._room_sums(keys, {}) == fresh._room_sums(keys, {})
        assert work._room_sums(keys, {}, {}) == fresh._room_sums(keys, {}, {})
    batch = [load(f"x{number}") for number in range(300)]
    assert work.attempt_assign_loads(batch) == fresh.attempt_assign_loads(batch)
    same_state(work, fresh)


def test_the_reasons_of_a_later_pass_see_the_room_a_removal_took():
    # Pass one keeps node a (w fits nowhere else) and node t (t needs its
    # ssd), then removes node b, moving v onto t; pass two keeps a again,
    # and says how much t has left now.
    distributor = PrioritizedDistributor([
        Node("t", {"cpu": 6, "ssd": 0}), Node("a", {"cpu": 100}), Node("b", {"cpu": 4})])
    distributor.attempt_assign_loads([Workload("t1", {"cpu": 1, "ssd": 0})])
    snapshot = distributor.to_dict()
    snapshot["placements"] += [
        {"node": "a", "workload": {"name": "w", "requirements": {"cpu": 8}}},
        {"node": "b", "workload": {"name": "v", "requirements": {"cpu": 2}}}]
    distributor = Distributor.from_dict(snapshot)
    plan = plan_scale_down(distributor)
    assert (plan.removable, plan.moves) == (["b"], {"v": "t"})
    assert plan.kept["a"] == "w cannot move: 0/2 nodes fit: 1 insufficient cpu " \
        "(needs 8, most left 3), 1 cordoned"
    assert (plan.removable, plan.moves, plan.kept) == one_copy_per_trial(distributor)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_crowded_cluster_keeps_its_nodes_for_the_reasons_a_fresh_copy_gives(strategy):
    # Most nodes stay, most for workloads of a few shapes: the reasons of
    # those are counted once per shape and then read off the count, the
    # nodes each drain changed aside (RoundRobin's from its cursor on).
    distributor, rng, _ = crowded(strategy, 7, count=48)
    plan = plan_scale_down(distributor)
    assert sum("cannot move" in why for why in plan.kept.values()) > 24
    assert (plan.removable, plan.moves, plan.kept) == one_copy_per_trial(distributor)


def test_a_drain_stopped_while_its_moved_workloads_go_last_is_undone_in_order():
    distributor = PrioritizedDistributor([Node("a", {"cpu": 4}), Node("b", {"cpu": 8})])
    distributor.attempt_assign_loads([Workload(name, {"cpu": 1}) for name in ("w1", "w2", "x")])
    before = distributor.to_dict()
    assert [entry["workload"]["name"] for entry in before["placements"]] == ["w1", "w2", "x"]

    def stopped(self, moves):  # (the first moved workload taken out, then stopped)
        self._where.pop(next(name for name, node in moves.items() if node))
        raise KeyboardInterrupt

    with mock.patch.object(Distributor, "_moved_last", stopped), pytest.raises(KeyboardInterrupt):
        distributor.drain("a")
    assert distributor.to_dict() == before
    assert distributor.drain("a") == {"w1": "b", "w2": "b", "x": "b"}
    assert [entry["workload"]["name"] for entry in distributor.to_dict()["placements"]] == [
        "w1", "w2", "x"]
