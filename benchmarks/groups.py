"""Cost of a grouped workload against a plain one, with few or many aversion groups.

The matrix's ``groups40`` and ``groups4000`` mixes put 1 workload in 4 in
one of 40 or 4,000 groups. With fewer groups each has more members, and a
new member has more nodes hosting its group to pass over. This script
builds a mix (``types`` by default) with 1 workload in 4 in one of ``G``
groups instead, places it in one call, then times fresh batches of
grouped and plain workloads on the state it leaves, as the matrix's
``grouped`` column does (batches of 300, three rounds, medians). Run::

    python benchmarks/groups.py --groups 3 10 20 40 --strategies BinPack
    python benchmarks/groups.py --groups 10 --same  # members ask alike, as replicas do

Without ``--same`` each probe draws its cpu and memory at random; with it,
the members of a group all ask for the same quantities (the group's own),
as the replicas of one service do.
"""
import argparse
import os
import random
import statistics
import sys
from typing import Any, Dict, List, Sequence

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), HERE]

import mixes  # noqa: E402
from matrix import (PROBES, ROUNDS, STRATEGIES, per_workload, probe_requirements,  # noqa: E402
                    run_once)


def _grouped(problem: mixes.Problem, groups: int, rng: random.Random) -> mixes.Problem:
    """``problem`` with 1 workload in 4 in one of ``groups`` groups (and no other)."""
    nodes, workloads = problem
    made = []
    for spec in workloads:
        spec = {key: value for key, value in spec.items() if key != "aversion_groups"}
        if rng.random() < 0.25:
            spec["aversion_groups"] = [f"group-{rng.randrange(groups)}"]
        made.append(spec)
    return nodes, made


def _probe(kind: str, groups: int, same: bool, index: int,
           rng: random.Random) -> Dict[str, Any]:
    spec: Dict[str, Any] = {"name": f"probe-{kind}-{index}",
                            "requirements": probe_requirements(rng)}
    if kind == "grouped":
        group = rng.randrange(groups)
        spec["aversion_groups"] = [f"group-{group}"]
        if same:
            spec["requirements"] = {"cpu": mixes.CPU[group % len(mixes.CPU)],
                                    "mem": mixes.MEM[group // len(mixes.CPU) % len(mixes.MEM)]}
    return spec


def measure(mix: str, strategy: str, size: str, groups: int, same: bool) -> Dict[str, Any]:
    """Microseconds a grouped and a plain probe cost, and their ratio."""
    node_count, workload_count = mixes.size_of(size)
    rng = random.Random(groups)
    problem = _grouped(mixes.problem(mix, node_count, workload_count), groups, rng)
    _, _, distributor, _ = run_once(strategy, problem)
    costs: Dict[str, List[float]] = {"plain": [], "grouped": []}
    made = 0
    for _ in range(ROUNDS):
        for kind in costs:
            batch = []
            for _ in range(PROBES):
                batch.append(_probe(kind, groups, same, made, rng))
                made += 1
            costs[kind].append(per_workload(distributor, batch))
    plain, grouped = (1e6 * statistics.median(costs[kind]) for kind in ("plain", "grouped"))
    return {"mix": mix, "strategy": strategy, "size": size, "groups": groups, "same": same,
            "plain_us": plain, "grouped_us": grouped,
            "ratio": grouped / plain if plain else None}


def table(rows: Sequence[Dict[str, Any]]) -> str:
    head = ("mix", "size", "strategy", "groups", "members ask alike", "us plain",
            "us grouped", "grouped / plain")
    lines = [" | ".join(head), " | ".join("---" for _ in head)]
    for row in rows:
        lines.append(" | ".join([
            row["mix"], row["size"], row["strategy"], str(row["groups"]),
            "yes" if row["same"] else "no", f"{row['plain_us']:,.1f}",
            f"{row['grouped_us']:,.1f}",
            "-" if row["ratio"] is None else f"{row['ratio']:.2f}"]))
    return "\n".join(lines)


def main(argv: Sequence[str] = ()) -> List[Dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=["5000x50000"])
    parser.add_argument("--mix", default="types")
    parser.add_argument("--groups", nargs="+", type=int, default=[3, 10, 20, 40])
    parser.add_argument("--strategies", nargs="+", default=list(STRATEGIES))
    parser.add_argument("--same", action="store_true",
                        help="the members of a group ask for the same quantities")
    args = parser.parse_args(list(argv))
    rows = [measure(args.mix, strategy, size, groups, args.same)
            for size in args.sizes for groups in args.groups for strategy in args.strategies]
    print(table(rows))
    return rows


if __name__ == "__main__":
    main(sys.argv[1:])
