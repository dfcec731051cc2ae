"""The lines of workloads that fit nowhere, counted a column of nodes at a
time (pylighthouse.nowhere), against the explanations of explain_all."""
import random
from contextlib import contextmanager
from decimal import Decimal
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pylighthouse as lighthouse
from instances import RUBRICS, batches, clusters, node_specs
from pylighthouse import nowhere
from pylighthouse.nowhere import FEW, nowhere_lines
from test_explain_shared import STRATEGIES, build, copied_nodes, repeated_shapes


def lines_of(distributor, loads):
    return distributor._nowhere_lines(lighthouse.Workload.from_list(loads))


def expected_lines(distributor, loads):
    explained = distributor.explain_all(loads)
    return [None if explained[load["name"]].fits or explained[load["name"]].averse
            else str(explained[load["name"]]) for load in loads]


@settings(max_examples=300, deadline=None)
@given(strategy=STRATEGIES, kinds=clusters(max_nodes=3), copies=st.integers(FEW, FEW + 2),
       others=st.lists(node_specs("other"), max_size=3), rubric=RUBRICS, first=batches("w"),
       probes=repeated_shapes("p"), cordon=st.lists(st.integers(0, 20), max_size=3),
       rewrite=st.booleans(), bits=st.sampled_from([None, 1, 2, 3, 32]),
       distinct=st.sampled_from([0, nowhere.DISTINCT, 10 ** 9]), data=st.data())
def test_counted_by_columns_equals_explaining_each_node(strategy, kinds, copies, others,
                                                        rubric, first, probes, cordon,
                                                        rewrite, bits, distinct, data):
    # Copies of a few nodes (the same resources in the same order, some with
    # other quantities) make layouts counted by columns; the other nodes (a
    # layout of their own, mostly) are checked one by one. ``bits``: the
    # layouts are counted as sets of bits (kept every ``bits`` nodes of a
    # sorted column), as all but the largest are; else a column at a time.
    # ``distinct`` 0: never without layouts; 10 ** 9: without them
    # wherever every workload can be counted so.
    with mock.patch.object(nowhere, "BITS", FEW if bits else 10 ** 9), \
            mock.patch.object(nowhere, "STEP", bits or nowhere.STEP), \
            mock.patch.object(nowhere, "DISTINCT", distinct):
        check_counted_lines(strategy, kinds, copies, others, rubric, first, probes, cordon,
                            rewrite, data)


def check_counted_lines(strategy, kinds, copies, others, rubric, first, probes, cordon,
                        rewrite, data):
    def other(copy, resources):
        if copy and data.draw(st.booleans()):
            return {key: data.draw(st.integers(-2, 6)) if value != 0 else value
                    for key, value in resources.items()}
        return resources

    nodes = copied_nodes(kinds, copies, rewrite, other)
    nodes.extend(dict(node, name=f"other-{index}") for index, node in enumerate(others))
    distributor = build(strategy, nodes, rubric)
    distributor.attempt_assign_loads(first)
    for index in cordon:
        if index < len(nodes):
            distributor.cordon(nodes[index]["name"])
    assert lines_of(distributor, probes) == expected_lines(distributor, probes)


@pytest.fixture(params=["columns", "bits"])
def counting(request):
    """Each layout counted a column at a time, or (as large layouts are) as
    sets of bits over its sorted columns, kept every two nodes."""
    if request.param == "columns":
        with mock.patch.object(nowhere, "BITS", 10 ** 9):
            yield
        return
    with mock.patch.object(nowhere, "BITS", FEW), mock.patch.object(nowhere, "STEP", 2):
        yield


def test_the_most_left_is_the_first_in_order_across_interleaved_layouts(counting):
    # Two layouts whose nodes alternate in order; the most left (equal
    # quantities written differently) is on the second node of one and
    # the third of the other: the first in order wins, by its position.
    tiny = Decimal("0.1000000000000000000001")
    otherwise = Decimal("0.10000000000000000000010")
    nodes = []
    for index in range(8):
        layout, rank = "ab"[index % 2], index // 2
        cpu = (tiny if (layout, rank) == ("b", 0) else
               otherwise if (layout, rank) == ("a", 1) else Decimal("0.01"))
        extra = {"ssd": 0} if layout == "a" else {"mem": 0}
        nodes.append({"name": f"{layout}{rank}", "resources": {"cpu": cpu, **extra}})
    distributor = lighthouse.PrioritizedDistributor.from_list(nodes)
    # (y asks for ssd, so that it is in the layouts: a's nodes and b's differ)
    probes = [{"name": "x", "requirements": {"cpu": 1}},
              {"name": "y", "requirements": {"cpu": 1, "ssd": 0}}]
    lines = lines_of(distributor, probes)
    assert lines == expected_lines(distributor, probes)
    assert lines[0] == f"0/8 nodes fit: 8 insufficient cpu (needs 1, most left {tiny})"


def test_the_most_left_is_of_the_nodes_failing_on_that_resource_first(counting):
    # In the sorted memory column, the nodes with the most memory below 2
    # failed on cpu already: the most memory left is of the others.
    nodes = [{"name": f"n{index}", "resources": {"cpu": cpu, "mem": mem}}
             for index, (cpu, mem) in enumerate([(1, 1.5), (4, 1), (1, 1.9), (4, 0.5),
                                                 (1, 1.8), (4, 0.25)])]
    distributor = lighthouse.PrioritizedDistributor.from_list(nodes)
    probe = [{"name": "x", "requirements": {"cpu": 2, "mem": 2}}]
    assert lines_of(distributor, probe) == expected_lines(distributor, probe) == [
        "0/6 nodes fit: 3 insufficient cpu (needs 2, most left 1), "
        "3 insufficient mem (needs 2, most left 1)"]


def test_the_most_left_is_as_written_on_the_first_node_failing_there(counting):
    # Equal memory written two ways on n0 (failed on cpu first) and n1: the
    # most memory left is n1's, as written.
    tiny = Decimal("0.1000000000000000000001")
    otherwise = Decimal("0.10000000000000000000010")
    nodes = [{"name": f"n{index}", "resources": {"cpu": cpu, "mem": mem}}
             for index, (cpu, mem) in enumerate([(1, otherwise), (4, tiny), (4, Decimal("0.05")),
                                                 (1, otherwise), (4, otherwise)])]
    distributor = lighthouse.PrioritizedDistributor.from_list(nodes)
    probe = [{"name": "x", "requirements": {"cpu": 2, "mem": 2}}]
    assert lines_of(distributor, probe) == expected_lines(distributor, probe) == [
        f"0/5 nodes fit: 3 insufficient mem (needs 2, most left {tiny}), "
        "2 insufficient cpu (needs 2, most left 1)"]


def test_many_workloads_against_one_layout_each_count_their_own(counting):
    # (the sets of the first nodes of a sorted column are kept once made:
    # each quantity must still find its own)
    nodes = [{"name": f"n{index}", "resources": {"cpu": cpu}}
             for index, cpu in enumerate([5, 1, 8, 3, 2, 7, 4, 6])]
    distributor = lighthouse.PrioritizedDistributor.from_list(nodes)
    probes = [{"name": f"p{needs}", "requirements": {"cpu": needs}}
              for needs in (2, 3, 4, 5, 6, 7, 8, 9, 3, 9, 2)]
    lines = lines_of(distributor, probes)
    assert lines == expected_lines(distributor, probes)
    assert lines[7] == lines[9] == "0/8 nodes fit: 8 insufficient cpu (needs 9, most left 8)"
    assert lines[:7] == [None] * 7


def test_workloads_apart_only_on_the_last_resource_share_their_count():
    # Every node that has cpu 2 left fails on memory, however much memory
    # the workload needs: one count serves the four, each line with its own
    # need (n6's memory below zero is counted apart, as not tolerated).
    nodes = [{"name": f"n{index}", "resources": {"cpu": cpu, "mem": mem}}
             for index, (cpu, mem) in enumerate([(1, 1.5), (4, 1), (1, 1.9), (4, 0.5),
                                                 (1, 1.8), (4, 0.25), (2, -1), (3, 0.75)])]
    distributor = lighthouse.PrioritizedDistributor.from_list(nodes)
    probes = [{"name": f"p{index}", "requirements": {"cpu": 2, "mem": mem}}
              for index, mem in enumerate([2, 3.5, 1.25, 70])]
    counted = []

    def counting_calls(*args, **kwargs):
        counted.append(args[1].name)
        return real(*args, **kwargs)

    real = nowhere._refused_by_bits
    with mock.patch.object(nowhere, "BITS", FEW), mock.patch.object(nowhere, "STEP", 2), \
            mock.patch.object(nowhere, "_refused_by_bits", counting_calls):
        lines = lines_of(distributor, probes)
    assert lines == expected_lines(distributor, probes)
    assert counted == ["p0"]
    assert lines[1] == ("0/8 nodes fit: 4 insufficient mem (needs 3.5, most left 1), "
                        "3 insufficient cpu (needs 2, most left 1), "
                        "1 mem below zero and not tolerated")


def test_ties_go_to_the_first_node_in_order_across_layouts(counting):
    # Equal quantities written differently (a reason shows them as written):
    # the most left is the one of the first node in order, whichever layout
    # it is in; equal counts are ranked by the first node refusing so.
    tiny = Decimal("0.1000000000000000000001")
    otherwise = Decimal("0.10000000000000000000010")
    nodes = ([{"name": f"a{i}", "resources": {"cpu": otherwise if i == 0 else tiny, "ssd": 0}}
              for i in range(FEW)]
             + [{"name": f"b{i}", "resources": {"cpu": tiny, "mem": 0}} for i in range(FEW)]
             + [{"name": f"c{i}", "resources": {"mem": 1}} for i in range(FEW + 4)])
    distributor = lighthouse.PrioritizedDistributor.from_list(nodes)
    probe = [{"name": "x", "requirements": {"cpu": 1}}]
    assert lines_of(distributor, probe) == expected_lines(distributor, probe) == [
        f"0/16 nodes fit: 8 insufficient cpu (needs 1, most left {otherwise}), "
        "8 missing resource cpu"]
    reordered = lighthouse.PrioritizedDistributor.from_list(
        nodes[2 * FEW:] + nodes[FEW:2 * FEW] + nodes[:FEW])
    assert lines_of(reordered, probe) == expected_lines(reordered, probe) == [
        f"0/16 nodes fit: 8 missing resource cpu, 8 insufficient cpu (needs 1, most left {tiny})"]


def test_a_node_is_counted_for_its_first_failing_resource_only(counting):
    nodes = [{"name": f"n{i}", "resources": {"cpu": 1 + 3 * (i % 2), "mem": 1}}
             for i in range(6)]
    distributor = lighthouse.PrioritizedDistributor.from_list(nodes)
    probes = [{"name": "x", "requirements": {"cpu": 2, "mem": 2}}]
    assert lines_of(distributor, probes) == expected_lines(distributor, probes) == [
        "0/6 nodes fit: 3 insufficient cpu (needs 2, most left 1), "
        "3 insufficient mem (needs 2, most left 1)"]


def test_a_shortcoming_and_too_little_of_one_resource_are_counted_apart(counting):
    nodes = [{"name": f"n{i}", "resources": {"cpu": 4, "flies": i - 2}} for i in range(6)]
    distributor = lighthouse.PrioritizedDistributor.from_list(nodes)
    probes = [{"name": "x", "requirements": {"cpu": 1, "flies": 4}},
              {"name": "y", "requirements": {"cpu": 1, "flies": 3}, "immunities": ["cpu"]},
              {"name": "z", "requirements": {"cpu": 1}, "immunities": ["flies"]}]
    assert lines_of(distributor, probes) == expected_lines(distributor, probes) == [
        "0/6 nodes fit: 4 insufficient flies (needs 4, most left 3), "
        "2 flies below zero and not tolerated",
        None, None]


def test_a_node_checked_alone_adds_to_the_count_of_a_layout(counting):
    # Nodes below zero (not tolerated) in a layout counted by columns and
    # in one checked by itself (its resources in another order, and a tag
    # another workload of the batch asks for): one count, with no "most left".
    nodes = [{"name": f"n{i}", "resources": {"cpu": -1, "gpu": 1}} for i in range(FEW)]
    nodes.append({"name": "alone", "resources": {"gpu": 1, "cpu": -1, "host-alone": 0}})
    distributor = lighthouse.PrioritizedDistributor.from_list(nodes)
    probes = [{"name": "x", "requirements": {"gpu": 1}},
              {"name": "y", "requirements": {"gpu": 1, "host-alone": 0}}]
    assert lines_of(distributor, probes) == expected_lines(distributor, probes) == [
        "0/5 nodes fit: 5 cpu below zero and not tolerated",
        "0/5 nodes fit: 4 missing resource host-alone, 1 cpu below zero and not tolerated"]


@settings(max_examples=200, deadline=None)
@given(strategy=STRATEGIES, rubric=RUBRICS,
       kinds=st.lists(node_specs("kind"), min_size=1, max_size=5),
       shuffle=st.randoms(use_true_random=False), copies=st.integers(1, FEW + 2),
       first=batches("w"), shapes=batches("shape", max_size=3),
       steps=st.lists(st.integers(0, 12), min_size=1, max_size=30),
       counting=st.sampled_from(["columns", "bits", "bits-small"]),
       joins=st.sampled_from([0, 1, nowhere.JOINS]),
       direct=st.sampled_from([0, 1, nowhere.DIRECT, 10 ** 9]),
       gather=st.sampled_from([1, nowhere.GATHER]),
       distinct=st.sampled_from([0, nowhere.DISTINCT, 10 ** 9]), data=st.data())
def test_nodes_of_several_sets_of_names_counted_together(strategy, rubric, kinds, shuffle,
                                                         copies, first, shapes, steps,
                                                         counting, joins, direct, gather,
                                                         distinct, data):
    # Nodes of several sets of resource names, each in an order of its own
    # (some orders disagree), counted together where their orders allow;
    # workloads of a few shapes, each with quantities of its own drawn from
    # a few, so that some meet the nodes alike and share a kept line.
    # ``bits-small``: at most FEW + 1 nodes counted together, larger sets
    # of names a column at a time; ``KEPT`` 1: one line kept, no more;
    # ``DIRECT``: up to how many nodes of a layout having every resource
    # asked (others lacking one) are checked one by one; ``GATHER`` 1: the
    # nodes having every resource asked counted as a layout of their own
    # wherever some lack one; ``DISTINCT`` 0: never without layouts, 10 **
    # 9: without them wherever every workload can be counted so.
    nodes = []
    for copy in range(copies):
        for index, kind in enumerate(kinds):
            keys = list(kind["resources"])
            if index % 2:
                shuffle.shuffle(keys)
            resources = {key: (kind["resources"][key] if copy == 0 or kind["resources"][key] == 0
                               else data.draw(st.integers(-1, 6))) for key in keys}
            nodes.append({"name": f"k{index}-{copy}", "resources": resources})
    distributor = build(strategy, nodes, rubric)
    distributor.attempt_assign_loads(first)
    probes = []
    for number, step in enumerate(steps):
        if not shapes:
            break
        shape = shapes[number % len(shapes)]
        probes.append(dict(shape, name=f"p{number}", requirements={
            key: value if value == 0 else Decimal(step) / 2
            for key, value in shape["requirements"].items()}))
    bits, most = {"columns": (10 ** 9, nowhere.BITS_MOST), "bits": (FEW, nowhere.BITS_MOST),
                  "bits-small": (FEW, FEW + 1)}[counting]
    with mock.patch.object(nowhere, "BITS", bits), mock.patch.object(nowhere, "STEP", 2), \
            mock.patch.object(nowhere, "BITS_MOST", most), \
            mock.patch.object(nowhere, "JOINS", joins), \
            mock.patch.object(nowhere, "DIRECT", direct), \
            mock.patch.object(nowhere, "GATHER", gather), \
            mock.patch.object(nowhere, "DISTINCT", distinct), \
            mock.patch.object(nowhere, "KEPT", data.draw(st.sampled_from([1, nowhere.KEPT]))):
        assert lines_of(distributor, probes) == expected_lines(distributor, probes)


def test_sets_of_names_in_orders_that_only_agree_all_together(counting):
    # cpu before ssd on some nodes, ssd before license on others, and
    # license after cpu on the third: counted together (cpu, ssd, license),
    # whichever came first.
    nodes = ([{"name": f"a{i}", "resources": {"cpu": 1, "license": 1}} for i in range(FEW)]
             + [{"name": f"b{i}", "resources": {"cpu": 2, "ssd": 1}} for i in range(FEW)]
             + [{"name": f"c{i}", "resources": {"ssd": 0, "license": 2}} for i in range(FEW)])
    distributor = lighthouse.PrioritizedDistributor.from_list(nodes)
    probes = [{"name": "x", "requirements": {"cpu": 3}},
              {"name": "y", "requirements": {"ssd": 1, "license": 3}},
              {"name": "z", "requirements": {"license": 2}}]
    lines = lines_of(distributor, probes)
    assert lines == expected_lines(distributor, probes)
    assert lines[:2] == [
        "0/12 nodes fit: 8 insufficient cpu (needs 3, most left 2), 4 missing resource cpu",
        "0/12 nodes fit: 4 missing resource ssd, 4 missing resource license, "
        "4 insufficient ssd (needs 1, most left 0)"]
    assert lines[2] is None


def test_no_node_at_all(counting):
    assert nowhere_lines([], lighthouse.Workload.from_list([{"name": "x"}])) == [
        "0/0 nodes fit"]


def test_tags_of_their_own_and_workloads_pinned_by_them(counting):
    nodes = [{"name": f"n{i}", "resources": {"cpu": i % 3, f"host-n{i}": 0, "mem": 2}}
             for i in range(12)]
    nodes.append({"name": "ward", "resources": {"cpu": 9, "host-ward": 0, "mem": 2,
                                                "dedicated": float("-inf")}})
    distributor = lighthouse.PrioritizedDistributor.from_list(nodes)
    probes = [{"name": "plain", "requirements": {"cpu": 3}},
              {"name": "pinned", "requirements": {"cpu": 3, "host-n5": 0}},
              {"name": "immune", "requirements": {"cpu": 3}, "immunities": ["dedicated"]},
              {"name": "small", "requirements": {"cpu": 1, "mem": 3}}]
    assert lines_of(distributor, probes) == expected_lines(distributor, probes) == [
        "0/13 nodes fit: 12 insufficient cpu (needs 3, most left 2), "
        "1 dedicated below zero and not tolerated",
        "0/13 nodes fit: 12 missing resource host-n5, 1 insufficient cpu (needs 3, most left 2)",
        None,
        "0/13 nodes fit: 9 insufficient mem (needs 3, most left 2), "
        "4 insufficient cpu (needs 1, most left 0)"]


def device_cluster(strategy, rng, reversing=False, warding=False):
    """160 nodes with cpu, memory and three kinds of device of twelve, in
    the order drawn (``reversing``: half of them listed backwards;
    ``warding``: one in eleven with a ward, first or last), and a
    distributor of ``strategy`` over them with one node cordoned."""
    nodes = []
    for index in range(160):
        kinds = rng.sample(range(12), 3)
        resources = {"cpu": rng.randint(1, 8), "mem": rng.randint(1, 16)}
        resources.update((f"dev-{kind:02d}", rng.randint(0, 3)) for kind in kinds)
        if warding and index % 11 == 0:
            resources["dedicated"] = float("-inf")
            if index % 2:
                resources = {"dedicated": float("-inf"), **resources}
        if reversing and rng.random() < 0.5:
            resources = dict(reversed(list(resources.items())))
        nodes.append({"name": f"n{index:03d}", "resources": resources})
    distributor = build(strategy, nodes, {"cpu": 1})
    distributor.cordon("n007")
    return nodes, distributor


@pytest.mark.parametrize("strategy", ["Prioritized", "BinPack"])
@pytest.mark.parametrize("seed", range(4))
def test_kinds_of_device_in_layouts_of_their_own(strategy, seed):
    # Nodes with three kinds of device of twelve, cpu before memory on some
    # and after it on others (layouts of their own); workloads asking for
    # two kinds, some short of cpu on every node of a layout and some of
    # memory: two of them share a line only where they meet every layout on
    # the same resources (the shared line once told nodes short of cpu
    # that they were short of memory). The lines are those of explaining
    # node by node.
    rng = random.Random(seed)
    nodes, distributor = device_cluster(strategy, rng, reversing=True)
    probes = []
    for index in range(60):
        node = rng.choice(nodes)["resources"]
        requirements = {"cpu": rng.choice([1, 4, 9]), "mem": rng.choice([1, 20])}
        for kind in rng.sample([key for key in node if key.startswith("dev")], 2):
            requirements[kind] = rng.choice([1, 2, 4])
        if rng.random() < 0.3:
            requirements = dict(reversed(list(requirements.items())))
        probes.append({"name": f"p{index}", "requirements": requirements})
    # (the nodes lacking a kind asked for are counted once over every
    # layout, and a layout where every node lacks one is not counted on)
    skipped = []
    real = nowhere._Lacking.of

    def of(self, names):
        found = real(self, names)
        skipped.append(len(self.masks) - len(found[1]))
        return found

    with mock.patch.object(nowhere, "BITS", FEW), mock.patch.object(nowhere, "STEP", 2), \
            mock.patch.object(nowhere, "DISTINCT", 0), \
            mock.patch.object(nowhere._Lacking, "of", of):
        lines = lines_of(distributor, probes)
    assert lines == expected_lines(distributor, probes)
    assert any(line is not None and "missing resource dev" in line for line in lines)
    assert skipped and max(skipped) > 0
    # (and without layouts, the nodes having both kinds gathered per pair)
    with without_layouts() as taken:
        assert lines_of(distributor, probes) == lines
    assert taken == [True]


@pytest.mark.parametrize("strategy", ["Prioritized", "BinPack"])
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("direct, gather", [(0, 2), (nowhere.DIRECT, nowhere.GATHER)])
def test_holders_of_a_kind_counted_as_a_layout_of_their_own(strategy, seed, direct, gather):
    # Nodes with three kinds of device of twelve, listed in orders of
    # their own (layouts of their own, since some workloads ask for two
    # kinds), a few with a ward first or last; workloads asking for one
    # kind of device (on about one node in four), two or none, each with
    # quantities of its own, some immune to the ward: from the second
    # asking for the same kinds, the nodes having them are counted as one
    # layout of their own, where their layouts agree on the order of what
    # can refuse the workload; as few as ``direct`` nodes of a layout one
    # by one. The lines are those of explaining node by node.
    rng = random.Random(seed)
    _, distributor = device_cluster(strategy, rng, warding=True)
    probes = []
    for index in range(80):
        requirements = {"cpu": rng.choice([1, 4, 9]) + rng.randint(0, 3) / 4,
                        "mem": rng.choice([1, 20]) + rng.randint(0, 3) / 4}
        chance = rng.random()
        if chance < 0.6:
            requirements[f"dev-{rng.randrange(3):02d}"] = rng.choice([1, 2, 4])
        elif chance < 0.9:
            for kind in rng.sample(range(12), 2):
                requirements[f"dev-{kind:02d}"] = rng.choice([1, 2])
        probe = {"name": f"p{index}", "requirements": requirements}
        if rng.random() < 0.2:
            probe["immunities"] = ["dedicated"]
        probes.append(probe)
    gathered = []
    real = nowhere._Lacking.gather

    def gather_(self, load, names, layouts):
        found = real(self, load, names, layouts)
        gathered.append(found is not None)
        return found

    with mock.patch.object(nowhere, "BITS", FEW), mock.patch.object(nowhere, "STEP", 2), \
            mock.patch.object(nowhere, "DIRECT", direct), \
            mock.patch.object(nowhere, "GATHER", gather), \
            mock.patch.object(nowhere, "DISTINCT", 0), \
            mock.patch.object(nowhere._Lacking, "gather", gather_):
        lines = lines_of(distributor, probes)
    assert lines == expected_lines(distributor, probes)
    assert sum(line is not None for line in lines) > 40
    assert any(gathered) and not all(gathered)


@pytest.mark.parametrize("strategy", ["Prioritized", "BinPack"])
@pytest.mark.parametrize("seed", range(3))
def test_holders_gathered_once_serve_workloads_asking_for_fewer_names(strategy, seed):
    # The holders of a kind, gathered for workloads asking for cpu, memory
    # and the kind, are counted on again for workloads asking for cpu and
    # the kind only (the same nodes, the same order of what can refuse
    # them), not gathered a second time; workloads asking for the fewer
    # names first get a layout of their own. Some are immune to the ward.
    rng = random.Random(seed)
    _, distributor = device_cluster(strategy, rng, warding=True)
    probes = []
    for kind in range(4):
        order = [True, True, False, False] if kind % 2 else [False, False, True, True]
        for index, with_memory in enumerate(order * 2):
            requirements = {"cpu": rng.choice([1, 4, 9]) + rng.randint(0, 3) / 4}
            if with_memory:
                requirements["mem"] = rng.choice([1, 20]) + rng.randint(0, 3) / 4
            requirements[f"dev-{kind:02d}"] = rng.choice([1, 2, 4])
            probe = {"name": f"p{kind}-{index}", "requirements": requirements}
            if index >= 4:
                probe["immunities"] = ["dedicated"]
            probes.append(probe)
    gathered = {}
    real = nowhere._Lacking.gather

    def gather_(self, load, names, layouts):
        found = real(self, load, names, layouts)
        if found is not None:
            gathered.setdefault(id(found), set()).add((names, load.immunities))
        return found

    # (a kind sits on about one node in four here: gathered from one in two)
    with mock.patch.object(nowhere, "BITS", FEW), mock.patch.object(nowhere, "STEP", 2), \
            mock.patch.object(nowhere, "GATHER", 2), mock.patch.object(nowhere, "DISTINCT", 0), \
            mock.patch.object(nowhere._Lacking, "gather", gather_):
        lines = lines_of(distributor, probes)
    assert lines == expected_lines(distributor, probes)
    assert sum(line is not None for line in lines) > 8
    assert any(len(shapes) > 1 for shapes in gathered.values())
    assert any(len(shapes) == 1 for shapes in gathered.values())


@pytest.mark.parametrize("strategy", ["Prioritized", "BinPack"])
@pytest.mark.parametrize("seed", range(4))
def test_nodes_of_names_of_their_own_counted_without_layouts(strategy, seed):
    # Most nodes bear three kinds of device of sixty (names of their own,
    # so no layouts are made): per set of names asked and immunities, the
    # nodes having them all make layouts of their own, one per order of
    # what can refuse the workload (kinds listed before cpu and memory on
    # some nodes), or are checked alone when too few share an order; the
    # layout made for cpu, memory and a kind serves workloads asking for
    # cpu and the kind. Workloads ask for none, one or two kinds (two
    # sit together on a few nodes, checked alone), some immune to a ward.
    # The lines are those of explaining node by node, and those counted
    # with layouts.
    rng = random.Random(seed)
    nodes = []
    for index in range(300):
        resources = {"cpu": rng.randint(0, 8), "mem": rng.randint(0, 16)}
        for kind in rng.sample(range(60), 3):
            resources[f"dev-{kind:02d}"] = rng.randint(0, 3)
        if index % 13 == 0:
            resources["dedicated"] = float("-inf")
        if rng.random() < 0.1:
            resources = dict(reversed(list(resources.items())))
        nodes.append({"name": f"n{index:03d}", "resources": resources})
    distributor = build(strategy, nodes, {"cpu": 1})
    for index in rng.sample(range(300), 5):
        distributor.cordon(f"n{index:03d}")
    probes = []
    for index in range(400):
        requirements = {"cpu": rng.randint(1, 9) + rng.randint(0, 3) / 4}
        if rng.random() < 0.7:
            requirements["mem"] = rng.randint(1, 17) + rng.randint(0, 3) / 4
        chance = rng.random()
        if chance < 0.6:
            requirements[f"dev-{rng.randrange(8):02d}"] = rng.randint(1, 4)
        elif chance < 0.9:
            for kind in rng.sample(range(60), 2):
                requirements[f"dev-{kind:02d}"] = rng.randint(1, 3)
        probe = {"name": f"p{index}", "requirements": requirements}
        if rng.random() < 0.2:
            probe["immunities"] = ["dedicated"]
        probes.append(probe)
    made = []
    real = nowhere._Lacking.own

    def own(self, load, names):
        found = real(self, load, names)
        made.append((names, load.immunities, tuple(map(id, found[0])), len(found[1])))
        return found

    with without_layouts() as taken, mock.patch.object(nowhere._Lacking, "own", own):
        lines = lines_of(distributor, probes)
    assert taken == [True]
    assert lines == expected_lines(distributor, probes)
    with mock.patch.object(nowhere, "DISTINCT", 0):
        assert lines_of(distributor, probes) == lines
    assert sum(line is not None for line in lines) > 200
    # (layouts of their own of one order and of several, nodes checked
    # alone among them, and one layout serving two sets of names)
    assert any(len(layouts) == 1 for _, _, layouts, _ in made)
    assert any(len(layouts) > 1 for _, _, layouts, _ in made)
    assert any(alone for _, _, _, alone in made)
    served = {}
    for names, immunities, layouts, _ in made:
        for layout in layouts:
            served.setdefault(layout, set()).add((names, immunities))
    assert any(len(shapes) > 1 for shapes in served.values())


@contextmanager
def without_layouts():
    """Lines counted without layouts wherever every workload can be (see
    ``nowhere._direct``): per batch, whether they were."""
    taken = []
    real = nowhere._direct

    def direct(*args):
        found = real(*args)
        taken.append(found is not None)
        return found

    with mock.patch.object(nowhere, "DISTINCT", 10 ** 9), \
            mock.patch.object(nowhere, "_direct", direct):
        yield taken


@contextmanager
def counted_without_layouts():
    """Per line counted with no layout to count on (every node lacks a
    resource asked for but a few having them all): the positions of those
    few and of the nodes of no layout, both checked alone."""
    seen = []
    real = nowhere._line

    def line(load, layouts, singles, cordoned, total, kept, words, lacking=None):
        if lacking is not None:
            _, live, apart = lacking.of(tuple(load.requirements))
            if not live:
                seen.append((apart, [position for position, _ in singles]))
        return real(load, layouts, singles, cordoned, total, kept, words, lacking)

    with mock.patch.object(nowhere, "_line", line):
        yield seen


@pytest.mark.parametrize("strategy", ["Prioritized", "BinPack"])
@pytest.mark.parametrize("seed", range(4))
def test_workloads_whose_few_holders_are_checked_alone(strategy, seed):
    # Kinds of device among forty, three a node, cpu before memory on half
    # of the nodes and after it on the others: a pair of kinds sits on a
    # node or two, or none. Every node lacks one of the pair but those few,
    # which are checked alone (no layout is counted on): their refusals
    # (short of cpu or memory, each with its own most left, or a ward not
    # tolerated) go with the nodes lacking a kind and the cordoned ones,
    # by count, then by the first node in order. A few nodes list their
    # kinds first, in no layout: they are checked alone for every workload
    # and add to the count of nodes lacking a kind. Some workloads have a
    # holder that takes them, so they fit somewhere. The lines are those
    # of explaining node by node.
    rng = random.Random(seed)
    nodes = []
    for index in range(240):
        resources = {"cpu": rng.randint(0, 6), "mem": rng.randint(0, 12)}
        if index % 2:  # (memory before cpu: two layouts at least)
            resources = dict(reversed(list(resources.items())))
        if index % 7 == 0:
            resources["dedicated"] = float("-inf")
        for kind in sorted(rng.sample(range(40), 3)):
            resources[f"dev-{kind:02d}"] = rng.randint(1, 3)
        if index % 80 == 1:  # (kinds first: a node of no layout, checked alone)
            resources = dict(reversed(list(resources.items())))
        nodes.append({"name": f"n{index:03d}", "resources": resources})
    distributor = build(strategy, nodes, {"cpu": 1})
    for index in rng.sample(range(240), 6):
        distributor.cordon(f"n{index:03d}")
    holders = {}
    for node in nodes:
        kinds = [key for key in node["resources"] if key.startswith("dev")]
        for first in kinds:
            for second in kinds:
                if first < second:
                    holders.setdefault((first, second), []).append(node["name"])
    pairs = sorted(holders)
    probes = []
    for index in range(300):
        if rng.random() < 0.6:
            first, second = rng.choice(pairs)
        else:
            first, second = sorted(rng.sample([f"dev-{kind:02d}" for kind in range(40)], 2))
        requirements = {"cpu": rng.randint(1, 7), "mem": rng.randint(1, 13),
                        first: 1, second: rng.randint(1, 2)}
        if rng.random() < 0.3:
            requirements = dict(reversed(list(requirements.items())))
        probe = {"name": f"p{index}", "requirements": requirements}
        if rng.random() < 0.2:
            probe["immunities"] = ["dedicated"]
        probes.append(probe)
    with counted_without_layouts() as seen:
        lines = lines_of(distributor, probes)
    alone = [len(apart) for apart, _ in seen]
    assert lines == expected_lines(distributor, probes)
    # (the path was taken, with none, one and several nodes checked alone,
    # and some lines count nodes checked alone that refuse for different
    # reasons, or two for one reason)
    assert len(alone) > 200 and {0, 1, 2} <= set(alone)
    assert any(line is None for line in lines) and sum(line is not None for line in lines) > 150
    assert any(line is not None and " cordoned" in line and line.count("insufficient") >= 2
               for line in lines)
    assert any(line is not None and "not tolerated" in line and "insufficient" in line
               for line in lines)


def test_nodes_checked_alone_count_from_their_own_place_in_order():
    # Two layouts (memory before cpu, cpu before memory) and two nodes of
    # no layout ahead of them; the workload asks for two kinds no node of
    # a layout has together, but the last: a0, in no layout, and three
    # nodes of the second lack dev-q, tied with the four of the first
    # lacking dev-p, and a0 comes first in order; a1 (no layout) and e0
    # (the last) are short of cpu, tied with the two cordoned nodes, and
    # a1 comes before those.
    nodes = [{"name": "a0", "resources": {"dev-p": 1, "cpu": 2, "mem": 4}},
             {"name": "a1", "resources": {"dev-p": 1, "dev-q": 1, "cpu": 2, "mem": 4}}]
    nodes += [{"name": f"c{i}", "resources": {"mem": 4, "cpu": 4, "dev-q": 1}} for i in range(6)]
    nodes += [{"name": f"d{i}", "resources": {"cpu": 4, "mem": 4, "dev-p": 1}} for i in range(3)]
    nodes.append({"name": "e0", "resources": {"cpu": 1, "mem": 4, "dev-p": 1, "dev-q": 1}})
    distributor = lighthouse.PrioritizedDistributor.from_list(nodes)
    distributor.cordon("c4")
    distributor.cordon("c5")
    # (the second asks for the most of each: every quantity can refuse)
    probes = [{"name": "w", "requirements": {"cpu": 3, "mem": 1, "dev-p": 1, "dev-q": 1}},
              {"name": "big", "requirements": {"cpu": 9, "mem": 9, "dev-p": 9, "dev-q": 9}}]
    with counted_without_layouts() as alone, mock.patch.object(nowhere, "DISTINCT", 0):
        lines = lines_of(distributor, probes)
    assert lines[0] == expected_lines(distributor, probes)[0] == (
        "0/12 nodes fit: 4 missing resource dev-q, 4 missing resource dev-p, "
        "2 insufficient cpu (needs 3, most left 2), 2 cordoned")
    assert lines == expected_lines(distributor, probes)
    assert alone[0] == ([11], [0, 1])
    # (without layouts, every open node is counted over at once: a1 and e0
    # have both kinds, checked alone, and no node is of no layout)
    with counted_without_layouts() as alone, without_layouts() as taken:
        assert lines_of(distributor, probes) == lines
    assert taken == [True] and alone[0] == ([1, 11], [])


def merged_by_walking(first, second):
    """The merge of two orders of names that agree on their shared names, as
    a walk along both: the names of ``first`` up to the next shared one,
    then those of ``second``, then the shared one."""
    ones, others = set(first), set(second)
    merged = []
    at = other = 0
    while at < len(first) or other < len(second):
        if at < len(first) and first[at] not in others:
            merged.append(first[at])
            at += 1
        elif other < len(second) and second[other] not in ones:
            merged.append(second[other])
            other += 1
        else:
            merged.append(first[at])
            at += 1
            other += 1
    return merged


@settings(max_examples=300, deadline=None)
@given(names=st.lists(st.sampled_from("abcdefghijkl"), unique=True, max_size=12),
       data=st.data())
def test_merged_orders_are_those_of_walking_both(names, data):
    """Two orders of names agreeing on the names they share merge into the
    same order the walk along both gives (``None``: nothing new)."""
    first = data.draw(st.lists(st.sampled_from(names), unique=True)) if names else []
    second = data.draw(st.lists(st.sampled_from(names), unique=True)) if names else []
    # (the shared names of ``second`` put in the order ``first`` has them)
    shared = iter([name for name in first if name in second])
    second = [next(shared) if name in first else name for name in second]
    found = nowhere._merged(first, second, {name: at for at, name in enumerate(first)})
    expected = merged_by_walking(first, second)
    if set(second) <= set(first):
        assert found is None and expected == first
    else:
        assert found == expected


def canonical_by_rereading(keys, together, negative, rank):
    """A node's names put in order as the line counting reads it, literally:
    again and again, of the names left that no name left before them (in
    the node's order) must precede, the least ranked. Two names must keep
    their order when one is below zero somewhere or a workload asks for
    both."""
    def bound(first, second):
        return first in negative or second in negative or (first, second) in together \
            or (second, first) in together

    left = list(keys)
    found = []
    while left:
        free = [key for at, key in enumerate(left)
                if not any(bound(before, key) for before in left[:at])]
        chosen = min(free, key=rank.__getitem__)
        found.append(chosen)
        left.remove(chosen)
    return tuple(found)


@settings(max_examples=400, deadline=None)
@given(keys=st.lists(st.sampled_from("abcdefghij"), unique=True, max_size=10),
       pairs=st.sets(st.tuples(st.sampled_from("abcdefghij"), st.sampled_from("abcdefghij"))),
       negative=st.sets(st.sampled_from("abcdefghij"), max_size=3), data=st.data())
def test_a_nodes_names_are_put_in_order_as_read_literally(keys, pairs, negative, data):
    ranked = data.draw(st.permutations("abcdefghij"))
    rank = {key: at for at, key in enumerate(ranked)}
    keys = tuple(keys)
    assert nowhere._canonical(keys, pairs, negative, rank) == \
        canonical_by_rereading(keys, pairs, negative, rank)


@settings(max_examples=300, deadline=None)
@given(members=st.sets(st.integers(0, 5000), max_size=40))
def test_a_set_of_nodes_as_bits_reads_back_as_its_members(members):
    # (a few members are read from the top, more from the binary text; the
    # lowest is looked for among the first 60 bits first)
    bits = sum(1 << member for member in members)
    assert nowhere._indices(bits) == sorted(members)
    assert nowhere._few_indices(bits) == sorted(members)
    if members:
        assert nowhere._lowest(bits) == min(members)
