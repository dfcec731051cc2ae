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
import functools
import json
from decimal import Decimal
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Set, Tuple, Type, Union

import attr

from .bestfit import BestFitDistributor
from .collector import paused
from .distributors import BinPackDistributor, Distributor, distributor_class
from .errors import (DuplicateNameError, InvalidInputError, InvalidTypeError,
                     SHOWN_LIMIT, LighthouseException, json_path, quoted,
                     short_path)
from .errors import shown as describe_number
from .model import Node, Workload, _quick_workload, check_flag, valid_unicode
from .quantities import MAX_EXPONENT, RANGE, from_json_quantity
from .rubric import Rubric

__all__ = ["Problem", "Outcome", "parse_json", "load_problem", "check_problem",
           "build_distributor", "solve", "MAX_EXPONENT"]


_PROBLEM_FIELDS = ("nodes", "workloads", "strategy", "rubric", "partial", "$schema")
_NODE_FIELDS = ("name", "id", "resources", "workloads")
_WORKLOAD_FIELDS = ("name", "id", "requirements", "immunities", "tolerations",
                    "aversion_groups")


@attr.s(frozen=True, slots=True, auto_attribs=True, kw_only=True)
class Problem:
    """A checked problem: everything needed to build a distributor and place.

    ``strategy`` is the canonical strategy name (``"Prioritized"``,
    ``"RoundRobin"``, ``"BinPack"`` or ``"BestFit"``); ``rubric`` is ``None``
    unless one was given (BinPack needs one, BestFit may have one);
    ``running`` maps a node name to the workloads already running there;
    ``partial`` is the problem's own ``partial`` flag, ``None`` when
    it has none.
    """

    nodes: Tuple[Node, ...]
    workloads: Tuple[Workload, ...]
    strategy: str = "Prioritized"
    rubric: Optional[Rubric] = None
    running: Mapping[str, Tuple[Workload, ...]] = attr.Factory(dict)
    partial: Optional[bool] = None


@attr.s(frozen=True, slots=True, kw_only=True)
class Outcome:
    """What :func:`solve` found.

    ``assignments`` maps every workload of the problem, in order, to its node
    or ``None``; ``unplaced`` maps each workload left without a node to a
    one-line reason; ``distributor`` holds the final state (for reports).

    ``unplaced`` may also be given as a function returning that mapping:
    it is then called the first time ``unplaced`` is read (after a failed
    all-or-nothing call, finding the reasons costs a second placement, which
    the JSON answer does not need).
    """

    partial: bool = attr.ib()
    assignments: Mapping[str, Optional[str]] = attr.ib()
    _unplaced: Union[Mapping[str, str], Callable[[], Mapping[str, str]]] = attr.ib(eq=False)
    distributor: Distributor = attr.ib()

    @property
    def unplaced(self) -> Mapping[str, str]:
        """Each workload left without a node, with its one-line reason."""
        if callable(self._unplaced):
            object.__setattr__(self, "_unplaced", self._unplaced())
        assert not callable(self._unplaced)
        return self._unplaced

    @property
    def successful(self) -> bool:
        """Whether every workload was placed (read from the assignments)."""
        return all(node is not None for node in self.assignments.values())

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


def parse_json(text: Union[str, bytes, bytearray, memoryview], where: str = "problem") -> Any:
    """Parse JSON text, keeping decimals exact (``0.1`` is ``Decimal('0.1')``).

    Bytes must be UTF-8. The text is read strictly: an object that repeats a
    key, and the ``NaN`` and ``Infinity`` literals (not JSON: write the
    strings ``"inf"`` or ``"-inf"`` instead), are refused, naming the JSON
    path where they are. Use it for problems and for distributor snapshots.

    Raises:
        InvalidTypeError: ``text`` is neither a string nor bytes.
        InvalidInputError: the text is not strict JSON; the message starts
            with ``where`` and says where the text went wrong.

    Cost: linear in the length of the text.
    """
    return _read_json(text, where)


@paused()
def _read_json(text: Union[str, bytes, bytearray, memoryview], where: str,
               stands: str = "") -> Any:
    """:func:`parse_json` of a document that stands for what ``stands``
    says (see :func:`_first_flaw`: ``"map"`` for a map of quantities, such
    as a rubric given alone), so that a number too large to read is named
    as such. O(length of the text)."""
    if isinstance(text, str) and text.startswith("\ufeff"):
        text = text[1:]  # (a byte order mark, as "utf-8-sig" drops from bytes)
    elif isinstance(text, (bytes, bytearray, memoryview)):
        try:
            text = bytes(text).decode("utf-8-sig")
        except UnicodeDecodeError as error:
            raise InvalidInputError(
                f"{where}: not UTF-8 text (byte {error.start})") from None
    if not isinstance(text, str):
        raise InvalidTypeError(
            f"{where}: expected JSON text (str or bytes), got {type(text).__name__}")
    flaws: List[Any] = []
    try:
        parsed = _loads(text, flaws, False)
    except json.JSONDecodeError as error:
        raise _broken(where, error) from None
    except RecursionError:  # (nesting deeper than Python's stack)
        raise InvalidInputError(f"{where}: invalid JSON: nested too deeply") from None
    except (ValueError, ArithmeticError):
        # Integers of more digits than Python reads, or exponents beyond
        # what a decimal holds: read again, marking them, to say where.
        flaws = []
        try:
            parsed = _loads(text, flaws, True)
        except json.JSONDecodeError as error:  # (the text is broken as well)
            raise _broken(where, error) from None
        except (ValueError, ArithmeticError, RecursionError):
            flaws = []  # (found nowhere: said as before)
        if not flaws:
            raise InvalidInputError(
                f"{where}: invalid JSON: a number is too long or too large") from None
    if flaws:
        try:
            path, message = _first_flaw(parsed, "", stands)
        except RecursionError:
            raise InvalidInputError(f"{where}: invalid JSON: nested too deeply") from None
        raise InvalidInputError(
            f"{where}: invalid JSON: {short_path(path) or 'the document'}: {message}")
    return parsed


def _loads(text: str, flaws: List[Any], numbers: bool) -> Any:
    """``text`` parsed, what strict JSON refuses marked in the value and
    counted in ``flaws`` (see :func:`_first_flaw`); ``numbers``: numbers too
    long or too large to read too, else they raise."""
    hooks: Dict[str, Any] = {"parse_constant": lambda name: _flaw(flaws, _Constant(name)),
                             "object_pairs_hook": lambda pairs: _object(flaws, pairs)}
    if numbers:
        return json.loads(text, parse_float=lambda number: _number(flaws, number, Decimal),
                          parse_int=lambda number: _number(flaws, number, int), **hooks)
    return json.loads(text, parse_float=Decimal, **hooks)


def _broken(where: str, error: json.JSONDecodeError) -> InvalidInputError:
    return InvalidInputError(f"{where}: invalid JSON: {error.msg} (line {error.lineno}, "
                             f"column {error.colno})")


class _Constant:
    """Where the text held ``NaN`` or ``Infinity``: found again by its path."""

    def __init__(self, name: str):
        self.name = name


class _Beyond:
    """Where the text held a number too long or too large to read."""

    def __init__(self, text: str):
        self.text = text


def _number(flaws: List[Any], text: str, read: Callable[[str], Any]) -> Any:
    try:
        return read(text)
    except (ValueError, ArithmeticError):
        return _flaw(flaws, _Beyond(text))


class _Repeated:
    """Where an object repeated a key: its pairs, in the order written."""

    def __init__(self, pairs: List[Tuple[str, Any]]):
        self.pairs = pairs


def _flaw(flaws: List[Any], flaw: Any) -> Any:
    flaws.append(flaw)
    return flaw


def _object(flaws: List[Any], pairs: List[Tuple[str, Any]]) -> Any:
    value = dict(pairs)
    if len(value) == len(pairs):
        return value
    return _flaw(flaws, _Repeated(pairs))


#: The keys whose objects map names to quantities, and those whose value is
#: one: a number too long to read there is out of the quantities' range;
#: anywhere else no field takes it at all.
_QUANTITY_MAPS = frozenset({"resources", "requirements", "rubric"})
_QUANTITY_KEYS = frozenset({"cost"})


def _first_flaw(value: Any, path: str, stands: str = "") -> Tuple[str, str]:
    """The path of the first flaw in document order, and what it is; only
    called when there is one. ``stands``: ``"quantity"`` where ``value``
    stands for a quantity, ``"map"`` for a map of them (see
    :data:`_QUANTITY_MAPS`). Cost: linear in the document, once."""
    if isinstance(value, _Constant):
        return path, (f"{value.name} is not JSON; write the strings "
                      f'"inf" or "-inf" for infinities')
    if isinstance(value, _Beyond):
        text = value.text if len(value.text) <= SHOWN_LIMIT \
            else value.text[:SHOWN_LIMIT] + f"... ({len(value.text)} characters)"
        if stands == "quantity":
            return path, f"{text} is out of range ({RANGE})"
        return path, f"{text} is a number too long or too large to read (no field here takes one)"
    pairs: Any = ()
    if isinstance(value, _Repeated):
        pairs = value.pairs
    elif isinstance(value, dict):
        pairs = value.items()
    elif isinstance(value, list):
        pairs = ((index, item) for index, item in enumerate(value))
    seen = set()
    for key, item in pairs:
        where = f"{path}[{key}]" if isinstance(key, int) else json_path(path, key)
        if isinstance(value, _Repeated):
            if key in seen:
                return where, f"duplicate key {quoted(key)} (each key may appear once)"
            seen.add(key)
        if isinstance(key, int):
            kind = ""
        elif stands == "map":
            kind = "quantity"
        else:
            kind = "map" if key in _QUANTITY_MAPS else "quantity" if key in _QUANTITY_KEYS else ""
        found = _first_flaw(item, where, kind)
        if found[1]:
            return found
    return path, ""


@paused()
def load_problem(data: Any, *, parsed: bool = False) -> Problem:
    """Return the :class:`Problem` that ``data`` describes.

    ``data`` is JSON text (str or bytes, read by :func:`parse_json`) or
    parsed JSON (dicts, lists, strings, numbers). With ``parsed=True`` it is
    always taken as parsed: a string is then a JSON string, which is not a
    problem, rather than text to decode. A top-level ``"$schema"`` field
    (which editors add to validate the file) is ignored.

    Raises:
        InvalidInputError, InvalidTypeError, DuplicateNameError: the first
            mistake found (in the order :func:`check_problem` lists them);
            the message starts with the JSON path of the bad value, as in
            ``workloads[3].requirements.cpu: expected a number, got "lots"``.

    Cost: linear in the size of the problem. A problem with nothing
    unusual in it (no running workloads, no infinity strings) is built
    straight through :class:`~pylighthouse.Node` and
    :class:`~pylighthouse.Workload`; any other goes through the reader that
    names every mistake.
    """
    data = data if parsed else _parsed(data)
    quick = _plain_problem(data)
    if quick is not None:
        return quick
    reader = _Reader()
    problem = reader.problem(data)
    if reader.errors:
        raise reader.errors[0]
    assert problem is not None
    return problem


def check_problem(data: Any, *, parsed: bool = False) -> List[str]:
    """Return every mistake in ``data`` (JSON text or parsed JSON, as for
    :func:`load_problem`), one message each: the mistakes in the fields, in
    document order (strategy and rubric first), then the duplicate names.
    An empty list means the problem is valid.

    Mistakes inside a value that is itself wrong (the items of a ``nodes``
    that is not an array) are not looked for.
    """
    if not parsed:
        try:
            data = _parsed(data)
        except LighthouseException as error:
            return [str(error)]
    reader = _Reader()
    reader.problem(data)
    return [str(error) for error in reader.errors]


def new_distributor(strategy: str, nodes: Iterable[Any],
                    rubric: Optional[Any] = None) -> Distributor:
    """Return an empty-handed distributor of ``strategy`` (any letter case) over ``nodes``.

    ``rubric`` is required by BinPack, optional for BestFit and ignored by
    the strategies that do not score.

    Raises:
        InvalidInputError: unknown strategy, or BinPack without a rubric.

    Cost: that of the strategy's ``from_list``.
    """
    cls = distributor_class(strategy)
    if cls is BinPackDistributor:
        if rubric is None:
            raise InvalidInputError("rubric: the BinPack strategy needs a rubric")
        return BinPackDistributor(rubric, nodes)
    if cls is BestFitDistributor:
        return BestFitDistributor(nodes, rubric)
    return cls(nodes)


def build_distributor(problem: Problem) -> Distributor:
    """Return a new distributor of the problem's strategy over its nodes,
    with the workloads already running on them recorded.

    Cost: O(N x R + running workloads x R).
    """
    distributor = new_distributor(problem.strategy, problem.nodes, problem.rubric)
    for node, workloads in problem.running.items():
        distributor.record_running(node, workloads)
    return distributor


@paused()
def solve(problem: Problem, partial: Optional[bool] = None) -> Outcome:
    """Place the problem's workloads and return the :class:`Outcome`.

    ``partial`` (by default the problem's own flag, else ``False``) places
    what fits; otherwise the call is all-or-nothing. Each workload left
    without a node gets the distributor's explanation as its reason; after a
    failed all-or-nothing call, the workloads that would have found a node
    are said to be held back.

    Raises:
        InvalidTypeError: ``problem`` is not a :class:`Problem` (for JSON,
            call :func:`load_problem` first), or ``partial`` is not True,
            False or None (1 and 0 too).

    Cost: that of :meth:`~pylighthouse.Distributor.attempt_assign_loads`,
    plus, when some workload is left over, O(N x R) for each distinct
    (requirements, immunities) among them (see
    :meth:`~pylighthouse.Distributor.explain_all`). After a failed
    all-or-nothing call the reasons are found only when
    :attr:`Outcome.unplaced` is first read, at the cost of a partial
    placement on a scratch distributor.
    """
    if not isinstance(problem, Problem):
        raise InvalidTypeError(
            f"problem: expected a Problem (from load_problem), got {type(problem).__name__}")
    partial = bool(problem.partial) if partial is None else check_flag(partial, "partial")
    distributor = build_distributor(problem)
    assignments = distributor.attempt_assign_loads(problem.workloads, all_or_nothing=not partial)
    if all(node is not None for node in assignments.values()):
        return Outcome(partial=partial, assignments=assignments, unplaced={},
                       distributor=distributor)
    if partial:
        unplaced = _reasons(distributor, [load for load in problem.workloads
                                          if assignments[load.name] is None])
        return Outcome(partial=partial, assignments=assignments, unplaced=unplaced,
                       distributor=distributor)
    return Outcome(partial=partial, assignments=assignments,
                   unplaced=functools.partial(_blockers, problem), distributor=distributor)


def _reasons(distributor: Distributor, loads: List[Workload]) -> Dict[str, str]:
    """Each workload's one-line explanation, computed and written once per
    requirements and immunities (per requirements map: the model hands
    equal ones out as one object, and the workloads keep theirs alive), and
    its aversion groups only where some node fits it (they only split the
    fitting nodes; a workload left over by a placement fits nowhere, unless
    a workload placed after it gave room back by asking less than zero: its
    line then counts the nodes where it fits now)."""
    first: Dict[Any, Workload] = {}
    # (equal maps not shared, met after the model's table of them started
    # afresh, are counted each: lines counted alike, cheaply, see nowhere)
    shapes = [(id(load.requirements), load.immunities) for load in loads]
    for shape, load in zip(shapes, loads):
        first.setdefault(shape, load)
    # (counted a column of nodes at a time: no reason per node is kept)
    lines = {shape: line for shape, line in
             zip(first, distributor._nowhere_lines(list(first.values())))
             if line is not None}
    reasons = {}
    grouped = []
    for shape, load in zip(shapes, loads):
        line = lines.get(shape)
        if line is None:
            grouped.append(load)
        else:
            reasons[load.name] = line
    if not grouped:
        return reasons  # (in the order of ``loads`` already)
    for name, explanation in distributor.explain_all(grouped).items():  # (see above)
        reasons[name] = str(explanation)
    return {load.name: reasons[load.name] for load in loads}


def _blockers(problem: Problem) -> Dict[str, str]:
    """Why an all-or-nothing call failed: place what fits on a scratch
    distributor, explain the workloads left over, and hold back the rest."""
    trial = build_distributor(problem)
    result = trial.attempt_assign_loads(problem.workloads)
    stuck = [load for load in problem.workloads if result[load.name] is None]
    held = (f"held back: the call is all-or-nothing and {len(stuck)} "
            f"workload{'s' if len(stuck) > 1 else ''} found no node")
    reasons = _reasons(trial, stuck)
    return {name: reasons.get(name, held) for name in result}


def _plain_problem(data: Any) -> Optional[Problem]:
    """The problem ``data`` describes, when every part of it is plainly
    valid; ``None`` otherwise, and the reader takes over to find and name
    the mistakes. Accepts nothing the reader refuses (a differential test
    holds them together); declines whatever needs a closer look."""
    if type(data) is not dict or not data.keys() <= _PROBLEM_KEYS:
        return None
    nodes, loads = data.get("nodes"), data.get("workloads")
    strategy, partial = data.get("strategy", "Prioritized"), data.get("partial", False)
    if type(nodes) is not list or type(loads) is not list or type(strategy) is not str \
            or type(partial) is not bool or type(data.get("$schema", "")) is not str:
        return None
    partial = data.get("partial")
    try:
        cls = distributor_class(strategy)
        rubric = None
        if "rubric" in data:
            weights = data["rubric"]
            if type(weights) is not dict or not _plain_map(weights, _RUBRIC_VALUES):
                return None
            rubric = Rubric(weights)
        elif cls is BinPackDistributor:
            return None
        plain_nodes = []
        for item in nodes:
            resources = item.get("resources", {}) if type(item) is dict else None
            if resources is None or not item.keys() <= _PLAIN_NODE_KEYS \
                    or not _plain_map(resources, _NODE_VALUES):
                return None
            if not all(type(value) is not str for value in resources.values()):
                # "inf", "-inf": the JSON spelling of unlimited and wards
                item = dict(item, resources={
                    key: from_json_quantity(value, "") if type(value) is str else value
                    for key, value in resources.items()})
            plain_nodes.append(item)
        built_loads = []
        # (the ids of the requirement maps whose keys are valid Unicode: the
        # model hands equal maps out as one object, which the workloads
        # built keep alive)
        vetted: Set[int] = set()
        for index, item in enumerate(loads):
            # (the model's quick builder checks the usual workload once; what
            # the reader asks beyond it is looked at after)
            load = _quick_workload(item)
            if load is None:
                if type(item) is not dict or not item.keys() <= _PLAIN_WORKLOAD_KEYS \
                        or not _plain_map(item.get("requirements", _NO_REQUIREMENTS),
                                          _REQUIREMENT_VALUES):
                    return None
                load = Workload.from_dict(item, f"workloads[{index}]")
            else:
                requirements = load.requirements
                if id(requirements) not in vetted:
                    if not all(map(str.isascii, requirements)) \
                            and not all(map(valid_unicode, requirements)):
                        return None
                    vetted.add(id(requirements))
            # (most workloads name no immunities or groups: only those
            # given are looked at)
            if not _NAMES_FIELD_SET.isdisjoint(item):
                for field in _NAMES_FIELDS:
                    if field in item and not _plain_names(item[field]):
                        return None
            built_loads.append(load)
        built_nodes = Node.from_list(plain_nodes)
    except LighthouseException:
        return None
    # Quantities out of the format's range were refused by the model above.
    if len({node.name for node in built_nodes}) < len(built_nodes) \
            or len({load.name for load in built_loads}) < len(built_loads):
        return None
    return Problem(nodes=tuple(built_nodes), workloads=tuple(built_loads),
                   strategy=cls.strategy, rubric=rubric, running={}, partial=partial)


_PROBLEM_KEYS = frozenset(_PROBLEM_FIELDS)
_PLAIN_NODE_KEYS = frozenset(("name", "id", "resources"))
_PLAIN_WORKLOAD_KEYS = frozenset(_WORKLOAD_FIELDS)
_NAMES_FIELDS = ("immunities", "tolerations", "aversion_groups")
_NAMES_FIELD_SET = frozenset(_NAMES_FIELDS)
_NO_REQUIREMENTS: Dict[str, Any] = {}
#: The kinds of quantity the quick path takes: JSON's numbers, Python's
#: floats, and for nodes the infinity strings; the reader handles the rest.
_REQUIREMENT_VALUES = _RUBRIC_VALUES = (int, float, Decimal)
_NODE_VALUES = (int, float, Decimal, str)


def _plain_map(value: Any, kinds: Tuple[type, ...]) -> bool:
    """A dict of plain names to values of ``kinds`` (bools are not ints
    here); the values themselves are checked by the model."""
    if type(value) is not dict:
        return False
    for key, quantity in value.items():
        if type(key) is not str or not key or not valid_unicode(key):
            return False
        if type(quantity) not in kinds:
            return False
    return True


def _plain_names(value: Any) -> bool:
    """A JSON array of non-empty strings of valid Unicode."""
    return type(value) is list and all(
        type(name) is str and name and valid_unicode(name)
        for name in value)


def _parsed(data: Any) -> Any:
    if isinstance(data, (str, bytes, bytearray, memoryview)):
        return parse_json(data)
    return data


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
    if isinstance(value, int) and value.bit_length() > 3 * SHOWN_LIMIT:
        # (str() of an int of thousands of digits raises: said as errors says it)
        return describe_number(value)
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
                self.fail(InvalidInputError, json_path(path, str(key)),
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
        return self.unicode(value, path)

    def unicode(self, value: str, path: str) -> bool:
        """Whether ``value`` is valid Unicode (JSON's \\ud800 escapes can
        write half of a surrogate pair, which no UTF-8 text holds)."""
        if valid_unicode(value):
            return True
        self.fail(InvalidInputError, path, "not valid Unicode (a lone surrogate)")
        return False

    def name(self, fields: Mapping[str, Any], path: str, kind: str) -> Tuple[Optional[str], str]:
        """The item's name and the path of the field that gave it."""
        given = [key for key in ("name", "id") if key in fields]
        if not given:
            self.fail(InvalidInputError, path, 'missing field "name" (or "id")')
            return None, path
        where = json_path(path, given[0])
        if not all(self.name_text(fields[key], json_path(path, key)) for key in given):
            return None, where
        if len(given) == 2 and fields["name"] != fields["id"]:
            self.fail(InvalidInputError, json_path(path, "id"),
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
            if isinstance(value, str):  # shown escaped and cut, never raw
                self.fail(type(error), path, f"expected a number, got {_describe(value)}")
            else:
                self.errors.append(error)
            return None
        if finite and quantity.is_infinite():
            self.fail(InvalidInputError, path, f"must be a finite number, got {_describe(value)}")
            return None
        return quantity  # (to_quantity has checked its range)

    def quantities(self, value: Any, path: str, finite: bool) -> Optional[Dict[str, Decimal]]:
        if not isinstance(value, Mapping):
            self.fail(InvalidTypeError, path,
                      f"expected an object of numbers, got {_describe(value)}")
            return None
        read: Dict[str, Decimal] = {}
        valid = True
        for key, item in value.items():
            where = json_path(path, str(key))
            if not isinstance(key, str) or not key:
                self.fail(InvalidInputError, where, "resource names must be non-empty strings")
                valid = False
                continue
            if not self.unicode(key, where):
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
        if "partial" in fields and not isinstance(partial, bool):
            self.fail(InvalidTypeError, "partial",
                      f"expected true or false, got {_describe(partial)}")
        if "$schema" in fields and not isinstance(fields["$schema"], str):
            self.fail(InvalidTypeError, '["$schema"]',  # (as json_path writes the key)
                      f"expected a string (a URI), got {_describe(fields['$schema'])}")
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
                      f"RoundRobin, BinPack, BestFit; any letter case)")
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
        resources = self.quantities(fields.get("resources", {}), json_path(path, "resources"),
                                    finite=False)
        running = []
        for index, item in enumerate(self.array(fields.get("workloads", []),
                                                json_path(path, "workloads"))):
            where = f"{json_path(path, 'workloads')}[{index}]"
            read = self.workload(item, where)
            if read is None or resources is None:
                continue
            running.append(read)
            for key in read.requirements:
                if key not in resources:
                    self.fail(InvalidInputError, json_path(json_path(where, "requirements"), key),
                              f"node {quoted(name)} has no resource {quoted(key)} "
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
                                       json_path(path, "requirements"), finite=True)
        immunities = set()
        for field in ("immunities", "tolerations"):
            immunities.update(self.names(fields.get(field, []), json_path(path, field)))
        groups = self.names(fields.get("aversion_groups", []), json_path(path, "aversion_groups"))
        if name is None or requirements is None:
            return None
        return Workload(name, requirements, immunities, groups)

    def unique(self, kind: str) -> None:
        first: Dict[str, str] = {}
        for name, path in self.seen[kind]:
            if name in first:
                self.fail(DuplicateNameError, path,
                          f"{kind} name {quoted(name)} is already used by {first[name]}")
            else:
                first[name] = path.rsplit(".", 1)[0]
