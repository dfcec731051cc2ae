"""The JSON problem format: reading, checking (with JSON paths), solving, and its schema."""
import copy
import json
from decimal import Decimal
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pylighthouse.model import Node
from pylighthouse.distributors import PrioritizedDistributor, RoundRobinDistributor
from pylighthouse.errors import (DuplicateNameError, InvalidInputError, InvalidTypeError,
                                 LighthouseException, UnknownNameError)
from pylighthouse.problem import (MAX_EXPONENT, build_distributor, check_problem,
                                  load_problem, parse_json, solve)

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
SCHEMA = json.loads((ROOT / "pylighthouse" / "schemas" / "problem.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)

RUBRIC = {"cpu": 1, "mem": 0.5, "disk": 0.025}


def tour(strategy="BinPack", **extra):
    """SPEC.md's tour data, in the HTTP service's spelling (``id``), from the example file."""
    problem = json.loads((EXAMPLES / "tour-prioritized.json").read_text())
    problem["strategy"] = strategy
    if strategy.lower() == "binpack":
        problem["rubric"] = dict(RUBRIC)
    problem.update(extra)
    return problem


# ------------------------------------------------------------------ solving

def test_tour_binpack_matches_spec():
    outcome = solve(load_problem(tour("BinPack")))
    assert dict(outcome.assignments) == {"req-1": "node-2", "req-2": "node-3",
                                         "req-3": "node-1"}
    assert outcome.to_dict() == {"successful": True, "assignments": {
        "req-1": "node-2", "req-2": "node-3", "req-3": "node-1"}}


def test_tour_prioritized_all_or_nothing_fails_as_spec_says():
    outcome = solve(load_problem(tour("Prioritized")))
    assert outcome.to_dict() == {"successful": False, "assignments": {}}
    # The blocker is explained; the others are said to be held back.
    assert outcome.unplaced["req-3"].startswith("0/3 nodes fit")
    assert outcome.unplaced["req-1"].startswith("held back")
    assert outcome.distributor.assignments == {}


def test_tour_prioritized_partial_matches_spec():
    outcome = solve(load_problem(tour("prioritized", partial=True)))
    assert dict(outcome.assignments) == {"req-1": "node-1", "req-2": "node-2", "req-3": None}
    body = outcome.to_dict()
    assert body["assignments"] == {"req-1": "node-1", "req-2": "node-2"}
    assert body["successful"] is False
    assert body["unplaced"]["req-3"] == str(outcome.distributor.explain(
        load_problem(tour()).workloads[2]))


def test_partial_argument_overrides_the_problem_flag():
    problem = load_problem(tour("Prioritized", partial=True))
    assert solve(problem, partial=False).to_dict() == {"successful": False, "assignments": {}}
    assert "unplaced" in solve(problem).to_dict()


def test_strategy_defaults_to_prioritized_and_ignores_case():
    data = tour()
    del data["strategy"]
    assert load_problem(data).strategy == "Prioritized"
    assert load_problem(tour("ROUNDROBIN")).strategy == "RoundRobin"
    assert isinstance(build_distributor(load_problem(tour("roundRobin"))),
                      RoundRobinDistributor)


def test_example_files_give_the_documented_results():
    assert solve(load_problem((EXAMPLES / "tour.json").read_text())).to_dict()["assignments"] \
        == {"req-1": "node-2", "req-2": "node-3", "req-3": "node-1"}
    prioritized = solve(load_problem((EXAMPLES / "tour-prioritized.json").read_bytes()),
                        partial=True)
    assert dict(prioritized.assignments) == {"req-1": "node-1", "req-2": "node-2",
                                             "req-3": None}
    tags = solve(load_problem((EXAMPLES / "tags-and-wards.json").read_text()))
    assert dict(tags.assignments) == {
        "trainer": "gpu-box", "crawler": "edge-1", "web-1": "general-1",
        "web-2": "general-2", "fly-swatter": "old-1", "licensed-1": "general-1",
        "licensed-2": "general-1", "licensed-3": None}
    pre = solve(load_problem((EXAMPLES / "pre-placed.json").read_text()))
    assert dict(pre.assignments) == {"db-2": "b", "api-1": "a", "api-2": "b"}


def test_decimals_stay_exact():
    data = {"nodes": [{"name": "n", "resources": {"cpu": 0.3}}],
            "workloads": [{"name": f"w{i}", "requirements": {"cpu": 0.1}} for i in range(3)]}
    assert solve(load_problem(json.dumps(data))).successful
    assert solve(load_problem(data)).successful  # floats in Python data too


# ---------------------------------------------------- running workloads

def test_running_workloads_use_resources_and_count_for_aversion():
    data = {"nodes": [
        {"name": "a", "resources": {"cpu": 4},
         "workloads": [{"name": "old", "requirements": {"cpu": 1},
                        "aversion_groups": ["db"]}]},
        {"name": "b", "resources": {"cpu": 4}}],
        "workloads": [{"name": "db", "requirements": {"cpu": 1}, "aversion_groups": ["db"]},
                      {"name": "big", "requirements": {"cpu": 3}},
                      {"name": "bigger", "requirements": {"cpu": 4}}]}
    problem = load_problem(data)
    assert [load.name for load in problem.running["a"]] == ["old"]
    outcome = solve(problem, partial=True)
    assert dict(outcome.assignments) == {"db": "b", "big": "a", "bigger": None}
    assert outcome.distributor.node_state("a").workloads == ("old", "big")


def test_running_workloads_may_overcommit_their_node():
    data = {"nodes": [{"name": "a", "resources": {"cpu": 1},
                       "workloads": [{"name": "hog", "requirements": {"cpu": 3}}]}],
            "workloads": []}
    distributor = build_distributor(load_problem(data))
    assert distributor.node_state("a").remaining == {"cpu": -2}


def test_record_running_keeps_the_round_robin_cursor_and_checks_its_input():
    distributor = RoundRobinDistributor([{"name": "a", "resources": {"cpu": 2}},
                                         {"name": "b", "resources": {"cpu": 2}}])
    distributor.record_running("b", [{"name": "x", "requirements": {"cpu": 1}}])
    assert distributor.cursor == 0
    with pytest.raises(UnknownNameError):
        distributor.record_running("zz", [])
    with pytest.raises(DuplicateNameError):
        distributor.record_running("a", [{"name": "x"}])
    with pytest.raises(InvalidInputError, match="gpu"):
        distributor.record_running("a", [{"name": "y", "requirements": {"gpu": 1}},
                                         {"name": "z"}])
    assert distributor.assignments == {"x": "b"}  # nothing recorded by a failed call


# ------------------------------------------------------------------ errors

def mutate(change):
    data = copy.deepcopy(tour())
    change(data)
    return data


def _set(path, value):
    def change(data):
        target = data
        for step in path[:-1]:
            target = target[step]
        target[path[-1]] = value
    return change


BAD = [
    (_set(("workloads", 2, "requirements", "cpu"), "lots"), InvalidTypeError,
     'workloads[2].requirements.cpu: expected a number, got "lots"'),
    (_set(("workloads", 0, "requirements", "cpu"), True), InvalidTypeError,
     "workloads[0].requirements.cpu: expected a number, got true"),
    (_set(("workloads", 0, "requirements", "cpu"), "inf"), InvalidInputError,
     'workloads[0].requirements.cpu: must be a finite number, got "inf"'),
    (_set(("nodes", 1, "resources", "disk"), None), InvalidTypeError,
     "nodes[1].resources.disk: expected a number, got null"),
    (_set(("nodes", 1, "resources", "odd key"), [1]), InvalidTypeError,
     'nodes[1].resources["odd key"]: expected a number, got an array'),
    (_set(("nodes", 0, "resources", "cpu"), Decimal("1e400")), InvalidInputError,
     "nodes[0].resources.cpu: 1E+400 is out of range"),
    (_set(("nodes", 0, "resources"), [1]), InvalidTypeError,
     "nodes[0].resources: expected an object of numbers, got an array"),
    (_set(("nodes", 2), "node-3"), InvalidTypeError,
     'nodes[2]: expected an object (node), got "node-3"'),
    (_set(("nodes",), {}), InvalidTypeError, "nodes: expected an array, got an object"),
    (_set(("nodes", 2, "id"), "node-1"), DuplicateNameError,
     'nodes[2].id: node name "node-1" is already used by nodes[0]'),
    (_set(("workloads", 1, "id"), "req-1"), DuplicateNameError,
     'workloads[1].id: workload name "req-1" is already used by workloads[0]'),
    (_set(("workloads", 1, "id"), ""), InvalidInputError, "workloads[1].id: must not be empty"),
    (_set(("workloads", 1, "id"), 7), InvalidTypeError,
     "workloads[1].id: expected a string, got 7"),
    (_set(("workloads", 1, "name"), "other"), InvalidInputError,
     'workloads[1].id: disagrees with "name"'),
    (_set(("workloads", 1, "tolerations"), "spiders"), InvalidTypeError,
     'workloads[1].tolerations: expected an array, got "spiders"'),
    (_set(("workloads", 1, "aversion_groups"), [""]), InvalidInputError,
     "workloads[1].aversion_groups[0]: must not be empty"),
    (_set(("workloads", 1, "requirment"), {}), InvalidInputError,
     "workloads[1].requirment: unknown field"),
    (_set(("strategy",), "Fastest"), InvalidInputError,
     'strategy: unknown strategy "Fastest" (valid: Prioritized, RoundRobin, BinPack'),
    (_set(("rubric", "cpu"), "heavy"), InvalidTypeError,
     'rubric.cpu: expected a number, got "heavy"'),
    (lambda data: data.pop("rubric"), InvalidInputError,
     "rubric: missing: the BinPack strategy needs a rubric"),
    (lambda data: data.pop("workloads"), InvalidInputError, "workloads: missing field"),
    (_set(("partial",), "yes"), InvalidTypeError, 'partial: expected true or false, got "yes"'),
    (_set(("partial",), None), InvalidTypeError, "partial: expected true or false, got null"),
    # (a key that is not a plain name is written in brackets, as elsewhere)
    (_set(("$schema",), 5), InvalidTypeError, '["$schema"]: expected a string (a URI), got 5'),
    # (the Kelvin sign lowers to "k": the schema's pattern refuses it, and
    # the reader took it for BinPack)
    (_set(("strategy",), "BinPac\u212a"), InvalidInputError,
     'strategy: unknown strategy "BinPac\\u212a"'),
    (_set(("colour",), "blue"), InvalidInputError, "colour: unknown field"),
    # (a long name is cut in the path: a message stays short whatever the
    # request holds)
    (_set(("nodes", 1, "resources", "x" * 5000), "lots"), InvalidTypeError,
     'nodes[1].resources["' + "x" * 60 + '"... (5000 characters)]: expected a number, '
     'got "lots"'),
    (_set(("workloads", 0, "requirements", "y" * 70), "nan"), InvalidTypeError,
     'workloads[0].requirements["' + "y" * 60 + '"... (70 characters)]: '
     'expected a number, got "nan"'),
    (_set(("rubric", "z" * 5000), "heavy"), InvalidTypeError,
     'rubric["' + "z" * 60 + '"... (5000 characters)]: expected a number, got "heavy"'),
    (_set(("c" * 5000,), "blue"), InvalidInputError,
     '["' + "c" * 60 + '"... (5000 characters)]: unknown field'),
]


def test_messages_stay_short_whatever_the_names():
    """A name of 5,000 characters, wherever it sits, is cut in every
    message (its first 60 characters and its length)."""
    long = "q" * 5000
    documents = [
        {"nodes": [{"name": long, "resources": {"cpu": 1}}] * 2, "workloads": []},
        {"nodes": [], "workloads": [{"name": long, "requirements": {}}] * 2},
        {"nodes": [{"name": long, "resources": {"cpu": 1},
                    "workloads": [{"name": "w", "requirements": {long + "r": 1}}]}],
         "workloads": []},
        {"nodes": [{"name": "n", "resources": {long: "lots"}}], "workloads": []},
        {"nodes": [], "workloads": [{"name": "w", "requirements": {long: True}}]},
        {"nodes": [], "workloads": [], long: 1},
        {"nodes": [], "workloads": [], "strategy": long},
        {"nodes": [], "workloads": [], "strategy": "BinPack", "rubric": {long: "x"}},
        {"nodes": [], "workloads": [{"name": "w", "id": long}]},
    ]
    for document in documents:
        messages = check_problem(document)
        assert messages and all(len(message) < 400 for message in messages), messages
        with pytest.raises(LighthouseException) as caught:
            load_problem(document)
        assert len(str(caught.value)) < 400


@pytest.mark.parametrize("change, kind, message", BAD)
def test_each_mistake_is_named_by_its_json_path(change, kind, message):
    data = mutate(change)
    with pytest.raises(kind) as caught:
        load_problem(data)
    assert str(caught.value).startswith(message)
    assert check_problem(data)[0].startswith(message)
    # A schema cannot say that names are unique, that "name" and "id" agree,
    # or how large a number may be: everything else it refuses too.
    beyond_schema = ("already used by", "disagrees", "out of range")
    assert not VALIDATOR.is_valid(data) or any(words in message for words in beyond_schema)


def test_a_python_int_too_long_to_print_is_described_by_its_digits():
    # (str() of it raised ValueError, from check_problem and load_problem;
    # only data given as Python objects can hold one)
    data = mutate(_set(("partial",), 10 ** 5000))
    message = "partial: expected true or false, got an integer of about 5001 digits"
    with pytest.raises(InvalidTypeError, match=message):
        load_problem(data)
    assert check_problem(data) == [message]


def test_a_byte_order_mark_is_read_past_in_text_as_in_bytes():
    # (bytes were decoded as "utf-8-sig"; the same document as str was
    # refused, "Unexpected UTF-8 BOM")
    text = '\ufeff{"nodes": [], "workloads": []}'
    assert check_problem(text) == [] == check_problem(text.encode("utf-8"))
    assert load_problem(text) == load_problem(text.encode("utf-8"))


def test_the_problem_itself_must_be_an_object():
    with pytest.raises(InvalidTypeError, match="^problem: expected an object"):
        load_problem([1, 2])


def test_check_problem_collects_every_mistake():
    text = (EXAMPLES / "broken.json").read_text()
    errors = check_problem(text)
    assert errors == [
        "rubric: missing: the BinPack strategy needs a rubric (resource -> weight)",
        'nodes[0].resources.mem: expected a number, got "8GB"',
        'workloads[0].requirements.cpu: expected a number, got "lots"',
        'workloads[1]: missing field "name" (or "id")',
        'workloads[1].tolerations: expected an array, got "spiders"',
        'nodes[1].name: node name "node-1" is already used by nodes[0]']
    assert check_problem(tour()) == []


def test_running_workloads_are_checked_against_their_node():
    data = {"nodes": [{"id": "a", "resources": {"cpu": 1},
                       "workloads": [{"id": "w", "requirements": {"gpu": 1}}, {"id": "v"}]}],
            "workloads": [{"id": "v"}]}
    assert check_problem(data) == [
        'nodes[0].workloads[0].requirements.gpu: node "a" has no resource "gpu" '
        "(a running workload uses its node's resources)",
        'workloads[0].id: workload name "v" is already used by nodes[0].workloads[1]']


@pytest.mark.parametrize("text, message", [
    ("", "invalid JSON: Expecting value (line 1, column 1)"),
    ('{"nodes": [', "invalid JSON: Expecting value (line 1, column 12)"),
    ('{"a": NaN}', "invalid JSON: a: NaN is not JSON"),
    ('{"a": [1, {"b": -Infinity}]}', "invalid JSON: a[1].b: -Infinity is not JSON"),
    ('{"a": {"cpu": 1, "cpu": 5}}', 'invalid JSON: a.cpu: duplicate key "cpu"'),
    ('{"nodes": [], "workloads": [], "nodes": []}',
     'invalid JSON: nodes: duplicate key "nodes"'),
    ('[{"x y": {"k": 1}}, {"x y": {"k": 1, "k": 1}}]',
     'invalid JSON: [1]["x y"].k: duplicate key "k"'),
    ('{"' + "k" * 5000 + '": 1, "' + "k" * 5000 + '": 2}',
     'invalid JSON: ["' + "k" * 60 + '"... (5000 characters)]: duplicate key "' + "k" * 60
     + '"... (5000 characters) (each key may appear once)'),
    # (numbers Python or a decimal cannot read at all: named where they are)
    # (the quantities' range is said where a quantity stands, not elsewhere)
    ("1" * 5000, "invalid JSON: the document: " + "1" * 60 + "... (5000 characters) is a "
     "number too long or too large to read (no field here takes one)"),
    ("[1e999999999999999999999]", "invalid JSON: [0]: 1e999999999999999999999 is a number "
     "too long or too large to read"),
    ('{"nodes": [], "workloads": [], "partial": ' + "1" * 5000 + "}",
     "invalid JSON: partial: " + "1" * 60 + "... (5000 characters) is a number too long"),
    ('{"workloads": [{"name": "w", "requirements": {"cpu": 1e-99999999999999999999}}]}',
     "invalid JSON: workloads[0].requirements.cpu: 1e-99999999999999999999 is out of range"),
    ('{"nodes": [{"name": "n", "resources": {"cpu": ' + "1" * 5000 + "}}]}",
     "invalid JSON: nodes[0].resources.cpu: " + "1" * 60 + "... (5000 characters) is out "
     "of range (magnitudes from 1e-300 to 1e300, at most 300 decimal places)"),
    ('{"templates": [{"resources": {}, "cost": 1e999999999999999999999}]}',
     "invalid JSON: templates[0].cost: 1e999999999999999999999 is out of range"),
    ('{"rubric": {"cpu": 1e999999999999999999999}}',
     "invalid JSON: rubric.cpu: 1e999999999999999999999 is out of range"),
    # (and broken as well: where it broke, as for any broken text)
    ('{"workloads": [' + "1" * 5000, "invalid JSON: Expecting ',' delimiter (line 1, "
     "column 5016)"),
    ("[" * 200000, "invalid JSON: nested too deeply"),
    (b"\xff\xfe", "not UTF-8 text"),
    # (a path hundreds of levels deep is cut in the middle: the message stays short)
    pytest.param('{"nodes": [], "x": ' + '{"a": ' * 900 + '{"b": 1, "b": 1}' + "}" * 901,
                 "invalid JSON: x" + ".a" * 59 + ".... (1803 characters) ..." + ".a" * 29
                 + '.b: duplicate key "b" (each key may appear once)', id="deep-path"),
])
def test_text_that_is_not_json_is_refused(text, message):
    with pytest.raises(InvalidInputError) as caught:
        load_problem(text)
    assert str(caught.value) == f"problem: {message}" or message in str(caught.value)
    assert len(check_problem(text)) == 1


def test_parse_json_keeps_decimals_and_reads_infinity_strings():
    data = parse_json('{"nodes": [{"name": "n", "resources": {"cpu": 0.1, "x": "-inf"}}],'
                      ' "workloads": []}')
    assert data["nodes"][0]["resources"]["cpu"] == Decimal("0.1")
    node = load_problem(data).nodes[0]
    assert node.resources["x"] == Decimal("-Infinity")


def test_quantities_at_the_edge_of_the_range():
    ok = {"nodes": [{"name": "n", "resources": {
        "a": Decimal(f"1e{MAX_EXPONENT}"), "b": Decimal(f"1e-{MAX_EXPONENT}"),
        "c": Decimal("0e-99999")}}], "workloads": []}
    assert load_problem(ok).nodes[0].resources["c"] == 0
    assert len(check_problem({"nodes": [{"name": "n", "resources": {
        "a": Decimal(f"1e{MAX_EXPONENT + 1}"), "b": Decimal(f"1e-{MAX_EXPONENT + 1}")}}],
        "workloads": []})) == 2
    # (the places of the value count, not those of its spelling: trailing
    # zeros past the last place were refused as out of range)
    written = load_problem('{"nodes": [{"name": "n", "resources": {"a": 1.0e-300, '
                           '"b": 1.000e-298, "c": 1.00000e-299}}], "workloads": []}')
    assert written.nodes[0].resources == {"a": Decimal("1e-300"), "b": Decimal("1e-298"),
                                          "c": Decimal("1e-299")}
    assert Node("n", {"a": Decimal("1.0E-300")}).resources["a"] == Decimal("1e-300")
    assert "is out of range" in check_problem(
        '{"nodes": [{"name": "n", "resources": {"a": 1.1e-300, "b": 1.01e-299}}], '
        '"workloads": []}')[0]


# ------------------------------------------------------------------ schema

def test_the_schema_is_valid_and_accepts_the_examples():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    for path in sorted(EXAMPLES.glob("*.json")):
        data = json.loads(path.read_text())
        if path.name == "broken.json":
            assert not VALIDATOR.is_valid(data)
            assert check_problem(data)
        else:
            VALIDATOR.validate(data)
            assert check_problem(data) == [], path


def test_the_schema_needs_a_rubric_for_binpack():
    data = tour("binpack")
    del data["rubric"]
    assert not VALIDATOR.is_valid(data)
    assert VALIDATOR.is_valid(tour("RoundRobin"))


names = st.sampled_from(["a", "b", "c", ""])
json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-10, 10),
                         st.sampled_from(["inf", "-inf", "Infinity", "lots", "1"]),
                         st.floats(-100, 100, allow_nan=False, allow_infinity=False))
quantities = st.dictionaries(st.sampled_from(["cpu", "mem", ""]), json_scalars, max_size=3)
items = st.fixed_dictionaries(
    {"name": st.one_of(names, st.integers())},
    optional={"id": names, "requirements": quantities, "resources": quantities,
              "tolerations": st.lists(names, max_size=2), "bogus": st.just(1)})
problems = st.fixed_dictionaries(
    {"nodes": st.lists(items, max_size=3), "workloads": st.lists(items, max_size=3)},
    optional={"strategy": st.sampled_from(["Prioritized", "binpack", "RoundRobin", "x"]),
              "rubric": quantities, "partial": st.one_of(st.booleans(), st.just("yes"))})


@settings(max_examples=150, deadline=None)
@given(problems)
def test_the_schema_and_the_reader_agree(data):
    """Whatever the schema refuses, the reader refuses; the reader refuses
    more only for what a schema cannot say (unique names, ranges)."""
    errors = check_problem(data)
    if not VALIDATOR.is_valid(data):
        assert errors
    elif errors:
        # (a float such as 1.6e-285 is above 1e-300 but has more than 300
        # decimal places: the range, which the schema's text states and its
        # rules cannot)
        assert all("already used by" in error or "is out of range" in error
                   or 'disagrees with "name"' in error for error in errors)
    try:
        problem = load_problem(data)
    except LighthouseException as error:
        assert str(error) == errors[0]
    else:
        assert errors == []
        solve(problem, partial=True)


@pytest.mark.parametrize("change, message, words", [
    (lambda data: data["workloads"].append({"name": "w1"}), 'already used by',
     "names are unique"),
    (lambda data: data["nodes"][0].update(id="elsewhere"), 'disagrees with "name"',
     'given both \\"name\\" and \\"id\\" gives the same text'),
    (lambda data: data["nodes"][0].update(workloads=[{"name": "r", "requirements": {"gpu": 1}}]),
     "has no resource", "a running workload only uses resources its node has"),
    (lambda data: data["workloads"][0]["requirements"].update(cpu=1e-301), "is out of range",
     "within 1e-300 to 1e300"),
])
def test_the_schema_names_every_rule_beyond_its_own(change, message, words):
    """A problem the schema accepts and the reader refuses breaks a rule
    that the schema's description states (a user checking a file with the
    schema learns of it there)."""
    data = {"nodes": [{"name": "n1", "resources": {"cpu": 4}}],
            "workloads": [{"name": "w1", "requirements": {"cpu": 1}}]}
    change(data)
    assert VALIDATOR.is_valid(data)
    errors = check_problem(data)
    assert len(errors) == 1 and message in errors[0], errors
    assert words in json.dumps(SCHEMA["description"])


def test_build_distributor_gives_the_strategy_class():
    data = tour("Prioritized")
    assert type(build_distributor(load_problem(data))) is PrioritizedDistributor


# --------------------------------------------- strict JSON, odd callers

def test_a_schema_key_is_accepted_and_ignored():
    data = dict(tour("Prioritized"), **{"$schema": "problem.schema.json"})
    assert load_problem(data) == load_problem(tour("Prioritized"))
    assert check_problem(json.dumps(data)) == []
    assert VALIDATOR.is_valid(data)


@pytest.mark.parametrize("text, path", [
    ('{"nodes": [{"name": "\\ud800", "resources": {}}], "workloads": []}', "nodes[0].name"),
    ('{"nodes": [{"name": "n", "resources": {"c\\udfffpu": 1}}], "workloads": []}',
     'nodes[0].resources["c\\udfffpu"]'),
    ('{"nodes": [], "workloads": [{"id": "w", "aversion_groups": ["\\udc00"]}]}',
     "workloads[0].aversion_groups[0]"),
    ('{"nodes": [], "workloads": [{"name": "w", "requirements": {"cpu": 1}}, '
     '{"name": "v", "requirements": {"g\\ud800pu": 1}}]}',
     'workloads[1].requirements["g\\ud800pu"]'),
])
def test_names_must_be_valid_unicode(text, path):
    with pytest.raises(InvalidInputError, match="lone surrogate") as caught:
        load_problem(text)
    assert str(caught.value).startswith(f"{path}: ")


def test_the_model_refuses_lone_surrogates_in_names():
    from pylighthouse import Node, Workload
    with pytest.raises(InvalidInputError, match="valid Unicode"):
        Node("n\udc80", {})
    with pytest.raises(InvalidInputError, match="valid Unicode"):
        Workload.from_dict({"name": "\ud83d", "requirements": {}})
    assert Node("nœud-☃", {}).name == "nœud-☃"


def test_parse_json_and_solve_refuse_the_wrong_types_with_the_library_errors():
    with pytest.raises(InvalidTypeError, match="problem: expected JSON text"):
        parse_json(None)
    with pytest.raises(InvalidTypeError, match="expected a Problem"):
        solve(tour("Prioritized"))
    # (partial="false" placed what fit, as "no" and 2 did: read by its truth)
    problem = load_problem(tour("Prioritized"))
    for flag in ("false", "no", 2, []):
        with pytest.raises(InvalidTypeError, match="partial: expected True or False"):
            solve(problem, partial=flag)
    assert solve(problem, partial=1).partial is True
    assert solve(problem, partial=0).partial is False


def test_a_json_string_is_not_decoded_twice():
    text = json.dumps(json.dumps(tour("Prioritized")))
    assert parse_json(text) == json.dumps(tour("Prioritized"))
    with pytest.raises(InvalidTypeError, match="expected an object"):
        load_problem(parse_json(text), parsed=True)
    errors = check_problem(parse_json(text), parsed=True)
    assert len(errors) == 1
    assert errors[0].startswith('problem: expected an object (problem), got "{')


def test_the_schema_id_is_a_uri_of_the_project():
    from urllib.parse import urlsplit
    parts = urlsplit(SCHEMA["$id"])
    assert parts.scheme == "https" and "." in parts.netloc and not parts.netloc.endswith(
        ".invalid")
    assert "djhaskin987/pylighthouse" in parts.path
    assert parts.path.endswith("/pylighthouse/schemas/problem.schema.json")


# ------------------------------------- the quick path against the reader

def _reader_and_quick(document):
    from pylighthouse.problem import _plain_problem, _Reader
    reader = _Reader()
    expected = reader.problem(copy.deepcopy(document))
    return (expected if not reader.errors else None), _plain_problem(document)


@st.composite
def _plain_documents(draw):
    from instances import RUBRICS, batches, clusters
    document = {"nodes": draw(clusters()), "workloads": draw(batches("w")),
                "strategy": draw(st.sampled_from(["Prioritized", "roundrobin", "BinPack"]))}
    if document["strategy"] == "BinPack" or draw(st.booleans()):
        document["rubric"] = draw(RUBRICS)
    if draw(st.booleans()):
        document["partial"] = draw(st.booleans())
    if draw(st.booleans()):  # as the JSON format writes them
        text = json.dumps(document, default=float)
        document = parse_json(text.replace("-Infinity", '"-inf"').replace("Infinity", '"inf"'))
    return document


@settings(max_examples=200, deadline=None, derandomize=True)
@given(document=_plain_documents())
def test_the_quick_path_builds_what_the_reader_builds(document):
    expected, quick = _reader_and_quick(document)
    if quick is not None:
        assert expected is not None and quick == expected
    names = [item["name"] for item in document["nodes"]]
    if expected is not None and len(set(names)) == len(names):
        assert quick == expected  # nothing unusual here: the quick path takes it


def test_the_quick_path_declines_what_the_reader_refuses():
    from test_fuzz_interfaces import problems

    refused = []

    @settings(max_examples=300, deadline=None, derandomize=True)
    @given(text=problems())
    def check(text):
        try:
            document = parse_json(text.encode("utf-8", "surrogatepass"))
        except InvalidInputError:
            return
        expected, quick = _reader_and_quick(document)
        if quick is not None:
            assert expected is not None and quick == expected
        elif expected is None:
            refused.append(text)

    check()
    assert refused  # the hostile documents did reach the reader's refusals


def test_the_quick_path_takes_names_of_any_valid_unicode_and_no_lone_surrogate():
    good = {"nodes": [{"name": "n", "resources": {"gpü": 2, "cpu": 4}}],
            "workloads": [{"name": "w", "requirements": {"gpü": 1}},
                          {"name": "v", "requirements": {"gpü": 1}, "immunities": ["☃"]}]}
    expected, quick = _reader_and_quick(good)
    assert expected is not None and quick == expected
    for field, value in [("requirements", {"cpu": 1, "g\ud800": 1}),
                         ("immunities", ["\udfff"]), ("aversion_groups", ["a", "\ud83d"])]:
        bad = copy.deepcopy(good)
        bad["workloads"][1][field] = value
        assert _reader_and_quick(bad) == (None, None), field
