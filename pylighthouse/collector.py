"""Python's cyclic garbage collector, paused while a call does its bulk work.

A placement call allocates many small container objects (workloads, their
read-only maps, the index's entries). The collector runs every few hundred
such allocations, and now and then passes over every object the process
holds: on a batch of 50,000 to 100,000 workloads that was 5 to 20% of
the call in our runs, and it grows with the process, not with the work.
The distributor's calls (building, restoring a snapshot, placing, every
call that changes it) and the JSON problem's
(:func:`~pylighthouse.problem.parse_json`,
:func:`~pylighthouse.problem.load_problem`,
:func:`~pylighthouse.problem.solve`) run inside :func:`paused`: no collection
during the call; at its end, still paused, the one collection the
interpreter would have started at its next allocation, so the call pays
for its own garbage (and any reference cycle it left is freed then, not
later).

The pause is per call and never outlives it: a call that finds the
collector off (the caller turned it off, or another thread's call paused
it) leaves it alone, and the call that turned it off turns it back on as it
returns or raises, even when interrupted during that last collection.
Cost: O(1), plus at the end that one collection of the
youngest objects (those the call made), which would have run anyway.
"""
import gc
from contextlib import contextmanager
from typing import Iterator

__all__ = ["paused"]


@contextmanager
def paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for the ``with`` block (see the
    module docstring); a no-op when it is already off."""
    if not gc.isenabled():
        yield
        return
    try:
        gc.disable()
        yield
    finally:
        # (turned on again even when the collection is interrupted: a
        # KeyboardInterrupt may arrive during it)
        try:
            _catch_up()
        finally:
            gc.enable()


def _catch_up() -> None:
    """Run, while the collector is still off, the collection it would run
    at its next allocation once on, if any: of the youngest generation, or
    of the two youngest when the middle one is due too (the oldest is left
    to the interpreter's own rule). Turned on first, it would start that
    collection at the first object made here, and this one after it. An
    interpreter whose collector keeps no generation counts (PyPy) is left
    to its own rule."""
    if not hasattr(gc, "get_count"):
        return  # (PyPy's collector keeps no such counts, and runs by its own rule)
    counts, limits = gc.get_count(), gc.get_threshold()
    if limits[0] and counts[0] > limits[0]:
        gc.collect(1 if counts[1] > limits[1] else 0)
