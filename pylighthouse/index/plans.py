"""Search plans: for one workload shape, which node classes to search and how.

A *shape* is a workload's requirement names and immunities. Its
:class:`Plan` lists, per node class that can host it (some node of the
class has each required name), either the sieve's columns (see
:mod:`.search`) or, when the workload asks for a resource only a few nodes
of the class have, that resource: those nodes are tried directly (a
workload pinned by a hostname tag costs a lookup, not a scan). Plans are
kept per shape until the classes change.

Cost: making a plan O(K x R) for K classes and R names; using one O(K).
"""
from typing import Any, Dict, FrozenSet, List, Mapping, Optional, Tuple

from .blocks import LOWEST, OPEN, NodeClass

__all__ = ["Entry", "Plan", "make_plan", "FEW"]

#: A tag borne by at most this many nodes of a class is searched node by node.
FEW = 32


class Entry:
    """How to search one class for a shape: ``tag`` (try the few nodes that
    have that resource) or ``pairs`` (sieve on these columns: a fixed
    threshold, or ``None`` for the workload's own requirement)."""

    __slots__ = ("nodes", "pairs", "tag")

    def __init__(self, nodes: NodeClass, pairs: List[Tuple[str, Optional[float]]],
                 tag: Optional[str]):
        self.nodes = nodes
        self.pairs = pairs
        self.tag = tag

    def sieve(self, floats: Mapping[str, float]) -> List[Tuple[str, float]]:
        """The (column, threshold) pairs for a workload with these float requirements."""
        return [(key, floats[key] if fixed is None else fixed) for key, fixed in self.pairs]


class Plan:
    """The entries of one shape, made when the classes were at ``layout``."""

    __slots__ = ("layout", "entries")

    def __init__(self, layout: int, entries: List[Entry]):
        self.layout = layout
        self.entries = entries


def make_plan(classes: Dict[Any, NodeClass], names: Tuple[str, ...],
              immunities: FrozenSet[str], layout: int) -> Plan:
    """The plan for a shape requiring ``names`` and immune to ``immunities``."""
    entries = []
    for nodes in classes.values():
        entry = _entry(nodes, names, immunities)
        if entry is not None:
            entries.append(entry)
    return Plan(layout, entries)


def _entry(nodes: NodeClass, names: Tuple[str, ...],
           immunities: FrozenSet[str]) -> Optional[Entry]:
    bearers = nodes.bearers
    if any(not bearers.get(name) for name in names):
        return None  # no node of the class has every required name
    if names:
        rarest = min(names, key=lambda name: len(bearers[name]))
        if len(bearers[rarest]) <= FEW and len(bearers[rarest]) < nodes.size:
            return Entry(nodes, [], rarest)
    pairs = []
    for name in names:
        if name not in immunities:
            pairs.append((name, None))  # at least the requirement
        elif len(bearers[name]) < nodes.size:
            pairs.append((name, LOWEST))  # has it, whatever is left
    # Resources below zero must be offset (or the workload immune to them)
    # even when it does not ask for them.
    pairs.extend((key, 0.0) for key in sorted(nodes.keys)
                 if key not in immunities and key not in names)
    for key, _ in pairs:
        nodes.add_column(key)
    return Entry(nodes, pairs or [(OPEN, 0.0)], None)
