"""The exceptions pylighthouse raises, all rooted at :class:`LighthouseException`.

Each one also derives from the builtin a caller would reach for first
(``ValueError``, ``TypeError`` or ``KeyError``), so ordinary handlers keep
working. Messages name the item and the field that are wrong.
"""


class LighthouseException(Exception):
    """Base class of every error raised by pylighthouse (the 0.2.0 name)."""


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
