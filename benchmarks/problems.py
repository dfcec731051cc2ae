"""Seeded, realistic scheduling problems for the benchmarks (and their smoke test).

A problem is plain data, as a caller would hand it in: a list of node dicts
and a list of workload dicts. Nodes come from a few machine types; workloads
from a few dozen flavours; and the features real clusters use are mixed in at
fixed rates: tags, semaphores, wards with immunities, aversion groups and
decimal quantities such as 0.5 cpu. The same seed gives the same problem.
"""
import math
import random
from typing import Any, Dict, List, Tuple

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
    """``count`` node dicts: machine types, and a tag on about 1 node in 7,
    a semaphore on 1 in 5 and a ward on 1 in 13."""
    rng = random.Random(seed)
    kinds = [machine for machine in MACHINES for _ in range(machine[1])]
    result = []
    for index in range(count):
        kind, _, resources = rng.choice(kinds)
        resources = dict(resources)
        if rng.randrange(7) == 0:
            resources[TAG] = 0
        if rng.randrange(5) == 0:
            resources[SEMAPHORE] = rng.choice((1, 2, 4))
        if rng.randrange(13) == 0:
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
    """``count`` workload dicts drawn from :func:`flavours`: a tag on about 1
    in 9, a semaphore on 1 in 15, an immunity to the ward on 1 in 50 and one
    of 40 aversion groups on 1 in 4."""
    rng = random.Random(seed)
    menu = flavours()
    result = []
    for index in range(count):
        requirements = dict(rng.choice(menu))
        if rng.randrange(9) == 0:
            requirements[TAG] = 0
        if rng.randrange(15) == 0:
            requirements[SEMAPHORE] = 1
        spec: Dict[str, Any] = {"name": f"{prefix}-{index:07d}", "requirements": requirements}
        if rng.randrange(50) == 0:
            spec["immunities"] = [WARD]
        if rng.randrange(4) == 0:
            spec["aversion_groups"] = [f"group-{rng.randrange(GROUPS):02d}"]
        result.append(spec)
    return result


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
