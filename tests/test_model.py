"""Node and Workload: construction, validation, immutability, copies, round trips."""
from decimal import Decimal
from fractions import Fraction
from math import inf, nan

import attr
import pytest

import pylighthouse
import pylighthouse.pylighthouse as lighthouse
from pylighthouse import (InvalidInputError, InvalidTypeError, LighthouseException, Node,
                          Workload)


def test_documented_import_path_exposes_the_public_names():
    for name in pylighthouse.__all__:
        assert getattr(lighthouse, name) is getattr(pylighthouse, name)
    for name in ("Node", "Workload", "Rubric", "Distributor", "PrioritizedDistributor",
                 "RoundRobinDistributor", "BinPackDistributor", "LighthouseException"):
        assert name in lighthouse.__all__


def test_node_from_dict_keeps_exact_decimal_copies():
    resources = {"cpu": 0.7, "mem": 16, "disk": Decimal("1.25"), "gpu": Fraction(1, 4)}
    node = Node.from_dict({"name": "n", "resources": resources})
    assert node.resources == {"cpu": Decimal("0.7"), "mem": Decimal(16),
                              "disk": Decimal("1.25"), "gpu": Decimal("0.25")}
    assert resources == {"cpu": 0.7, "mem": 16, "disk": Decimal("1.25"), "gpu": Fraction(1, 4)}
    resources["cpu"] = 99
    assert node.resources["cpu"] == Decimal("0.7")


def test_values_are_immutable_and_hashable():
    node = Node("n", {"cpu": 1})
    workload = Workload("w", {"cpu": 1}, ["x"], {"g"})
    with pytest.raises(attr.exceptions.FrozenInstanceError):
        node.name = "m"
    with pytest.raises(TypeError):
        node.resources["cpu"] = 2
    with pytest.raises(TypeError):
        workload.requirements["cpu"] = 2
    assert hash(node) == hash(Node("n", {"cpu": 1.0}))
    assert node == Node("n", {"cpu": 1.0})
    assert len({workload, Workload("w", {"cpu": 1}, ("x",), ["g"])}) == 1


def test_workload_accepts_lists_tuples_sets_and_the_service_spellings():
    a = Workload.from_dict({"name": "w", "requirements": {"cpu": 1},
                            "immunities": ["spiders"], "aversion_groups": ("io",)})
    b = Workload.from_dict({"id": "w", "requirements": {"cpu": 1},
                            "tolerations": {"spiders"}, "aversion_groups": {"io"}})
    assert a == b
    assert a.immunities == frozenset({"spiders"})
    assert a.aversion_groups == frozenset({"io"})


def test_empty_and_repeated_names_and_an_id_with_an_unknown_field():
    for empty in ((), [], set(), frozenset()):
        workload = Workload("w", {}, empty, empty)
        assert workload.immunities == frozenset() == workload.aversion_groups
    assert Workload("w", {}, ["a", "a"]).immunities == frozenset({"a"})
    with pytest.raises(InvalidInputError, match="^workload 'w': immunities must hold "
                       "non-empty strings, got ''$"):
        Workload("w", {}, ("a", ""))
    with pytest.raises(InvalidInputError, match="^workloads\\[0\\]: unknown field 'colour'"):
        Workload.from_list([{"id": "w", "colour": "red"}])
    assert Workload.from_list([{"id": "w"}]) == [Workload("w")]


def test_an_unknown_field_of_a_lone_item_names_the_item():
    # (one of a list is named by its place, as every other mistake in it)
    with pytest.raises(InvalidInputError, match="^node 'n1': unknown field 'colour' "
                       "\\(a node has: name, resources\\)$"):
        Node.from_dict({"name": "n1", "resources": {}, "colour": "red"})
    with pytest.raises(InvalidInputError, match="^workload 'w1': unknown field 'colour'"):
        Workload.from_dict({"id": "w1", "colour": "red"})
    with pytest.raises(InvalidInputError, match="^workload: unknown field 'colour'"):
        Workload.from_dict({"name": 3, "colour": "red"})  # (no name to give)
    with pytest.raises(InvalidInputError, match="^nodes\\[0\\]: unknown field 'colour'"):
        Node.from_list([{"name": "n1", "colour": "red"}])


def test_round_trips_through_plain_dicts():
    node = Node("n", {"cpu": 0.5, "ward": -inf, "big": inf, "tag": 0})
    assert node.to_dict() == {"name": "n",
                              "resources": {"cpu": 0.5, "ward": -inf, "big": inf, "tag": 0}}
    assert Node.from_dict(node.to_dict()) == node
    workload = Workload("w", {"cpu": 0.1, "flies": -5}, {"b", "a"}, ["g"])
    assert workload.to_dict() == {"name": "w", "requirements": {"cpu": 0.1, "flies": -5},
                                  "immunities": ["a", "b"], "aversion_groups": ["g"]}
    assert Workload.from_dict(workload.to_dict()) == workload


def test_from_list_builds_in_order_and_passes_built_values_through():
    built = Node("b", {})
    nodes = Node.from_list([{"name": "a", "resources": {}}, built])
    assert [n.name for n in nodes] == ["a", "b"] and nodes[1] is built
    assert Workload.from_list(({"name": "x"},))[0] == Workload("x")


@pytest.mark.parametrize("data, message", [
    ({"resources": {}}, "nodes[0]: missing field 'name'"),
    ({"name": "", "resources": {}}, "nodes[0]: name must not be empty"),
    ({"name": 7, "resources": {}}, "nodes[0]: name must be a string, got int 7"),
    ({"name": "n", "resources": [1]}, "node 'n': resources must be a mapping"),
    ({"name": "n", "resources": {"cpu": "8"}},
     "node 'n': resources['cpu']: expected a number, got str '8'"),
    ({"name": "n", "resources": {"cpu": True}},
     "node 'n': resources['cpu']: expected a number, got bool True"),
    ({"name": "n", "resources": {"cpu": nan}}, "node 'n': resources['cpu']: NaN"),
    ({"name": "n", "resources": {"": 1}}, "node 'n': resources keys must be non-empty"),
    ({"name": "n", "resources": {}, "colour": "red"}, "nodes[0]: unknown field 'colour'"),
    ({"name": "n", "id": "m"}, "nodes[0]: 'name' and 'id' disagree"),
    ("node-1", "nodes[0]: a node must be a mapping, got str"),
])
def test_bad_nodes_are_refused_naming_item_and_field(data, message):
    with pytest.raises(LighthouseException) as raised:
        Node.from_list([data])
    assert str(raised.value).startswith(message)


@pytest.mark.parametrize("data, error, message", [
    ({"name": "w", "requirements": {"cpu": inf}}, InvalidInputError,
     "workload 'w': requirements['cpu']: must be finite"),
    ({"name": "w", "requirements": {"cpu": -inf}}, InvalidInputError,
     "workload 'w': requirements['cpu']: must be finite"),
    ({"name": "w", "requirements": 5}, InvalidTypeError,
     "workload 'w': requirements must be a mapping"),
    ({"name": "w", "requirements": {"cpu": Fraction(1, 3)}}, InvalidInputError,
     "workload 'w': requirements['cpu']: Fraction(1, 3) has no exact decimal form"),
    ({"name": "w", "immunities": "spiders"}, InvalidTypeError,
     "workload 'w': immunities must be a list, tuple or set of strings, got str"),
    ({"name": "w", "aversion_groups": [1]}, InvalidTypeError,
     "workload 'w': aversion_groups must hold non-empty strings, got 1"),
    ({"name": "w", "immunities": [""]}, InvalidInputError,
     "workload 'w': immunities must hold non-empty strings, got ''"),
    ({"name": "w", "requirements": {1: 1}}, InvalidTypeError,
     "workload 'w': requirements keys must be non-empty strings, got 1"),
    ({"name": "w", "requirements": {"": 1}}, InvalidInputError,
     "workload 'w': requirements keys must be non-empty strings, got ''"),
    ({"name": "w", "requirments": {}}, InvalidInputError,
     "workloads[0]: unknown field 'requirments'"),
    ({"name": None}, InvalidTypeError, "workloads[0]: name must be a string, got NoneType"),
])
def test_bad_workloads_are_refused_naming_item_and_field(data, error, message):
    with pytest.raises(error) as raised:
        Workload.from_list([data])
    assert str(raised.value).startswith(message)


def test_errors_derive_from_the_matching_builtins():
    with pytest.raises(ValueError):
        Workload("w", {"cpu": nan})
    with pytest.raises(TypeError):
        Workload("w", {"cpu": "1"})
    with pytest.raises(TypeError):
        Node.from_list("not a list")


def test_unhashable_names_are_refused_with_a_library_error():
    with pytest.raises(InvalidTypeError, match="immunities must hold non-empty strings"):
        Workload("w", {}, [["spiders"]])
    with pytest.raises(InvalidTypeError, match="aversion_groups must hold non-empty strings"):
        Workload("w", {}, (), [{}])


def test_equal_requirements_and_groups_share_one_read_only_copy_with_their_own_spelling():
    # Workloads come in flavours: equal mappings made of the same decimals
    # are handed out once, which saves memory and garbage-collector work.
    first = Workload("a", {"cpu": 1, "mem": 0.5}, aversion_groups=["web"])
    second = Workload("b", {"cpu": 1, "mem": 0.5}, aversion_groups=("web",))
    assert first.requirements is second.requirements
    assert first.aversion_groups is second.aversion_groups
    # 1 and 1.0 are equal but spelled differently: each keeps its spelling.
    third = Workload("c", {"cpu": 1.0, "mem": 0.5})
    assert str(first.requirements["cpu"]) == "1"
    assert str(third.requirements["cpu"]) == "1.0"
    assert third.requirements is not first.requirements
    with pytest.raises(TypeError):
        first.requirements["cpu"] = 2  # still read-only
