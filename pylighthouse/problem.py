"""JSON problems: read one, check it (naming the JSON path of every mistake), and solve it.

A problem is the JSON object that the command line reads from a file and
the HTTP endpoint reads from a request body::

    {"nodes": [...], "workloads": [...], "strategy": "BinPack",
     "rubric": {...}, "partial": true}

:func:`load_problem` turns it into a :class:`Problem` or raises the first
mistake; :func:`check_problem` lists every mistake; :func:`build_distributor`
and :func:`solve` run it through the library. Fitting and ordering are the
distributors' business: nothing here decides where a workload goes.
"""
import json
import re
from decimal import Decimal
from typing import Any, Dict, List, Mapping, Optional, Tuple, Type, Union

import attr

from .distributors import BinPackDistributor, Distributor, distributor_class
from .errors import (DuplicateNameError, InvalidInputError, InvalidTypeError,
                     LighthouseException)
from .model import Node, Workload
from .quantities import MAX_EXPONENT, from_json_quantity
from .rubric import Rubric

__all__ = ["Problem", "Outcome", "parse_json", "load_problem", "check_problem",
           "build_distributor", "solve", "MAX_EXPONENT"]


_PROBLEM_FIELDS = ("nodes", "workloads", "strategy", "rubric", "partial")
_NODE_FIELDS = ("name", "id", "resources", "workloads")
_WORKLOAD_FIELDS = ("name", "id", "requirements", "immunities", "tolerations",
                    "aversion_groups")
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")


@attr.s(frozen=True, slots=True, auto_attribs=True, kw_only=True)
class Problem:
    """A checked problem: everything needed to build a distributor and place.

    ``strategy`` is the canonical strategy name (``"Prioritized"``,
    ``"RoundRobin"`` or ``"BinPack"``); ``rubric`` is ``None`` unless one was
    given; ``running`` maps a node name to the workloads already running
    there; ``partial`` is the problem's own ``partial`` flag, ``None`` when
    it has none.
    """

    nodes: Tuple[Node, ...]
    workloads: Tuple[Workload, ...]
    strategy: str = "Prioritized"
    rubric: Optional[Rubric] = None
    running: Mapping[str, Tuple[Workload, ...]] = attr.Factory(dict)
    partial: Optional[bool] = None


@attr.s(frozen=True, slots=True, auto_attribs=True, kw_only=True)
class Outcome:
    """What :func:`solve` found.

    ``assignments`` maps every workload of the problem, in order, to its node
    or ``None``; ``unplaced`` maps each workload left without a node to a
    one-line reason; ``distributor`` holds the final state (for reports).
    """

    partial: bool
    assignments: Mapping[str, Optional[str]]
    unplaced: Mapping[str, str]
    distributor: Distributor

    @property
    def successful(self) -> bool:
        """Whether every workload was placed."""
        return not self.unplaced

    def to_dict(self) -> Dict[str, Any]:
        """Return the answer of the HTTP endpoint for this outcome.

        All-or-nothing: ``{"successful": ..., "assignments": {...}}``, the
        assignments empty on failure. Partial: the workloads that were placed
        in ``assignments`` and the others, with their reasons, in
        ``"unplaced"``.
        """
        placed = {name: node for name, node in self.assignments.items() if node is not None}
        if not self.partial:
            return {"successful": self.successful, "assignments": placed}
        return {"successful": self.successful, "assignments": placed,
                "unplaced": dict(self.unplaced)}


def parse_json(text: Union[str, bytes], where: str = "problem") -> Any:
    """Parse JSON text, keeping decimals exact (``0.1`` is ``Decimal('0.1')``).

    Bytes must be UTF-8. ``NaN`` and ``Infinity`` literals are refused: they
    are not JSON (write the strings ``"inf"`` or ``"-inf"`` instead).

    Raises:
        InvalidInputError: the text is not JSON; the message starts with
            ``where`` and says where the text went wrong.
    """
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8-sig")
        except UnicodeDecodeError as error:
            raise InvalidInputError(
                f"{where}: not UTF-8 text (byte {error.start})") from None
    try:
        return json.loads(text, parse_float=Decimal, parse_constant=_refuse_constant)
    except _ConstantError as error:
        raise InvalidInputError(
            f"{where}: invalid JSON: {error.args[0]} is not JSON; "
            f'write the strings "inf" or "-inf" for infinities') from None
    except json.JSONDecodeError as error:
        raise InvalidInputError(
            f"{where}: invalid JSON: {error.msg} (line {error.lineno}, "
            f"column {error.colno})") from None
    except (ValueError, ArithmeticError, RecursionError) as error:
        # Integers with thousands of digits, exponents beyond what a decimal
        # holds, or nesting deeper than Python's stack.
        reason = ("nested too deeply" if isinstance(error, RecursionError)
                  else "a number is too long or too large")
        raise InvalidInputError(f"{where}: invalid JSON: {reason}") from None


class _ConstantError(Exception):
    pass


def _refuse_constant(name: str) -> Any:
    raise _ConstantError(name)


def load_problem(data: Any) -> Problem:
    """Return the :class:`Problem` that ``data`` describes.

    ``data`` is parsed JSON (dicts, lists, strings, numbers) or JSON text.

    Raises:
        InvalidInputError, InvalidTypeError, DuplicateNameError: the first
            mistake found (in the order :func:`check_problem` lists them);
            the message starts with the JSON path of the bad value, as in
            ``workloads[3].requirements.cpu: expected a number, got "lots"``.

    Cost: linear in the size of the problem.
    """
    reader = _Reader()
    problem = reader.problem(_parsed(data))
    if reader.errors:
        raise reader.errors[0]
    assert problem is not None
    return problem


def check_problem(data: Any) -> List[str]:
    """Return every mistake in ``data`` (parsed JSON or JSON text), one
    message each: the mistakes in the fields, in document order (strategy
    and rubric first), then the duplicate names. An empty list means the
    problem is valid.

    Mistakes inside a value that is itself wrong (the items of a ``nodes``
    that is not an array) are not looked for.
    """
    try:
        parsed = _parsed(data)
    except InvalidInputError as error:
        return [str(error)]
    reader = _Reader()
    reader.problem(parsed)
    return [str(error) for error in reader.errors]


def build_distributor(problem: Problem) -> Distributor:
    """Return a new distributor of the problem's strategy over its nodes,
    with the workloads already running on them recorded.

    Cost: O(N x R + running workloads x R).
    """
    cls = distributor_class(problem.strategy)
    if cls is BinPackDistributor:
        if problem.rubric is None:
            raise InvalidInputError("rubric: the BinPack strategy needs a rubric")
        distributor: Distributor = BinPackDistributor(problem.rubric, problem.nodes)
    else:
        distributor = cls(problem.nodes)
    for node, workloads in problem.running.items():
        distributor.record_running(node, workloads)
    return distributor


def solve(problem: Problem, partial: Optional[bool] = None) -> Outcome:
    """Place the problem's workloads and return the :class:`Outcome`.

    ``partial`` (by default the problem's own flag, else ``False``) places
    what fits; otherwise the call is all-or-nothing. Each workload left
    without a node gets the distributor's explanation as its reason; after a
    failed all-or-nothing call, the workloads that would have found a node
    are said to be held back.

    Cost: that of :meth:`~pylighthouse.Distributor.attempt_assign_loads`,
    plus O(N x R) per unplaced workload for its explanation.
    """
    if partial is None:
        partial = bool(problem.partial)
    distributor = build_distributor(problem)
    assignments = distributor.attempt_assign_loads(problem.workloads, all_or_nothing=not partial)
    if all(node is not None for node in assignments.values()):
        return Outcome(partial=partial, assignments=assignments, unplaced={},
                       distributor=distributor)
    if partial:
        unplaced = {load.name: str(distributor.explain(load))
                    for load in problem.workloads if assignments[load.name] is None}
    else:
        unplaced = _blockers(problem)
    return Outcome(partial=partial, assignments=assignments, unplaced=unplaced,
                   distributor=distributor)


def _blockers(problem: Problem) -> Dict[str, str]:
    """Why an all-or-nothing call failed: place what fits on a scratch
    distributor, explain the workloads left over, and hold back the rest."""
    trial = build_distributor(problem)
    result = trial.attempt_assign_loads(problem.workloads)
    stuck = [name for name, node in result.items() if node is None]
    held = (f"held back: the call is all-or-nothing and {len(stuck)} "
            f"workload{'s' if len(stuck) > 1 else ''} found no node")
    by_name = {load.name: load for load in problem.workloads}
    return {name: str(trial.explain(by_name[name])) if node is None else held
            for name, node in result.items()}


def _parsed(data: Any) -> Any:
    if isinstance(data, (str, bytes, bytearray)):
        return parse_json(data)
    return data


def _key(path: str, key: str) -> str:
    """The path of field ``key`` inside ``path``: ``a.b``, or ``a["odd key"]``."""
    if _PLAIN_KEY.match(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key)}]"


def _describe(value: Any) -> str:
    """A short JSON-flavoured picture of ``value`` for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return json.dumps(shown)
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, (list, tuple)):
        return "an array"
    if isinstance(value, (int, Decimal, float)):
        text = str(value)
        return text if len(text) <= 40 else text[:37] + "..."
    return type(value).__name__


class _Reader:
    """Walks parsed JSON, collecting an error (with its path) for every mistake."""

    def __init__(self) -> None:
        self.errors: List[LighthouseException] = []
        # Every valid name met, with its path: duplicates are found even
        # among items that are wrong in some other way.
        self.seen: Dict[str, List[Tuple[str, str]]] = {"node": [], "workload": []}

    def fail(self, kind: Type[LighthouseException], path: str, message: str) -> None:
        self.errors.append(kind(f"{path or 'problem'}: {message}"))

    # ------------------------------------------------------------ shapes

    def fields(self, value: Any, path: str, kind: str,
               allowed: Tuple[str, ...]) -> Optional[Mapping[str, Any]]:
        if not isinstance(value, Mapping):
            self.fail(InvalidTypeError, path,
                      f"expected an object ({kind}), got {_describe(value)}")
            return None
        for key in value:
            if key not in allowed:
                self.fail(InvalidInputError, _key(path, str(key)),
                          f"unknown field (a {kind} has: {', '.join(allowed)})")
        return value

    def array(self, value: Any, path: str) -> List[Any]:
        if not isinstance(value, list):
            self.fail(InvalidTypeError, path, f"expected an array, got {_describe(value)}")
            return []
        return value

    def names(self, value: Any, path: str) -> List[str]:
        return [item for index, item in enumerate(self.array(value, path))
                if self.name_text(item, f"{path}[{index}]")]

    def name_text(self, value: Any, path: str) -> bool:
        if not isinstance(value, str):
            self.fail(InvalidTypeError, path, f"expected a string, got {_describe(value)}")
            return False
        if not value:
            self.fail(InvalidInputError, path, "must not be empty")
            return False
        return True

    def name(self, fields: Mapping[str, Any], path: str, kind: str) -> Tuple[Optional[str], str]:
        """The item's name and the path of the field that gave it."""
        given = [key for key in ("name", "id") if key in fields]
        if not given:
            self.fail(InvalidInputError, path, 'missing field "name" (or "id")')
            return None, path
        where = _key(path, given[0])
        if not all(self.name_text(fields[key], _key(path, key)) for key in given):
            return None, where
        if len(given) == 2 and fields["name"] != fields["id"]:
            self.fail(InvalidInputError, _key(path, "id"),
                      f'disagrees with "name" ({_describe(fields["id"])} is not '
                      f'{_describe(fields["name"])})')
            return None, where
        self.seen[kind].append((fields[given[0]], where))
        return fields[given[0]], where

    # -------------------------------------------------------- quantities

    def quantity(self, value: Any, path: str, finite: bool) -> Optional[Decimal]:
        if value is None or isinstance(value, (bool, list, dict)):
            self.fail(InvalidTypeError, path, f"expected a number, got {_describe(value)}")
            return None
        try:
            quantity = from_json_quantity(value, path)
        except LighthouseException as error:
            self.errors.append(error)
            return None
        if quantity.is_infinite():
            if finite:
                self.fail(InvalidInputError, path,
                          f"must be a finite number, got {_describe(value)}")
                return None
            return quantity
        return quantity  # (to_quantity has checked its range)

    def quantities(self, value: Any, path: str, finite: bool) -> Optional[Dict[str, Decimal]]:
        if not isinstance(value, Mapping):
            self.fail(InvalidTypeError, path,
                      f"expected an object of numbers, got {_describe(value)}")
            return None
        read: Dict[str, Decimal] = {}
        valid = True
        for key, item in value.items():
            where = _key(path, str(key))
            if not isinstance(key, str) or not key:
                self.fail(InvalidInputError, where, "resource names must be non-empty strings")
                valid = False
                continue
            quantity = self.quantity(item, where, finite)
            if quantity is None:
                valid = False
            else:
                read[key] = quantity
        return read if valid else None

    # ------------------------------------------------------------- items

    def problem(self, data: Any) -> Optional[Problem]:
        fields = self.fields(data, "", "problem", _PROBLEM_FIELDS)
        if fields is None:
            return None
        strategy = self.strategy(fields.get("strategy", "Prioritized"))
        rubric = self.rubric(fields["rubric"]) if "rubric" in fields else None
        if strategy == BinPackDistributor.strategy and "rubric" not in fields:
            self.fail(InvalidInputError, "rubric",
                      "missing: the BinPack strategy needs a rubric (resource -> weight)")
        for required in ("nodes", "workloads"):
            if required not in fields:
                self.fail(InvalidInputError, required, "missing field (an array)")
        nodes: List[Node] = []
        running: Dict[str, Tuple[Workload, ...]] = {}
        for index, item in enumerate(self.array(fields.get("nodes", []), "nodes")):
            read = self.node(item, f"nodes[{index}]")
            if read is not None:
                nodes.append(read[0])
                if read[1]:
                    running[read[0].name] = tuple(read[1])
        workloads: List[Workload] = []
        for index, item in enumerate(self.array(fields.get("workloads", []), "workloads")):
            load = self.workload(item, f"workloads[{index}]")
            if load is not None:
                workloads.append(load)
        partial = fields.get("partial")
        if partial is not None and not isinstance(partial, bool):
            self.fail(InvalidTypeError, "partial",
                      f"expected true or false, got {_describe(partial)}")
        self.unique("node")
        self.unique("workload")
        if self.errors:
            return None
        return Problem(nodes=tuple(nodes), workloads=tuple(workloads),
                       strategy=strategy or "", rubric=rubric, running=running,
                       partial=partial)

    def strategy(self, value: Any) -> Optional[str]:
        try:
            return distributor_class(value).strategy
        except LighthouseException:
            self.fail(InvalidInputError, "strategy",
                      f"unknown strategy {_describe(value)} (valid: Prioritized, "
                      f"RoundRobin, BinPack; any letter case)")
            return None

    def rubric(self, value: Any) -> Optional[Rubric]:
        weights = self.quantities(value, "rubric", finite=True)
        return None if weights is None else Rubric(weights)

    def node(self, value: Any, path: str) -> Optional[Tuple[Node, List[Workload]]]:
        """The node and the workloads running on it."""
        fields = self.fields(value, path, "node", _NODE_FIELDS)
        if fields is None:
            return None
        name, _ = self.name(fields, path, "node")
        resources = self.quantities(fields.get("resources", {}), _key(path, "resources"),
                                    finite=False)
        running = []
        for index, item in enumerate(self.array(fields.get("workloads", []),
                                                _key(path, "workloads"))):
            where = f"{_key(path, 'workloads')}[{index}]"
            read = self.workload(item, where)
            if read is None or resources is None:
                continue
            running.append(read)
            for key in read.requirements:
                if key not in resources:
                    self.fail(InvalidInputError, _key(_key(where, "requirements"), key),
                              f"node {json.dumps(name)} has no resource {json.dumps(key)} "
                              f"(a running workload uses its node's resources)")
        if name is None or resources is None:
            return None
        return Node(name, resources), running

    def workload(self, value: Any, path: str) -> Optional[Workload]:
        fields = self.fields(value, path, "workload", _WORKLOAD_FIELDS)
        if fields is None:
            return None
        name, _ = self.name(fields, path, "workload")
        requirements = self.quantities(fields.get("requirements", {}),
                                       _key(path, "requirements"), finite=True)
        immunities = set()
        for field in ("immunities", "tolerations"):
            immunities.update(self.names(fields.get(field, []), _key(path, field)))
        groups = self.names(fields.get("aversion_groups", []), _key(path, "aversion_groups"))
        if name is None or requirements is None:
            return None
        return Workload(name, requirements, immunities, groups)

    def unique(self, kind: str) -> None:
        first: Dict[str, str] = {}
        for name, path in self.seen[kind]:
            if name in first:
                self.fail(DuplicateNameError, path,
                          f"{kind} name {json.dumps(name)} is already used by {first[name]}")
            else:
                first[name] = path.rsplit(".", 1)[0]
