"""The index's memory of refusals: a block that refused a requirement vector
refuses every vector at least as large in each resource, until one of its
nodes gains room, joins it, is uncordoned or loses an aversion group."""
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from pylighthouse.index.blocks import NodeClass
from reference import Reference
from test_differential import assert_same_state, run, run_reference
from test_index import check_index, make

STRATEGIES = st.sampled_from(["Prioritized", "RoundRobin", "BinPack"])

#: Blocks of two nodes (load 2), in Prioritized order: each block but the
#: last has one node short of cpu and one short of memory, so its bounds
#: pass a vector that none of its nodes takes.
NODES = [
    {"name": "n0", "resources": {"cpu": 1, "mem": 1}},
    {"name": "n1", "resources": {"cpu": 1, "mem": 1}},
    {"name": "n2", "resources": {"cpu": 2, "mem": 1}},
    {"name": "n3", "resources": {"cpu": 1, "mem": 2}},
    {"name": "n4", "resources": {"cpu": 3, "mem": 1}},
    {"name": "n5", "resources": {"cpu": 1, "mem": 3}},
    {"name": "n6", "resources": {"cpu": 9, "mem": 9}},
    {"name": "n7", "resources": {"cpu": 9, "mem": 9}},
]


def load(name, cpu, mem, groups=()):
    return {"name": name, "requirements": {"cpu": cpu, "mem": mem},
            "aversion_groups": list(groups)}


def recording():
    """Patch NodeClass.refused to record, per call, the vector asked for and
    the blocks known to refuse it at that moment (before the search)."""
    calls = []
    real = NodeClass.refused

    def refused(nodes, shape, needed):
        found = real(nodes, shape, needed)
        known = [at for at, (stamp, version) in enumerate(zip(found.stamps, nodes.versions))
                 if stamp == version]
        calls.append((tuple(float(value) for value in needed), known))
        return found

    return calls, mock.patch.object(NodeClass, "refused", refused)


def test_a_larger_vector_inherits_the_refusals_of_every_smaller_one():
    fast = make("Prioritized", NODES, {}, True, 2)
    reference = Reference("Prioritized", NODES, {})
    calls, patch = recording()
    with patch:
        for batch in ([load("u2", 1, 3)], [load("u1", 2, 1)], [load("v", 2, 3)]):
            assert fast.attempt_assign_loads(batch) == reference.assign(batch)
    assert fast.assignments == {"u2": "n5", "u1": "n2", "v": "n6"}
    # u2 (1, 3) was refused by blocks 0 and 1, u1 (2, 1) by block 0 only
    # (the newer of the two); v (2, 3) is at least both: it starts knowing
    # that blocks 0 and 1 refuse it, from both vectors together.
    assert calls[-1] == ((2.0, 3.0), [0, 1])
    check_index(fast)


def test_a_vector_smaller_in_one_resource_inherits_nothing():
    fast = make("Prioritized", NODES, {}, True, 2)
    calls, patch = recording()
    with patch:
        assert fast.attempt_assign_loads([load("u", 2, 3)]) == {"u": "n6"}
        # (1, 3) is below (2, 3) in cpu: block 1 (n3 has cpu 1) might take it
        assert fast.attempt_assign_loads([load("w", 1, 3)]) == {"w": "n5"}
    assert calls[0] == ((2.0, 3.0), [])
    assert calls[1] == ((1.0, 3.0), [])


def inherited_then(operation, then, expected):
    """Refusals of (2, 1) and (1, 3) known, then ``operation``: the next
    vector at least as large decides like the reference."""
    fast = make("Prioritized", NODES, {}, True, 2)
    reference = Reference("Prioritized", NODES, {})
    for step in (("assign", [load("a", 1, 3)]), ("assign", [load("b", 2, 1, ["g"])]),
                 ("assign", [load("c", 2, 2)]), operation, ("assign", [then])):
        assert run(step, fast) == run_reference(step, reference), step
        assert_same_state(fast, reference)
    assert fast.assignments[then["name"]] == expected
    check_index(fast)


def test_a_refusal_is_forgotten_when_a_node_gains_room():
    # releasing a frees n5 again: (1, 3) fits there, before n6
    inherited_then(("release", ["a"]), load("d", 1, 3), "n5")


def test_a_refusal_is_forgotten_when_a_node_joins_the_block():
    # (9.5, 1) is refused by every block; a node joins the last block (load
    # 3: it has room for one more); (9.5, 9.5), at least (9.5, 1), takes it
    fast = make("Prioritized", NODES[:7], {}, True, 3)
    reference = Reference("Prioritized", NODES[:7], {})
    for step in (("assign", [load("a", 9.5, 1)]),
                 ("add", [{"name": "m", "resources": {"cpu": 10, "mem": 10}}]),
                 ("assign", [load("b", 9.5, 9.5)])):
        assert run(step, fast) == run_reference(step, reference), step
        assert_same_state(fast, reference)
    assert fast.assignments == {"b": "m"}  # a was not placed
    check_index(fast)


def test_a_refusal_is_forgotten_when_a_node_is_uncordoned():
    fast = make("Prioritized", NODES, {}, True, 2)
    reference = Reference("Prioritized", NODES, {})
    for step in (("cordon", "n4"), ("assign", [load("a", 3, 1)]), ("uncordon", "n4"),
                 ("assign", [load("b", 3, 1)]), ("assign", [load("c", 3, 1)])):
        assert run(step, fast) == run_reference(step, reference), step
        assert_same_state(fast, reference)
    assert fast.assignments == {"a": "n6", "b": "n4", "c": "n6"}
    check_index(fast)


def test_a_refusal_is_forgotten_when_a_node_loses_a_group():
    fast = make("Prioritized", NODES, {}, True, 2)
    reference = Reference("Prioritized", NODES, {})
    steps = [("assign", [load("a", 0, 0, ["g"]), load("b", 0, 0, ["g"]),
                         load("c", 0, 0, ["g"])]),
             ("assign", [load("d", 1, 1, ["g"])]),  # n0-n2 averse: n3
             ("release", ["a"]),  # n0 loses the group
             ("assign", [load("e", 1, 1, ["g"])]),
             ("assign", [load("f", 1, 1.5, ["g"])])]
    for step in steps:
        assert run(step, fast) == run_reference(step, reference), step
        assert_same_state(fast, reference)
    assert fast.assignments["e"] == "n0"
    check_index(fast)


#: Requirements on a fine grid, so that nearly every workload has its own
#: vector and many of them are at least as large as a recent one.
QUANTITY = st.integers(1, 40).map(lambda tenths: tenths / 10)
STEPS = st.lists(st.tuples(
    st.sampled_from(["assign", "assign", "assign", "release", "add", "cordon", "uncordon",
                     "drain", "remove"]),
    st.lists(st.tuples(QUANTITY, QUANTITY, st.booleans(),
                       st.sampled_from([(), ("g",), ("h",)])), min_size=1, max_size=8),
    st.randoms(use_true_random=False)), min_size=1, max_size=14)
CLUSTER = st.lists(st.tuples(st.integers(1, 40), st.integers(1, 40)), min_size=1, max_size=16)


@settings(max_examples=100, deadline=None, derandomize=True)
@given(strategy=STRATEGIES, sizes=CLUSTER, steps=STEPS, block=st.sampled_from([1, 2, 3]))
def test_distinct_vectors_decide_like_the_reference(strategy, sizes, steps, block):
    """Workloads each with its own decimal quantities (some with a third
    resource, some with aversion groups), between releases, new nodes,
    cordons, drains and removals: the same decisions as the reference."""
    nodes = [{"name": f"n{at}", "resources": {"cpu": cpu / 10, "mem": mem / 10, "disk": 2}}
             for at, (cpu, mem) in enumerate(sizes)]
    rubric = {"cpu": 1, "mem": 0.5}
    fast = make(strategy, nodes, rubric, True, block)
    reference = Reference(strategy, nodes, rubric)
    made = 0
    for kind, loads, rng in steps:
        names = [machine.name for machine in reference.machines]
        if kind == "assign":
            batch = []
            for cpu, mem, disk, groups in loads:
                requirements = {"cpu": cpu, "mem": mem}
                if disk:
                    requirements["disk"] = 1
                batch.append({"name": f"w{made}", "requirements": requirements,
                              "aversion_groups": list(groups)})
                made += 1
            operation = ("assign", batch)
        elif kind == "release":
            placed = sorted(reference.assignments())
            operation = ("release", rng.sample(placed, min(len(placed), len(loads))))
        elif kind == "add":
            cpu, mem = loads[0][0], loads[0][1]
            operation = ("add", [{"name": f"new{made}", "resources": {"cpu": cpu, "mem": mem}}])
            made += 1
        elif not names:
            continue
        elif kind == "remove":
            operation = ("remove", [rng.choice(names)])
        else:
            operation = (kind, rng.choice(names))
        assert run(operation, fast) == run_reference(operation, reference), operation
        assert_same_state(fast, reference)
    check_index(fast)
