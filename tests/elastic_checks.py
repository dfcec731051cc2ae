"""Invariants of an elastic manager, checked by the elastic tests after every step."""
from decimal import Decimal
from typing import Iterable, Optional

from pylighthouse.elastic import ElasticManager, SimulatedProvider


def check_books(manager: ElasticManager) -> None:
    """Every node's remaining room is exactly its capacity less what its workloads need,
    and the placements, the nodes' lists and the queue agree (no workload twice)."""
    distributor = manager._distributor
    pending = list(manager.pending)
    assert len(pending) == len(set(pending)), f"a workload is queued twice: {pending}"
    assignments = dict(manager.assignments)
    assert not set(pending) & set(assignments), "a workload is both placed and pending"
    seen = {}
    for state in distributor.node_states():
        for name in state.workloads:
            assert name not in seen, f"{name} is on {seen[name]} and {state.name}"
            seen[name] = state.name
        for key, capacity in state.capacity.items():
            used = sum((Decimal(str(distributor.workload(name).requirements.get(key, 0)))
                        for name in state.workloads), Decimal(0))
            assert Decimal(str(state.remaining[key])) == Decimal(str(capacity)) - used, \
                f"{state.name}.{key}: remaining {state.remaining[key]}, capacity {capacity}, " \
                f"used {used}"
    assert seen == assignments


def check_live(manager: ElasticManager, live: Iterable[str],
               maybe: Iterable[str] = ()) -> None:
    """Every workload of ``live`` is placed or pending; nothing else is, except ``maybe``."""
    held = set(manager.pending) | set(manager.assignments)
    live = set(live)
    assert live <= held, f"lost workloads: {sorted(live - held)}"
    assert held - live <= set(maybe), f"workloads nobody submitted: {sorted(held - live)}"


def check_provider(manager: ElasticManager, provider: SimulatedProvider,
                   max_nodes: Optional[int], static: int = 0) -> None:
    """The provider holds no node the manager has no record of, and never more than allowed."""
    known = set(manager.nodes) | set(manager.creating) | set(manager.deleting)
    leaked = set(provider.held) - known
    assert not leaked, f"the provider holds nodes the manager forgot: {sorted(leaked)}"
    if max_nodes is not None:
        assert len(provider.held) + static <= max_nodes, \
            f"{len(provider.held)} held + {static} static > max_nodes {max_nodes}"
