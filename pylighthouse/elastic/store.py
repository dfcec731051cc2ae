"""The elastic manager's durable state: one SQLite file, one transaction a change."""
import json
import os
import pathlib
import sqlite3
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ..errors import InvalidInputError, InvalidTypeError, LighthouseException

__all__ = ["Store", "StoreError"]

#: The layout of the state this module writes; a store of another format is refused.
STORE_FORMAT = 1
#: Seconds a store opened by another manager is waited for before it is refused.
BUSY_SECONDS = 1.0
#: The state table's columns as ``PRAGMA table_info`` gives them (made by
#: ``CREATE TABLE state (part TEXT PRIMARY KEY, body TEXT NOT NULL)``).
_STATE_COLUMNS = ((0, "part", "TEXT", 0, None, 1), (1, "body", "TEXT", 1, None, 0))


class StoreInUse(InvalidInputError):
    """The store is open in another manager (which owns the file)."""


class StoreError(LighthouseException, OSError):
    """The store could not be written (a full disk, an I/O error, a file
    removed from under it): the change was not saved, and the manager
    undid it."""


class Store:
    """A manager's state kept in an SQLite database (stdlib :mod:`sqlite3`).

    The state is a handful of named parts (the distributor's snapshot, the
    pending queue, the nodes asked for...), each a JSON document in one row
    of the table ``state``. :meth:`save` writes the parts given and commits
    them in one transaction, so a reader sees every part of a change or
    none. The database runs in WAL mode with ``synchronous=FULL``: a change
    whose :meth:`save` has returned survives the process being killed and
    the machine losing power.

    A store has one owner at a time: the database is opened in SQLite's
    exclusive locking mode and locked at once, so a second manager opening
    the same file (in this process or another) is refused instead of
    writing over the first one's changes; the lock goes with :meth:`close`
    or the process. ``create``: the file may be made (a new manager); else
    it must exist. A database holding anything but the table ``state``
    (other tables, views, indexes, triggers) is refused, never written to;
    so is a store the manager then refuses, as WAL mode is set at the first
    save. A save to a file removed or replaced since it was opened fails.

    ``path=None`` keeps nothing: :meth:`save` does nothing and :meth:`load`
    finds an empty state (a manager kept in memory only).

    Raises (constructor):
        InvalidInputError: the file cannot be opened, is not an SQLite
            database (or its schema cannot be read), holds other things,
            does not exist (without ``create``), or another manager has it
            open.

    Cost: :meth:`save` writes the parts given in full, O(their size), plus
    one ``fsync`` of the log.
    """

    def __init__(self, path: Optional[str], create: bool = True):
        self.path = path
        self._db: Optional[sqlite3.Connection] = None
        if path is None:
            return
        if not isinstance(path, (str, os.PathLike)) or isinstance(path, bytes):
            raise InvalidTypeError(f"store: expected a file path, got {type(path).__name__}")
        mode = "rwc" if create else "rw"
        try:
            target = pathlib.Path(path).absolute().as_uri() + f"?mode={mode}"
            self._db = sqlite3.connect(target, uri=True, isolation_level=None,
                                       check_same_thread=False, timeout=BUSY_SECONDS)
        except (sqlite3.Error, ValueError) as error:
            if not create and not os.path.exists(path):
                raise InvalidInputError(f"store {path}: holds no manager ({error})") from None
            raise InvalidInputError(f"store {path}: cannot be opened: {error}") from None
        self._wal = False  # (WAL mode is set at the first save: see :meth:`save`)
        try:
            self._run("PRAGMA locking_mode=EXCLUSIVE")
            # (read before anything is written: a file refused is left as it was)
            objects = self._run("SELECT type, name, tbl_name FROM sqlite_master")
            tables = {name for kind, name, _ in objects if kind == "table"}
            # (the one other object a store holds: its primary key's index)
            others = sorted(f"{kind} {name}" for kind, name, _ in objects
                            if (kind, name) not in (("table", "state"),
                                                    ("index", "sqlite_autoindex_state_1")))
            if others:
                raise InvalidInputError(
                    f"store {path}: is a database of something else ({', '.join(others)}); "
                    "give a new file or a manager's store")
            if not create and "state" not in tables:
                raise InvalidInputError(f"store {path}: holds no manager")
            if "state" in tables and \
                    self._run("PRAGMA table_info(state)") != list(_STATE_COLUMNS):
                # (a table of that name made by something else: without the
                # key on part, every save would add rows, not replace them)
                raise InvalidInputError(
                    f"store {path}: its table 'state' is not a manager's (columns "
                    "part TEXT PRIMARY KEY, body TEXT NOT NULL); give a new file or a "
                    "manager's store")
            self._run("PRAGMA synchronous=FULL")
            # (the lock, taken now and kept: see the class docstring)
            self._run("BEGIN EXCLUSIVE")
            self._run("COMMIT")
            if "state" not in tables:  # (a new store: nothing to refuse)
                self._run("CREATE TABLE state (part TEXT PRIMARY KEY, body TEXT NOT NULL)")
            # (by its absolute path, as SQLite opened it: the process may
            # change directory since)
            self._where = os.path.abspath(path)
            self._identity = _identity(self._where)
        except sqlite3.OperationalError as error:
            self.close()
            if "locked" in str(error) or "busy" in str(error):
                raise StoreInUse(
                    f"store {path}: in use by another manager (a store has one manager "
                    "at a time: close the other first)") from None
            raise InvalidInputError(f"store {path}: cannot be used: {error}") from None
        except (sqlite3.Error, UnicodeDecodeError) as error:
            self.close()
            raise InvalidInputError(f"store {path}: cannot be read: {error}") from None
        except BaseException:
            self.close()
            raise

    def load(self) -> Dict[str, Any]:
        """Return every part saved so far (an empty dict for a new store).

        Raises:
            InvalidInputError: the file holds a state of another format, or a
                part that is not JSON.
        """
        if self._db is None:
            return {}
        try:
            rows = self._run("SELECT part, body FROM state")
        except (sqlite3.Error, UnicodeDecodeError) as error:
            raise InvalidInputError(f"store {self.path}: cannot be read: {error}") from None
        parts = {}
        for part, body in rows:
            try:
                parts[part] = json.loads(body)
            except (TypeError, ValueError, RecursionError) as error:
                raise InvalidInputError(
                    f"store {self.path}: part {part!r}: not JSON ({error})") from None
        if parts and (type(parts.get("format")) is not int
                      or parts.get("format") != STORE_FORMAT):
            raise InvalidInputError(
                f"store {self.path}: format: expected {STORE_FORMAT}, got {parts.get('format')!r}")
        return parts

    def save(self, parts: Mapping[str, Any]) -> None:
        """Write ``parts`` (name -> JSON-serialisable value) in one committed transaction.

        Raises:
            StoreError: the database could not be written; nothing of
                ``parts`` was kept (the transaction was rolled back).
        """
        if self._db is None:
            return
        # (in the order the manager keeps them: it works through them in it)
        bodies = {name: json.dumps(value) for name, value in parts.items()}
        bodies["format"] = json.dumps(STORE_FORMAT)
        try:
            if not self._wal:
                # (set at the first save, not when opened: a file that the
                # manager then refuses is left as it was)
                self._run("PRAGMA journal_mode=WAL")
                self._wal = True
            self._run("BEGIN IMMEDIATE")
            try:
                cursor = self._db.executemany(
                    "INSERT OR REPLACE INTO state (part, body) VALUES (?, ?)", bodies.items())
                cursor.close()
                if _identity(self._where) != self._identity:
                    raise StoreError(
                        f"store {self.path}: cannot be written: the file was removed or "
                        "replaced since it was opened")
                self._run("COMMIT")
            except BaseException:
                if self._db.in_transaction:
                    self._run("ROLLBACK")
                raise
        except sqlite3.Error as error:
            raise StoreError(f"store {self.path}: cannot be written: {error}") from None

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
        """Close the database (the state stays in the file; the lock goes)."""
        if self._db is not None:
            self._db.close()
            self._db = None


def _identity(path: Any) -> Optional[Tuple[int, int]]:
    """The device and inode of the file at ``path`` (``None`` if there is
    none): a file removed or replaced since shows another, and a save
    there would go to a file no one can open again."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino
