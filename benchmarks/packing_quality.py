"""Packing quality of every strategy: nodes used, workloads placed, speed; prints a table.

Run from the repository root::

    python benchmarks/packing_quality.py            # the table in docs/strategies.rst
    python benchmarks/packing_quality.py --quick    # a smoke run (seconds)
    python benchmarks/packing_quality.py --speed    # the speed column only
    python benchmarks/packing_quality.py --orders   # BestFit's order given, on mixes

Three measures, each on several seeds, reported at the worst seed:

* **Nodes used against the lower bound** on a homogeneous cluster (every
  node cpu 32, mem 128, disk 1000; far more nodes than needed) with mixed
  workloads (36 flavours of cpu, mem and usually disk, in equal shares):
  the suite's own flavours, and a harder family with flavours drawn afresh
  for each seed.
  The lower bound is the largest, over resources, of the total demand
  divided by one node's capacity, rounded up: no packing uses fewer nodes.
  On the small instances a strategy within one node of the bound is within
  one node of the optimum, whatever the optimum is; at the bound it is
  optimal.
* **Share placed on a mixed cluster**: the benchmark suite's heterogeneous
  problems (:mod:`problems`: four machine types, tags, semaphores, wards,
  aversion groups; about 80% of the cpu asked for, and more licences than
  there are), as they are and with half the nodes (over-full).
* **Speed** at the benchmark suite's sizes, in workloads placed per second
  end to end (from the dicts to the result). The strategies run in turn
  inside one process, ``--repeat`` rounds, and the median is reported, so
  the figures compare under the same load.

``--orders`` measures what BestFit's placement in the order given (tried
when largest first used more new nodes than the call's demand needs)
gains and costs on the benchmark matrix's mixes (:mod:`mixes`): nodes
used, workloads left out and time, each problem placed with it and
without it (the bound patched out), alternately, the best of two runs.
"""
import argparse
import contextlib
import gc
import math
import os
import random
import statistics
import sys
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), HERE]

import mixes  # noqa: E402
import problems  # noqa: E402
import pylighthouse as lighthouse  # noqa: E402

STRATEGIES = ("Prioritized", "RoundRobin", "BinPack", "BestFit")
NODE = {"cpu": 32, "mem": 128, "disk": 1000}
WHEN = {
    "Prioritized": "the nodes have an order of preference to follow.",
    "RoundRobin": "the load should be spread evenly over the nodes.",
    "BinPack": "a rubric's weighted size should decide, as in 0.2.0.",
    "BestFit": ("nodes cost money (it packs onto the fewest, in every resource) "
                "or room is short (it places the most)."),
}


def build(strategy: str, nodes: List[Dict[str, Any]]) -> lighthouse.Distributor:
    """A distributor of ``strategy``; BinPack gets the suite's rubric, BestFit none."""
    if strategy == "BinPack":
        return lighthouse.BinPackDistributor(problems.RUBRIC, nodes)
    return lighthouse.distributors.distributor_class(strategy)(nodes)


def homogeneous(node_count: int, workload_count: int, seed: int,
                varied: bool = False) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
    """Identical nodes and ``workload_count`` workloads in equal shares of 36
    flavours, shuffled with ``seed``: the suite's flavours (:mod:`problems`,
    their cpu, mem and disk only), or with ``varied`` 36 flavours drawn
    afresh for each seed."""
    rng = random.Random(seed)
    flavours = problems.flavours(36, seed * 7 + 2) if varied else problems.flavours()
    menu = problems.dealt(rng, workload_count, [(flavour, 1) for flavour in flavours])
    nodes = [{"name": f"node-{index:05d}", "resources": dict(NODE)}
             for index in range(node_count)]
    loads = [{"name": f"w-{index:06d}", "requirements": dict(flavour)}
             for index, flavour in enumerate(menu)]
    return nodes, loads


def lower_bound(loads: Sequence[Dict[str, Any]]) -> int:
    """No packing of ``loads`` onto :data:`NODE` nodes uses fewer nodes."""
    return max(math.ceil(sum(load["requirements"].get(key, 0) for load in loads) / capacity
                         - 1e-9)
               for key, capacity in NODE.items())


def nodes_used(strategy: str, node_count: int, workload_count: int, seed: int,
               varied: bool = False) -> Tuple[int, int]:
    """(nodes holding a workload, lower bound) after placing every workload."""
    nodes, loads = homogeneous(node_count, workload_count, seed, varied)
    distributor = build(strategy, nodes)
    result = distributor.attempt_assign_loads(loads)
    assert None not in result.values(), "the cluster is meant to hold everything"
    return len(set(result.values())), lower_bound(loads)


def placed_share(strategy: str, node_count: int, workload_count: int, seed: int,
                 over: bool) -> float:
    """The share of the workloads placed on the mixed cluster (with ``over``,
    on half its nodes)."""
    nodes, loads = problems.problem(node_count, workload_count, over=over, seed=seed)
    result = build(strategy, nodes).attempt_assign_loads(loads)
    return sum(node is not None for node in result.values()) / len(result)


def speeds(strategies: Sequence[str], node_count: int, workload_count: int,
           repeat: int, verbose: bool = False) -> Dict[str, float]:
    """Median workloads per second of each strategy, the strategies run in
    turn ``repeat`` times in this process; with ``verbose``, each round's
    speeds are printed, as fractions of Prioritized's in that round too."""
    nodes, loads = problems.problem(node_count, workload_count)
    times: Dict[str, List[float]] = {strategy: [] for strategy in strategies}
    for round_number in range(repeat):
        for strategy in strategies:
            gc.collect()
            start = time.perf_counter()
            build(strategy, nodes).attempt_assign_loads(loads)
            times[strategy].append(time.perf_counter() - start)
        if verbose:
            base = times["Prioritized"][-1] if "Prioritized" in times else None
            print(f"round {round_number + 1}: " + ", ".join(
                f"{strategy} {workload_count / found[-1]:,.0f}/s"
                + (f" ({base / found[-1]:.3f}x)" if base is not None else "")
                for strategy, found in times.items()), flush=True)
    return {strategy: workload_count / statistics.median(found)
            for strategy, found in times.items()}


def orders(node_count: int, mix_names: Sequence[str]) -> List[Dict[str, Any]]:
    """Per mix (with its features and stripped of them): BestFit's nodes
    used, workloads left out and seconds, with and without its placement
    in the order given; printed as they come."""
    rows = []
    for mix in mix_names:
        for stripped in (False, True):
            problem = mixes.problem(mix, node_count, 10 * node_count)
            if stripped:
                problem = mixes.strip(problem)
            found: Dict[bool, List[Tuple[float, int, int]]] = {True: [], False: []}
            for given in (True, False, True, False):
                gc.collect()
                with contextlib.nullcontext() if given else mock.patch.object(
                        lighthouse.BestFitDistributor, "_fewest_openings", return_value=10 ** 9):
                    start = time.process_time()
                    distributor = build("BestFit", problem[0])
                    result = distributor.attempt_assign_loads(problem[1])
                    seconds = time.process_time() - start
                used = sum(1 for state in distributor.node_states() if state.workloads)
                found[given].append((seconds, used, list(result.values()).count(None)))
            (on, used, missed), (off, used_off, missed_off) = (
                min(found[True]), min(found[False]))
            row = {"mix": mix, "stripped": stripped, "nodes": used, "nodes_without": used_off,
                   "missed": missed, "missed_without": missed_off, "time_ratio": on / off}
            rows.append(row)
            print(f"{mix:>11} {'stripped' if stripped else 'features':>8}: nodes "
                  f"{used_off} -> {used} ({used / used_off - 1:+.1%}), left out "
                  f"{missed_off} -> {missed}, time x{on / off:.2f}", flush=True)
    return rows


def measure(args: argparse.Namespace) -> Dict[str, Dict[str, Any]]:
    """Every figure of the table, per strategy."""
    rows: Dict[str, Dict[str, Any]] = {}
    for strategy in args.strategies:
        large = [nodes_used(strategy, args.nodes, args.workloads, seed)
                 for seed in range(1, args.seeds + 1)]
        varied = [nodes_used(strategy, args.nodes, args.workloads, seed, True)
                  for seed in range(1, args.seeds + 1)]
        small = [nodes_used(strategy, args.small_nodes, args.small_workloads, seed, varied)
                 for seed in range(1, args.small_seeds + 1) for varied in (False, True)]
        full = [placed_share(strategy, args.over_nodes, args.over_workloads, seed, False)
                for seed in range(1, args.seeds + 1)]
        shares = [placed_share(strategy, args.over_nodes, args.over_workloads, seed, True)
                  for seed in range(1, args.seeds + 1)]
        rows[strategy] = {
            "ratios": [used / bound for used, bound in large],
            "varied": [used / bound for used, bound in varied],
            "large": large + varied,
            "extra": [used - bound for used, bound in small],
            "full": full,
            "shares": shares,
        }
        print(f"{strategy:>12}: nodes/bound {min(rows[strategy]['ratios']):.3f}-"
              f"{max(rows[strategy]['ratios']):.3f}, varied flavours "
              f"{min(rows[strategy]['varied']):.3f}-{max(rows[strategy]['varied']):.3f}, "
              f"small instances "
              f"{max(rows[strategy]['extra'])} over the bound at worst, placed "
              f"{min(full):.1%}-{max(full):.1%} (full), {min(shares):.1%}-{max(shares):.1%} "
              f"(over-full)", flush=True)
    found = speeds(args.strategies, args.speed_nodes, args.speed_workloads, args.repeat)
    for strategy, per_s in found.items():
        rows[strategy]["per_s"] = per_s
    return rows


def table(rows: Dict[str, Dict[str, Any]], args: argparse.Namespace) -> str:
    """The rows as a reStructuredText list-table."""
    header = ("Strategy", f"Nodes used / lower bound (the suite's flavours, "
              f"{args.workloads} workloads, worst of {args.seeds} seeds)",
              f"Nodes used / lower bound (varied flavours, worst of {args.seeds} seeds)",
              f"Nodes over the bound ({args.small_workloads} workloads, worst of "
              f"{2 * args.small_seeds} instances)",
              f"Placed, mixed cluster ({args.over_nodes}x{args.over_workloads}, "
              f"worst of {args.seeds} seeds)",
              "Placed, over-full mixed cluster (half the nodes)",
              f"Workloads/s ({args.speed_nodes}x{args.speed_workloads})",
              "Pick it when")
    lines = [".. list-table::", "   :header-rows: 1", ""]
    lines.append("   * - " + "\n     - ".join(header))
    for strategy, row in rows.items():
        cells = (strategy, f"{max(row['ratios']):.3f}", f"{max(row['varied']):.3f}",
                 str(max(row["extra"])),
                 f"{min(row['full']):.1%}", f"{min(row['shares']):.1%}",
                 f"{row['per_s']:,.0f}", WHEN[strategy])
        lines.append("   * - " + "\n     - ".join(cells))
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> Dict[str, Dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, few seeds")
    parser.add_argument("--strategies", nargs="+", default=list(STRATEGIES))
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--speed", action="store_true",
                        help="only the speed column, each round printed")
    parser.add_argument("--orders", action="store_true",
                        help="BestFit with and without its order given, on the matrix's mixes")
    parser.add_argument("--orders-nodes", type=int, default=3000,
                        help="nodes of each mix for --orders (ten workloads a node)")
    args = parser.parse_args(argv)
    sizes = dict(nodes=1000, workloads=2000, small_nodes=100, small_workloads=200,
                 small_seeds=20, over_nodes=1000, over_workloads=10000,
                 speed_nodes=5000, speed_workloads=50000)
    if args.quick:
        sizes = dict(nodes=100, workloads=300, small_nodes=30, small_workloads=60,
                     small_seeds=3, over_nodes=60, over_workloads=600,
                     speed_nodes=50, speed_workloads=500)
        args.seeds, args.repeat = min(args.seeds, 2), 1
    for key, value in sizes.items():
        setattr(args, key, value)
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} cores", flush=True)
    if args.orders:
        rows = orders(60 if args.quick else args.orders_nodes, sorted(mixes.MIXES))
        return {f"{row['mix']}{' stripped' if row['stripped'] else ''}": row for row in rows}
    if args.speed:
        found = speeds(args.strategies, args.speed_nodes, args.speed_workloads, args.repeat,
                       verbose=True)
        for strategy, per_s in found.items():
            print(f"{strategy:>12}: {per_s:,.0f} workloads/s (median of {args.repeat})")
        return {strategy: {"per_s": per_s} for strategy, per_s in found.items()}
    rows = measure(args)
    print(table(rows, args))
    return rows


if __name__ == "__main__":
    main()
