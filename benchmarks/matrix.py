"""The benchmark matrix: every strategy on every cluster mix of ``mixes.py``; prints a table.

Run from the repository root::

    python benchmarks/matrix.py --quick                     # a smoke run, seconds
    python benchmarks/matrix.py                             # 1000x10000 and 10000x100000
    python benchmarks/matrix.py --sizes 5000x50000 --mixes all pinned --repeat 3
    python benchmarks/matrix.py --json matrix.json          # keep the rows (for chart.py)

Per mix, strategy and size (nodes x workloads), measured end to end (the
distributor built from node dicts, then ``attempt_assign_loads`` on
workload dicts, validation included), in CPU time of this process
(``time.process_time``), so that other work on a shared machine does not
count (it still slows the caches; run on a quiet machine for wall time).
A cell's sizes run one after the other (mix by mix, strategy by strategy),
so that its growth compares runs of the same few minutes:

* ``w/s``: workloads per second (median of ``--repeat`` runs, and of at
  least five at sizes of at most 20,000 workloads, see :func:`runs_for`;
  the JSON rows keep every run's figure too, ``runs_per_s``, to show
  their spread);
* ``placed``: the share of workloads placed;
* ``vs plain``: how much longer the mix takes than the same problem
  stripped of its features (``mixes.strip``), run alternately with it in
  the same process (1.0: features cost nothing);
* ``build``: microseconds per node to build the distributor;
* ``nowhere``: cost of a workload that fits no node (each with its own
  quantities, tried after the run) over the cost of a successful
  placement; median of :data:`ROUNDS` batches, each of fresh quantities.
  A successful placement's cost is the run's cost per workload when it
  placed every workload; else the cost per workload of placing only the
  workloads it placed, in the same order, on a fresh distributor (a
  workload that finds no node changes nothing, so the others go where
  they went; BestFit may then take its other second placement). In an
  over-subscribed run, the workloads that find no node are answered from
  what the index remembers and cost less than a success: the run's
  average would flatter them;
* ``answer``: the answer to the mix made over-subscribed
  (``mixes.oversubscribed``: every workload asks three times as much, so
  that many find no node; their share is ``answer_placed`` in the JSON
  rows), as the command line and the HTTP endpoint give it (the problem
  read by ``load_problem``, then ``solve`` partial and ``to_dict``: the
  placement and the reason of every workload left out), over the
  placement of the same problem from the same dicts; medians of
  ``--repeat`` runs, run alternately;
* ``grouped``, ``rare``, ``pinned``: for the mixes that have them, cost of
  a fresh batch of that kind of workload over a fresh batch of plain ones,
  on the state the run left; median of :data:`ROUNDS` rounds, each a batch
  of every kind in turn (a batch can meet the index's one-off work, such
  as making a column; the median leaves that out);
* ``growth`` (printed after the table): cost per workload at the largest
  size over the cost at the smallest, per mix and strategy.
"""
import argparse
import gc
import json
import os
import random
import statistics
import sys
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), HERE]

import mixes  # noqa: E402
import pylighthouse as lighthouse  # noqa: E402
from pylighthouse.problem import load_problem, solve  # noqa: E402

STRATEGIES = mixes.STRATEGIES
FULL_SIZES = ("1000x10000", "10000x100000")
QUICK_SIZES = ("60x600",)
PROBES = 300  # workloads per probe batch (nowhere, grouped, rare, pinned, plain)
ROUNDS = 3  # batches of fits-nowhere probes; rounds of the grouped, rare and pinned ones


def build(strategy: str, nodes: Sequence[Dict[str, Any]]) -> lighthouse.Distributor:
    if strategy == "BinPack":
        return lighthouse.BinPackDistributor(mixes.RUBRIC, nodes)
    return lighthouse.distributors.distributor_class(strategy)(nodes)


def run_once(strategy: str, problem: mixes.Problem) -> Tuple[float, float, Any, Dict[str, Any]]:
    """(seconds in all, seconds to build, distributor, result)."""
    nodes, workloads = problem
    gc.collect()
    start = time.process_time()
    distributor = build(strategy, nodes)
    built = time.process_time()
    result = distributor.attempt_assign_loads(workloads)
    end = time.process_time()
    return end - start, built - start, distributor, result


def answer_once(strategy: str, problem: mixes.Problem) -> Tuple[float, float]:
    """(seconds to answer the problem partially, as the command line does:
    read, placed, explained, made plain data; the share placed)."""
    nodes, workloads = problem
    data: Dict[str, Any] = {"nodes": nodes, "workloads": workloads, "strategy": strategy,
                            "partial": True}
    if strategy == "BinPack":
        data["rubric"] = mixes.RUBRIC
    gc.collect()
    start = time.process_time()
    answer = solve(load_problem(data)).to_dict()
    seconds = time.process_time() - start
    return seconds, 1 - len(answer["unplaced"]) / max(1, len(workloads))


def per_workload(distributor: lighthouse.Distributor, batch: List[Dict[str, Any]]) -> float:
    """Seconds per workload to place ``batch`` (in one call) on ``distributor``."""
    if not batch:
        return 0.0
    gc.collect()
    start = time.process_time()
    distributor.attempt_assign_loads(batch)
    return (time.process_time() - start) / len(batch)


def probe_requirements(rng: random.Random) -> Dict[str, Any]:
    """A probe's requirements: cpu and memory drawn as the mixes draw them."""
    return {"cpu": rng.choice(mixes.CPU), "mem": rng.choice(mixes.MEM)}


def probes(mix: str, distributor: lighthouse.Distributor, nodes: Sequence[Dict[str, Any]],
           seed: int) -> Dict[str, List[Dict[str, Any]]]:
    """Fresh batches of each kind of workload the mix has, plain ones first."""
    rng = random.Random(seed)
    features = mixes.MIXES[mix]
    names = [node["name"] for node in nodes]

    def batch(kind: str) -> List[Dict[str, Any]]:
        made = []
        for index in range(PROBES):
            requirements = probe_requirements(rng)
            spec: Dict[str, Any] = {"name": f"probe-{kind}-{seed}-{index}",
                                    "requirements": requirements}
            if kind == "rare":
                requirements["gpu"] = 1
            elif kind == "pinned":
                requirements[f"host-{rng.choice(names)}"] = 0
            elif kind == "grouped":
                count = 4000 if "groups4000" in features else 40
                spec["aversion_groups"] = [f"group-{rng.randrange(count):0{len(str(count - 1))}d}"]
            made.append(spec)
        return made

    kinds = {"plain": batch("plain")}
    if features & {"groups40", "groups4000"}:
        kinds["grouped"] = batch("grouped")
    if "scarce" in features:
        kinds["rare"] = batch("rare")
    if "pinned" in features:
        kinds["pinned"] = batch("pinned")
    return kinds


#: Sizes of at most this many workloads are run at least :data:`SHORT_RUNS`
#: times (see :func:`runs_for`).
SHORT = 20000
SHORT_RUNS = 5


def runs_for(size: str, repeat: int) -> int:
    """How many runs a figure of ``size`` takes the median of: ``repeat``,
    and at least :data:`SHORT_RUNS` for a size of at most :data:`SHORT`
    workloads. Such a run lasts a fraction of a second, where a moment's
    other work on the machine moves a single run's figure by a third, and
    growth divides by it; the runs of the larger sizes last long enough to
    even that out."""
    workloads = mixes.size_of(size)[1]
    return max(repeat, SHORT_RUNS) if workloads <= SHORT else repeat


def bench(mix: str, strategy: str, size: str, repeat: int) -> Dict[str, Any]:
    node_count, workload_count = mixes.size_of(size)
    problem = mixes.problem(mix, node_count, workload_count)
    plain = mixes.strip(problem)
    runs, plain_runs, builds = [], [], []
    for _ in range(repeat):  # alternately, so that load on the machine hits both alike
        seconds, built, distributor, result = run_once(strategy, problem)
        runs.append(seconds)
        builds.append(built)
        plain_runs.append(run_once(strategy, plain)[0])
    seconds = statistics.median(runs)
    row: Dict[str, Any] = {
        "mix": mix, "strategy": strategy, "size": size, "nodes": node_count,
        "workloads": workload_count, "seconds": seconds, "per_s": workload_count / seconds,
        "placed": sum(value is not None for value in result.values()) / max(1, len(result)),
        "plain_per_s": workload_count / statistics.median(plain_runs),
        "build_us_per_node": 1e6 * statistics.median(builds) / max(1, node_count),
        # (every run, in the order run: how far apart runs of one figure are)
        "runs_per_s": [workload_count / each for each in runs],
        "plain_runs_per_s": [workload_count / each for each in plain_runs]}
    row["vs_plain"] = seconds / statistics.median(plain_runs)
    success = seconds / max(1, workload_count)
    placed = [load for load in problem[1] if result[load["name"]] is not None]
    if placed and len(placed) < len(problem[1]):
        success = statistics.median(run_once(strategy, (problem[0], placed))[0]
                                    for _ in range(repeat)) / len(placed)
    row["success_us"] = 1e6 * success
    nowhere = statistics.median(
        per_workload(distributor, mixes.nowhere(problem[0], PROBES, seed=round_))
        for round_ in range(ROUNDS))
    row["nowhere"] = nowhere / success
    row["nowhere_vs_average"] = nowhere * workload_count / seconds
    heavy = mixes.oversubscribed(problem)
    answers, places = [], []
    for _ in range(repeat):
        places.append(run_once(strategy, heavy)[0])
        seconds_each, row["answer_placed"] = answer_once(strategy, heavy)
        answers.append(seconds_each)
    row["answer"] = statistics.median(answers) / statistics.median(places)
    costs: Dict[str, List[float]] = {}
    for round_ in range(ROUNDS):
        kinds = probes(mix, distributor, problem[0], seed=node_count + round_)
        for kind, batch in kinds.items():
            costs.setdefault(kind, []).append(per_workload(distributor, batch))
    base = statistics.median(costs.pop("plain"))
    for kind, seconds_each in costs.items():
        row[kind] = statistics.median(seconds_each) / base
    return row


def table(rows: Sequence[Dict[str, Any]]) -> str:
    head = ("mix", "strategy", "size", "w/s", "placed", "vs plain", "build us/node",
            "nowhere", "answer", "grouped", "rare", "pinned")
    lines = [" | ".join(head), " | ".join("---" for _ in head)]
    for row in rows:
        extra = [f"{row[kind]:.2f}" if kind in row else ""
                 for kind in ("grouped", "rare", "pinned")]
        lines.append(" | ".join([
            row["mix"], row["strategy"], row["size"], f"{row['per_s']:,.0f}",
            f"{row['placed']:.0%}", f"{row['vs_plain']:.2f}",
            f"{row['build_us_per_node']:.0f}", f"{row['nowhere']:.2f}",
            f"{row['answer']:.2f}" if "answer" in row else ""] + extra))
    return "\n".join(lines)


def growth(rows: Sequence[Dict[str, Any]]) -> List[str]:
    """Cost per workload at the largest size over the smallest, per mix and strategy."""
    lines = []
    pairs: Dict[Tuple[str, str], List[Dict[str, Any]]] = {}
    for row in rows:
        pairs.setdefault((row["mix"], row["strategy"]), []).append(row)
    for (mix, strategy), found in pairs.items():
        if len(found) < 2:
            continue
        small = min(found, key=lambda row: row["nodes"])
        large = max(found, key=lambda row: row["nodes"])
        lines.append(f"{mix} {strategy}: cost per workload {large['size']} over "
                     f"{small['size']}: {small['per_s'] / large['per_s']:.2f}x")
    return lines


def main(argv: Optional[Sequence[str]] = None) -> List[Dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="one small size, one run")
    parser.add_argument("--sizes", nargs="+", help="NODESxWORKLOADS")
    parser.add_argument("--mixes", nargs="+", default=sorted(mixes.MIXES))
    parser.add_argument("--strategies", nargs="+", default=list(STRATEGIES))
    parser.add_argument("--repeat", type=int, default=1, help="runs per figure (median)")
    parser.add_argument("--json", help="also write the rows to this JSON file")
    parser.add_argument("--large-mixes", nargs="+",
                        help="only these mixes at sizes after the first")
    args = parser.parse_args(argv)
    if args.json and os.path.dirname(args.json):  # (benchmarks/results/ is not in the repository)
        os.makedirs(os.path.dirname(args.json), exist_ok=True)
    sizes = args.sizes or (QUICK_SIZES if args.quick else FULL_SIZES)
    rows: List[Dict[str, Any]] = []
    # Mix by mix, strategy by strategy, every size of the cell one after the
    # other: the speed of a shared machine drifts over minutes, and a ratio
    # between sizes (growth) should not compare a fast minute with a slow one.
    for mix in args.mixes:
        for strategy in args.strategies:
            for at, size in enumerate(sizes):
                if at and args.large_mixes and mix not in args.large_mixes:
                    continue
                row = bench(mix, strategy, size, 1 if args.quick else runs_for(size, args.repeat))
                rows.append(row)
                print(table([row]).splitlines()[-1], flush=True)
                rows.sort(key=lambda row: (sizes.index(row["size"]),
                                           args.mixes.index(row["mix"]),
                                           args.strategies.index(row["strategy"])))
                if args.json:  # after every row: a long run stopped keeps what it measured
                    with open(args.json, "w") as handle:
                        json.dump(rows, handle, indent=1)
    print()
    print(table(rows))
    for line in growth(rows):
        print(line)
    return rows


if __name__ == "__main__":
    main()
