"""How good are the elastic plans? Seeded instances, one table per planner.

Usage: python benchmarks/planning_quality.py [--seeds N]

Scale-up: for each strategy and kind of instance, the new nodes planned
against two bounds and against the naive loop that adds one node at a time
(``tests/planning_twin.py``). "leftover" is the issue's simple bound: the
demand of the workloads the existing nodes leave waiting when the pending
work is submitted in the order generated, per resource, divided by the
largest template capacity, rounded up. "floor" is
``pylighthouse.planning.lower_bound``, a true lower bound that also counts
every crumb of free room on the existing nodes as usable. The naive loop
submits the work in the order generated, as an autoscaler that knows
nothing of the plan's ``order`` would; "reordered" counts the plans that
submit it in another order (largest first).
Scale-down: the nodes the plan removes, the workloads it moves, and whether
planning again on the applied result finds anything more (it must not).
"""
import argparse
import math
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from planning_twin import one_node_at_a_time  # noqa: E402
from pylighthouse import (BinPackDistributor, Distributor, Node,  # noqa: E402
                          PrioritizedDistributor, RoundRobinDistributor, Workload,
                          plan_scale_down, plan_scale_up)
from pylighthouse.planning import lower_bound  # noqa: E402

STRATEGIES = ("Prioritized", "RoundRobin", "BinPack")
SHAPES = ({"cpu": 16, "mem": 64}, {"cpu": 8, "mem": 32}, {"cpu": 32, "mem": 128})
# Workload sizes: cpu, and memory per cpu (so the two are loosely correlated).
CPUS = (0.25, 0.5, 1, 1, 2, 2, 4)
MEM_PER_CPU = (1, 2, 4, 4)
KINDS = {
    # name: (templates as (prefix, resources, cost), largest workload as a share of cpu 16)
    "one shape, small work": ([("worker", {"cpu": 16, "mem": 64}, 1)], 1),
    "one shape, large work": ([("worker", {"cpu": 16, "mem": 64}, 1)], 2),
    "two shapes": ([("small", {"cpu": 8, "mem": 32}, 1),
                    ("large", {"cpu": 32, "mem": 128}, 3)], 1),
}


def make(strategy, nodes):
    if strategy == "BinPack":
        return BinPackDistributor({"cpu": 1, "mem": 0.25}, nodes)
    if strategy == "RoundRobin":
        return RoundRobinDistributor(nodes)
    return PrioritizedDistributor(nodes)


def workloads(rng, prefix, count, scale=1):
    loads = []
    for number in range(1, count + 1):
        cpu = rng.choice(CPUS) * scale
        loads.append(Workload(f"{prefix}-{number}",
                              {"cpu": cpu, "mem": cpu * rng.choice(MEM_PER_CPU)},
                              aversion_groups=[f"app-{rng.randrange(8)}"]
                              if rng.random() < 0.2 else ()))
    return loads


def cluster(rng, strategy, nodes, fill):
    """A cluster of ``nodes`` nodes, its placed work about ``fill`` of its cpu."""
    distributor = make(strategy, [Node(f"node-{n}", rng.choice(SHAPES))
                                  for n in range(1, nodes + 1)])
    total = float(sum(node.resources["cpu"] for node in distributor.nodes))
    average = sum(CPUS) / len(CPUS)
    placed = workloads(rng, "running", int(total * fill / average))
    distributor.attempt_assign_loads(placed)
    return distributor


def leftover_bound(distributor, pending, templates):
    """The issue's simple bound: what the existing nodes leave waiting, over capacity."""
    copy = Distributor.from_dict(distributor.to_dict())
    result = copy.attempt_assign_loads(pending)
    waiting = [load for load in pending if result[load.name] is None]
    nodes = 0
    for key in ("cpu", "mem"):
        capacity = max(resources[key] for _, resources, _ in templates)
        nodes = max(nodes, math.ceil(sum(load.requirements[key] for load in waiting) / capacity))
    return nodes


def scale_up_row(strategy, kind, seeds):
    templates, scale = KINDS[kind]
    planned = bound = floor = naive = worse = reordered = 0
    worst = 0.0
    seconds = 0.0
    for seed in range(seeds):
        rng = random.Random(f"{strategy}/{kind}/{seed}")
        distributor = cluster(rng, strategy, rng.randint(5, 15), 0.6)
        pending = workloads(rng, "pending", rng.randint(40, 120), scale)
        shapes = [{"name": prefix, "resources": resources, "cost": cost}
                  for prefix, resources, cost in templates]
        start = time.perf_counter()
        plan = plan_scale_up(distributor, pending, shapes)
        seconds += time.perf_counter() - start
        assert not plan.unplaceable, plan.unplaceable
        least = leftover_bound(distributor, pending, templates)
        floor += lower_bound(distributor, pending, shapes)
        added, _ = one_node_at_a_time(distributor, pending,
                                      [(prefix, resources) for prefix, resources, _ in templates])
        planned += len(plan.new_nodes)
        bound += least
        naive += len(added)
        worse += len(plan.new_nodes) > len(added)
        reordered += plan.order != [load.name for load in pending]
        worst = max(worst, len(plan.new_nodes) / least if least else 1.0)
    return (strategy, kind, seeds, planned, bound, f"{planned / bound:.3f}", f"{worst:.2f}",
            floor, naive, worse, reordered, f"{seconds / seeds * 1000:.0f}")


def scale_down_row(strategy, seeds):
    nodes = removed = moved = again = 0
    seconds = 0.0
    for seed in range(seeds):
        rng = random.Random(f"down/{strategy}/{seed}")
        distributor = cluster(rng, strategy, rng.randint(10, 25), 0.6)
        # Much of the work finishes, unevenly: room to give nodes back.
        finished = [name for name in distributor.assignments if rng.random() < 0.5]
        distributor.release_loads(finished)
        for node in distributor.nodes:
            if rng.random() < 0.1:
                distributor.cordon(node.name)
        values = {node.name: round(rng.random(), 2) for node in distributor.nodes
                  if rng.random() < 0.5}
        start = time.perf_counter()
        plan = plan_scale_down(distributor, values=values)
        seconds += time.perf_counter() - start
        nodes += len(distributor.nodes)
        for name in plan.removable:
            assert None not in distributor.drain(name).values()
            distributor.remove_nodes([name])
        removed += len(plan.removable)
        moved += len(plan.moves)
        again += len(plan_scale_down(distributor).removable)
    return (strategy, seeds, nodes, removed, moved, again, f"{seconds / seeds * 1000:.0f}")


def table(header, rows):
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows)]
    lines = ["  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip()
             for row in [header] + rows]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10, help="instances per row (default 10)")
    seeds = parser.parse_args().seeds
    up = [scale_up_row(strategy, kind, seeds) for kind in KINDS for strategy in STRATEGIES]
    print("Scale-up: new nodes planned, against the bounds and one node at a time")
    print(table(("strategy", "instances", "n", "planned", "leftover", "ratio", "worst",
                 "floor", "one-at-a-time", "worse", "reordered", "ms/plan"), up))
    print()
    down = [scale_down_row(strategy, seeds) for strategy in STRATEGIES]
    print("Scale-down: nodes removed, and what a second run on the result finds")
    print(table(("strategy", "n", "nodes", "removed", "moves", "second run", "ms/plan"),
                down))


if __name__ == "__main__":
    main()
