"""Durability: a manager process killed with SIGKILL at random moments loses nothing.

Each round starts tests/elastic_crash_child.py on the same store and provider
file, lets it make random calls (submit, finish, manage_once, the provider's
revocation calls) for a random time, and kills it; now and then the child's
provider kills the process itself just before or after a create or delete,
the moments between the provider's change and the manager's save. The test then reopens the
store and checks: every acknowledged workload is placed or pending, once;
every finished one is gone; the distributor's books match its placements;
the provider holds no node the manager forgot; and the nodes the manager had
asked for are adopted as soon as the provider reports them ready.

PYLIGHTHOUSE_CRASH_KILLS sets the number of kills (default 6).
"""
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from elastic_checks import check_books, check_live, check_provider
from elastic_crash_child import MAX_NODES, provider_for
from pylighthouse.elastic import READY, ElasticManager

ROOT = Path(__file__).resolve().parent.parent
CHILD = Path(__file__).resolve().parent / "elastic_crash_child.py"
KILLS = int(os.environ.get("PYLIGHTHOUSE_CRASH_KILLS", "6"))


def read_log(path):
    """What the log says: acknowledged and uncertain workloads, and the call cut short."""
    submitted, acked, finishing, finished = set(), set(), set(), set()
    last = None
    for line in path.read_text().splitlines():
        words = line.split()
        if words[0] == "die":
            last = f"{last} ({words[1]})"
        elif words[0] == "begin":
            last = words[1]
            (submitted if words[1] == "submit" else finishing if words[1] == "finish"
             else set()).update(words[2:])
        elif words[0] == "end":
            last = None
            (acked if words[1] == "submit" else finished if words[1] == "finish"
             else set()).update(words[2:])
    return submitted, acked, finishing, finished, last


def wait_ready(log, process, limit=60.0):
    start = time.monotonic()
    while time.monotonic() - start < limit:
        if log.exists() and "ready" in log.read_text():
            return
        if process.poll() is not None:
            raise AssertionError(f"the child exited: {process.stderr.read()}")
        time.sleep(0.01)
    raise AssertionError("the child never became ready")


def test_sigkill_at_random_moments_loses_no_acknowledged_work(tmp_path):
    store, provider_file = str(tmp_path / "m.db"), str(tmp_path / "provider.json")
    log = tmp_path / "log.txt"
    rng = random.Random(19)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(CHILD.parent)]))
    interrupted, adopted, checked = {}, 0, 0
    for round_ in range(KILLS):
        process = subprocess.Popen(
            [sys.executable, str(CHILD), store, provider_file, str(log), str(rng.randrange(99)),
             f"r{round_}"], env=env, stderr=subprocess.PIPE, text=True)
        try:
            wait_ready(log, process)
            time.sleep(rng.uniform(0.05, 0.6))
        finally:
            process.send_signal(signal.SIGKILL)
            process.wait(30)
        submitted, acked, finishing, finished, last = read_log(log)
        interrupted[last] = interrupted.get(last, 0) + 1

        provider = provider_for(provider_file)
        manager = ElasticManager.open(store, provider)
        live = acked - finishing
        uncertain = (submitted - acked) | (finishing - finished)
        check_live(manager, live, maybe=uncertain)
        held = set(manager.pending) | set(manager.assignments)
        assert not (finished & held), f"finished workloads came back: {finished & held}"
        check_books(manager)
        check_provider(manager, provider, MAX_NODES)

        asked = set(manager.creating)
        manager.manage_once()
        for name in asked:
            if provider.held.get(name) == READY:
                assert name in manager.nodes, f"{name} is ready but was not adopted"
                adopted += 1
        check_live(manager, live, maybe=uncertain)
        check_books(manager)
        check_provider(manager, provider, MAX_NODES)
        assert set(provider.held) == set(manager.nodes) | set(manager.creating), \
            "the provider and the manager disagree on the nodes held"
        checked += 1
        # Settle the uncertain workloads for the next rounds: what the store
        # says is the truth from now on.
        log.write_text("".join(f"begin submit {name}\nend submit {name}\n"
                               for name in sorted(set(manager.pending)
                                                  | set(manager.assignments))))
        manager.close()
    assert checked == KILLS
    print(f"\nkills: {KILLS}, interrupted calls: {interrupted}, nodes adopted after a "
          f"crash: {adopted}")
