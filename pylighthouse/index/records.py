"""What a class of nodes remembers of the searches made in it.

* :class:`Refused`: per requirement vector, the version of each block at
  which it refused the vector (no node of it took it); a later search for
  the vector passes, in C, every block still at that version (see
  :meth:`~.blocks.NodeClass.refused`, which keeps them per class, and
  :func:`~.search.first_in_class`, which reads and writes them);
* :class:`Floor`: per workload shape, the least quantities searched for
  and the run of blocks, from the first, that refuse them: every vector of
  the shape asking at least as much starts after it (see
  :func:`~.floors.floor_run`);
* :class:`Cursor`: per tag kept in order, how many of its bearers, from
  the first, refuse the workloads searched for (see
  :meth:`~.kept.KeptOrders._cursor`).

A record only ever says that nodes refuse; every block it lets pass is
searched. Cost: O(B) to make a record, for B blocks of the class; O(1) to
read one (its stamps are compared in C by the search).
"""
from decimal import Decimal
from itertools import islice
from typing import Any, Dict, FrozenSet, List, Tuple

__all__ = ["Refused", "Floor", "Cursor", "Shape", "halve"]

#: A workload shape: the names it asks for, in order, and its immunities.
Shape = Tuple[Tuple[str, ...], FrozenSet[str]]


def halve(kept: Dict[Any, Any]) -> None:
    """Forget the older half of ``kept`` (a dict keeps its order of
    insertion). O(len(kept))."""
    for key in list(islice(kept, len(kept) // 2)):
        del kept[key]


class Refused:
    """Per block, the version at which the block refused a requirement
    vector (``stamps``); ``prefix``: how many blocks from the first one
    refused it, as found by the last search from the first block;
    ``sieve``: the vector's sieve as made by the plan entry whose
    ``serial`` is ``made_by`` (see :meth:`.plans.Entry.sieve`);
    ``stamped``: whether a search may have written a stamp (else every
    stamp is 0, and a search need not compare them)."""

    __slots__ = ("stamps", "prefix", "sieve", "made_by", "stamped")

    def __init__(self, blocks: int = 0) -> None:
        self.stamps: List[int] = [0] * blocks
        self.stamped = False
        self.prefix = 0
        self.sieve: Any = None
        self.made_by = -1


class Floor:
    """The least quantities a class was searched for, per shape (kept by
    the shape's plan entry, see :func:`.floors.floor_run`): ``needed``, each
    requirement the least of every new vector of the shape searched since
    the floor was made; ``record``: the blocks from the first that refuse
    ``needed`` (its :attr:`Refused.prefix` and stamps, and its sieve): every
    vector of the shape asks at least as much of everything, and skips
    them. ``countdown``: searches left before the run is extended again;
    ``seen``: the class's clock and block count when the run was last
    found standing (while neither moves, no block changed)."""

    __slots__ = ("needed", "record", "countdown", "seen")

    def __init__(self, needed: Tuple[Any, ...], blocks: int) -> None:
        self.needed = needed
        self.record = Refused(blocks)
        self.countdown = 0
        self.seen = (-1, -1)


class Cursor:
    """Which bearers of a tag, in order, refuse the workloads searched for
    (see :meth:`~.kept.KeptOrders._cursor`): ``at``, how many from the
    first; ``passed``, for a bearer further on found refusing, the
    position of a bearer after it that is not known to refuse (see
    :meth:`~.kept.KeptOrders._kept_from`); ``least``, the names every one
    of those workloads asked for with the least of each. Kept while
    :attr:`~.nodes.NodeIndex.grown` and the class's ``members`` are
    ``grown`` and ``members``."""

    __slots__ = ("grown", "members", "least", "at", "passed")

    def __init__(self, grown: int, members: int, least: Dict[str, Decimal]) -> None:
        self.grown = grown
        self.members = members
        self.least = least
        self.at = 0
        self.passed: Dict[int, int] = {}

    def lowered(self) -> None:
        """Forget which bearers refuse: the floor came down."""
        self.at = 0
        if self.passed:
            self.passed = {}
