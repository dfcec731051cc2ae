"""Providers: where an elastic manager gets its nodes, and a simulated one to try it with."""
import json
import os
from typing import (Any, Dict, Iterable, List, Mapping, Optional, Protocol, Sequence,
                    runtime_checkable)


from ..errors import InvalidInputError, InvalidTypeError, LighthouseException
from ..model import Node

__all__ = ["Provider", "SimulatedProvider", "ProviderError", "CREATING", "READY", "FAILED"]

#: A node asked for and not usable yet.
CREATING = "creating"
#: A node that can take work.
READY = "ready"
#: A node whose creation failed; it still counts as held until deleted.
FAILED = "failed"


class ProviderError(LighthouseException, RuntimeError):
    """A provider could not do what it was asked (raised by :class:`SimulatedProvider`'s
    injected faults; a real provider may raise anything)."""


@runtime_checkable
class Provider(Protocol):
    """What an :class:`~pylighthouse.elastic.ElasticManager` needs from a cloud.

    ``create_nodes(nodes)`` asks for the given :class:`~pylighthouse.Node`
    objects (their names and resources); they become usable later.
    ``delete_nodes(names)`` gives nodes back; names the provider does not
    hold must be ignored, as the manager repeats a deletion it cannot be sure
    of. ``poll()`` returns every node the provider holds for this manager,
    mapped to ``"creating"``, ``"ready"`` or ``"failed"``; a node it does not
    list is gone. Any of the three may raise: the manager reports the error
    and tries again later.
    """

    def create_nodes(self, nodes: List[Node]) -> None:
        """Ask for ``nodes``."""

    def delete_nodes(self, names: List[str]) -> None:
        """Give back the nodes called ``names``."""

    def poll(self) -> Mapping[str, str]:
        """Every node held, with its status."""


class SimulatedProvider:
    """An in-memory provider for tests and demos, with faults to inject.

    A node asked for reports ``"creating"`` for ``ready_after`` polls, then
    ``"ready"`` (``ready_after=0``: ready at the next poll). A node whose
    name is in ``fail`` reports ``"failed"`` instead, as does every node
    asked for while ``capacity`` nodes are already held. ``created`` and
    ``deleted`` list the names it was asked to create and delete, in order.

    Faults: :meth:`revoke` takes nodes away as a cloud would (they vanish
    from :meth:`poll`), and :meth:`fail_next` makes the next calls of a
    method raise :class:`ProviderError`.

    With ``path``, the provider's whole state is written to that JSON file
    after every change (a new file, then an atomic rename), and read back
    from it when the file exists: a provider that outlives the process,
    like a real cloud, for crash tests and the command line demo. The
    parameters given then replace those in the file.

    Raises:
        InvalidInputError, InvalidTypeError: a negative ``ready_after`` or
            ``capacity``, names in ``fail`` that are not strings, or a
            ``path`` whose file cannot be read as a provider's state.

    Cost: O(held nodes) a poll; with ``path``, a file write a change.
    """

    def __init__(self, ready_after: int = 0, fail: Iterable[str] = (),
                 capacity: Optional[int] = None, *, path: Optional[str] = None):
        self.ready_after = _count(ready_after, "ready_after")
        self.capacity = None if capacity is None else _count(capacity, "capacity")
        if isinstance(fail, str):
            raise InvalidTypeError("fail: expected a list of node names, got a string")
        names = list(fail)
        if not all(isinstance(name, str) for name in names):
            raise InvalidTypeError("fail: expected a list of node names")
        self.fail = frozenset(names)
        self.path = path
        #: Names asked to be created, in order.
        self.created: List[str] = []
        #: Names asked to be deleted, in order.
        self.deleted: List[str] = []
        #: Names taken back by :meth:`revoke`, in order.
        self.revoked: List[str] = []
        self._nodes: Dict[str, Dict[str, Any]] = {}
        self._faults: Dict[str, int] = {}
        if path is not None and os.path.exists(path):
            try:
                with open(path, encoding="utf-8") as handle:
                    saved = json.load(handle)
                created, deleted = saved["created"], saved["deleted"]
                revoked, held = saved["revoked"], saved["nodes"]
                if not all(isinstance(part, list) for part in (created, deleted, revoked)) \
                        or not isinstance(held, dict):
                    raise ValueError("a part has the wrong shape")
            except (OSError, ValueError, TypeError, KeyError, RecursionError) as error:
                raise InvalidInputError(f"provider state {path}: cannot be read "
                                        f"({type(error).__name__}: {error})") from None
            self.created, self.deleted, self.revoked, self._nodes = \
                created, deleted, revoked, held

    # ------------------------------------------------------------ protocol

    def create_nodes(self, nodes: List[Node]) -> None:
        """Take note of ``nodes``; each reports ``"creating"`` until it is ready.

        Raises:
            ProviderError: an injected fault (nothing is created).
        """
        self._fault("create_nodes")
        for node in nodes:
            full = self.capacity is not None and len(self._nodes) >= self.capacity
            failed = full or node.name in self.fail
            self.created.append(node.name)
            self._nodes[node.name] = {"status": FAILED if failed else CREATING,
                                      "polls": self.ready_after}
        self._save()

    def delete_nodes(self, names: List[str]) -> None:
        """Forget the named nodes; names not held are ignored.

        Raises:
            ProviderError: an injected fault (nothing is deleted).
        """
        self._fault("delete_nodes")
        for name in names:
            self.deleted.append(name)
            self._nodes.pop(name, None)
        self._save()

    def poll(self) -> Dict[str, str]:
        """Return every held node's status, then count this poll towards readiness.

        Raises:
            ProviderError: an injected fault (no poll is counted).
        """
        self._fault("poll")
        for record in self._nodes.values():
            if record["status"] == CREATING:
                if record["polls"] <= 0:
                    record["status"] = READY
                else:
                    record["polls"] -= 1
        self._save()
        return self.held

    # -------------------------------------------------------------- faults

    @property
    def held(self) -> Dict[str, str]:
        """Every held node's status, as the last poll reported it (counts no poll)."""
        return {name: record["status"] for name, record in self._nodes.items()}

    def revoke(self, names: Sequence[str]) -> None:
        """Take the named nodes back, as a cloud does; names not held are ignored."""
        for name in names:
            if self._nodes.pop(name, None) is not None:
                self.revoked.append(name)
        self._save()

    def fail_next(self, method: str, times: int = 1) -> None:
        """Make the next ``times`` calls of ``method`` (``"create_nodes"``,
        ``"delete_nodes"`` or ``"poll"``) raise :class:`ProviderError`.

        Raises:
            InvalidInputError: an unknown method or a negative count.
        """
        if method not in ("create_nodes", "delete_nodes", "poll"):
            raise InvalidInputError(f"fail_next: method: no provider method {method!r}")
        self._faults[method] = self._faults.get(method, 0) + _count(times, "times")

    def _fault(self, method: str) -> None:
        if self._faults.get(method):
            self._faults[method] -= 1
            raise ProviderError(f"{method}: injected failure")

    def _save(self) -> None:
        if self.path is None:
            return
        state = {"created": self.created, "deleted": self.deleted,
                 "revoked": self.revoked, "nodes": self._nodes}
        temporary = f"{self.path}.new"
        with open(temporary, "w", encoding="utf-8") as handle:
            json.dump(state, handle)
        os.replace(temporary, self.path)

    def __repr__(self) -> str:
        return f"SimulatedProvider(held={self.held!r})"


def _count(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidTypeError(f"{what}: expected a whole number, got {type(value).__name__}")
    if value < 0:
        raise InvalidInputError(f"{what}: must be at least 0, got {value}")
    whole: int = value
    return whole
