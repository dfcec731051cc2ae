"""The node index: which node a distributor tries first, without scanning them all.

Where things are:

* :mod:`.nodes`: :class:`NodeIndex`, what a distributor calls (join, leave,
  change, cordon, ``first_fit``) and the memory of shapes that fit nowhere;
* :mod:`.plans`: for one workload shape, which classes of nodes to search
  and on which columns;
* :mod:`.search`: **where a node is chosen**: the first node of a class, in
  order, that passes the bounds and then :func:`pylighthouse.fit.check_fit`;
* :mod:`.blocks`: one class of nodes in order, in blocks with float columns
  (dense, or sparse for a resource few nodes have; group columns for
  aversion groups with many members) and exact per-block bounds;
* :mod:`.derived`: columns over several resources of a node at once (joint,
  masked and set columns, frontiers), part of every class;
* :mod:`.columns`: what a node shows in a column.

The index only ever skips nodes that provably cannot take the workload;
every yes comes from :func:`pylighthouse.fit.check_fit`, so decisions are
those of a plain scan in the strategy's order.
"""
from .nodes import DEFAULT_LOAD, NodeIndex, NodeOrder, RubricOrder

__all__ = ["NodeIndex", "NodeOrder", "RubricOrder", "DEFAULT_LOAD"]
