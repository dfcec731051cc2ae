"""Equal quantities and equal requirement maps handed out as one object
(pylighthouse.quantities: ``share``, the Decimal cache), however many
distinct ones a process has met before.

BinPack and BestFit resume a search for a workload equal to an earlier one
of the same call when both hold the very same requirements map; the tables
that hand out one map for equal ones must keep working in a long-lived
process and beside a cluster of nodes each of its own.
"""
from decimal import Decimal

import pylighthouse as lighthouse
from pylighthouse.quantities import (NODE_MAPS, SHARED_LIMIT, SHARED_MAPS, share,
                                     to_quantities, to_quantity)


def test_a_full_table_starts_afresh_and_keeps_sharing():
    table = {}
    for number in range(SHARED_LIMIT + 10):
        assert share(table, ("key", number), ("value", number)) == ("value", number)
    assert 0 < len(table) <= SHARED_LIMIT
    first = share(table, "new", ["one"])
    assert share(table, "new", ["other"]) is first


def test_values_handed_out_before_a_clear_stay_as_they_were():
    kept = [to_quantities({"cpu": number + 0.25}, "", "requirements", True)
            for number in range(2 * SHARED_LIMIT)]
    assert [dict(mapping) for mapping in kept] == [
        {"cpu": Decimal(number) + Decimal("0.25")} for number in range(2 * SHARED_LIMIT)]


def test_equal_requirements_share_one_map_after_many_distinct_ones():
    for number in range(SHARED_LIMIT + 10):
        lighthouse.Workload(f"w{number}", {"cpu": number, "mem": 1})
    one = lighthouse.Workload("a", {"cpu": 0.5, "mem": 3})
    two = lighthouse.Workload("b", {"cpu": 0.5, "mem": 3})
    assert one.requirements is two.requirements


def test_a_float_read_twice_is_one_decimal_after_many_distinct_ones():
    for number in range(SHARED_LIMIT + 10):
        to_quantity(number + 0.5, "x")
    assert to_quantity(1234567.75, "x") is to_quantity(1234567.75, "x")


def test_nodes_each_of_their_own_leave_workload_maps_shared():
    # (both tables start empty: what earlier tests left in the nodes' table
    # decides where its clears fall, and so how many maps it holds after)
    SHARED_MAPS.clear()
    NODE_MAPS.clear()
    one = lighthouse.Workload("a", {"cpu": 1, "mem": 2})
    # A cluster of more nodes than a table holds, each with its own
    # hostname tag: they go to the nodes' table.
    nodes = [lighthouse.Node(f"n{number}", {"cpu": 8, "mem": 32, f"host-n{number}": 0})
             for number in range(SHARED_LIMIT + 10)]
    assert len(SHARED_MAPS) <= 1
    assert len(NODE_MAPS) >= 10
    two = lighthouse.Workload("b", {"cpu": 1, "mem": 2})
    assert one.requirements is two.requirements
    # Nodes alike still share one map among themselves.
    twins = [lighthouse.Node(f"t{number}", {"cpu": 8, "mem": 32}) for number in range(2)]
    assert twins[0].resources is twins[1].resources
    assert nodes[0].resources == {"cpu": 8, "mem": 32, "host-n0": 0}


def test_binpack_places_equal_workloads_alike_after_a_large_cluster():
    # The same problem placed in a fresh distributor before and after the
    # tables were filled by a large cluster of nodes each of its own: the
    # decisions do not depend on what the tables hold.
    def placed():
        nodes = [{"name": f"m{number}", "resources": {"cpu": 4 + number % 3, "mem": 16}}
                 for number in range(12)]
        loads = [{"name": f"w{number:03d}", "requirements": {"cpu": 1, "mem": 1 + number % 4}}
                 for number in range(60)]
        distributor = lighthouse.BinPackDistributor.from_list({"cpu": 1, "mem": 0.25}, nodes)
        return distributor.attempt_assign_loads(loads)

    before = placed()
    lighthouse.Node.from_list([{"name": f"big{number}", "resources": {f"tag-{number}": 0}}
                               for number in range(SHARED_LIMIT + 10)])
    assert placed() == before
    assert len(before) == 60 and sum(name is not None for name in before.values()) >= 40
