"""Answer time against placement time, on an over-subscribed problem; print a table.

Run from the repository root::

    python benchmarks/answers.py              # 500 nodes x 10,000 workloads
    python benchmarks/answers.py --nodes 2000 --workloads 40000 --repeat 3

The problem is benchmarks/problems.py's over-subscribed mix: about half of
the workloads find no node. For each strategy and mode (partial, then
all-or-nothing) two things are timed, alternately, in the same process:

placement
    what any caller pays: a distributor over the problem's nodes and
    ``attempt_assign_loads`` of its workloads (the :class:`Problem` is read
    once, beforehand);
answer
    ``solve(problem, partial).to_dict()``: the same placement plus the
    reasons of every unplaced workload, the body the command line and the
    HTTP endpoint print.

and, end to end from the parsed JSON: ``Node.from_list`` /
``Workload.from_list`` plus the placement, against ``load_problem`` plus
the answer. The table gives medians and the median of the per-run ratios.

``--distinct`` gives every workload quantities of its own (each moved by
up to 20%, kept to two decimals), so that no two share an explanation.

Last, BinPack's partial answer with the problem's 3-weight rubric against
the same with 20,000 more weights for resources no node has (they must
cost nothing).

``--write PATH`` writes the problem as a JSON problem file instead (for
``pylighthouse assign PATH``; ``--strategy`` sets its strategy) and times
nothing::

    python benchmarks/answers.py --nodes 2000 --workloads 100000 --write big.json
    time pylighthouse assign big.json > /dev/null
"""
import argparse
import gc
import json
import math
import os
import random
import statistics
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), HERE]

import problems  # noqa: E402
import pylighthouse as lighthouse  # noqa: E402
from pylighthouse.problem import (build_distributor, load_problem, new_distributor,  # noqa: E402
                                  solve)

STRATEGIES = ("Prioritized", "RoundRobin", "BinPack", "BestFit")


def timed(function: Callable[[], Any]) -> float:
    gc.collect()
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def place_dicts(strategy: str, data: Dict[str, Any], all_or_nothing: bool) -> None:
    nodes = lighthouse.Node.from_list(data["nodes"])
    loads = lighthouse.Workload.from_list(data["workloads"])
    distributor = new_distributor(strategy, nodes, data.get("rubric"))
    distributor.attempt_assign_loads(loads, all_or_nothing=all_or_nothing)


def measure(strategy: str, data: Dict[str, Any], partial: bool,
            repeat: int) -> Tuple[Dict[str, List[float]], int]:
    problem = load_problem(data)
    times: Dict[str, List[float]] = {"place": [], "answer": [], "place_e2e": [],
                                     "answer_e2e": []}
    unplaced = 0
    for _ in range(repeat):
        times["place"].append(timed(lambda: build_distributor(problem).attempt_assign_loads(
            problem.workloads, all_or_nothing=not partial)))
        times["answer"].append(timed(lambda: solve(problem, partial).to_dict()))
        times["place_e2e"].append(timed(lambda: place_dicts(strategy, data, not partial)))
        times["answer_e2e"].append(timed(lambda: solve(load_problem(data), partial).to_dict()))
    if partial:
        unplaced = len(solve(problem, True).unplaced)
    return times, unplaced


def distinct(loads: Sequence[Dict[str, Any]], seed: int = 0) -> List[Dict[str, Any]]:
    """The same workloads, each quantity moved by up to 20% and kept to two
    decimal digits (never below 0.01): nearly every workload asks for
    quantities of its own."""
    rng = random.Random(seed)
    return [dict(load, requirements={
        key: value if value == 0 else max(0.01, round(value * rng.uniform(0.8, 1.2), 2))
        for key, value in load["requirements"].items()}) for load in loads]


def ratio(times: Dict[str, List[float]], top: str, bottom: str) -> float:
    return statistics.median(a / b for a, b in zip(times[top], times[bottom]))


def main(argv: Optional[Sequence[str]] = None) -> List[Dict[str, Any]]:
    """Print the table; return its rows (seconds as medians)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--workloads", type=int, default=10000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--write", metavar="PATH",
                        help="write the problem as a JSON problem file and time nothing")
    parser.add_argument("--strategy", choices=STRATEGIES, default="Prioritized",
                        help="the strategy of the file --write writes")
    parser.add_argument("--distinct", action="store_true",
                        help="each workload its own quantities (each moved by up to 20%%, "
                             "kept to two decimals): no two share an explanation")
    args = parser.parse_args(argv)
    # problems.problem keeps OVERSUBSCRIBED of the nodes asked for.
    nodes, loads = problems.problem(round(args.nodes / problems.OVERSUBSCRIBED),
                                    args.workloads, over=True)
    if args.distinct:
        loads = distinct(loads)
    if args.write:
        data = {"nodes": nodes, "workloads": loads, "strategy": args.strategy}
        if args.strategy == "BinPack":
            data["rubric"] = problems.RUBRIC
        write(args.write, data)
        print(f"wrote {len(nodes)} nodes x {len(loads)} workloads to {args.write}")
        return []
    print(f"{len(nodes)} nodes x {len(loads)} workloads (over-subscribed"
          f"{', quantities of their own' if args.distinct else ''}), "
          f"median of {args.repeat} alternating runs, seconds")
    header = (f"{'strategy':<12}{'mode':<16}{'unplaced':>9}{'place':>8}{'answer':>8}"
              f"{'ratio':>7}{'place e2e':>11}{'answer e2e':>12}{'ratio':>7}")
    print(header)
    print("-" * len(header))
    rows = []
    for strategy in STRATEGIES:
        data = {"nodes": nodes, "workloads": loads, "strategy": strategy}
        if strategy == "BinPack":  # (BestFit scores by shares of capacity)
            data["rubric"] = problems.RUBRIC
        for partial in (True, False):
            times, unplaced = measure(strategy, data, partial, args.repeat)
            median = {key: statistics.median(values) for key, values in times.items()}
            row = dict(median, strategy=strategy, partial=partial, unplaced=unplaced,
                       ratio=ratio(times, "answer", "place"),
                       ratio_e2e=ratio(times, "answer_e2e", "place_e2e"))
            rows.append(row)
            print(f"{strategy:<12}{'partial' if partial else 'all-or-nothing':<16}"
                  f"{unplaced if partial else '-':>9}"
                  f"{median['place']:>8.3f}{median['answer']:>8.3f}"
                  f"{row['ratio']:>7.2f}"
                  f"{median['place_e2e']:>11.3f}{median['answer_e2e']:>12.3f}"
                  f"{row['ratio_e2e']:>7.2f}")
    wide_rubric(nodes, loads, args.repeat)
    return rows


def write(path: str, data: Dict[str, Any]) -> None:
    """Write ``data`` as a problem file: infinities as the strings JSON
    problem files take for them."""
    def plain(value: Any) -> Any:
        if isinstance(value, float) and math.isinf(value):
            return "inf" if value > 0 else "-inf"
        if isinstance(value, dict):
            return {key: plain(item) for key, item in value.items()}
        if isinstance(value, list):
            return [plain(item) for item in value]
        return value
    with open(path, "w") as file:
        json.dump(plain(data), file)


def wide_rubric(nodes: List[Dict[str, Any]], loads: List[Dict[str, Any]],
                repeat: int) -> None:
    wide = dict(problems.RUBRIC, **{f"unused-{i}": 1 for i in range(20_000)})
    narrow_problem = load_problem({"nodes": nodes, "workloads": loads, "strategy": "BinPack",
                                   "rubric": problems.RUBRIC})
    wide_problem = load_problem({"nodes": nodes, "workloads": loads, "strategy": "BinPack",
                                 "rubric": wide})
    times: Dict[str, List[float]] = {"narrow": [], "wide": []}
    for _ in range(repeat):
        times["narrow"].append(timed(lambda: solve(narrow_problem, True).to_dict()))
        times["wide"].append(timed(lambda: solve(wide_problem, True).to_dict()))
    print(f"\nBinPack partial answer, rubric of 3 weights: "
          f"{statistics.median(times['narrow']):.3f} s; with 20,000 more for resources "
          f"no node has: {statistics.median(times['wide']):.3f} s "
          f"(ratio {ratio(times, 'wide', 'narrow'):.2f})")


if __name__ == "__main__":
    main()
