"""How long do the planners take? One seeded case per strategy.

Usage: python benchmarks/planning_speed.py [--pending N] [--nodes N]
[--down NODES ...] [--full] [--strategies S ...]

Scaling up (the default): ``--nodes`` nodes (default 50) of 16 cpu and 64
memory, six workloads a node already placed, ``--pending`` workloads
(default 1,000) of random cpu and memory waiting, and three templates (8,
16 and 32 cpu, four times as much memory, costing 1, 1.8 and 3.5). Printed
per strategy: the seconds the plan took (process time), the new nodes it
asks for by template, and their cost.

Scaling down (``--down``, one case per cluster size given): that many nodes
of 16 cpu and 64 memory given five workloads of random cpu and memory a
node, two in five of them then released, so that some nodes can go and most
cannot; with ``--full``, eight workloads offered a node and none released,
so that the cluster is full and every node stays, each with its reason.
Printed per strategy and size: the seconds
:func:`~pylighthouse.plan_scale_down` took, the workloads placed, the nodes
it finds removable and the workloads it moves.
"""
import argparse
import random
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pylighthouse import plan_scale_down, plan_scale_up  # noqa: E402
from pylighthouse.distributors import distributor_class  # noqa: E402

STRATEGIES = ("Prioritized", "RoundRobin", "BinPack", "BestFit")
TEMPLATES = [{"name": "small", "resources": {"cpu": 8, "mem": 32}, "cost": 1},
             {"name": "mid", "resources": {"cpu": 16, "mem": 64}, "cost": 1.8},
             {"name": "large", "resources": {"cpu": 32, "mem": 128}, "cost": 3.5}]


def case(strategy: str, pending: int, seed: int = 1, busy: int = 50) -> Dict[str, Any]:
    """Plan the case for ``strategy`` (``busy`` nodes); return the row to print."""
    rng = random.Random(seed)
    nodes = [{"name": f"n{index}", "resources": {"cpu": 16, "mem": 64}}
             for index in range(busy)]
    cls = distributor_class(strategy)
    distributor = cls({"cpu": 1, "mem": 0.25}, nodes) if strategy == "BinPack" else cls(nodes)
    distributor.attempt_assign_loads([
        {"name": f"r{index}", "requirements": {"cpu": rng.choice((1, 2, 4)),
                                               "mem": rng.choice((2, 4, 8))}}
        for index in range(6 * busy)])
    waiting = [{"name": f"p{index}",
                "requirements": {"cpu": rng.choice((0.25, 0.5, 1, 2, 4)),
                                 "mem": rng.choice((0.5, 1, 2, 4, 8, 16))}}
               for index in range(pending)]
    start = time.process_time()
    plan = plan_scale_up(distributor, waiting, TEMPLATES)
    seconds = time.process_time() - start
    kinds = Counter(node.name.rsplit("-", 1)[0] for node in plan.new_nodes)
    return {"strategy": strategy, "nodes": busy, "pending": pending, "seconds": seconds,
            "new_nodes": dict(sorted(kinds.items())), "cost": plan.cost,
            "unplaceable": len(plan.unplaceable)}


def down_case(strategy: str, nodes: int, seed: int = 1, full: bool = False) -> Dict[str, Any]:
    """Plan scaling down a cluster of ``nodes`` for ``strategy`` (``full``:
    the full cluster); return the row to print."""
    rng = random.Random(seed)
    cls = distributor_class(strategy)
    cluster = [{"name": f"n{index:05d}", "resources": {"cpu": 16, "mem": 64}}
               for index in range(nodes)]
    distributor = cls({"cpu": 1, "mem": 0.25}, cluster) if strategy == "BinPack" \
        else cls(cluster)
    distributor.attempt_assign_loads([
        {"name": f"r{index}", "requirements": {"cpu": rng.choice((1, 2, 4)),
                                               "mem": rng.choice((2, 4, 8))}}
        for index in range((8 if full else 5) * nodes)])
    if not full:
        placed = sorted(distributor.assignments)
        distributor.release_loads(rng.sample(placed, len(placed) * 2 // 5))
    start = time.process_time()
    plan = plan_scale_down(distributor)
    seconds = time.process_time() - start
    return {"strategy": strategy, "nodes": nodes, "placed": len(distributor.assignments),
            "seconds": seconds, "removable": len(plan.removable), "moves": len(plan.moves)}


def main(argv: Optional[Sequence[str]] = None) -> List[Dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pending", type=int, default=1000, help="pending workloads")
    parser.add_argument("--nodes", type=int, default=50, help="busy nodes, when scaling up")
    parser.add_argument("--down", type=int, nargs="+", metavar="NODES",
                        help="plan scaling down clusters of these sizes instead")
    parser.add_argument("--full", action="store_true",
                        help="with --down: a full cluster, where every node stays")
    parser.add_argument("--strategies", nargs="+", default=list(STRATEGIES))
    args = parser.parse_args(argv)
    if args.down:
        rows = [down_case(strategy, nodes, full=args.full) for nodes in args.down
                for strategy in args.strategies]
        print("strategy | nodes | workloads placed | seconds | removable | moves")
        print("--- | --- | --- | --- | --- | ---")
        for row in rows:
            print(f"{row['strategy']} | {row['nodes']:,} | {row['placed']:,} | "
                  f"{row['seconds']:.2f} | {row['removable']:,} | {row['moves']:,}")
        return rows
    rows = [case(strategy, args.pending, busy=args.nodes) for strategy in args.strategies]
    print("strategy | nodes | pending | seconds | new nodes | cost")
    print("--- | --- | --- | --- | --- | ---")
    for row in rows:
        nodes = ", ".join(f"{count} {name}" for name, count in row["new_nodes"].items())
        print(f"{row['strategy']} | {row['nodes']:,} | {row['pending']:,} | "
              f"{row['seconds']:.1f} | {nodes} | {row['cost']}")
    return rows


if __name__ == "__main__":
    main()
