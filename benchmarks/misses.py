"""Cost of the workloads a run leaves out, against those it places, search by search.

The matrix times fresh workloads that fit nowhere on the state a run
leaves. The workloads a run itself leaves out are another matter: each
asked for something the cluster had, just not together on one node (a
device, cpu and memory), and its search had to prove that. This script
places a mix's workloads in one call, as the matrix does, and times every
search of the call: it wraps the distributor's private search hook
(``_choose``), so it belongs here, beside the benchmarks, not in the
library's interface. Run::

    python benchmarks/misses.py --sizes 1000x10000 5000x50000 10000x100000 --mixes kinds

Per mix, size and strategy it prints how many searches found a node and
how many found none, the microseconds of each on average, and their
ratio; and the microseconds of putting a found workload on its node
(the distributor's ``_place``: its records and the node index brought up
to date), and the ratio of a miss to a whole successful placement (its
search and its putting). BestFit searches a call once or twice more in another order (see
:class:`~pylighthouse.BestFitDistributor`): every search of every order
counts.
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


def measure(mix: str, strategy: str, size: str) -> Dict[str, Any]:
    """Searches that found a node and that found none in one call placing
    the mix's workloads, with their average cost in microseconds."""
    node_count, workload_count = mixes.size_of(size)
    nodes, workloads = mixes.problem(mix, node_count, workload_count)
    distributor = build(strategy, nodes)
    choose = distributor._choose
    totals = {True: [0, 0.0], False: [0, 0.0]}
    clock = time.perf_counter

    def timed(*args: Any) -> Any:
        start = clock()
        found = choose(*args)
        spent = clock() - start
        total = totals[found is not None]
        total[0] += 1
        total[1] += spent
        return found

    place = distributor._place
    placing = [0, 0.0]

    def timed_place(*args: Any) -> Any:
        start = clock()
        place(*args)
        placing[0] += 1
        placing[1] += clock() - start

    distributor._choose = timed  # type: ignore[method-assign]
    distributor._place = timed_place  # type: ignore[method-assign]
    gc.collect()
    distributor.attempt_assign_loads(workloads)
    (found, found_s), (missed, missed_s) = totals[True], totals[False]
    found_us = 1e6 * found_s / found if found else 0.0
    missed_us = 1e6 * missed_s / missed if missed else 0.0
    place_us = 1e6 * placing[1] / placing[0] if placing[0] else 0.0
    return {"mix": mix, "strategy": strategy, "size": size, "found": found,
            "missed": missed, "found_us": found_us, "missed_us": missed_us,
            "place_us": place_us,
            "ratio": missed_us / found_us if found and missed else None,
            "to_placement": missed_us / (found_us + place_us) if found and missed else None}


def table(rows: Sequence[Dict[str, Any]]) -> str:
    head = ("mix", "size", "strategy", "found", "missed", "us found", "us missed",
            "us placing", "missed / found", "missed / placement")
    lines = [" | ".join(head), " | ".join("---" for _ in head)]
    for row in rows:
        ratios = ["-" if row[key] is None else f"{row[key]:.2f}"
                  for key in ("ratio", "to_placement")]
        lines.append(" | ".join([row["mix"], row["size"], row["strategy"],
                                 f"{row['found']:,}", f"{row['missed']:,}",
                                 f"{row['found_us']:,.1f}", f"{row['missed_us']:,.1f}",
                                 f"{row['place_us']:,.1f}"] + ratios))
    return "\n".join(lines)


def main(argv: Sequence[str] = ()) -> List[Dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=["1000x10000", "10000x100000"])
    parser.add_argument("--mixes", nargs="+", default=["kinds", "over", "all"])
    parser.add_argument("--strategies", nargs="+", default=list(STRATEGIES))
    args = parser.parse_args(list(argv))
    rows = [measure(mix, strategy, size)
            for mix in args.mixes for size in args.sizes for strategy in args.strategies]
    print(table(rows))
    return rows


if __name__ == "__main__":
    main(sys.argv[1:])
