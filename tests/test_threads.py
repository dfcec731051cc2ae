"""A distributor shared between threads: calls run one at a time, the books stay exact.

Several threads assign and release at once, with the interpreter switching
threads as often as it can; a reader takes snapshots meanwhile. Every
snapshot and the final state must show remaining resources equal to
capacity minus what is placed, no node over its capacity, and no workload
placed twice.
"""
import random
import sys
import threading
from collections import Counter
from decimal import Decimal

import pytest

from pylighthouse import Distributor
from test_copies import build, strategy_names
from test_lifecycle import check_books

THREADS = 6
ROUNDS = 200
NODES = [{"name": f"n{i}", "resources": {"cpu": 8, "mem": Decimal("0.8")}} for i in range(6)]


def check_snapshot(snapshot):
    """A snapshot taken while threads work: each name once, no node beyond
    its capacity (these nodes have positive capacities only)."""
    names = Counter(item["workload"]["name"] for item in snapshot["placements"])
    assert not [name for name, count in names.items() if count > 1]
    for state in Distributor.from_dict(snapshot).node_states():
        assert all(Decimal(str(left)) >= 0 for left in state.remaining.values()), state


def worker(distributor, number, seed, errors, placed):
    generator = random.Random(seed)
    mine = []
    try:
        for round_ in range(ROUNDS):
            batch = [{"name": f"t{number}-{round_}-{i}",
                      "requirements": {"cpu": 1, "mem": Decimal("0.1")},
                      "aversion_groups": [generator.choice("abc")]}
                     for i in range(generator.randint(1, 3))]
            result = distributor.attempt_assign_loads(
                batch, all_or_nothing=generator.random() < 0.3)
            mine.extend(name for name, node in result.items() if node is not None)
            if mine and generator.random() < 0.6:
                gone = generator.sample(mine, generator.randint(1, len(mine)))
                distributor.release_loads(gone)
                mine = [name for name in mine if name not in gone]
    except BaseException as error:  # reported to the test's thread
        errors.append(error)
    placed[number] = mine


@pytest.mark.parametrize("strategy", strategy_names())
def test_threads_sharing_a_distributor_keep_the_books_exact(strategy):
    distributor = build(strategy, NODES, {"cpu": 1, "mem": 10})
    errors, placed, snapshots = [], {}, []
    stop = threading.Event()

    def reader():
        try:
            while not stop.is_set():
                snapshots.append(distributor.to_dict())
                distributor.explain({"name": "probe", "requirements": {"cpu": 1}})
                distributor.utilization()
        except BaseException as error:  # ("dictionary changed size during iteration"...)
            errors.append(error)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=worker, args=(distributor, number, number,
                                                         errors, placed))
                   for number in range(THREADS)]
        watcher = threading.Thread(target=reader)
        watcher.start()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        stop.set()
        watcher.join()
    finally:
        sys.setswitchinterval(interval)
    assert not errors
    for snapshot in snapshots[::max(1, len(snapshots) // 20)] + [distributor.to_dict()]:
        check_snapshot(snapshot)
    check_books(distributor)
    # What each thread believes it holds is exactly what is placed.
    expected = sorted(name for names in placed.values() for name in names)
    assert sorted(distributor.assignments) == expected
    for state in distributor.node_states():
        count = len(state.workloads)
        assert state.remaining == {"cpu": 8 - count,
                                   "mem": float(Decimal("0.8") - count * Decimal("0.1"))}


def test_planners_hold_the_distributors_lock_while_they_read_it(monkeypatch):
    from pylighthouse import plan_scale_down, plan_scale_up
    distributor = build("Prioritized", NODES)
    distributor.attempt_assign_loads([{"name": "w", "requirements": {"cpu": 1}}])
    held = []
    real = type(distributor).to_dict

    def watched(self):
        held.append(distributor._lock._is_owned())
        return real(self)
    monkeypatch.setattr(type(distributor), "to_dict", watched)
    plan_scale_up(distributor, [{"name": "p", "requirements": {"cpu": 9}}],
                  {"resources": {"cpu": 16, "mem": 1}})
    plan_scale_down(distributor)
    assert held and all(held)


def test_room_score_holds_the_distributors_lock():
    # (the one public method without it: it read a failing all-or-nothing
    # call's trial placements, and wrote BestFit's per-node records under
    # another call's feet)
    from pylighthouse import BestFitDistributor
    distributor = BestFitDistributor(NODES)
    held = []
    real = BestFitDistributor._room

    def watched(self, slot, changed=None):
        held.append(distributor._lock._is_owned())
        return real(self, slot, changed)
    BestFitDistributor._room = watched
    try:
        distributor.room_score(NODES[0]["name"])
    finally:
        BestFitDistributor._room = real
    assert held and all(held)
