"""Seeded, realistic scheduling problems for the benchmarks (and their smoke test).

A problem is plain data, as a caller would hand it in: a list of node dicts
and a list of workload dicts. Nodes come from a few machine types; workloads
from a few dozen flavours; and the features real clusters use are mixed in at
fixed rates: tags, semaphores, wards with immunities, aversion groups and
decimal quantities such as 0.5 cpu. Types, flavours and features come in
exact shares, shuffled, so every size has the same mix. The same seed gives
the same problem.
"""
import math
import random
from typing import Any, Dict, List, Sequence, Set, Tuple

#: Machine types: (name, share of the fleet, resources).
MACHINES = (
    ("small", 4, {"cpu": 8, "mem": 32, "disk": 200}),
    ("medium", 3, {"cpu": 16, "mem": 64, "disk": 500}),
    ("highmem", 2, {"cpu": 16, "mem": 256, "disk": 500}),
    ("large", 1, {"cpu": 64, "mem": 256, "disk": 2000}),
)
CPU = (0.25, 0.5, 1, 1.5, 2, 4)
MEM = (0.5, 1, 2, 4, 8, 16)
DISK = (1, 5, 10, 20, 50)

RUBRIC = {"cpu": 1, "mem": 0.25, "disk": 0.01}

TAG, SEMAPHORE, WARD = "ssd", "license", "dedicated"
GROUPS = 40


def nodes(count: int, seed: int = 1) -> List[Dict[str, Any]]:
    """``count`` node dicts: machine types, and a tag on 1 node in 7, a
    semaphore (1, 2 or 4 licences) on 1 in 5 and a ward on 1 in 13."""
    rng = random.Random(seed)
    kinds = dealt(rng, count, [(machine, machine[1]) for machine in MACHINES])
    tagged = chosen(rng, count, 7)
    licensed = dict(zip(sorted(chosen(rng, count, 5)),
                        dealt(rng, round(count / 5), [(1, 1), (2, 1), (4, 1)])))
    warded = chosen(rng, count, 13)
    result = []
    for index, (kind, _, resources) in enumerate(kinds):
        resources = dict(resources)
        if index in tagged:
            resources[TAG] = 0
        if index in licensed:
            resources[SEMAPHORE] = licensed[index]
        if index in warded:
            resources[WARD] = -math.inf
        result.append({"name": f"{kind}-{index:06d}", "resources": resources})
    return result


def flavours(count: int = 36, seed: int = 2) -> List[Dict[str, Any]]:
    """``count`` distinct requirement maps (cpu, mem and usually disk)."""
    rng = random.Random(seed)
    found: Dict[Tuple[Any, ...], Dict[str, Any]] = {}
    while len(found) < count:
        flavour = {"cpu": rng.choice(CPU), "mem": rng.choice(MEM)}
        if rng.randrange(4):
            flavour["disk"] = rng.choice(DISK)
        found.setdefault(tuple(sorted(flavour.items())), flavour)
    return list(found.values())


def workloads(count: int, seed: int = 3, prefix: str = "w") -> List[Dict[str, Any]]:
    """``count`` workload dicts, the :func:`flavours` in equal shares: a tag
    on 1 in 9, a semaphore on 1 in 15, an immunity to the ward on 1 in 50
    and one of the 40 aversion groups (in equal shares) on 1 in 4."""
    rng = random.Random(seed)
    menu = dealt(rng, count, [(flavour, 1) for flavour in flavours()])
    tagged = chosen(rng, count, 9)
    licensed = chosen(rng, count, 15)
    immune = chosen(rng, count, 50)
    grouped = dict(zip(sorted(chosen(rng, count, 4)),
                       dealt(rng, round(count / 4),
                             [(f"group-{group:02d}", 1) for group in range(GROUPS)])))
    result = []
    for index, flavour in enumerate(menu):
        requirements = dict(flavour)
        if index in tagged:
            requirements[TAG] = 0
        if index in licensed:
            requirements[SEMAPHORE] = 1
        spec: Dict[str, Any] = {"name": f"{prefix}-{index:07d}", "requirements": requirements}
        if index in immune:
            spec["immunities"] = [WARD]
        if index in grouped:
            spec["aversion_groups"] = [grouped[index]]
        result.append(spec)
    return result


def dealt(rng: random.Random, count: int, shares: Sequence[Tuple[Any, int]]) -> List[Any]:
    """``count`` items in random order, each in its exact share (``shares``
    pairs an item with its weight; largest remainders round): a small
    problem has the same mix as a large one, not a sample of it."""
    total = sum(weight for _, weight in shares)
    exact = [count * weight / total for _, weight in shares]
    counts = [int(value) for value in exact]
    by_remainder = sorted(range(len(shares)), key=lambda i: counts[i] - exact[i])
    for i in by_remainder[:count - sum(counts)]:
        counts[i] += 1
    items = [item for (item, _), times in zip(shares, counts) for _ in range(times)]
    rng.shuffle(items)
    return items


def chosen(rng: random.Random, count: int, every: int) -> Set[int]:
    """Exactly one index in ``every`` of ``range(count)`` (rounded), at random."""
    return set(rng.sample(range(count), round(count / every)))


def problem(node_count: int, workload_count: int, over: bool = False,
            seed: int = 0) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
    """Nodes and workloads for one benchmark size.

    Normally most workloads fit (ten workloads per node use about 80% of
    the cpu; tags and semaphores leave some out); with ``over``, the cluster is shrunk so that
    about a third of the workloads cannot be placed.
    """
    if over:
        node_count = max(1, round(node_count * OVERSUBSCRIBED))
    return (nodes(node_count, seed * 1000 + 1),
            workloads(workload_count, seed * 1000 + 3))


#: The share of the nodes kept in the over-subscribed variant (measured:
#: about a third of the workloads then find no node).
OVERSUBSCRIBED = 0.5
