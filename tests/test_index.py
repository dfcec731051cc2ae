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
from contextlib import contextmanager
from decimal import Decimal
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

import pylighthouse as lighthouse
from pylighthouse.distributors import Distributor
from pylighthouse.index import ALL, INF, OPEN, NodeIndex, _Scales, _upper
from instances import RUBRICS, clusters, operations
from reference import Reference
from test_differential import assert_same_state, run, run_reference, concrete

STRATEGIES = st.sampled_from(["Prioritized", "RoundRobin", "BinPack"])


@contextmanager
def settings_of(indexed, load=2):
    with mock.patch.object(Distributor, "_indexed", indexed), \
            mock.patch.object(Distributor, "_index_load", load):
        yield


def make(strategy, nodes, rubric, indexed, load=2):
    with settings_of(indexed, load):
        if strategy == "BinPack":
            return lighthouse.BinPackDistributor(rubric, nodes)
        return {"Prioritized": lighthouse.PrioritizedDistributor,
                "RoundRobin": lighthouse.RoundRobinDistributor}[strategy](nodes)


def check_index(distributor):
    """The index holds exactly the nodes, in the strategy's order, with
    counts that add up and bounds that bound every member."""
    index = distributor._index
    assert isinstance(index, NodeIndex)
    index._settle()  # internal levels that splits and merges left out of date
    order = list(index)
    if distributor._rekeyed:
        key = distributor._rubric.sort_key
        assert [s.name for s in order] == [
            s.name for s in sorted(order, key=lambda s: key(s.remaining, s.name))]
        assert all(s.key == distributor._index_key(s) for s in order)
        assert all((s.key[0], *s.key[2:]) == key(s.remaining, s.name) for s in order)
    else:
        assert [s.name for s in order] == list(distributor._slots)
    assert len(index) == len(order) == len(distributor._slots)
    assert all(index.rank(slot) == at for at, slot in enumerate(order))
    assert all(index._at(at) == index._locate(slot) for at, slot in enumerate(order))
    if index._found is not None:  # the last node found, where it still is
        found, block, position = index._found
        assert index._blocks[block][position] is found
    assert all(index.rank(slot) == at for at, slot in reversed(list(enumerate(order))))
    for at, slot in enumerate(order):  # from the trees alone, with no shortcut
        index._known = None
        assert index.rank(slot) == at
        index._known = None
        assert index._at(at) == index._locate(slot)
    assert all(keys == [s.key for s in nodes] and keys == sorted(keys) and keys
               for nodes, keys in zip(index._blocks, index._keys))
    assert index._lasts == [keys[-1] for keys in index._keys]
    cap, leaves, row = index._cap, index._leaves, index._row
    assert len(leaves) == len(index._blocks) and len(row) == cap
    assert leaves == sorted(set(leaves)) and all(0 <= leaf < cap for leaf in leaves)
    assert [leaf for leaf, nodes in enumerate(row) if nodes is not None] == leaves
    assert all(row[leaf] is nodes for leaf, nodes in zip(leaves, index._blocks))
    gaps = [cap + leaf for leaf, nodes in enumerate(row) if nodes is None]
    assert index._counts[1] == len(order)
    assert [index._counts[cap + leaf] for leaf in leaves] == [len(n) for n in index._blocks]
    assert not any(index._counts[gap] for gap in gaps)
    for family, trees in index._families.items():
        for term, tree in trees.items():
            for leaf, nodes in zip(leaves, index._blocks):
                exact = exact_bound([s for s in nodes if index._member(s, family)
                                     and not s.cordoned], term)
                assert index._leaf(nodes, family, term) == exact, (family, term, leaf)
                assert tree[cap + leaf] >= exact, (family, term, leaf)
            for position in range(1, cap):
                assert tree[position] >= max(tree[2 * position], tree[2 * position + 1])
            # (Gaps bound nothing.)
            assert all(tree[gap] == -INF for gap in gaps)
    for nodes in index._blocks:  # each block's columns hold its nodes' floats
        assert {key for slot in nodes for key in slot.floats} <= nodes.columns.keys()
        for key, column in nodes.columns.items():
            assert list(column) == [slot.floats.get(key, -INF) for slot in nodes], key
    for slot in order:
        assert slot.floats == {key: float(value) for key, value in slot.remaining.items()}
        assert slot.negative == any(v < 0 for v in slot.remaining.values())
        assert {k for k, v in slot.remaining.items() if v < 0} <= index.negative
    assert OPEN in index._families[ALL]


def exact_bound(members, term):
    """A term's exact bound over ``members`` (open members of a family),
    node by node from their own float copies (the index reads its columns)."""
    if term is OPEN:
        return 0.0 if members else -INF
    if type(term) is tuple:
        return _upper(max([term[1].least(s.floats) for s in members], default=-INF))
    return max([s.floats.get(term, -INF) for s in members], default=-INF)


@settings(max_examples=120, deadline=None)
@given(strategy=STRATEGIES, nodes=clusters(max_nodes=14), rubric=RUBRICS,
       steps=operations(max_steps=10), load=st.sampled_from([1, 2, 3, 8]))
def test_index_plain_and_reference_agree(strategy, nodes, rubric, steps, load):
    fast = make(strategy, nodes, rubric, True, load)
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
    fast = make(strategy, nodes, rubric, True, 4)
    reference = Reference(strategy, nodes, rubric)
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
       resume=st.sampled_from([1, 2, 3, 64]), one_by_one=st.booleans())
def test_searches_resumed_from_the_last_answer_decide_like_the_reference(
        strategy, steps, load, resume, one_by_one):
    """Replicas placed one after another resume the last search for their
    shape (and groups) when few nodes changed since; a tiny ``RESUME``
    window also exercises the log running out. Placing, releasing, adding,
    cordoning, draining and removing in between: the same decisions as
    the plain scan and the reference."""
    rubric = {"cpu": 1, "mem": -0.5}
    nodes = SHAPE_NODES + [{"name": f"e{i}", "resources": {"cpu": 4, "mem": 4}}
                           for i in range(4)]
    with mock.patch("pylighthouse.index.RESUME", resume):
        fast = make(strategy, nodes, rubric, True, load)
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


def test_replicas_resume_instead_of_searching_from_the_start():
    """The resumed path is the one taken: of 60 replicas placed one by one
    on a cluster whose front is full, most answers come from the last one
    (checked against the plain scan), not from a search from the start."""
    nodes = [{"name": f"full{i:02d}", "resources": {"cpu": 0.5, "mem": 1}} for i in range(40)]
    nodes += [{"name": f"room{i:02d}", "resources": {"cpu": 8, "mem": 8}} for i in range(10)]
    replicas = [{"name": f"r{i:02d}", "requirements": {"cpu": 1, "mem": 1}} for i in range(60)]
    for strategy in ("Prioritized", "BinPack"):
        fast = make(strategy, nodes, {"cpu": 1}, True, 4)
        plain = make(strategy, nodes, {"cpu": 1}, False)
        starts = []
        scan = NodeIndex._scan

        def counting(self, workload, family, terms, checks, groups, skip, block, *rest):
            starts.append((block, rest[0]))
            return scan(self, workload, family, terms, checks, groups, skip, block, *rest)

        with mock.patch.object(NodeIndex, "_scan", counting):
            for replica in replicas:
                assert fast.attempt_assign_loads([replica]) == \
                    plain.attempt_assign_loads([replica])
        from_start = starts.count((0, 0))
        assert from_start <= 10, (strategy, starts)


def test_a_release_that_frees_only_a_group_reopens_the_node_to_resumed_searches():
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


@settings(max_examples=200, deadline=None)
@given(st.integers(2, 5), st.lists(st.lists(
    st.one_of(st.none(), st.floats(allow_nan=False)), min_size=5, max_size=5), max_size=12))
def test_a_mixed_terms_exact_bound_is_its_largest_raised_least(width, rows):
    # largest() is written out per width and reads a block's columns; it
    # must agree with least() on every node, a missing resource included
    # (None: the node lacks it; no column when no node has it).
    keys = [f"r{i}" for i in range(width)]
    scales = _Scales({key: 2.0 ** -(2 * i) for i, key in enumerate(keys)})
    floats = [{key: value for key, value in zip(keys, row) if value is not None}
              for row in rows]

    def column(key):
        if not any(key in row for row in floats):
            return None
        return [row.get(key, -INF) for row in floats]

    expected = _upper(max([scales.least(row) for row in floats], default=-INF))
    assert scales.largest(column) == expected


def test_quantities_at_the_edges_of_float_range_decide_like_the_reference():
    """The trees and the sieve compare float copies: a finite quantity beyond
    float range, one that rounds to zero, and neighbours closer than float
    rounding must still be pruned only where they fall short exactly. Each
    node meets each requirement on its own, so one wrong prune changes a
    decision."""
    # (Quantities lie within 1e-300 and 1e300 in magnitude: the ends of that
    # range, and neighbours of 1 that floats cannot tell apart.)
    edges = ["1e300", "-1e300", "9.99999999999999999999e300", "1e-300", "-1e-300", "0", "1",
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
