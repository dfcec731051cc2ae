"""The node index: which node a distributor tries first, without scanning them all.

Where things are:

* :mod:`.nodes`: :class:`NodeIndex`, what a distributor calls (``add``,
  ``remove``, ``changed``, ``cordoned``, ``grouped``, ``touched``; the
  searches ``first_fit``, and for BinPack and BestFit ``first_fit_after``
  and ``first_fit_from``), the memory of shapes that fit nowhere; it picks
  the earliest answer over the classes (``NodeIndex._earliest``) and tries
  itself, with :mod:`.kept`, the nodes a class keeps in order;
* :mod:`.plans`: for one workload shape, which classes of nodes to search
  and on which columns;
* :mod:`.search`: **where a node is chosen** within one class: the first
  node, in order, that passes the bounds and then ``pylighthouse.fit.takes``
  (which always gives :func:`pylighthouse.fit.check_fit`'s answer);
  ``first_among`` and ``first_in_order`` do the same over short lists of
  candidates;
* :mod:`.blocks`: one class of nodes in order, in blocks with float columns
  (dense, or sparse for a resource few nodes have) and exact per-block
  bounds, kept as nodes join, leave, move and change;
* :mod:`.derived`: columns over several resources of a node at once (joint,
  masked and set columns, frontiers), part of every class;
* :mod:`.bearers`: which nodes of a class have a resource (bearers in
  order, masks, counts per block), part of every class;
* :mod:`.groups`: aversion groups' columns and the figures of nodes free
  of a group, part of every class;
* :mod:`.records`: what a class remembers of searches (refusals, floors,
  cursors);
* :mod:`.kept`: the bearers of a tag kept in order, tried one by one from
  those known to refuse on (part of :class:`NodeIndex`);
* :mod:`.floors`: where a workload with quantities never searched for
  starts: after the run of blocks refusing its shape's least quantities;
* :mod:`.columns`: what a node shows in a column, and its order key.

The index only ever skips nodes that provably cannot take the workload;
every yes comes from ``pylighthouse.fit.takes``, which gives
:func:`pylighthouse.fit.check_fit`'s answer, so decisions are
those of a plain scan in the strategy's order.
"""
from .nodes import DEFAULT_LOAD, NodeIndex, NodeOrder, RubricOrder

__all__ = ["NodeIndex", "NodeOrder", "RubricOrder", "DEFAULT_LOAD"]
