"""Floors: the run of blocks, from the first, that refuse every workload of a shape.

A workload whose quantities were never searched for has no record of the
blocks that refused it (see :mod:`.records`); without more, its search
would start at the first block. In a cluster that fills from the front
(Prioritized), the first blocks are full: a shape's *floor*
(:class:`~.records.Floor`, kept by the shape's plan entry) holds the least
of each requirement its vectors asked for, and the run of blocks, from
the first, where no node has that much. Every vector of the shape asks at
least as much of everything, so its search starts after the run
(:func:`floor_run`). The run is read back while its blocks stand, and
extended now and then (:data:`FLOOR_PERIOD`) by
:func:`~.search.refusing_run`; classes where it stays short (RoundRobin,
which does not fill from the front) set floors aside for a while.

Cost: O(R) a search mostly, for R requirements; O(P) in C for a run of
P blocks after a block of it changed.
"""
from decimal import Decimal
from operator import lt
from typing import Tuple

from ..quantities import floats_of
from .blocks import NodeClass
from .plans import Entry
from .records import Floor, Shape
from .search import refusing_run

__all__ = ["floor_run", "knows_run", "floor_policy", "FloorPolicy", "FLOOR_BLOCKS",
           "FLOOR_PERIOD", "FLOOR_LEAST", "FLOOR_IDLE"]

#: Floors (see :func:`floor_run`) are used in classes of at least this many
#: blocks only: a class of few blocks is scanned in no time.
FLOOR_BLOCKS = 32
#: A shape's floor run is extended at most once in this many searches of
#: the shape while its stamps stand.
FLOOR_PERIOD = 16
#: A floor run shorter than this many blocks sets the class's floors aside
#: for :data:`FLOOR_IDLE` searches of new vectors (a cluster that does not
#: fill from the front, as with RoundRobin).
FLOOR_LEAST = 2
FLOOR_IDLE = 64

FloorPolicy = Tuple[int, int, int, int]


def floor_policy() -> FloorPolicy:
    """(:data:`FLOOR_BLOCKS`, :data:`FLOOR_PERIOD`, :data:`FLOOR_LEAST`,
    :data:`FLOOR_IDLE`) as they are now: an index keeps them from when it
    is made."""
    return FLOOR_BLOCKS, FLOOR_PERIOD, FLOOR_LEAST, FLOOR_IDLE


def knows_run(nodes: NodeClass, shape: Shape, needed: Tuple[Decimal, ...]) -> bool:
    """Whether the record of ``needed`` without groups knows of blocks that
    refuse it from the first on. O(R)."""
    plain = nodes.refusals.get((shape, needed))
    return plain is not None and plain.prefix > 0


def floor_run(nodes: NodeClass, entry: Entry, shape: Shape, needed: Tuple[Decimal, ...],
              policy: FloorPolicy) -> int:
    """How many blocks of ``nodes``, from the first, are known to refuse
    every workload of ``shape`` (the entry's) asking at least ``needed`` of
    everything: the run of blocks refusing the shape's
    :class:`~.records.Floor`, lowered to ``needed`` first (made again, with
    an empty run, where ``needed`` asks less of some requirement: the fit
    rule only gets harder with larger requirements). In a cluster that
    fills from the front (Prioritized), that run is most of the full nodes,
    and a workload with quantities never seen before starts after it
    instead of scanning them. The run is read back while it stands,
    extended by :func:`~.search.refusing_run` once in
    :data:`FLOOR_PERIOD` searches, and at once when a block of it changed;
    a run shorter than :data:`FLOOR_LEAST` sets the class's floors aside
    for :data:`FLOOR_IDLE` searches (``policy``: these, see
    :func:`floor_policy`). Not for a shape asking for resources only some
    nodes of the class have (see :class:`~.plans.Entry`), whose run cost
    more to find than it saved. O(R) mostly; O(P) in C, P blocks in the
    run, after a change of the class."""
    _, period, least, idle = policy
    floor = entry.floor
    if floor is None or any(map(lt, needed, floor.needed)):
        if floor is not None:
            needed = tuple(map(min, needed, floor.needed))
        floor = entry.floor = Floor(needed, len(nodes.blocks))
    record = floor.record
    run = record.prefix
    now = (nodes.clock, len(nodes.blocks))
    if floor.countdown and (floor.seen == now or not run
                            or record.stamps[:run] == nodes.versions[:run]):
        floor.countdown -= 1
    else:
        if record.made_by != entry.serial:
            record.sieve = entry.sieve(floats_of(dict(zip(shape[0], floor.needed))))
            record.made_by = entry.serial
        stamps = record.stamps
        missing = len(nodes.blocks) - len(stamps)
        if missing > 0:
            stamps.extend([0] * missing)
        floor.countdown = period - 1
        run = refusing_run(nodes, record.sieve, record)
    floor.seen = now
    if run < least:
        nodes.floor_idle = idle
    return run
