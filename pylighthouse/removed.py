"""Names that 0.2.0 offered and this version does not: each says what to write instead."""
from typing import Any, Optional

from .errors import RemovedAPIError

__all__ = ["Removed"]


class Removed:
    """A class attribute that raises :class:`~pylighthouse.errors.RemovedAPIError`
    when read on an instance, with ``hint`` saying what to write instead.

    Read on the class itself, it returns itself (so that documentation
    tools and :func:`inspect.getmembers` see a plain object). Cost: O(1).
    """

    def __init__(self, hint: str):
        self.hint = hint
        self.owner = ""
        self.name = ""
        self.__doc__ = f"Removed in 0.3.0: {hint}"

    def __set_name__(self, owner: type, name: str) -> None:
        self.owner = owner.__name__
        self.name = name

    def __get__(self, instance: Any, owner: Optional[type] = None) -> Any:
        if instance is None:
            return self
        raise RemovedAPIError(
            f"{self.owner}.{self.name} was a 0.2.0 name that 0.3.0 removed: {self.hint} "
            f"(see the page 'Migrating from 0.2.0')")
