"""Cost of small calls: workloads placed a few at a time on a cluster already in use.

A distributor of the mix's nodes first takes half of the mix's workloads
in one call; then the next workloads arrive in calls of a few (as they do
through the HTTP endpoint or an elastic manager), and the script prints
the time per workload, per strategy and call size. Run::

    python benchmarks/calls.py --sizes 1000x10000 10000x100000 --calls 1 10 100

A strategy whose calls cost something per node of the cluster (rather
than per workload) shows it here as a cost per workload that grows with
the cluster and shrinks with the call size.
"""
import argparse
import gc
import os
import sys
import time
from typing import Any, Dict, List, Sequence

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), HERE]

import mixes  # noqa: E402
from matrix import STRATEGIES, build  # noqa: E402

#: Workloads placed in small calls, after the first half.
PLACED = 3000


def measure(mix: str, strategy: str, size: str, call: int,
            placed: int = PLACED) -> Dict[str, Any]:
    """Microseconds per workload of ``placed`` workloads in calls of ``call``."""
    node_count, workload_count = mixes.size_of(size)
    nodes, workloads = mixes.problem(mix, node_count, workload_count)
    half = len(workloads) // 2
    distributor = build(strategy, nodes)
    distributor.attempt_assign_loads(workloads[:half])
    rest = workloads[half:half + placed]
    gc.collect()
    start = time.process_time()
    for at in range(0, len(rest), call):
        distributor.attempt_assign_loads(rest[at:at + call])
    seconds = time.process_time() - start
    return {"mix": mix, "strategy": strategy, "size": size, "call": call,
            "us_per_workload": 1e6 * seconds / max(1, len(rest))}


def table(rows: Sequence[Dict[str, Any]]) -> str:
    head = ("mix", "size", "call", "strategy", "us/workload")
    lines = [" | ".join(head), " | ".join("---" for _ in head)]
    for row in rows:
        lines.append(" | ".join([row["mix"], row["size"], str(row["call"]), row["strategy"],
                                 f"{row['us_per_workload']:,.1f}"]))
    return "\n".join(lines)


def main(argv: Sequence[str] = ()) -> List[Dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=["1000x10000", "10000x100000"])
    parser.add_argument("--calls", nargs="+", type=int, default=[1, 10, 100])
    parser.add_argument("--mixes", nargs="+", default=["types", "all"])
    parser.add_argument("--strategies", nargs="+", default=list(STRATEGIES))
    parser.add_argument("--placed", type=int, default=PLACED)
    args = parser.parse_args(list(argv))
    rows = [measure(mix, strategy, size, call, args.placed)
            for mix in args.mixes for size in args.sizes for call in args.calls
            for strategy in args.strategies]
    print(table(rows))
    return rows


if __name__ == "__main__":
    main(sys.argv[1:])
