"""A manager process for the crash test: random calls until it is killed.

Usage: python elastic_crash_child.py STORE PROVIDER_FILE LOG SEED PREFIX

Before each call it logs ``begin <call> <names>``, after it ``end <call> <names>``
(appended and flushed, so a SIGKILL loses nothing written before it). The
parent reads the log to learn which workloads were acknowledged.
"""
import os
import random
import signal
import sys
import time

from pylighthouse import BinPackDistributor, RoundRobinDistributor
from pylighthouse.errors import InvalidInputError
from pylighthouse.elastic import ElasticManager, SimulatedProvider

TEMPLATES = [{"name": "vm", "resources": {"cpu": 4, "mem": 8}},
             {"name": "big", "resources": {"cpu": 8, "mem": 16}, "cost": 1.8}]
MAX_NODES = 6


def provider_for(path, cls=SimulatedProvider):
    # Every fifth node fails to come up.
    return cls(ready_after=1, fail=[f"vm-{n}" for n in range(5, 400, 5)], path=path)


class Dying(SimulatedProvider):
    """A provider whose process now and then dies just before or just after a
    call: the moments between a provider's change and the manager's own save,
    too short for a kill from outside to land in often."""

    rng = random.Random()
    log = None

    def create_nodes(self, nodes):
        self._maybe_die("before create_nodes")
        super().create_nodes(nodes)
        self._maybe_die("after create_nodes")

    def delete_nodes(self, names):
        self._maybe_die("before delete_nodes")
        super().delete_nodes(names)
        self._maybe_die("after delete_nodes")

    def _maybe_die(self, moment):
        if self.rng.random() < 0.1:
            self.log.write(f"die {moment.replace(' ', '-')}\n")
            self.log.flush()
            os.kill(os.getpid(), signal.SIGKILL)


def open_manager(store, provider, seed):
    try:
        return ElasticManager.open(store, provider)
    except InvalidInputError:
        distributor = (BinPackDistributor({"cpu": 1, "mem": 0.25}, []) if seed % 2
                       else RoundRobinDistributor([]))
        return ElasticManager(distributor, provider, TEMPLATES, max_nodes=MAX_NODES,
                              enable_delete=True, intervals={"add": 0, "delete": 0},
                              store=store)


def main():
    store, provider_path, log_path, seed, prefix = sys.argv[1:6]
    rng = random.Random(int(seed))
    log = open(log_path, "a", buffering=1)
    Dying.rng, Dying.log = random.Random(int(seed) + 1), log
    provider = provider_for(provider_path, Dying)
    manager = open_manager(store, provider, int(seed))

    def call(what, names, action):
        log.write(f"begin {what} {' '.join(names)}\n")
        log.flush()
        action()
        log.write(f"end {what} {' '.join(names)}\n")
        log.flush()
        # Idle now and then, as a manager between requests: kills land
        # between calls as well as inside them.
        time.sleep(rng.choice([0, 0, 0.002, 0.01]))

    log.write("ready\n")
    log.flush()
    count = 0
    while True:
        roll = rng.random()
        if roll < 0.4:
            loads = []
            for _ in range(rng.randint(1, 3)):
                count += 1
                loads.append({"name": f"{prefix}-{count}",
                              "requirements": {"cpu": rng.randint(1, 4), "mem": rng.randint(1, 6)}})
            call("submit", [load["name"] for load in loads], lambda: manager.submit(loads))
        elif roll < 0.55:
            known = sorted(manager.assignments) + list(manager.pending)
            if known:
                names = rng.sample(known, min(len(known), rng.randint(1, 2)))
                call("finish", names, lambda: manager.finish(names))
        elif roll < 0.85:
            call("manage_once", [], lambda: manager.manage_once(force=rng.random() < 0.5))
        elif manager.nodes:
            node = rng.choice(manager.nodes)
            kind = rng.random()
            if kind < 0.4:
                entry = [{"node_id": node, "max_wait_time": 0}]
                provider.revoke([node])
                call("notify_delete_pending", [], lambda: manager.notify_delete_pending(entry))
                call("notify_delete_complete", [],
                     lambda: manager.notify_delete_complete(entry))
            elif kind < 0.8:
                entry = [{"node_id": node, "max_wait_time": 30}]
                call("notify_delete_pending", [], lambda: manager.notify_delete_pending(entry))
            else:
                entry = [{"node_id": node, "value": rng.random()}]
                call("set_resource_values", [], lambda: manager.set_resource_values(entry))


if __name__ == "__main__":
    main()
