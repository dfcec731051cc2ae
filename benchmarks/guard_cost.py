"""What the distributor's guard costs a call when no other thread holds it.

Every public method of a distributor runs under its lock, in the exact
decimal context, and a changing one keeps a journal to undo itself. This
measures, for a few cheap calls, the method as users call it against the
same method without its guard (``method.__wrapped__``), in alternating
paired rounds in one process, and prints the median difference per call.
It also times a bare ``with threading.RLock():`` for scale.

Run from the repository root::

    python benchmarks/guard_cost.py            # about 20 seconds
    python benchmarks/guard_cost.py --rounds 41
"""
import argparse
import os
import statistics
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE)]

import pylighthouse as lighthouse  # noqa: E402


def per_call(function, calls):
    start = time.perf_counter()
    for _ in range(calls):
        function()
    return (time.perf_counter() - start) / calls


def cases():
    nodes = [{"name": f"n{i}", "resources": {"cpu": 8, "mem": 32}} for i in range(100)]
    distributor = lighthouse.PrioritizedDistributor.from_list(nodes)
    load = lighthouse.Workload("w", {"cpu": 1, "mem": 1})
    cls = type(distributor)
    placing = [load]

    def assign_release(method_assign, method_release):
        def run():
            method_assign(distributor, placing)
            method_release(distributor, ["w"])
        return run

    guarded_pair = assign_release(cls.attempt_assign_loads, cls.release_loads)
    bare_pair = assign_release(cls.attempt_assign_loads.__wrapped__,
                               cls.release_loads.__wrapped__)
    return {
        "node_state (reading)": (lambda: distributor.node_state("n5"),
                                 lambda: cls.node_state.__wrapped__(distributor, "n5")),
        "cordon (changing)": (lambda: distributor.cordon("n5"),
                              lambda: cls.cordon.__wrapped__(distributor, "n5")),
        "assign + release one workload (two changing calls)": (guarded_pair, bare_pair),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--calls", type=int, default=20000)
    options = parser.parse_args()
    lock = threading.RLock()

    def locked():
        with lock:
            pass
    bare_lock = statistics.median(per_call(locked, options.calls)
                                  for _ in range(options.rounds))
    print(f"with threading.RLock(): pass            {bare_lock * 1e9:8.0f} ns")
    for name, (guarded, bare) in cases().items():
        differences, plain = [], []
        for round_ in range(options.rounds):
            pair = [(guarded, 1), (bare, -1)]
            if round_ % 2:
                pair.reverse()
            times = {sign: per_call(function, options.calls) for function, sign in pair}
            differences.append(times[1] - times[-1])
            plain.append(times[-1])
        print(f"{name:45s} guard {statistics.median(differences) * 1e9:6.0f} ns "
              f"on {statistics.median(plain) * 1e9:7.0f} ns unguarded")


if __name__ == "__main__":
    main()
