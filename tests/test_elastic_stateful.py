"""A long simulation of the elastic manager, invariants checked after every step.

Hypothesis drives random arrivals, completions, cycles, time passing, failed
creations, provider faults, revocations (with and without notice) and
reopening from the store. After every step: every live workload is placed or
pending exactly once, the books match, the provider holds nothing the manager
forgot and never more than max_nodes. A plain loop of thousands of cycles
checks the same.

PYLIGHTHOUSE_ELASTIC_PROFILE=long runs many more examples and steps.
"""
import os
import random
import shutil
import tempfile

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (RuleBasedStateMachine, initialize, invariant,
                                 precondition, rule)

from elastic_checks import check_books, check_live, check_provider
from pylighthouse import BinPackDistributor, LighthouseException, PrioritizedDistributor, \
    RoundRobinDistributor
from pylighthouse.elastic import ElasticManager, SimulatedProvider

LONG = os.environ.get("PYLIGHTHOUSE_ELASTIC_PROFILE") == "long"
TEMPLATES = [{"name": "vm", "resources": {"cpu": 4, "mem": 8}},
             {"name": "big", "resources": {"cpu": 8, "mem": 16, "gpu": 1}, "cost": 3}]
STRATEGIES = {"Prioritized": lambda: PrioritizedDistributor([]),
              "RoundRobin": lambda: RoundRobinDistributor([]),
              "BinPack": lambda: BinPackDistributor({"cpu": 1, "mem": 0.5}, [])}
SCRATCH = "/dev/shm" if os.path.isdir("/dev/shm") else None


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class ElasticCluster(RuleBasedStateMachine):
    """The manager under random traffic and faults, against a record of what is live."""

    @initialize(strategy=st.sampled_from(sorted(STRATEGIES)),
                max_nodes=st.integers(1, 6), min_nodes=st.integers(0, 1),
                ready_after=st.integers(0, 2), durable=st.booleans())
    def start(self, strategy, max_nodes, min_nodes, ready_after, durable):
        self.directory = tempfile.mkdtemp(dir=SCRATCH) if durable else None
        store = None if self.directory is None else os.path.join(self.directory, "m.db")
        self.provider = SimulatedProvider(
            ready_after=ready_after, fail=[f"vm-{n}" for n in (2, 3, 7)],
            path=None if store is None else store + ".provider")
        self.clock = Clock()
        self.max_nodes = max_nodes
        self.manager = ElasticManager(
            STRATEGIES[strategy](), self.provider, TEMPLATES, min_nodes=min_nodes,
            max_nodes=max_nodes, enable_delete=True, intervals={"add": 5, "delete": 10},
            store=store, clock=self.clock)
        self.store = store
        self.live = set()
        self.count = 0

    def teardown(self):
        manager = getattr(self, "manager", None)
        if manager is not None:
            manager.close()
        if getattr(self, "directory", None):
            shutil.rmtree(self.directory, ignore_errors=True)

    # ------------------------------------------------------------ traffic

    @rule(sizes=st.lists(st.tuples(st.integers(1, 8), st.integers(0, 16), st.booleans()),
                         min_size=1, max_size=4))
    def submit(self, sizes):
        loads = []
        for cpu, mem, gpu in sizes:
            self.count += 1
            requirements = {"cpu": cpu, "mem": mem}
            if gpu:
                requirements["gpu"] = 1
            loads.append({"name": f"w{self.count}", "requirements": requirements})
        result = self.manager.submit(loads)
        assert list(result) == [load["name"] for load in loads]
        self.live.update(result)

    @rule(data=st.data())
    def submit_a_duplicate(self, data):
        if not self.live:
            return
        name = data.draw(st.sampled_from(sorted(self.live)))
        before = self.manager._parts()
        with pytest.raises(LighthouseException):
            self.manager.submit([{"name": "fresh", "requirements": {}},
                                 {"name": name, "requirements": {"cpu": 1}}])
        assert self.manager._parts() == before

    @precondition(lambda self: self.live)
    @rule(data=st.data())
    def finish(self, data):
        names = data.draw(st.lists(st.sampled_from(sorted(self.live)), min_size=1,
                                   max_size=3, unique=True))
        self.manager.finish(names)
        self.live.difference_update(names)

    @rule(force=st.booleans())
    def cycle(self, force):
        report = self.manager.manage_once(force=force)
        assert set(report.placed) <= self.live
        assert report.pending == list(self.manager.pending)

    @rule(seconds=st.integers(1, 12))
    def time_passes(self, seconds):
        self.clock.now += seconds

    # ------------------------------------------------------------- faults

    @rule(method=st.sampled_from(["create_nodes", "delete_nodes", "poll"]))
    def provider_fails_next(self, method):
        self.provider.fail_next(method)

    @precondition(lambda self: self.manager.nodes)
    @rule(data=st.data(), wait=st.sampled_from([0, 0, 60]), notice=st.booleans())
    def revoke(self, data, wait, notice):
        node = data.draw(st.sampled_from(self.manager.nodes))
        entry = [{"node_id": "urn:" + node, "client_id": node, "max_wait_time": wait}]
        if notice:
            reply = self.manager.notify_delete_pending(entry)
            empty = not self.manager._distributor.node_state(node).workloads
            assert reply[0]["max_wait_time"] == (0 if empty else wait)
        if wait == 0:
            self.provider.revoke([node])
            if notice:
                self.manager.notify_delete_complete(entry)
                assert node not in self.manager.nodes

    @precondition(lambda self: self.manager.nodes)
    # (0, or from 1e-300 up: quantities below that are refused, see
    # test_elastic's bad node lists)
    @rule(data=st.data(), value=st.one_of(st.just(0.0), st.floats(1e-300, 1)))
    def resource_value(self, data, value):
        node = data.draw(st.sampled_from(self.manager.nodes))
        assert self.manager.set_resource_values([{"node_id": node, "value": value}])[node] \
            == value

    @precondition(lambda self: self.store is not None)
    @rule()
    def reopen(self):
        parts = self.manager._parts()
        self.manager.close()
        self.provider = SimulatedProvider(ready_after=self.provider.ready_after,
                                          fail=self.provider.fail, path=self.provider.path)
        self.manager = ElasticManager.open(self.store, self.provider, clock=self.clock)
        assert self.manager._parts() == parts

    # --------------------------------------------------------- invariants

    @invariant()
    def nothing_lost_nothing_doubled(self):
        check_live(self.manager, self.live)

    @invariant()
    def books_match(self):
        check_books(self.manager)

    @invariant()
    def provider_agrees(self):
        check_provider(self.manager, self.provider, self.max_nodes)


ElasticCluster.TestCase.settings = settings(
    max_examples=300 if LONG else 25, stateful_step_count=200 if LONG else 40,
    derandomize=not LONG, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
TestElasticCluster = ElasticCluster.TestCase


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_thousands_of_cycles_keep_the_invariants(strategy):
    """Random arrivals, completions, failed creations, faults and revocations."""
    rng = random.Random(strategy)
    clock = Clock()
    provider = SimulatedProvider(ready_after=1, fail=[f"vm-{n}" for n in range(3, 5000, 7)])
    manager = ElasticManager(STRATEGIES[strategy](), provider, TEMPLATES, min_nodes=1,
                             max_nodes=8, enable_delete=True,
                             intervals={"add": 3, "delete": 8}, clock=clock)
    live = {}
    finished = 0
    cycles = 20000 if LONG else 1500
    for step in range(cycles):
        for _ in range(rng.choice([0, 0, 1, 2])):
            name = f"w{step}-{len(live)}"
            live[name] = step + rng.randint(1, 30)
            manager.submit([{"name": name, "requirements": {"cpu": rng.randint(1, 4),
                                                            "mem": rng.randint(1, 8)}}])
        done = [name for name, end in live.items() if end <= step]
        if done:
            manager.finish(done)
            finished += len(done)
            for name in done:
                del live[name]
        if rng.random() < 0.01:
            provider.fail_next(rng.choice(["create_nodes", "delete_nodes", "poll"]))
        if manager.nodes and rng.random() < 0.01:
            node = rng.choice(manager.nodes)
            wait = rng.choice([0, 60])
            manager.notify_delete_pending([{"node_id": node, "max_wait_time": wait}])
            if wait == 0:
                provider.revoke([node])
        manager.manage_once()
        clock.now += 1
        check_live(manager, live)
        check_books(manager)
        check_provider(manager, provider, 8)
    assert finished > cycles // 2  # the cluster kept up with the work
