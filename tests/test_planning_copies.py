"""The planners' copies: Distributor._replica copies the distributor from its
nodes and workloads as they are, instead of reading its snapshot again, and
plan_scale_up's trials place the pending work on one copy and undo it
(Distributor._placed_on_trial) instead of placing it on a copy each: the
copies, and so the plans, are the same."""
from decimal import Decimal
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from instances import RUBRICS, STRATEGIES, batches, clusters, distributor_of, node_specs
from pylighthouse import Distributor, Node, Workload, plan_scale_up, planning
from test_planning import rough_problems, search_of


def written(distributor):
    """Everything a distributor holds, each quantity as it is written (so
    that 0.50 and 0.5, or 2.0 and 2, differ), in order."""
    return (type(distributor), distributor.to_dict(), [
        (slot.name, slot.cordoned, slot.below,
         [(key, str(value)) for key, value in slot.node.resources.items()],
         [(key, str(value)) for key, value in slot.remaining.items()],
         [(name, [(key, str(value)) for key, value in load.requirements.items()],
           sorted(load.immunities), sorted(load.aversion_groups))
          for name, load in slot.workloads.items()],
         sorted(slot.groups.items()))
        for slot in distributor._slots.values()],
        sorted((group, sorted(nodes.items())) for group, nodes in
               distributor._group_nodes.items()))


@st.composite
def written_many_ways(draw):
    """Node and workload specs whose quantities are written as floats,
    integers, decimals with trailing zeros and with exponents (1E+1)."""
    ways = st.sampled_from([lambda value: value, float, lambda value: Decimal(str(value)),
                            lambda value: Decimal(str(value)) * Decimal("1.00"),
                            lambda value: Decimal(str(value)).normalize()])

    def rewrite(quantities):
        return {key: draw(ways)(value) if isinstance(value, int) or (
            isinstance(value, float) and value == value and abs(value) != float("inf"))
            else value for key, value in quantities.items()}
    nodes = [dict(spec, resources=rewrite(spec["resources"])) for spec in draw(clusters(7))]
    loads = [dict(spec, requirements=rewrite(spec["requirements"]))
             for spec in draw(batches("w", 12))]
    return nodes, loads


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(STRATEGIES), RUBRICS, written_many_ways(), st.data())
def test_a_replica_is_what_reading_the_snapshot_again_makes(strategy, rubric, specs, data):
    nodes, loads = specs
    original = distributor_of(strategy, rubric, nodes)
    original.attempt_assign_loads(loads)
    for node in original.nodes:
        if data.draw(st.integers(0, 4)) == 0:
            original.cordon(node.name)
    base = Distributor.from_dict(original.to_dict())  # (as the planners read it)
    replica, fresh = base._replica(), Distributor.from_dict(base.to_dict())
    assert written(replica) == written(fresh)
    # and it decides as that copy does
    more = [dict(spec, name=f"x-{spec['name']}") for spec in data.draw(batches("x", 8))]
    assert replica.attempt_assign_loads(more) == fresh.attempt_assign_loads(more)
    assert written(replica) == written(fresh)
    assert written(base) == written(Distributor.from_dict(original.to_dict()))


def read_again(distributor):
    """The copy the planner made before: from the snapshot."""
    return Distributor.from_dict(distributor.to_dict())


def on_a_copy(distributor, nodes, loads):
    """A trial as the planner made it before: on a copy of its own."""
    copy = distributor._replica()
    copy.add_nodes(nodes)
    return copy.attempt_assign_loads(loads)


@pytest.mark.parametrize("patched, old_way", [("_replica", read_again),
                                              ("_placed_on_trial", on_a_copy)])
@settings(max_examples=200, deadline=None)
@given(rough_problems(), st.none() | st.integers(0, 4))
def test_plans_are_those_of_the_old_way(patched, old_way, problem, cap):
    distributor, pending, templates = problem
    plan = plan_scale_up(distributor, pending, templates, max_new_nodes=cap)
    with mock.patch.object(Distributor, patched, old_way):
        expected = plan_scale_up(distributor, pending, templates, max_new_nodes=cap)
    assert plan.to_dict() == expected.to_dict()


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(STRATEGIES), RUBRICS, clusters(6), st.data())
def test_an_undone_trial_leaves_a_distributor_that_decides_as_a_fresh_copy(
        strategy, rubric, nodes, data):
    original = distributor_of(strategy, rubric, nodes)
    original.attempt_assign_loads(data.draw(batches("w", 10)))
    for node in original.nodes:
        if data.draw(st.integers(0, 4)) == 0:
            original.cordon(node.name)
    base = Distributor.from_dict(original.to_dict())  # (as the planners read it)
    for trial in range(data.draw(st.integers(1, 3))):
        new = [Node.from_dict(data.draw(node_specs(f"new-{trial}-{number}")))
               for number in range(data.draw(st.integers(0, 3)))]
        pending = data.draw(batches(f"p{trial}", 10))
        assert base._placed_on_trial(new, pending) == on_a_copy(base, new, pending)
        fresh = Distributor.from_dict(original.to_dict())
        assert written(base) == written(fresh)
    if strategy == "BestFit":  # (the sums of room it keeps as nodes change)
        keys = ["cpu", "mem", "disk", "gpu", "ssd", "spot"]
        assert base._room_sums(keys, {}) == fresh._room_sums(keys, {})
        assert base._room_sums(keys, {}, {}) == fresh._room_sums(keys, {}, {})
    # What it decides next: nodes joining, new work, work given back, as a
    # fresh copy decides it.
    more = [data.draw(node_specs(f"more-{number}")) for number in range(2)]
    base.add_nodes(more)
    fresh.add_nodes(more)
    batch = data.draw(batches("x", 10))
    assert base.attempt_assign_loads(batch) == fresh.attempt_assign_loads(batch)
    placed = sorted(base.assignments)
    gone = data.draw(st.lists(st.sampled_from(placed), unique=True)) if placed else []
    base.release_loads(gone)
    fresh.release_loads(gone)
    again = [dict(spec, name=f"y-{spec['name']}") for spec in batch[::-1]]
    assert base.attempt_assign_loads(again) == fresh.attempt_assign_loads(again)
    assert written(base) == written(fresh)


# BinPack's trials: every order of a mix is one trial (_Search._key).

def every_order_tried(search, mix):
    """Where the work goes with the nodes of ``mix`` joining in that
    order: a trial of its own, whatever the search knows."""
    return search.base._placed_on_trial(search.nodes(tuple(mix)), search.loads)


@settings(max_examples=300, deadline=None)
@given(rough_problems(strategies=("BinPack",)), st.data())
def test_binpack_places_alike_whatever_order_new_nodes_join_in(problem, data):
    """The fact the search relies on: with templates of distinct names,
    BinPack places the pending work alike for every order of a mix (it
    tries nodes by score, then name, and the names come out the same)."""
    distributor, pending, templates = problem
    search = search_of(distributor, pending, templates)
    assert search.unordered  # (rough_problems names its templates t0, t1, t2)
    mix = data.draw(st.lists(st.integers(0, len(templates) - 1), max_size=6))
    shuffled = data.draw(st.permutations(mix))
    assert every_order_tried(search, shuffled) == every_order_tried(search, mix)
    assert search.run(shuffled) == every_order_tried(search, mix)


@settings(max_examples=200, deadline=None)
@given(rough_problems(), st.none() | st.integers(0, 4))
def test_plans_are_those_of_a_trial_per_order(problem, cap):
    """Plans with one trial per count of templates (BinPack) are those of
    a trial per order of the new nodes, for every strategy."""
    distributor, pending, templates = problem
    plan = plan_scale_up(distributor, pending, templates, max_new_nodes=cap)
    with mock.patch.object(planning._Search, "_key", lambda self, mix: tuple(mix)):
        expected = plan_scale_up(distributor, pending, templates, max_new_nodes=cap)
    assert plan.to_dict() == expected.to_dict()


@pytest.mark.parametrize("strategy, names, trials", [
    ("BinPack", ["small", "large"], 1), ("BinPack", ["node", "node"], 3),
    ("Prioritized", ["small", "large"], 3), ("RoundRobin", ["small", "large"], 3),
    ("BestFit", ["small", "large"], 3)])
def test_a_trial_serves_every_order_only_where_order_makes_no_difference(
        strategy, names, trials):
    """BinPack with templates of distinct names tries a count of templates
    once, whatever the order; with two templates of one name (their nodes'
    numbers then depend on the order), and for the strategies whose order
    depends on the order nodes joined in, each order is a trial."""
    nodes = [{"name": f"n{at}", "resources": {"cpu": 4, "mem": 8}} for at in range(3)]
    distributor = distributor_of(strategy, {"cpu": 1, "mem": 0.25}, nodes)
    pending = [{"name": f"p{at}", "requirements": {"cpu": 3, "mem": 2}} for at in range(6)]
    templates = [{"name": names[0], "resources": {"cpu": 4, "mem": 8}},
                 {"name": names[1], "resources": {"cpu": 8, "mem": 16}, "cost": 2}]
    search = search_of(distributor, Workload.from_list(pending), templates)
    # (Prioritized's are placements on the new nodes alone, see
    # _Search.left_on_new; the others', trials on the cluster)
    evaluated = "left_on_new" if strategy == "Prioritized" else "run"
    with mock.patch.object(planning._Search, evaluated, autospec=True,
                           side_effect=getattr(planning._Search, evaluated)) as trial:
        for mix in [(0, 1, 1), (1, 0, 1), (1, 1, 0)]:
            search.missing(mix)
    assert trial.call_count == trials


def test_binpack_tries_each_order_when_two_templates_share_a_name():
    """Two templates named alike: their nodes are numbered in the order they
    come, so an order changes which node comes first among equal scores.
    Here p1 goes to node-1 either way; only when node-1 is the 8-memory
    template does p0 then find no room."""
    distributor = distributor_of("BinPack", {"cpu": 1, "mem": 0.25}, [])
    templates = [{"name": "node", "resources": {"cpu": 3, "mem": 4}},
                 {"name": "node", "resources": {"cpu": 2, "mem": 8}}]
    pending = Workload.from_list([{"name": "p0", "requirements": {"cpu": 0, "mem": 8}},
                                  {"name": "p1", "requirements": {"cpu": 2, "mem": 1}}])
    search = search_of(distributor, pending, templates)
    assert not search.unordered
    assert (search.missing((0, 1)), search.missing((1, 0))) == (0, 1)


# Counting up one template and the greedy plans stop at the fewest nodes
# that placed everything (_Search.each_alone, _Search.capped_at).

def every_template_counted(search, ceiling):
    """The plans of each template alone as the search made them before:
    every template that hosts what waits counted up to ``ceiling``."""
    return [search.count_up(index, ceiling) for index in range(len(search.templates))
            if all(search.hosts(index, load) for load in search.waiting)]


@settings(max_examples=300, deadline=None)
@given(rough_problems(), st.none() | st.integers(0, 4))
def test_plans_are_those_of_uncapped_counts(problem, cap):
    """Plans with the counts capped at the fewest nodes that placed
    everything are those of every count run to the ceiling."""
    distributor, pending, templates = problem
    plan = plan_scale_up(distributor, pending, templates, max_new_nodes=cap)
    with mock.patch.object(planning._Search, "each_alone", every_template_counted), \
            mock.patch.object(planning._Search, "capped_at",
                              lambda self, plans, ceiling: ceiling):
        expected = plan_scale_up(distributor, pending, templates, max_new_nodes=cap)
    assert plan.to_dict() == expected.to_dict()


def sized_problem(strategy, cpus, costs, pending_cpus):
    distributor = distributor_of(strategy, {"cpu": 1}, [])
    pending = [{"name": f"p{at}", "requirements": {"cpu": cpu}}
               for at, cpu in enumerate(pending_cpus)]
    templates = [{"name": f"t{cpu}", "resources": {"cpu": cpu}, "cost": cost}
                 for cpu, cost in zip(cpus, costs)]
    return distributor, pending, templates


def counted(problem, capped=True):
    """The templates counted up alone, in the order counted, and the plan."""
    calls = []
    real = planning._Search.count_up

    def count_up(search, index, ceiling, leap=True):
        calls.append((index, ceiling))
        return real(search, index, ceiling, leap)

    with mock.patch.object(planning._Search, "count_up", count_up):
        if capped:
            plan = plan_scale_up(*problem)
        else:
            with mock.patch.object(planning._Search, "each_alone", every_template_counted):
                plan = plan_scale_up(*problem)
    return calls, plan.to_dict()


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_template_needing_more_nodes_than_a_plan_found_is_not_counted(strategy):
    """Ten workloads of 3 cpu: the 16-cpu template places them on two nodes
    (its lower bound, 30 / 16 rounded up, is 2); the 4-cpu template's lower
    bound is 8, so it is not counted; the 8-cpu template's is 4 (more than
    two too). Counted before any other, the 16-cpu template (the least
    lower bound) caps the others. The plan is the one every count gives."""
    problem = sized_problem(strategy, [4, 8, 16], [1, 1.5, 3], [3] * 10)
    calls, plan = counted(problem)
    assert [index for index, _ in calls] == [2]
    every, expected = counted(problem, capped=False)
    assert sorted(index for index, _ in every) == [0, 1, 2]
    assert plan == expected
    assert plan["new_nodes"] == [{"name": "t16-1", "resources": {"cpu": 16}},
                                 {"name": "t16-2", "resources": {"cpu": 16}}]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_template_as_good_as_the_fewest_nodes_found_is_still_counted(strategy):
    """Four workloads of 11 cpu and four of 1: no node of either template
    takes two of 11, so each needs four nodes. The 21-cpu template (lower
    bound 3, the least) is counted first, up to the ceiling, one node per
    workload; the 12-cpu template's lower bound is 4, so it is counted too,
    capped at four nodes, and, as cheap and listed first, its plan wins
    the tie, as it does with every count run in full."""
    problem = sized_problem(strategy, [12, 21], [1, 1], [11] * 4 + [1] * 4)
    calls, plan = counted(problem)
    assert calls == [(1, 8), (0, 4)]
    assert plan == counted(problem, capped=False)[1]
    assert [node["name"] for node in plan["new_nodes"]] == [f"t12-{at}" for at in range(1, 5)]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_each_count_that_places_everything_with_fewer_nodes_lowers_the_cap(strategy):
    """Four workloads of 11 cpu and four of 1. The 21-cpu template and the
    22-cpu one have the least lower bound (3): the 21-cpu one, listed
    first, is counted first and needs four nodes (one of 11 a node); the
    22-cpu one, capped at four, takes two of 11 a node and needs three;
    the 12-cpu template's lower bound, 4, is above those three: it is not
    counted."""
    problem = sized_problem(strategy, [21, 22, 12], [1, 1, 1], [11] * 4 + [1] * 4)
    calls, plan = counted(problem)
    assert calls == [(0, 8), (1, 4)]
    assert plan == counted(problem, capped=False)[1]
    assert [node["name"] for node in plan["new_nodes"]] == ["t22-1", "t22-2", "t22-3"]


# Prioritized with no aversion group pending: what a set of new nodes
# leaves waiting is what waited without them, placed on them alone
# (_Search.left_on_new).

def left_by_a_trial(search, mix):
    result = search.run(mix)
    return [load.name for load in search.loads if result[load.name] is None]


@settings(max_examples=300, deadline=None)
@given(rough_problems(strategies=("Prioritized",), groups=False), st.data())
def test_what_new_nodes_leave_waiting_is_what_a_trial_on_the_cluster_leaves(problem, data):
    search = search_of(*problem)
    assert search.joins_last
    mix = tuple(data.draw(st.lists(st.integers(0, len(search.templates) - 1),
                                   min_size=1, max_size=6)))
    assert sorted(search.left_on_new(mix)) == sorted(left_by_a_trial(search, mix))


@settings(max_examples=200, deadline=None)
@given(rough_problems(), st.none() | st.integers(0, 4))
def test_plans_are_those_of_a_trial_on_the_cluster_for_each_set_of_new_nodes(problem, cap):
    distributor, pending, templates = problem
    plan = plan_scale_up(distributor, pending, templates, max_new_nodes=cap)
    with mock.patch.object(planning._Search, "left_on_new", left_by_a_trial):
        expected = plan_scale_up(distributor, pending, templates, max_new_nodes=cap)
    assert plan.to_dict() == expected.to_dict()


def test_with_an_aversion_group_pending_each_set_of_new_nodes_is_a_trial():
    """A workload of an aversion group may pass an existing node hosting
    its group for a new one: there the count comes from a trial on the
    whole cluster. Here p0 goes to n0 without new nodes (it is the only
    node: groups are soft), but to the new node when there is one, which
    then has no room for p1: the new node leaves p1 waiting, although p1,
    the one that waited without it, fits it alone."""
    distributor = distributor_of("Prioritized", None,
                                 [{"name": "n0", "resources": {"cpu": 4}}])
    distributor.attempt_assign_loads([{"name": "w0", "requirements": {"cpu": 1},
                                       "aversion_groups": ["a"]}])
    pending = Workload.from_list([{"name": "p0", "requirements": {"cpu": 1},
                                   "aversion_groups": ["a"]},
                                  {"name": "p1", "requirements": {"cpu": 8}}])
    search = search_of(distributor, pending, [{"name": "t", "resources": {"cpu": 8}}])
    assert not search.joins_last
    assert search.left_on_new((0,)) == []
    with mock.patch.object(planning._Search, "left_on_new") as shortcut:
        assert search.missing((0,)) == 1
    shortcut.assert_not_called()


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_while_no_count_places_everything_every_template_is_counted(strategy):
    """Within one new node (a cap of one), neither template places the four
    workloads of 4 cpu and 2 mem: both are counted, although the lower
    bound of each (two) is above the cap, as the best of plans that all
    leave work waiting may be either's."""
    distributor = distributor_of(strategy, {"cpu": 1, "mem": 1}, [])
    pending = Workload.from_list([{"name": f"p{at}", "requirements": {"cpu": 4, "mem": 2}}
                                  for at in range(4)])
    templates = [{"name": "wide", "resources": {"cpu": 16, "mem": 4}, "cost": 2},
                 {"name": "square", "resources": {"cpu": 8, "mem": 8}, "cost": 1}]
    search = search_of(distributor, pending, templates)
    plans = search.each_alone(1)
    assert plans == every_template_counted(search, 1) == [(0,), (1,)]
    assert [search.missing(mix) for mix in plans] == [2, 2]
