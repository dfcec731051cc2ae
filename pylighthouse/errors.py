"""The exceptions pylighthouse raises, all rooted at :class:`LighthouseException`.

Each one also derives from the builtin a caller would reach for first
(``ValueError``, ``TypeError`` or ``KeyError``), so ordinary handlers keep
working. Messages name the item and the field that are wrong.
"""
import json
import re
from typing import Dict


class LighthouseException(Exception):
    """Base class of every error raised by pylighthouse (the 0.2.0 name)."""


class LighthouseRubricException(LighthouseException):
    """0.2.0's name for rubric errors, which 0.2.0 never raised. Kept so that
    0.2.0 code naming it in an ``except`` clause still runs; nothing raises
    it (a bad rubric raises :class:`InvalidInputError` or
    :class:`InvalidTypeError`). Only ``pylighthouse.pylighthouse`` (the
    0.2.0 import path) offers it."""


class InvalidInputError(LighthouseException, ValueError):
    """A value has the right type but is not acceptable (NaN, empty name...)."""


class InvalidTypeError(LighthouseException, TypeError):
    """A value has the wrong type (a string where a number belongs...)."""


class DuplicateNameError(InvalidInputError):
    """A node or workload name is used twice where names must be unique."""


class UnknownNameError(LighthouseException, KeyError):
    """A name does not refer to any node or placed workload."""

    def __str__(self) -> str:
        # KeyError would show the repr of its argument; show the message itself.
        return str(self.args[0]) if self.args else ""


class ReentrantCallError(LighthouseException, RuntimeError):
    """A distributor was called from inside one of its own calls, by code
    of the caller's that the call ran (a ``__hash__`` of a name given as a
    subclass of :class:`str`, say). The inner call is refused; the outer
    one then fails too and leaves the distributor as it was."""


class RemovedAPIError(LighthouseException, AttributeError):
    """A name that 0.2.0 offered and this version does not; the message says
    what to write instead. It is an :class:`AttributeError` too, so that
    ``hasattr`` and ``getattr(obj, name, default)`` keep their meaning."""


#: At most this many characters of a caller's value appear in a message.
SHOWN_LIMIT = 60


def counted(number: int, noun: str, nouns: str = "") -> str:
    """``number`` and ``noun``, plural unless one, for a message: "1 node",
    "2 nodes", "3 entries" (``nouns``, when adding an s will not do)."""
    return f"{number} {noun if number == 1 else nouns or noun + 's'}"


def shown(value: object) -> str:
    """A short ``repr`` of ``value`` for an error message, never longer than
    about :data:`SHOWN_LIMIT` characters and never raising: a long string is
    cut (``'abc...' (10000000 characters)``), a huge integer gives its
    number of digits. Cost: O(SHOWN_LIMIT), whatever the size of ``value``."""
    if isinstance(value, str):
        if len(value) <= SHOWN_LIMIT:
            return repr(value)
        return f"{value[:SHOWN_LIMIT]!r}... ({len(value)} characters)"
    if isinstance(value, (list, tuple, set, frozenset, dict, bytes, bytearray)) \
            and len(value) > SHOWN_LIMIT // 4:
        return f"a {type(value).__name__} of {len(value)} items"
    if isinstance(value, int) and not isinstance(value, bool) \
            and value.bit_length() > 3 * SHOWN_LIMIT:
        return f"an integer of about {int(value.bit_length() * 0.30103) + 1} digits"
    try:
        text = repr(value)
    except Exception:  # a caller's object whose repr fails says its type
        return f"a {type(value).__name__}"
    if len(text) > SHOWN_LIMIT:
        return f"{text[:SHOWN_LIMIT]}... ({type(value).__name__})"
    return text


def short_path(path: str) -> str:
    """``path`` as a message shows it: whole when at most four times
    :data:`SHOWN_LIMIT` characters long, else its first two limits' worth,
    its length and its last limit's worth
    (``x.a.a.a... (1803 characters) ....a.a.b``), so that a value nested
    hundreds of levels deep still gives a short message. O(SHOWN_LIMIT)."""
    if len(path) <= 4 * SHOWN_LIMIT:
        return path
    return f"{path[:2 * SHOWN_LIMIT]}... ({len(path)} characters) ...{path[-SHOWN_LIMIT:]}"


#: A key written after a dot in a message's path (``nodes[0].resources.cpu``);
#: any other is written in brackets, quoted as JSON quotes it.
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")


def quoted(key: object) -> str:
    """``key`` quoted as JSON quotes it, cut after :data:`SHOWN_LIMIT`
    characters (``"abc"... (10000 characters)``); ``None`` as ``null``, and
    what is not a string as :func:`shown` shows it. Cost: O(SHOWN_LIMIT)."""
    if not isinstance(key, str):
        return "null" if key is None else shown(key)
    if len(key) <= SHOWN_LIMIT:
        return json.dumps(key)
    return f"{json.dumps(key[:SHOWN_LIMIT])}... ({len(key)} characters)"


#: The member part of a path (``.cpu``, ``["gpu model"]``) per name met, for
#: :func:`json_path`: a snapshot's restore labels every quantity it reads.
#: At most :data:`MEMBERS_KEPT` names (later ones are worked out each time).
_MEMBERS: Dict[str, str] = {}
MEMBERS_KEPT = 4096


def json_path(path: str, key: object) -> str:
    """The path of member ``key`` of the object at ``path``, for a message:
    ``a.b`` for a plain name of at most :data:`SHOWN_LIMIT` characters, else
    ``a["odd key"]`` (:func:`quoted`; a key that is not a string as
    :func:`shown` shows it). A message stays short however long the names
    a caller sends. Cost: O(1) for a name met before, else O(SHOWN_LIMIT)."""
    member = _MEMBERS.get(key) if type(key) is str else None
    if member is None:
        if not isinstance(key, str):
            member = f"[{shown(key)}]"
        elif len(key) <= SHOWN_LIMIT and _PLAIN_KEY.match(key):
            member = f".{key}"
        else:
            member = f"[{quoted(key)}]"
        if type(key) is str and len(_MEMBERS) < MEMBERS_KEPT:
            _MEMBERS[key] = member
    if not path and member[0] == ".":
        return member[1:]
    return path + member
