"""The elastic manager's durable state: one SQLite file, one transaction a change."""
import json
import sqlite3
from typing import Any, Dict, List, Mapping, Optional

from ..errors import InvalidInputError

__all__ = ["Store"]

#: The layout of the state this module writes; a store of another format is refused.
STORE_FORMAT = 1


class Store:
    """A manager's state kept in an SQLite database (stdlib :mod:`sqlite3`).

    The state is a handful of named parts (the distributor's snapshot, the
    pending queue, the nodes asked for...), each a JSON document in one row
    of the table ``state``. :meth:`save` writes the parts given and commits
    them in one transaction, so a reader sees every part of a change or
    none. The database runs in WAL mode with ``synchronous=FULL``: a change
    whose :meth:`save` has returned survives the process being killed and
    the machine losing power.

    ``path=None`` keeps nothing: :meth:`save` does nothing and :meth:`load`
    finds an empty state (a manager kept in memory only).

    Cost: :meth:`save` writes the parts given in full, O(their size), plus
    one ``fsync`` of the log.
    """

    def __init__(self, path: Optional[str]):
        self.path = path
        self._db: Optional[sqlite3.Connection] = None
        if path is not None:
            self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            self._run("PRAGMA journal_mode=WAL")
            self._run("PRAGMA synchronous=FULL")
            self._run("CREATE TABLE IF NOT EXISTS state "
                      "(part TEXT PRIMARY KEY, body TEXT NOT NULL)")

    def load(self) -> Dict[str, Any]:
        """Return every part saved so far (an empty dict for a new store).

        Raises:
            InvalidInputError: the file holds a state of another format.
        """
        if self._db is None:
            return {}
        rows = self._run("SELECT part, body FROM state")
        parts = {part: json.loads(body) for part, body in rows}
        if parts and parts.get("format") != STORE_FORMAT:
            raise InvalidInputError(
                f"store {self.path}: format: expected {STORE_FORMAT}, got {parts.get('format')!r}")
        return parts

    def save(self, parts: Mapping[str, Any]) -> None:
        """Write ``parts`` (name -> JSON-serialisable value) in one committed transaction."""
        if self._db is None:
            return
        bodies = {name: json.dumps(value, sort_keys=True) for name, value in parts.items()}
        bodies["format"] = json.dumps(STORE_FORMAT)
        self._run("BEGIN IMMEDIATE")
        try:
            cursor = self._db.executemany(
                "INSERT OR REPLACE INTO state (part, body) VALUES (?, ?)", bodies.items())
            cursor.close()
        except BaseException:
            self._run("ROLLBACK")
            raise
        self._run("COMMIT")

    def _run(self, sql: str) -> List[Any]:
        """Run one statement and return its rows, its cursor closed at once:
        an interpreter that frees objects later than CPython (PyPy) would
        otherwise keep the statement open, and SQLite refuses to commit
        while one is."""
        assert self._db is not None
        cursor = self._db.execute(sql)
        try:
            return cursor.fetchall()
        finally:
            cursor.close()

    def close(self) -> None:
        """Close the database (the state stays in the file)."""
        if self._db is not None:
            self._db.close()
            self._db = None
