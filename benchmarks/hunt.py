"""Random cluster mixes, to find the cases the matrix's mixes miss.

The matrix (``matrix.py``) measures twelve mixes, each changing one thing.
This script draws whole mixes at random instead, one per seed: how many
kinds of counted resource and on what share of the nodes, how many labels
(tags) and hostname tags, how many aversion groups and how many workloads
in them, wards and immunities, decimals, the workloads' size and their
memory to cpu ratio. For each mix and strategy it reports workloads
placed a second (nodes and workloads built from dicts, then one
``attempt_assign_loads``, as the matrix times them), the time over the
same problem stripped of its features (``mixes.strip``), and the share
placed; worst first, so that a slow case shows at the top. With
``--check`` it also places each mix with the node index off, the plain
scan of every node in order, and reports whether every decision was the
same (use small sizes: the plain scan costs a pass over the nodes a
workload). Run::

    python benchmarks/hunt.py --nodes 2000 --seeds 0 24
    python benchmarks/hunt.py --nodes 60 --seeds 0 200 --check --strategies Prioritized

A seed always draws the same mix; the figures are single runs, so a
ratio moves by a tenth or two from one run to the next.
"""
import argparse
import json
import os
import random
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), HERE]

import mixes  # noqa: E402
from matrix import STRATEGIES, build, run_once  # noqa: E402
from pylighthouse.distributors import Distributor  # noqa: E402

#: What a mix draws from: each a list of choices, one picked per seed.
CHOICES: Dict[str, Sequence[Any]] = {
    "base": ["types", "shapes", "uniform"],
    "kinds": [0, 0, 3, 9, 30, 300],
    "kind_share": [0.01, 0.05, 0.2, 0.5, 0.9],
    "kind_ask": [0.05, 0.3, 0.75],
    "kind_per": [1, 2, 3],
    "tags": [0, 0, 5, 50],
    "tag_share": [0.02, 0.3, 0.9],
    "tag_ask": [0.0, 0.1, 0.5],
    "host": [False, False, True],
    "pin": [0.0, 0.0, 0.1, 0.5],
    "groups": [0, 0, 2, 40, 4000],
    "group_share": [0.1, 0.5, 1.0],
    "decimals": [False, False, True],
    "scale": [0.5, 1, 1, 2, 4],
    "ward": [0.0, 0.0, 0.0, 0.05, 0.5],
    "immune": [0.0, 0.02, 0.5],
    "zero": [False, False, False, False, True],
    "ratio": [None, 0.1, 10.0],
}
TYPES = ((8, 32, 200), (16, 64, 500), (32, 128, 1000), (64, 256, 2000))


def parameters(seed: int) -> Dict[str, Any]:
    """The mix of ``seed``: one choice of each of :data:`CHOICES`."""
    rng = random.Random(f"hunt/{seed}")
    return {name: rng.choice(choices) for name, choices in CHOICES.items()}


def problem(seed: int, node_count: int, workload_count: int) -> mixes.Problem:
    """Node dicts and workload dicts of the mix of ``seed``."""
    drawn = parameters(seed)
    rng = random.Random(f"hunt/{seed}/{node_count}/{workload_count}")
    kinds = [f"kind-{at}" for at in range(drawn["kinds"])]
    tags = [f"label-{at}" for at in range(drawn["tags"])]

    def quantity(value: float) -> float:
        return round(value * rng.uniform(0.5, 1.5), 2) if drawn["decimals"] else value

    nodes = []
    for at in range(node_count):
        if drawn["base"] == "types":
            cpu, mem, disk = rng.choice(TYPES)
        elif drawn["base"] == "shapes":
            cpu = rng.randrange(2, 129)
            mem, disk = cpu * rng.choice([1, 2, 4, 8, 16]), rng.randrange(50, 5000)
        else:
            cpu, mem, disk = 32, 128, 1000
        resources: Dict[str, Any] = {"cpu": quantity(cpu), "mem": quantity(mem),
                                     "disk": quantity(disk)}
        for kind in kinds:
            if rng.random() < drawn["kind_share"]:
                resources[kind] = rng.randrange(1, 17)
        for tag in tags:
            if rng.random() < drawn["tag_share"]:
                resources[tag] = 0
        if drawn["host"]:
            resources[f"host-{at}"] = 0
        if rng.random() < drawn["ward"]:
            resources["ward"] = -1
        nodes.append({"name": f"n{at:06d}", "resources": resources})
    workloads = []
    for at in range(workload_count):
        cpu = rng.choice([0.25, 0.5, 1, 2, 4, 8]) * drawn["scale"]
        mem = rng.choice([0.5, 1, 2, 4, 8, 16, 32]) * drawn["scale"]
        if drawn["ratio"]:
            mem = cpu * drawn["ratio"] * rng.uniform(0.5, 2)
        requirements: Dict[str, Any] = {"cpu": quantity(cpu), "mem": quantity(round(mem, 2))}
        if rng.random() < 0.7:
            requirements["disk"] = quantity(rng.choice([1, 10, 50, 100]) * drawn["scale"])
        if drawn["zero"] and rng.random() < 0.3:
            requirements["cpu"] = 0
        if kinds and rng.random() < drawn["kind_ask"]:
            for kind in rng.sample(kinds, min(drawn["kind_per"], len(kinds))):
                requirements[kind] = rng.randrange(1, 4)
        if tags and rng.random() < drawn["tag_ask"]:
            requirements[rng.choice(tags)] = 0
        if drawn["host"] and rng.random() < drawn["pin"]:
            requirements[f"host-{rng.randrange(node_count)}"] = 0
        spec: Dict[str, Any] = {"name": f"w{at:07d}", "requirements": requirements}
        if drawn["groups"] and rng.random() < drawn["group_share"]:
            spec["aversion_groups"] = [f"group-{rng.randrange(drawn['groups'])}"]
        if rng.random() < drawn["immune"]:
            spec["immunities"] = ["ward"]
        workloads.append(spec)
    return nodes, workloads


def plain_decisions(strategy: str, made: mixes.Problem) -> Dict[str, Optional[str]]:
    """The decisions of ``strategy`` on ``made`` with the node index off."""
    with mock.patch.object(Distributor, "_indexed", False):
        distributor = build(strategy, made[0])
        return dict(distributor.attempt_assign_loads(made[1]))


def hunt(seeds: Sequence[int], node_count: int, strategies: Sequence[str],
         check: bool = False) -> List[Dict[str, Any]]:
    """One row per seed and strategy: its mix, workloads a second, the time
    over the stripped problem's, the share placed (and, with ``check``,
    whether every decision was the plain scan's)."""
    rows = []
    for seed in seeds:
        made = problem(seed, node_count, node_count * 10)
        stripped = mixes.strip(made)
        for strategy in strategies:
            seconds, _, _, result = run_once(strategy, made)
            plain = run_once(strategy, stripped)[0]
            row: Dict[str, Any] = {
                "seed": seed, "strategy": strategy, "nodes": node_count,
                "per_s": len(made[1]) / seconds, "vs_plain": seconds / plain,
                "placed": sum(node is not None for node in result.values()) / len(made[1]),
                "mix": parameters(seed)}
            if check:
                row["identical"] = dict(result) == plain_decisions(strategy, made)
            rows.append(row)
    return rows


def _shown(drawn: Dict[str, Any]) -> str:
    """The choices of a mix that add something (no zero, no ``False``)."""
    return " ".join(f"{name}={value}" for name, value in drawn.items()
                    if value not in (0, 0.0, None, False))


def table(rows: Sequence[Dict[str, Any]]) -> str:
    """The rows, the largest time over the stripped problem's first."""
    lines = [f"{'seed':>5} {'strategy':<12} {'per s':>8} {'vs plain':>9} {'placed':>7}"
             f"{' same' if rows and 'identical' in rows[0] else ''}  mix"]
    for row in sorted(rows, key=lambda row: -row["vs_plain"]):
        same = (" yes " if row["identical"] else " NO  ") if "identical" in row else ""
        lines.append(f"{row['seed']:>5} {row['strategy']:<12} {row['per_s']:>8.0f} "
                     f"{row['vs_plain']:>9.2f} {row['placed']:>7.2f}{same}  "
                     f"{_shown(row['mix'])}")
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> List[Dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--seeds", type=int, nargs=2, default=(0, 12), metavar=("FIRST", "END"))
    parser.add_argument("--strategies", nargs="+", default=list(STRATEGIES))
    parser.add_argument("--check", action="store_true",
                        help="also place with the index off and compare every decision")
    parser.add_argument("--json", help="write the rows to this file")
    args = parser.parse_args(argv)
    rows = hunt(range(*args.seeds), args.nodes, args.strategies, args.check)
    print(table(rows))
    if rows:
        slowest, costliest = worst(rows)
        print(f"worst: {slowest:.0f} workloads a second; {costliest:.2f} times the stripped "
              f"problem")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(rows, out, indent=1)
    return rows


def worst(rows: Sequence[Dict[str, Any]]) -> Tuple[float, float]:
    """The lowest workloads a second and the largest time over the stripped
    problem's among ``rows``."""
    return min(row["per_s"] for row in rows), max(row["vs_plain"] for row in rows)


if __name__ == "__main__":
    main()
