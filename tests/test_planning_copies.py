"""The planners' trials copy the distributor with Distributor._replica, from
its nodes and workloads as they are, instead of reading its snapshot again
for each trial: the copies, and so the plans, are the same."""
from decimal import Decimal
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from instances import RUBRICS, STRATEGIES, batches, clusters, distributor_of
from pylighthouse import Distributor, plan_scale_up
from test_planning import rough_problems


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
    """A trial's copy as the planner made it before: from the snapshot."""
    return Distributor.from_dict(distributor.to_dict())


@settings(max_examples=200, deadline=None)
@given(rough_problems(), st.none() | st.integers(0, 4))
def test_plans_from_replicas_are_the_plans_from_snapshots(problem, cap):
    distributor, pending, templates = problem
    plan = plan_scale_up(distributor, pending, templates, max_new_nodes=cap)
    with mock.patch.object(Distributor, "_replica", read_again):
        expected = plan_scale_up(distributor, pending, templates, max_new_nodes=cap)
    assert plan.to_dict() == expected.to_dict()
