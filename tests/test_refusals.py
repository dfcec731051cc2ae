"""The index's memory of refusals: a block that refused a requirement vector
refuses it again until one of its nodes gains room, joins it, is uncordoned
or loses an aversion group."""
from decimal import Decimal
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pylighthouse import BestFitDistributor
from pylighthouse.fit import takes
from pylighthouse.index import blocks
from pylighthouse.index import floors as index_floors
from pylighthouse.index import nodes as index_nodes
from pylighthouse.index.blocks import NodeClass
from pylighthouse.index.search import first_in_class, refusing_run
from reference import Reference
from reference_bestfit import BestFitReference
from test_differential import assert_same_state, run, run_reference
from test_index import check_index, floors_of, make, settings_of

STRATEGIES = st.sampled_from(["Prioritized", "RoundRobin", "BinPack"])

#: Blocks of two nodes (load 2), in Prioritized order: in each block but the
#: last, one node is short of disk and the other of cpu and memory, so the
#: block's bounds pass a vector that none of its nodes takes.
NODES = [
    {"name": f"n{at}", "resources": {"cpu": cpu, "mem": cpu, "disk": disk}}
    for at, (cpu, disk) in enumerate([(5, 1), (1, 5), (5, 2), (1, 5), (5, 3), (1, 5),
                                      (9, 9), (9, 9)])]


def load(name, cpu, mem, groups=(), disk=0):
    return {"name": name, "requirements": {"cpu": cpu, "mem": mem, "disk": disk},
            "aversion_groups": list(groups)}


def recording(second=True):
    """Patch NodeClass.refused to record, per call, the vector asked for and
    the blocks known to refuse it at that moment (before the search).
    ``second``: every vector counts as searched for once already, so that
    its first search in the test makes its record (what a record does,
    whenever it is made); else records are made as usual, from a vector's
    second search on."""
    calls = []
    real = NodeClass.refused

    def refused(nodes, shape, needed, keep=False):
        if second and (shape, needed) not in nodes.refusals:
            nodes.seen.add((shape, needed))
        found = real(nodes, shape, needed, keep)
        # (a search reads no stamp of a record no search wrote: the scratch
        # record, emptied, keeps the last search's writes)
        known = [at for at, (stamp, version) in enumerate(zip(found.stamps, nodes.versions))
                 if stamp == version] if found.stamped else []
        calls.append((tuple(float(value) for value in needed), known))
        return found

    return calls, mock.patch.object(NodeClass, "refused", refused)


def test_the_same_vector_starts_from_the_blocks_that_refused_it():
    fast = make("Prioritized", NODES, {}, True, 2)
    reference = Reference("Prioritized", NODES, {})
    calls, patch = recording()
    with patch:
        for batch in ([load("a", 2, 1, disk=3)], [load("v", 2, 2, disk=3)],
                      [load("b", 2, 1, disk=3)]):
            assert fast.attempt_assign_loads(batch) == reference.assign(batch)
    assert fast.assignments == {"a": "n4", "v": "n6", "b": "n6"}
    # a (2, 1, 3) was refused by blocks 0 and 1; v (2, 2, 3), larger but
    # new, starts knowing nothing (and block 2 refuses it: n4 is short of
    # disk now); b, equal to a, starts knowing that blocks 0 and 1 refuse it.
    assert calls[1] == ((2.0, 2.0, 3.0), [])
    assert calls[-1] == ((2.0, 1.0, 3.0), [0, 1])
    check_index(fast)


def test_a_vector_gets_its_own_record_at_its_second_search():
    fast = make("Prioritized", NODES, {}, True, 2)
    reference = Reference("Prioritized", NODES, {})
    calls, patch = recording(second=False)
    with patch:
        for batch in ([load("a", 2, 1, disk=3)], [load("b", 2, 1, disk=3)],
                      [load("c", 2, 1, disk=3)], [load("d", 2, 1, disk=3)]):
            assert fast.attempt_assign_loads(batch) == reference.assign(batch)
            assert_same_state(fast, reference)
    assert fast.assignments == {"a": "n4", "b": "n6", "c": "n6", "d": "n6"}
    # a's search wrote a scratch record, forgotten: b starts knowing
    # nothing, and its search makes the vector's record (blocks 0 to 2
    # refused b: n4 is short of disk after a), which c and d start from.
    assert calls == [((2.0, 1.0, 3.0), []), ((2.0, 1.0, 3.0), []),
                     ((2.0, 1.0, 3.0), [0, 1, 2]), ((2.0, 1.0, 3.0), [0, 1, 2])]
    check_index(fast)


def test_vectors_searched_once_are_remembered_up_to_a_limit(monkeypatch):
    monkeypatch.setattr("pylighthouse.index.blocks.MAX_SEEN", 2)
    fast = make("Prioritized", NODES, {}, True, 2)
    reference = Reference("Prioritized", NODES, {})
    nodes = fast._index._classes[frozenset()]
    key = (("cpu", "mem", "disk"), frozenset()), (2, 1, 3)
    # a, then two other vectors: the memory of a's search is cleared by
    # the second of them, so b's search counts as the vector's first.
    for batch in ([load("a", 2, 1, disk=3)], [load("u", 1, 1, disk=1)],
                  [load("v", 1, 2, disk=1)], [load("b", 2, 1, disk=3)]):
        assert fast.attempt_assign_loads(batch) == reference.assign(batch)
        assert_same_state(fast, reference)
    assert key not in nodes.refusals
    batch = [load("c", 2, 1, disk=3)]
    assert fast.attempt_assign_loads(batch) == reference.assign(batch)
    assert key in nodes.refusals
    assert_same_state(fast, reference)
    check_index(fast)


def test_a_vector_smaller_in_one_resource_inherits_nothing():
    fast = make("Prioritized", NODES, {}, True, 2)
    calls, patch = recording()
    with patch:
        assert fast.attempt_assign_loads([load("u", 2, 1, disk=3)]) == {"u": "n4"}
        # (1, 1, 3) is below (2, 1, 3) in cpu: n1, in block 0, takes it
        assert fast.attempt_assign_loads([load("w", 1, 1, disk=3)]) == {"w": "n1"}
    assert calls[0] == ((2.0, 1.0, 3.0), [])
    assert calls[1] == ((1.0, 1.0, 3.0), [])
    check_index(fast)


def decide_like_the_reference(nodes, steps, block=2, second=True):
    """Run ``steps`` on the index and the reference, comparing every answer
    and state; the index's assignments at the end (``second``: see
    :func:`recording`). Floors are left to the library (unused in such
    small classes): these steps are about what the records do."""
    fast = make("Prioritized", nodes, {}, True, block, floors="library")
    reference = Reference("Prioritized", nodes, {})
    calls, patch = recording(second)
    with patch:
        for step in steps:
            assert run(step, fast) == run_reference(step, reference), step
            assert_same_state(fast, reference)
    check_index(fast)
    return fast.assignments, calls


def test_a_refusal_is_forgotten_when_a_node_gains_room():
    assignments, calls = decide_like_the_reference(NODES, [
        ("assign", [load("a", 2, 1, disk=3)]),   # n4, after blocks 0 and 1
        ("assign", [load("b", 2, 1, disk=3)]),   # block 2 refuses too now: n6
        ("release", ["a"]),                      # n4, in block 2, gains room
        ("assign", [load("c", 2, 1, disk=3)])])  # equal to b, yet n4
    assert assignments == {"b": "n6", "c": "n4"}
    assert calls[-1] == ((2.0, 1.0, 3.0), [0, 1])  # block 2 no longer


def test_a_refusal_is_forgotten_when_a_node_joins_the_block():
    nodes = [{"name": f"j{at}", "resources": {"cpu": cpu, "mem": cpu, "disk": disk}}
             for at, (cpu, disk) in enumerate([(5, 1), (1, 5), (5, 1), (1, 5)])]
    # blocks of at most three: [j0, j1, j2], [j3]; m joins the second
    assignments, calls = decide_like_the_reference(nodes, [
        ("assign", [load("a", 2, 1, disk=3)]),  # refused by both blocks
        ("add", [{"name": "m", "resources": {"cpu": 5, "mem": 5, "disk": 5}}]),
        ("assign", [load("b", 2, 1, disk=3)])], block=3)
    assert assignments == {"b": "m"}
    assert calls[-1] == ((2.0, 1.0, 3.0), [0])


def test_a_refusal_is_forgotten_when_a_node_is_uncordoned():
    assignments, calls = decide_like_the_reference(NODES, [
        ("cordon", "n4"),
        ("assign", [load("a", 2, 1, disk=3)]),  # blocks 0 to 2 refuse: n6
        ("uncordon", "n4"),
        ("assign", [load("b", 2, 1, disk=3)])])
    assert assignments == {"a": "n6", "b": "n4"}
    assert calls[-1] == ((2.0, 1.0, 3.0), [0, 1])


def test_a_refusal_is_forgotten_when_a_node_loses_a_group():
    assignments, calls = decide_like_the_reference(NODES, [
        ("assign", [load("a", 0, 0, ["g"])]),            # n0
        ("assign", [load("b", 2, 1, ["g"], disk=1)]),    # n0 averse, n1 short: n2
        ("release", ["a"]),                              # n0 loses the group
        ("assign", [load("c", 2, 1, ["g"], disk=1)])])  # equal to b, yet n0
    assert assignments == {"b": "n2", "c": "n0"}
    # (with groups, then the same vector without: neither knows block 0 now)
    assert calls[-2:] == [((2.0, 1.0, 1.0), []), ((2.0, 1.0, 1.0), [])]


#: Blocks of two: in the first, one node is short of memory and the other of
#: cpu; the second takes anything; the last node alone has a gpu.
SPLIT = [{"name": name, "resources": {"cpu": cpu, "mem": mem, **extra}}
         for name, cpu, mem, extra in [("m0", 4, 1, {}), ("m1", 1, 4, {}), ("m2", 4, 4, {}),
                                       ("m3", 4, 4, {}), ("m4", 1, 1, {"gpu": 1})]]
#: A workload of group x that only the node with the gpu takes: once it is
#: placed, workloads of group x search avoiding nodes of the group.
ON_THE_SIDE = {"name": "side", "requirements": {"gpu": 1}, "aversion_groups": ["x"]}


def two(name, cpu, mem, groups=()):
    return {"name": name, "requirements": {"cpu": cpu, "mem": mem},
            "aversion_groups": list(groups)}


@pytest.mark.parametrize("second", [True, False])
def test_a_grouped_search_teaches_the_same_vector_without_groups(second):
    # (also when neither vector was searched for before: a grouped search
    # keeps the record of the vector without groups from the first)
    assignments, calls = decide_like_the_reference(SPLIT, [
        ("assign", [ON_THE_SIDE]),            # m4
        ("assign", [two("g", 2, 2, ["x"])]),  # block 0 refuses it, no node averse: m2
        ("assign", [two("p", 2, 2)])],        # the same vector without groups
        second=second)
    assert assignments == {"side": "m4", "g": "m2", "p": "m2"}
    # g's search asked for its vector with and without groups; p starts
    # knowing that block 0 refuses it, from g's search
    assert calls[-3:] == [((2.0, 2.0), []), ((2.0, 2.0), []), ((2.0, 2.0), [0])]


def test_a_grouped_search_passed_over_an_averse_node_teaches_nothing():
    nodes = [{"name": name, "resources": {"cpu": cpu, "mem": mem}}
             for name, cpu, mem in [("m0", 4, 4), ("m1", 1, 1), ("m2", 4, 4), ("m3", 4, 4)]]
    assignments, calls = decide_like_the_reference(nodes, [
        ("assign", [two("h", 1, 1, ["x"])]),  # m0
        ("assign", [two("g", 2, 2, ["x"])]),  # m0 averse, m1 short: m2
        ("assign", [two("p", 2, 2)])])        # m0 takes it: block 0 did not refuse
    assert assignments == {"h": "m0", "g": "m2", "p": "m0"}
    assert calls[-1] == ((2.0, 2.0), [])


def test_a_grouped_search_passes_the_blocks_that_refuse_its_vector_without_groups():
    # m0's cpu and the workloads' have the same float: the sieve lets m0
    # through, and only the fit rule turns it away
    nodes = [{"name": name, "resources": {"cpu": cpu, "mem": 4}}
             for name, cpu in [("m0", Decimal("2.0000000000000000001")), ("m1", 1),
                               ("m2", 4), ("m3", 4)]]
    nodes.append({"name": "m4", "resources": {"cpu": 1, "mem": 1, "gpu": 1}})
    cpu = Decimal("2.0000000000000000002")
    fast = make("Prioritized", nodes, {}, True, 2)
    reference = Reference("Prioritized", nodes, {})
    assert fast.attempt_assign_loads([ON_THE_SIDE]) == reference.assign([ON_THE_SIDE])
    calls, patch = recording()
    with patch, mock.patch("pylighthouse.index.search.takes", side_effect=takes) as asked:
        for batch in ([two("p", cpu, 2)], [two("g", cpu, 2, ["x"])]):
            asked.reset_mock()
            assert fast.attempt_assign_loads(batch) == reference.assign(batch)
            assert_same_state(fast, reference)
            names = {id(slot.remaining): name for name, slot in fast._slots.items()}
            asked_of = [names[id(call.args[0])] for call in asked.call_args_list]
            assert asked_of == (["m0", "m2"] if batch[0]["name"] == "p" else ["m2", "m3"])
    # the grouped vector is new, but the same vector without groups is known
    # to be refused by block 0: g's search does not look inside it
    assert calls == [((2.0, 2.0), []), ((2.0, 2.0), []), ((2.0, 2.0), [0])]
    assert fast.assignments == {"side": "m4", "p": "m2", "g": "m3"}
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
@given(strategy=STRATEGIES, sizes=CLUSTER, steps=STEPS, block=st.sampled_from([1, 2, 3]),
       small=st.booleans(), floors=st.sampled_from(["eager", "cached", "lazy"]))
def test_distinct_vectors_decide_like_the_reference(strategy, sizes, steps, block, small,
                                                    floors):
    """Workloads each with its own decimal quantities (some with a third
    resource, some with aversion groups), between releases, new nodes,
    cordons, drains and removals: the same decisions as the reference.
    ``small``: a class keeps at most two records and remembers at most two
    vectors searched once, and the index keeps the plan (and floors) of one
    shape, so all are cleared again and again. ``floors``: see
    :data:`test_index.FLOORS`."""
    limits = {"MAX_REFUSED": 2, "MAX_SEEN": 2} if small else \
        {"MAX_REFUSED": blocks.MAX_REFUSED, "MAX_SEEN": blocks.MAX_SEEN}
    with mock.patch.multiple(blocks, **limits), \
            mock.patch.object(index_nodes, "MAX_SHAPES", 1 if small else index_nodes.MAX_SHAPES):
        decide_distinct(strategy, sizes, steps, block, floors)


def decide_distinct(strategy, sizes, steps, block, floors="eager"):
    nodes = [{"name": f"n{at}", "resources": {"cpu": cpu / 10, "mem": mem / 10, "disk": 2}}
             for at, (cpu, mem) in enumerate(sizes)]
    rubric = {"cpu": 1, "mem": 0.5}
    fast = make(strategy, nodes, rubric, True, block, floors=floors)
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


@settings(max_examples=100, deadline=None, derandomize=True)
@given(strategy=st.sampled_from(["BinPack", "BestFit"]), sizes=CLUSTER,
       calls=st.lists(st.lists(st.tuples(QUANTITY, QUANTITY, st.booleans()),
                               min_size=1, max_size=10), min_size=1, max_size=6),
       block=st.sampled_from([1, 2, 3]))
def test_nodes_that_move_to_another_block_decide_like_the_reference(strategy, sizes, calls,
                                                                    block):
    """Nodes re-ranked by their room move between blocks (of one to three
    nodes), taking their columns along: decisions stay the reference's, also
    for workloads immune to a resource they ask for (a node short of it
    still takes them)."""
    nodes = [{"name": f"n{at}", "resources": {"cpu": cpu / 10, "mem": mem / 10}}
             for at, (cpu, mem) in enumerate(sizes)]
    if strategy == "BinPack":
        fast = make(strategy, nodes, {"cpu": 1, "mem": 0.5}, True, block)
        reference = Reference(strategy, nodes, {"cpu": 1, "mem": 0.5})
    else:
        with settings_of(True, block):
            fast = BestFitDistributor.from_list(nodes)
        reference = BestFitReference(nodes)
    made = 0
    for loads in calls:
        batch = []
        for cpu, mem, immune in loads:
            batch.append({"name": f"w{made}", "requirements": {"cpu": cpu, "mem": mem},
                          "immunities": ["mem"] if immune else []})
            made += 1
        assert fast.attempt_assign_loads(batch) == reference.assign(batch)
        assert_same_state(fast, reference)
    check_index(fast)


#: Three blocks of two small nodes, then two large nodes (load 2).
FRONT = [{"name": f"n{at}", "resources": {"cpu": 2, "mem": 2} if at < 6 else
          {"cpu": 8, "mem": 8}} for at in range(8)]


def skips():
    """Patch the search to record, per call, the ``skip`` it was given (the
    blocks known to refuse its workload through the shape's floor)."""
    given = []
    real = first_in_class

    def search(*args):
        given.append(args[9] if len(args) > 9 else 0)  # (skip, after refused)
        return real(*args)

    return given, mock.patch.object(index_nodes, "first_in_class", search)


def test_a_new_vector_starts_after_the_blocks_refusing_its_shapes_floor():
    # (joint columns as in the library: none in so small a class, so the
    # shape's plan entry, which keeps its floor, stands throughout)
    fast = make("Prioritized", FRONT, {}, True, 2, joint="adaptive", floors="eager")
    reference = Reference("Prioritized", FRONT, {})
    given, patch = skips()
    nodes = fast._index._classes[frozenset()]
    shape = (("cpu", "mem"), frozenset())

    def floor_now():
        return dict(floors_of(fast._index, nodes))[shape]

    def place(name, cpu, mem):
        batch = [two(name, Decimal(cpu), Decimal(mem))]
        answer = fast.attempt_assign_loads(batch)
        assert answer == reference.assign(batch)
        assert_same_state(fast, reference)
        check_index(fast)
        return answer[name]

    with patch:
        # Six equal workloads fill the six small nodes: the floor is their
        # vector, and the first search found its run empty.
        assert fast.attempt_assign_loads([two(f"w{at}", 2, 2) for at in range(6)]) == \
            reference.assign([two(f"w{at}", 2, 2) for at in range(6)])
        assert given[0] == 0 and floor_now().needed == (2, 2)
        # A new vector, smaller: the floor is made again at its quantities,
        # its run is the three full blocks, and the search starts after them.
        assert place("a", "1.5", "1.5") == "n6"
        assert given[-1] == 3 and floor_now().needed == (Decimal("1.5"),) * 2
        # A larger new vector keeps the floor and its run.
        floor = floor_now()
        assert place("b", "1.7", "1.6") == "n6"
        assert given[-1] == 3 and floor_now() is floor
        # One smaller in one quantity lowers the floor in that one only.
        assert place("c", "0.5", "3") == "n6"
        assert given[-1] == 3
        assert floor_now().needed == (Decimal("0.5"), Decimal("1.5"))
        # A node of the first block gains room: the run is found again, empty.
        fast.release_loads(["w0"])
        reference.release(["w0"])
        assert place("d", "1.1", "1.1") == "n0"
        assert given[-1] == 0
    # (a vector searched before starts from its own record, not the floor)
    with patch:
        assert place("e", "1.1", "1.1") == "n6" and given[-1] == 0


def test_floors_wait_in_small_classes_and_after_short_runs():
    calls = []
    real = refusing_run

    def counted(*args):
        calls.append(real(*args))
        return calls[-1]

    fresh = iter(range(1, 1000))

    def place(distributor, reference):
        cpu = Decimal(next(fresh)) / 1000
        batch = [two(f"w{cpu}", cpu, cpu)]
        assert distributor.attempt_assign_loads(batch) == reference.assign(batch)

    with mock.patch.object(index_floors, "refusing_run", counted):
        # The library's policy: a class of four blocks uses no floor.
        fast = make("Prioritized", FRONT, {}, True, 2, floors="library")
        reference = Reference("Prioritized", FRONT, {})
        for _ in range(5):
            place(fast, reference)
        assert calls == []
        # Floors in every class, a run extended at every search, but a run
        # under two blocks sets them aside for three searches of new vectors.
        with mock.patch.multiple(index_floors, FLOOR_BLOCKS=0, FLOOR_PERIOD=1,
                                 FLOOR_LEAST=2, FLOOR_IDLE=3):
            fast = make("Prioritized", FRONT, {}, True, 2, floors="library")
        reference = Reference("Prioritized", FRONT, {})
        for _ in range(9):
            place(fast, reference)
        assert calls == [0, 0, 0]  # searches 1, 5 and 9
        check_index(fast)


def test_a_floor_run_read_back_is_found_again_once_a_block_leaves():
    """A node leaving empties its block, and the blocks after it move up
    one place without any block changing: the run kept is no longer the
    same blocks, and is found again."""
    nodes = [{"name": f"n{at}", "resources": {"cpu": 8 if at == 3 else 1}} for at in range(4)]
    with mock.patch.multiple(index_floors, FLOOR_BLOCKS=0, FLOOR_PERIOD=16, FLOOR_LEAST=0,
                             FLOOR_IDLE=0):
        fast = make("Prioritized", nodes, {}, True, 1, joint="adaptive", floors="library")
    reference = Reference("Prioritized", nodes, {})
    given, patch = skips()

    def step(operation):
        assert run(operation, fast) == run_reference(operation, reference), operation
        assert_same_state(fast, reference)
        check_index(fast)

    with patch:
        step(("assign", [{"name": f"w{at}", "requirements": {"cpu": 1}} for at in range(3)]))
        step(("assign", [{"name": "a", "requirements": {"cpu": Decimal("0.5")}}]))
        assert fast.assignments["a"] == "n3" and given[-1] == 3  # (n0 to n2 are full)
        step(("remove", ["n1"]))  # (its workload goes to n3)
        step(("assign", [{"name": "b", "requirements": {"cpu": Decimal("0.6")}}]))
    assert fast.assignments["b"] == "n3" and given[-1] == 2
