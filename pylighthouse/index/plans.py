"""Search plans: for one workload shape, which node classes to search and how.

A *shape* is a workload's requirement names and immunities. Its
:class:`Plan` lists, per node class that can host it (every required name
is a counted resource of the class or a tag some node of the class bears),
either the sieve's columns (see :mod:`.search`) or, when the workload asks
for a tag only a few nodes of the class bear, that tag: those nodes are
tried directly (a workload pinned by a hostname tag costs a lookup, not a
scan). Plans are kept per shape until the classes change.

Cost: making a plan O(K x R) for K classes and R names; using one O(K).
"""
from typing import Any, Dict, FrozenSet, List, Mapping, Optional, Tuple

from .blocks import OPEN, NodeClass

__all__ = ["Entry", "Plan", "make_plan", "FEW"]

#: A tag borne by at most this many nodes of a class is searched node by node.
FEW = 32


class Entry:
    """How to search one class for a shape: ``tag`` (search its nodes
    directly) or ``columns`` (sieve on them, thresholds from the workload)."""

    __slots__ = ("nodes", "columns", "tag")

    def __init__(self, nodes: NodeClass, columns: List[str], tag: Optional[str]):
        self.nodes = nodes
        self.columns = columns
        self.tag = tag

    def sieve(self, floats: Mapping[str, float]) -> List[Tuple[str, float]]:
        """The (column, threshold) pairs for a workload with these float requirements."""
        return [(key, floats.get(key, 0.0)) for key in self.columns]


class Plan:
    """The entries of one shape, made when the classes were at ``layout``."""

    __slots__ = ("layout", "entries")

    def __init__(self, layout: int, entries: List[Entry]):
        self.layout = layout
        self.entries = entries


def make_plan(classes: Dict[Any, NodeClass], names: Tuple[str, ...],
              positive: FrozenSet[str], immunities: FrozenSet[str], layout: int) -> Plan:
    """The plan for a shape requiring ``names`` (``positive`` among them
    above zero) and immune to ``immunities``."""
    entries = []
    for nodes in classes.values():
        entry = _entry(nodes, names, positive, immunities)
        if entry is not None:
            entries.append(entry)
    return Plan(layout, entries)


def _entry(nodes: NodeClass, names: Tuple[str, ...], positive: FrozenSet[str],
           immunities: FrozenSet[str]) -> Optional[Entry]:
    keys = nodes.keys
    tags = [name for name in names if name not in keys]
    if any(not nodes.tags.get(tag) for tag in tags):
        return None  # no node of the class has every required name
    columns = [key for key in nodes.columns if key in keys and key not in immunities
               and (key in positive or key in nodes.signed)]
    if tags:
        rarest = min(tags, key=lambda tag: len(nodes.tags[tag]))
        if len(nodes.tags[rarest]) <= FEW:
            return Entry(nodes, [], rarest)
        for tag in tags:
            if tag not in immunities:
                nodes.add_column(tag)
                columns.append(tag)
    return Entry(nodes, columns or [OPEN], None)
