"""The node index against its plain twins.

Three ways to choose nodes must agree on every decision: the index (with
tiny blocks here, so that blocks split, merge and vanish all the time), the
plain scan kept in :mod:`pylighthouse.distributors`, and the reference
reading of SPEC.md. Hypothesis drives random lifecycles over clusters with
every feature, including the corners where bounds are weakest: immunities,
shortcomings and wards, infinite resources, negative rubric weights and
undefined BinPack scores. After every step the index's own invariants are
checked against a recomputation from scratch.
"""
import pickle
import random
from contextlib import contextmanager
from decimal import Decimal
from types import SimpleNamespace
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pylighthouse as lighthouse
from pylighthouse.distributors import Distributor
from pylighthouse.errors import InvalidInputError
from pylighthouse.fit import reason_of
from pylighthouse.index import DEFAULT_LOAD, NodeIndex, plans
from pylighthouse.index import floors as index_floors
from pylighthouse.index import kept as index_kept
from pylighthouse.index import nodes as index_nodes
from pylighthouse.index import search
from pylighthouse.index.blocks import NodeClass
from pylighthouse.index.columns import LOWEST, NEG, OPEN, JointColumn, column_value
from instances import RUBRICS, clusters, operations
from reference import Reference
from reference_bestfit import BestFitReference
from test_differential import assert_same_state, run, run_reference, concrete, step_both

STRATEGIES = st.sampled_from(["Prioritized", "RoundRobin", "BinPack"])
INF = float("inf")


#: When classes make their joint columns (JOINT_WINDOW, JOINT_WASTE,
#: JOINT_GAIN, JOINT_SIZE): at the first search, however small the class
#: ("eager", the index's columns at their tightest); as the library does
#: ("adaptive"); made and dropped in turn ("churn").
JOINT = {"eager": (1, 0.0, -INF, 0), "adaptive": None, "churn": (1, 0.0, INF, 0)}


#: When classes use the floors of shapes (FLOOR_BLOCKS, FLOOR_PERIOD,
#: FLOOR_LEAST, FLOOR_IDLE): in every class, run extended at every search
#: of a new vector ("eager"); in every class, extended once in four
#: searches, read back while it stands in between ("cached"); the same once
#: in three, and set aside for two searches after a run of under two blocks
#: ("lazy"); as the library does ("library", in classes of 32 blocks and
#: more only).
FLOORS = {"eager": (0, 1, 0, 0), "cached": (0, 4, 0, 0), "lazy": (0, 3, 2, 2),
          "library": None}


#: Which columns classes make sparse (SPARSE): every one of a resource
#: that some nodes of the class lack (1), or as the library does (None).
SPARSE = st.sampled_from([1, None])


#: When classes make group columns (AVERSE_RUN, MAX_GROUP_COLUMNS): at the
#: first search avoiding a group ("eager"), the same with one column a
#: class at most ("one"), or as the library does ("library").
GROUPING = {"eager": (0, 16), "one": (0, 1), "none": (10 ** 9, 0), "library": None}


@contextmanager
def settings_of(indexed, load=2, joint="eager", floors="eager", sparse=None,
                grouping="library", denials="library"):
    policy = JOINT[joint] or plans.joint_policy()
    floor = FLOORS[floors] or index_floors.floor_policy()
    sparse = index_nodes.SPARSE if sparse is None else sparse
    group = GROUPING[grouping] or (index_nodes.AVERSE_RUN, index_nodes.MAX_GROUP_COLUMNS)
    with mock.patch.object(Distributor, "_indexed", indexed), \
            mock.patch.object(Distributor, "_index_load", load), \
            mock.patch.multiple(plans, JOINT_WINDOW=policy[0], JOINT_WASTE=policy[1],
                                JOINT_GAIN=policy[2], JOINT_SIZE=policy[3]), \
            mock.patch.multiple(index_floors, FLOOR_BLOCKS=floor[0], FLOOR_PERIOD=floor[1],
                                FLOOR_LEAST=floor[2], FLOOR_IDLE=floor[3]), \
            mock.patch.multiple(index_nodes, SET_BLOCKS=0, SPARSE=sparse, AVERSE_RUN=group[0],
                                MAX_GROUP_COLUMNS=group[1]), \
            mock.patch.object(plans, "DENIALS",
                              plans.DENIALS if denials == "library" else denials):
        yield


def make(strategy, nodes, rubric, indexed, load=2, joint="eager", floors="eager",
         sparse=None, grouping="library", denials="library"):
    with settings_of(indexed, load, joint, floors, sparse, grouping, denials):
        if strategy == "BinPack":
            return lighthouse.BinPackDistributor(rubric, nodes)
        if strategy == "BestFit":
            return lighthouse.BestFitDistributor(nodes)
        return {"Prioritized": lighthouse.PrioritizedDistributor,
                "RoundRobin": lighthouse.RoundRobinDistributor}[strategy](nodes)


def reference_of(strategy, nodes, rubric):
    """The reference for a distributor ``make`` made (BestFit's twin, which,
    like ``make``'s BestFit, takes no rubric)."""
    if strategy == "BestFit":
        return BestFitReference(nodes, None)
    return Reference(strategy, nodes, rubric)


def check_index(distributor):
    """The index holds exactly the nodes, in the strategy's order, each in
    the class of its resources below zero, with columns that hold its
    floats, exact bounds, and maps that list exactly the nodes bearing each
    resource."""
    index = distributor._index
    assert isinstance(index, NodeIndex)
    order = list(index)
    ordering = distributor._index_order()
    if ordering is not None:
        assert [s.name for s in order] == [s.name for s in sorted(order, key=ordering.key)]
        assert all(s.key == index._key(s) for s in order)
    else:
        assert [s.name for s in order] == list(distributor._slots)
        assert index._order == [s.key for s in order]
    assert len(index) == len(order) == len(distributor._slots)
    # (each node's resources below zero, which the search's fit check reads
    # instead of its quantities, are exactly those)
    assert all(s.below == {key for key, left in s.remaining.items() if left < 0}
               for s in distributor._slots.values())
    assert all(index.rank(slot) == at for at, slot in enumerate(order))
    seen = set()
    for counted, nodes in index._classes.items():
        members = list(nodes)
        assert members and nodes.size == len(members)
        assert all(index._home[s.name] is nodes for s in members)
        assert all(counted == {k for k, v in s.node.resources.items() if v < 0}
                   for s in members)
        assert [s.key for s in members] == sorted(s.key for s in members)
        assert nodes.lasts == [block.keys[-1] for block in nodes.blocks]
        assert all(block.slots for block in nodes.blocks)
        for at, block in enumerate(nodes.blocks):
            assert block.keys == [s.key for s in block.slots]
            assert set(block.cols) == set(nodes.columns)
            assert set(block.sparse) <= set(nodes.sparse) and all(block.sparse.values())
            for slot in block.slots:
                if slot in nodes.sparse_held:  # (kept: the sparse columns it has a value in)
                    assert sorted(map(str, nodes.sparse_held[slot])) == sorted(
                        str(key) for key, name in nodes.sparse.items()
                        if name in slot.node.resources)
            assert set(nodes.columns) | set(nodes.sparse) == set(nodes.bounds)
            assert not set(nodes.columns) & set(nodes.sparse)
            assert {name: sorted(map(str, keys)) for name, keys in nodes.sparse_by_name.items()} \
                == {name: sorted(str(key) for key, of in nodes.sparse.items() if of == name)
                    for name in set(nodes.sparse.values())}
            for column, name in nodes.sparse.items():
                # (exactly the nodes of the block having its resource, by
                # node; none kept where no node of the block has it)
                found = block.sparse.get(column, {})
                assert found == {s: column_value(s, column) for s in block.slots
                                 if name in s.node.resources}, column
                assert nodes.bounds[column][at] == max(found.values(), default=NEG), column
            for column, values in block.cols.items():
                exact = [column_value(s, column) for s in block.slots]
                if column in nodes.set_masked.values():
                    # (a set column comes down lazily: never below a node's
                    # own value, minus infinity exactly where it is, but for
                    # a quantity at minus infinity, which the block's columns
                    # it is made from read as LOWEST: that only passes more;
                    # a block it calls sharp holds the nodes' own values)
                    assert all(value >= own for value, own in zip(values, exact)), column
                    for value, own, s in zip(values, exact, block.slots):
                        if own == NEG and value != NEG:
                            assert value == LOWEST and all(
                                name in s.node.resources for name, _ in column[1]), column
                        else:
                            assert (value == NEG) == (own == NEG), column
                else:
                    assert values == exact, column
                assert nodes.bounds[column][at] == max(values), column
            if block.frontier:  # (kept: it must be what it would be made now)
                assert nodes.joint is not None
                kept = block.frontier
                assert nodes.frontier(block) == kept
            for names, positions in (block.holders or {}).items():
                # (kept: exactly the nodes having every one of the names, or
                # the one name a key of one names)
                wanted = {names} if isinstance(names, str) else names
                assert positions == [i for i, s in enumerate(block.slots)
                                     if wanted <= set(s.node.resources)], names
            # (counted: exactly the nodes having every one of the names)
            for names, tally in nodes.tallies.items():
                assert len(tally) == len(nodes.blocks)
                assert tally[at] == sum(names <= set(s.node.resources) for s in block.slots)
        # (a top may stand above every bound, never below one)
        assert set(nodes.tops) == set(nodes.bounds)
        assert all(nodes.tops[column] >= max(bounds) for column, bounds in nodes.bounds.items())
        # (exactly the largest bound but for the columns marked stale)
        assert all(nodes.tops[column] == max(bounds, default=NEG)
                   for column, bounds in nodes.bounds.items() if column not in nodes.stale)
        bearers = {}
        for s in members:
            for k in s.node.resources:
                bearers.setdefault(k, set()).add(s)
        assert nodes.bearers == bearers
        # (the bearers kept in order, where current, are the bearers in order;
        # of a tuple of names, the nodes bearing every one)
        for tag, (stamp, kept, keys) in nodes.ordered.items():
            if stamp == nodes.members:
                having = bearers.get(tag, set()) if type(tag) is str else \
                    set.intersection(*(bearers.get(name, set()) for name in tag))
                assert kept == sorted(having, key=lambda s: s.key), tag
                assert keys == [s.key for s in kept], tag
        # (the masks of bearers, where current, number every node once and
        # mark exactly each resource's bearers, a byte a node)
        stamp, numbers, masks = nodes.masks
        if stamp == nodes.members:
            assert set(numbers) == set(members)
            assert sorted(numbers.values()) == list(range(len(members)))
            for name, mask in masks.items():
                marked = mask.to_bytes(len(members), "little")
                assert {s for s, at in numbers.items() if marked[at]} == \
                    bearers.get(name, set()), name
                assert set(marked) <= {0, 1}, name
        # (each set column is over the set it is kept for, and each node's
        # list of the set columns of the sets it has all of, when made, whole)
        assert all(sorted(names) == [name for name, _ in column[1][:len(names)]]
                   and column[0] == "set" and column in nodes.columns
                   for names, column in nodes.set_masked.items())
        assert set(nodes.set_held) <= set(members)
        for s, held in nodes.set_held.items():
            assert sorted(map(id, held)) == sorted(
                id(column) for names, column in nodes.set_masked.items()
                if names <= set(s.node.resources))
        # (each node's list of counted sets it has all of, when made, is whole)
        assert set(nodes.held) <= set(members)
        for s, held in nodes.held.items():
            assert sorted(map(sorted, held)) == sorted(
                sorted(names) for names in nodes.tallies if names <= set(s.node.resources))
        check_refusals(nodes, index)
        seen.update(s.name for s in members)
    assert seen == set(distributor._slots) == set(index._home)


def floors_of(index, nodes):
    """The (shape, floor) pairs the plans of ``index`` keep for class ``nodes``."""
    return [(shape, entry.floor) for shape, plan in index._plans.items()
            for entry in plan.entries if entry.nodes is nodes and entry.floor is not None]


def check_refusals(nodes, index):
    """Every block a record says refuses its vector does: each node of it is
    cordoned, hosts a workload of one of the vector's groups, or does not
    fit the vector's requirements (whatever its order key). The same for
    the floors' records (the plans of ``index``), without groups: the
    floor's quantities fit no open node of a block stamped there."""
    for shape, floor in floors_of(index, nodes):
        if not floor.record.stamped:
            continue
        names, immunities = shape
        workload = SimpleNamespace(requirements=dict(zip(names, floor.needed)),
                                   immunities=immunities)
        for block, stamp, version in zip(nodes.blocks, floor.record.stamps, nodes.versions):
            if stamp != version:
                continue
            for s in block.slots:
                assert s.cordoned or reason_of(s.remaining, workload) is not None, \
                    (s.name, shape, floor.needed)
    for (kept, needed), record in nodes.refusals.items():
        if not record.stamped:
            continue
        # (kept: the shape, requirement names and immunities; or the shape
        # and the aversion groups)
        grouped = len(kept[0]) == 2 and isinstance(kept[0][1], frozenset)
        shape, groups = kept if grouped else (kept, frozenset())
        names, immunities = shape
        workload = SimpleNamespace(requirements=dict(zip(names, needed)),
                                   immunities=immunities)
        for block, stamp, version in zip(nodes.blocks, record.stamps, nodes.versions):
            if stamp != version:
                continue
            for s in block.slots:
                assert s.cordoned or not s.groups.keys().isdisjoint(groups) \
                    or reason_of(s.remaining, workload) is not None, (s.name, kept, needed)


def test_a_column_reads_minus_infinity_where_a_node_lacks_the_resource_or_is_cordoned():
    distributor = lighthouse.PrioritizedDistributor.from_list(
        [{"name": "n", "resources": {"cpu": 2, "ssd": 0}}])
    slot = distributor._slots["n"]
    assert (column_value(slot, "cpu"), column_value(slot, "ssd"),
            column_value(slot, "gpu"), column_value(slot, OPEN)) == (2.0, 0.0, -INF, 0.0)
    distributor.cordon("n")
    assert column_value(slot, "cpu") == column_value(slot, OPEN) == -INF


@settings(max_examples=120, deadline=None)
@given(strategy=STRATEGIES, nodes=clusters(max_nodes=14), rubric=RUBRICS,
       steps=operations(max_steps=10), load=st.sampled_from([1, 2, 3, 8]),
       joint=st.sampled_from(sorted(JOINT)), floors=st.sampled_from(sorted(FLOORS)),
       sparse=SPARSE, grouping=st.sampled_from(sorted(GROUPING)))
def test_index_plain_and_reference_agree(strategy, nodes, rubric, steps, load, joint, floors,
                                         sparse, grouping):
    fast = make(strategy, nodes, rubric, True, load, joint, floors, sparse, grouping)
    plain = make(strategy, nodes, rubric, False)
    reference = Reference(strategy, nodes, rubric)
    assert plain._index is None
    for step in steps:
        operation = concrete(step, reference.assignments(),
                             [m.name for m in reference.machines])
        expected = run_reference(operation, reference)
        assert run(operation, plain) == expected, operation
        assert run(operation, fast) == expected, operation
        assert_same_state(fast, reference)
        assert_same_state(plain, reference)
        assert fast.to_dict() == plain.to_dict()
        check_index(fast)


@settings(max_examples=40, deadline=None)
@given(strategy=STRATEGIES, nodes=clusters(max_nodes=40), rubric=RUBRICS,
       steps=operations(max_steps=6))
def test_index_with_many_nodes_and_default_blocks(strategy, nodes, rubric, steps):
    steps_both(make(strategy, nodes, rubric, True, 4), Reference(strategy, nodes, rubric), steps)


def steps_both(fast, reference, steps):
    """Run ``steps`` (drawn by ``instances.operations``) on both; every
    result, the state and the index checked at each."""
    for step in steps:
        operation = concrete(step, reference.assignments(),
                             [m.name for m in reference.machines])
        assert run(operation, fast) == run_reference(operation, reference), operation
        assert_same_state(fast, reference)
        check_index(fast)


def test_the_plain_path_is_taken_when_the_index_is_off():
    nodes = [{"name": f"n{i}", "resources": {"cpu": 2}} for i in range(5)]
    plain = make("RoundRobin", nodes, {}, False)
    with mock.patch.object(NodeIndex, "first_fit", side_effect=AssertionError):
        assert plain.attempt_assign_loads(
            [{"name": "w", "requirements": {"cpu": 1}}]) == {"w": "n0"}
    fast = make("RoundRobin", nodes, {}, True)
    with mock.patch.object(type(fast), "_first_fit", side_effect=AssertionError):
        assert fast.attempt_assign_loads(
            [{"name": "w", "requirements": {"cpu": 1}}]) == {"w": "n0"}


def test_corner_cases_decide_like_the_reference():
    """Negative weights, an undefined score, unlimited and warded nodes,
    immunities and shortcomings: the index only prunes, check_fit decides."""
    inf = float("inf")
    nodes = [
        {"name": "both", "resources": {"cpu": inf, "mem": 4, "flies": -inf}},
        {"name": "unlimited", "resources": {"cpu": inf, "mem": 2}},
        {"name": "short", "resources": {"cpu": 3, "mem": 8, "flies": -2}},
        {"name": "warded", "resources": {"cpu": 8, "mem": 8, "spiders": -inf}},
        {"name": "plain", "resources": {"cpu": 1, "mem": 1}},
    ] + [{"name": f"x{i}", "resources": {"cpu": i % 3, "mem": i % 4}} for i in range(12)]
    workloads = [
        {"name": "offsets", "requirements": {"cpu": 1, "flies": -2}},
        {"name": "immune", "requirements": {"cpu": 2, "mem": 1}, "immunities": ["spiders"]},
        {"name": "big", "requirements": {"cpu": 100, "mem": 1}},
        {"name": "tolerant", "requirements": {"mem": 9}, "immunities": ["mem"]},
        {"name": "tiny", "requirements": {"cpu": 0.5}},
    ]
    for strategy in ("Prioritized", "RoundRobin", "BinPack"):
        for rubric in ({"cpu": -1, "mem": 1}, {"cpu": 1, "flies": 1}, {"mem": -0.5}):
            fast = make(strategy, nodes, rubric, True, 2)
            reference = Reference(strategy, nodes, rubric)
            assert fast.attempt_assign_loads(workloads) == reference.assign(workloads)
            assert_same_state(fast, reference)
            check_index(fast)


#: Few shapes, so that the same one fails again and again (and is remembered
#: as fitting nowhere), with a shortcoming offset and an immunity among them.
SHAPES = [
    ({"cpu": 2, "mem": 1}, ()), ({"cpu": 1}, ()), ({"cpu": 3, "mem": 3}, ()),
    ({"cpu": 1, "flies": -1}, ()), ({"cpu": 2}, ("spiders",)), ({"mem": 2}, ()),
    # (the same names in the other order: what fit nowhere is shared)
    ({"mem": 3, "cpu": 3}, ()), ({"mem": 1, "cpu": 2}, ()), ({"mem": 4, "cpu": 1}, ()),
]
SHAPE_NODES = [
    {"name": "a", "resources": {"cpu": 3, "mem": 2}},
    {"name": "b", "resources": {"cpu": 2, "mem": 4, "flies": -1}},
    {"name": "c", "resources": {"cpu": 4, "mem": 1, "spiders": float("-inf")}},
    {"name": "d", "resources": {"cpu": 1, "mem": 3}},
]
SHAPE_STEPS = st.lists(st.tuples(
    st.sampled_from(["assign", "assign", "release", "add", "cordon", "uncordon",
                     "drain", "remove"]),
    st.lists(st.integers(0, len(SHAPES) - 1), min_size=1, max_size=6),
    st.randoms(use_true_random=False)), min_size=1, max_size=12)


@settings(max_examples=80, deadline=None)
@given(strategy=STRATEGIES, steps=SHAPE_STEPS, load=st.sampled_from([1, 2, 48]))
def test_shapes_remembered_as_fitting_nowhere_are_forgotten_in_time(strategy, steps, load):
    """A shape that fit nowhere is not searched again until an open node
    gains room, joins or is uncordoned: the same decisions as the reference."""
    rubric = {"cpu": 1, "mem": 0.5}
    fast = make(strategy, SHAPE_NODES, rubric, True, load)
    plain = make(strategy, SHAPE_NODES, rubric, False)
    reference = Reference(strategy, SHAPE_NODES, rubric)
    probes = [{"name": "probe", "requirements": requirements, "immunities": list(immunities)}
              for requirements, immunities in SHAPES]
    made = 0
    for kind, shapes, rng in steps:
        names = [m.name for m in reference.machines]
        if kind == "assign":
            argument = []
            for shape in shapes:
                requirements, immunities = SHAPES[shape]
                argument.append({"name": f"w{made}", "requirements": requirements,
                                 "immunities": list(immunities),
                                 "aversion_groups": ["g"] if made % 3 == 0 else []})
                made += 1
        elif kind == "release":
            placed = sorted(reference.assignments())
            argument = rng.sample(placed, min(len(placed), len(shapes)))
        elif kind == "add":
            argument = [{"name": f"new{made}", "resources": {"cpu": shapes[0] + 1, "mem": 3}}]
            made += 1
        elif not names:
            continue
        elif kind == "remove":
            argument = [rng.choice(names)]
        else:
            argument = rng.choice(names)
        operation = (kind, argument)
        expected = run_reference(operation, reference)
        assert run(operation, fast) == expected, operation
        assert run(operation, plain) == expected, operation
        assert_same_state(fast, reference)
        check_index(fast)
        for probe in probes:  # every shape, right after every step
            assert fast.explain(probe).choice == plain.explain(probe).choice, (operation, probe)


#: Replicas of a few shapes, some with aversion groups, some with none; the
#: last shape needs no room, so only its groups change what a node takes.
REPLICA_SHAPES = SHAPES + [({"cpu": 0}, ())]
REPLICA_STEPS = st.lists(st.tuples(
    st.sampled_from(["assign", "assign", "assign", "release", "add", "cordon", "uncordon",
                     "remove", "drain"]),
    st.lists(st.tuples(st.integers(0, len(REPLICA_SHAPES) - 1),
                       st.sampled_from([(), ("g",), ("h",), ("g", "h")])),
             min_size=1, max_size=10),
    st.randoms(use_true_random=False)), min_size=1, max_size=14)


@settings(max_examples=120, deadline=None)
@given(strategy=STRATEGIES, steps=REPLICA_STEPS, load=st.sampled_from([1, 2, 48]),
       one_by_one=st.booleans(), grouping=st.sampled_from(sorted(GROUPING)))
def test_replicas_with_groups_decide_like_the_reference(strategy, steps, load, one_by_one,
                                                        grouping):
    """Replicas of a few shapes, with and without aversion groups, placed one
    by one or in batches; placing, releasing, adding, cordoning, draining and
    removing in between: the same decisions as the plain scan and the
    reference, with group columns made at once, one a class, or as the
    library makes them."""
    rubric = {"cpu": 1, "mem": -0.5}
    nodes = SHAPE_NODES + [{"name": f"e{i}", "resources": {"cpu": 4, "mem": 4}}
                           for i in range(4)]
    fast = make(strategy, nodes, rubric, True, load, grouping=grouping)
    plain = make(strategy, nodes, rubric, False)
    reference = Reference(strategy, nodes, rubric)
    made = 0
    for kind, shapes, rng in steps:
        names = [m.name for m in reference.machines]
        operations = []
        if kind == "assign":
            batch = []
            for shape, groups in shapes:
                requirements, immunities = REPLICA_SHAPES[shape]
                batch.append({"name": f"w{made}", "requirements": requirements,
                              "immunities": list(immunities),
                              "aversion_groups": list(groups)})
                made += 1
            operations = [("assign", [spec]) for spec in batch] if one_by_one \
                else [("assign", batch)]
        elif kind == "release":
            placed = sorted(reference.assignments())
            operations = [("release", rng.sample(placed, min(len(placed), len(shapes))))]
        elif kind == "add":
            operations = [("add", [{"name": f"new{made}",
                                    "resources": {"cpu": shapes[0][0] + 2, "mem": 3}}])]
            made += 1
        elif names:
            operations = [(kind, [rng.choice(names)] if kind == "remove"
                           else rng.choice(names))]
        for operation in operations:
            expected = run_reference(operation, reference)
            assert run(operation, fast) == expected, operation
            assert run(operation, plain) == expected, operation
            assert_same_state(fast, reference)
        check_index(fast)


def place_then_release(fast, reference, batch, rng, every):
    """Place ``batch`` with both, the same, then release one in ``every``
    of the workloads the reference holds (drawn by ``rng``) from both."""
    assert fast.attempt_assign_loads(batch) == reference.assign(batch)
    assert_same_state(fast, reference)
    check_index(fast)
    placed = sorted(reference.assignments())
    gone = rng.sample(placed, len(placed) // every)
    assert run(("release", gone), fast) == reference.release(gone)


def change_cluster(fast, reference, round_, added):
    """Between batches of a six-round run: nodes ``added`` join both at
    round 2, n001 and n003 are cordoned at rounds 1 and 3, and n001
    uncordoned at round 4, the same on both."""
    if round_ == 2:
        run(("add", added), fast)
        reference.add(added)
    if round_ in (1, 3):
        victim = ("cordon", f"n{round_:03d}")
        assert run(victim, fast) == run_reference(victim, reference)
    if round_ == 4:
        back = ("uncordon", "n001")
        assert run(back, fast) == run_reference(back, reference)


@pytest.mark.parametrize("grouping", ["library", "eager"])
@pytest.mark.parametrize("strategy", ["BinPack", "Prioritized", "BestFit"])
def test_members_of_a_few_groups_decide_like_the_reference_with_group_columns(strategy,
                                                                              grouping):
    """A cluster filled with members of a few aversion groups, of many
    sizes, then some released and more placed: under BinPack the first
    nodes host every group, so searches step over them until the classes
    make group columns as the library does (checked: made, and holding each
    node's value); every decision stays the reference's, and so with group
    columns made at the first search avoiding a group."""
    rng = random.Random(strategy)
    nodes = [{"name": f"n{i:03d}",
              "resources": {"cpu": rng.choice([4, 8, 16]), "mem": rng.choice([8, 16, 32])}}
             for i in range(160)]
    rubric = {"cpu": 1, "mem": 0.25}
    fast = make(strategy, nodes, rubric, True, 8, grouping=grouping)
    reference = BestFitReference(nodes) if strategy == "BestFit" \
        else Reference(strategy, nodes, rubric)
    made = 0
    for round_ in range(4):
        batch = []
        for _ in range(300):
            requirements = {"cpu": rng.randrange(1, 40) / 20, "mem": rng.randrange(1, 40) / 10}
            spec = {"name": f"w{made}", "requirements": requirements}
            if rng.random() < 0.5:
                spec["aversion_groups"] = [f"g{rng.randrange(4)}"]
            batch.append(spec)
            made += 1
        place_then_release(fast, reference, batch, rng, 5)
        if round_ == 1:
            victim = rng.choice(nodes)["name"]
            cordon = ("cordon", victim)
            assert run(cordon, fast) == run_reference(cordon, reference)
    if strategy == "BinPack" or grouping == "eager":
        # (BinPack's first nodes host every group: it makes them unasked)
        assert any(nodes.grouped for nodes in fast._index._classes.values())
    assert_same_state(fast, reference)
    check_index(fast)
    # (a copy keeps its group columns, and they keep working)
    copied = pickle.loads(pickle.dumps(fast))
    batch = [{"name": f"late{i}", "requirements": {"cpu": 0.05 * (i % 7 + 1)},
              "aversion_groups": [f"g{i % 4}"]} for i in range(60)]
    assert copied.attempt_assign_loads(batch) == reference.assign(batch)
    assert_same_state(copied, reference)
    check_index(copied)


@pytest.mark.parametrize("grouping", ["none", "eager"])
@pytest.mark.parametrize("strategy", ["Prioritized", "RoundRobin", "BinPack", "BestFit"])
def test_blocks_passed_by_the_room_of_their_nodes_free_of_a_group_decide_like_the_reference(
        strategy, grouping):
    """Every workload of one of four aversion groups, in a cluster filling
    from the front: the first blocks keep room only on nodes hosting the
    groups that came first, so a block looked inside in vain twice keeps
    what its nodes free of the group show (see
    :meth:`~pylighthouse.index.groups.GroupColumns.keep_away`) and later searches
    for the group pass it by that (checked: some do). Workloads are
    released (nodes lose groups and gain room), nodes join and are
    cordoned and uncordoned in between; with group columns (``eager``) or
    without (``none``), every decision is the reference's."""
    rng = random.Random(f"{strategy}-{grouping}")
    nodes = [{"name": f"n{i:03d}",
              "resources": {"cpu": rng.choice([4, 8]), "mem": rng.choice([8, 16])}}
             for i in range(96)]
    rubric = {"cpu": 1, "mem": 0.25}
    with settings_of(True, 8, grouping=grouping):
        fast, reference = make_with_twin(strategy, nodes, rubric, 8)
    passed = []
    real = search._passing

    def counting(*args):
        candidates, bounded = real(*args)
        if len(args) > 7 and args[7] is not None:  # (figures kept: the blocks they pass)
            candidates = list(candidates)
            passed.append(len(list(real(*args[:7], None, *args[8:])[0])) - len(candidates))
        return iter(candidates), bounded

    made = 0
    with mock.patch.object(search, "_passing", counting):
        for round_ in range(6):
            batch = []
            for _ in range(120):
                batch.append({"name": f"w{made}", "requirements": {
                    "cpu": rng.randrange(2, 30) / 10, "mem": rng.randrange(2, 60) / 10},
                    "aversion_groups": [f"g{rng.randrange(4)}"]})
                made += 1
            place_then_release(fast, reference, batch, rng, 6)
            change_cluster(fast, reference, round_, [
                {"name": f"m{i}", "resources": {"cpu": 4, "mem": 8}} for i in range(8)])
    if strategy in ("Prioritized", "RoundRobin"):
        assert any(passed)  # (some block was passed by the figures kept)
    assert_same_state(fast, reference)
    check_index(fast)


class _Figures:
    """A block's kept figures of one column as a search reads them,
    counting the reads that fall short of ``least`` (each passes a block)."""

    def __init__(self, figures, least, short):
        self.figures, self.least, self.short = figures, least, short

    def __getitem__(self, index):
        figure = self.figures[index]
        if figure < self.least:
            self.short.append(index)
        return figure


@pytest.mark.parametrize("strategy", ["Prioritized", "RoundRobin", "BinPack", "BestFit"])
def test_blocks_passed_by_the_figures_of_any_column_decide_like_the_reference(strategy):
    """Workloads asking for far more memory than cpu, every one in one of
    four aversion groups: the nodes free of a group in the first blocks
    keep cpu but not memory, so the block's figures that turn it away are
    the memory column's, not always the one compared in C. A block whose
    kept figures fall short in any column of the sieve is passed without
    looking inside (checked: some are), and every decision is the
    reference's, with releases, joins, cordons and uncordons between."""
    rng = random.Random(f"figures-{strategy}")
    nodes = [{"name": f"n{i:03d}", "resources": {
        "cpu": (cpu := rng.choice([4, 8, 16])), "mem": cpu * rng.choice([2, 4, 8])}}
        for i in range(96)]
    rubric = {"cpu": 1, "mem": 0.25}
    with settings_of(True, 8, grouping="none"):
        fast, reference = make_with_twin(strategy, nodes, rubric, 8)
    short = []
    real = search._figured

    def spying(known, near, total):
        seen, found = real(known, near, total)
        return seen, [(_Figures(figures, least, short), least) for figures, least in found]

    made = 0
    with mock.patch.object(search, "_figured", spying):
        for round_ in range(6):
            batch = []
            for _ in range(100):
                cpu = rng.randrange(1, 8) / 4
                batch.append({"name": f"w{made}", "requirements": {
                    "cpu": cpu, "mem": cpu * rng.choice([6, 10, 16])},
                    "aversion_groups": [f"g{rng.randrange(4)}"]})
                made += 1
            place_then_release(fast, reference, batch, rng, 5)
            change_cluster(fast, reference, round_, [
                {"name": f"m{i}", "resources": {"cpu": 8, "mem": 64}} for i in range(8)])
    assert short  # (some block was passed by a column's figures)
    assert_same_state(fast, reference)
    check_index(fast)


@pytest.mark.parametrize("strategy", ["Prioritized", "RoundRobin", "BinPack", "BestFit"])
def test_a_group_found_on_every_fitting_node_is_searched_again_once_a_node_frees_it(strategy):
    """A workload of group g that fits only nodes hosting g is remembered as
    fitting no node free of g (and goes where it fits); once a node loses
    its member of g, the next such workload must find it, as the reference
    does."""
    nodes = [{"name": f"n{i}", "resources": {"cpu": 1}} for i in range(2)]

    def grouped(name, cpu):
        return {"name": name, "requirements": {"cpu": cpu}, "aversion_groups": ["g"]}

    fast = make(strategy, nodes, {"cpu": 1}, True, 2)
    reference = BestFitReference(nodes) if strategy == "BestFit" \
        else Reference(strategy, nodes, {"cpu": 1})
    steps = [("assign", [grouped("a", 1)]), ("assign", [grouped("b", 0)]),
             ("assign", [grouped("c", 0)])]
    for operation in steps:
        assert run(operation, fast) == run_reference(operation, reference), operation
    freed = fast.assignments["b"]
    assert freed != fast.assignments["a"] == fast.assignments["c"]  # (c fits g-free nowhere)
    for operation in [("release", ["b"]), ("assign", [grouped("e", 0)])]:
        assert run(operation, fast) == run_reference(operation, reference), operation
    # (e goes to the node b left, the only one hosting none of g)
    assert fast.assignments["e"] == reference.assignments()["e"] == freed
    assert_same_state(fast, reference)
    check_index(fast)


def test_a_release_that_frees_only_a_group_reopens_the_node():
    """A workload needing no room leaves its node with the same room but one
    group fewer: the next search for its shape and group must see the node."""
    nodes = [{"name": f"n{i}", "resources": {"cpu": 1}} for i in range(4)]

    def grouped(name):
        return {"name": name, "requirements": {"cpu": 0}, "aversion_groups": ["g"]}

    for strategy in ("Prioritized", "BinPack"):
        fast = make(strategy, nodes, {"cpu": 1}, True, 2)
        reference = Reference(strategy, nodes, {"cpu": 1})
        for operation in [("assign", [grouped("z1")]), ("assign", [grouped("z2")]),
                          ("release", ["z1"]), ("assign", [grouped("z3")])]:
            assert run(operation, fast) == run_reference(operation, reference), operation
        assert fast.assignments["z3"] == reference.assignments()["z3"] == "n0"


def test_quantities_at_the_edges_of_float_range_decide_like_the_reference():
    """The trees and the sieve compare float copies: a finite quantity beyond
    float range, one that rounds to zero, and neighbours closer than float
    rounding must still be pruned only where they fall short exactly. Each
    node meets each requirement on its own, so one wrong prune changes a
    decision."""
    # (Quantities lie within 1e-300 and 1e300 in magnitude: the ends of that
    # range, and neighbours of 1 that floats cannot tell apart.)
    edges = ["1e300", "-1e300", "9.99999999999999999999e299", "1e-300", "-1e-300", "0", "1",
             "1.00000000000000000001", "0.99999999999999999999"]
    values = [Decimal(value) for value in edges]  # (the reference cannot mix them with inf)
    workloads = [[{"name": "w", "requirements": {"cpu": value}}] for value in values] + \
        [[{"name": "w", "requirements": {"cpu": value, "mem": value, "disk": value}}]
         for value in values]
    # Alone, and behind five nodes that fit nothing in one block, where it is sieved.
    fillers = [{"name": f"f{i}", "resources": {"gpu": 1}} for i in range(5)]
    for strategy in ("Prioritized", "RoundRobin", "BinPack"):
        for value in values:
            node = {"name": "n", "resources": {"cpu": value, "mem": value, "disk": value}}
            for nodes, load in (([node], 1), (fillers + [node], 48)):
                for batch in workloads:
                    fast = make(strategy, nodes, {"cpu": 1}, True, load)
                    expected = Reference(strategy, nodes, {"cpu": 1}).assign(batch)
                    assert fast.attempt_assign_loads(batch) == expected, (strategy, value, batch)
                    check_index(fast)
        nodes = [{"name": f"n{i}", "resources": {"cpu": value, "mem": value}}
                 for i, value in enumerate(values)]
        batch = [{"name": f"w{i}", "requirements": {"cpu": value, "mem": value}}
                 for i, value in enumerate(values)]
        fast = make(strategy, nodes, {"cpu": 1}, True, 1)
        reference = Reference(strategy, nodes, {"cpu": 1})
        assert fast.attempt_assign_loads(batch) == reference.assign(batch)
        assert_same_state(fast, reference)
        check_index(fast)


def test_a_tiny_requirement_beside_others_is_sieved_without_overflow():
    """Regression: 5e-324 beside other positive requirements raised
    OverflowError in the previous index (a power of two of its exponent).
    Such a float is now refused up front (the range rule of quantities);
    the index meets the extremes of that range beside each other."""
    for strategy in ("Prioritized", "RoundRobin", "BinPack"):
        nodes = [{"name": "n", "resources": {"a": 1, "b": 1, "c": 1}}]
        workloads = [{"name": "good", "requirements": {"a": 0.5}},
                     {"name": "bad", "requirements": {"a": 0.1, "b": 0.1, "c": 5e-324}}]
        fast = make(strategy, nodes, {"a": 1}, True, 48)
        before = fast.to_dict()
        with pytest.raises(InvalidInputError, match="'bad'.*out of range"):
            fast.attempt_assign_loads(workloads)
        assert fast.to_dict() == before
        workloads[1]["requirements"]["c"] = 1e-300
        assert fast.attempt_assign_loads(workloads) == {"good": "n", "bad": "n"}
        for value in (1e-296, 1e296, 1.0):
            # 40 nodes: enough for the joint columns, whose scales and
            # ratios meet these quantities too.
            nodes = [{"name": f"n{i}", "resources": {"a": value * (i % 7), "b": value}}
                     for i in range(40)]
            batch = [{"name": f"w{i}", "requirements": {"a": value, "b": value / 4}}
                     for i in range(8)] + \
                [{"name": "x", "requirements": {"a": 1e-300, "b": 1e300}},
                 {"name": "y", "requirements": {"a": 1e300, "b": 1e-300}},
                 {"name": "z", "requirements": {"a": 1e-300, "b": 1e-300}}]
            fast = make(strategy, nodes, {"a": 1}, True, 2)
            reference = Reference(strategy, nodes, {"a": 1})
            assert fast.attempt_assign_loads(batch) == reference.assign(batch), value
            assert_same_state(fast, reference)
            check_index(fast)


def hostname_cluster(count):
    """Nodes of two shapes, each with its own hostname tag, a few with a gpu."""
    return [{"name": f"n{i:03d}", "resources": dict(
        {"cpu": 4 + i % 3, "mem": 8, f"host-{i:03d}": 0},
        **({"gpu": 1} if i % 10 == 3 else {}), **({"ssd": 0} if i % 2 else {}))}
        for i in range(count)]


def columns_past(few):
    """For a test sized so that a resource on more than ``few`` nodes is
    searched by column whatever the strategy: ``FEW_KEPT`` and
    ``FEW_ALL_KEPT`` (where nodes keep their order) set to ``few`` too, and
    ``SCAN_LIMIT`` 0 (no node tried one by one before the columns)."""
    def wrap(test):
        return mock.patch("pylighthouse.index.plans.FEW_KEPT", few)(
            mock.patch("pylighthouse.index.plans.FEW_ALL_KEPT", few)(
                mock.patch("pylighthouse.index.plans.SCAN_LIMIT", 0)(test)))
    return wrap


@contextmanager
def few_patched(few, sorted_at=8):
    """``FEW`` and ``FEW_KEPT`` both ``few`` (the bearers of a tag tried one
    by one where nodes move and where they keep their order), and
    ``SORTED_AT_SEARCH`` ``sorted_at``."""
    with mock.patch("pylighthouse.index.plans.FEW", few), \
            mock.patch("pylighthouse.index.plans.FEW_KEPT", few), \
            mock.patch("pylighthouse.index.nodes.SORTED_AT_SEARCH", sorted_at):
        yield


@settings(max_examples=30, deadline=None)
@given(strategy=STRATEGIES, picks=st.lists(st.tuples(
    st.integers(0, 59), st.sampled_from(["host", "gpu", "ssd", "plain", "nowhere"]),
    st.sampled_from([(), ("g",)])), min_size=1, max_size=40),
    few=st.sampled_from([0, 2, 32]), load=st.sampled_from([2, 64]),
    sorted_at=st.sampled_from([0, 8]))
def test_tags_through_the_tag_map_decide_like_the_reference(strategy, picks, few, load,
                                                            sorted_at):
    """Workloads pinned by a hostname tag (searched node by node among its
    bearers), asking for a common tag (searched by a tag column, or node by
    node when ``FEW`` or ``FEW_KEPT`` is large: among bearers sorted at the
    search, or kept in order by the class when more than
    ``SORTED_AT_SEARCH``), a scarce gpu, nothing special, or more than any
    node has; releases and cordons between."""
    nodes = hostname_cluster(60)
    with few_patched(few, sorted_at):
        fast = make(strategy, nodes, {"cpu": 1, "gpu": 5}, True, load)
        reference = Reference(strategy, nodes, {"cpu": 1, "gpu": 5})
        for at, (node, kind, groups) in enumerate(picks):
            requirements = {"cpu": 1, "mem": 2}
            if kind == "host":
                requirements[f"host-{node:03d}"] = 0
            elif kind == "gpu":
                requirements["gpu"] = 1
            elif kind == "ssd":
                requirements["ssd"] = 0
            elif kind == "nowhere":
                requirements["cpu"] = 7
            batch = [{"name": f"w{at}", "requirements": requirements,
                      "aversion_groups": list(groups)}]
            assert fast.attempt_assign_loads(batch) == reference.assign(batch)
            if at % 7 == 6:
                victim = sorted(reference.assignments())[0]
                assert run(("release", [victim]), fast) == reference.release([victim])
            if at % 11 == 10:
                name = f"n{node:03d}"
                fast.cordon(name)
                reference.cordon(name)
        assert_same_state(fast, reference)
        check_index(fast)


@settings(max_examples=30, deadline=None)
@given(strategy=st.sampled_from(["Prioritized", "RoundRobin"]), seed=st.integers(0, 10 ** 6),
       load=st.sampled_from([2, 8]))
def test_bearers_kept_in_order_decide_like_the_reference(strategy, seed, load):
    """A gpu on 40 of 60 nodes (fewer than ``FEW_KEPT``: its bearers are
    tried one by one, in the order the class keeps them), asked for again
    and again. Workloads are released, nodes cordoned, uncordoned, added
    (bearing it or not) and removed, and some workloads are in an aversion
    group, in between: every decision is the reference's, and the order
    kept is the bearers' order whenever it is current (``check_index``)."""
    rng = random.Random(seed)
    nodes = [{"name": f"n{at:02d}", "resources": {
        "cpu": rng.choice([2, 4]), "mem": 8, **({"gpu": rng.randint(1, 3)} if at % 3 else {})}}
        for at in range(60)]
    fast = make(strategy, nodes, None, True, load)
    reference = Reference(strategy, nodes, None)
    searched = []  # (how many bearers each search of the kept order had)
    real, real_kept = index_kept.first_in_order, index_nodes.NodeIndex._kept_from

    def watched(slots, keys, *rest):
        searched.append(len(slots))
        return real(slots, keys, *rest)

    def watched_kept(record, workload, groups, slots, *rest):
        searched.append(len(slots))
        return real_kept(record, workload, groups, slots, *rest)

    with mock.patch.object(index_kept, "first_in_order", watched), \
            mock.patch.object(index_nodes.NodeIndex, "_kept_from", staticmethod(watched_kept)):
        for step in range(40):
            batch = [{"name": f"w{step}-{at}",
                      "requirements": {"cpu": rng.choice([1, 2]), "mem": 1, "gpu": 1},
                      "aversion_groups": rng.choice([[], [], ["g"]])}
                     for at in range(rng.randint(1, 4))]
            assert fast.attempt_assign_loads(batch) == reference.assign(batch), step
            names = [machine.name for machine in reference.machines]
            operation = None
            if step % 5 == 4 and reference.assignments():
                operation = ("release", rng.sample(sorted(reference.assignments()),
                                                   min(3, len(reference.assignments()))))
            elif step % 7 == 6:
                operation = (rng.choice(["cordon", "uncordon"]), rng.choice(names))
            elif step % 11 == 10:
                operation = ("add", [{"name": f"a{step}", "resources": {
                    "cpu": 4, "mem": 8, **({"gpu": 2} if step % 2 else {})}}])
            elif step % 13 == 12 and len(names) > 10:
                operation = ("remove", [rng.choice(names)])
            if operation is not None:
                assert run(operation, fast) == run_reference(operation, reference), operation
            check_index(fast)
    assert_same_state(fast, reference)
    assert searched and min(searched) > 30  # (the kept order was searched)


@settings(max_examples=200, deadline=None)
@given(strategy=st.sampled_from(["Prioritized", "RoundRobin"]), nodes=clusters(max_nodes=10),
       steps=operations(max_steps=10), kept=st.sampled_from([1, 4096]))
def test_bearers_searched_from_their_count_of_refusals_decide_like_the_reference(
        strategy, nodes, steps, kept):
    """Every tag asked for searched among its bearers in order, from the
    count of bearers known to refuse (``CURSOR_AT`` and ``SORTED_AT_SEARCH``
    at 0; one count kept a class, or many), through every lifecycle
    operation: workloads of negative requirements, immunities, wards,
    groups, releases, cordons, nodes joining and leaving."""
    with mock.patch.multiple(index_kept, CURSOR_AT=0, MAX_CURSORS=kept), \
            mock.patch.object(index_nodes, "SORTED_AT_SEARCH", 0):
        distributor = make(strategy, nodes, None, True, 2)
        reference = Reference(strategy, nodes, None)
        for step in steps:
            operation, ours, theirs = step_both(step, distributor, reference)
            assert ours == theirs, operation
            assert_same_state(distributor, reference)
        check_index(distributor)


def test_a_search_among_many_bearers_starts_past_those_known_to_refuse():
    """Prioritized fills the first bearers of a device (a gpu on 120 nodes
    of 160, searched among its bearers in order); the next workload
    asking for it, as large as the ones before, is not checked against
    them again, and one asking for less is, once (the count starts again
    from the first bearer)."""
    nodes = [{"name": f"n{at:03d}", "resources": {"cpu": 4, "mem": 8, "gpu": 1}}
             for at in range(120)] + \
        [{"name": f"p{at:03d}", "resources": {"cpu": 4, "mem": 8}} for at in range(40)]
    fast = make("Prioritized", nodes, None, True, 8)
    loads = [{"name": f"w{at}", "requirements": {"cpu": 2, "mem": 1, "gpu": 1}}
             for at in range(100)]
    assert fast.attempt_assign_loads(loads) == {f"w{at}": f"n{at:03d}" for at in range(100)}
    starts = []  # (how many bearers each search passed without a look)
    real = index_nodes.NodeIndex._kept_from

    def watched(record, *rest):
        starts.append(record.at)
        return real(record, *rest)

    with mock.patch.object(index_nodes.NodeIndex, "_kept_from", staticmethod(watched)):
        assert fast.attempt_assign_loads(
            [{"name": "x", "requirements": {"cpu": 2, "mem": 1, "gpu": 1}}]) == {"x": "n100"}
        # (y asks for less, and for fewer names: the count starts again,
        # and passes n100 too, whose gpu x took)
        assert fast.attempt_assign_loads(
            [{"name": "y", "requirements": {"cpu": 1, "gpu": 1}}]) == {"y": "n101"}
    assert starts == [100, 101]


@contextmanager
def refusals_of(fast):
    """Within the block, the names of the nodes of ``fast`` (an indexed
    distributor) that the search's fit check refused, in turn, in the
    list yielded (the caller may clear it between calls)."""
    refused = []
    names = {id(slot.remaining): slot.name for slot in fast._index}
    real = search.takes

    def watched(remaining, workload, below=None):
        taken = real(remaining, workload, below)
        if not taken:
            refused.append(names[id(remaining)])
        return taken

    with mock.patch.object(search, "takes", watched):
        yield refused


def test_a_search_from_the_first_bearer_passes_those_marked_refusing():
    """Prioritized over 80 bearers of a gpu: the first (b000) takes every
    workload at the floor but none of those asked for, the next 39 have
    used up their gpu. A first search from the first bearer checks them
    all and marks the 39 (they refuse the floor); the next passes them by
    their marks, checking b000 alone before the one that takes it, as a
    search from RoundRobin's cursor does. Every decision is the
    reference's."""
    nodes = [{"name": "b000", "resources": {"cpu": 1, "mem": 1, "gpu": 5}}] + \
        [{"name": f"b{at:03d}", "resources": {"cpu": 4, "mem": 8, "gpu": 1 if at < 40 else 4}}
         for at in range(1, 80)] + \
        [{"name": f"p{at:03d}", "resources": {"cpu": 4, "mem": 8}} for at in range(40)]
    fast = make("Prioritized", nodes, None, True, 8)
    reference = Reference("Prioritized", nodes, None)
    filling = [{"name": f"f{at:02d}", "requirements": {"cpu": 2, "mem": 1, "gpu": 1}}
               for at in range(39)]
    assert fast.attempt_assign_loads(filling) == reference.assign(filling)
    seen = []
    with refusals_of(fast) as refused:
        for name in ("v1", "v2"):
            refused.clear()
            # (less cpu than those before: the floor comes down to b000's room)
            loads = [{"name": name, "requirements": {"cpu": 1, "mem": 2, "gpu": 1}}]
            assert fast.attempt_assign_loads(loads) == reference.assign(loads)
            seen.append(list(refused))
    assert_same_state(fast, reference)
    assert seen == [[f"b{at:03d}" for at in range(40)], ["b000"]]
    assert fast.assignments["v2"] == "b040"


def test_a_search_from_the_round_robin_cursor_passes_bearers_found_full():
    """RoundRobin over 80 bearers of a gpu (every other one with room for
    one workload) and 40 nodes without: the second round finds the even
    bearers full and marks them, and the third round, searching from its
    cursor, passes them without a check of the fit rule. A workload
    asking for less than those before (no memory, less gpu) is refused by
    one of them again: the marks held for workloads asking at least as
    much as every one searched for. Every decision is the reference's."""
    nodes = [{"name": f"g{at:03d}", "resources": {"cpu": 1 if at % 2 == 0 else 8, "mem": 64,
                                                  "gpu": 100}} for at in range(80)] + \
        [{"name": f"p{at:03d}", "resources": {"cpu": 8, "mem": 64}} for at in range(40)]
    fast = make("RoundRobin", nodes, None, True, 8)
    reference = Reference("RoundRobin", nodes, None)
    rounds = [[{"name": f"w{turn}-{at:02d}", "requirements": {"cpu": 1, "mem": 1, "gpu": 2}}
               for at in range(count)] for turn, count in enumerate([80, 40, 20])]
    rounds.append([{"name": "less", "requirements": {"cpu": 1, "gpu": 1}}])
    seen = []
    with refusals_of(fast) as refused:
        for loads in rounds:
            refused.clear()
            assert fast.attempt_assign_loads(loads) == reference.assign(loads)
            seen.append(list(refused))
    assert_same_state(fast, reference)
    # (the second round finds the full bearers after the first, which the
    # count from the front passes; the third, from g000 to g039, passes
    # them all; the last workload searches from g040)
    assert seen == [[], [f"g{at:03d}" for at in range(2, 80, 2)], [], ["g040"]]
    assert fast.assignments["less"] == "g041"


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("size", [120, 520])
def test_round_robin_rounds_over_many_bearers_decide_like_the_reference(size, seed):
    """RoundRobin's cursor going round a gpu's bearers many times (on 520
    nodes, more bearers than a class tries one by one, so the search tries
    at most ``SCAN_LIMIT`` of them before the columns), with full bearers,
    workloads asking for less or more than those before, cordons, releases
    and nodes joining between calls: every decision and the state after
    each call are the reference's, and the search from the cursor ran."""
    rng = random.Random(seed * 1009 + size)
    nodes = []
    for at in range(size):
        resources = {"cpu": rng.choice([1, 2, 2, 4, 8]), "mem": rng.choice([2, 8, 32])}
        if rng.random() < 0.85:
            resources["gpu"] = rng.choice([1, 2, 4])
        nodes.append({"name": f"n{at:03d}", "resources": resources})
    fast = make("RoundRobin", nodes, None, True, 8)
    reference = Reference("RoundRobin", nodes, None)
    real = index_nodes.NodeIndex._kept_from
    limits = []

    def watched(*args, **kwargs):
        limits.append(args[-1] if len(args) == 8 else kwargs.get("limit", 0))
        return real(*args, **kwargs)

    names = [spec["name"] for spec in nodes]
    with mock.patch.object(index_nodes.NodeIndex, "_kept_from", staticmethod(watched)):
        for call in range(8):
            loads = []
            for at in range(rng.randrange(size // 4, size)):
                requirements = {"cpu": rng.choice([1, 1, 2, 3])}
                if rng.random() < 0.7:
                    requirements["mem"] = rng.choice([1, 2, 4])
                if rng.random() < 0.9:
                    requirements["gpu"] = rng.choice([1, 1, 2])
                loads.append({"name": f"w{call}-{at}", "requirements": requirements})
            assert fast.attempt_assign_loads(loads) == reference.assign(loads), call
            placed = sorted(reference.assignments())
            for name in rng.sample(placed, min(len(placed), rng.randrange(0, size // 8 + 1))):
                operation = ("release", [name])
                assert run(operation, fast) == run_reference(operation, reference)
            for name in rng.sample(names, 3):
                kind = rng.choice(["cordon", "uncordon"])
                assert run((kind, name), fast) == run_reference((kind, name), reference)
            if call == 4:
                joining = [{"name": f"j{at}", "resources": {"cpu": 4, "mem": 8, "gpu": 2}}
                           for at in range(3)]
                names += [spec["name"] for spec in joining]
                run(("add", joining), fast)
                run_reference(("add", joining), reference)
            assert_same_state(fast, reference)
    check_index(fast)
    assert limits  # (searches from the cursor among the bearers ran)
    if size > 500:
        assert any(limits)  # (and among more bearers than are tried one by one)


def test_a_pinned_workload_tries_only_the_node_bearing_its_tag():
    """With a hostname tag per node, a workload asking for one is checked
    against that node alone (the tag map), not sieved through the cluster."""
    fast = make("Prioritized", hostname_cluster(200), {}, True, 8)
    tried = []
    real = lighthouse.index.search.takes

    def counting(remaining, workload, below=None):
        tried.append(remaining)
        return real(remaining, workload, below)

    with mock.patch("pylighthouse.index.search.takes", counting):
        assert fast.attempt_assign_loads(
            [{"name": "w", "requirements": {"cpu": 1, "host-150": 0}}]) == {"w": "n150"}
    assert len(tried) == 1


def test_a_class_that_cannot_host_a_workload_is_never_searched():
    inf = float("inf")
    """Warded nodes form their own class; a workload not immune to the ward
    never reaches check_fit on one, nor on a node whose block lacks room."""
    nodes = [{"name": f"g{i}", "resources": {"cpu": 8, "mark": -inf}} for i in range(50)] + \
        [{"name": f"s{i}", "resources": {"cpu": 2}} for i in range(50)] + \
        [{"name": f"c{i}", "resources": {"cpu": 8}} for i in range(50)]
    fast = make("Prioritized", nodes, {}, True, 4)
    assert len(fast._index._classes) == 2
    tried = []
    real = lighthouse.index.search.takes
    with mock.patch("pylighthouse.index.search.takes",
                    lambda remaining, workload, below=None: tried.append(remaining)
                    or real(remaining, workload, below)):
        assert fast.attempt_assign_loads(
            [{"name": "w", "requirements": {"cpu": 4}}]) == {"w": "c0"}
    assert len(tried) == 1


def test_sieves_come_to_lead_with_the_column_nodes_fall_short_on():
    """Blocks whose nodes have cpu and no memory to spare (and one node
    each with memory and no cpu, so that the bounds pass): a search led by
    cpu, as the workload names it, looks inside them and finds every node
    short of memory. The shape's sieves are led by memory from then on,
    and so are those of a plan made later for the same requirements, while
    every decision stays the reference's."""
    nodes = []
    for block in range(25):
        nodes += [{"name": f"b{block:02d}-{at}", "resources": {"cpu": 8, "mem": 1}}
                  for at in range(7)]
        nodes.append({"name": f"b{block:02d}-m", "resources": {"cpu": 0.5, "mem": 64}})
    nodes += [{"name": f"z{at}", "resources": {"cpu": 8, "mem": 64}} for at in range(10)]
    # (floors as in the library, unused in a class of 27 blocks: the run of
    # blocks refusing a shape's floor would pass over those looked inside)
    fast = make("Prioritized", nodes, None, True, 8, joint="adaptive", floors="library")
    reference = Reference("Prioritized", nodes, None)
    leads = []
    real = index_nodes.first_in_class

    def watched(nodes_class, sieve, *rest):
        leads.append(sieve[0][0])
        return real(nodes_class, sieve, *rest)

    loads = [{"name": f"w{at}", "requirements": {"cpu": 1, "mem": 8}} for at in range(3)]
    with mock.patch.object(index_nodes, "first_in_class", watched):
        assert fast.attempt_assign_loads(loads) == reference.assign(loads) \
            == {f"w{at}": "z0" for at in range(3)}
        assert leads == ["cpu", "mem", "mem"]
        (nodes_class,) = fast._index._classes.values()
        assert nodes_class.leads == {frozenset({"cpu", "mem"}): ("mem", 1)}
        # (a shape of its own, an immunity to nothing the nodes have: a new
        # plan, led by memory at once)
        del leads[:]
        late = [{"name": "late", "requirements": {"cpu": 1, "mem": 8},
                 "immunities": ["gpu"]}]
        assert fast.attempt_assign_loads(late) == reference.assign(late)
    assert leads == ["mem"]
    assert_same_state(fast, reference)
    check_index(fast)


def grouped_spec(rng, name, requirements):
    """A workload of ``requirements``, in one of three aversion groups
    three times in ten and immune to ``ward`` twice in ten."""
    spec = {"name": name, "requirements": requirements}
    if rng.random() < 0.3:
        spec["aversion_groups"] = [f"g{rng.randrange(3)}"]
    if rng.random() < 0.2:
        spec["immunities"] = ["ward"]
    return spec


def step_cluster(rng, distributor, reference, node, step):
    """One random change to the cluster, made on both (releases, a cordon
    or uncordon, nodes drawn by ``node(name)`` joining, nodes leaving);
    their answers and states must agree."""
    names = [machine.name for machine in reference.machines]
    placed = sorted(reference.assignments())
    choice = rng.randrange(4)
    if choice == 0 and placed:
        operation = ("release", rng.sample(placed, rng.randint(1, len(placed))))
    elif choice == 1 and names:
        operation = (rng.choice(["cordon", "uncordon"]), rng.choice(names))
    elif choice == 2:
        operation = ("add", [node(f"a{step}-{at}") for at in range(rng.randint(1, 8))])
    elif names:
        operation = ("remove", rng.sample(names, rng.randint(1, min(3, len(names)))))
    else:
        return
    assert run(operation, distributor) == run_reference(operation, reference), operation
    assert_same_state(distributor, reference)


@settings(max_examples=150, deadline=None)
@given(strategy=st.sampled_from(["Prioritized", "RoundRobin", "BinPack", "BestFit"]),
       seed=st.integers(0, 10 ** 6), load=st.sampled_from([2, 4, 8]),
       most=st.sampled_from([1, 10 ** 6]))
def test_sieves_led_by_the_column_nodes_fell_short_on_decide_like_the_reference(
        strategy, seed, load, most):
    """Nodes of cpu and memory drawn apart, workloads naming them in either
    order, some in aversion groups, some asking for a third resource or
    immune to a ward: every search that finds a node passing its sieve's
    first column short on another has the shape's sieves led by that one
    (``MISLED`` at 1; a class changing a lead once, or at will), through
    releases, cordons, and nodes joining and leaving; every decision stays
    the reference's."""
    rng = random.Random(seed)
    sizes = [0.5, 1, 2, 4, 8, 16]

    def node(name):
        resources = {"cpu": rng.choice(sizes), "mem": rng.choice(sizes)}
        if rng.random() < 0.3:
            resources["disk"] = rng.choice(sizes)
        if rng.random() < 0.1:
            resources["ward"] = -1
        return {"name": name, "resources": resources}

    nodes = [node(f"n{at:02d}") for at in range(rng.randint(1, 40))]
    rubric = {"cpu": 1, "mem": 0.25}
    with mock.patch.object(search, "MISLED", 1), \
            mock.patch.object(plans, "MAX_PROMOTED", most):
        distributor = make(strategy, nodes, rubric, True, load, joint="adaptive",
                           floors="library")
        reference = BestFitReference(nodes) if strategy == "BestFit" \
            else Reference(strategy, nodes, rubric)
        for step in range(6):
            batch = []
            for at in range(rng.randint(1, 12)):
                cpu, mem = rng.choice(sizes) / 4, rng.choice(sizes) / 4
                requirements = {"cpu": cpu, "mem": mem} if rng.random() < 0.5 \
                    else {"mem": mem, "cpu": cpu}
                if rng.random() < 0.2:
                    requirements["disk"] = rng.choice(sizes) / 4
                batch.append(grouped_spec(rng, f"w{step}-{at}", requirements))
            assert distributor.attempt_assign_loads(batch) == reference.assign(batch), step
            step_cluster(rng, distributor, reference, node, step)
        check_index(distributor)


def test_a_workload_larger_than_every_node_ends_its_search_at_the_tops():
    """Tops: a search meeting blocks that pass the sieve's first column but
    fall short on another asks whether a threshold is above its column's
    top, and ends there if so; a whole class found refusing after looking
    inside blocks brings the tops down to the largest bounds."""
    nodes = [{"name": f"n{i}", "resources": {"cpu": 8, "mem": 2} if i % 2 else
              {"cpu": 2, "mem": 8}} for i in range(80)]
    # (floors as in the library, unused here: the run of blocks refusing
    # a shape's floor would pass over the blocks this test asks about)
    fast = make("Prioritized", nodes, {}, True, 4, joint="adaptive", floors="library")
    placed = fast.attempt_assign_loads([{"name": f"w{i}", "requirements": {"mem": 1, "cpu": 5}}
                                        for i in range(40)])
    assert sorted(placed.values()) == sorted(f"n{i}" for i in range(1, 80, 2))
    (nodes_class,) = fast._index._classes.values()
    # The cpu nodes have 3 left; the top still reads the 8 they had.
    assert max(nodes_class.bounds["cpu"]) == 3.0 and nodes_class.tops["cpu"] == 8.0
    asked = []
    beyond = NodeClass.beyond

    def spy(self, sieve):
        asked.append(beyond(self, sieve))
        return asked[-1]

    def place(name, requirements, **more):
        del asked[:]
        with mock.patch.object(NodeClass, "beyond", spy):
            return fast.attempt_assign_loads(
                [{"name": name, "requirements": requirements, **more}])[name]

    # Memory first: every block passes it, and falls short on cpu; 9 is
    # above the top: asked once, at the first such block, not 20.
    assert place("big", {"mem": 1, "cpu": 9}) is None and asked == [True]
    # Cpu first: its top is compared before any bound. (A shape naming the
    # same resources in another order shares the plan of the first, memory
    # first: an immunity, to nothing the nodes have, gives this one its own.)
    with mock.patch("pylighthouse.index.search._passing",
                    side_effect=AssertionError("scanned")):
        assert place("first", {"cpu": 9, "mem": 1}, immunities=["gpu"]) is None
        assert asked == []
    # 3 cpu and 3 mem pass every block's bounds, and no node has both: the
    # blocks are looked inside, all refuse, and the tops come down.
    assert place("both", {"cpu": 3, "mem": 3}) is None and asked == []
    assert nodes_class.tops["cpu"] == 3.0 and nodes_class.tops["mem"] == 8.0
    assert place("four", {"mem": 1, "cpu": 4}) is None and asked == [True]
    fast.release_loads(["w0"])  # room grows on n1: the top rises with its bound
    assert nodes_class.tops["cpu"] == 8.0
    assert place("again", {"mem": 1, "cpu": 4}) == "n1"
    check_index(fast)


def test_a_shape_proven_to_fit_nowhere_costs_no_search_until_room_grows():
    nodes = [{"name": f"n{i}", "resources": {"cpu": 2}} for i in range(20)]
    fast = make("Prioritized", nodes, {}, True, 4)
    assert fast.attempt_assign_loads([{"name": "a", "requirements": {"cpu": 3}}]) == {"a": None}
    with mock.patch("pylighthouse.index.nodes.first_in_class",
                    side_effect=AssertionError("searched")):
        # the same shape, and a larger one of the same names: no search
        assert fast.attempt_assign_loads(
            [{"name": "b", "requirements": {"cpu": 3}},
             {"name": "c", "requirements": {"cpu": 5}}]) == {"b": None, "c": None}
    fast.add_nodes([{"name": "big", "resources": {"cpu": 4}}])
    assert fast.attempt_assign_loads([{"name": "d", "requirements": {"cpu": 3}}]) == \
        {"d": "big"}


@pytest.mark.parametrize("strategy", ["Prioritized", "RoundRobin", "BinPack"])
def test_what_fit_nowhere_is_shared_by_the_same_names_in_any_order(strategy):
    """A vector proven to fit nowhere stands for every workload asking for
    the same names, in any order, and at least as much of each; a new one
    asking less of something takes the place of those it tells of."""
    nodes = [{"name": f"n{i}", "resources": {"cpu": 2, "mem": 4}} for i in range(20)]
    fast = make(strategy, nodes, {"cpu": 1}, True, 4)
    index = fast._index
    assert fast.attempt_assign_loads(
        [{"name": "a", "requirements": {"cpu": 9, "mem": 9}}]) == {"a": None}
    assert fast.attempt_assign_loads(
        [{"name": "b", "requirements": {"mem": 1, "cpu": 3}}]) == {"b": None}
    (_, least), = index._nowhere.values()
    assert least == [(Decimal(3), Decimal(1))]  # (in the first shape's order: cpu, mem)
    with mock.patch("pylighthouse.index.nodes.first_in_class",
                    side_effect=AssertionError("searched")):
        assert fast.attempt_assign_loads(
            [{"name": "c", "requirements": {"mem": 2, "cpu": 3}},
             {"name": "d", "requirements": {"cpu": 5, "mem": 1}}]) == {"c": None, "d": None}
    # (asking less of cpu: searched, and placed)
    assert fast.attempt_assign_loads(
        [{"name": "e", "requirements": {"mem": 1, "cpu": 2}}])["e"] is not None
    check_index(fast)


@pytest.mark.parametrize("strategy", ["Prioritized", "RoundRobin", "BinPack", "BestFit"])
def test_a_shape_naming_the_same_resources_in_another_order_twins_the_plan(strategy):
    """A workload naming the resources of a shape planned before in
    another order gets a twin of that plan (the same pairs, its own serial
    and floor), and decides as the reference does; a workload with other
    immunities gets a plan of its own."""
    nodes = [{"name": f"n{i}", "resources": {"cpu": 4, "mem": 8, "disk": 50,
                                             **({"gpu": 2} if i % 3 else {})}}
             for i in range(24)]
    asks = [{"cpu": 1, "mem": 2, "gpu": 1}, {"gpu": 1, "cpu": 1, "mem": 3},
            {"mem": 1, "gpu": 1, "cpu": 2}, {"cpu": 1, "mem": 2, "gpu": 1}]
    workloads = [{"name": f"w{i}", "requirements": dict(ask)}
                 for i, ask in enumerate(asks * 12)]
    fast = make(strategy, nodes, {"cpu": 1}, True, 4)
    reference = reference_of(strategy, nodes, {"cpu": 1})
    assert fast.attempt_assign_loads(workloads) == reference.assign(workloads)
    index = fast._index
    plans_made = [index._plans[(tuple(ask), frozenset())] for ask in asks[:3]]
    (first,), (second,), (third,) = [plan.entries for plan in plans_made]
    assert first.pairs is second.pairs is third.pairs
    assert len({first.serial, second.serial, third.serial}) == 3
    assert second.floor is None and third.floor is None
    immune = {"name": "immune", "requirements": {"mem": 1, "cpu": 1, "gpu": 1},
              "immunities": ["gpu"]}
    assert fast.attempt_assign_loads([immune]) == reference.assign([immune])
    (entry,) = index._plans[(("mem", "cpu", "gpu"), frozenset(["gpu"]))].entries
    assert entry.pairs is not first.pairs
    assert_same_state(fast, reference)
    check_index(fast)


@settings(max_examples=40, deadline=None)
@given(strategy=STRATEGIES, seed=st.integers(0, 10 ** 6), load=st.sampled_from([2, 5]),
       joint=st.sampled_from(sorted(JOINT)), floors=st.sampled_from(sorted(FLOORS)),
       sparse=SPARSE)
def test_mixes_of_the_benchmark_matrix_decide_like_the_reference(strategy, seed, load, joint,
                                                                 floors, sparse):
    """Small copies of every mix of benchmarks/matrix.py: many node shapes, a
    scarce counted resource running out, many aversion groups, fits-nowhere
    workloads, hostname tags with pinned workloads, decimals, over-subscribed;
    then a release, a drain, a removal and new nodes."""
    import random
    sys_path_benchmarks()
    import mixes
    rng = random.Random(seed)
    mix = rng.choice(sorted(mixes.MIXES))
    nodes, workloads = mixes.problem(mix, 30, 150, seed=seed)
    rubric = mixes.RUBRIC
    fast = make(strategy, nodes, rubric, True, load, joint, floors, sparse)
    reference = Reference(strategy, nodes, rubric)
    assert fast.attempt_assign_loads(workloads) == reference.assign(workloads), mix
    placed = sorted(reference.assignments())
    steps = [("release", rng.sample(placed, len(placed) // 3)),
             ("drain", nodes[rng.randrange(len(nodes))]["name"]),
             ("remove", [nodes[rng.randrange(len(nodes))]["name"]]),
             ("add", mixes.problem(mix, 5, 0, seed=seed + 1, prefix="late")[0]),
             ("assign", mixes.problem(mix, 0, 40, seed=seed + 2, prefix="more")[1])]
    for operation in steps:
        if operation[0] == "drain" and operation[1] not in fast._slots:
            continue
        if operation[0] == "remove" and operation[1][0] not in fast._slots:
            continue
        assert run(operation, fast) == run_reference(operation, reference), (mix, operation)
        assert_same_state(fast, reference)
    check_index(fast)


@contextmanager
def every_limit_tiny():
    """Every bound on what the index and the answers keep, at its least:
    records, vectors seen, plans, shapes proven to fit nowhere, counted sets,
    dense and group columns, kept bearer orders, holder lists, kept lines,
    kept sets of bits and layouts tried: each is let go, or never kept,
    again and again."""
    from pylighthouse import nowhere
    from pylighthouse.index import bearers, blocks, columns, derived, groups
    with mock.patch.multiple(blocks, MAX_REFUSED=2, MAX_SEEN=2, MAX_HOLDING=1), \
            mock.patch.multiple(bearers, MAX_COUNTED=1, MAX_UNCOUNTED=1, MAX_ORDERED=1,
                                MAX_MASKS=1), \
            mock.patch.object(groups, "MAX_AWAY", 1), \
            mock.patch.object(columns, "MAX_HOLDING", 1), \
            mock.patch.object(derived, "MAX_HOLDING", 1), \
            mock.patch.multiple(index_nodes, MAX_SHAPES=1, MAX_FAILED=1, MAX_DENSE=1,
                                MAX_GROUP_COLUMNS=1), \
            mock.patch.multiple(nowhere, KEPT=1, MADE_BYTES=1, TRIES=1, JOINS=1):
        yield


@pytest.mark.parametrize("strategy", ["Prioritized", "RoundRobin", "BinPack", "BestFit"])
@pytest.mark.parametrize("mix", ["all", "devices", "kinds", "over", "groups4000"])
def test_every_limit_at_its_least_decides_like_the_reference(strategy, mix):
    """Mixes of the benchmark matrix, at library settings but for every
    limit, through a lifecycle; the decisions, the state, the index and
    the lines of workloads that fit nowhere as the slow readings give them."""
    import random
    sys_path_benchmarks()
    import mixes
    rng = random.Random(f"{strategy}/{mix}")
    nodes, workloads = mixes.problem(mix, 60, 420, seed=3)
    with every_limit_tiny():
        if strategy == "BestFit":
            fast, reference = lighthouse.BestFitDistributor(nodes), BestFitReference(nodes)
        else:
            fast = make(strategy, nodes, mixes.RUBRIC, True, 4, "adaptive", "cached")
            reference = Reference(strategy, nodes, mixes.RUBRIC)
        for start in range(0, len(workloads), 140):
            batch = workloads[start:start + 140]
            assert fast.attempt_assign_loads(batch) == reference.assign(batch)
        assert_same_state(fast, reference)
        placed = sorted(reference.assignments())
        steps = [("release", rng.sample(placed, len(placed) // 4)),
                 ("drain", nodes[7]["name"]), ("remove", [nodes[11]["name"]]),
                 ("add", mixes.problem(mix, 6, 0, seed=4, prefix="late")[0]),
                 ("assign", mixes.problem(mix, 0, 120, seed=5, prefix="more")[1])]
        for operation in steps:
            assert run(operation, fast) == run_reference(operation, reference), operation
            assert_same_state(fast, reference)
        check_index(fast)
        probes = mixes.problem(mix, 0, 200, seed=6, prefix="why")[1] + mixes.nowhere(nodes, 40)
        loads = lighthouse.Workload.from_list(probes)
        explained = fast.explain_all(loads)
        lines = fast._nowhere_lines(loads)
        assert any(line is not None for line in lines)
        for load, line in zip(loads, lines):
            if line is not None:
                assert line == str(explained[load.name]), load.name


def kinds_sieves(nodes_class, kinds):
    """The sieves of a class's kept refusals and scratch record that test
    two kinds or more."""
    return [record.sieve for record in [*nodes_class.refusals.values(), nodes_class.scratch]
            if record.sieve and sum(key in kinds for key, _ in record.sieve) > 1]


def run_many_kinds(strategy, seed, load, floors, sparse=None, denials="library",
                   all_kept=False, scan=0):
    """Step a fast distributor and the reference (BestFit's twin) through
    the ``kinds`` mix, checking every decision, the state and the index at
    each step; return how many kept holder lists, counts of holders,
    sieves for two kinds or more, sieves led by a masked column and set
    columns the index held along the way. (Kinds asked together are never
    looked for among their bearers here, as at 1000 nodes and more: see
    ``test_many_kinds_of_device_decide_like_the_reference`` for that; nor
    among the nodes having them all kept in order, unless ``all_kept``,
    where nodes keep their order: see ``FEW_ALL_KEPT``; ``scan``: the
    ``SCAN_LIMIT``, 0 by default: no node tried one by one before the
    columns.)"""
    with mock.patch.object(plans, "TOGETHER", 0), \
            mock.patch.object(plans, "FEW_ALL_KEPT", plans.FEW_ALL_KEPT if all_kept else 0), \
            mock.patch.object(plans, "SCAN_LIMIT", scan):
        return _run_many_kinds(strategy, seed, load, floors, sparse, denials)


def _run_many_kinds(strategy, seed, load, floors, sparse, denials):
    import random
    sys_path_benchmarks()
    import mixes
    rng = random.Random(seed)
    nodes, workloads = mixes.problem("kinds", 160, 900, seed=seed)
    assert any(len([n for n in nodes if kind in n["resources"]]) > plans.FEW
               for kind in mixes.KINDS)
    fast = make(strategy, nodes, mixes.RUBRIC, True, load, "eager", floors, sparse,
                denials=denials)
    reference = reference_of(strategy, nodes, mixes.RUBRIC)
    kept = counted = sieves = masked = sets = 0
    for at in range(0, 900, 150):
        if at == 450:
            placed = sorted(reference.assignments())
            release = ("release", rng.sample(placed, len(placed) // 4))
            assert run(release, fast) == run_reference(release, reference)
        operation = ("assign", workloads[at:at + 150])
        assert run(operation, fast) == run_reference(operation, reference), at
        assert_same_state(fast, reference)
        check_index(fast)
        kept += sum(len(block.holders or ()) for nodes_class in fast._index._classes.values()
                    for block in nodes_class.blocks)
        if strategy in ("Prioritized", "RoundRobin"):
            # (where nodes keep their order, a sieve for two kinds or more
            # is led by a column every node has: the kinds come last)
            for nodes_class in fast._index._classes.values():
                for sieve in kinds_sieves(nodes_class, mixes.KINDS):
                    asked = sum(key in mixes.KINDS for key, _ in sieve)
                    assert sieve[0][0] not in mixes.KINDS, sieve
                    assert all(key in mixes.KINDS for key, _ in sieve[-asked:]), sieve
                    sieves += 1
        counted += sum(len(nodes_class.tallies)
                       for nodes_class in fast._index._classes.values())
        # (where nodes move at every placement, a sieve for kinds is led by
        # the masked column of the one fewest nodes have, once the class
        # has joint columns; never where nodes keep their order)
        for nodes_class in fast._index._classes.values():
            for record in [*nodes_class.refusals.values(), nodes_class.scratch]:
                if record.sieve and type(record.sieve[0][0]) is JointColumn \
                        and record.sieve[0][0][0] == "masked":
                    assert strategy in ("BinPack", "BestFit"), record.sieve
                    assert record.sieve[0][0] in nodes_class.masked.values()
                    masked += 1
            assert not nodes_class.masked or strategy in ("BinPack", "BestFit")
            # (set columns: only where nodes keep their order)
            assert not nodes_class.set_masked or strategy in ("Prioritized", "RoundRobin")
            sets += len(nodes_class.set_masked)
        # (a shape asking for resources only some nodes have keeps no floor)
        assert not [entry for plan in fast._index._plans.values() for entry in plan.entries
                    if entry.holding is not None and entry.floor is not None]
    for operation in [("cordon", nodes[rng.randrange(160)]["name"]),
                      ("drain", nodes[rng.randrange(160)]["name"]),
                      ("remove", [nodes[rng.randrange(160)]["name"]]),
                      ("add", mixes.problem("kinds", 40, 0, seed=seed + 1, prefix="late")[0]),
                      ("assign", mixes.problem("kinds", 0, 200, seed=seed + 2,
                                               prefix="more")[1])]:
        if operation[0] in ("drain", "cordon") and operation[1] not in fast._slots:
            continue
        if operation[0] == "remove" and operation[1][0] not in fast._slots:
            continue
        assert run(operation, fast) == run_reference(operation, reference), operation
        assert_same_state(fast, reference)
        check_index(fast)
    return kept, counted, sieves, masked, sets


@settings(max_examples=24, deadline=None)
@given(strategy=st.sampled_from(["Prioritized", "RoundRobin", "BinPack", "BestFit"]),
       seed=st.integers(0, 10 ** 6), load=st.sampled_from([4, 8, 16]),
       floors=st.sampled_from(sorted(FLOORS)), sparse=SPARSE, all_kept=st.booleans(),
       scan=st.sampled_from([0, 2, 64]), new=st.sampled_from([64, 4]))
def test_many_kinds_on_part_of_the_nodes_decide_like_the_reference(strategy, seed, load, floors,
                                                                   sparse, all_kept, scan, new):
    """Nine kinds of counted resource, each on about 3 nodes in 10 (more
    than :data:`~pylighthouse.index.plans.FEW` of them: searched by column,
    not node by node), asked for one to three at a time: a search looks
    inside a block at the nodes having every kind asked (kept per block
    until a node joins, leaves or moves in it), or, where nodes move at
    every placement (BinPack, BestFit), passes a block where no node has
    every kind asked by the block's count of such nodes. Step by step
    through placements, releases, cordons, a drain, a removal and new
    nodes, every decision is the reference's (BestFit's its twin's) and
    every kept list and count of such nodes is exact. (``sparse``: every
    column of a kind is sparse, or as the library decides; ``all_kept``:
    where nodes keep their order, a shape asking for two kinds or more may
    try the nodes having them all in order instead; ``scan``: where nodes
    keep their order, how many of the nodes having the kinds asked are
    tried one by one before the columns, see ``SCAN_LIMIT``; ``new``: on
    more nodes than that together, a set is first searched as if no set
    were kept, see ``FEW_NEW``.)"""
    with mock.patch.object(plans, "FEW_KEPT", 32), mock.patch.object(plans, "FEW_NEW", new), \
            mock.patch.object(plans, "FEW_SETS", 1024 if new > 4 else 0):
        run_many_kinds(strategy, seed, load, floors, sparse, all_kept=all_kept, scan=scan)


@pytest.mark.parametrize("strategy", ["BinPack", "BestFit"])
def test_blocks_where_no_node_has_the_kinds_asked_are_passed_in_c(strategy):
    """Where nodes move at every placement, a search for two kinds that
    only some nodes have (on more nodes together than are tried one by
    one) meets, among the blocks passing its first column, none whose count
    of nodes having both is zero: the counts are compared with the first
    column, in C (see ``NodeClass.tallies``), not block by block in
    Python. Every decision and state is the reference's (BestFit's its
    twin's), and every count exact."""
    rng = random.Random(f"tallies-{strategy}")
    kinds = [f"k{at}" for at in range(5)]
    nodes = [{"name": f"n{at:03d}", "resources": {
        "cpu": rng.choice([4, 8, 16]), "mem": rng.choice([8, 16, 32]),
        **{kind: rng.randint(1, 4) for kind in kinds if rng.random() < 0.6}}}
        for at in range(240)]
    workloads = [{"name": f"w{at}", "requirements": {
        "cpu": rng.choice([0.5, 1, 2]), "mem": rng.choice([1, 2, 4]),
        **dict.fromkeys(rng.sample(kinds, 2), 1)}} for at in range(600)]
    fast, reference = make_with_twin(strategy, nodes, {"cpu": 1, "mem": 0.25}, 8)
    met = []  # (per search comparing counts: the count of each block it met)
    real = search._passing

    def watching(*args):
        candidates, bounded = real(*args)
        if len(args) > 8 and args[8] is not None:
            candidates = list(candidates)
            met.append([args[8][at] for at in candidates])
        return iter(candidates), bounded

    with mock.patch.object(search, "_passing", watching):
        for at in range(0, 600, 150):
            batch = workloads[at:at + 150]
            assert fast.attempt_assign_loads(batch) == reference.assign(batch)
            assert_same_state(fast, reference)
            check_index(fast)
    assert any(met)  # (searches compared counts, and met blocks passing them)
    assert all(all(counts) for counts in met)


@settings(max_examples=6, deadline=None)
@given(strategy=st.sampled_from(["BinPack", "BestFit"]), seed=st.integers(0, 10 ** 6),
       load=st.sampled_from([4, 16]))
def test_labels_asked_for_get_no_masked_column(strategy, seed, load):
    """Labels that many nodes share (zones, instance types: tags of
    capacity 0, the ``labels`` mix), asked for by half the workloads, and a
    counted device on part of the nodes: where nodes move at every
    placement, a sieve for the device is led by its masked column, but a
    label, asked for none of, gets none (its threshold there would be zero:
    the label's own column passes the same nodes). Step by step, every
    decision and state is the reference's (BestFit's its twin's)."""
    sys_path_benchmarks()
    import mixes
    rng = random.Random(seed)
    nodes, workloads = mixes.problem("labels", 160, 480, seed=seed)
    for node in nodes[::2]:
        node["resources"]["gpu"] = rng.randint(1, 4)
    for spec in workloads[::7]:
        spec["requirements"]["gpu"] = 1
    fast = make(strategy, nodes, mixes.RUBRIC, True, load)
    reference = reference_of(strategy, nodes, mixes.RUBRIC)
    for at in range(0, 480, 120):
        operation = ("assign", workloads[at:at + 120])
        assert run(operation, fast) == run_reference(operation, reference), at
        assert_same_state(fast, reference)
        check_index(fast)
    (nodes_class,) = fast._index._classes.values()
    assert set(nodes_class.masked) == {"gpu"}
    assert set(nodes_class.columns) & set(mixes.ZONES)  # (labels sieved on their own)


def crowded_kinds(seed, count, loads):
    """Nodes bearing most of six kinds of device (a node with room left of
    cpu has often used up a kind), one kind on a few nodes only, and
    workloads each in one of two aversion groups, most asking for two
    kinds: the cases found slow by random mixes."""
    rng = random.Random(seed)
    kinds = [f"k{at}" for at in range(6)]
    nodes = []
    for at in range(count):
        resources = {"cpu": rng.choice([4, 8, 16]), "mem": rng.choice([8, 16, 64])}
        resources.update({kind: rng.randint(1, 6) for kind in kinds if rng.random() < 0.7})
        if at % 9 == 0:
            resources["rare"] = rng.randint(1, 3)
        nodes.append({"name": f"n{at:03d}", "resources": resources})
    workloads = []
    for at in range(loads):
        requirements = {"cpu": rng.choice([0.5, 1, 2]), "mem": rng.choice([1, 2, 4])}
        for kind in rng.sample(kinds, rng.choice([0, 2, 2, 3])):
            requirements[kind] = rng.randint(1, 2)
        if rng.random() < 0.15:
            requirements["rare"] = 1
        spec = {"name": f"w{seed}-{at:04d}", "requirements": requirements,
                "aversion_groups": [f"g{rng.randrange(2)}"]}
        workloads.append(spec)
    return nodes, workloads


@settings(max_examples=30, deadline=None)
@given(strategy=STRATEGIES, seed=st.integers(0, 10 ** 6), load=st.sampled_from([4, 8, 16]),
       grouping=st.sampled_from(sorted(GROUPING)), counted=st.sampled_from([2, None]),
       dense=st.sampled_from([6, None]), masked=st.sampled_from([1, None]), sparse=SPARSE)
def test_crowded_kinds_and_few_groups_decide_like_the_reference(strategy, seed, load, grouping,
                                                                counted, dense, masked, sparse):
    """Kinds of device on most nodes and used up where cpu is left, every
    workload in one of two aversion groups: inside a block, the nodes
    hosting a workload's group are passed by the group column among the
    nodes having every kind asked, and among those of a sparse resource
    too; a set column is brought down to the nodes' own only where the
    block changed since; a class counts at most ``bearers.MAX_COUNTED`` sets
    of kinds (2: most sets go uncounted) and, where nodes move, keeps at
    most ``MAX_DENSE`` dense columns (6: the kinds' columns are sparse once
    the class has its joint columns) and at most ``MAX_MASKED`` masked
    columns (1: the other kinds lead with their own column). Every decision is the reference's,
    through releases, a cordon and new nodes, and the index stays exact."""
    from pylighthouse.index import bearers as index_bearers
    from pylighthouse.index import derived as index_derived
    nodes, workloads = crowded_kinds(seed, 64, 300)
    # (TOGETHER 0: kinds asked together are searched by column, as on large
    # clusters, not tried on the nodes having them all)
    counted = index_bearers.MAX_COUNTED if counted is None else counted
    dense = index_nodes.MAX_DENSE if dense is None else dense
    masked = index_derived.MAX_MASKED if masked is None else masked
    with mock.patch.object(plans, "TOGETHER", 0), \
            mock.patch.object(index_bearers, "MAX_COUNTED", counted), \
            mock.patch.object(index_nodes, "MAX_DENSE", dense), \
            mock.patch.object(index_derived, "MAX_MASKED", masked):
        fast = make(strategy, nodes, {"cpu": 1, "mem": 0.25}, True, load, "eager", "eager",
                    sparse, grouping)
        reference = BestFitReference(nodes) if strategy == "BestFit" \
            else Reference(strategy, nodes, {"cpu": 1, "mem": 0.25})
        rng = random.Random(seed)
        for at in range(0, 300, 100):
            operation = ("assign", workloads[at:at + 100])
            assert run(operation, fast) == run_reference(operation, reference), at
            assert_same_state(fast, reference)
            check_index(fast)
            placed = sorted(reference.assignments())
            release = ("release", rng.sample(placed, len(placed) // 3))
            assert run(release, fast) == run_reference(release, reference)
        late = crowded_kinds(seed + 1, 6, 60)
        for operation in [("cordon", nodes[rng.randrange(64)]["name"]),
                          ("add", [dict(node, name=f"late-{node['name']}") for node in late[0]]),
                          ("assign", late[1])]:
            assert run(operation, fast) == run_reference(operation, reference), operation
            assert_same_state(fast, reference)
            check_index(fast)
        assert all(len(nodes_class.tallies) <= counted
                   for nodes_class in fast._index._classes.values())
        if strategy in ("BinPack", "BestFit") and dense == 6:
            # (the kinds asked came after the joint and masked columns)
            assert any(nodes_class.sparse for nodes_class in fast._index._classes.values())


@columns_past(32)
def test_a_set_column_is_brought_down_again_after_its_block_changed():
    """A search looking inside a block in vain brings the block's values in
    a set column down to the nodes' own; it does so again only after a node
    of the block changed (a placement there leaves the values as they were,
    above the node's own, until the next search that looks in vain)."""
    # (more nodes having a and b than plans.FEW, searched by column; each
    # block has a node with much a and one with much b, none with both)
    nodes = [{"name": f"n{at:02d}", "resources": {"cpu": 8, "mem": 32, "a": 4 - 3 * (at % 2),
                                                  "b": 1 + 3 * (at % 2)}}
             for at in range(40)] + \
        [{"name": f"m{at:02d}", "resources": {"cpu": 8, "mem": 32, "spare": 0}}
         for at in range(40)]
    with mock.patch.object(plans, "TOGETHER", 0):
        _bring_down(make("Prioritized", nodes, {}, True, 4, denials=None))


def _bring_down(fast):
    both = {"cpu": 1, "mem": 1, "a": 2, "b": 2}

    def grow():
        # (a node gains room: what fits nowhere is searched for again)
        assert fast.attempt_assign_loads(
            [{"name": "d", "requirements": {"cpu": 1, "spare": 0}}]) == {"d": "m00"}
        fast.release_loads(["d"])

    assert fast.attempt_assign_loads([{"name": "x", "requirements": both}]) == {"x": None}
    (nodes_class,) = fast._index._classes.values()
    (key,) = nodes_class.set_masked.values()  # (made by the search that found nothing)

    def first_block():
        block = nodes_class.blocks[0]
        return [(value, column_value(slot, key))
                for slot, value in zip(block.slots, block.cols[key])]

    grow()
    assert fast.attempt_assign_loads([{"name": "y", "requirements": both}]) == {"y": None}
    assert all(value == own for value, own in first_block())
    # a placement on n00 leaves its value above its own
    assert fast.attempt_assign_loads(
        [{"name": "w", "requirements": {"cpu": 4, "mem": 1}}]) == {"w": "n00"}
    assert first_block()[0][0] > first_block()[0][1]
    # (other quantities: the blocks' record of refusing ``both`` stands)
    grow()
    assert fast.attempt_assign_loads([{"name": "z", "requirements": dict(both, a=3)}]) == \
        {"z": None}
    assert all(value == own for value, own in first_block())


@pytest.mark.parametrize("strategy", ["Prioritized", "BinPack", "BestFit"])
@columns_past(32)
def test_sparse_columns_take_their_paths(strategy):
    """With every column of a kind sparse, searches of the ``kinds`` mix are
    led by sparse columns and check sparse ones inside blocks, so the tests
    drawing ``sparse`` do test those paths; with the library's setting, a
    kind on one node in twenty gets a sparse column (and its masked column,
    where nodes move), the resources every node has dense ones, and every
    decision is the reference's."""
    from pylighthouse.index import search
    with mock.patch.object(search, "_sparse_positions",
                           wraps=search._sparse_positions) as leading, \
            mock.patch.object(search, "_meets", wraps=search._meets) as meeting:
        run_many_kinds(strategy, 0, 4, "cached", sparse=1)
    assert leading.call_count and meeting.call_count
    nodes = [{"name": f"n{at:04d}",
              "resources": {"cpu": 8, "mem": 32, **({"dev": 2} if at % 20 == 0 else {})}}
             for at in range(800)]
    rubric = {"cpu": 1, "mem": 0.25}
    fast = make(strategy, nodes, rubric, True, 16, "eager", "library")
    reference = BestFitReference(nodes) if strategy == "BestFit" \
        else Reference(strategy, nodes, rubric)
    batch = [{"name": f"w{at:03d}", "requirements": {"cpu": 1 + at % 3, "mem": 4,
                                                     **({"dev": 1} if at % 2 else {})}}
             for at in range(120)]
    assert fast.attempt_assign_loads(batch) == reference.assign(batch)
    assert_same_state(fast, reference)
    nodes_class = fast._index._classes[frozenset()]
    assert "dev" in nodes_class.sparse and "cpu" in nodes_class.columns
    if strategy != "Prioritized":
        assert nodes_class.mask("dev") in nodes_class.sparse
    check_index(fast)


@pytest.mark.parametrize("strategy", ["Prioritized", "RoundRobin", "BinPack", "BestFit"])
@columns_past(32)
def test_many_kinds_take_the_paths_for_kinds(strategy):
    """On fixed problems of the ``kinds`` mix, the searches above do look
    inside blocks by the nodes' kinds and sieve for two kinds or more
    (Prioritized, RoundRobin), or count the nodes having two kinds or more
    (BinPack, BestFit), and make set columns for kinds found nowhere
    (Prioritized, RoundRobin), so the test above checks those paths,
    whatever seeds it draws."""
    kept = counted = sieves = masked = sets = 0
    for seed in (0, 1):
        # (every kind's column made at once: see the test of ``DENIALS``)
        found = run_many_kinds(strategy, seed, 4, "cached", denials=None)
        kept, counted = kept + found[0], counted + found[1]
        sieves, masked, sets = sieves + found[2], masked + found[3], sets + found[4]
    if strategy in ("Prioritized", "RoundRobin"):
        assert kept and sieves and sets, (kept, sieves, sets)
    else:
        assert counted and masked, (counted, masked)


@pytest.mark.parametrize("strategy", ["Prioritized", "RoundRobin"])
@columns_past(32)
def test_a_node_joining_a_block_is_among_the_nodes_having_a_kind(strategy):
    """The nodes of a block having every kind a workload asks for are kept
    per block: a node that joins the block (here the only one left with
    room) is one of them from then on."""
    nodes = [{"name": f"n{at:02d}", "resources": {"cpu": 1, **({"k": 1} if at < 34 else {})}}
             for at in range(40)]
    fast = make(strategy, nodes, None, True, load=64)
    reference = Reference(strategy, nodes, None)
    first = [{"name": f"w{at:02d}", "requirements": {"cpu": 1, "k": 1}} for at in range(34)]
    assert fast.attempt_assign_loads(first) == reference.assign(first)
    assert any(block.holders for block in fast._index._classes[frozenset()].blocks)
    late = ("add", [{"name": "late", "resources": {"cpu": 1, "k": 1}}])
    assert run(late, fast) == run_reference(late, reference)
    check_index(fast)
    last = [{"name": "last", "requirements": {"cpu": 1, "k": 1}}]
    assert fast.attempt_assign_loads(last) == reference.assign(last) == {"last": "late"}
    check_index(fast)


@settings(max_examples=30, deadline=None)
@given(strategy=STRATEGIES, seed=st.integers(0, 10 ** 6), load=st.sampled_from([4, 8, 16]),
       mix=st.sampled_from(["decimals", "shapes", "all"]), sparse=SPARSE)
def test_frontiers_stay_true_workload_by_workload(strategy, seed, load, mix, sparse):
    """Blocks remember, for the two resources of the joint columns, which
    pairs of quantities some node has (their frontier), and refuse a
    workload by it without looking inside. After every single workload,
    release and cordon, each kept frontier is the one that would be made
    now, and every decision is the reference's."""
    import random
    sys_path_benchmarks()
    import mixes
    rng = random.Random(seed)
    nodes, workloads = mixes.problem(mix, 48, 300, seed=seed)
    fast = make(strategy, nodes, mixes.RUBRIC, True, load, "eager", sparse=sparse)
    reference = Reference(strategy, nodes, mixes.RUBRIC)
    for at, workload in enumerate(workloads):
        operation = ("assign", [workload])
        if at % 25 == 24:
            placed = sorted(reference.assignments())
            operation = ("release", rng.sample(placed, min(len(placed), 8)))
        elif at % 60 == 59:
            operation = ("cordon", nodes[rng.randrange(len(nodes))]["name"])
        assert run(operation, fast) == run_reference(operation, reference), (at, operation)
        check_index(fast)
    assert_same_state(fast, reference)


FLOATS = st.one_of(st.sampled_from([float("-inf"), -1.0, 0.0, 0.5, 1.0, 2.0, 3.0]),
                   st.floats(-10, 10))


@settings(max_examples=300, deadline=None)
@given(pairs=st.lists(st.tuples(FLOATS, FLOATS), max_size=40),
       asks=st.lists(st.tuples(st.floats(-1.7976931348623157e308, 12), st.floats(-12, 12)),
                     min_size=1, max_size=20))
def test_a_frontier_answers_as_every_node_asked_in_turn(pairs, asks):
    """A block's frontier says some node has at least x of the first joint
    resource and y of the second exactly when one does (minus infinity:
    lacks the resource or is cordoned, never enough)."""
    from bisect import bisect_left
    from pylighthouse.index.blocks import Block, NodeClass
    nodes = NodeClass(frozenset(), 8)
    nodes.joint = (("joint", (("cpu", 1.0), ("mem", 1.0))),)
    block = Block([], [], {"cpu": [x for x, _ in pairs], "mem": [y for _, y in pairs]})
    xs, ys = nodes.frontier(block)
    assert xs == sorted(xs) and ys == sorted(ys, reverse=True) and len(xs) == len(ys)
    for x, y in asks:
        at = bisect_left(xs, x)
        says = at < len(xs) and ys[at] >= y
        assert says == any(a >= x and b >= y for a, b in pairs), (x, y)


def sys_path_benchmarks():
    import os
    import sys
    here = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "benchmarks")
    if here not in sys.path:
        sys.path.insert(0, here)


# ------------------------------------------------------- resumed searches


def make_with_twin(strategy, nodes, rubric, load, denials="library"):
    """The indexed distributor and the reference (BestFit's twin for BestFit)."""
    if strategy != "BestFit":
        return make(strategy, nodes, rubric, True, load, denials=denials), \
            Reference(strategy, nodes, rubric)
    from reference_bestfit import BestFitReference
    with settings_of(True, load, denials=denials):
        return lighthouse.BestFitDistributor(nodes, rubric), BestFitReference(nodes, rubric)


def placed_watching_resumes(fast, reference, first, then):
    """``first`` placed by both, then each operation ``then`` gives for the
    reference's placements: every answer and state the reference's. The
    calls of :meth:`NodeIndex.first_fit_after` (the resumed searches)."""
    with mock.patch.object(NodeIndex, "first_fit_after",
                           autospec=True, side_effect=NodeIndex.first_fit_after) as resumed:
        assert fast.attempt_assign_loads(first) == reference.assign(first)
        assert_same_state(fast, reference)
        for operation in then(sorted(reference.assignments())):
            assert run(operation, fast) == run_reference(operation, reference), operation
            assert_same_state(fast, reference)
    return resumed.call_args_list


@settings(max_examples=80, deadline=None)
@given(strategy=st.sampled_from(["BinPack", "BestFit"]), seed=st.integers(0, 10 ** 6),
       load=st.sampled_from([1, 2, 3, 8]))
def test_runs_of_equal_workloads_resume_and_decide_like_the_reference(strategy, seed, load):
    """Equal workloads, interleaved, some with aversion groups or an immunity:
    a search resumed after an earlier one of the pass (asking first the
    nodes changed since that moved before its answer) chooses what the
    reference chooses, in one call, after a release and in a second call."""
    import random
    rng = random.Random(seed)
    nodes = [{"name": f"n{i:02d}",
              "resources": dict({"cpu": rng.choice([2, 4, 6, 8]), "mem": rng.choice([2, 4, 8])},
                                **({"spiders": -1} if rng.random() < 0.1 else {}))}
             for i in range(rng.randrange(4, 30))]
    flavours = [{"cpu": rng.choice([1, 2, 3]), "mem": rng.choice([1, 2, 4])} for _ in range(3)]

    def batch(prefix, count):
        loads = []
        for i in range(count):
            spec = {"name": f"{prefix}{i:03d}", "requirements": dict(rng.choice(flavours))}
            if rng.random() < 0.1:
                spec["aversion_groups"] = [rng.choice("ab")]
            if rng.random() < 0.1:
                spec["immunities"] = ["spiders"]
            loads.append(spec)
        return loads

    rubric = {"cpu": 1, "mem": 0.5}
    fast, reference = make_with_twin(strategy, nodes, rubric, load)
    # (Two equal workloads that fit every node start it: the second resumes.)
    first = [{"name": f"start{i}", "requirements": {"cpu": 1, "mem": 1}} for i in range(2)] \
        + batch("w", rng.randrange(10, 120))
    resumed = placed_watching_resumes(fast, reference, first, lambda placed: [
        ("release", rng.sample(placed, len(placed) // 2)), ("assign", batch("v", 60))])
    assert resumed
    check_index(fast)


@settings(max_examples=80, deadline=None)
@given(strategy=st.sampled_from(["BinPack", "BestFit"]), seed=st.integers(0, 10 ** 6),
       load=st.sampled_from([1, 2, 3, 8]))
def test_grouped_workloads_resume_and_decide_like_the_reference(strategy, seed, load):
    """Equal workloads, most of them in one or two of a few aversion
    groups: each search finds the first node where the workload fits
    (resumed when an equal one came before) and, when that node hosts one
    of its groups, looks on from there, skipping such nodes. Every decision
    is the reference's, in one call, after a release and in a second call;
    some grouped workloads' searches were resumed, and every looking on
    avoided the workload's own groups."""
    import random
    rng = random.Random(seed)
    nodes = [{"name": f"n{i:02d}",
              "resources": {"cpu": rng.choice([2, 4, 8]), "mem": rng.choice([2, 4, 8])}}
             for i in range(rng.randrange(3, 25))]
    flavours = [{"cpu": rng.choice([0, 1, 2]), "mem": rng.choice([1, 2])} for _ in range(2)]

    def batch(prefix, count):
        return [{"name": f"{prefix}{i:03d}", "requirements": dict(rng.choice(flavours)),
                 "aversion_groups": rng.choice([[], ["a"], ["b"], ["c"], ["a", "b"]])}
                for i in range(count)]

    rubric = {"cpu": 1, "mem": 0.5}
    fast, reference = make_with_twin(strategy, nodes, rubric, load)
    # (A call of two equal workloads of one group that fit every node starts
    # it: the node the second fits first hosts the group.)
    start = [{"name": f"start{i}", "requirements": {"cpu": 0, "mem": 1},
              "aversion_groups": ["a"]} for i in range(2)]
    first = batch("w", rng.randrange(10, 90))
    with mock.patch.object(NodeIndex, "first_fit_after",
                           autospec=True, side_effect=NodeIndex.first_fit_after) as resumed, \
            mock.patch.object(NodeIndex, "first_fit_from",
                              autospec=True, side_effect=NodeIndex.first_fit_from) as looked_on:
        assert fast.attempt_assign_loads(start) == reference.assign(start)
        assert fast.attempt_assign_loads(first) == reference.assign(first)
        assert_same_state(fast, reference)
        placed = sorted(reference.assignments())
        for operation in [("release", rng.sample(placed, len(placed) // 2)),
                          ("assign", batch("v", 40))]:
            assert run(operation, fast) == run_reference(operation, reference), operation
            assert_same_state(fast, reference)
    check_index(fast)
    # (a resumed search for a grouped workload: it was not resumed before)
    assert any(call.args[1].aversion_groups for call in resumed.call_args_list)
    assert looked_on.called
    assert all(call.args[3] == call.args[1].aversion_groups
               for call in looked_on.call_args_list)


def test_a_grouped_workload_looks_on_past_the_first_node_hosting_its_group():
    """The first node where it fits hosts its group: it goes to the next one
    that fits and does not; when none does, to the first after all."""
    nodes = [{"name": "n0", "resources": {"cpu": 2}}, {"name": "n1", "resources": {"cpu": 2}}]
    loads = [{"name": name, "requirements": {"cpu": 1}, "aversion_groups": ["g"]}
             for name in "abc"]
    for strategy in ("BinPack", "BestFit"):
        fast, reference = make_with_twin(strategy, nodes, {"cpu": 1}, 1)
        # a takes n0; n0 then comes first (least room) but hosts g: b goes
        # to n1; both host g: c goes to the first where it fits.
        assert fast.attempt_assign_loads(loads) == {"a": "n0", "b": "n1", "c": "n0"}
        assert reference.assign(loads) == {"a": "n0", "b": "n1", "c": "n0"}
        assert_same_state(fast, reference)
        check_index(fast)


def test_a_resumed_search_takes_the_node_it_resumes_at_without_a_search():
    """a takes n0; b fits n0 first but avoids it (group g) and takes n1;
    c, equal to both without groups, resumes at n0, which did not change
    and still fits: it is taken after one fit check, with no search of
    the blocks."""
    nodes = [{"name": f"n{i}", "resources": {"cpu": 2}} for i in range(3)]
    loads = [{"name": "a", "requirements": {"cpu": 1}, "aversion_groups": ["g"]},
             {"name": "b", "requirements": {"cpu": 1}, "aversion_groups": ["g"]},
             {"name": "c", "requirements": {"cpu": 1}}]
    fast, reference = make_with_twin("BinPack", nodes, {"cpu": 1}, 1)
    with mock.patch.object(NodeIndex, "_search", autospec=True,
                           side_effect=NodeIndex._search) as searched:
        placed = fast.attempt_assign_loads(loads)
    assert placed == reference.assign(loads) == {"a": "n0", "b": "n1", "c": "n0"}
    assert_same_state(fast, reference)
    check_index(fast)
    # (one search for a, one for b's looking on past n0, none for c)
    assert [call.args[1].name for call in searched.call_args_list] == ["a", "b"]


@pytest.mark.parametrize("strategy", ["BinPack", "BestFit"])
def test_replicas_that_take_no_room_still_avoid_the_nodes_of_their_group(strategy):
    """Replicas asking for nothing leave every node where it was in the
    order: the node the last one took still sits where the next one
    resumes, and is passed over for hosting the group."""
    nodes = [{"name": f"n{i}", "resources": {"cpu": 2}} for i in range(3)]
    loads = [{"name": f"r{i}", "requirements": {"cpu": 0}, "aversion_groups": ["g"]}
             for i in range(5)]
    fast, reference = make_with_twin(strategy, nodes, {"cpu": 1}, 1)
    placed = fast.attempt_assign_loads(loads)
    assert placed == reference.assign(loads)
    assert set(placed.values()) == {"n0", "n1", "n2"}
    assert_same_state(fast, reference)
    check_index(fast)


@pytest.mark.parametrize("strategy", ["BinPack", "BestFit"])
def test_replicas_of_a_group_spread_each_from_where_the_last_went(strategy):
    """Replicas of two deployments, each deployment one aversion group, all
    fitting every node: they spread one to a node, as the reference
    places them, and past its first, each replica's search goes on from the
    node the one before took (not from the first node it fits, stepping
    over all the nodes its group holds)."""
    nodes = [{"name": f"n{i:02d}", "resources": {"cpu": 4, "mem": 8}} for i in range(40)]
    loads = [{"name": f"{app}-{i:02d}", "requirements": {"cpu": 1, "mem": 2},
              "aversion_groups": [app]} for i in range(15) for app in ("api", "web")]
    fast, reference = make_with_twin(strategy, nodes, {"cpu": 1, "mem": 0.5}, 4)
    with mock.patch.object(NodeIndex, "first_fit_after",
                           autospec=True, side_effect=NodeIndex.first_fit_after) as resumed, \
            mock.patch.object(NodeIndex, "first_fit_from",
                              autospec=True, side_effect=NodeIndex.first_fit_from) as looked_on:
        placed = fast.attempt_assign_loads(loads)
    assert placed == reference.assign(loads)
    assert_same_state(fast, reference)
    check_index(fast)
    for app in ("api", "web"):
        hosts = [node for name, node in placed.items() if name.startswith(app)]
        assert len(set(hosts)) == 15
    # Each deployment looks on afresh once (its second replica) a placement
    # of the call (BestFit may place it a second time, in another order);
    # later replicas go on from where the one before went.
    assert looked_on.call_count <= 2 * (1 if strategy == "BinPack" else 2)
    assert sum(1 for call in resumed.call_args_list if call.args[4:]) >= 2 * 15 - 4


def test_an_index_built_again_keeps_the_columns_of_the_one_it_replaces():
    """BestFit sets its index aside to take back a call's placement of more
    workloads than nodes and builds it again: with the columns the old one
    had, and its joint columns over the same resources (not chosen afresh
    by whichever workload comes next, which made searches slower)."""
    sys_path_benchmarks()
    import packing_quality
    nodes, loads = packing_quality.homogeneous(60, 400, 4, True)
    with settings_of(True, 8):
        fast = lighthouse.BestFitDistributor(nodes)
    # Memory and disk first: the joint columns are made over those two.
    assert fast.attempt_assign_loads(
        [{"name": "first", "requirements": {"mem": 4, "disk": 200}}]) == {"first": "node-00000"}

    def columns():
        return {keys: (sorted(map(str, nodes.columns)),
                       [name for name, _ in nodes.joint[0][1]] if nodes.joint else None)
                for keys, nodes in fast._index._classes.items()}

    before = columns()
    assert before[frozenset()][1] == ["disk", "mem"]
    policy = fast._index._joint
    with mock.patch.object(lighthouse.BestFitDistributor, "_indexed_again", autospec=True,
                           side_effect=lighthouse.BestFitDistributor._indexed_again) as built:
        fast.attempt_assign_loads(loads)
    assert built.called
    assert fast._index._joint == policy != plans.joint_policy()
    after = columns()
    assert after.keys() == before.keys()
    for keys, (names, joint) in before.items():
        assert after[keys][1] == joint
        assert set(names) <= set(after[keys][0])
    check_index(fast)


# ------------------------------------------------------- joint columns


def joint_of(distributor):
    """Per class, the resources of its joint columns (``None``: it has none)."""
    return {keys: [name for name, _ in nodes.joint[0][1]] if nodes.joint else None
            for keys, nodes in distributor._index._classes.items()}


@pytest.mark.parametrize("mix, made", [("decimals", ["cpu", "mem"]), ("types", None)])
def test_joint_columns_are_made_where_searches_meet_many_refusing_blocks(mix, made):
    """As the library does: with Prioritized on the decimals mix (room split
    between nodes, each workload its own quantities) searches look inside
    many blocks that refuse once the cluster fills, so the class tries its
    joint columns over cpu and memory (the resources least left) and keeps
    them, since they cut those looks; on the types mix few blocks refuse
    and none are made. Decisions are the plain scan's either way."""
    sys_path_benchmarks()
    import mixes
    nodes, workloads = mixes.problem(mix, 400, 4000)
    fast = make("Prioritized", nodes, mixes.RUBRIC, True, 64, "adaptive", "library")
    plain = make("Prioritized", nodes, mixes.RUBRIC, False)
    assert fast.attempt_assign_loads(workloads) == plain.attempt_assign_loads(workloads)
    assert joint_of(fast) == {frozenset(): made}
    nodes_class = fast._index._classes[frozenset()]
    # Kept columns are never reviewed again; without them, reviews go on.
    assert (nodes_class.countdown < 0) == (made is not None)
    check_index(fast)


def placed_with_reviews(strategy, mix, node_count, workload_count):
    """Place a problem of the benchmark matrix's ``mix`` with the library's
    index, checking every decision against the plain scan, and read each
    joint-column review's counts as it is made: the distributor, and per
    review after a window, the refusing blocks per search and per search
    or change, whichever were more (the rate the rule weighs)."""
    sys_path_benchmarks()
    import mixes
    nodes, workloads = mixes.problem(mix, node_count, workload_count)
    per_search, counted = [], []
    review = index_nodes.review_joint

    def reviewed(nodes_class, *args):
        if nodes_class.period:
            per_search.append(nodes_class.wasted / nodes_class.period)
            counted.append(nodes_class.wasted / max(nodes_class.changes,
                                                    nodes_class.period))
        return review(nodes_class, *args)

    fast = make(strategy, nodes, mixes.RUBRIC, True, None, "adaptive", "library")
    plain = make(strategy, nodes, mixes.RUBRIC, False)
    with mock.patch.object(index_nodes, "review_joint", reviewed):
        assert fast.attempt_assign_loads(workloads) == plain.attempt_assign_loads(workloads)
    return fast, per_search, counted


@pytest.mark.parametrize("mix, strategy, least", [("all", "Prioritized", 0.5),
                                                  ("types", "BinPack", 0.1)])
def test_a_short_run_of_refusing_blocks_makes_no_joint_columns(mix, strategy, least):
    """As the library does: on these mixes the searches of a window meet
    up to one to three refusing blocks a search for a while as the cluster
    fills (at least ``least`` and under one for each search or change to
    the class's nodes, whichever were more), then fewer. Joint columns
    made then would be kept, and kept up to date at every placement, to
    the end of the run, costing more than the looks they save: no class
    makes them. Decisions are the plain scan's."""
    fast, _, rates = placed_with_reviews(strategy, mix, 400, 4000)
    assert least <= max(rates) < 1.0 < plans.JOINT_WASTE
    assert set(joint_of(fast).values()) == {None}
    check_index(fast)


def test_refusing_blocks_are_weighed_against_the_changes_that_keep_joint_columns():
    """As the library does: with BinPack on the types mix (workloads in a
    few sizes) at 1000 nodes, most placements resume an earlier search, so
    the searches are a few of the placements. Late windows meet more than
    ``JOINT_WASTE`` refusing blocks a search, but fewer than that for each
    change to the class's nodes (more than the searches), each of which
    would pay to keep joint columns up to date: none are made. Decisions
    are the plain scan's."""
    fast, per_search, counted = placed_with_reviews("BinPack", "types", 1000, 10000)
    assert max(per_search) >= plans.JOINT_WASTE
    assert max(counted) < plans.JOINT_WASTE
    assert set(joint_of(fast).values()) == {None}
    check_index(fast)


def test_joint_columns_that_do_not_cut_refusing_blocks_are_dropped_and_tried_later():
    """Made on trial after a window of searches that met refusing blocks,
    dropped when the next window does not meet ``JOINT_GAIN`` fewer a
    search (infinite here: never), the plans made again without them, and
    tried again only after a wait four times as long each time. Decisions
    stay the reference's throughout."""
    nodes = [{"name": f"n{i}", "resources": {"cpu": 4, "mem": 4}} for i in range(12)]
    workloads = [{"name": f"w{i}", "requirements": {"cpu": 1, "mem": 1}} for i in range(40)]
    window = 2
    with mock.patch.multiple(plans, JOINT_WINDOW=window, JOINT_WASTE=0.0, JOINT_GAIN=INF,
                             JOINT_SIZE=0):
        fast = make("Prioritized", nodes, {}, True, 2, "adaptive")
    reference = Reference("Prioritized", nodes, {})
    nodes_class = fast._index._classes[frozenset()]
    seen = []
    for workload in workloads:
        layout = fast._index._layout
        assert fast.attempt_assign_loads([workload]) == reference.assign([workload])
        seen.append((joint_of(fast)[frozenset()] is not None,
                     fast._index._layout != layout, nodes_class.patience))
        check_index(fast)
    assert_same_state(fast, reference)
    # (JOINT_WASTE 0: made at the first search.) Dropped at the end of the
    # trial window, made again after a wait of 4 windows, dropped after
    # one, then a wait of 16 windows: longer than the rest of the run.
    had = [joint for joint, _, _ in seen]
    assert had == [at in (0, 1, 10, 11) for at in range(len(workloads))]
    assert [at for at, (_, changed, _) in enumerate(seen) if changed] == [0, 2, 10, 12]
    assert seen[-1][2] == 16


def test_a_search_that_wraps_around_after_the_joint_columns_were_dropped():
    """Regression: RoundRobin searches from its start to the last node, then
    from the first node on. The class dropped its joint columns at the end
    of the first part; the second part went on with the plan that still
    sieved on them (a KeyError) instead of the plan made again."""
    nodes = [{"name": "n0", "resources": {"cpu": 4, "mem": 4}},
             {"name": "n1", "resources": {"cpu": 1, "mem": 1}}]
    with settings_of(True, 2, "churn"):
        fast = lighthouse.RoundRobinDistributor(nodes)
    reference = Reference("RoundRobin", nodes, {})
    for name, size in (("w1", 1), ("w2", 2)):  # w2: not on n1, where the search starts
        workload = [{"name": name, "requirements": {"cpu": size, "mem": size}}]
        assert fast.attempt_assign_loads(workload) == reference.assign(workload) == {name: "n0"}
    assert joint_of(fast) == {frozenset(): None}
    check_index(fast)


QUANTITY = st.decimals(min_value=Decimal("0.01"), max_value=Decimal("5000"), places=2)
SPARE = st.decimals(min_value=Decimal("0"), max_value=Decimal("5000"), places=2)


@settings(max_examples=150, deadline=None)
@given(cpu=QUANTITY, mem=QUANTITY, more_cpu=SPARE, more_mem=SPARE,
       sizes=st.lists(st.sampled_from([(1, 4), (8, 2), (64, 256), (2, 512)]),
                      min_size=1, max_size=4))
def test_a_sieve_checks_three_joint_columns_that_every_fitting_node_passes(
        cpu, mem, more_cpu, more_mem, sizes):
    """The joint column nearest the workload's ratio and the two next to it
    (one at either end of the ratios): a node with room for the workload
    reads at least the workload's threshold in each."""
    nodes = [{"name": f"n{at}", "resources": {"cpu": c, "mem": m}}
             for at, (c, m) in enumerate(sizes)]
    nodes.append({"name": "x", "resources": {"cpu": cpu + more_cpu, "mem": mem + more_mem}})
    with settings_of(True, 2, "eager"):
        fast = lighthouse.PrioritizedDistributor(nodes)
    fast.attempt_assign_loads([{"name": "probe", "requirements": {"cpu": 10 ** 6, "mem": 1}}])
    nodes_class = fast._index._classes[frozenset()]
    assert nodes_class.joint is not None
    requirements = {"cpu": cpu, "mem": mem}
    entry = plans.make_plan(fast._index._classes, requirements, frozenset(), 0).entries[0]
    sieve = entry.sieve({key: float(value) for key, value in requirements.items()})
    joints = [key for key, _ in sieve if key in nodes_class.joint]
    assert len(joints) == len(set(joints)) == (2 if joints[0] in (nodes_class.joint[0],
                                                                  nodes_class.joint[-1]) else 3)
    assert sieve[0][0] == joints[0]  # (it leads: the class has no partial resource)
    slot = next(slot for slot in nodes_class if slot.node.name == "x")
    for key, threshold in sieve:
        assert column_value(slot, key) >= threshold, key


@settings(max_examples=150, deadline=None)
@given(cpu=QUANTITY, mem=QUANTITY, gpu=st.integers(1, 4), more_cpu=SPARE, more_mem=SPARE,
       more_gpu=st.integers(0, 3), strategy=st.sampled_from(["BinPack", "BestFit"]),
       sizes=st.lists(st.tuples(st.sampled_from([(1, 4), (8, 2), (64, 256), (2, 512)]),
                                st.sampled_from([None, 0, 1, 8])),
                      min_size=1, max_size=8))
@columns_past(32)
def test_a_masked_column_leads_and_every_fitting_node_passes_it(
        cpu, mem, gpu, more_cpu, more_mem, more_gpu, strategy, sizes):
    """Where nodes move at every placement, a workload asking for a
    resource only some nodes of a class with joint columns have (more than
    :data:`~pylighthouse.index.plans.FEW` of them) is sieved first on that
    resource's masked column: a node with room for the workload reads at
    least its threshold there (and in every other column of the sieve), a
    node lacking the resource reads minus infinity, and one with none of it
    left at most zero."""
    nodes = [{"name": f"n{at}", "resources": {"cpu": c, "mem": m,
                                              **({} if g is None else {"gpu": g})}}
             for at, ((c, m), g) in enumerate(sizes)]
    nodes += [{"name": f"g{at}", "resources": {"cpu": 1, "mem": 1, "gpu": 1}}
              for at in range(plans.FEW + 1)]
    nodes.append({"name": "x", "resources": {"cpu": cpu + more_cpu, "mem": mem + more_mem,
                                             "gpu": gpu + more_gpu}})
    nodes.append({"name": "bare", "resources": {"cpu": 1, "mem": 1}})
    fast = make(strategy, nodes, {"cpu": 1, "mem": 1}, True, 2, "eager", denials=None)
    fast.attempt_assign_loads([{"name": "probe", "requirements": {"cpu": 10 ** 6, "mem": 1}}])
    nodes_class = fast._index._classes[frozenset()]
    assert nodes_class.joint is not None
    requirements = {"cpu": cpu, "mem": mem, "gpu": gpu}
    entry = plans.make_plan(fast._index._classes, requirements, frozenset(), 0,
                            True).entries[0]
    sieve = entry.sieve({key: float(value) for key, value in requirements.items()})
    lead = sieve[0][0]
    assert lead is nodes_class.mask("gpu") and lead[0] == "masked"
    assert [name for name, _ in lead[1]] == ["gpu", "cpu", "mem"]
    by_name = {slot.node.name: slot for slot in nodes_class}
    for key, threshold in sieve:
        assert column_value(by_name["x"], key) >= threshold, key
    assert column_value(by_name["bare"], lead) == NEG
    emptied = by_name["g0"]
    fast.attempt_assign_loads([{"name": "w", "requirements": {"gpu": 1}}])
    assert emptied.remaining["gpu"] == 0 or column_value(emptied, lead) > 0
    assert all(column_value(slot, lead) <= 0.0 for slot in nodes_class
               if "gpu" in slot.node.resources and slot.remaining["gpu"] <= 0)
    # (where nodes keep their order, no masked column)
    assert not plans.make_plan(fast._index._classes, requirements, frozenset(), 0,
                               False).entries[0].sieve(
        {key: float(value) for key, value in requirements.items()})[0][0][0] == "masked"
    check_index(fast)


def test_joint_columns_are_keyed_by_their_own_objects():
    """A class's joint columns are keys of their own (looked up by
    identity, never equal to another key however made), and a node reads
    in one the least of its two scaled resources."""
    with settings_of(True, 2, "eager"):
        fast = lighthouse.PrioritizedDistributor(
            [{"name": f"n{at}", "resources": {"cpu": 4, "mem": 16}} for at in range(6)])
    fast.attempt_assign_loads([{"name": "probe", "requirements": {"cpu": 10 ** 6, "mem": 1}}])
    nodes = fast._index._classes[frozenset()]
    assert nodes.joint is not None and all(type(key) is JointColumn for key in nodes.joint)
    key = nodes.joint[0]
    twin = JointColumn(tuple(key))
    assert key == key and twin != key and tuple(twin) == tuple(key)
    assert key in nodes.bounds and twin not in nodes.bounds
    (first, scale), (second, other) = key[1]
    slot = next(iter(nodes))
    assert column_value(slot, key) == min(4.0 * scale, 16.0 * other)


@pytest.mark.parametrize("strategy", ["Prioritized", "RoundRobin", "BinPack"])
def test_a_class_found_closed_opens_when_a_workload_offsets_its_ward(strategy):
    """A class whose every node shows a ward takes no workload, call after
    call (it is known closed); once a workload offsets the ward on one node
    (a negative requirement), that node takes workloads of every shape
    again, as the reference decides."""
    nodes = [{"name": f"g{i}", "resources": {"cpu": 8, "mark": -1}} for i in range(6)] + \
        [{"name": "c0", "resources": {"cpu": 1}}]
    steps = [
        ("assign", [{"name": "a", "requirements": {"cpu": 2}}]),  # the class is closed
        ("assign", [{"name": "b", "requirements": {"cpu": 2}}]),  # and still is
        ("assign", [{"name": "off", "requirements": {"cpu": 1, "mark": -1}}]),
        ("assign", [{"name": "c", "requirements": {"cpu": 2}},
                    {"name": "d", "requirements": {"cpu": 2}}]),
    ]
    rubric = {"cpu": 1} if strategy == "BinPack" else {}
    fast = make(strategy, nodes, rubric, True, DEFAULT_LOAD, "adaptive")
    reference = Reference(strategy, nodes, rubric)
    answers = []
    for operation in steps:
        answers.append(run(operation, fast))
        assert answers[-1] == run_reference(operation, reference), operation
        check_index(fast)
    assert answers[0] == {"a": None} and answers[1] == {"b": None}
    assert answers[3]["c"] is not None and answers[3]["c"] == answers[2]["off"]


def test_a_workload_that_gives_a_node_room_ends_the_resumed_searches_of_its_pass():
    """Within one call, an equal workload resumes where the last one found
    its first node; a workload in between that offsets a ward of a node
    before that one (a negative requirement) lets the node take it, so the
    next equal one searches from the first node again."""
    rubric = {"cpu": 1, "mem": -0.5}
    nodes = SHAPE_NODES + [{"name": f"e{i}", "resources": {"cpu": 4, "mem": 4}}
                           for i in range(4)]
    batch = [{"name": "w0", "requirements": {"cpu": 1}},
             {"name": "w1", "requirements": {"cpu": 1}},
             {"name": "w2", "requirements": {"cpu": 1, "flies": -1}},
             {"name": "w3", "requirements": {"cpu": 1}}]
    for load in (1, 48):
        fast = make("BinPack", nodes, rubric, True, load)
        expected = Reference("BinPack", nodes, rubric).assign(batch)
        assert expected == {"w0": "d", "w1": "a", "w2": "b", "w3": "b"}
        assert fast.attempt_assign_loads(batch) == expected
        check_index(fast)


@settings(max_examples=60, deadline=None)
@given(strategy=st.sampled_from(["BinPack", "BestFit"]), seed=st.integers(0, 10 ** 6),
       load=st.sampled_from([1, 2, 8]))
def test_runs_of_equal_workloads_with_ward_offsets_decide_like_the_reference(strategy, seed,
                                                                             load):
    """Runs of equal workloads, some of which offset a ward on the node they
    take (a negative requirement): resumed searches choose what the
    reference chooses."""
    import random
    rng = random.Random(seed)
    nodes = [{"name": f"n{i:02d}",
              "resources": dict({"cpu": rng.choice([2, 4, 6]), "mem": rng.choice([2, 4])},
                                **({"spiders": -1} if rng.random() < 0.4 else {}))}
             for i in range(rng.randrange(4, 20))]
    flavours = [{"cpu": rng.choice([1, 2]), "mem": rng.choice([1, 2])} for _ in range(2)] \
        + [{"cpu": 1, "spiders": -1}]
    loads = [{"name": f"w{i:03d}", "requirements": dict(rng.choice(flavours))}
             for i in range(rng.randrange(5, 60))]
    fast, reference = make_with_twin(strategy, nodes, {"cpu": 1, "mem": 0.5}, load)
    assert fast.attempt_assign_loads(loads) == reference.assign(loads)
    assert_same_state(fast, reference)
    check_index(fast)


@settings(max_examples=80, deadline=None)
@given(strategy=st.sampled_from(["BinPack", "BestFit"]), seed=st.integers(0, 10 ** 6),
       load=st.sampled_from([1, 2, 8]))
def test_workloads_asking_more_than_earlier_ones_resume_and_decide_like_the_reference(
        strategy, seed, load):
    """Workloads each with its own requirements, many of equal score (the
    kinds they add are not in the rubric), so that many ask at least as
    much as one placed before them and resume after it: some ask for a tag,
    give room (a negative requirement), carry an immunity or a group; some
    nodes bear a ward; a node is cordoned between calls. Every decision is
    the reference's, in one call, after a release and a cordon, and in a
    second call."""
    rng = random.Random(seed)
    kinds = ["gpu", "fpga", "lic"]
    nodes = [{"name": "big", "resources": dict({"cpu": 50, "mem": 50},
                                               **{kind: 50 for kind in kinds})}]
    for i in range(rng.randrange(3, 40)):
        resources = {"cpu": rng.choice([2, 4, 8]), "mem": rng.choice([2, 4, 8]),
                     f"host-{i}": 0}
        for kind in kinds:
            if rng.random() < 0.5:
                resources[kind] = rng.randrange(1, 6)
        if rng.random() < 0.15:
            resources["spiders"] = -1
        nodes.append({"name": f"n{i:02d}", "resources": resources})

    def batch(prefix, count):
        loads = []
        for i in range(count):
            requirements = {"cpu": rng.choice([1, 2]), "mem": rng.choice([1, 1, 2])}
            for kind in rng.sample(kinds, rng.randrange(0, 4)):
                requirements[kind] = rng.randrange(1, 4)
            if rng.random() < 0.05:
                requirements[f"host-{rng.randrange(len(nodes) - 1)}"] = 0
            if rng.random() < 0.05:
                requirements["spiders"] = -1
            spec = {"name": f"{prefix}{i:03d}", "requirements": requirements}
            if rng.random() < 0.1:
                spec["immunities"] = ["spiders"]
            if rng.random() < 0.1:
                spec["aversion_groups"] = [rng.choice("ab")]
            loads.append(spec)
        return loads

    rubric = {"cpu": 1, "mem": 0.5}
    fast, reference = make_with_twin(strategy, nodes, rubric, load)
    # (The second asks for all the first does and more, at the same score:
    # its search resumes after the first's.)
    first = [{"name": "a0", "requirements": {"cpu": 1, "mem": 1}},
             {"name": "a1", "requirements": {"cpu": 1, "mem": 1, "gpu": 1}}] \
        + batch("w", rng.randrange(10, 150))
    resumed = placed_watching_resumes(fast, reference, first, lambda placed: [
        ("release", rng.sample(placed, len(placed) // 2)),
        ("cordon", rng.choice(nodes)["name"]), ("assign", batch("v", 80))])
    assert any(call.kwargs.get("unproven") for call in resumed)
    check_index(fast)


def test_which_earlier_search_a_workload_asking_more_resumes_after():
    """A workload resumes after the latest search of its pass for one it
    asks at least as much as: every name, no less of each, the same
    immunities, nothing below zero (a negative requirement may give room
    to a node that refused the earlier one; placing one makes the pass
    forget its searches)."""
    nodes = [{"name": f"n{i}", "resources": {"cpu": 8, "mem": 8, "disk": 8, "gpu": 8}}
             for i in range(3)]
    # (one score for all: placed in the order of their names)
    loads = [{"name": "a0", "requirements": {"cpu": 1, "mem": 1}},
             {"name": "a1", "requirements": {"cpu": 1, "mem": 2}},  # more than a0
             {"name": "a2", "requirements": {"cpu": 1, "mem": 1, "disk": 1}},  # a0 only
             {"name": "a3", "requirements": {"cpu": 1}},  # no mem: none
             {"name": "a4", "requirements": {"cpu": 1, "mem": 3},
              "immunities": ["gpu"]},  # another immunity: none
             {"name": "a5", "requirements": {"cpu": 1, "mem": 2, "gpu": -1}},  # gives room
             {"name": "a6", "requirements": {"cpu": 1, "mem": 2}},  # forgotten: none
             {"name": "a7", "requirements": {"cpu": 1, "mem": 2, "disk": 0}}]  # a6
    fast, reference = make_with_twin("BinPack", nodes, {"cpu": 1}, 1)
    after, firsts = {}, {}
    original = Distributor._choose_in_pass

    def choose(self, workload, run):
        resume = run.since(workload)
        # (the key it resumes at, and whether it asks more than that search's)
        after[workload.name] = None if resume is None else (resume[1], resume[3])
        chosen = original(self, workload, run)
        firsts[run.first.key] = workload.name
        return chosen

    with mock.patch.object(Distributor, "_choose_in_pass", choose):
        assert fast.attempt_assign_loads(loads) == reference.assign(loads)
    assert_same_state(fast, reference)
    check_index(fast)
    assert {name: firsts[known[0]] for name, known in after.items() if known is not None} \
        == {"a1": "a0", "a2": "a0", "a7": "a6"}
    assert all(known[1] for known in after.values() if known is not None)


def test_a_pass_rests_from_looking_for_smaller_searches_when_none_serves():
    """Workloads placed largest first, each with its own quantities, never
    ask as much as one before them: after DOMINANCE_TRIAL looks that found
    nothing the pass stops looking for DOMINANCE_REST searches, then looks
    again, and rests twice as long after another such count."""
    from pylighthouse import distributors
    trial, rest = distributors.DOMINANCE_TRIAL, distributors.DOMINANCE_REST
    count = 3 * trial + 3 * rest
    loads = [{"name": f"w{i:05d}", "requirements": {"cpu": Decimal(count - i)}}
             for i in range(count)]
    fast = lighthouse.BinPackDistributor({"cpu": 1},
                                         [{"name": "n", "resources": {"cpu": count * count}}])
    looks, answers = [], []
    original = distributors._Pass.since

    def since(run, workload, avoiding=False):
        looks.append(not run.trial.resting)  # (no equal workload: a look unless resting)
        answers.append(original(run, workload, avoiding))
        return answers[-1]

    with mock.patch.object(distributors._Pass, "since", since):
        placed = fast.attempt_assign_loads(loads)
    assert set(placed.values()) == {"n"}
    assert len(looks) == count
    # (64 looks, a rest of 1024, 64 looks, a rest of 2048, the last 64 looked)
    assert looks == ([True] * trial + [False] * rest + [True] * trial
                     + [False] * 2 * rest + [True] * trial)
    assert answers == [None] * count


@pytest.mark.parametrize("strategy", ["BinPack", "BestFit"])
def test_small_calls_rest_from_looking_as_one_large_call_does(strategy):
    """Calls of two workloads, the second never asking as much as the
    first: each call is a pass of its own, and the count of looks that
    found nothing carries from one call to the next, so the calls rest
    from looking as one large call would (a look in every call before);
    every decision is the reference's."""
    from pylighthouse import distributors
    trial, rest = 4, 8
    calls = 45  # (90 searches: four rounds of looks, with rests of 8, 16, 32 and 64)
    nodes = [{"name": f"n{i}", "resources": {"cpu": 4 * calls, "mem": 4 * calls}}
             for i in range(3)]
    reference = Reference(strategy, nodes, {"cpu": 1, "mem": 1}) if strategy == "BinPack" \
        else BestFitReference(nodes)
    looks = []
    original = distributors._Pass.since

    def since(run, workload, avoiding=False):
        if not avoiding and id(workload.requirements) not in run.found:
            looks.append(not run.trial.resting)
        return original(run, workload, avoiding)

    with mock.patch.multiple(distributors, DOMINANCE_TRIAL=trial, DOMINANCE_REST=rest), \
            mock.patch.object(distributors._Pass, "since", since):
        fast = make(strategy, nodes, {"cpu": 1, "mem": 1}, True, 2)
        for call in range(calls):
            loads = [{"name": f"c{call}-big", "requirements": {"cpu": 2, "mem": 2}},
                     {"name": f"c{call}-small", "requirements": {"cpu": 1}}]
            assert fast.attempt_assign_loads(loads) == reference.assign(loads)
    assert_same_state(fast, reference)
    # (the first search of a call looks at an empty pass, the second at
    # the first's search, which asks for memory too: neither serves)
    assert len(looks) == 2 * calls
    expected, span = [], rest  # (looks, then a rest twice as long as the last)
    while len(expected) < len(looks):
        expected += [True] * trial + [False] * span
        span *= 2
    assert looks == expected[:len(looks)]
    assert looks.count(True) == 4 * trial


@pytest.mark.parametrize("strategy", ["Prioritized", "RoundRobin", "BinPack"])
def test_a_flavour_seen_before_reuses_its_sieve_until_the_plan_changes(strategy):
    """The sieve of a requirement vector is made once per class and plan
    entry: workloads of one flavour reuse it, a new flavour makes its own,
    and once the class makes joint columns (a new plan) it is made anew;
    every decision stays the reference's."""
    nodes = [{"name": f"n{i}", "resources": {"cpu": 4 + i % 3, "mem": 8 - i % 3}}
             for i in range(12)]
    rubric = {"cpu": 1, "mem": 0.5}
    # (eager: the class makes joint columns at its first search's review)
    # (floors as in the library, unused here: a floor makes a sieve too)
    fast = make(strategy, nodes, rubric, True, 3, "eager", floors="library")
    reference = Reference(strategy, nodes, rubric)
    made = []
    real = plans.Entry.sieve

    def counted(entry, floats, *rest):
        made.append((entry.serial, tuple(sorted(floats.items()))))
        return real(entry, floats, *rest)

    def place(loads):
        operation = ("assign", loads)
        with mock.patch.object(plans.Entry, "sieve", counted):
            answer = run(operation, fast)
        assert answer == run_reference(operation, reference)
        check_index(fast)

    place([{"name": "a0", "requirements": {"cpu": 1, "mem": 2}}])
    assert len(made) == 1
    (only,) = fast._index._classes.values()
    assert only.joint is not None  # made after that search: the plan changes
    place([{"name": f"a{i}", "requirements": {"cpu": 1, "mem": 2}} for i in range(1, 6)])
    assert len(made) == 2  # made once again, by the new plan's entry, then reused
    assert made[1][1] == made[0][1] and made[1][0] != made[0][0]
    place([{"name": f"a{i}", "requirements": {"cpu": 1, "mem": 2}} for i in range(6, 9)])
    assert len(made) == 2
    place([{"name": "b0", "requirements": {"cpu": 2, "mem": 1}}])
    assert len(made) == 3 and made[2][1] != made[0][1]


@pytest.mark.parametrize("strategy", ["Prioritized", "RoundRobin"])
@pytest.mark.parametrize("together", [0, 256])
@columns_past(32)
def test_kinds_on_few_nodes_together_get_no_set_column(strategy, together):
    """Two kinds that few nodes have together are looked for among those
    nodes (see :meth:`~pylighthouse.index.plans.Entry.few_having_all`); a
    search for them that finds nothing makes no set column, which no later
    search would read. Where those nodes are not looked for first
    (``TOGETHER`` 0, and ``FEW_ALL_KEPT`` 0: not tried in order either),
    it does."""
    nodes = [{"name": f"n{at:03d}", "resources": {
        "cpu": 4, "mem": 16, **({"a": 2} if at % 2 == 0 else {}),
        **({"b": 2} if at % 3 == 0 else {})}} for at in range(120)]
    with mock.patch.object(plans, "TOGETHER", together), \
            mock.patch.object(plans, "FEW_ALL_KEPT", 0):
        fast = make(strategy, nodes, None, True, load=4, joint="eager", denials=None)
        reference = Reference(strategy, nodes, None)
        big = [{"name": "big", "requirements": {"cpu": 1, "mem": 2, "a": 3, "b": 1}}]
        assert fast.attempt_assign_loads(big) == reference.assign(big) == {"big": None}
    (nodes_class,) = fast._index._classes.values()
    assert (frozenset("ab") in nodes_class.set_masked) == (together == 0)
    check_index(fast)


@contextmanager
def nodes_tried():
    """The names of the nodes that searches try one by one (through
    ``search.acceptable``) inside the block, in the order tried."""
    tried = []
    real = search.acceptable

    def counting(slot, workload, groups):
        tried.append(slot.name)
        return real(slot, workload, groups)

    with mock.patch.object(search, "acceptable", counting):
        yield tried


@pytest.mark.parametrize("strategy", ["Prioritized", "RoundRobin", "BinPack", "BestFit"])
@pytest.mark.parametrize("together", [0, 256])
def test_a_shape_led_by_a_rare_kind_tries_only_the_nodes_having_every_kind(strategy,
                                                                           together):
    """A shape asking for two kinds, the rarer on few enough nodes to be
    tried node by node, tries only the nodes having both (five of 100 here,
    not the 20 bearers of the rarer): where nodes keep their order, always
    (the class keeps them in order); where they move, unless ``TOGETHER``
    is below the rarer's bearers. A workload of an aversion group steps
    over those hosting the group. Every decision is the reference's."""
    rubric = {"cpu": 1, "mem": 0.25}
    nodes = [{"name": f"n{at:03d}", "resources": {
        "cpu": 4, "mem": 16, **({"a": 2} if at % 4 == 3 else {}),
        **({"b": 2} if at % 5 == 0 else {})}} for at in range(100)]
    with mock.patch.object(plans, "FEW", 20), mock.patch.object(plans, "TOGETHER", together):
        fast, reference = make_with_twin(strategy, nodes, rubric, 8)
        workloads = [{"name": f"w{at}", "requirements": {"cpu": 1, "a": 1, "b": 1},
                      "aversion_groups": ["g"]} for at in range(6)]
        with nodes_tried() as tried:
            assert fast.attempt_assign_loads(workloads[:1]) == reference.assign(workloads[:1])
        (plan,) = [plan for (shape, _), plan in fast._index._plans.items()
                   if set(shape) == {"cpu", "a", "b"}]
        (entry,) = plan.entries
        moving = strategy in ("BinPack", "BestFit")
        both = {f"n{at:03d}" for at in range(15, 100, 20)}
        assert entry.tag == ("b" if moving else ("b", "a"))
        if together:
            assert entry.together == ("b", "a") and len(entry.few_having_all()) == 5
            assert tried and set(tried) <= both
        elif moving:
            assert entry.together is None and "n000" in tried
        else:
            assert entry.together is None and tried and set(tried) <= both
        assert fast.attempt_assign_loads(workloads[1:]) == reference.assign(workloads[1:])
        assert_same_state(fast, reference)
        check_index(fast)


@pytest.mark.parametrize("strategy", ["Prioritized", "RoundRobin"])
def test_kinds_each_on_many_nodes_try_the_nodes_having_them_all_in_order(strategy):
    """Where nodes keep their order, a shape asking for two kinds, each on
    more nodes than are tried one by one but both on few enough, tries the
    nodes having both, in order (20 of 100 here, not the 40 bearers of
    either): those lacking one are never asked. Workloads of a group step
    over the nodes hosting it; as the nodes fill up, some fit nowhere.
    Every decision is the reference's."""
    rubric = {"cpu": 1, "mem": 0.25}
    nodes = [{"name": f"n{at:03d}", "resources": {
        "cpu": 4, "mem": 16, **({"a": 3} if at % 5 < 2 else {}),
        **({"b": 2} if at % 5 in (0, 2) else {})}} for at in range(100)]
    both = {node["name"] for node in nodes if {"a", "b"} <= node["resources"].keys()}
    assert len(both) == 20 and all(
        sum(name in node["resources"] for node in nodes) == 40 for name in "ab")
    with mock.patch.object(plans, "FEW_KEPT", 30), mock.patch.object(plans, "FEW_ALL_KEPT", 30):
        fast, reference = make_with_twin(strategy, nodes, rubric, 8)
        workloads = [{"name": f"w{at}", "requirements": {
            "cpu": 1 + at % 3, "mem": 2, "a": 1, "b": 1 + at % 2},
            **({"aversion_groups": ["g"]} if at % 4 == 0 else {})} for at in range(60)]
        placed = {}
        with nodes_tried() as tried:
            for at in range(0, 60, 6):
                batch = workloads[at:at + 6]
                answer = fast.attempt_assign_loads(batch)
                assert answer == reference.assign(batch)
                placed.update(answer)
        entries = [entry for (shape, _), plan in fast._index._plans.items()
                   if set(shape) == {"cpu", "mem", "a", "b"} for entry in plan.entries]
        assert entries and all(entry.tag == ("a", "b") for entry in entries)
        assert tried and set(tried) <= both
        assert None in placed.values() and len(set(placed.values()) - {None}) > 10
        assert_same_state(fast, reference)
        check_index(fast)


@pytest.mark.parametrize("strategy", ["Prioritized", "RoundRobin"])
def test_a_new_set_of_kinds_on_many_nodes_takes_its_list_from_a_second_workload_on(strategy):
    """Where nodes keep their order, a shape asking for two kinds, each on
    more nodes than are tried one by one and both on more than
    ``FEW_NEW``, whose list the class does not keep, in a class with more
    than ``FEW_SETS`` such sets of two (else the list is made at once), is
    searched the first
    time as if the class kept no sets (a few bearers of the rarer, then the
    sieve), and from a second workload's search on by the nodes having
    both: in order (``a`` and ``b``, 20 nodes of 100), or, on more than
    ``FEW_ALL_KEPT`` (``c`` and ``d``, 60 nodes), a few of them in order
    before the sieve. The count of nodes having both comes from masks of
    the bearers, exact after a node joins and after one leaves. Through
    groups, releases, and workloads that fit nowhere as the nodes fill up,
    every decision is the reference's."""
    import random
    rng = random.Random(5)
    rubric = {"cpu": 1, "mem": 0.25}

    def node(at):
        return {"name": f"n{at:03d}", "resources": {
            "cpu": 4, "mem": 16, **({"a": 3} if at % 5 < 2 else {}),
            **({"b": 2} if at % 5 in (0, 2) else {}), **({"c": 4} if at % 10 < 8 else {}),
            **({"d": 4} if at % 10 >= 2 else {})}}

    nodes = [node(at) for at in range(100)]
    with mock.patch.object(plans, "FEW_KEPT", 30), mock.patch.object(plans, "FEW_ALL_KEPT", 30), \
            mock.patch.object(plans, "FEW_NEW", 10):
        # (four kinds on more than FEW_KEPT nodes make six pairs: with at
        # most FEW_SETS of them, a set's list is made at once)
        fast, reference = make_with_twin(strategy, nodes, rubric, 8)
        first = {"name": "w", "requirements": {"cpu": 1, "mem": 1, "a": 1, "b": 1}}
        assert fast.attempt_assign_loads([first]) == reference.assign([first])
        [entry] = [entry for plan in fast._index._plans.values() for entry in plan.entries]
        assert entry.tag == ("a", "b") and entry.later is None
    with mock.patch.object(plans, "FEW_KEPT", 30), mock.patch.object(plans, "FEW_ALL_KEPT", 30), \
            mock.patch.object(plans, "FEW_NEW", 10), mock.patch.object(plans, "FEW_SETS", 5):
        fast, reference = make_with_twin(strategy, nodes, rubric, 8)
        nodes_class = next(iter(fast._index._classes.values()))
        for kinds, count in (("ab", 20), ("cd", 60), ("abcd", 10), ("bc", 40), ("ad", 20)):
            assert nodes_class.having_all(tuple(kinds)) == count == sum(
                set(kinds) <= node["resources"].keys() for node in nodes), kinds

        def entries(kinds):
            return [entry for (shape, _), plan in fast._index._plans.items()
                    if set(shape) == {"cpu", "mem", *kinds} for entry in plan.entries]

        def step(operation):
            assert run(operation, fast) == run_reference(operation, reference), operation
            assert_same_state(fast, reference)
            check_index(fast)

        def workload(name, kinds):
            return {"name": name, "requirements": {
                "cpu": rng.choice([0.5, 1, 2]), "mem": rng.choice([1, 2, 4]),
                **{kind: rng.choice([1, 2]) for kind in kinds}},
                **({"aversion_groups": ["g"]} if rng.random() < 0.25 else {})}

        for kinds, every in (("ab", ("a", "b")), ("cd", ("c", "d"))):
            step(("assign", [workload(f"first-{kinds}", kinds)]))
            [entry] = entries(kinds)
            assert entry.later == (every, 20 if kinds == "ab" else 60)
            assert every not in (entry.tag, entry.scan) and not nodes_class.keeps(every)
            step(("assign", [workload(f"second-{kinds}", kinds)]))
            [entry] = entries(kinds)  # (the first search may have had the plans made again)
            assert entry.later is None
            if kinds == "ab":
                assert entry.tag == every  # (its 20 nodes, found by intersection first)
            else:
                assert entry.tag is None and entry.scan == every and nodes_class.keeps(every)
        for batch in range(8):
            workloads = [workload(f"w{batch}-{at}", rng.choice(["ab", "cd", "abcd", ""]))
                         for at in range(30)]
            step(("assign", workloads))
            if batch == 3:
                step(("release", rng.sample(sorted(reference.assignments()), 20)))
            if batch == 4:
                step(("add", [node(100)]))
                assert nodes_class.having_all(("a", "b")) == 21
            if batch == 5:
                step(("remove", ["n000"]))
                assert nodes_class.having_all(("a", "b")) == 20
                assert nodes_class.having_all(("c", "d")) == 60
        assert any(entry.tag == ("a", "b") for entry in entries("ab"))
        unplaced = [spec for spec in workloads if spec["name"] not in reference.assignments()]
        assert unplaced  # (the nodes filled up: some fit nowhere)


@pytest.mark.parametrize("strategy", ["Prioritized", "RoundRobin"])
def test_a_resource_on_many_nodes_tries_a_few_bearers_then_the_columns(strategy):
    """Where nodes keep their order, a shape asking for a resource on more
    nodes than are tried one by one tries at most ``SCAN_LIMIT`` of its
    bearers in order first, then its sieve from the next bearer on; once
    more than ``SCAN_MISSES`` of a class's such searches went on to the
    sieve, it goes straight to the sieve, until every workload is released:
    then it tries them again. Through placements, releases, groups and
    workloads that fit nowhere, every decision is the reference's."""
    import random
    rng = random.Random(3)
    nodes = [{"name": f"n{at:03d}", "resources": {
        "cpu": 8, "mem": 32, **({"ssd": 4} if at % 4 else {})}} for at in range(120)]
    with mock.patch.object(plans, "FEW_KEPT", 20), mock.patch.object(plans, "SCAN_LIMIT", 4), \
            mock.patch.object(plans, "SCAN_TRIAL", 16):
        fast, reference = make_with_twin(strategy, nodes, None, 8)
        tallies, answers = [], {}
        for batch in range(12):
            workloads = [{"name": f"w{batch}-{at}", "requirements": {
                "cpu": rng.choice([0.5, 1, 2, 4, 6]), "mem": rng.choice([1, 4, 8]),
                **({"ssd": rng.choice([1, 2])} if at % 3 else {})},
                **({"aversion_groups": [f"g{at % 3}"]} if at % 5 == 0 else {})}
                for at in range(40)]
            step = ("assign", workloads)
            answer = run(step, fast)
            assert answer == run_reference(step, reference), batch
            answers.update(answer)
            if batch % 4 == 3:
                placed = sorted(reference.assignments())
                release = ("release", rng.sample(placed, len(placed) // 5))
                assert run(release, fast) == run_reference(release, reference)
            assert_same_state(fast, reference)
            (nodes_class,) = fast._index._classes.values()
            tallies.append(list(nodes_class.scans))
        check_index(fast)
    tried, missed, _ = tallies[-1]
    assert tried > missed > 0, tallies  # (both answered and went on to the sieve)
    assert None in answers.values() and len(set(answers.values())) > 80
    # (then more than a quarter had gone on: the last batch tried none)
    assert missed > plans.SCAN_MISSES * tried and tallies[-1] == tallies[-2], tallies
    # (once every workload is released, the next batch tries them again,
    # its searches counted afresh)
    with mock.patch.object(plans, "FEW_KEPT", 20), mock.patch.object(plans, "SCAN_LIMIT", 4), \
            mock.patch.object(plans, "SCAN_TRIAL", 16):
        release = ("release", sorted(reference.assignments()))
        assert run(release, fast) == run_reference(release, reference)
        step = ("assign", [{"name": f"again{at}", "requirements": {"cpu": 1, "mem": 1, "ssd": 1}}
                           for at in range(40)])
        assert run(step, fast) == run_reference(step, reference)
        assert_same_state(fast, reference)
        check_index(fast)
    again = nodes_class.scans
    assert 0 < again[0] <= 40 and again[1] == 0 and again[2] == -1, (tallies, again)


def test_a_class_that_gave_up_trying_bearers_tries_them_again_once_room_came_back():
    """A class that stopped trying the bearers of a resource one by one
    (more than ``SCAN_MISSES`` of such searches went on to the sieve: the
    resource ran out) keeps to the sieve while nothing gains room; once
    nodes gained room as many times as ``SCAN_REGAINED`` of its nodes
    (here, every workload released), it tries them again and judges
    afresh. Every decision is the reference's. (Prioritized: RoundRobin
    gives up the same way, on other workloads, see
    ``test_a_resource_on_many_nodes_tries_a_few_bearers_then_the_columns``.)"""
    strategy = "Prioritized"
    nodes = [{"name": f"n{at:03d}", "resources": {
        "cpu": 8, "mem": 32, **({"ssd": 4} if at % 4 else {})}} for at in range(120)]

    def alike(prefix, number):
        return [{"name": f"{prefix}{at}", "requirements": {"cpu": 1, "mem": 1, "ssd": 1}}
                for at in range(number)]

    def apart(prefix, number):
        # (no two alike, and none asking at least as much as another of
        # everything: none is answered from the shapes known to fit nowhere)
        return [{"name": f"{prefix}{at}", "requirements": {
            "cpu": 1 + at / 1000, "mem": 2 - at / 1000, "ssd": 1}} for at in range(number)]

    with mock.patch.object(plans, "FEW_KEPT", 20), mock.patch.object(plans, "SCAN_LIMIT", 4), \
            mock.patch.object(plans, "SCAN_TRIAL", 16):
        fast, reference = make_with_twin(strategy, nodes, None, 8)
        (nodes_class,) = fast._index._classes.values()
        steps = [("assign", apart("fill", 360)), ("assign", apart("late", 200)),
                 ("assign", apart("later", 20)),
                 ("release", [f"fill{at}" for at in range(360)]),
                 ("assign", alike("again", 100))]
        tallies, answers = [], []
        for step in steps:
            answers.append(run(step, fast))
            assert answers[-1] == run_reference(step, reference), step[0]
            assert_same_state(fast, reference)
            tallies.append(list(nodes_class.scans))
        check_index(fast)
    # (the 90 bearers took all 360 and no more; workloads no two alike,
    # the nodes known to refuse one tell nothing of the next: the first
    # bearers tried were full, more than a quarter of the searches went on
    # to the sieve, and the class gave up while filling them)
    assert None not in answers[0].values()
    assert set(answers[1].values()) == set(answers[2].values()) == {None}
    tried, missed, mark = tallies[0]
    assert tried < 360 and missed > plans.SCAN_MISSES * tried and mark >= 0, tallies
    # (no later search tried them, nor did the release, until the next search)
    assert tallies[0] == tallies[1] == tallies[2] == tallies[3], tallies
    # (then every search tried the bearers again and found one among them)
    assert None not in answers[4].values() and tallies[4] == [100, 0, -1], tallies


@pytest.mark.parametrize("strategy", ["Prioritized", "RoundRobin", "BinPack", "BestFit"])
@columns_past(32)
def test_kinds_on_few_nodes_together_make_their_sieve_only_when_needed(strategy):
    """A shape asking for two kinds that few nodes have together gets an
    entry without a sieve (see :func:`~pylighthouse.index.plans._entry`):
    its searches try those nodes. Once nodes join and many have both, the
    next search makes the sieve, as a plan made then would; once no node
    has a resource it asks for, its plan is made again, without the class.
    Every decision is the reference's. (Where nodes keep their order, the
    nodes having both are not tried in order here: ``FEW_ALL_KEPT`` 0.)"""
    with mock.patch.object(plans, "FEW_ALL_KEPT", 0):
        _kinds_together_make_their_sieve_only_when_needed(strategy)


def _kinds_together_make_their_sieve_only_when_needed(strategy):
    rubric = {"cpu": 1, "mem": 0.25}
    nodes = [{"name": f"n{at:03d}", "resources": {
        "cpu": 4, "mem": 16, "disk": 10, **({"a": 2} if at % 2 == 0 else {}),
        **({"b": 2} if at % 3 == 0 else {})}} for at in range(100)]
    fast, reference = make_with_twin(strategy, nodes, rubric, 4, denials=None)

    def step(workloads):
        assert fast.attempt_assign_loads(workloads) == reference.assign(workloads)
        assert_same_state(fast, reference)
        check_index(fast)

    def entry(*names):
        (plan,) = [plan for (shape, _), plan in fast._index._plans.items() if shape == names]
        (found,) = plan.entries
        return found

    first, second = ("cpu", "a", "b", "disk"), ("cpu", "b", "a", "disk")
    step([{"name": f"w{at}", "requirements": {"cpu": 1, "a": 1, "b": 1, "disk": at % 3}}
          for at in range(4)])
    # (the same names in another order: its entry is the first's twin)
    step([{"name": "z0", "requirements": {"cpu": 1, "b": 1, "a": 1, "disk": 1}}])
    for names in (first, second):
        assert entry(*names).pending is not None and entry(*names).pairs == []
    # (40 nodes with both, none with disk: those having both are many)
    added = [{"name": f"m{at:03d}", "resources": {"cpu": 8, "mem": 16, "a": 4, "b": 4}}
             for at in range(40)]
    run(("add", added), fast)
    reference.add(added)
    step([{"name": "x0", "requirements": {"cpu": 2, "b": 1, "a": 1, "disk": 1}}])
    made = entry(*second)
    assert made.pending is None and {"a", "b"} <= {pair[0] for pair in made.pairs}
    assert entry(*first).pending is not None
    # (every node with disk leaves: the first's plan is made again, with
    # no entry, and finds nothing, as the reference)
    gone = [node["name"] for node in nodes]
    assert run(("remove", gone), fast) == reference.remove(gone)
    step([{"name": "y0", "requirements": {"cpu": 1, "a": 1, "b": 1, "disk": 1}}])
    (plan,) = [plan for (shape, _), plan in fast._index._plans.items() if shape == first]
    assert not plan.entries and "y0" not in reference.assignments()


@pytest.mark.parametrize("strategy", ["Prioritized", "RoundRobin", "BinPack", "BestFit"])
@pytest.mark.parametrize("together", [0, 256])
def test_a_class_losing_the_last_node_having_a_resource_plans_again(strategy, together):
    """Once the last node of a class having a resource leaves, the plans of
    the shapes asking for it are made again (that class drops out of them),
    as when a node brings a resource new to its class. A plan kept from
    before sent a search there: one for two kinds that found no node then
    made a set column and looked up the bearers of a kind no node had, and
    ``remove_nodes``, placing again the workloads of the nodes leaving,
    raised ``KeyError``. ``TOGETHER`` 0: the two kinds are searched by
    the blocks, not first among the few nodes having both."""
    rubric = {"cpu": 1, "mem": 0.25}
    nodes = [{"name": f"n{at:03d}", "resources": {
        "cpu": 4, "mem": 16, **({"a": 2} if at % 2 == 0 else {}),
        **({"b": 2} if at % 3 == 0 else {})}} for at in range(120)]
    with mock.patch.object(plans, "TOGETHER", together):
        fast, reference = make_with_twin(strategy, nodes, rubric, 4)

        def step(workloads):
            assert fast.attempt_assign_loads(workloads) == reference.assign(workloads)
            assert_same_state(fast, reference)
            check_index(fast)

        step([{"name": "w1", "requirements": {"cpu": 1, "a": 1, "b": 1}},
              {"name": "w2", "requirements": {"cpu": 1, "a": 1}}])
        gone = [node["name"] for node in nodes if "b" in node["resources"]]
        assert run(("remove", gone), fast) == reference.remove(gone)
        assert_same_state(fast, reference)
        step([{"name": "w3", "requirements": {"cpu": 2, "a": 1, "b": 1}},
              {"name": "w4", "requirements": {"cpu": 2, "b": 1, "a": 1}}])
        assert "w3" not in reference.assignments()


@pytest.mark.parametrize("strategy", ["Prioritized", "RoundRobin"])
@columns_past(32)
def test_a_set_of_kinds_that_fit_nowhere_gets_a_set_column(strategy):
    """Where nodes keep their order, a search for two kinds or more (each
    on part of the nodes) that finds no node makes the class a *set
    column* for them; later sieves for them are led by it. Its values come
    down lazily: placements leave them at least the nodes' own, a block
    looked inside in vain brings them down, and room given back raises
    them at once. Every decision is the reference's and the index is
    checked after each step."""
    nodes = [{"name": f"n{at:03d}", "resources": {
        "cpu": 4, "mem": 16, **({"a": 2, "b": 2, "c": 2} if at % 2 else {"d": 5})}}
        for at in range(120)]
    fast = make(strategy, nodes, None, True, load=4, joint="eager", denials=None)
    reference = Reference(strategy, nodes, None)

    def step(workloads):
        assert fast.attempt_assign_loads(workloads) == reference.assign(workloads)
        assert_same_state(fast, reference)
        check_index(fast)

    (nodes_class,) = fast._index._classes.values()
    trio = frozenset("abc")
    step([{"name": f"w{at:03d}", "requirements": {"cpu": 1, "mem": 2, "a": 1, "b": 1, "c": 1}}
          for at in range(20)])
    assert trio not in nodes_class.set_masked
    # (three of a kind on no node: found nowhere, and the set column made)
    step([{"name": "big", "requirements": {"cpu": 1, "mem": 2, "a": 3, "b": 1, "c": 1}}])
    column = nodes_class.set_masked[trio]
    assert column[0] == "set" and [name for name, _ in column[1][:3]] == ["a", "b", "c"]
    # (the nodes having the kinds lose their cpu to workloads asking for
    # one kind only: the column's values stay where they were, above the
    # nodes' own)
    step([{"name": f"x{at:03d}", "requirements": {"cpu": 3, "mem": 1, "a": 0}}
          for at in range(60)])

    def above():
        return sum(value > column_value(slot, column) for block in nodes_class.blocks
                   for value, slot in zip(block.cols[column], block.slots))

    stale = above()
    assert stale
    # (a search for the three kinds is led by the column, looks inside the
    # blocks whose bounds pass in vain, and brings their values down)
    step([{"name": "probe", "requirements": {"cpu": 2, "mem": 1, "a": 1, "b": 1, "c": 1}}])
    assert [record.sieve for record in [*nodes_class.refusals.values(), nodes_class.scratch]
            if record.sieve and record.sieve[0][0] is column]
    assert above() < stale
    # (room given back: the nodes' values rise at once)
    released = [name for name in sorted(reference.assignments()) if name[0] == "x"][::3]
    assert run(("release", released), fast) == run_reference(("release", released), reference)
    check_index(fast)
    step([{"name": f"y{at:03d}", "requirements": {"cpu": 1, "mem": 2, "c": 1, "a": 1, "b": 1}}
          for at in range(30)])
    # (with the library's own settings, a class of fewer blocks than
    # SET_BLOCKS makes none: a search finding nothing there is short)
    small = {"Prioritized": lighthouse.PrioritizedDistributor,
             "RoundRobin": lighthouse.RoundRobinDistributor}[strategy](nodes)
    assert small.attempt_assign_loads(
        [{"name": "big", "requirements": {"cpu": 1, "mem": 2, "a": 3, "b": 1, "c": 1}}]) \
        == {"big": None}
    (small_class,) = small._index._classes.values()
    assert len(small_class.blocks) < index_nodes.SET_BLOCKS and not small_class.set_masked


def device_cluster(count, kinds, rng):
    """Nodes with cpu and memory and three of ``kinds`` kinds of device
    each (1 to 3 of each), so that a pair of kinds is on a few nodes."""
    return [{"name": f"d{i:03d}", "resources": dict(
        {"cpu": rng.choice([2, 4, 8]), "mem": 8},
        **{f"dev-{kind:02d}": rng.randint(1, 3) for kind in rng.sample(range(kinds), 3)})}
        for i in range(count)]


@settings(max_examples=40, deadline=None)
@given(strategy=st.sampled_from(["Prioritized", "RoundRobin", "BinPack", "BestFit"]),
       seed=st.integers(0, 10 ** 6), kinds=st.sampled_from([6, 20]),
       few=st.sampled_from([1, 3, 32]), together=st.sampled_from([0, 8, 256]),
       load=st.sampled_from([2, 64]), sparse=SPARSE, sorted_at=st.sampled_from([0, 8]))
def test_many_kinds_of_device_decide_like_the_reference(strategy, seed, kinds, few, together,
                                                        load, sparse, sorted_at):
    """Workloads asking for one to three kinds of device, each kind on part
    of the nodes: the nodes having all the kinds asked for are found among
    the bearers when few enough have them (``few``, ``together``), else by
    the blocks; nodes join, leave, are cordoned and workloads released in
    between, so that what the bearers say changes."""
    import random
    rng = random.Random(seed)
    nodes = device_cluster(40, kinds, rng)
    rubric = {"cpu": 1, "mem": 0.25}
    with few_patched(few, sorted_at), \
            mock.patch("pylighthouse.index.plans.TOGETHER", together):
        fast = make(strategy, nodes, rubric, True, load, sparse=sparse)
        reference = (BestFitReference(nodes) if strategy == "BestFit"
                     else Reference(strategy, nodes, rubric))
        for step in range(30):
            batch = []
            for index in range(rng.randint(1, 6)):
                requirements = {"cpu": rng.choice([1, 2, 3]), "mem": rng.choice([1, 2])}
                for kind in rng.sample(range(kinds), rng.randint(0, 3)):
                    requirements[f"dev-{kind:02d}"] = rng.randint(1, 2)
                batch.append({"name": f"w{step}-{index}", "requirements": requirements,
                              "aversion_groups": rng.choice([[], ["g"]])})
            assert fast.attempt_assign_loads(batch) == reference.assign(batch)
            names = [machine.name for machine in reference.machines]
            if step % 5 == 4 and reference.assignments():
                victims = rng.sample(sorted(reference.assignments()), 2) \
                    if len(reference.assignments()) > 1 else sorted(reference.assignments())
                assert run(("release", victims), fast) == reference.release(victims)
            if step % 7 == 6:
                added = device_cluster(3, kinds, rng)
                for offset, node in enumerate(added):
                    node["name"] = f"a{step:02d}-{offset}"
                run(("add", added), fast)
                reference.add(added)
            if step % 9 == 8 and len(names) > 5:
                gone = [rng.choice(names)]
                assert run(("remove", gone), fast) == reference.remove(gone)
            if step % 6 == 5:
                name = rng.choice([machine.name for machine in reference.machines])
                fast.cordon(name)
                reference.cordon(name)
        assert_same_state(fast, reference)
        check_index(fast)


@pytest.mark.parametrize("strategy", ["Prioritized", "BinPack"])
def test_a_column_only_some_nodes_have_is_made_once_searches_lacking_it_are_refused(strategy):
    """Half the nodes have a device (more than are tried one by one): a
    plan asking for it makes no column of it at first, and nodes lacking it
    or short of it are found so by their own check. Once the searches of
    such plans met ``DENIALS`` refusals, the class makes the column and the
    plans use it; a device that no search was refused for never gets one.
    Every decision stays the reference's. (No node tried one by one before
    the sieve where nodes keep their order: ``SCAN_LIMIT`` 0.)"""
    nodes = [{"name": f"n{at:02d}", "resources": dict(
        {"cpu": 8, "mem": 32}, **({"dev": 1, "other": 4} if at % 2 else {}))}
        for at in range(48)]
    rubric = {"cpu": 1, "mem": 0.25}
    with mock.patch.object(plans, "FEW", 4), mock.patch.object(plans, "FEW_KEPT", 4), \
            mock.patch.object(plans, "SCAN_LIMIT", 0):
        fast = make(strategy, nodes, rubric, True, 4, denials=6)
        reference = Reference(strategy, nodes, rubric)
        (nodes_class,) = fast._index._classes.values()
        first = [{"name": "o", "requirements": {"cpu": 1, "mem": 1, "other": 1}}]
        assert fast.attempt_assign_loads(first) == reference.assign(first)
        (entry,) = fast._index._plans[(("cpu", "mem", "other"), frozenset())].entries
        assert entry.deferred == {"other"} and "other" not in nodes_class.bounds
        placed = 1
        # (one device each: the nodes having it run out one after another,
        # and a search for it is refused by every node already used)
        for at in range(24):
            load = [{"name": f"d{at}", "requirements": {"cpu": 1, "mem": 1, "dev": 1}}]
            assert fast.attempt_assign_loads(load) == reference.assign(load)
            placed += 1
            if "dev" in nodes_class.hot:
                break
        assert "dev" in nodes_class.hot and nodes_class.denials["dev"] >= 6
        late = [{"name": "late", "requirements": {"cpu": 1, "mem": 1, "dev": 1}}]
        assert fast.attempt_assign_loads(late) == reference.assign(late)
        (entry,) = fast._index._plans[(("cpu", "mem", "dev"), frozenset())].entries
        assert "dev" in nodes_class.bounds and not entry.deferred
        assert "other" not in nodes_class.bounds and "other" not in nodes_class.hot
        assert placed < 24
    assert_same_state(fast, reference)
    check_index(fast)


@settings(max_examples=150, deadline=None)
@given(strategy=st.sampled_from(["Prioritized", "RoundRobin", "BinPack", "BestFit"]),
       seed=st.integers(0, 10 ** 6), load=st.sampled_from([2, 4, 8]),
       denials=st.sampled_from([None, 1, 3, 10 ** 6]))
def test_columns_put_off_until_searches_are_refused_decide_like_the_reference(
        strategy, seed, load, denials):
    """Nodes with kinds of device on about half of them, and a ward on some;
    workloads asking for none to three kinds, some in aversion groups, some
    immune to the ward: a kind's column is put off until searches lacking
    it were refused ``denials`` times (never, at once, soon, or not put off
    at all), through releases, cordons, and nodes joining and leaving;
    every decision stays the reference's and the index stays whole."""
    rng = random.Random(seed)
    sizes = [0.5, 1, 2, 4, 8, 16]
    kinds = ["k0", "k1", "k2", "k3"]

    def node(name):
        resources = {"cpu": rng.choice(sizes), "mem": rng.choice(sizes)}
        for kind in kinds:
            if rng.random() < 0.5:
                resources[kind] = rng.choice([1, 2, 3])
        if rng.random() < 0.1:
            resources["ward"] = -1
        return {"name": name, "resources": resources}

    nodes = [node(f"n{at:02d}") for at in range(rng.randint(1, 40))]
    rubric = {"cpu": 1, "mem": 0.25}
    with mock.patch.object(plans, "FEW", 2), mock.patch.object(plans, "FEW_KEPT", 2), \
            mock.patch.object(plans, "TOGETHER", 2):
        distributor = make(strategy, nodes, rubric, True, load, joint="adaptive",
                           floors="library", denials=denials)
        reference = BestFitReference(nodes) if strategy == "BestFit" \
            else Reference(strategy, nodes, rubric)
        for step in range(6):
            batch = []
            for at in range(rng.randint(1, 12)):
                requirements = {"cpu": rng.choice(sizes) / 4, "mem": rng.choice(sizes) / 4}
                for kind in rng.sample(kinds, rng.choice([0, 0, 1, 1, 2, 3])):
                    requirements[kind] = rng.choice([1, 1, 2])
                batch.append(grouped_spec(rng, f"w{step}-{at}", requirements))
            assert distributor.attempt_assign_loads(batch) == reference.assign(batch), step
            step_cluster(rng, distributor, reference, node, step)
        check_index(distributor)


@pytest.mark.parametrize("strategy", ["BinPack", "BestFit"])
def test_only_sets_of_kinds_on_few_nodes_are_counted_per_block(strategy):
    """Where nodes move at every placement, blocks count the nodes having
    every kind a workload asks for only when those nodes are few (at most
    ``COUNTED_PER_BLOCK`` a block): two kinds on nine nodes in ten each,
    together on eight in ten, more than that a block, are had together in
    every block, and are not counted (looked at again only once a node
    joined or left the class); two kinds on one node in twenty are. Every
    decision stays the reference's."""
    from pylighthouse.index import bearers as index_bearers
    nodes = [{"name": f"n{at:03d}", "resources": dict(
        {"cpu": 8, "mem": 32},
        **({"a": 2} if at % 10 else {}), **({"b": 2} if at % 10 != 1 else {}),
        **({"c": 2, "d": 2} if at % 20 == 0 else {}))} for at in range(160)]
    with mock.patch.object(plans, "FEW", 2), mock.patch.object(plans, "TOGETHER", 0):
        fast, reference = make_with_twin(strategy, nodes, {"cpu": 1, "mem": 0.25}, 16)
        (nodes_class,) = fast._index._classes.values()
        for at in range(3):
            loads = [{"name": f"ab{at}", "requirements": {"cpu": 1, "mem": 1, "a": 1, "b": 1}},
                     {"name": f"cd{at}", "requirements": {"cpu": 1, "mem": 1, "c": 1, "d": 1}}]
            assert fast.attempt_assign_loads(loads) == reference.assign(loads)
        assert frozenset("cd") in nodes_class.tallies
        assert frozenset("ab") not in nodes_class.tallies
        assert nodes_class.uncounted[frozenset("ab")] == nodes_class.members
        assert index_bearers.COUNTED_PER_BLOCK * len(nodes_class.blocks) < 128
        added = [{"name": "late", "resources": {"cpu": 8, "mem": 32, "a": 1, "b": 1}}]
        assert run(("add", added), fast) == run_reference(("add", added), reference)
        loads = [{"name": "ab-late", "requirements": {"cpu": 1, "mem": 1, "a": 1, "b": 1}}]
        assert fast.attempt_assign_loads(loads) == reference.assign(loads)
        assert nodes_class.uncounted[frozenset("ab")] == nodes_class.members
    assert_same_state(fast, reference)
    check_index(fast)


@pytest.mark.parametrize("strategy", ["Prioritized", "RoundRobin", "BinPack", "BestFit"])
def test_a_floor_reads_a_column_made_sparse_before_every_node_had_its_resource(strategy):
    # (a column made sparse while one node lacked the resource stays sparse
    # after that node leaves; the plans then treat the resource as one every
    # node has, floors included, and the floor's run read the column as a
    # dense one: KeyError)
    nodes = [{"name": f"n{i}", "resources": {"cpu": 4, "mem": 8}} for i in range(12)]
    nodes.insert(3, {"name": "odd", "resources": {"cpu": 4}})
    batches = [[{"name": f"a{i}", "requirements": {"cpu": 4, "mem": 8}} for i in range(5)],
               [{"name": f"b{i}", "requirements": {"cpu": 1.5, "mem": 3.5}} for i in range(4)],
               [{"name": f"c{i}", "requirements": {"cpu": 1, "mem": 2}} for i in range(4)]]
    answers = []
    for indexed in (True, False):
        distributor = make(strategy, nodes, {"cpu": 1, "mem": 1}, indexed, load=3,
                           floors="eager", sparse=1)
        with settings_of(indexed, 3, "eager", "eager", 1):
            if indexed:
                [nodes_class] = distributor._index._classes.values()
                nodes_class.add_column("mem")
                assert "mem" in nodes_class.sparse
            distributor.remove_nodes(["odd"])
            answers.append([distributor.attempt_assign_loads(batch) for batch in batches])
    assert answers[0] == answers[1]
    assert all(answers[0][0].values())
