"""The garbage collector's pause (pylighthouse.collector) around the library's calls.

The collector is off while a call works, back on (if it was on) when the
call returns or raises, left alone when the caller had turned it off, and
the call ends with the collection the interpreter would have run next.
"""
import gc
import json
import sys
import threading
import weakref
from collections.abc import Mapping
from contextlib import contextmanager

import pytest

import pylighthouse as lighthouse
from pylighthouse.collector import paused
from pylighthouse.errors import DuplicateNameError
from pylighthouse.problem import load_problem, new_distributor, parse_json, solve


class Spy(Mapping):
    """A requirements (or resources) mapping that notes, each time the
    library reads it, whether the collector is on."""

    def __init__(self, values, seen):
        self._values, self._seen = dict(values), seen

    def __getitem__(self, key):
        return self._values[key]

    def __iter__(self):
        self._seen.append(gc.isenabled())
        return iter(self._values)

    def __len__(self):
        return len(self._values)

    def items(self):
        self._seen.append(gc.isenabled())
        return self._values.items()


#: The tests that watch collections need CPython's collector (its callbacks
#: and generation counts); PyPy's has neither.
cpython_collector = pytest.mark.skipif(not hasattr(gc, "callbacks"),
                                       reason="CPython's collector callbacks")


@pytest.fixture
def collector_on():
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def nodes(count=20):
    return [{"name": f"n{i}", "resources": {"cpu": 4, "mem": 8}} for i in range(count)]


def loads(count, seen, spy_at=-1):
    made = [{"name": f"w{i}", "requirements": {"cpu": 1, "mem": 1}} for i in range(count)]
    made[spy_at]["requirements"] = Spy({"cpu": 1, "mem": 1}, seen)
    return made


@pytest.mark.parametrize("strategy", ["Prioritized", "RoundRobin", "BinPack", "BestFit"])
def test_placing_pauses_the_collector_and_turns_it_back_on(collector_on, strategy):
    distributor = new_distributor(strategy, nodes(), {"cpu": 1, "mem": 1})
    seen = []
    result = distributor.attempt_assign_loads(loads(50, seen))
    assert seen and not any(seen)
    assert gc.isenabled()
    assert sum(node is not None for node in result.values()) == 50


def test_a_collector_the_caller_turned_off_stays_off(collector_on):
    distributor = lighthouse.PrioritizedDistributor(nodes())
    seen = []
    gc.disable()
    try:
        distributor.attempt_assign_loads(loads(10, seen))
        assert not gc.isenabled()
    finally:
        gc.enable()
    assert seen and not any(seen)


def test_a_call_that_raises_turns_the_collector_back_on_and_changes_nothing(collector_on):
    distributor = lighthouse.PrioritizedDistributor(nodes())
    before = distributor.node_states()
    seen = []
    batch = loads(30, seen, spy_at=10)
    batch[-1]["name"] = "w0"  # a duplicate name, found after the spy was read
    with pytest.raises(DuplicateNameError):
        distributor.attempt_assign_loads(batch)
    assert gc.isenabled()
    assert seen and not any(seen)
    assert distributor.node_states() == before
    assert distributor.assignments == {}


def test_building_and_solving_pause_it_too(collector_on):
    seen = []
    built = nodes()
    built[3]["resources"] = Spy({"cpu": 4, "mem": 8}, seen)
    lighthouse.PrioritizedDistributor(built)
    assert seen and not any(seen)
    assert gc.isenabled()

    seen.clear()
    problem = load_problem({"strategy": "Prioritized", "nodes": nodes(3),
                            "workloads": loads(2, seen)}, parsed=True)
    assert seen and not any(seen)
    assert gc.isenabled()
    outcome = solve(problem)
    assert gc.isenabled()
    assert set(outcome.assignments.values()) <= {"n0", "n1", "n2"}


def test_restoring_a_snapshot_pauses_it_too(collector_on):
    distributor = lighthouse.PrioritizedDistributor(nodes())
    distributor.attempt_assign_loads(loads(30, []))
    snapshot = distributor.to_dict()
    seen = []
    placed = snapshot["placements"][-1]["workload"]
    placed["requirements"] = Spy(placed["requirements"], seen)
    restored = lighthouse.Distributor.from_dict(snapshot)
    assert seen and not any(seen)
    assert gc.isenabled()
    assert restored.assignments == distributor.assignments


def test_calls_from_several_threads_leave_it_on(collector_on):
    errors = []

    def work(prefix):
        try:
            distributor = lighthouse.RoundRobinDistributor(nodes(40))
            for round_ in range(20):
                distributor.attempt_assign_loads(
                    [{"name": f"{prefix}-{round_}-{i}", "requirements": {"cpu": 0.01}}
                     for i in range(50)])
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(f"t{i}",)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert gc.isenabled()


@contextmanager
def collections_seen():
    """The collections that start inside the ``with`` block, after a full
    one before it: (generation, the names of the functions on the stack,
    innermost first) each."""
    seen = []

    def note(phase, info):
        if phase == "start":
            frame, names = sys._getframe(1), []
            while frame is not None:
                names.append(frame.f_code.co_name)
                frame = frame.f_back
            seen.append((info["generation"], names))

    gc.collect()
    gc.callbacks.append(note)
    try:
        yield seen
    finally:
        gc.callbacks.remove(note)


class Knot:
    """An object in a reference cycle: only the cyclic collector frees it."""

    def __init__(self):
        self.me = self


@cpython_collector
def test_the_pause_ends_with_the_collection_that_was_due(collector_on):
    with collections_seen() as seen:
        with paused():
            assert not gc.isenabled()
            knot = Knot()
            watch = weakref.ref(knot)
            del knot
            kept = [[] for _ in range(gc.get_threshold()[0] * 3)]  # young containers
            assert watch() is not None  # nothing collected inside
    assert gc.isenabled()
    assert watch() is None  # the collection due at the end freed the cycle
    # ... and it ran as the pause ended, not at some later allocation
    assert seen and "paused" in seen[0][1]
    del kept


@cpython_collector
def test_a_pause_with_nothing_due_collects_nothing(collector_on):
    with collections_seen() as seen:
        with paused():
            pass
    assert seen == []
    assert gc.isenabled()


def test_a_pause_inside_a_pause_leaves_the_outer_one_in_charge(collector_on):
    with paused():
        with paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


@cpython_collector
def test_reading_a_large_json_problem_collects_once_at_the_end(collector_on):
    text = json.dumps({"strategy": "Prioritized", "nodes": nodes(5),
                       "workloads": [{"name": f"w{i}", "requirements": {"cpu": 1}}
                                     for i in range(20 * gc.get_threshold()[0])]})
    with collections_seen() as seen:
        data = parse_json(text)
    assert len(data["workloads"]) == 20 * gc.get_threshold()[0]
    assert len(seen) == 1  # not one per few hundred objects made
    assert gc.isenabled()


def test_a_collector_without_generation_counts_is_left_to_its_own_rule(collector_on, monkeypatch):
    # PyPy's gc module has no get_count: the pause still turns the collector
    # off and back on, and placing works.
    monkeypatch.delattr(gc, "get_count", raising=False)
    distributor = lighthouse.PrioritizedDistributor.from_list(nodes(2))
    inside = []
    with paused():
        inside.append(gc.isenabled())
    assert inside == [False] and gc.isenabled()
    assert distributor.attempt_assign_loads(
        [{"name": "w", "requirements": {"cpu": 1}}]) == {"w": "n0"}


@pytest.mark.parametrize("strategy", ["Prioritized", "RoundRobin", "BinPack", "BestFit"])
def test_an_interrupt_during_the_last_collection_turns_the_collector_back_on(
        collector_on, monkeypatch, strategy):
    # (a KeyboardInterrupt can land while the call collects its garbage: the
    # collector stayed off for good, and the work, done by then, was undone
    # with the released workloads put back at the end of the placements)
    import pylighthouse.collector as collector
    distributor = new_distributor(strategy, nodes(2), {"cpu": 1, "mem": 1})
    distributor.attempt_assign_loads([{"name": name, "requirements": {"cpu": 1}}
                                      for name in "abcd"])
    twin = lighthouse.Distributor.from_dict(distributor.to_dict())
    twin.release_loads(["a", "b"])

    def interrupted():
        raise KeyboardInterrupt

    monkeypatch.setattr(collector, "_catch_up", interrupted)
    with pytest.raises(KeyboardInterrupt):
        distributor.release_loads(["a", "b"])
    assert gc.isenabled()
    monkeypatch.undo()
    # (the work was done: it stays, whole, as if the interrupt came on return)
    assert list(distributor.assignments) == ["c", "d"]
    assert distributor.to_dict() == twin.to_dict()
    monkeypatch.setattr(collector, "_catch_up", interrupted)
    with pytest.raises(KeyboardInterrupt):
        with paused():
            pass
    assert gc.isenabled()
