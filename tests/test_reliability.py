"""A call completes or changes nothing, whatever is raised inside it; the fuzz findings.

Failures are injected into the node index and into the distributor's own
steps at every possible point of every changing call: the distributor must
then be exactly as before (its snapshot) and decide exactly like an
untouched copy afterwards. The other tests pin each hostile input found by
fuzzing to the library's own error.
"""
import decimal
from decimal import Decimal
from math import inf

import pytest

from pylighthouse import (BestFitDistributor, Distributor, InvalidInputError, InvalidTypeError,
                          LighthouseException, Node, PrioritizedDistributor, Workload,
                          check_fit, plan_scale_down, plan_scale_up)
from pylighthouse.errors import SHOWN_LIMIT
from pylighthouse.fit import reason_of
from test_copies import build, strategy_names


class Injected(Exception):
    """The failure the tests plant inside a call."""


def busy(strategy):
    distributor = build(strategy, [
        {"name": "a", "resources": {"cpu": 4, "mem": 4, "gpu": 1}},
        {"name": "b", "resources": {"cpu": 4, "mem": 4}},
        {"name": "c", "resources": {"cpu": 2, "mem": 2, "spiders": "-inf"}},
        {"name": "d", "resources": {"cpu": 8, "mem": 1}}])
    distributor.attempt_assign_loads([
        {"name": "w1", "requirements": {"cpu": 1, "mem": 1}, "aversion_groups": ["g"]},
        {"name": "w2", "requirements": {"cpu": 1, "mem": 1}, "aversion_groups": ["g"]},
        {"name": "w3", "requirements": {"cpu": 1, "gpu": 1}},
        {"name": "w4", "requirements": {"cpu": 2}}])
    distributor.cordon("d")
    return distributor


def loads(prefix, count=4):
    return [{"name": f"{prefix}{i}", "requirements": {"cpu": 1, "mem": 0.5},
             "aversion_groups": ["g"]} for i in range(count)]


def node_of(distributor, workload):
    return distributor.assignments[workload]


CALLS = {
    "assign": lambda d: d.attempt_assign_loads(loads("x")),
    "all_or_nothing": lambda d: d.attempt_assign_loads(loads("x"), all_or_nothing=True),
    # (an immune workload leaves its node with less than no cpu)
    "overdraw": lambda d: d.attempt_assign_loads(
        [{"name": "over", "requirements": {"cpu": 6}, "immunities": ["cpu"]}] + loads("x")),
    "all_or_nothing_failing": lambda d: d.attempt_assign_loads(
        loads("x") + [{"name": "huge", "requirements": {"cpu": 100}}], all_or_nothing=True),
    "release": lambda d: d.release_loads(["w1", "w3", "w4"]),
    "add": lambda d: d.add_nodes([{"name": "e", "resources": {"cpu": 1}},
                                  {"name": "f", "resources": {"cpu": 9, "mem": 9}}]),
    "record_running": lambda d: d.record_running("b", loads("r", 3)),
    "cordon": lambda d: d.cordon("a"),
    "uncordon": lambda d: d.uncordon("d"),
    "drain": lambda d: d.drain(node_of(d, "w1")),
    "remove": lambda d: d.remove_nodes(sorted({node_of(d, "w1"), node_of(d, "w4"), "b"})),
}

#: What is run after a rolled-back call, on it and on an untouched copy.
AFTERWARDS = [lambda d: d.attempt_assign_loads(loads("y", 6)),
              lambda d: d.release_loads(["w2"]),
              lambda d: d.drain("a"),
              lambda d: d.uncordon("d"),
              lambda d: d.attempt_assign_loads(loads("z", 6) + [
                  {"name": "z-gpu", "requirements": {"gpu": 1}}]),
              lambda d: d.remove_nodes(["b"])]


def fail_at(count):
    """A function that raises :class:`Injected` on its ``count``-th call."""
    calls = [0]

    def tick():
        calls[0] += 1
        if calls[0] == count:
            raise Injected(f"call {count}")
    return tick, calls


def planting(target, names, tick):
    """Wrap the methods ``names`` of ``target`` so that each call ticks first,
    then half-way (after the real work) ticks again."""
    for name in names:
        original = getattr(target, name)

        def wrapped(*args, _original=original, **kwargs):
            tick()
            result = _original(*args, **kwargs)
            tick()
            return result
        setattr(target, name, wrapped)


INDEX_METHODS = ("add", "remove", "changed", "cordoned", "touched", "grouped", "first_fit",
                 "rank")
OWN_STEPS = ("_placed", "_joined", "_leaving", "_choose", "_sequence", "_memento")


def check_rolls_back(strategy, call, plant):
    """Fail ``call`` at its 1st, 2nd... inner step until it completes."""
    for count in range(1, 400):
        distributor = busy(strategy)
        before = distributor.to_dict()
        untouched = Distributor.from_dict(before)
        tick, calls = fail_at(count)
        plant(distributor, tick)
        context = decimal.getcontext()
        try:
            CALLS[call](distributor)
        except Injected:
            # (and the caller's decimal context is back: a failure while the
            # call made its journal left the library's own in place)
            assert decimal.getcontext() is context, (call, count)
        else:
            assert calls[0] < count  # it completed: every step has been failed once
            return count - 1
        finally:
            for name in list(vars(distributor)):
                if name in INDEX_METHODS + OWN_STEPS:
                    delattr(distributor, name)
        assert distributor.to_dict() == before, (call, count)
        assert distributor.node_states() == untouched.node_states()
        # (and what the distributor counts of them: its resources below zero)
        assert all(slot.below == {key for key, left in slot.remaining.items() if left < 0}
                   for slot in distributor._slots.values()), (call, count)
        for step in AFTERWARDS:
            assert step(distributor) == step(untouched), (call, count)
            assert distributor.to_dict() == untouched.to_dict()
    raise AssertionError("the call never completed")


def plant_in_index(distributor, tick):
    index = distributor._index
    if index is None:
        pytest.skip("no index")
    # (On the instance: a rebuilt index after a roll-back has none.)
    planting(index, [name for name in INDEX_METHODS if hasattr(index, name)], tick)


def plant_in_own_steps(distributor, tick):
    planting(distributor, OWN_STEPS, tick)


@pytest.mark.parametrize("call", CALLS)
@pytest.mark.parametrize("strategy", strategy_names())
def test_a_failure_inside_the_index_is_rolled_back(strategy, call):
    check_rolls_back(strategy, call, plant_in_index)


@pytest.mark.parametrize("call", CALLS)
@pytest.mark.parametrize("strategy", strategy_names())
def test_a_failure_inside_the_distributor_is_rolled_back(strategy, call):
    steps = check_rolls_back(strategy, call, plant_in_own_steps)
    assert steps >= 0


def test_bestfit_forgets_what_it_kept_of_an_undone_call():
    # (BestFit keeps, per node name, the number that breaks ties in join
    # order and what it counted of the node; an undone call left a removed
    # node a new number, so it lost ties it won, and an added node's
    # counts behind, so a later node of that name was scored as the first)
    both = [{"name": "n1", "resources": {"cpu": 4}}, {"name": "n2", "resources": {"cpu": 4}}]
    distributor, untouched = BestFitDistributor(both), BestFitDistributor(both)

    def interrupted(loads, all_or_nothing):  # (placing the removed node's workloads)
        raise Injected("remove")
    distributor._assign = interrupted
    with pytest.raises(Injected):
        distributor.remove_nodes(["n1"])
    del distributor._assign
    probe = [{"name": "w", "requirements": {"cpu": 1}}]
    assert distributor.attempt_assign_loads(probe) == untouched.attempt_assign_loads(probe) \
        == {"w": "n1"}

    one = [{"name": "a", "resources": {"cpu": 4, "mem": 4}}]
    distributor, untouched = BestFitDistributor(one), BestFitDistributor(one)
    joined = distributor._joined

    def interrupted_join(slot):
        joined(slot)
        raise Injected("add")
    distributor._joined = interrupted_join
    with pytest.raises(Injected):
        distributor.add_nodes([{"name": "x", "resources": {"cpu": 1, "tag": 0, "ward": -inf}}])
    del distributor._joined
    assert distributor.to_dict() == untouched.to_dict()
    for each in (distributor, untouched):
        each.add_nodes([{"name": "x", "resources": {"cpu": 1, "mem": 1}}])
    assert distributor.room_score("x") == untouched.room_score("x") == 2
    probe = [{"name": "w", "requirements": {"cpu": 1, "mem": 1}}]
    assert distributor.attempt_assign_loads(probe) == untouched.attempt_assign_loads(probe) \
        == {"w": "a"}


def test_a_failed_fit_check_during_record_running_changes_nothing(monkeypatch):
    distributor = busy("Prioritized")
    before = distributor.to_dict()
    real = reason_of
    seen = []

    def failing(remaining, workload):
        seen.append(workload.name)
        if len(seen) == 2:
            raise MemoryError("planted")
        return real(remaining, workload)
    monkeypatch.setattr("pylighthouse.distributors.reason_of", failing)
    with pytest.raises(MemoryError):
        distributor.record_running("b", loads("r", 3))
    assert distributor.to_dict() == before


# ------------------------------------------------------------ the findings

def test_a_subnormal_float_is_refused_before_anything_is_placed():
    distributor = PrioritizedDistributor.from_list(
        Node.from_list([{"name": "n", "resources": {"a": 1, "b": 1, "c": 1}}]))
    with pytest.raises(InvalidInputError, match=r"'bad'.*'c'.*out of range"):
        distributor.attempt_assign_loads(
            [{"name": "good", "requirements": {"a": 0.5}},
             {"name": "bad", "requirements": {"a": 0.1, "b": 0.1, "c": 5e-324}}],
            all_or_nothing=True)
    assert distributor.assignments == {}


@pytest.mark.parametrize("value", [Decimal("1e-999999999999999999"), Decimal("1e999999999"),
                                   Decimal("1e301"), Decimal("1.5e-300"), 10 ** 301,
                                   10 ** 5000, 1e-310, Decimal("-1e999999999")],
                         ids=["tiny", "huge", "1e301", "places", "int-301", "int-5000",
                              "subnormal", "minus-huge"])
def test_quantities_out_of_range_are_refused_everywhere(value):
    with pytest.raises(InvalidInputError, match="out of range"):
        Node("n", {"cpu": value})
    with pytest.raises(InvalidInputError, match="out of range"):
        Workload("w", {"cpu": value})
    distributor = PrioritizedDistributor.from_list([Node("n", {"cpu": 1, "mem": 1})])
    with pytest.raises(InvalidInputError, match="out of range"):
        distributor.attempt_assign_loads(
            [{"name": "w", "requirements": {"mem": 1, "cpu": value}}])
    assert distributor.node_state("n").remaining == {"cpu": 1, "mem": 1}
    snapshot = distributor.to_dict()
    snapshot["nodes"][0]["resources"]["cpu"] = str(Decimal(value))
    with pytest.raises(InvalidInputError, match="out of range"):
        Distributor.from_dict(snapshot)


@pytest.mark.parametrize("value, expected", [
    (Decimal("1e300"), Decimal("1e300")), (Decimal("1e-300"), Decimal("1e-300")),
    (Decimal("0E-999999999"), Decimal(0)), (1e-300, Decimal("1e-300")), (-0.0, Decimal(0))])
def test_quantities_at_the_ends_of_the_range_are_kept(value, expected):
    node = Node("n", {"cpu": value})
    assert node.resources["cpu"] == expected
    assert node.resources["cpu"].as_tuple().exponent >= -300
    assert Node.from_dict(node.to_dict()) == node
    repr(node)


def test_numpy_scalars_convert_exactly_or_are_refused():
    np = pytest.importorskip("numpy")
    node = Node("n", {"a": np.float64(0.1), "b": np.int64(7), "c": np.float32(0.5),
                      "d": np.float32(0.1), "e": np.float16(0.25), "f": np.float32("-inf"),
                      "g": np.int8(-3), "h": np.uint64(2 ** 63)})
    assert node.resources == {"a": Decimal("0.1"), "b": 7, "c": Decimal("0.5"),
                              "d": Decimal("0.1"), "e": Decimal("0.25"),
                              "f": Decimal("-Infinity"), "g": -3, "h": 2 ** 63}
    for bad in (np.float32("nan"), np.float64("nan")):
        with pytest.raises(InvalidInputError, match="NaN"):
            Workload("w", {"cpu": bad})
    with pytest.raises(InvalidInputError, match="finite"):
        Workload("w", {"cpu": np.float32("inf")})
    with pytest.raises(InvalidTypeError):
        Workload("w", {"cpu": np.bool_(True)})
    distributor = PrioritizedDistributor.from_list([Node("n", {
        "b": np.int64(7), "c": np.float32(0.5)})])
    assert distributor.attempt_assign_loads(
        [{"name": "w", "requirements": {"c": np.float32(0.25), "b": np.int64(7)}}]) == {"w": "n"}
    assert distributor.node_state("n").remaining["c"] == 0.25


def test_an_odd_real_that_cannot_be_read_exactly_is_refused():
    import numbers

    class Odd:
        def __float__(self):
            return 1 / 3

        def __str__(self):
            return "one third"

        def __eq__(self, other):
            return False
    numbers.Real.register(Odd)
    with pytest.raises(InvalidInputError, match="cannot be read exactly"):
        Node("n", {"cpu": Odd()})


@pytest.mark.parametrize("name", [10 ** 5000, "x" * 10_000_000, ["x"] * 100_000],
                         ids=["long-int", "long-str", "long-list"])
def test_messages_stay_short_whatever_the_value(name):
    for make in (lambda: Node(name, {"cpu": "x"}), lambda: Workload(name, {"cpu": None}),
                 lambda: Node("n", {"cpu": name}), lambda: Workload("w", {"cpu": name}),
                 lambda: Workload("w", {}, immunities=[name, 1]),
                 lambda: PrioritizedDistributor.from_list([]).release_loads([name]),
                 lambda: PrioritizedDistributor.from_list([]).cordon(name)):
        with pytest.raises(LighthouseException) as caught:
            make()
        assert len(str(caught.value)) < 4 * SHOWN_LIMIT + 100


def test_a_snapshot_placement_needing_a_missing_resource_is_an_input_error():
    snapshot = PrioritizedDistributor.from_list([Node("n", {"cpu": 1})]).to_dict()
    snapshot["placements"] = [{"node": "n", "workload": {"name": "w",
                                                         "requirements": {"gpu": 1}}}]
    with pytest.raises(InvalidInputError, match=r"placements\[0\].*'gpu'.*'n'"):
        Distributor.from_dict(snapshot)


@pytest.mark.parametrize("strategy", [["Prioritized"], {"a": 1}, None, 1.5])
def test_a_snapshot_with_an_odd_strategy_is_an_input_error(strategy):
    snapshot = PrioritizedDistributor.from_list([]).to_dict()
    snapshot["strategy"] = strategy
    with pytest.raises(InvalidInputError, match="strategy"):
        Distributor.from_dict(snapshot)


def test_planners_and_check_fit_refuse_what_is_not_theirs():
    with pytest.raises(InvalidTypeError, match="distributor"):
        plan_scale_up(None, [], {"resources": {"cpu": 1}})
    with pytest.raises(InvalidTypeError, match="distributor"):
        plan_scale_down({"nodes": []})
    with pytest.raises(InvalidTypeError, match="workload"):
        check_fit(None, None)
    with pytest.raises(InvalidTypeError, match="remaining"):
        check_fit(None, Workload("w", {"cpu": 1}))
    with pytest.raises(InvalidTypeError, match="remaining"):
        check_fit({"cpu": "x"}, Workload("w", {"cpu": 1}))


def test_arithmetic_ignores_the_callers_decimal_context():
    def session():
        distributor = PrioritizedDistributor.from_list(
            [Node("n", {"cpu": Decimal("1234567.891"), "mem": 0.3}),
             Node("m", {"cpu": 2, "mem": 0.3})])
        results = [distributor.attempt_assign_loads(
            [{"name": f"w{i}", "requirements": {"cpu": Decimal("0.001"), "mem": 0.1}}
             for i in range(4)])]
        results.append(distributor.release_loads(["w1"]))
        results.append(distributor.node_states())
        results.append(distributor.utilization())
        results.append(str(distributor.explain({"name": "x", "requirements": {"cpu": 5}})))
        plan = plan_scale_up(distributor, [{"name": "p", "requirements": {"cpu": 3}}],
                             [{"name": "t", "resources": {"cpu": 3}, "cost": Decimal("1.001")},
                              {"name": "u", "resources": {"cpu": 4},
                               "cost": Decimal("1.0001")}])
        results.append(plan.to_dict())
        results.append(plan_scale_down(distributor).to_dict())
        results.append(distributor.to_dict())
        results.append(Distributor.from_dict(distributor.to_dict()).to_dict())
        return results

    expected = session()
    with decimal.localcontext(decimal.Context(
            prec=3, traps=[decimal.Inexact, decimal.Rounded, decimal.InvalidOperation])):
        assert session() == expected


def test_a_rubric_scores_plain_numbers_and_refuses_what_is_not():
    from pylighthouse import BinPackDistributor
    distributor = BinPackDistributor.from_list({"cpu": 1, "mem": 0.5},
                                               [{"name": "a", "resources": {"cpu": 1.5,
                                                                            "mem": 2}}])
    remaining = distributor.node_state("a").remaining  # plain numbers
    assert distributor.rubric.score(remaining) == Decimal("2.5")
    with pytest.raises(InvalidTypeError, match=r"quantities\['cpu'\]"):
        distributor.rubric.score({"cpu": "x"})
    with pytest.raises(InvalidTypeError, match="quantities"):
        distributor.rubric.score(None)
    # (exact quantities are read too: a bool counted 1, NaN scored NaN and
    # a signalling NaN raised decimal's own error)
    with pytest.raises(InvalidTypeError, match=r"quantities\['cpu'\]: expected a number, "
                                               "got bool True"):
        distributor.rubric.score({"cpu": True})
    for nan in (Decimal("NaN"), Decimal("sNaN")):
        for read in (distributor.rubric.score, distributor.rubric.relevant,
                     lambda quantities: distributor.rubric.sort_key(quantities, "n")):
            with pytest.raises(InvalidInputError, match=r"quantities\['cpu'\]: NaN is not"):
                read({"cpu": nan})
    with pytest.raises(InvalidTypeError, match=r"quantities\['cpu'\]: expected a number"):
        distributor.rubric.sort_key({"cpu": True}, "n")
    assert distributor.rubric.sort_key({"cpu": 2, "mem": Decimal(1)}, "n") == \
        (0, Decimal("2.5"), "n")
    # (a node state beyond the input range, which a workload asking less
    # than zero may leave, scores as BinPack orders the node by)
    giving = BinPackDistributor.from_list({"cpu": 1, "mem": 1}, [
        {"name": "n", "resources": {"cpu": Decimal("1e300"), "mem": 1}}])
    giving.attempt_assign_loads([{"name": "g", "requirements": {"cpu": -1e300, "mem": 0.5}}])
    assert giving.rubric.score(giving.node_state("n").remaining) == \
        Decimal(f"{2 * 10 ** 300}.5")


class CallingBack(str):
    """A resource name whose ``__hash__`` runs ``then`` (the caller's code
    that a call runs, calling the same distributor) after ``after`` hashes."""

    after = None
    then = None

    def __hash__(self):
        if CallingBack.after is not None:
            CallingBack.after -= 1
            if CallingBack.after == 0:
                CallingBack.then()
        return str.__hash__(self)

    def __eq__(self, other):
        return str.__eq__(self, other)


@pytest.mark.parametrize("strategy", strategy_names())
@pytest.mark.parametrize("inner", ["release", "to_dict", "explain"])
def test_a_call_from_inside_a_change_is_refused_and_changes_nothing(strategy, inner):
    # (the nested release gave back resources the outer call's undo then
    # lost: 3 cpu gone for good; a nested read failed with a bare KeyError)
    from pylighthouse import ReentrantCallError
    # (a name of its own: requirement maps equal to one read before are
    # shared, and would come with that one's plain keys)
    distributor = build(strategy, [{"name": "n", "resources": {"cpu": 8, "calls-back": 1}},
                                   {"name": "m", "resources": {"cpu": 8, "calls-back": 1}}])
    distributor.attempt_assign_loads([
        {"name": "a", "requirements": {"cpu": 2, CallingBack("calls-back"): 1}},
        {"name": "b", "requirements": {"cpu": 3}}])
    before = distributor.to_dict()
    shown = []
    calls = {"release": lambda: distributor.release_loads(["b"]),
             "to_dict": distributor.to_dict,
             "explain": lambda: distributor.explain({"name": "x", "requirements": {"cpu": 1}})}
    CallingBack.then = lambda: (shown.append(repr(distributor)), calls[inner]())
    refused = 0
    try:
        # (the inner call made at each hash of the name in turn, until the
        # release hashes it fewer times than that)
        for after in range(1, 1000):
            CallingBack.after = after
            try:
                distributor.release_loads(["a"])
            except ReentrantCallError as error:
                assert "called from inside another call that changes" in str(error)
                assert distributor.to_dict() == before
                refused += 1
            else:
                assert CallingBack.after > 0  # (it was never made)
                break
    finally:
        CallingBack.after = CallingBack.then = None
    assert refused > 0
    assert shown and all(text.startswith("<") for text in shown)  # (a repr is no call)
    assert distributor.to_dict() != before  # (the last, undisturbed, release went through)
    assert distributor.node_state("n").remaining["cpu"] + \
        distributor.node_state("m").remaining["cpu"] == 13


def test_a_change_from_inside_a_read_is_refused_and_reads_may_nest():
    from pylighthouse import ReentrantCallError
    distributor = PrioritizedDistributor.from_list([{"name": "n", "resources": {
        "cpu": 8, CallingBack("calls-back-too"): 1}}])
    distributor.attempt_assign_loads([{"name": "a", "requirements": {"cpu": 2}}])
    before = distributor.to_dict()
    other = PrioritizedDistributor.from_list([{"name": "o", "resources": {"cpu": 1}}])
    seen = []
    try:
        CallingBack.then = lambda: seen.append((distributor.assignments, other.attempt_assign_loads(
            [{"name": "x", "requirements": {"cpu": 1}}])))
        CallingBack.after = 1
        assert distributor.to_dict() == before
        assert seen == [({"a": "n"}, {"x": "o"})]  # (a read, and another distributor: fine)
        CallingBack.then = lambda: distributor.release_loads(["a"])
        CallingBack.after = 1
        with pytest.raises(ReentrantCallError, match="another call that reads"):
            distributor.to_dict()
    finally:
        CallingBack.after = CallingBack.then = None
    assert distributor.to_dict() == before


@pytest.mark.parametrize("strategy", strategy_names())
def test_arguments_given_as_generators_may_read_the_distributor(strategy):
    # (they are read before the call changes anything, as they always were;
    # the re-entry guard first refused them)
    distributor = build(strategy, [{"name": "a", "resources": {"cpu": 8}},
                                   {"name": "b", "resources": {"cpu": 8}}])
    distributor.attempt_assign_loads([{"name": name, "requirements": {"cpu": 1}}
                                      for name in ("w1", "w2")])
    where = distributor.assignments
    assert distributor.release_loads(
        name for name in ["w1", "gone"] if name in distributor.assignments) == {
        "w1": where["w1"]}
    assert list(distributor.attempt_assign_loads(
        {"name": name, "requirements": {"cpu": 1}} for name in ["x1", "w2", "w1"]
        if name not in distributor.assignments)) == ["x1", "w1"]
    busy = set(distributor.assignments.values())
    assert distributor.remove_nodes(
        name for name in ["a", "b"] if name not in distributor.assignments.values()) == {}
    assert {node.name for node in distributor.nodes} == busy
    distributor.record_running("a", (
        {"name": f"r{len(distributor.assignments)}", "requirements": {"cpu": 1}}
        for _ in range(1)))
    assert sorted(distributor.assignments) == ["r3", "w1", "w2", "x1"]
    # (an object whose ``__iter__`` reads it, too)

    class Finished:
        def __iter__(self):
            return iter([name for name in ["w2"] if name in distributor.assignments])

    where = distributor.assignments
    assert distributor.release_loads(Finished()) == {"w2": where["w2"]}
    distributor.attempt_assign_loads([{"name": "w2", "requirements": {"cpu": 1}}])
    # (and one that changes it as it is read: that change is a call of its
    # own, made before)
    where = distributor.assignments
    assert distributor.release_loads(name for name in [
        distributor.release_loads(["x1"]) and "w1"]) == {"w1": where["w1"]}
    assert sorted(distributor.assignments) == ["r3", "w2"]
