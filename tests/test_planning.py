"""Tests of elastic planning: plan_scale_up and plan_scale_down."""
import contextlib
import random
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pylighthouse as lighthouse
from planning_twin import fewest_new_nodes, one_node_at_a_time
from pylighthouse import (BinPackDistributor, Distributor, DuplicateNameError,
                          InvalidInputError, InvalidTypeError, Node, PrioritizedDistributor,
                          RoundRobinDistributor, Workload, plan_scale_down, plan_scale_up,
                          planning)
from pylighthouse.planning import lower_bound

RUBRIC = {"cpu": 1, "mem": 0.5}
QUANTITIES = st.sampled_from([0, 0.5, 1, 1, 2, 2, 3, 4])


def make(strategy, nodes=()):
    if strategy == "BinPack":
        return BinPackDistributor(RUBRIC, nodes)
    if strategy == "RoundRobin":
        return RoundRobinDistributor(nodes)
    return PrioritizedDistributor(nodes)


@st.composite
def loads(draw, prefix, max_size, homeless=False, tags=False):
    """Workload dicts named <prefix>-1...; with ``homeless``, some need a
    gpu; with ``tags``, some ask for the tag ``ssd``, which only existing
    nodes may have (see :func:`clusters`)."""
    specs = []
    for number in range(1, draw(st.integers(0, max_size)) + 1):
        requirements = {"cpu": draw(QUANTITIES), "mem": draw(QUANTITIES)}
        if homeless and draw(st.integers(0, 5)) == 0:
            requirements["gpu"] = 1
        if tags and draw(st.integers(0, 3)) == 0:
            requirements["ssd"] = 0
        specs.append({"name": f"{prefix}-{number}", "requirements": requirements,
                      "aversion_groups": draw(st.sets(st.sampled_from("ab"), max_size=1))})
    return specs


@st.composite
def clusters(draw, cordons=True, tags=False):
    """A distributor of any strategy with a few nodes, some work placed, some
    nodes cordoned; with ``tags``, some nodes bear the tag ``ssd``, which no
    template has."""
    def resources():
        made = {"cpu": draw(st.integers(1, 8)), "mem": draw(st.integers(1, 8))}
        if tags and draw(st.booleans()):
            made["ssd"] = 0
        return made
    distributor = make(draw(st.sampled_from(["Prioritized", "RoundRobin", "BinPack"])), [
        Node(f"node-{number}", resources()) for number in range(1, draw(st.integers(0, 5)) + 1)])
    distributor.attempt_assign_loads(draw(loads("placed", 10)))
    for node in distributor.nodes:
        if cordons and draw(st.integers(0, 4)) == 0:
            distributor.cordon(node.name)
    return distributor


TEMPLATES = st.lists(st.fixed_dictionaries({
    "name": st.sampled_from(["node", "worker"]),
    "resources": st.fixed_dictionaries({"cpu": st.integers(4, 8), "mem": st.integers(4, 8)}),
    "cost": st.integers(1, 3)}), min_size=1, max_size=2)


def apply_scale_up(distributor, plan, pending):
    """Add the planned nodes, then submit ``pending`` in the plan's order."""
    by_name = {load["name"] if isinstance(load, dict) else load.name: load for load in pending}
    assert sorted(plan.order) == sorted(by_name)
    distributor.add_nodes(plan.new_nodes)
    return distributor.attempt_assign_loads([by_name[name] for name in plan.order])


def in_callers_order(distributor, pending, templates, **options):
    """The plan the search finds when it may only submit in the order given."""
    with mock.patch.object(planning, "_orders", lambda _, loads, __: [loads]):
        return plan_scale_up(distributor, pending, templates, **options)


@contextlib.contextmanager
def trials_seen():
    """The sets of new nodes the search asks a trial of while the block
    runs, in order, each with whether it was a new trial (not the one kept
    from the call before)."""
    seen = []
    real = planning._Search.run

    def run(search, mix):
        seen.append((tuple(mix), tuple(mix) not in search._trials))
        return real(search, mix)

    with mock.patch.object(planning._Search, "run", run):
        yield seen


def apply_scale_down(distributor, plan):
    """Drain then remove each planned node in order; return the moves seen."""
    moves = {}
    for name in plan.removable:
        moved = distributor.drain(name)
        assert None not in moved.values()
        assert distributor.remove_nodes([name]) == {}
        moves.update(moved)
    return moves


# ------------------------------------------------------------ scale up, units

def small_cluster():
    distributor = PrioritizedDistributor([Node("node-1", {"cpu": 8, "mem": 16}),
                                          Node("node-2", {"cpu": 4, "mem": 8})])
    distributor.attempt_assign_loads([Workload("db", {"cpu": 6, "mem": 4})])
    return distributor


def test_scale_up_adds_the_fewest_nodes_and_places_with_the_strategy():
    distributor = small_cluster()
    pending = [Workload(f"job-{number}", {"cpu": 3, "mem": 4}) for number in range(1, 7)]
    plan = plan_scale_up(distributor, pending,
                         {"name": "worker", "resources": {"cpu": 8, "mem": 16}, "cost": 2})
    assert plan.new_nodes == [Node(f"worker-{n}", {"cpu": 8, "mem": 16}) for n in (1, 2, 3)]
    assert plan.assignments == {"job-1": "node-2", "job-2": "worker-1", "job-3": "worker-1",
                                "job-4": "worker-2", "job-5": "worker-2", "job-6": "worker-3"}
    assert plan.unplaceable == {}
    assert plan.cost == 6


def test_nothing_pending_or_everything_fits_adds_no_node():
    distributor = small_cluster()
    assert plan_scale_up(distributor, [], Node("w", {"cpu": 8})).new_nodes == []
    plan = plan_scale_up(distributor, [Workload("small", {"cpu": 1})], Node("w", {"cpu": 8}))
    assert (plan.new_nodes, plan.assignments) == ([], {"small": "node-1"})


def test_a_workload_no_template_can_host_adds_no_node_and_says_why():
    plan = plan_scale_up(small_cluster(), [Workload("gpu-job", {"cpu": 1, "gpu": 1}),
                                           Workload("huge", {"cpu": 64})],
                         [Node("w", {"cpu": 8, "mem": 16}),
                          {"name": "gpu",
                           "resources": {"cpu": 8, "gpu": 1, "fast": float("-inf")}}])
    assert plan.new_nodes == []
    assert plan.unplaceable == {
        "gpu-job": "no template can host it (w: missing resource gpu; "
                   "gpu: fast below zero and not tolerated)",
        "huge": "no template can host it (w: insufficient cpu (needs 64, 8 left); "
                "gpu: insufficient cpu (needs 64, 8 left))"}


def test_new_names_never_clash_with_existing_nodes():
    distributor = PrioritizedDistributor([Node("worker-1", {"cpu": 1}), Node("worker-3", {})])
    pending = [Workload(f"job-{n}", {"cpu": 4}) for n in range(3)]
    plan = plan_scale_up(distributor, pending, Node("worker", {"cpu": 4}))
    assert [node.name for node in plan.new_nodes] == ["worker-2", "worker-4", "worker-5"]


def test_fewer_nodes_first_then_lower_cost():
    pending = [Workload(f"job-{n}", {"cpu": 2}) for n in range(4)]
    small = {"name": "small", "resources": {"cpu": 4}, "cost": 1}
    big = {"name": "big", "resources": {"cpu": 8}, "cost": 3}
    plan = plan_scale_up(PrioritizedDistributor(), pending, [small, big])
    assert [node.name for node in plan.new_nodes] == ["big-1"]
    cheap = {"name": "cheap", "resources": {"cpu": 8}, "cost": 2}
    plan = plan_scale_up(PrioritizedDistributor(), pending, [big, cheap])
    assert ([node.name for node in plan.new_nodes], plan.cost) == (["cheap-1"], 2)


def test_a_mix_of_templates_when_neither_alone_is_best():
    pending = [Workload("wide", {"cpu": 8})] + [Workload(f"job-{n}", {"cpu": 1}) for n in range(2)]
    plan = plan_scale_up(PrioritizedDistributor(), pending, [
        {"name": "big", "resources": {"cpu": 8}, "cost": 5},
        {"name": "small", "resources": {"cpu": 2}, "cost": 1}])
    assert sorted(node.name for node in plan.new_nodes) == ["big-1", "small-1"]
    assert plan.cost == 6


def test_max_new_nodes_caps_and_explains_what_is_left():
    pending = [Workload(f"job-{n}", {"cpu": 3, "mem": 4}) for n in range(1, 7)]
    plan = plan_scale_up(small_cluster(), pending, Node("w", {"cpu": 8, "mem": 16}),
                         max_new_nodes=1)
    assert [node.name for node in plan.new_nodes] == ["w-1"]
    assert list(plan.assignments) == ["job-1", "job-2", "job-3"]
    assert plan.unplaceable["job-4"] == (
        "max_new_nodes=1 reached; 0/3 nodes fit: 3 insufficient cpu (needs 3, most left 2)")
    none = plan_scale_up(small_cluster(), pending, Node("w", {"cpu": 8}), max_new_nodes=0)
    assert none.new_nodes == [] and len(none.unplaceable) == 5


def test_scale_up_plan_reads_well_and_converts_to_plain_data():
    plan = plan_scale_up(small_cluster(), [Workload("a", {"cpu": 5}), Workload("b", {"gpu": 1})],
                         Node("w", {"cpu": 8}))
    assert str(plan) == ("add 1 node (cost 1):\n  w-1 {cpu 8}\nplace 1 workload:\n  a -> w-1\n"
                         "leave 1 workload pending:\n"
                         "  b: no template can host it (w: missing resource gpu)")
    assert plan.to_dict() == {"new_nodes": [{"name": "w-1", "resources": {"cpu": 8}}],
                              "order": ["a", "b"],
                              "assignments": {"a": "w-1"},
                              "unplaceable": {"b": "no template can host it "
                                                   "(w: missing resource gpu)"},
                              "cost": 1}


@pytest.mark.parametrize("templates, error, words", [
    ([], InvalidInputError, "at least one"),
    ("w", InvalidTypeError, "templates"),
    ([3], InvalidTypeError, "templates[0]"),
    ([{"name": "w"}], InvalidInputError, "missing field 'resources'"),
    ([{"resources": {}, "size": 1}], InvalidInputError, "unknown field 'size'"),
    ([{"resources": {}, "cost": -1}], InvalidInputError, "cost must be at least 0"),
    ([{"resources": {}, "cost": True}], InvalidTypeError, "cost"),
    ([{"resources": {"cpu": "x"}}], InvalidTypeError, "cpu"),
    ([{"name": "", "resources": {}}], InvalidInputError, "name"),
])
def test_bad_templates_are_refused(templates, error, words):
    with pytest.raises(error, match=words.replace("[", r"\[").replace("]", r"\]")):
        plan_scale_up(small_cluster(), [], templates)


def test_bad_pending_and_limits_are_refused_and_change_nothing():
    distributor = small_cluster()
    before = distributor.to_dict()
    with pytest.raises(DuplicateNameError, match="db"):
        plan_scale_up(distributor, [Workload("db", {})], Node("w", {}))
    with pytest.raises(DuplicateNameError, match="x"):
        plan_scale_up(distributor, [Workload("x", {}), Workload("x", {})], Node("w", {}))
    with pytest.raises(InvalidInputError, match="max_new_nodes"):
        plan_scale_up(distributor, [], Node("w", {}), max_new_nodes=-1)
    with pytest.raises(InvalidTypeError, match="max_new_nodes"):
        plan_scale_up(distributor, [], Node("w", {}), max_new_nodes=True)
    # (named as passed: it was "workloads[1]", a parameter it has not)
    with pytest.raises(InvalidInputError, match=r"^pending\[1\]: missing field 'name'"):
        plan_scale_up(distributor, [{"name": "ok"}, {"requirements": {}}], Node("w", {}))
    with pytest.raises(InvalidTypeError, match="^pending: expected a list"):
        plan_scale_up(distributor, "abc", Node("w", {}))
    assert distributor.to_dict() == before


def test_no_node_is_bought_that_leaves_as_many_waiting_as_none():
    # (the plans tried started at one node: a node that only changed which
    # workload waits, or that placed nothing more, was bought)
    capped = BinPackDistributor({"cpu": -1}, [Node("n0", {"cpu": 1})])
    pending = [Workload(f"w{i}", {"cpu": 1}, immunities=["cpu"]) for i in range(3)]
    pending.append(Workload("w3", {"cpu": 1}))
    template = {"name": "t", "resources": {"cpu": 2}}
    plan = plan_scale_up(capped, pending, template, max_new_nodes=1)
    assert plan.new_nodes == [] and list(plan.unplaceable) == ["w3"]
    best_fit = lighthouse.BestFitDistributor([Node("n0", {"cpu": 1, "gpu": 1})])
    pending = [Workload("w0", {"cpu": 3, "gpu": 0}, immunities=["cpu"]),
               Workload("w1", {"cpu": 2}, immunities=["cpu"]),
               Workload("w2", {"cpu": 1, "gpu": 1}), Workload("w3", {"cpu": 1})]
    plan = plan_scale_up(best_fit, pending, {"name": "t", "resources": {"cpu": 3}})
    assert plan.new_nodes == [] and plan.cost == 0 and list(plan.unplaceable) == ["w3"]


def test_the_lower_bound_counts_demand_beyond_the_free_room():
    distributor = PrioritizedDistributor([Node("node-1", {"cpu": 4, "mem": 4})])
    pending = [Workload(f"job-{n}", {"cpu": 3, "mem": 1}) for n in range(5)]
    # cpu: 15 needed, 4 free, 11 over; new nodes have 4: at least 3 of them.
    assert lower_bound(distributor, pending, Node("w", {"cpu": 4, "mem": 8})) == 3
    # Unlimited cpu: only mem counts, 5 needed, 4 free, so at least one node.
    assert lower_bound(distributor, pending, Node("w", {"cpu": float("inf"), "mem": 8})) == 1
    assert lower_bound(distributor, pending[:4], Node("w", {"cpu": float("inf"), "mem": 8})) == 0
    plan = plan_scale_up(distributor, pending, Node("w", {"cpu": 4, "mem": 8}))
    assert len(plan.new_nodes) == 4  # one workload of cpu 3 per node of cpu 4


def test_round_robin_work_is_submitted_largest_first_when_that_saves_nodes():
    # In the order given, RoundRobin puts one small job on each of the first
    # three nodes, and each big job then needs an empty node of its own: six
    # nodes. Big jobs first fill three nodes and the small ones share a fourth.
    pending = ([Workload(f"small-{n}", {"cpu": 1}) for n in (1, 2, 3)]
               + [Workload(f"big-{n}", {"cpu": 4}) for n in (1, 2, 3)])
    template = Node("w", {"cpu": 4})
    assert len(in_callers_order(RoundRobinDistributor(), pending, template).new_nodes) == 6
    plan = plan_scale_up(RoundRobinDistributor(), pending, template)
    assert len(plan.new_nodes) == 4
    assert plan.order == ["big-1", "big-2", "big-3", "small-1", "small-2", "small-3"]
    assert list(plan.assignments) == plan.order
    assert plan.assignments["small-3"] == "w-4"
    distributor = RoundRobinDistributor()
    assert apply_scale_up(distributor, plan, pending) == plan.assignments
    # Submitted as given instead, the same nodes leave two big jobs waiting.
    fresh = RoundRobinDistributor(plan.new_nodes)
    assert list(fresh.attempt_assign_loads(pending).values()).count(None) == 2


def test_the_order_given_is_kept_when_largest_first_is_no_better():
    pending = [Workload("small", {"cpu": 1}), Workload("big", {"cpu": 6}),
               Workload("gpu-job", {"gpu": 1}), Workload("mid", {"cpu": 3})]
    for distributor in (RoundRobinDistributor(), PrioritizedDistributor(),
                        BinPackDistributor(RUBRIC)):
        plan = plan_scale_up(distributor, pending, Node("w", {"cpu": 8}))
        assert len(plan.new_nodes) == 2
        assert plan.order == ["small", "big", "gpu-job", "mid"]
        assert list(plan.unplaceable) == ["gpu-job"]


def test_largest_first_sorts_by_dominant_share_against_the_biggest_template():
    templates = planning.accept_templates([
        Node("a", {"cpu": 4, "mem": float("inf")}), Node("b", {"cpu": 8, "mem": 16, "gpu": 0})])
    loads = [Workload("x", {"cpu": 2}),                # 2/8 of the biggest cpu
             Workload("y", {"cpu": 1, "mem": 100}),    # mem is unlimited: 1/8
             Workload("z", {"gpu": 1}),                # no template has gpu: 0
             Workload("w", {"cpu": 2, "mem": 0}),      # ties with x, stays after it
             Workload("v", {"cpu": 4, "disk": 9})]     # disk is no template's: 4/8
    assert [load.name for load in planning._largest_first(loads, templates)] == [
        "v", "x", "w", "y", "z"]


def test_a_workload_that_fits_nowhere_changes_nothing():
    distributor = RoundRobinDistributor([Node("a", {"cpu": 2}), Node("b", {"cpu": 2})])
    distributor.attempt_assign_loads([Workload("first", {"cpu": 1})])
    before = distributor.to_dict()
    assert distributor.cursor == 1
    assert distributor.attempt_assign_loads([Workload("huge", {"cpu": 3}),
                                             Workload("gpu", {"gpu": 1})]) == {
        "huge": None, "gpu": None}
    assert distributor.to_dict() == before


# ---------------------------------------------------------- scale up, properties

@settings(max_examples=200, deadline=None)
@given(clusters(), loads("pending", 8, homeless=True), TEMPLATES, st.none() | st.integers(0, 3))
def test_applying_a_scale_up_plan_gives_exactly_its_assignments(
        distributor, pending, templates, cap):
    before = distributor.to_dict()
    plan = plan_scale_up(distributor, pending, templates, max_new_nodes=cap)
    assert distributor.to_dict() == before
    assert cap is None or len(plan.new_nodes) <= cap
    result = apply_scale_up(distributor, plan, pending)
    assert list(result) == plan.order
    assert {name: node for name, node in result.items() if node} == plan.assignments
    assert list(plan.assignments) == [name for name in result if name in plan.assignments]
    assert list(plan.unplaceable) == [name for name in result if name in plan.unplaceable]
    assert set(plan.unplaceable) == {name for name, node in result.items() if node is None}
    if not any("gpu" in load["requirements"] for load in pending) and cap is None:
        assert plan.unplaceable == {}


@st.composite
def ungrouped(draw, prefix, max_size):
    """Pending workload dicts of no aversion group, some needing a gpu (no
    template has one), some a tag only existing nodes bear, some giving
    memory back (asking less than zero), some immune to it."""
    specs = draw(loads(prefix, max_size, homeless=True, tags=True))
    for spec in specs:
        spec["aversion_groups"] = []
        if draw(st.integers(0, 6)) == 0:
            spec["requirements"]["mem"] = -draw(st.sampled_from([0.5, 1, 3]))
        if draw(st.integers(0, 6)) == 0:
            spec["immunities"] = ["mem"]
    return specs


@settings(max_examples=300, deadline=None)
@given(clusters(tags=True), ungrouped("pending", 24), TEMPLATES, st.data())
def test_counting_up_by_leaps_chooses_what_counting_each_count_does(
        distributor, pending, templates, data):
    # (Prioritized with no aversion group pending: the count is found from
    # two trials, not one per count; the same count every time, at every
    # cap; with another strategy both try every count)
    loads = [Workload.from_dict(spec) for spec in pending]
    shapes = planning.accept_templates(templates)
    search = planning._Search(distributor, loads, shapes)
    leaps = []
    real = planning._Search.leap

    def leap(self, *args):
        found = real(self, *args)
        leaps.append(found is not None)
        return found

    for ceiling in sorted({1, 2, len(loads), data.draw(st.integers(1, max(1, len(loads))))}):
        with mock.patch.object(planning._Search, "leap", leap):
            quick = search.count_up(0, ceiling)
        assert quick == search.count_up(0, ceiling, leap=False)
    if distributor.to_dict()["strategy"] != "Prioritized":
        assert not leaps
    assert all(leaps)  # (the check never failed: the reasoning holds)


def test_one_template_plans_place_a_long_queue_in_two_trials_with_prioritized():
    distributor = PrioritizedDistributor([Node(f"n{i}", {"cpu": 16, "mem": 64})
                                          for i in range(5)])
    # (work of 5 to 7 cpu: two to a node, where the bound counts 16 cpu a
    # node, so the count found is far past the bound)
    pending = [Workload(f"w{i}", {"cpu": 5 + i % 3, "mem": 1 + (i * 5) % 11})
               for i in range(300)]
    template = {"name": "t", "resources": {"cpu": 16, "mem": 64}}
    with trials_seen() as seen, \
            mock.patch.object(planning._Search, "left_on_new", autospec=True,
                              side_effect=planning._Search.left_on_new) as alone:
        plan = plan_scale_up(distributor, pending, template)
    runs = [len(mix) for mix, _ in seen]
    # (per order: no new node and the bound, trials on the cluster; the
    # count found, several past the bound, is checked on the new nodes
    # alone, see _Search.left_on_new)
    bound = max(runs)
    assert set(runs) == {0, bound}
    assert len(plan.new_nodes) > bound + 10
    assert len(plan.new_nodes) in {len(call.args[1]) for call in alone.call_args_list}
    with mock.patch.object(planning._Search, "leap", lambda *args: None):
        assert plan_scale_up(distributor, pending, template) == plan


@settings(max_examples=200, deadline=None)
@given(clusters(), loads("pending", 8, homeless=True), TEMPLATES, st.none() | st.integers(0, 3))
def test_choosing_the_order_never_makes_a_plan_worse(distributor, pending, templates, cap):
    before = distributor.to_dict()
    plan = plan_scale_up(distributor, pending, templates, max_new_nodes=cap)
    given = in_callers_order(distributor, pending, templates, max_new_nodes=cap)
    assert distributor.to_dict() == before
    assert given.order == [load["name"] for load in pending]

    def rank(chosen):
        return len(chosen.unplaceable), len(chosen.new_nodes), chosen.cost
    if plan.order == given.order:
        assert plan == given
    else:
        assert distributor.strategy != "BinPack"
        assert rank(plan) < rank(given)


@settings(max_examples=300, deadline=None)
@given(clusters(tags=True), loads("pending", 8, homeless=True, tags=True), TEMPLATES,
       st.none() | st.integers(0, 3))
def test_plans_hold_where_only_existing_nodes_bear_a_tag(distributor, pending, templates, cap):
    # (a workload an existing node takes without new nodes may wait with
    # them, and no template have its tag: the search raised StopIteration;
    # and the two orders set such workloads aside differently, so a plan
    # leaving one waiting could beat a plan that placed everything)
    before = distributor.to_dict()
    plan = plan_scale_up(distributor, pending, templates, max_new_nodes=cap)
    given = in_callers_order(distributor, pending, templates, max_new_nodes=cap)
    assert distributor.to_dict() == before
    assert (len(plan.unplaceable), len(plan.new_nodes), plan.cost) <= \
        (len(given.unplaceable), len(given.new_nodes), given.cost)
    result = apply_scale_up(distributor, plan, pending)
    assert {name: node for name, node in result.items() if node} == plan.assignments
    assert set(plan.unplaceable) == {name for name, node in result.items() if node is None}


def test_the_plans_found_where_a_tag_is_on_existing_nodes_only():
    # (the two cases the test above found first)
    cluster = PrioritizedDistributor([{"name": "n0", "resources": {"cpu": 2, "ssd": 0}}])
    cluster.attempt_assign_loads([{"name": "y", "requirements": {"cpu": 0},
                                   "aversion_groups": ["g"]}])
    pending = [{"name": "w0", "requirements": {"cpu": 1}, "aversion_groups": ["g"]},
               {"name": "w1", "requirements": {"cpu": 2}},
               {"name": "w2", "requirements": {"cpu": 1, "ssd": 0}},
               {"name": "w3", "requirements": {"cpu": 1}}]
    plan = plan_scale_up(cluster, pending, [{"name": "t", "resources": {"cpu": 2}},
                                            {"name": "u", "resources": {"cpu": 4}}])
    assert [node.name for node in plan.new_nodes] == ["u-1"]
    assert list(plan.unplaceable) == ["w2"]
    cluster = RoundRobinDistributor([{"name": "n0", "resources": {"cpu": 3, "ssd": 0}}])
    pending = [{"name": "w0", "requirements": {"cpu": 1, "ssd": 0}},
               {"name": "w1", "requirements": {"cpu": 1}},
               {"name": "w2", "requirements": {"cpu": 2}},
               {"name": "w3", "requirements": {"cpu": 1, "ssd": 0}}]
    plan = plan_scale_up(cluster, pending, {"name": "t", "resources": {"cpu": 2}})
    assert (len(plan.new_nodes), plan.unplaceable) == (2, {})  # (before: 1 node, w3 waiting)


def test_new_nodes_draw_ordinary_work_off_the_node_a_special_workload_needs():
    # (no template has a gpu, so "train" was set aside as no template's
    # and no node was bought, though one node for "web" frees the gpu box)
    cluster = BinPackDistributor({"cpu": 1}, [Node("gpu-box", {"cpu": 4, "gpu": 1})])
    pending = [Workload("web", {"cpu": 4, "gpu": 0}), Workload("train", {"cpu": 1, "gpu": 1})]
    plan = plan_scale_up(cluster, pending, Node("cpu", {"cpu": 4, "gpu": 0}))
    assert [node.name for node in plan.new_nodes] == ["cpu-1"]
    assert plan.assignments == {"web": "cpu-1", "train": "gpu-box"}
    assert plan.unplaceable == {}
    assert apply_scale_up(Distributor.from_dict(cluster.to_dict()), plan, pending) == \
        plan.assignments
    # (a template whose nodes BinPack tries after the gpu box, name after
    # name, draws nothing away: no node, and the reason says both why no
    # template takes "train" and why no node of the cluster does)
    plan = plan_scale_up(cluster, pending, Node("zz", {"cpu": 4, "gpu": 0}))
    assert plan.new_nodes == [] and plan.assignments == {"web": "gpu-box"}
    assert plan.unplaceable == {
        "train": "no template can host it (zz: insufficient gpu (needs 1, 0 left)); "
                 "0/1 nodes fit: 1 insufficient cpu (needs 1, most left 0)"}
    plan = plan_scale_up(cluster, pending, Node("cpu", {"cpu": 4, "gpu": 0}), max_new_nodes=0)
    assert plan.unplaceable["train"].startswith("max_new_nodes=0 reached; no template can")
    # (the cap is named only where more nodes would place it: with
    # Prioritized new nodes draw nothing off n1, and the plan is the same
    # with or without the cap)
    cluster = PrioritizedDistributor([Node("n1", {"cpu": 4, "gpu": 10})])
    pending = [Workload(f"s{n}", {"cpu": 2}) for n in range(4)] + \
        [Workload("big", {"cpu": 1, "gpu": 1})]
    for cap in (None, 1):
        plan = plan_scale_up(cluster, pending, {"name": "b", "resources": {"cpu": 4}},
                             max_new_nodes=cap)
        assert [node.name for node in plan.new_nodes] == ["b-1"]
        assert list(plan.unplaceable) == ["big"]
        assert plan.unplaceable["big"].startswith("no template can host it")


def test_work_drawn_off_a_special_node_is_counted_by_halving_not_one_count_at_a_time():
    # (RoundRobin deals the ordinary work over every node, the GPU node
    # included: each new node takes its share, and the GPU jobs wait for
    # the share left on the GPU node; the count was searched one at a time)
    cluster = RoundRobinDistributor([Node("gpu-0", {"cpu": 200, "gpu": 0})])
    pending = [Workload(f"plain-{n}", {"cpu": 1}) for n in range(200)] + \
        [Workload(f"train-{n}", {"cpu": 1, "gpu": 0}) for n in range(200)]
    with trials_seen() as seen:
        plan = plan_scale_up(cluster, pending, {"name": "cpu", "resources": {"cpu": 4}})
    tried = [mix for mix, _ in seen]
    assert len(set(tried)) <= 12  # (no node, the 200 each, and halving; 200 one by one)
    assert len(plan.new_nodes) == 199 and list(plan.unplaceable) == ["train-199"]


def fewest_waiting(cluster, pending, template, order):
    """(waiting, count) at its least over every count of ``template``, from
    none to one a workload and one more, ``pending`` (workloads or dicts)
    submitted in ``order``, new nodes named as the planner names them."""
    by_name = {load["name"] if isinstance(load, dict) else load.name: load for load in pending}
    taken = {node.name for node in cluster.nodes}
    names = [name for name in (f"{template['name']}-{n}" for n in range(1, 2 * len(pending) + 2))
             if name not in taken]

    def waiting(count):
        copy = Distributor.from_dict(cluster.to_dict())
        copy.add_nodes([Node(name, template["resources"]) for name in names[:count]])
        result = copy.attempt_assign_loads([by_name[name] for name in order])
        return list(result.values()).count(None)

    return min((waiting(count), count) for count in range(len(pending) + 2))


def _tagged_case(seed):
    """A seeded cluster where some nodes bear the tag ``ssd`` (no template
    has it), some work already placed, some nodes cordoned; pending work,
    a third of it asking for the tag; one template."""
    import random
    rng = random.Random(seed)
    strategy = rng.choice(["Prioritized", "RoundRobin", "BinPack"])
    nodes = []
    for number in range(rng.randint(1, 4)):
        room = {"cpu": rng.randint(1, 8), "mem": rng.randint(1, 8)}
        if rng.random() < 0.5:
            room["ssd"] = 0
        nodes.append(Node(f"node-{number}", room))
    cluster = make(strategy, nodes)
    cluster.attempt_assign_loads([
        Workload(f"p{n}", {"cpu": rng.randint(0, 3), "mem": rng.randint(0, 3)},
                 aversion_groups=rng.choice([[], ["a"]])) for n in range(rng.randint(0, 5))])
    for node in nodes:
        if rng.random() < 0.15:
            cluster.cordon(node.name)
    pending = []
    for number in range(rng.randint(1, 8)):
        need = {"cpu": rng.choice([0, 0.5, 1, 2, 3, 4]), "mem": rng.choice([0, 1, 2, 3, 4])}
        if rng.random() < 0.3:
            need["ssd"] = 0
        pending.append(Workload(f"w{number}", need,
                                aversion_groups=rng.choice([[], [], ["a"], ["b"]])))
    template = {"name": rng.choice(["t", "zz", "a"]),
                "resources": {"cpu": rng.randint(2, 8), "mem": rng.randint(2, 8)}}
    return cluster, pending, template


def test_a_round_robin_plan_takes_the_count_that_places_a_tagged_workload():
    # (the planner tried one new node per workload in the way on the tagged
    # node: 2 nodes placed no more, and it kept 1; RoundRobin's cursor
    # placed everything with 3)
    cluster = RoundRobinDistributor(
        [Node("node-1", {"cpu": 1, "mem": 4, "ssd": 0})] +
        [Node(f"node-{n}", {"cpu": 1, "mem": 1}) for n in (2, 3, 4, 5)])
    for n in (2, 3, 4, 5):
        cluster.cordon(f"node-{n}")
    pending = [Workload("pending-1", {"cpu": 0.5, "mem": 0}),
               Workload("pending-2", {"cpu": 0.5, "mem": 0, "ssd": 0}),
               Workload("pending-3", {"cpu": 0, "mem": 4}),
               Workload("pending-4", {"cpu": 0, "mem": 0, "ssd": 0}),
               Workload("pending-5", {"cpu": 0, "mem": 0, "ssd": 0}),
               Workload("pending-6", {"cpu": 0.5, "mem": 0.5, "ssd": 0}),
               Workload("pending-7", {"cpu": 3, "mem": 3})]
    plan = plan_scale_up(cluster, pending, {"name": "node", "resources": {"cpu": 4, "mem": 6}})
    assert (len(plan.new_nodes), plan.unplaceable) == (3, {})
    assert apply_scale_up(cluster, plan, pending) == {
        name: plan.assignments.get(name) for name in plan.order}


# (the first ten left more waiting than some count of the template before
# the planner tried nodes for the work in the way of a tagged workload)
@pytest.mark.parametrize("seed", [229, 351, 496, 508, 565, 586, 671, 974, 1067, 1235,
                                  *range(200)])
def test_seeded_one_template_plans_leave_as_few_waiting_as_any_count(seed):
    cluster, pending, template = _tagged_case(seed)
    plan = plan_scale_up(cluster, pending, template)
    assert (len(plan.unplaceable), len(plan.new_nodes)) <= \
        fewest_waiting(cluster, pending, template, plan.order)


@settings(max_examples=300, deadline=None)
@given(clusters(tags=True), loads("pending", 7, tags=True), TEMPLATES.map(lambda found: found[0]))
def test_one_template_plans_leave_as_few_waiting_as_any_count_of_it(distributor, pending,
                                                                    template):
    # (workloads asking for the tag only existing nodes bear wait where
    # other pending work took those nodes; every count of the template
    # up to one a workload, in the plan's order, leaves no fewer waiting)
    plan = plan_scale_up(distributor, pending, template)
    assert (len(plan.unplaceable), len(plan.new_nodes)) <= \
        fewest_waiting(distributor, pending, template, plan.order)


@settings(max_examples=200, deadline=None)
@given(clusters(), loads("pending", 10, homeless=True), st.permutations(range(10)))
def test_workloads_that_fit_nowhere_can_be_left_out_of_a_call(distributor, pending, shuffle):
    """What the plans rely on when they list unplaceable work in ``order``."""
    pending = [pending[n] for n in shuffle if n < len(pending)]
    copy = Distributor.from_dict(distributor.to_dict())
    result = distributor.attempt_assign_loads(pending)
    placed = [load for load in pending if result[load["name"]] is not None]
    assert copy.attempt_assign_loads(placed) == {
        name: node for name, node in result.items() if node is not None}
    assert copy.to_dict() == distributor.to_dict()


# (shortcuts the search takes: each must choose what the long way does)

SIGNED = st.sampled_from([-2, -1, 0, 0.5, 1, 2, 3, 4])


@st.composite
def rough_problems(draw, strategies=("Prioritized", "RoundRobin", "BinPack", "BestFit"),
                   groups=True):
    """A cluster of any strategy with work placed, wards, tags and cordons;
    pending work asking less than zero, immune to wards, some that no
    template hosts; and up to three templates, one of them maybe unlimited."""
    def quantities(signed):
        made = {key: draw(signed) for key in ("cpu", "mem") if draw(st.integers(0, 5))}
        if draw(st.integers(0, 5)) == 0:
            made["gpu"] = draw(SIGNED)
        if draw(st.integers(0, 5)) == 0:
            made["ssd"] = 0
        return made

    def load(prefix, number):
        spec = {"name": f"{prefix}-{number}", "requirements": quantities(SIGNED)}
        if draw(st.integers(0, 3)) == 0:
            spec["immunities"] = [draw(st.sampled_from(["spot", "cpu"]))]
        if groups and draw(st.integers(0, 3)) == 0:
            spec["aversion_groups"] = [draw(st.sampled_from("ab"))]
        return spec

    strategy = draw(st.sampled_from(strategies))
    nodes = []
    for number in range(draw(st.integers(0, 4))):
        resources = {key: draw(st.integers(0, 6)) for key in ("cpu", "mem")}
        if draw(st.integers(0, 4)) == 0:
            resources["spot"] = float("-inf")
        if draw(st.integers(0, 3)) == 0:
            resources["ssd"] = 0
        nodes.append(Node(f"node-{number}", resources))
    distributor = (lighthouse.BestFitDistributor(nodes) if strategy == "BestFit"
                   else make(strategy, nodes))
    distributor.attempt_assign_loads([load("placed", n) for n in range(draw(st.integers(0, 6)))])
    for node in distributor.nodes:
        if draw(st.integers(0, 4)) == 0:
            distributor.cordon(node.name)
    pending = Workload.from_list([load("pending", n) for n in range(draw(st.integers(0, 12)))])
    templates = []
    for number in range(draw(st.integers(1, 3))):
        resources = {key: draw(st.sampled_from([1, 2, 2.5, 4, 6])) for key in ("cpu", "mem")}
        if draw(st.integers(0, 5)) == 0:
            resources[draw(st.sampled_from(["cpu", "gpu"]))] = float("inf")
        if draw(st.integers(0, 7)) == 0:
            resources["spot"] = float("-inf")
        templates.append({"name": f"t{number}", "resources": resources,
                          "cost": draw(st.integers(1, 3))})
    return distributor, pending, templates


def search_of(distributor, pending, templates):
    return planning._Search(distributor, pending, planning.accept_templates(templates))


@settings(max_examples=300, deadline=None)
@given(rough_problems(), st.data())
def test_a_set_of_new_nodes_said_too_small_leaves_work_waiting(problem, data):
    search = search_of(*problem)
    mix = tuple(data.draw(st.lists(st.integers(0, len(search.templates) - 1), max_size=6)))
    if search.short(mix):
        assert search.missing(mix) >= 1


@settings(max_examples=150, deadline=None)
@given(rough_problems(), st.data())
def test_trimming_by_proof_keeps_what_trimming_by_trials_keeps(problem, data):
    search = search_of(*problem)
    mix = tuple(data.draw(st.lists(st.integers(0, len(search.templates) - 1), max_size=6)))
    assert search.trim(mix) == search.trim(mix, prove=False)


@settings(max_examples=200, deadline=None)
@given(rough_problems(strategies=("Prioritized",), groups=False))
def test_growing_by_probes_chooses_the_nodes_placing_everything_again_does(problem):
    search = search_of(*problem)
    assert search.joins_last
    for pick in (search.most_taken, search.first_host):
        assert search.grow(8, pick) == search.grow(8, pick, shortcuts=False)


@settings(max_examples=200, deadline=None)
@given(rough_problems())
def test_growing_one_first_host_by_proof_chooses_the_nodes_trials_do(problem):
    search = search_of(*problem)
    assert search.grow(8, search.first_host) == search.grow(8, search.first_host,
                                                            shortcuts=False)


@pytest.mark.parametrize("pending, nodes", [
    # (a workload asking less than zero gives the first new node back room
    # after one that waited passed it: the next one is not put there)
    ([("a", 3), ("b", 3), ("d", 3), ("c", -3)], 3),
    # (a workload no template hosts takes room a workload asking less than
    # zero gave a new node, before a hostable one comes)
    ([("neg", -4), ("big", 10), ("x", 5)], 2)])
def test_growing_by_probes_sees_room_given_back_as_placing_everything_again_does(
        pending, nodes):
    search = search_of(PrioritizedDistributor(), [Workload(name, {"cpu": cpu})
                                                  for name, cpu in pending],
                       [{"name": "t", "resources": {"cpu": 4 if nodes == 3 else 8}}])
    for pick in (search.most_taken, search.first_host):
        assert search.grow(8, pick) == search.grow(8, pick, shortcuts=False) == (0,) * nodes


def test_what_a_workload_immune_to_a_resource_asks_of_it_is_no_demand():
    search = search_of(PrioritizedDistributor(), [Workload("w", {"cpu": 100}, ["cpu"])],
                       [{"name": "t", "resources": {"cpu": 4}}])
    assert not search.short((0,)) and search.missing((0,)) == 0
    search = search_of(PrioritizedDistributor(), [Workload("v", {"cpu": 3}),
                                                  Workload("w", {"cpu": 3})],
                       [{"name": "t", "resources": {"cpu": 4}}, {"name": "u", "resources": {
                           "cpu": 1, "mem": 1}}])
    assert [search.short(mix) for mix in [(0,), (0, 1), (0, 0)]] == [True, True, False]
    assert search.missing((0, 1)) == 1 and search.missing((0, 0)) == 0


def test_demand_equal_to_the_room_is_not_too_much():
    distributor = PrioritizedDistributor([Node("n", {"cpu": 1.5})])
    search = search_of(distributor, [Workload(f"w{n}", {"cpu": 1.25}) for n in range(3)]
                       + [Workload("back", {"cpu": -0.25}), Workload("last", {"cpu": 0.5})],
                       [{"name": "t", "resources": {"cpu": 1.25}}])
    # (demand 4.25: room 1.5, 0.25 given back, 1.25 a new node)
    assert [search.short(mix) for mix in [(), (0,), (0, 0)]] == [True, True, False]
    assert search.missing((0, 0)) == 0


def test_one_first_host_is_no_shortcut_where_work_no_template_hosts_may_wait():
    # (the gpu job holds the existing node without new nodes; a new node
    # may draw the others off it, and no template hosts the gpu job)
    distributor = RoundRobinDistributor([Node("n", {"cpu": 4, "gpu": 1})])
    search = search_of(distributor, [Workload("gpu-job", {"cpu": 1, "gpu": 1}),
                                     Workload("a", {"cpu": 3}), Workload("b", {"cpu": 3})],
                       [{"name": "t", "resources": {"cpu": 4}}])
    assert search.same_first_host is None
    assert search.grow(8, search.first_host) == search.grow(8, search.first_host,
                                                            shortcuts=False)


@pytest.mark.parametrize("seed", range(6))
def test_growing_by_probes_on_clusters_of_many_blocks(seed):
    rng = random.Random(seed)
    distributor = PrioritizedDistributor([
        Node(f"n{number}", {"cpu": rng.choice([2, 4, 8]), "mem": rng.choice([4, 8, 16])})
        for number in range(150)])
    distributor.attempt_assign_loads([
        {"name": f"r{number}",
         "requirements": {"cpu": rng.choice([1, 2, 3]), "mem": rng.choice([1, 2, 4])}}
        for number in range(300)])
    pending = [Workload(f"p{number}", {"cpu": rng.choice([-1, 0.5, 1, 2, 3]),
                                       "mem": rng.choice([0.5, 1, 2, 4])})
               for number in range(120)]
    search = search_of(distributor, pending, [
        {"name": "s", "resources": {"cpu": 4, "mem": 8}},
        {"name": "l", "resources": {"cpu": 8, "mem": 16}}])
    assert search.joins_last and search.unplaced
    for pick in (search.most_taken, search.first_host):
        assert search.grow(40, pick) == search.grow(40, pick, shortcuts=False)


def test_room_a_workload_no_template_hosts_gives_back_counts_in_the_bound():
    # (RoundRobin's cursor passes the existing node: with one new node,
    # "a" goes there, "h" (a gpu job no template hosts, asking less than
    # zero cpu) then fits the existing node and gives it 8 cpu, and both
    # "b" jobs go there too; the bound once counted demand 12 against room
    # 2 and asked for two nodes)
    distributor = RoundRobinDistributor([Node("e", {"cpu": 3, "gpu": 1, "mem": 1}),
                                         Node("f", {"x": 1})])
    distributor.attempt_assign_loads([{"name": "r", "requirements": {"cpu": 1}}])
    pending = [Workload("a", {"cpu": 2, "mem": 1}),
               Workload("h", {"gpu": 1, "mem": 1, "cpu": -8}),
               Workload("b1", {"cpu": 5}), Workload("b2", {"cpu": 5})]
    template = {"name": "t", "resources": {"cpu": 5, "mem": 1}}
    assert lower_bound(distributor, pending, template) == 1
    plan = plan_scale_up(distributor, pending, template)
    assert [node.name for node in plan.new_nodes] == ["t-1"]
    assert plan.assignments == {"a": "t-1", "h": "e", "b1": "e", "b2": "e"}


def test_the_shortcuts_save_trials_on_a_long_queue_with_three_templates():
    distributor = PrioritizedDistributor([Node(f"n{i}", {"cpu": 16, "mem": 64})
                                          for i in range(5)])
    pending = [Workload(f"p{i}", {"cpu": (0.5, 1, 2, 4)[i % 4], "mem": (1, 2, 4, 8, 16)[i % 5]})
               for i in range(300)]
    templates = [{"name": "small", "resources": {"cpu": 8, "mem": 32}, "cost": 1},
                 {"name": "mid", "resources": {"cpu": 16, "mem": 64}, "cost": 1.8},
                 {"name": "large", "resources": {"cpu": 32, "mem": 128}, "cost": 3.5}]
    with trials_seen() as seen:
        plan = plan_scale_up(distributor, pending, templates)
    fast = sum(new for _, new in seen)
    real_grow = planning._Search.grow
    with trials_seen() as seen, \
            mock.patch.object(planning._Search, "short", lambda *_: False), \
            mock.patch.object(planning._Search, "grow", lambda search, ceiling, pick: real_grow(
                search, ceiling, pick, shortcuts=False)):
        assert plan_scale_up(distributor, pending, templates) == plan
    assert fast * 4 < sum(new for _, new in seen)


@settings(max_examples=200, deadline=None)
@given(clusters(), loads("pending", 8), TEMPLATES)
def test_never_more_nodes_than_one_node_at_a_time(distributor, pending, templates):
    plan = plan_scale_up(distributor, pending, templates)
    shapes = [(template["name"], template["resources"]) for template in templates]
    added, result = one_node_at_a_time(distributor, Workload.from_list(pending), shapes)
    assert None not in result.values()
    assert plan.unplaceable == {}
    assert len(plan.new_nodes) <= len(added)
    assert lower_bound(distributor, pending, templates) <= len(plan.new_nodes)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(["Prioritized", "RoundRobin", "BinPack"]),
       st.lists(st.fixed_dictionaries({"cpu": st.integers(0, 4), "mem": st.integers(0, 4)}),
                max_size=2),
       st.lists(st.fixed_dictionaries({"cpu": st.integers(1, 4), "mem": st.integers(0, 3)}),
                min_size=1, max_size=5),
       st.fixed_dictionaries({"cpu": st.integers(4, 6), "mem": st.integers(3, 6)}))
def test_lower_bound_optimum_and_plan_in_order_on_tiny_instances(
        strategy, rooms, needs, capacity):
    distributor = make(strategy, [Node(f"node-{n}", room) for n, room in enumerate(rooms)])
    pending = [Workload(f"job-{n}", need) for n, need in enumerate(needs)]
    bound = lower_bound(distributor, pending, Node("w", capacity))
    best = fewest_new_nodes(rooms, needs, capacity)
    plan = plan_scale_up(distributor, pending, Node("w", capacity))
    assert plan.unplaceable == {}
    assert bound <= best <= len(plan.new_nodes)


# ------------------------------------------------------------ scale down

def test_scale_down_removes_the_most_empty_nodes_and_keeps_the_rest():
    distributor = PrioritizedDistributor([Node(f"node-{n}", {"cpu": 4}) for n in (1, 2, 3)])
    distributor.attempt_assign_loads([Workload("a", {"cpu": 3}), Workload("b", {"cpu": 1}),
                                      Workload("c", {"cpu": 2})])
    assert distributor.assignments == {"a": "node-1", "b": "node-1", "c": "node-2"}
    plan = plan_scale_down(distributor)
    assert plan.removable == ["node-3"]
    assert plan.moves == {}
    # The reason describes the cluster once the node's other workloads moved:
    # b went to node-2, leaving 1 cpu there, so a (3 cpu) had to stay.
    assert plan.kept == {"node-2": "c cannot move: 0/2 nodes fit: "
                                   "1 insufficient cpu (needs 2, most left 0), 1 cordoned",
                         "node-1": "a cannot move: 0/2 nodes fit: "
                                   "1 cordoned, 1 insufficient cpu (needs 3, most left 1)"}
    assert str(plan) == "\n".join([
        "remove 1 node: node-3", "move no workloads", "keep 2 nodes",
        "  node-2: " + plan.kept["node-2"], "  node-1: " + plan.kept["node-1"]]).replace(
        "keep 2 nodes", "keep 2 nodes:")


def test_scale_down_moves_work_off_a_node_when_there_is_room():
    distributor = PrioritizedDistributor([Node(f"node-{n}", {"cpu": 4}) for n in (1, 2)])
    distributor.attempt_assign_loads([Workload("a", {"cpu": 2})])
    distributor.cordon("node-1")
    plan = plan_scale_down(distributor)
    assert (plan.removable, plan.moves) == (["node-1"], {"a": "node-2"})
    assert plan.to_dict() == {"removable": ["node-1"], "moves": {"a": "node-2"},
                              "kept": {"node-2": "a cannot move: 0/1 nodes fit: 1 cordoned"}}


def test_values_order_equally_empty_nodes_and_max_nodes_caps():
    distributor = RoundRobinDistributor([Node(f"node-{n}", {"cpu": 4}) for n in (1, 2, 3)])
    plan = plan_scale_down(distributor, max_nodes=2, values={"node-3": 0.9, "node-2": 0.5})
    assert plan.removable == ["node-3", "node-2"]
    assert plan.kept == {"node-1": "max_nodes=2 reached"}
    assert plan_scale_down(distributor).removable == ["node-1", "node-2", "node-3"]
    assert plan_scale_down(PrioritizedDistributor()).removable == []


def test_cordoned_nodes_go_first():
    distributor = PrioritizedDistributor([Node(f"node-{n}", {"cpu": 4}) for n in (1, 2, 3)])
    distributor.attempt_assign_loads([Workload("a", {"cpu": 1}), Workload("b", {"cpu": 1})])
    distributor.cordon("node-1")
    plan = plan_scale_down(distributor, max_nodes=1, values={"node-3": 1})
    assert plan.removable == ["node-1"]
    assert plan.moves == {"a": "node-2", "b": "node-2"}


@pytest.mark.parametrize("values, error, words", [
    ({"node-9": 0.5}, InvalidInputError, "node 'node-9'"),
    ({"node-1": 1.5}, InvalidInputError, "node 'node-1'.*from 0 to 1"),
    ({"node-1": -0.1}, InvalidInputError, "node 'node-1'"),
    ({"node-1": float("nan")}, InvalidInputError, "node 'node-1'"),
    ({"node-1": "high"}, InvalidTypeError, "node 'node-1'"),
    ([("node-1", 0.5)], InvalidTypeError, "values"),
])
def test_bad_values_are_refused(values, error, words):
    with pytest.raises(error, match=words):
        plan_scale_down(small_cluster(), values=values)


def test_bad_max_nodes_is_refused():
    with pytest.raises(InvalidInputError, match="max_nodes"):
        plan_scale_down(small_cluster(), max_nodes=-2)
    with pytest.raises(InvalidTypeError, match="max_nodes"):
        plan_scale_down(small_cluster(), max_nodes=1.5)


@settings(max_examples=200, deadline=None)
@given(st.data(), clusters(), st.none() | st.integers(0, 3))
def test_applying_a_scale_down_plan_moves_exactly_as_planned(data, distributor, cap):
    names = [node.name for node in distributor.nodes]
    # (Quantities keep at most 300 decimal places: no subnormal floats.)
    shares = st.floats(0, 1).map(lambda share: share if share > 1e-280 else 0.0)
    values = data.draw(st.dictionaries(st.sampled_from(names), shares)
                       if names else st.none())
    keep = data.draw(st.lists(st.sampled_from(names), unique=True) if names else st.just([]))
    before = distributor.to_dict()
    plan = plan_scale_down(distributor, max_nodes=cap, values=values, keep=keep)
    assert distributor.to_dict() == before
    assert cap is None or len(plan.removable) <= cap
    assert not set(keep) & set(plan.removable)
    assert all(plan.kept[name] == "named in keep" for name in keep)
    assert apply_scale_down(distributor, plan) == plan.moves
    assert [node.name for node in distributor.nodes] == [
        name for name in names if name not in plan.removable]
    assert set(plan.kept) == set(names) - set(plan.removable)
    if cap is None:
        assert plan_scale_down(distributor, keep=keep).removable == []


def test_kept_nodes_stay_take_work_and_leave_the_cap_to_the_others():
    distributor = PrioritizedDistributor([Node(f"node-{n}", {"cpu": 4}) for n in (1, 2, 3)])
    distributor.attempt_assign_loads([Workload("a", {"cpu": 1}), Workload("b", {"cpu": 4}),
                                      Workload("c", {"cpu": 1})])
    assert distributor.assignments == {"a": "node-1", "b": "node-2", "c": "node-1"}
    # node-1 is the emptiest but kept; node-3 (empty) goes, not counting it
    plan = plan_scale_down(distributor, max_nodes=1, keep=["node-1"])
    assert plan.removable == ["node-3"] and plan.moves == {}
    assert plan.kept["node-1"] == "named in keep"
    distributor.release_loads(["b"])
    # work moves onto a kept node
    plan = plan_scale_down(distributor, keep=("node-1",))
    assert plan.removable == ["node-2", "node-3"] and plan.moves == {}
    distributor.attempt_assign_loads([Workload("d", {"cpu": 3})])
    assert distributor.assignments["d"] == "node-2"
    plan = plan_scale_down(distributor, keep=["node-1"])
    assert plan.removable == ["node-3"]  # (d cannot join a and c on node-1)
    distributor.release_loads(["a"])
    plan = plan_scale_down(distributor, keep=["node-1"])
    assert plan.removable == ["node-3", "node-2"] and plan.moves == {"d": "node-1"}


@pytest.mark.parametrize("keep, error, words", [
    (["node-9"], InvalidInputError, r"keep\[0\]: node 'node-9': no such node"),
    ("node-1", InvalidTypeError, "keep: expected a list of node names"),
    ({"node-1": 1}, InvalidTypeError, "keep: expected a list"),
    (["node-1", 3], InvalidTypeError, r"keep\[1\]: expected a node name"),
])
def test_bad_keep_is_refused(keep, error, words):
    with pytest.raises(error, match=words):
        plan_scale_down(small_cluster(), keep=keep)


def test_the_names_are_exported():
    for name in ("plan_scale_up", "plan_scale_down", "ScaleUpPlan", "ScaleDownPlan"):
        assert name in lighthouse.__all__
        assert hasattr(lighthouse, name)
