"""Node and Workload: immutable values built from what callers hand in.

Both classes validate once, at construction, and keep their own read-only
copies of the caller's data: nothing the caller owns is kept or changed.
"""
import math
import re
from collections.abc import Mapping as MappingABC
from decimal import Decimal
from typing import Any, Callable, Dict, FrozenSet, Iterable, List, Mapping, Optional, Tuple

import attr

from .errors import SHOWN_LIMIT, InvalidInputError, InvalidTypeError, shown
from .quantities import (NODE_MAPS, SHARED_MAPS, quick_quantities, share, to_number,
                         to_quantities)
from .removed import Removed

__all__ = ["Node", "Workload"]


def valid_unicode(text: str) -> bool:
    """Whether ``text`` is valid Unicode: no lone surrogate (JSON's ``\\ud800``
    escapes and Python strings can hold one; no UTF-8 text does). O(len)."""
    return text.isascii() or not _SURROGATE.search(text)


_SURROGATE = re.compile("[\ud800-\udfff]")


def check_flag(value: Any, what: str) -> bool:
    """``value`` as a bool: True, False, or a number equal to 1 or 0 (a
    NumPy bool too), None as False; anything else, a string above all, is
    refused."""
    if type(value) is bool:
        return value
    if value is None:
        return False
    try:
        if not isinstance(value, (str, bytes, complex)) and \
                (value == True or value == False):  # noqa: E712 - 1, 0, NumPy bools too
            return bool(value)
    except Exception:  # noqa: BLE001 - a value that cannot say (an array): refused below
        pass
    raise InvalidTypeError(f"{what}: expected True or False, got {shown(value)}")


def check_name(value: Any, where: str) -> str:
    """Return ``value`` if it is a non-empty string of valid Unicode (no lone
    surrogate), else raise naming ``where``."""
    if not isinstance(value, str):
        raise InvalidTypeError(
            f"{where}: name must be a string, got {type(value).__name__} {shown(value)}")
    if not value:
        raise InvalidInputError(f"{where}: name must not be empty")
    if not valid_unicode(value):
        raise InvalidInputError(
            f"{where}: name must be valid Unicode, got a lone surrogate ({shown(value)})")
    return value


#: How the frozen classes below set their fields, looked up once; and how
#: the quick builders (see :func:`_quick_workload`) make a bare instance.
_set = object.__setattr__
_new = object.__new__

_COLLECTIONS = (list, tuple, set, frozenset)
#: One empty set for every workload without immunities or groups (CPython
#: makes a new 216-byte one each time; most workloads have neither).
_EMPTY: FrozenSet[str] = frozenset()


def _quick_names(value: Any) -> Optional[FrozenSet[str]]:
    """:func:`_names` of ``value`` when it is a list, tuple or set of
    non-empty strings, else ``None``. O(len(value))."""
    if type(value) in _COLLECTIONS:
        if not value:
            return _EMPTY
        try:
            names = frozenset(value)
        except TypeError:  # an unhashable item: the full check names it
            return None
        for name in names:
            if type(name) is not str or not name:
                return None  # the full check names it
        return _shared(names)
    return None


def _names(value: Any, where: str, field: str) -> FrozenSet[str]:
    quick = _quick_names(value)
    if quick is not None:
        return quick
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable) \
            or isinstance(value, MappingABC):
        raise InvalidTypeError(
            f"{where}: {field} must be a list, tuple or set of strings, "
            f"got {type(value).__name__} {shown(value)}")
    listed = list(value)
    for name in listed:
        if not isinstance(name, str) or not name:
            raise (InvalidInputError if isinstance(name, str) else InvalidTypeError)(
                f"{where}: {field} must hold non-empty strings, got {shown(name)}")
    return _shared(frozenset(listed)) if listed else _EMPTY


#: Name sets already handed out (see :func:`share`): workloads repeat the
#: same few groups, and one shared set is one long-lived object fewer each.
_SHARED_NAMES: Dict[FrozenSet[str], FrozenSet[str]] = {}


def _shared(names: FrozenSet[str]) -> FrozenSet[str]:
    return share(_SHARED_NAMES, names, names)


def _plain(quantities: Mapping[str, Decimal]) -> Dict[str, Any]:
    return {key: to_number(value) for key, value in quantities.items()}


def quantities_repr(quantities: Mapping[str, Decimal]) -> str:
    """``quantities`` as Python source that reads back as the same numbers
    (infinities as ``float('inf')``, odd decimals as ``Decimal('...')``)."""
    parts = []
    for key, value in quantities.items():
        number = to_number(value)
        infinite = isinstance(number, float) and math.isinf(number)
        text = f"float('{number}')" if infinite else repr(number)
        parts.append(f"{key!r}: {text}")
    return "{" + ", ".join(parts) + "}"


def check_fields(data: Mapping[Any, Any], allowed: Tuple[str, ...], where: str, kind: str,
                 also: Tuple[str, ...] = ()) -> None:
    """Refuse a field of ``data`` that is neither in ``allowed`` nor in
    ``also`` (accepted, not listed), naming the first such in sorted
    order: a misspelt field is never dropped without a word. O(F)."""
    known = _ALLOWED.get(allowed)
    if known is None:
        known = _ALLOWED[allowed] = frozenset(allowed)
    if not data.keys() <= known:
        unknown = sorted(set(map(str, data)) - known - set(also))
        if unknown:
            raise InvalidInputError(
                f"{where}: unknown field {shown(unknown[0])} "
                f"(a {kind} has: {', '.join(allowed)})")


def _fields(data: Any, where: str, kind: str, allowed: Tuple[str, ...]) -> Mapping[str, Any]:
    """Check that ``data`` is a mapping with known keys and a valid name;
    return it (a copy with ``id`` read as ``name``, if it has ``id``)."""
    if type(data) is not dict and not isinstance(data, MappingABC):
        raise InvalidTypeError(
            f"{where}: a {kind} must be a mapping, got {type(data).__name__}")
    where = _named(data, where, kind)
    check_fields(data, allowed, where, kind, also=("id",))
    if "id" not in data:
        if "name" not in data:
            raise InvalidInputError(f"{where}: missing field 'name'")
        check_name(data["name"], where)
        return data  # (read only: not copied)
    fields = dict(data)
    identifier = check_name(fields.pop("id"), where)
    if "name" in fields and check_name(fields["name"], where) != identifier:
        raise InvalidInputError(
            f"{where}: 'name' and 'id' disagree "
            f"({shown(fields['name'])} != {shown(identifier)})")
    fields["name"] = identifier
    return fields


def _named(data: Mapping[Any, Any], where: str, kind: str) -> str:
    """``where``; for a lone item (``where`` is just ``kind``, not one of a
    list), its kind and its name, if it has one."""
    if where == kind:
        name = data.get("name", data.get("id"))
        if isinstance(name, str) and name:
            return _label(kind, name)
    return where


_ALLOWED: Dict[Tuple[str, ...], FrozenSet[str]] = {}


def _label(kind: str, name: str) -> str:
    # (A name of usual length is shown whole, without a call: this runs for
    # every node and workload built.)
    return f"{kind} {name!r}" if len(name) <= SHOWN_LIMIT else f"{kind} {shown(name)}"


def _no_workloads(assigned: Any, where: str) -> None:
    """Refuse 0.2.0's ``assigned_workloads`` unless it is empty (``None``,
    ``{}``): a Node holds no workloads now."""
    if assigned is None or isinstance(assigned, (MappingABC, list, tuple)) and not assigned:
        return
    raise InvalidInputError(
        f"{where}: 'assigned_workloads' was 0.2.0's; a Node holds no workloads now: "
        f"build the node without it, then record them on its distributor with "
        f"distributor.record_running(name, workloads)")


@attr.s(frozen=True, slots=True, eq=True, hash=False, repr=False, init=False)
class Node:
    """A machine: a name and the resources it offers.

    ``resources`` maps a resource name to a number: a capacity (``cpu: 8``),
    a tag (quantity 0), a shortcoming (a negative number), a ward
    (``float('-inf')``) or unlimited room (``float('inf')``). The node keeps a
    read-only copy with every quantity as an exact :class:`~decimal.Decimal`.
    ``assigned_workloads`` is taken for 0.2.0 code only when empty: a node
    holds no workloads (a distributor records them, see
    :meth:`~pylighthouse.Distributor.record_running`).

    Raises:
        InvalidTypeError, InvalidInputError: the name is not a non-empty
            string, ``resources`` is not a mapping, a quantity is not a
            number (or is NaN), or ``assigned_workloads`` is not empty.
    """

    name: str = attr.ib()
    resources: Mapping[str, Decimal] = attr.ib()

    def __init__(self, name: str, resources: Optional[Mapping[str, Any]] = None,
                 assigned_workloads: Any = None):
        where = _label("node", check_name(name, "node"))
        _no_workloads(assigned_workloads, where)
        _set(self, "name", name)
        _set(self, "resources", to_quantities(
            {} if resources is None else resources, where, "resources", False, NODE_MAPS))

    def __hash__(self) -> int:
        return hash((self.name, frozenset(self.resources.items())))

    def __repr__(self) -> str:
        return f"Node({self.name!r}, {quantities_repr(self.resources)})"

    def __reduce__(self) -> Tuple[Any, Tuple[Any, ...]]:
        # (The read-only mapping cannot be pickled; its contents can.)
        return (Node, (self.name, dict(self.resources)))

    # The 0.2.0 node was mutable and placed workloads on itself; a Node is
    # now a value, and placing belongs to a distributor.
    attempt_attach = Removed(
        "a Node no longer places workloads; put it in a distributor and call "
        "attempt_assign_loads([workload]), or test a fit without placing with "
        "check_fit(distributor.node_state(name).remaining, workload)")
    attempt_attach_amicable = Removed(
        "aversion groups are the distributor's: attempt_assign_loads tries the nodes "
        "without a shared aversion group first; explain(workload).fits names them")
    has_averse_loads = Removed(
        "ask the distributor: the nodes sharing an aversion group with a workload "
        "are explain(workload).averse")
    detach_all = Removed(
        "release the node's workloads from its distributor: "
        "distributor.release_loads(distributor.node_state(name).workloads)")
    assigned_workloads = Removed(
        "a distributor keeps what runs where: distributor.node_state(name).workloads "
        "names them, distributor.workload(name) returns one")
    add_ward = Removed(
        "a Node is immutable; build a new one: "
        "Node(node.name, {**node.resources, ward: float('-inf')})")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "node") -> "Node":
        """Build a node from ``{"name": ..., "resources": {...}}``.

        ``"id"`` is accepted as another spelling of ``"name"``; a missing
        ``"resources"`` means a node with no resources.
        """
        if isinstance(data, MappingABC) and "assigned_workloads" in data:
            _no_workloads(data["assigned_workloads"], _named(data, where, "node"))
            data = {key: value for key, value in data.items() if key != "assigned_workloads"}
        fields = _fields(data, where, "node", ("name", "resources"))
        return cls(fields["name"], fields.get("resources", {}))

    @classmethod
    def from_list(cls, items: Iterable[Any]) -> List["Node"]:
        """Build nodes from a list of dicts (nodes already built pass through)."""
        return _build_all(cls, items, "nodes", _quick_node if cls is Node else None)

    def to_dict(self) -> Dict[str, Any]:
        """Return ``{"name": ..., "resources": {...}}`` with plain numbers."""
        return {"name": self.name, "resources": _plain(self.resources)}


@attr.s(frozen=True, slots=True, eq=True, hash=False, repr=False, init=False)
class Workload:
    """Something to place: a name, what it requires, and how it behaves.

    ``requirements`` maps a resource name to a finite number (0 asks for a
    tag; a negative number offsets a shortcoming). ``immunities`` (called
    tolerations by the HTTP service) are resource names whose value on a
    node is ignored when fitting, though the node must still have them if
    they are required. ``aversion_groups`` name groups whose members prefer
    not to share a node. Both accept a list, tuple or set of strings.

    Raises:
        InvalidTypeError, InvalidInputError: a bad name, requirements that
            are not a mapping of finite numbers, or name collections that
            are not lists, tuples or sets of strings.
    """

    name: str = attr.ib()
    requirements: Mapping[str, Decimal] = attr.ib()
    immunities: FrozenSet[str] = attr.ib()
    aversion_groups: FrozenSet[str] = attr.ib()

    def __init__(self, name: str, requirements: Optional[Mapping[str, Any]] = None,
                 immunities: Iterable[str] = (), aversion_groups: Iterable[str] = ()):
        where = _label("workload", check_name(name, "workload"))
        _set(self, "name", name)
        _set(self, "requirements", to_quantities(
            {} if requirements is None else requirements, where, "requirements", True))
        _set(self, "immunities", _names(immunities, where, "immunities"))
        _set(self, "aversion_groups", _names(aversion_groups, where, "aversion_groups"))

    def __hash__(self) -> int:
        return hash((self.name, frozenset(self.requirements.items()),
                     self.immunities, self.aversion_groups))

    def __repr__(self) -> str:
        extras = ""
        if self.immunities:
            extras += f", immunities={sorted(self.immunities)!r}"
        if self.aversion_groups:
            extras += f", aversion_groups={sorted(self.aversion_groups)!r}"
        return f"Workload({self.name!r}, {quantities_repr(self.requirements)}{extras})"

    def __reduce__(self) -> Tuple[Any, Tuple[Any, ...]]:
        return (Workload, (self.name, dict(self.requirements),
                           sorted(self.immunities), sorted(self.aversion_groups)))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "workload") -> "Workload":
        """Build a workload from a dict with ``name`` (or ``id``),
        ``requirements`` and, optionally, ``immunities`` (or ``tolerations``)
        and ``aversion_groups``."""
        fields = _fields(data, where, "workload",
                         ("name", "requirements", "immunities",
                          "aversion_groups", "tolerations"))
        immunities: Iterable[str] = fields.get("immunities", ())
        if "tolerations" in fields:
            immunities = set(_names(immunities, _label(
                "workload", fields["name"]), "immunities"))
            immunities |= _names(fields["tolerations"], _label(
                "workload", fields["name"]), "tolerations")
        return cls(fields["name"], fields.get("requirements", {}),
                   immunities, fields.get("aversion_groups", ()))

    @classmethod
    def from_list(cls, items: Iterable[Any]) -> List["Workload"]:
        """Build workloads from a list of dicts (workloads pass through)."""
        return _build_all(cls, items, "workloads",
                          _quick_workload if cls is Workload else None)

    def to_dict(self) -> Dict[str, Any]:
        """Return a plain dict that :meth:`from_dict` turns back into this workload."""
        return {"name": self.name,
                "requirements": _plain(self.requirements),
                "immunities": sorted(self.immunities),
                "aversion_groups": sorted(self.aversion_groups)}


def _build_all(cls: Any, items: Any, what: str,
               quick: Optional[Callable[[Any], Any]] = None) -> List[Any]:
    """``cls.from_dict`` for every dict of ``items``; values of ``cls`` pass
    through. ``quick``, when given, builds an item first, or gives ``None``
    for ``from_dict`` to build it (and to name what is wrong with it)."""
    if isinstance(items, (str, bytes)) or isinstance(items, MappingABC) \
            or not isinstance(items, Iterable):
        raise InvalidTypeError(
            f"{what}: expected a list, got {type(items).__name__}")
    if quick is None:
        return [item if isinstance(item, cls) else cls.from_dict(item, f"{what}[{index}]")
                for index, item in enumerate(items)]
    return [item if type(item) is cls else
            quick(item) or (item if isinstance(item, cls)
                            else cls.from_dict(item, f"{what}[{index}]"))
            for index, item in enumerate(items)]


# The quick builders below make what ``from_dict`` makes of the usual item
# (a plain dict of the usual fields, an ASCII name, numbers met before, lists
# of names) without building the error labels that only a fault would show:
# this runs once per item of a batch. Anything else gives ``None``.

_NODE_FIELDS = frozenset(("name", "resources"))
_WORKLOAD_FIELDS = frozenset(("name", "requirements", "immunities", "aversion_groups"))
_NO_QUANTITIES: Dict[str, Any] = {}


def _quick_node(data: Any) -> Optional[Node]:
    """The node ``from_dict`` makes of ``data`` when it is a usual one, else
    ``None``. O(len(resources))."""
    if type(data) is not dict or not data.keys() <= _NODE_FIELDS:
        return None
    name = data.get("name")
    if type(name) is not str or not name or not name.isascii():
        return None
    resources = quick_quantities(data.get("resources", _NO_QUANTITIES), False, NODE_MAPS)
    if resources is None:
        return None
    node = _new(Node)
    _set(node, "name", name)
    _set(node, "resources", resources)
    return node


def _quick_workload(data: Any) -> Optional[Workload]:
    """The workload ``from_dict`` makes of ``data`` when it is a usual one,
    else ``None``. O(len(requirements) + names)."""
    if type(data) is not dict or not data.keys() <= _WORKLOAD_FIELDS:
        return None
    name = data.get("name")
    if type(name) is not str or not name or not name.isascii():
        return None
    requirements = quick_quantities(
        data.get("requirements", _NO_QUANTITIES), True, SHARED_MAPS)
    if requirements is None:
        return None
    immunities = _quick_names(data.get("immunities", ()))
    if immunities is None:
        return None
    groups = _quick_names(data.get("aversion_groups", ()))
    if groups is None:
        return None
    workload = _new(Workload)
    _set(workload, "name", name)
    _set(workload, "requirements", requirements)
    _set(workload, "immunities", immunities)
    _set(workload, "aversion_groups", groups)
    return workload
