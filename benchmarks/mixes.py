"""Seeded problems for the benchmark matrix: one cluster mix per feature that real clusters use.

Written independently of ``problems.py`` (which deals four machine types and
a few dozen flavours). Every mix starts from the same plain base, ten
workloads per node using about two thirds of the cluster's cpu and memory,
and changes one thing:

* ``types``: the base: four machine types, workloads of cpu, mem and disk;
* ``shapes``: every node drawn on its own (hundreds of distinct shapes, and
  some nodes with extra counted resources such as ``nvme`` or ``fpga``);
* ``scarce``: a ``gpu`` (2 each) on 1 node in 10, asked for (1) by 1
  workload in 20: it runs out part-way through;
* ``groups40``: 1 workload in 4 in one of 40 aversion groups;
* ``groups4000``: 1 workload in 4 in one of 4,000 aversion groups;
* ``over``: requirements tripled: about half the workloads find no node;
* ``decimals``: capacities and requirements with two decimal digits;
* ``hostname``: every node bears its own tag ``host-<name>`` (capacity 0);
* ``pinned``: ``hostname``, and 1 workload in 10 asks for one node's tag;
* ``kinds``: nine more kinds of counted resource (devices, licences), each
  on about 3 nodes in 10 (1 to 49 of it), and 3 workloads in 4 asking for
  one to three kinds (1 to 3 of each); each kind is dealt to nodes on its
  own, so no two kinds sit on the same set of nodes (a node has none to
  eight of them, two or three mostly);
* ``devices``: 200 kinds of device, each node with three of them (2 to 8
  of each), so that a kind is on about 3 nodes in 200 and a pair of kinds
  on a few nodes; 3 workloads in 4 ask for one or two kinds that some node
  has together (1 of each);
* ``all``: shapes, scarce, groups40, decimals and pinned together, with a
  ward on 1 node in 13 and an immunity to it on 1 workload in 50;
* ``labels``: labels that many nodes share, as a cloud's clusters carry
  them (tags, capacity 0): every node in one of three zones and of one
  of twelve instance types, half of them with ``ssd``, 3 in 10 with
  ``spot``; 3 workloads in 10 ask for a zone, 1 in 10 for an instance
  type, 1 in 10 for ``ssd`` in a zone. Added after the index was written,
  as a check on a case it was not tuned for.

:func:`oversubscribed` asks three times as much for every workload, so
that many find no node whatever the mix. :func:`strip` turns a problem
into the same one without its features
(cpu, mem and disk only, no groups, no immunities, whole numbers): the
reference point for what the features cost. :func:`nowhere` makes workloads
that fit no node of a cluster: half need more than any node has, half need
a combination no node has (the cpu of the roomiest cpu node with the memory
of the roomiest memory node), each with its own quantities.
"""
import math
import random
from typing import Any, Dict, List, Sequence, Tuple

Problem = Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]

#: The strategies the benchmarks measure, in the order their tables give them.
STRATEGIES = ("Prioritized", "RoundRobin", "BinPack", "BestFit")


def size_of(size: str) -> Tuple[int, int]:
    """A size as the benchmarks name it, ``"NODESxWORKLOADS"``, as two numbers."""
    nodes, workloads = size.lower().split("x")
    return int(nodes), int(workloads)


RUBRIC = {"cpu": 1, "mem": 0.25, "disk": 0.01, "gpu": 4}
TYPES = ((8, 32, 200, 4), (16, 64, 500, 3), (32, 128, 1000, 2), (64, 256, 2000, 1))
CPU = (0.25, 0.5, 1, 1, 2, 2, 4)
MEM = (0.5, 1, 2, 4, 8, 16)
DISK = (1, 5, 10, 20, 50)
EXTRAS = ("nvme", "fpga", "licence")
KINDS = ("gpu-a", "gpu-b", "fpga-x", "nvme-x", "licence-a", "licence-b", "hbm", "iops",
         "net")
DEVICES = 200
ZONES = ("zone-a", "zone-b", "zone-c")
INSTANCE_TYPES = tuple(f"type-{index:02d}" for index in range(12))

MIXES = {
    "types": set(),
    "shapes": {"shapes"},
    "scarce": {"scarce"},
    "groups40": {"groups40"},
    "groups4000": {"groups4000"},
    "over": {"over"},
    "decimals": {"decimals"},
    "hostname": {"hostname"},
    "pinned": {"hostname", "pinned"},
    "kinds": {"kinds"},
    "devices": {"devices"},
    "all": {"shapes", "scarce", "groups40", "decimals", "hostname", "pinned", "ward"},
    "labels": {"labels"},
}


def problem(mix: str, node_count: int, workload_count: int, seed: int = 0,
            prefix: str = "") -> Problem:
    """Node dicts and workload dicts of ``mix`` (see the module docstring)."""
    features = MIXES[mix]
    rng = random.Random(f"{mix}/{seed}/{node_count}/{workload_count}/{prefix}")
    nodes = [_node(rng, features, f"{prefix}n{index:06d}") for index in range(node_count)]
    names = [node["name"] for node in nodes]
    workloads = [_workload(rng, features, f"{prefix}w{index:07d}", names)
                 for index in range(workload_count)]
    if "devices" in features and nodes:
        for load in workloads:
            if rng.random() < 0.75:
                held = [key for key in rng.choice(nodes)["resources"]
                        if key.startswith("device-")]
                for kind in rng.sample(held, rng.randint(1, 2)):
                    load["requirements"][kind] = 1
    return nodes, workloads


def _node(rng: random.Random, features: Any, name: str) -> Dict[str, Any]:
    if "shapes" in features:
        cpu = rng.randrange(4, 97, 2)
        resources: Dict[str, Any] = {"cpu": cpu, "mem": cpu * rng.choice((2, 3, 4, 6, 8)),
                                     "disk": rng.randrange(100, 4001, 50)}
        if rng.random() < 0.2:
            resources[rng.choice(EXTRAS)] = rng.randrange(1, 9)
    else:
        cpu, mem, disk, _ = rng.choices(TYPES, weights=[t[3] for t in TYPES])[0]
        resources = {"cpu": cpu, "mem": mem, "disk": disk}
    if "decimals" in features:
        resources = {key: _decimal(rng, value) for key, value in resources.items()}
    if "scarce" in features and rng.random() < 0.1:
        resources["gpu"] = 2
    if "kinds" in features:
        for kind in KINDS:
            if rng.random() < 0.3:
                resources[kind] = rng.randrange(1, 50)
    if "devices" in features:
        for kind in rng.sample(range(DEVICES), 3):
            resources[f"device-{kind:03d}"] = rng.randint(2, 8)
    if "hostname" in features:
        resources[f"host-{name}"] = 0
    if "labels" in features:
        resources[rng.choice(ZONES)] = 0
        resources[rng.choice(INSTANCE_TYPES)] = 0
        if rng.random() < 0.5:
            resources["ssd"] = 0
        if rng.random() < 0.3:
            resources["spot"] = 0
    if "ward" in features and rng.random() < 1 / 13:
        resources["dedicated"] = -math.inf
    return {"name": name, "resources": resources}


def _workload(rng: random.Random, features: Any, name: str,
              nodes: Sequence[str]) -> Dict[str, Any]:
    scale = 3 if "over" in features else 1
    requirements: Dict[str, Any] = {"cpu": rng.choice(CPU) * scale,
                                    "mem": rng.choice(MEM) * scale}
    if rng.random() < 0.75:
        requirements["disk"] = rng.choice(DISK) * scale
    if "decimals" in features:
        requirements = {key: _decimal(rng, value) for key, value in requirements.items()}
    spec: Dict[str, Any] = {"name": name, "requirements": requirements}
    if "scarce" in features and rng.random() < 0.05:
        requirements["gpu"] = 1
    if "kinds" in features:
        for kind in rng.sample(KINDS, rng.randrange(0, 4)):
            requirements[kind] = rng.randrange(1, 4)
    if "labels" in features:
        draw = rng.random()
        if draw < 0.3:
            requirements[rng.choice(ZONES)] = 0
        elif draw < 0.4:
            requirements[rng.choice(INSTANCE_TYPES)] = 0
        elif draw < 0.5:
            requirements["ssd"] = 0
            requirements[rng.choice(ZONES)] = 0
    if "pinned" in features and nodes and rng.random() < 0.1:
        requirements[f"host-{rng.choice(nodes)}"] = 0
    if "groups40" in features and rng.random() < 0.25:
        spec["aversion_groups"] = [f"group-{rng.randrange(40):02d}"]
    if "groups4000" in features and rng.random() < 0.25:
        spec["aversion_groups"] = [f"group-{rng.randrange(4000):04d}"]
    if "ward" in features and rng.random() < 0.02:
        spec["immunities"] = ["dedicated"]
    return spec


def _decimal(rng: random.Random, value: float) -> float:
    """``value`` moved by up to 20%, kept to two decimal digits (never 0)."""
    return max(0.01, round(value * rng.uniform(0.8, 1.2), 2))


def strip(problem: Problem) -> Problem:
    """The same problem without features: cpu, mem and disk only, whole
    numbers (rounded up), no groups or immunities."""
    nodes, workloads = problem

    def plain(quantities: Dict[str, Any]) -> Dict[str, Any]:
        return {key: math.ceil(value) for key, value in quantities.items()
                if key in ("cpu", "mem", "disk")}

    return ([{"name": node["name"], "resources": plain(node["resources"])} for node in nodes],
            [{"name": load["name"], "requirements": plain(load["requirements"])}
             for load in workloads])


def oversubscribed(problem: Problem, factor: int = 3) -> Problem:
    """The same problem with every workload asking ``factor`` times as much
    of each resource (tags and other zeros stay zero): on every mix, many
    workloads then find no node."""
    nodes, workloads = problem
    return nodes, [dict(load, requirements={key: value * factor if value else value
                                            for key, value in load["requirements"].items()})
                   for load in workloads]


def nowhere(nodes: Sequence[Dict[str, Any]], count: int, seed: int = 0) -> List[Dict[str, Any]]:
    """``count`` workloads, each with its own quantities, that fit no node of
    ``nodes`` at their capacity (so none fits after any placement either)."""
    rng = random.Random(seed)
    cpu = max(node["resources"].get("cpu", 0) for node in nodes)
    mem = max(node["resources"].get("mem", 0) for node in nodes)
    # The combination: the cpu of a cpu-rich node and the memory of a
    # memory-rich one, which no single node has.
    both = sorted((node["resources"].get("cpu", 0), node["resources"].get("mem", 0))
                  for node in nodes)
    result = []
    for index in range(count):
        if index % 2:
            requirements = {"cpu": round(cpu * rng.uniform(1.01, 2), 2),
                            "mem": round(rng.uniform(0.5, 4), 2)}
        else:
            need_cpu = round(cpu * rng.uniform(0.7, 1.0), 2)
            richest = max((m for c, m in both if c >= need_cpu), default=0)
            requirements = {"cpu": need_cpu,
                            "mem": round(max(richest * 1.01 + 0.01,
                                             mem * rng.uniform(0.5, 1.0)), 2)}
        result.append({"name": f"nowhere-{seed}-{index:06d}", "requirements": requirements})
    return result
