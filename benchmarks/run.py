"""Benchmark every strategy on seeded problems; print a table (and write JSON).

Run from the repository root::

    python benchmarks/run.py            # the full suite (several minutes)
    python benchmarks/run.py --quick    # a smoke run (well under a minute)
    python benchmarks/run.py --sizes 1000x10000 5000x50000 --repeat 5
    python benchmarks/run.py --growth 1000x10000 10000x100000

Figures per strategy and size: workloads placed per second end to end (from
the dicts to the result, validation included; median of ``--repeat`` runs),
the share placed, the peak memory traced while placing (tracemalloc, beyond
the input dicts, per workload), a churn loop (release 10% at random, place as
many new ones), draining 1% of the nodes one by one and removing another 1%
in one call. On sizes small enough (``--reference-limit``), the reference
reading of SPEC.md in ``tests/reference.py`` runs the same placement, its
speed and the ratio are reported, and the decisions are checked identical.
With ``--reference-seconds``, a reference run that takes longer is stopped
and reported as a bound: slower than that, so the ratio is at least
so much (``>``), and the decisions are not compared.
"""
import argparse
import gc
import json
import os
import random
import signal
import statistics
import sys
import time
import tracemalloc
from typing import Any, Dict, List, Optional, Sequence

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), HERE, os.path.join(os.path.dirname(HERE), "tests")]

import problems  # noqa: E402
import pylighthouse as lighthouse  # noqa: E402

STRATEGIES = ("Prioritized", "RoundRobin", "BinPack", "BestFit")
FULL_SIZES = ("200x2000", "1000x10000", "5000x50000", "10000x100000", "over:5000x50000")
QUICK_SIZES = ("100x1000", "over:100x1000")


def build(strategy: str, nodes: List[Dict[str, Any]]) -> lighthouse.Distributor:
    if strategy == "BinPack":
        return lighthouse.BinPackDistributor(problems.RUBRIC, nodes)
    return lighthouse.distributors.distributor_class(strategy)(nodes)


def parse_size(text: str) -> Dict[str, Any]:
    over = text.startswith("over:")
    nodes, workloads = text.split(":")[-1].lower().split("x")
    return {"label": text, "nodes": int(nodes), "workloads": int(workloads), "over": over}


def timed(function: Any, *args: Any) -> Any:
    gc.collect()
    start = time.perf_counter()
    result = function(*args)
    return time.perf_counter() - start, result


def place(strategy: str, nodes: List[Dict[str, Any]],
          workloads: List[Dict[str, Any]]) -> Any:
    distributor = build(strategy, nodes)
    return distributor, distributor.attempt_assign_loads(workloads)


def peak_memory(strategy: str, nodes: List[Dict[str, Any]],
                workloads: List[Dict[str, Any]]) -> int:
    """Peak bytes allocated while building the distributor and placing."""
    gc.collect()
    tracemalloc.start()
    try:
        distributor = build(strategy, nodes)
        result = distributor.attempt_assign_loads(workloads)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del distributor, result
    return peak


def churn(distributor: lighthouse.Distributor, seed: int) -> Dict[str, float]:
    """Release 10% of the placed workloads at random, place as many new ones."""
    rng = random.Random(seed)
    placed = sorted(distributor.assignments)
    leaving = rng.sample(placed, len(placed) // 10)
    fresh = problems.workloads(len(leaving), seed=seed, prefix=f"churn{seed}")
    released, _ = timed(distributor.release_loads, leaving)
    placing, _ = timed(distributor.attempt_assign_loads, fresh)
    count = max(1, len(leaving))
    return {"churn_workloads": count, "release_per_s": count / released,
            "replace_per_s": count / placing}


def drain_and_remove(distributor: lighthouse.Distributor, seed: int) -> Dict[str, float]:
    """Drain 1% of the nodes one by one, then remove another 1% in one call."""
    rng = random.Random(seed)
    names = [node.name for node in distributor.nodes]
    chosen = rng.sample(names, 2 * max(1, len(names) // 100))
    draining, removing = chosen[:len(chosen) // 2], chosen[len(chosen) // 2:]
    moved = sum(len(distributor.node_state(name).workloads) for name in draining)
    start = time.perf_counter()
    for name in draining:
        distributor.drain(name)
    drained = time.perf_counter() - start
    displaced = sum(len(distributor.node_state(name).workloads) for name in removing)
    removed, _ = timed(distributor.remove_nodes, removing)
    return {"drained_nodes": len(draining), "drain_s": drained,
            "drain_workloads_per_s": moved / drained if drained else 0.0,
            "removed_nodes": len(removing), "remove_s": removed,
            "remove_workloads_per_s": displaced / removed if removed else 0.0}


def reference_run(strategy: str, nodes: List[Dict[str, Any]],
                  workloads: List[Dict[str, Any]]) -> Any:
    if strategy == "BestFit":
        from reference_bestfit import BestFitReference
        return BestFitReference(nodes).assign(workloads)
    from reference import Reference
    oracle = Reference(strategy, nodes, problems.RUBRIC if strategy == "BinPack" else None)
    return oracle.assign(workloads)


class OutOfTime(Exception):
    """The reference ran past its time budget."""


def bounded(seconds: Optional[float], function: Any, *args: Any) -> Any:
    """``timed(function, *args)``, stopped after ``seconds`` (None: never):
    then ``(seconds, None)``. Uses SIGALRM, so Unix and the main thread only."""
    if not seconds:
        return timed(function, *args)
    expired: List[bool] = []

    def expire(signum: int, frame: Any) -> None:
        expired.append(True)
        raise OutOfTime()

    previous = signal.signal(signal.SIGALRM, expire)
    try:
        # The timer may fire after the function returned, until it is
        # disarmed: the inner finally is inside the try that catches it.
        try:
            signal.setitimer(signal.ITIMER_REAL, seconds)
            result = timed(function, *args)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        # (raised where Python ignores exceptions, as in an object's
        # finalizer during a garbage collection: the result came late)
        return (seconds, None) if expired else result
    except OutOfTime:
        return seconds, None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def bench(size: Dict[str, Any], strategy: str, repeat: int, memory: bool,
          reference_limit: int, reference_seconds: Optional[float] = None) -> Dict[str, Any]:
    nodes, workloads = problems.problem(size["nodes"], size["workloads"], size["over"])
    runs = []
    distributor = result = None
    for _ in range(repeat):
        # Each run starts from the same heap: the last run's distributor is
        # dropped first, not kept alive (and walked by the collector) meanwhile.
        distributor = result = None
        seconds, (distributor, result) = timed(place, strategy, nodes, workloads)
        runs.append(seconds)
    assert result is not None and distributor is not None
    seconds = statistics.median(runs)
    row: Dict[str, Any] = {
        "size": size["label"], "strategy": strategy, "nodes": len(nodes),
        "workloads": len(workloads), "seconds": seconds,
        "per_s": len(workloads) / seconds,
        "placed": sum(value is not None for value in result.values()) / len(workloads),
        "runs": runs}
    if memory:
        peak = peak_memory(strategy, nodes, workloads)
        row["peak_bytes"] = peak
        row["bytes_per_workload"] = peak / len(workloads)
    row.update(churn(distributor, seed=7))
    row.update(drain_and_remove(distributor, seed=11))
    if len(nodes) * len(workloads) <= reference_limit:
        spent, expected = bounded(reference_seconds, reference_run, strategy, nodes, workloads)
        row["reference_per_s"] = len(workloads) / spent
        row["ratio"] = spent / seconds
        if expected is None:
            row["reference_stopped"] = True  # both figures are bounds
        else:
            row["identical"] = expected == result and list(expected) == list(result)
    return row


def table(rows: Sequence[Dict[str, Any]]) -> str:
    header = ("size", "strategy", "placed", "wl/s", "B/wl", "churn rel/s",
              "churn place/s", "drain wl/s", "remove wl/s", "ref wl/s", "ratio", "same")
    lines = [header]
    for row in rows:
        lines.append((
            row["size"], row["strategy"], f"{row['placed']:.0%}", f"{row['per_s']:,.0f}",
            f"{row['bytes_per_workload']:,.0f}" if "bytes_per_workload" in row else "-",
            f"{row['release_per_s']:,.0f}", f"{row['replace_per_s']:,.0f}",
            f"{row['drain_workloads_per_s']:,.0f}", f"{row['remove_workloads_per_s']:,.0f}",
            (f"<{row['reference_per_s']:,.0f}" if row.get("reference_stopped") else
             f"{row['reference_per_s']:,.0f}") if "reference_per_s" in row else "-",
            (f">{row['ratio']:.0f}x" if row.get("reference_stopped") else
             f"{row['ratio']:.0f}x") if "ratio" in row else "-",
            ("yes" if row["identical"] else "NO") if "identical" in row else "-"))
    widths = [max(len(str(line[i])) for line in lines) for i in range(len(header))]
    return "\n".join("  ".join(str(cell).rjust(width) for cell, width in zip(line, widths))
                     for line in lines)


def growth(rows: Sequence[Dict[str, Any]], base_nodes: int = 1000) -> List[str]:
    """Per strategy, the cost per workload at each larger size (not
    over-subscribed) against the size with ``base_nodes`` nodes, or else the
    smallest: the growth target."""
    lines = []
    for strategy in STRATEGIES:
        plain = sorted(((row["nodes"], row["size"]), row) for row in rows
                       if row["strategy"] == strategy and not row["size"].startswith("over:"))
        bases = [row for (nodes, _), row in plain if nodes == base_nodes] or \
            [row for _, row in plain[:1]]
        if not bases:
            continue
        base = bases[0]
        ratios = ", ".join(f"{row['size']} {base['per_s'] / row['per_s']:.2f}x"
                           for _, row in plain if row["nodes"] > base["nodes"])
        if not ratios:
            continue
        lines.append(f"{strategy}: cost per workload against {base['size']}: {ratios}")
    return lines


def interleaved_growth(strategies: Sequence[str], repeat: int, small: str,
                       large: str) -> List[str]:
    """The growth target measured fairly on a noisy machine: runs at the
    small and the large size alternate, so that a change in the machine's
    speed meets both; the ratio of the median costs per workload."""
    problems_ = [problems.problem(size["nodes"], size["workloads"], size["over"])
                 for size in (parse_size(small), parse_size(large))]
    lines = []
    for strategy in strategies:
        costs: List[List[float]] = [[], []]
        for _ in range(repeat):
            for (nodes, workloads), cost in zip(problems_, costs):
                # (The distributor is dropped at once: as in bench, no
                # earlier run's distributor stays alive during the next.)
                seconds = timed(place, strategy, nodes, workloads)[0]
                cost.append(seconds / len(workloads) * 1e6)
        first, second = (statistics.median(cost) for cost in costs)
        lines.append(f"{strategy}: {first:.1f} us a workload at {small}, {second:.1f} at "
                     f"{large}: {second / first:.2f}x (medians of {repeat}, alternating)")
    return lines


def main(argv: Optional[Sequence[str]] = None) -> List[Dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, one run each")
    parser.add_argument("--sizes", nargs="+", help="NODESxWORKLOADS, or over:NxW")
    parser.add_argument("--strategies", nargs="+", default=list(STRATEGIES))
    parser.add_argument("--repeat", type=int, help="runs per figure (median); default 3")
    parser.add_argument("--no-memory", action="store_true", help="skip tracemalloc runs")
    parser.add_argument("--reference-limit", type=float, default=4e6,
                        help="run the reference when nodes x workloads is at most this")
    parser.add_argument("--reference-seconds", type=float,
                        help="stop a reference run after this long and report bounds")
    parser.add_argument("--json", help="also write the rows to this JSON file")
    parser.add_argument("--growth", nargs=2, metavar=("SMALL", "LARGE"),
                        help="only measure the growth from SMALL to LARGE (e.g. 1000x10000 "
                             "10000x100000), alternating runs of the two sizes")
    args = parser.parse_args(argv)
    if args.growth:
        lines = interleaved_growth(args.strategies, args.repeat or 5, *args.growth)
        print("\n".join(lines))
        return []
    sizes = args.sizes or (QUICK_SIZES if args.quick else FULL_SIZES)
    repeat = args.repeat or (1 if args.quick else 3)
    rows = []
    for text in sizes:
        size = parse_size(text)
        for strategy in args.strategies:
            row = bench(size, strategy, repeat, not args.no_memory, int(args.reference_limit),
                        args.reference_seconds)
            rows.append(row)
            print(f"{row['size']:>16} {strategy:>12}: {row['per_s']:,.0f} workloads/s",
                  file=sys.stderr, flush=True)
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} cores")
    print(table(rows))
    for line in growth(rows):
        print(line)
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as handle:
            json.dump(rows, handle, indent=1)
    return rows


if __name__ == "__main__":
    main()
