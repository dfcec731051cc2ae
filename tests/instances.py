"""Hypothesis strategies for random clusters that mix every feature of SPEC.md."""
from decimal import Decimal
from math import inf

from hypothesis import strategies as st

RESOURCES = ("cpu", "mem", "disk")
RUBRICS = st.fixed_dictionaries({}, optional={
    "cpu": st.sampled_from([1, 2, 0.5, 0]),
    "mem": st.sampled_from([0.5, 0.25, 1, -1]),
    "disk": st.sampled_from([0.025, 0.1, 0]),
    "gpu": st.sampled_from([3, 0]),
    "flies": st.sampled_from([1, -1]),
})

tenths = st.integers(0, 40).map(lambda n: n / 10)  # 0.0 .. 4.0 as floats
amounts = st.one_of(st.integers(0, 12), tenths, st.integers(0, 12).map(Decimal))


def picked(values):
    """sampled_from, without hypothesis writing a repr of every value (some
    cannot be written: ints of more than 4,300 digits; hypothesis writes its
    strategies out, in a note, when a draw is given up)."""
    return st.integers(0, len(values) - 1).map(lambda index: values[index])


@st.composite
def node_specs(draw, name):
    resources = {key: draw(amounts) for key in RESOURCES if draw(st.booleans()) or key == "cpu"}
    if draw(st.integers(0, 6)) == 0:
        resources["cpu"] = inf  # unlimited
    if draw(st.integers(0, 6)) == 0:
        resources["gpu"] = draw(st.integers(0, 2))
    if draw(st.integers(0, 6)) == 0:
        resources["ssd"] = 0  # a tag
    if draw(st.integers(0, 4)) == 0:
        resources["slots"] = draw(st.integers(1, 3))  # a semaphore
    if draw(st.integers(0, 6)) == 0:
        resources["flies"] = -draw(st.integers(1, 5))  # a shortcoming
    if draw(st.integers(0, 7)) == 0:
        resources["spiders"] = -inf  # a ward
    return {"name": name, "resources": resources}


@st.composite
def workload_specs(draw, name):
    requirements = {key: draw(tenths) for key in RESOURCES if draw(st.booleans())}
    if draw(st.integers(0, 8)) == 0:
        requirements["gpu"] = 1
    if draw(st.integers(0, 8)) == 0:
        requirements["ssd"] = 0
    if draw(st.integers(0, 5)) == 0:
        requirements["slots"] = 1
    if draw(st.integers(0, 6)) == 0:
        requirements["flies"] = -draw(st.integers(0, 5))
    spec = {"name": name, "requirements": requirements}
    if draw(st.integers(0, 5)) == 0:
        spec["immunities"] = draw(st.lists(
            st.sampled_from(["spiders", "flies", "cpu", "mem"]), max_size=2, unique=True))
    if draw(st.integers(0, 2)) == 0:
        spec["aversion_groups"] = draw(st.lists(
            st.sampled_from(["a", "b", "c"]), min_size=1, max_size=2, unique=True))
    return spec


@st.composite
def clusters(draw, max_nodes=6):
    count = draw(st.integers(0, max_nodes))
    return [draw(node_specs(f"node-{i}")) for i in range(count)]


@st.composite
def batches(draw, prefix, max_size=8):
    count = draw(st.integers(0, max_size))
    return [draw(workload_specs(f"{prefix}-{i}")) for i in range(count)]


@st.composite
def operations(draw, max_steps=8, prefix="s"):
    """A sequence of lifecycle operations, with names resolved later against state."""
    steps = []
    for index in range(draw(st.integers(1, max_steps))):
        kind = draw(st.sampled_from(
            ["assign", "assign", "assign", "all_or_nothing", "release", "add",
             "cordon", "uncordon", "drain", "remove", "record"]))
        if kind in ("assign", "all_or_nothing"):
            steps.append((kind, draw(batches(f"{prefix}{index}w"))))
        elif kind == "add":
            steps.append((kind, [draw(node_specs(f"{prefix}{index}n{i}"))
                                 for i in range(draw(st.integers(1, 2)))]))
        elif kind == "record":
            steps.append((kind, (draw(st.randoms(use_true_random=False)), f"{prefix}{index}r")))
        else:
            steps.append((kind, draw(st.randoms(use_true_random=False))))
    return steps


def recorded_specs(keys, seed, prefix):
    """One or two workloads recorded as already running on a node with
    resources ``keys`` (see the ``record`` operation): each asks for one
    to three of them, as much as the node has or more as often as not (no
    fit check: its room may fall below zero), some in an aversion group."""
    import random
    rng = random.Random(seed)
    keys = sorted(keys)
    specs = []
    for at in range(rng.randint(1, 2)):
        asked = rng.sample(keys, min(len(keys), rng.randint(1, 3)))
        spec = {"name": f"{prefix}{at}",
                "requirements": {key: rng.choice([0, 0.5, 1, 2, 3, 7]) for key in asked}}
        if rng.random() < 0.3:
            spec["aversion_groups"] = [rng.choice(["a", "b", "c"])]
        specs.append(spec)
    return specs


STRATEGIES = ("Prioritized", "RoundRobin", "BinPack", "BestFit")


def distributor_of(strategy, rubric, nodes):
    """A distributor of ``strategy`` over ``nodes``; ``rubric`` for BinPack,
    and for BestFit when not empty."""
    from pylighthouse import (BestFitDistributor, BinPackDistributor, PrioritizedDistributor,
                              RoundRobinDistributor)
    if strategy == "BinPack":
        return BinPackDistributor(rubric, nodes)
    if strategy == "BestFit":
        return BestFitDistributor(nodes, rubric or None)
    return (PrioritizedDistributor if strategy == "Prioritized" else RoundRobinDistributor)(nodes)
