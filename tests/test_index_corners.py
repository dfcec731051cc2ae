"""Corners of the node index that the random lifecycles of ``test_index``
seldom reach, each driven on purpose and checked against the reference.

Every test here makes a cluster whose shape leads the index into one
particular branch (a spy counts that it was taken, so a change that stops
the test reaching it fails the test), then checks every decision and the
state against the reference reading of SPEC.md, and the index's
invariants (``check_index``), at every step.
"""
import random
from contextlib import ExitStack, contextmanager
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from pylighthouse.index import derived, plans, search
from pylighthouse.index import floors as floors_module
from pylighthouse.index import nodes as index_nodes
from pylighthouse.index.columns import JointColumn
from instances import RUBRICS, clusters, operations
from test_copies import COPIERS
from test_differential import assert_same_state, run, run_reference
from test_index import (FLOORS, GROUPING, JOINT, SPARSE, check_index, every_limit_tiny, make,
                        reference_of, steps_both)

RUBRIC = {"cpu": 1, "mem": 0.25, "gpu": 4}


def wraps_counting(function, seen):
    """``function`` (or a method, ``seen`` then given ``self`` first),
    appending what ``seen(*args)`` says of each call to the ``seen`` list
    it carries."""
    def counting(*args, **kwargs):
        counting.seen.append(seen(*args))
        return function(*args, **kwargs)

    counting.seen = []
    return counting


def lifecycle(fast, reference, rng, rounds, workload, node=None, every=4, prefix="r"):
    """``rounds`` batches of one to ten workloads drawn by ``workload(rng,
    name)``, with, every ``every`` rounds, some workloads released, a node
    cordoned or uncordoned and, given ``node(rng, name)``, a node or two
    added (names begin with ``prefix``); every decision and the state as
    the reference's, and the index checked, at each step."""
    def step(operation):
        assert run(operation, fast) == run_reference(operation, reference), operation
        assert_same_state(fast, reference)

    for round_ in range(rounds):
        step(("assign", [workload(rng, f"{prefix}{round_}w{at}")
                         for at in range(rng.randint(1, 10))]))
        if round_ % every == every - 1:
            placed = sorted(reference.assignments())
            step(("release", rng.sample(placed, len(placed) // 3)))
            names = [machine.name for machine in reference.machines]
            step((rng.choice(["cordon", "uncordon"]), rng.choice(names)))
            if node is not None:
                step(("add", [node(rng, f"{prefix}{round_}n{at}")
                              for at in range(rng.randint(1, 2))]))
        check_index(fast)


# ------------------------------------------- masked columns kept sparse


def test_joint_columns_dropped_with_sparse_masked_columns():
    """Where nodes move at every placement, a resource few nodes have is
    sieved on its masked column (its quantity and the joint columns' two
    resources at once), which is sparse where the resource is; joint
    columns made on trial and dropped drop the masked columns with
    them, sparse ones included, from every block."""
    rng = random.Random(7)

    def node(rng, name):
        resources = {"cpu": rng.choice([2, 4, 8]), "mem": rng.choice([4, 8, 16])}
        if rng.random() < 0.25:
            resources["gpu"] = rng.choice([1, 2])
        return {"name": name, "resources": resources}

    def workload(rng, name):
        requirements = {"cpu": rng.choice([0.5, 1, 2]), "mem": rng.choice([1, 2, 4])}
        if rng.random() < 0.4:
            requirements["gpu"] = 1
        return {"name": name, "requirements": requirements}

    def sparse_masked(self):
        return any(type(key) is JointColumn and key[0] == "masked" for key in self.sparse)

    nodes = [node(rng, f"n{at:02d}") for at in range(24)]
    for strategy in ("BinPack", "BestFit"):
        # (joint columns on trial for eight searches, then dropped unless the
        # blocks looked inside in vain halved)
        with mock.patch.multiple(plans, FEW=0, JOINT_WINDOW=8, JOINT_WASTE=0.0,
                                 JOINT_GAIN=float("inf"), JOINT_SIZE=0), \
                mock.patch.object(derived.DerivedColumns, "drop_joint", wraps_counting(
                    derived.DerivedColumns.drop_joint, sparse_masked)) as spy:
            fast = make(strategy, nodes, RUBRIC, True, 2, joint="adaptive", sparse=1)
            reference = reference_of(strategy, nodes, RUBRIC)
            lifecycle(fast, reference, rng, 40, workload, node)
        assert any(spy.seen), strategy


# ------------------------------------------- sets of kinds asked later on


def test_sets_of_kinds_noted_at_their_first_workload_decide_like_the_reference():
    """Where nodes keep their order, a set of kinds that many nodes have
    all of gets its list of those nodes from the search for its second
    workload on (``Entry.used_by``, see ``plans.FEW_NEW``): the search
    for the first workload notes it, in a record that starts afresh when
    full (``MAX_ASKED``, 1 here), and a search for that same workload
    again (RoundRobin's second span, from the first node) leaves the note
    as it is."""
    rng = random.Random(11)
    kinds = ("k1", "k2", "k3", "k4")

    def node(rng, name):
        resources = {"cpu": rng.choice([2, 4, 8]), "mem": 8}
        for kind in kinds:
            if rng.random() < 0.6:
                resources[kind] = rng.choice([1, 2, 3])
        return {"name": name, "resources": resources}

    def workload(rng, name):
        requirements = {"cpu": rng.choice([1, 2, 3]), "mem": 1}
        for kind in rng.sample(kinds, rng.choice([0, 2, 2, 3])):
            requirements[kind] = 1
        spec = {"name": name, "requirements": requirements}
        if rng.random() < 0.3:
            spec["aversion_groups"] = ["g"]
        return spec

    def noted(self, workload):
        asked = self.nodes.asked
        first = asked.get(self.later[0])
        return (first is None and len(asked) >= plans.MAX_ASKED, first == id(workload))

    nodes = [node(rng, f"n{at:02d}") for at in range(30)]
    for strategy in ("Prioritized", "RoundRobin"):
        with mock.patch.multiple(plans, FEW_KEPT=0, FEW_NEW=1, FEW_SETS=0, TOGETHER=0,
                                 MAX_ASKED=1), \
                mock.patch.object(plans.Entry, "used_by",
                                  wraps_counting(plans.Entry.used_by, noted)) as spy:
            fast = make(strategy, nodes, RUBRIC, True, 2)
            reference = reference_of(strategy, nodes, RUBRIC)
            lifecycle(fast, reference, rng, 40, workload, node)
        assert any(full for full, _ in spy.seen), strategy  # (the record started afresh)
        if strategy == "RoundRobin":
            assert any(again for _, again in spy.seen)  # (the same workload's second span)


# --------------------------------- floors over a column made sparse earlier


def test_floors_read_a_column_made_sparse_while_some_node_lacked_it():
    """A column made sparse while some node of the class lacked its
    resource stays sparse once that node left and every node has it; the
    shapes asking only for such resources then get floors (runs of blocks
    refusing them from the first), which read that column node by node:
    a block whose bounds pass with no single node meeting the sieve ends
    no run."""
    rng = random.Random(3)

    def node(rng, name, mem=True):
        resources = {"cpu": rng.choice([1, 2, 4, 8])}
        if mem:
            resources["mem"] = rng.choice([1, 2, 4, 8])
        return {"name": name, "resources": resources}

    def workload(rng, name):
        # (quantities of their own: most vectors are searched for once)
        return {"name": name, "requirements": {"cpu": rng.randint(1, 30) / 10,
                                               "mem": rng.randint(1, 30) / 10}}

    def by_node(nodes, sieve, refused):
        return any(key in nodes.sparse for key, _ in sieve[:search.NEAR])

    for strategy in ("Prioritized", "BinPack", "BestFit"):
        nodes = [node(rng, "odd", mem=False)] + [node(rng, f"n{at:02d}") for at in range(29)]
        with mock.patch.object(search, "refusing_run",
                               wraps_counting(search.refusing_run, by_node)) as spy, \
                mock.patch.object(floors_module, "refusing_run", spy), \
                mock.patch.multiple(plans, FEW=0, FEW_KEPT=0, SCAN_LIMIT=0):
            fast = make(strategy, nodes, RUBRIC, True, 2, floors="eager", sparse=1)
            reference = reference_of(strategy, nodes, RUBRIC)
            lifecycle(fast, reference, rng, 6, workload)  # (the mem column made, sparse)
            # (the node lacking mem leaves; one bringing a new name has the
            # plans made again: mem is on every node of the class now)
            for operation in (("remove", ["odd"]),
                              ("add", [{"name": "new", "resources": {"cpu": 4, "mem": 4,
                                                                     "disk": 10}}])):
                assert run(operation, fast) == run_reference(operation, reference)
            lifecycle(fast, reference, rng, 30, workload, node, prefix="s")
        assert any(spy.seen), strategy


# ------------------------- every feature, every resource searched by column


@contextmanager
def searched_by_column(few, together, scan=0, tiny=False):
    """The thresholds under which a resource that only some nodes have is
    tried node by node at ``few`` (``FEW``, ``FEW_KEPT``, ``FEW_ALL_KEPT``;
    ``SORTED_AT_SEARCH`` 0, ``FEW_NEW`` 1), ``TOGETHER`` ``together`` and
    ``SCAN_LIMIT`` ``scan``; with ``tiny``, every limit on what the index
    keeps at its least too."""
    with ExitStack() as stack:
        stack.enter_context(mock.patch.multiple(
            plans, FEW=few, FEW_KEPT=few, FEW_ALL_KEPT=few, TOGETHER=together,
            SCAN_LIMIT=scan, SCAN_TRIAL=2, FEW_NEW=1))
        stack.enter_context(mock.patch.object(index_nodes, "SORTED_AT_SEARCH", 0))
        if tiny:
            stack.enter_context(every_limit_tiny())
        yield


STRATEGY = st.sampled_from(["Prioritized", "RoundRobin", "BinPack", "BestFit"])


@settings(max_examples=300, deadline=None)
@given(strategy=STRATEGY, nodes=clusters(max_nodes=24), rubric=RUBRICS,
       steps=operations(max_steps=10), load=st.sampled_from([1, 2, 3, 8]),
       joint=st.sampled_from(sorted(JOINT)), floors=st.sampled_from(sorted(FLOORS)),
       sparse=SPARSE, grouping=st.sampled_from(sorted(GROUPING)),
       few=st.sampled_from([0, 1, 3]), together=st.sampled_from([0, 2]),
       scan=st.sampled_from([0, 2]), denials=st.sampled_from([None, 1, "library"]),
       tiny=st.booleans())
def test_resources_few_nodes_have_searched_by_column_decide_like_the_reference(
        strategy, nodes, rubric, steps, load, joint, floors, sparse, grouping, few, together,
        scan, denials, tiny):
    """The random lifecycles of ``test_index`` (every feature: immunities,
    shortcomings, wards, infinite and negative quantities, tags, groups),
    but with the thresholds under which a resource that only some nodes
    have is tried node by node at their least: on clusters this small,
    those resources are otherwise never searched by column (their columns,
    masked, sparse and set columns, the kinds kept last, the resources
    asked for and immune to, the lists of nodes having them all)."""
    with searched_by_column(few, together, scan, tiny):
        fast = make(strategy, nodes, rubric, True, load, joint, floors, sparse, grouping,
                    denials)
        steps_both(fast, reference_of(strategy, nodes, rubric), steps)


@settings(max_examples=150, deadline=None)
@given(strategy=STRATEGY, nodes=clusters(max_nodes=30), rubric=RUBRICS,
       before=operations(max_steps=6, prefix="b"), after=operations(max_steps=8, prefix="a"),
       load=st.sampled_from([1, 2, 8]), joint=st.sampled_from(sorted(JOINT)),
       sparse=SPARSE, few=st.sampled_from([0, 3]), together=st.sampled_from([0, 2]),
       resource=st.sampled_from(["mem", "disk", "gpu", "ssd", "slots", "flies", "spiders"]))
def test_the_nodes_lacking_a_resource_leaving_decide_like_the_reference(
        strategy, nodes, rubric, before, after, load, joint, sparse, few, together, resource):
    """As above, with every node lacking ``resource`` removed part-way (if
    some node has it): a resource some nodes of a class lacked, whose
    columns were made so (sparse, masked, kept last), is then on every
    node, and joint columns and floors may take it up."""
    with searched_by_column(few, together):
        fast = make(strategy, nodes, rubric, True, load, joint, "eager", sparse)
        reference = reference_of(strategy, nodes, rubric)
        steps_both(fast, reference, before)
        lacking = [state.name for state in fast.node_states() if resource not in state.remaining]
        if 0 < len(lacking) < len(reference.machines):
            operation = ("remove", lacking)
            assert run(operation, fast) == run_reference(operation, reference)
            assert_same_state(fast, reference)
        steps_both(fast, reference, after)


@settings(max_examples=150, deadline=None)
@given(strategy=STRATEGY, nodes=clusters(max_nodes=24), rubric=RUBRICS,
       steps=operations(max_steps=10), load=st.sampled_from([1, 2, 8]),
       joint=st.sampled_from(sorted(JOINT)), sparse=SPARSE, few=st.sampled_from([0, 3, 32]),
       copies=st.lists(st.sampled_from(["dict", None] + sorted(COPIERS)),
                       min_size=10, max_size=10))
def test_copies_and_snapshots_go_on_like_the_reference(strategy, nodes, rubric, steps, load,
                                                       joint, sparse, few, copies):
    """As above, the distributor replaced after each step by its snapshot
    made again (``to_dict``, ``from_dict``), a pickled copy, a copy or a
    deep copy: each builds or copies the index with the columns the other
    had, and goes on deciding as the reference."""
    with searched_by_column(few, 0):
        fast = make(strategy, nodes, rubric, True, load, joint, "eager", sparse)
        reference = reference_of(strategy, nodes, rubric)
        for step, how in zip(steps, copies):
            steps_both(fast, reference, [step])
            if how == "dict":
                fast = type(fast).from_dict(fast.to_dict())
            elif how is not None:
                fast = COPIERS[how](fast)
            assert_same_state(fast, reference)
