"""The fit rule and the reasons it gives."""
import re
from decimal import Decimal
from math import inf

import pytest
from hypothesis import given

from pylighthouse import (Node, PrioritizedDistributor, Workload, plan_scale_down,
                          plan_scale_up)
from pylighthouse.errors import InvalidInputError, InvalidTypeError, LighthouseException
from pylighthouse.fit import (INSUFFICIENT, MISSING, NOT_TOLERATED, Reason, below_zero,
                              check_fit, first_refusal, fits, takes)
from reference import Load, Machine
from reference import fits as reference_fits
from instances import node_specs, workload_specs


def reason(resources, **workload):
    return check_fit(Node("n", resources).resources, Workload("w", **workload))


def test_a_workload_fits_when_every_requirement_is_present_and_nothing_goes_below_zero():
    assert reason({"cpu": 2, "mem": 4}, requirements={"cpu": 2}) is None
    assert reason({"cpu": 2}, requirements={}) is None


def test_missing_resources_never_fit_even_as_zero_tags_or_immunities():
    assert reason({"cpu": 2}, requirements={"ssd": 0}) == Reason(MISSING, "ssd")
    assert reason({"cpu": 2}, requirements={"gpu": 1}, immunities=["gpu"]) == \
        Reason(MISSING, "gpu")
    assert str(reason({"cpu": 2}, requirements={"ssd": 0})) == "missing resource ssd"


def test_insufficient_names_the_first_failing_resource_in_node_order():
    found = reason({"cpu": 1, "mem": 1}, requirements={"mem": 2, "cpu": 2})
    assert found == Reason(INSUFFICIENT, "cpu", Decimal(2), Decimal(1))
    assert str(found) == "insufficient cpu (needs 2, 1 left)"


def test_shortcomings_and_wards_refuse_unless_offset_or_immune():
    assert reason({"flies": -5}, requirements={}).kind == NOT_TOLERATED
    assert reason({"flies": -5}, requirements={"flies": -4}).kind == NOT_TOLERATED
    assert reason({"flies": -5}, requirements={"flies": -5}) is None
    assert reason({"flies": -5}, requirements={}, immunities=["flies"]) is None
    assert reason({"spiders": -inf}, requirements={"spiders": -1000}).kind == NOT_TOLERATED
    assert reason({"spiders": -inf}, requirements={}, immunities=["spiders"]) is None
    assert str(reason({"spiders": -inf}, requirements={})) == \
        "spiders below zero and not tolerated"


def test_immunity_ignores_the_value_of_a_present_resource():
    assert reason({"cpu": 1}, requirements={"cpu": 5}, immunities=["cpu"]) is None


def test_unlimited_resources_always_have_room():
    assert reason({"cpu": inf}, requirements={"cpu": 10 ** 9}) is None


def test_semaphores_count_down_to_zero():
    assert reason({"wife": 1}, requirements={"wife": 1}) is None
    assert reason({"wife": 0}, requirements={"wife": 1}).kind == INSUFFICIENT


@given(node_specs("n"), workload_specs("w"))
def test_check_fit_agrees_with_the_reference(node, workload):
    ours = fits(Node.from_dict(node).resources, Workload.from_dict(workload))
    assert ours == reference_fits(Machine(node), Load(workload))


@given(node_specs("n"), workload_specs("w"))
def test_first_refusal_is_check_fit_without_the_reason_object(node, workload):
    # (the counting of unplaced workloads reads refusals as tuples)
    remaining, load = Node.from_dict(node).resources, Workload.from_dict(workload)
    found, reason = first_refusal(remaining, load), check_fit(remaining, load)
    if reason is None:
        assert found is None
    else:
        kind, resource, needed, left = found
        assert Reason(kind, resource, needed, left) == reason
        # (the node's own quantity, by identity: lines are kept by it)
        assert left is None or left is remaining[resource]


@given(node_specs("n"), workload_specs("w"))
def test_the_search_check_answers_as_the_rule_does(node, workload):
    # (the index asks ``takes``, which compares the resources not asked for
    # with zero in C: it must say yes exactly where the rule finds nothing)
    remaining, load = Node.from_dict(node).resources, Workload.from_dict(workload)
    assert takes(remaining, load) == (first_refusal(remaining, load) is None)
    # (and given the resources below zero, as the distributor keeps them
    # per node)
    below = {key for key, left in remaining.items() if left < 0}
    assert below_zero(remaining) == below
    assert takes(remaining, load, below) == (first_refusal(remaining, load) is None)


def test_the_search_check_reads_the_resources_below_zero_it_is_given():
    # (a node with hundreds of labels and a shortcoming, whose cpu an
    # immune workload then overdrew: the check reads what is below zero)
    labels = {f"label-{index}": 0 for index in range(300)}
    remaining = dict(Node("n", {"cpu": 4, **labels, "spiders": -1}).resources)
    below = below_zero(remaining)
    assert below == {"spiders"}
    assert not takes(remaining, Workload("w", requirements={"cpu": 1}), below)
    assert takes(remaining, Workload("w", requirements={"cpu": 1}, immunities=["spiders"]),
                 below)
    assert takes(remaining, Workload("w", requirements={"cpu": 1, "spiders": -1}), below)
    assert not takes(remaining, Workload("w", requirements={"spiders": 1},
                                         immunities=["cpu"]), below)
    remaining["cpu"] = Decimal(-1)
    below = below_zero(remaining)
    assert below == {"spiders", "cpu"}
    immune = Workload("w", requirements={"label-3": 0}, immunities=["spiders"])
    assert not takes(remaining, immune, below)
    assert first_refusal(remaining, immune) is not None
    assert takes(remaining, Workload("w", requirements={"label-3": 0},
                                     immunities=["spiders", "cpu"]), below)


def test_the_search_check_sees_resources_below_zero_that_are_not_asked_for():
    labels = {f"label-{index}": 0 for index in range(40)}
    node = Node("n", {"cpu": 4, **labels, "flies": -1}).resources
    assert not takes(node, Workload("w", requirements={"cpu": 1}))
    assert takes(node, Workload("w", requirements={"cpu": 1}, immunities=["flies"]))
    assert takes(node, Workload("w", requirements={"cpu": 1, "flies": -1}))
    assert not takes(node, Workload("w", requirements={"cpu": 5}, immunities=["flies"]))
    assert takes(node, Workload("w", requirements={"cpu": 5}, immunities=["flies", "cpu"]))
    assert not takes(node, Workload("w", requirements={"label-40": 0}, immunities=["flies"]))
    # (a resource asked for by an immune workload may be left below zero)
    left = {"cpu": Decimal(-2), **Node("n", labels).resources}
    assert not takes(left, Workload("w", requirements={"label-1": 0}))
    assert takes(left, Workload("w", requirements={"label-1": 0}, immunities=["cpu"]))
    assert takes({}, Workload("w", requirements={}))
    for remaining, load in [(node, Workload("w", requirements={"cpu": 1})),
                            (left, Workload("w", requirements={"cpu": -3}))]:
        assert takes(remaining, load) == (first_refusal(remaining, load) is None)


@given(node_specs("n"), workload_specs("w"), workload_specs("first"))
def test_check_fit_on_a_node_state_answers_as_the_distributor_places(node, workload, first):
    # (a node state holds plain numbers, floats among them: read as the
    # distributor reads a node, 0.3 meaning 0.3, never as the float's binary
    # value; so asking first and placing agree, and the reason prints)
    distributor = PrioritizedDistributor.from_list([node])
    distributor.attempt_assign_loads([first])
    remaining = distributor.node_state("n").remaining
    load = Workload.from_dict(workload)
    reason = check_fit(remaining, load)
    assert (reason is None) == (distributor.attempt_assign_loads([load]) == {"w": "n"})
    if reason is not None:
        assert str(reason).startswith(("missing", "insufficient", "cordoned")) or \
            str(reason).endswith("below zero and not tolerated")
        assert reason.left is None or isinstance(reason.left, Decimal)


def test_check_fit_reads_a_node_state_beyond_the_input_range():
    # (a node state may hold sums past 1e300, which input may not: a
    # workload asking less than zero gave room back; reading the state
    # through the input checks refused it, and the planners with it)
    distributor = PrioritizedDistributor([{"name": "n", "resources": {"cpu": Decimal("1e300")}}])
    distributor.attempt_assign_loads([{"name": "giver", "requirements": {"cpu": -1e300}}])
    remaining = distributor.node_state("n").remaining
    assert remaining["cpu"] == 2 * 10 ** 300
    assert check_fit(remaining, {"name": "w", "requirements": {"cpu": 1}}) is None
    assert plan_scale_up(distributor, [{"name": "w", "requirements": {"cpu": 1}}],
                         {"resources": {"cpu": 1}}).assignments == {"w": "n"}
    assert plan_scale_down(distributor).removable == []
    assert check_fit({"cpu": -0.0, "mem": 1}, Workload("w", requirements={"cpu": 1})).left \
        == Decimal(0)


def test_check_fit_reads_plain_numbers_exactly_and_names_bad_ones():
    needs = Workload("w", requirements={"cpu": 0.3})
    assert check_fit({"cpu": 0.3}, needs) is None
    assert check_fit({"cpu": 0.3, "mem": 2}, needs) is None
    assert str(check_fit({"cpu": 0.2}, needs)) == "insufficient cpu (needs 0.3, 0.2 left)"
    assert str(check_fit({"cpu": 0}, needs)) == "insufficient cpu (needs 0.3, 0 left)"
    assert check_fit({"cpu": 1, "flies": -inf}, needs) == \
        Reason(NOT_TOLERATED, "flies", Decimal(0), Decimal("-Infinity"))
    for bad, message in [({"cpu": float("nan")}, "check_fit: remaining['cpu']: NaN"),
                         ({"cpu": "x"}, "check_fit: remaining['cpu']: expected a number"),
                         ([1], "check_fit: remaining: expected a mapping"),
                         ({1: 2.0}, "check_fit: remaining keys must be non-empty strings"),
                         ({"": 2.0}, "check_fit: remaining keys must be non-empty strings"),
                         ({"cpu": 10 ** 5000}, "check_fit: remaining['cpu']: an integer"),
                         ({"cpu": 5e-324}, "check_fit: remaining['cpu']: 5e-324 is out"),
                         ({"cpu": Decimal("NaN"), "mem": 1.0},
                          "check_fit: remaining['cpu']: NaN is not a quantity"),
                         # (exact quantities only: they were not read at
                         # all, so NaN, bad keys and range went through)
                         ({"cpu": Decimal(1), "x": Decimal("NaN")},
                          "check_fit: remaining['x']: NaN is not a quantity"),
                         ({"cpu": Decimal(3), "x": Decimal("NaN")},
                          "check_fit: remaining['x']: NaN is not a quantity"),
                         ({"cpu": Decimal("1E+400")},
                          "check_fit: remaining['cpu']: 1E+400 is out of range"),
                         ({1: Decimal(5), "cpu": Decimal(5)},
                          "check_fit: remaining keys must be non-empty strings")]:
        with pytest.raises(LighthouseException, match=re.escape(message)):
            check_fit(bad, needs)
    with pytest.raises(InvalidTypeError, match="check_fit: workload: expected a Workload "
                                               "or a dict, got list"):
        check_fit({"cpu": 1}, ["w"])
    # (a dict, as the distributors take one: it was refused)
    assert str(check_fit({"cpu": 1}, {"name": "w", "requirements": {"cpu": 2}})) == \
        "insufficient cpu (needs 2, 1 left)"
    with pytest.raises(InvalidInputError, match="workload 'w': unknown field 'bogus'"):
        check_fit({"cpu": 1}, {"name": "w", "bogus": 1})
