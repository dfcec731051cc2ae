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

With ``--lifecycle`` each mix lives instead of being placed once: a seeded
run of :data:`LIFE_STEPS` steps (batches placed, some all-or-nothing;
workloads released; nodes removed, most often those with the fewest
resources, whose leaving changes what a class's columns hold; nodes added,
some bringing a resource no node had; cordons, uncordons and drains;
explanations of the workloads left over; workloads recorded as already
running, beyond a node's room as often as not; and the indexed distributor
replaced by its snapshot or a copy) is applied to the distributor and to
one with the index off. Every answer must be the same, and the two states
after every step (the placements; the whole snapshot every
:data:`LIFE_SNAPSHOT` steps and at the end); the row says whether they
were, and the first step where they were not::

    python benchmarks/hunt.py --nodes 400 --seeds 0 20 --lifecycle
"""
import argparse
import copy
import json
import os
import pickle
import random
import sys
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple
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


def problem(seed: int, node_count: int, workload_count: int,
            drawn: Optional[Dict[str, Any]] = None) -> mixes.Problem:
    """Node dicts and workload dicts of the mix of ``seed`` (or of the
    choices ``drawn``, drawn with ``seed``)."""
    if drawn is None:
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


#: Steps of a lifecycle (see the module docstring), and how often the whole
#: snapshots of the two distributors are compared (the placements are
#: compared after every step).
LIFE_STEPS = 60
LIFE_SNAPSHOT = 10


#: The ways a lifecycle replaces the indexed distributor by an equal one.
RENEWALS: Dict[str, Callable[[Distributor], Distributor]] = {
    "snapshot": lambda distributor: type(distributor).from_dict(distributor.to_dict()),
    "pickle": lambda distributor: pickle.loads(pickle.dumps(distributor)),
    "copy": copy.copy,
    "deepcopy": copy.deepcopy,
}


def lifecycle(seed: int, node_count: int, strategy: str, steps: int = LIFE_STEPS,
              drawn: Optional[Dict[str, Any]] = None, per_node: int = 12) -> Dict[str, Any]:
    """Run the lifecycle of ``seed``'s mix (or of the choices ``drawn``;
    see the module docstring) on ``strategy`` with the index on and off;
    the row: the mix, the steps run, whether every answer and state was
    the same, and the first step where one was not (``None``). The mix
    has ``per_node`` workloads a node, placed in about a third of the
    steps, up to an eighth of them at a time."""
    mix = parameters(seed) if drawn is None else drawn
    nodes, workloads = problem(seed, node_count, node_count * per_node, mix)
    spare, _ = problem(seed + 1_000_000, max(4, node_count // 4), 0, mix)
    rng = random.Random(f"hunt/life/{seed}/{node_count}/{strategy}")
    fast = build(strategy, nodes)
    with mock.patch.object(Distributor, "_indexed", False):
        plain = build(strategy, nodes)
    batch = max(1, len(workloads) // 16)
    left = list(workloads)
    joined = recorded = 0
    row: Dict[str, Any] = {"seed": seed, "strategy": strategy, "nodes": node_count,
                           "mix": mix, "steps": 0, "identical": True,
                           "differs_at": None}
    for step in range(steps):
        action = rng.choices(
            ["place", "release", "remove", "add", "cordon", "drain", "explain", "renew",
             "record"],
            weights=[6, 3, 2, 2, 2, 1, 1, 1, 1])[0]
        names = sorted(fast.assignments)
        node_names = [node.name for node in fast.nodes]
        do: Callable[[Distributor], Any]
        if action == "place" and left:
            taken = rng.randint(1, 2 * batch)
            loads, left = left[:taken], left[taken:]
            whole = rng.random() < 0.15
            do = lambda side: side.attempt_assign_loads(loads, all_or_nothing=whole)  # noqa: E731
        elif action == "release" and names:
            released = rng.sample(names, max(1, int(len(names) * rng.uniform(0.05, 0.4))))
            do = lambda side: side.release_loads(released)  # noqa: E731
        elif action == "remove" and len(node_names) > 2:
            many = max(1, int(len(node_names) * rng.uniform(0.01, 0.08)))
            if rng.random() < 0.5:  # (those with the fewest resources first)
                ranked = sorted(fast.nodes, key=lambda node: (len(node.resources), node.name))
                removed = [node.name for node in ranked[:many]]
            else:
                removed = rng.sample(node_names, many)
            do = lambda side: side.remove_nodes(removed)  # noqa: E731
        elif action == "add":
            new = []
            for item in rng.sample(spare, rng.randint(1, len(spare))):
                joined += 1
                resources = dict(item["resources"])
                if rng.random() < 0.2:
                    resources[f"new-{rng.randrange(4)}"] = rng.randrange(1, 9)
                new.append({"name": f"j{joined:06d}", "resources": resources})
            do = lambda side: side.add_nodes(new)  # noqa: E731
        elif action == "cordon" and node_names:
            chosen = rng.sample(node_names, min(len(node_names), rng.randint(1, 8)))
            on = rng.random() < 0.6
            do = lambda side: [(side.cordon if on else side.uncordon)(name)  # noqa: E731
                               for name in chosen]
        elif action == "drain" and node_names:
            drained = rng.choice(node_names)
            do = lambda side: side.drain(drained)  # noqa: E731
        elif action == "explain":
            probes = [load for load in rng.sample(workloads, min(len(workloads), 40))
                      if load["name"] not in fast.assignments]
            do = lambda side: {name: str(found)  # noqa: E731
                               for name, found in side.explain_all(probes).items()}
        elif action == "record" and node_names:
            # (workloads already running, of what the node has, beyond its
            # room as often as not: its room left may fall below zero)
            host = rng.choice(node_names)
            capacity = fast.node_state(host).capacity
            counted = [key for key, value in capacity.items() if value > 0]
            running = []
            for _ in range(rng.randint(1, 3)):
                recorded += 1
                running.append({"name": f"r{recorded:06d}", "requirements": {
                    key: round(float(capacity[key]) * rng.uniform(0.1, 0.9), 2)
                    for key in rng.sample(counted, min(len(counted), rng.randint(1, 3)))}})
            do = lambda side: side.record_running(host, running)  # noqa: E731
        elif action == "renew":
            how = rng.choice(sorted(RENEWALS))
            renewed = _outcome(RENEWALS[how], fast)
            if renewed[0] == "raised":  # (a crash is a difference too)
                row["identical"], row["differs_at"] = False, {
                    "step": step, "action": action, "raised": repr(renewed)}
                break
            fast = renewed[1]
            do = lambda side: None  # noqa: E731  (renewed above, on one side)
        else:
            continue
        answers = [_outcome(do, side) for side in (fast, plain)]
        row["steps"] = step + 1
        same = answers[0] == answers[1] and fast.assignments == plain.assignments
        if same and step % LIFE_SNAPSHOT == LIFE_SNAPSHOT - 1:
            same = fast.to_dict() == plain.to_dict()
        if not same:
            row["identical"], row["differs_at"] = False, {
                "step": step, "action": action, "answers": repr(answers)[:2000]}
            break
    else:  # (and the whole state at the end)
        if fast.to_dict() != plain.to_dict():
            row["identical"], row["differs_at"] = False, {"step": steps, "action": "end"}
    return row


def _outcome(do: Callable[[Distributor], Any], side: Distributor) -> Any:
    """What ``do`` returned on ``side``, or the error it raised (by kind
    and message: an error the plain scan raises too is the same answer)."""
    try:
        return ("returned", do(side))
    except Exception as error:
        return ("raised", type(error).__name__, str(error))


def lifecycles(seeds: Sequence[int], node_count: int, strategies: Sequence[str],
               json_path: Optional[str] = None) -> List[Dict[str, Any]]:
    """One :func:`lifecycle` row per seed and strategy, each told on
    standard error as it ends and the rows so far written to ``json_path``
    (a run at thousands of nodes lasts long: stopped, it keeps what it
    found)."""
    rows = []
    for seed in seeds:
        for strategy in strategies:
            rows.append(lifecycle(seed, node_count, strategy))
            print(f"seed {seed} {strategy}: {rows[-1]['steps']} steps, "
                  f"{'same' if rows[-1]['identical'] else 'DIFFERENT'}",
                  file=sys.stderr, flush=True)
            if json_path:
                with open(json_path, "w") as out:
                    json.dump(rows, out, indent=1)
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


def life_table(rows: Sequence[Dict[str, Any]]) -> str:
    """The lifecycle rows, those that differed first."""
    lines = [f"{'seed':>5} {'strategy':<12} {'steps':>5} same  mix"]
    for row in sorted(rows, key=lambda row: row["identical"]):
        same = " yes " if row["identical"] else \
            f" NO at step {row['differs_at']['step']} ({row['differs_at']['action']})"
        lines.append(f"{row['seed']:>5} {row['strategy']:<12} {row['steps']:>5}{same}  "
                     f"{_shown(row['mix'])}")
    differing = sum(not row["identical"] for row in rows)
    lines.append(f"{len(rows) - differing} of {len(rows)} lifecycles identical")
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> List[Dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--seeds", type=int, nargs=2, default=(0, 12), metavar=("FIRST", "END"))
    parser.add_argument("--strategies", nargs="+", default=list(STRATEGIES))
    parser.add_argument("--check", action="store_true",
                        help="also place with the index off and compare every decision")
    parser.add_argument("--lifecycle", action="store_true",
                        help="run each mix's lifecycle with the index on and off instead")
    parser.add_argument("--json", help="write the rows to this file")
    args = parser.parse_args(argv)
    if args.lifecycle:
        rows = lifecycles(range(*args.seeds), args.nodes, args.strategies, args.json)
        print(life_table(rows))
    else:
        rows = hunt(range(*args.seeds), args.nodes, args.strategies, args.check)
        print(table(rows))
    if rows and not args.lifecycle:
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
