"""The HTTP endpoint, over real HTTP on a loopback port, and the WSGI app in-process."""
import http.client
import io
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pylighthouse
from pylighthouse import service
from pylighthouse.service import Limits, make_app, make_wsgi_server

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS = ROOT / "pylighthouse" / "schemas"
OPENAPI = json.loads((SCHEMAS / "openapi.json").read_text())
LIMIT = 64 * 1024
TIMEOUT = 10


# ------------------------------------------------------------ the server

@pytest.fixture(scope="module")
def server():
    """The real threading wsgiref server on a free loopback port; stopped at the end."""
    httpd = make_wsgi_server("127.0.0.1", 0, max_body_bytes=LIMIT, quiet=True)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        yield httpd.server_port
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(TIMEOUT)


def request(port, method, path, body=None, headers=None):
    """Send one request; return (status, headers, parsed JSON body).

    Every body is checked against the OpenAPI document on the way.
    """
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    try:
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        raw = response.read()
        answer = (response.status, dict(response.getheaders()), json.loads(raw))
    finally:
        connection.close()
    assert answer[1]["Content-Type"] == "application/json"
    conforms(method, path, answer[0], answer[2])
    return answer


def conforms(method, path, status, body):
    """Check a response body against the schema the OpenAPI document gives it."""
    operation = OPENAPI["paths"].get(path, {}).get(method.lower())
    if operation is None or str(status) not in operation["responses"]:
        schema_name = "Error"  # 404, and 405 on paths without that method
        assert status in (404, 405), (method, path, status)
    else:
        response = operation["responses"][str(status)]
        if "$ref" in response:
            response = OPENAPI["components"]["responses"][response["$ref"].split("/")[-1]]
        schema = response["content"]["application/json"]["schema"]
        if "$ref" not in schema:
            jsonschema.Draft202012Validator(schema).validate(body)
            return
        schema_name = schema["$ref"].split("/")[-1]
    jsonschema.Draft202012Validator(OPENAPI["components"]["schemas"][schema_name]).validate(body)


def post(port, body, **headers):
    return request(port, "POST", "/assign-workloads", body, headers)


# ------------------------------------------------------- the HTTP tour

BASIC_NODES = [{"id": "node-1", "resources": {"cpu": 1.0, "mem": 8.0}},
               {"id": "secondnode", "resources": {"cpu": 5.0, "mem": 4.0}}]


def tour(strategy):
    """SPEC.md's tour data, as the HTTP tour sends it (the example file)."""
    body = json.loads((ROOT / "examples" / "tour-prioritized.json").read_text())
    body["strategy"] = strategy
    if strategy == "BinPack":
        body["rubric"] = {"cpu": 1, "mem": 0.5, "disk": 0.025}
    return body


def test_basic_scheduling(server):
    body = {"nodes": BASIC_NODES,
            "workloads": [{"id": "firstreq", "requirements": {"cpu": 5.0}}]}
    assert post(server, body)[::2] == (200, {"successful": True,
                                             "assignments": {"firstreq": "secondnode"}})


def test_failure_to_schedule(server):
    body = {"nodes": BASIC_NODES,
            "workloads": [{"id": "firstreq", "requirements": {"cpu": 6.0}}]}
    assert post(server, body)[::2] == (200, {"successful": False, "assignments": {}})


def test_the_tour_with_curls_form_encoded_content_type(server):
    # curl --data-binary sends application/x-www-form-urlencoded: still JSON to us.
    status, _, answer = post(server, json.dumps(tour("BinPack")),
                             **{"Content-Type": "application/x-www-form-urlencoded"})
    assert status == 200
    assert answer == {"successful": True, "assignments": {
        "req-1": "node-2", "req-2": "node-3", "req-3": "node-1"}}


@pytest.mark.parametrize("strategy", ["Prioritized", "RoundRobin"])
def test_tour_strategies_that_cannot_place_req_3(server, strategy):
    # SPEC.md: the tour's printed Prioritized/RoundRobin results do not follow from its
    # data; req-3 fits nowhere once req-1 and req-2 are placed, so all-or-nothing fails.
    assert post(server, tour(strategy))[::2] == (200, {"successful": False, "assignments": {}})
    body = dict(tour(strategy), partial=True)
    status, _, answer = post(server, body)
    assert status == 200
    assert answer["successful"] is False
    assert answer["assignments"] == {"req-1": "node-1", "req-2": "node-2"}
    assert list(answer["unplaced"]) == ["req-3"]
    assert answer["unplaced"]["req-3"].startswith("0/3 nodes fit: ")


def test_tags_shortcomings_wards_tolerations_and_aversion(server):
    body = json.loads((ROOT / "examples" / "tags-and-wards.json").read_text())
    status, _, answer = post(server, body)
    assert status == 200
    assert answer["assignments"]["crawler"] == "edge-1"      # tolerates the ward
    assert answer["assignments"]["fly-swatter"] == "old-1"   # offsets the shortcoming
    assert answer["assignments"]["trainer"] == "gpu-box"     # the tag
    assert answer["assignments"]["web-2"] != answer["assignments"]["web-1"]  # aversion
    assert answer["unplaced"] == {"licensed-3": "0/5 nodes fit: 4 missing resource licence, "
                                                "1 insufficient licence (needs 1, most left 0)"}


def test_infinities_are_strings_and_the_literal_is_refused(server):
    ward = {"nodes": [{"id": "node1", "resources": {"spiders": "-inf", "cpu": 2}}],
            "workloads": [{"id": "w", "requirements": {"cpu": 1}, "tolerations": ["spiders"]}]}
    assert post(server, ward)[2] == {"successful": True, "assignments": {"w": "node1"}}
    text = json.dumps(ward).replace('"-inf"', "-inf")
    status, _, answer = post(server, text)
    assert status == 400 and "invalid JSON" in answer["error"]


def test_health(server):
    assert request(server, "GET", "/health")[::2] == (
        200, {"status": "ok", "version": pylighthouse.__version__})


# ---------------------------------------------------------------- errors

@pytest.mark.parametrize("body, error", [
    ("{not json", "problem: invalid JSON: Expecting property name enclosed in double quotes"),
    ("", "problem: invalid JSON: Expecting value"),
    ('{"nodes": [], "workloads": [{"id": "w", "requirements": {"cpu": "lots"}}]}',
     'workloads[0].requirements.cpu: expected a number, got "lots"'),
    ('{"nodes": [{"id": "a"}, {"id": "a"}], "workloads": []}',
     'nodes[1].id: node name "a" is already used by nodes[0]'),
    ('{"nodes": [], "workloads": [{"id": "w"}, {"id": "w"}]}',
     'workloads[1].id: workload name "w" is already used by workloads[0]'),
    ('{"nodes": [], "workloads": [], "strategy": "BinPack"}', "rubric: missing"),
    ('{"nodes": [], "workloads": [], "strategy": "Best"}', 'strategy: unknown strategy "Best"'),
    ("[]", "problem: expected an object (problem), got an array"),
    (b"\xff", "problem: not UTF-8 text"),
])
def test_bad_requests_get_400_with_the_path(server, body, error):
    status, _, answer = post(server, body)
    assert status == 400
    assert answer["error"].startswith(error)


def test_a_body_over_the_limit_gets_413_before_it_is_sent(server):
    connection = http.client.HTTPConnection("127.0.0.1", server, timeout=TIMEOUT)
    try:
        connection.putrequest("POST", "/assign-workloads")
        connection.putheader("Content-Length", str(LIMIT + 1))
        connection.endheaders()  # no body: the server must answer without reading one
        response = connection.getresponse()
        assert response.status == 413
        answer = json.loads(response.read())
    finally:
        connection.close()
    conforms("POST", "/assign-workloads", 413, answer)
    assert str(LIMIT) in answer["error"]


def test_a_body_at_the_limit_is_read(server):
    body = json.dumps({"nodes": [], "workloads": []})
    body += " " * (LIMIT - len(body))
    assert post(server, body)[0] == 200


def test_a_bad_content_length_gets_400(server):
    connection = http.client.HTTPConnection("127.0.0.1", server, timeout=TIMEOUT)
    try:
        connection.putrequest("POST", "/assign-workloads")
        connection.putheader("Content-Length", "-5")
        connection.endheaders()
        response = connection.getresponse()
        assert response.status == 400
        assert "Content-Length" in json.loads(response.read())["error"]
    finally:
        connection.close()


@pytest.mark.parametrize("method, path, allow", [
    ("GET", "/assign-workloads", "POST"), ("PUT", "/assign-workloads", "POST"),
    ("DELETE", "/assign-workloads", "POST"), ("POST", "/health", "GET, HEAD"),
    ("PUT", "/openapi.json", "GET, HEAD")])
def test_other_methods_get_405_with_allow(server, method, path, allow):
    status, headers, answer = request(server, method, path, "{}" if method != "GET" else None)
    assert status == 405
    assert headers["Allow"] == allow
    assert "error" in answer


@pytest.mark.parametrize("path", ["/", "/assign-workload", "/assign-workloads/x", "/nope"])
def test_unknown_paths_get_404(server, path):
    status, _, answer = request(server, "POST", path, "{}")
    assert status == 404 and "error" in answer


# ------------------------------------------------------------------ load

def test_concurrent_clients_each_get_their_own_answer(server):
    """8 client threads, 400 requests, every answer checked, bounded in time."""
    def one(index):
        kind = index % 4
        if kind == 0:
            return post(server, tour("BinPack")), (200, {"successful": True, "assignments": {
                "req-1": "node-2", "req-2": "node-3", "req-3": "node-1"}})
        if kind == 1:
            return post(server, tour("Prioritized")), (200, {"successful": False,
                                                             "assignments": {}})
        if kind == 2:
            name = f"w-{index}"
            body = {"nodes": BASIC_NODES, "workloads": [{"id": name,
                                                         "requirements": {"cpu": 1}}]}
            return post(server, body), (200, {"successful": True,
                                              "assignments": {name: "node-1"}})
        return post(server, "{"), (400, None)

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(one, range(400), timeout=120))
    assert len(results) == 400
    for (status, _, answer), (expected_status, expected) in results:
        assert status == expected_status
        if expected is None:
            assert answer["error"].startswith("problem: invalid JSON")
        else:
            assert answer == expected


# ------------------------------------------------------- hypothesis

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(["inf", "-inf", "nodes", "workloads", "BinPack"]),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(
        st.sampled_from(["nodes", "workloads", "strategy", "rubric", "partial", "id",
                         "name", "resources", "requirements", "tolerations",
                         "aversion_groups", "cpu", ""]) | st.text(max_size=4),
        children, max_size=4),
    max_leaves=20)
shaped = st.fixed_dictionaries({
    "nodes": st.lists(st.fixed_dictionaries(
        {"id": st.sampled_from(["a", "b", "c"])},
        optional={"resources": st.dictionaries(st.sampled_from(["cpu", "mem"]), json_values,
                                               max_size=2)}), max_size=3),
    "workloads": st.lists(st.fixed_dictionaries(
        {"id": st.sampled_from(["x", "y", "z"])},
        optional={"requirements": st.dictionaries(st.sampled_from(["cpu", "mem"]),
                                                  json_values, max_size=2),
                  "aversion_groups": json_values}), max_size=3)},
    optional={"strategy": json_values, "partial": json_values, "rubric": json_values})


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(json_values, shaped))
def test_arbitrary_json_gets_only_200_or_400(server, value):
    status, _, answer = post(server, json.dumps(value))
    assert status in (200, 400)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=200))
def test_arbitrary_bytes_get_only_200_400_or_413(server, body):
    status, _, answer = post(server, body)
    assert status in (200, 400, 413)


# ------------------------------------------------------------ in-process

def call(app, method, path, body=b"", **environ):
    """Call a WSGI app directly; return (status, headers, JSON, bytes it read)."""
    stream = io.BytesIO(body)
    env = {"REQUEST_METHOD": method, "PATH_INFO": path, "wsgi.input": stream,
           "CONTENT_LENGTH": str(len(body))}
    env.update(environ)
    started = {}

    def start_response(status, headers):
        started.update(status=status, headers=dict(headers))

    raw = b"".join(app(env, start_response))
    return int(started["status"].split()[0]), started["headers"], json.loads(raw), stream.tell()


def test_413_reads_nothing_of_the_body():
    app = make_app(max_body_bytes=10)
    status, _, answer, read = call(app, "POST", "/assign-workloads", b"x" * 11)
    assert (status, read) == (413, 0)
    assert answer == {"error": "the body is 11 bytes; the limit is 10 "
                               "(max_body_bytes)"}


def test_limits_messages_count_in_words_a_person_would_write():
    app = make_app(limits=Limits(max_work=0, max_rubric=0))
    one = {"nodes": [{"name": "n", "resources": {"cpu": 1}}],
           "workloads": [{"name": "w", "requirements": {"cpu": 1}}]}
    status, _, answer, _ = call(app, "POST", "/assign-workloads", json.dumps(one).encode())
    assert (status, answer["error"]) == (
        413, "1 node x 1 workload is 1 unit of work; the limit is 0 (max_work; split the problem)")
    rubric = dict(one, strategy="BinPack", rubric={"cpu": 1})
    status, _, answer, _ = call(app, "POST", "/assign-workloads", json.dumps(rubric).encode())
    assert (status, answer["error"]) == (413, "rubric: 1 entry; the limit is 0 (max_rubric)")


def test_the_body_is_read_no_further_than_content_length():
    body = json.dumps({"nodes": [], "workloads": []}).encode()
    status, _, answer, read = call(make_app(), "POST", "/assign-workloads",
                                   body + b"garbage", CONTENT_LENGTH=str(len(body)))
    assert (status, read) == (200, len(body))


def test_a_content_length_of_many_digits_is_a_size_not_a_mistake():
    # (19 digits and more were "not a byte count", leading zeros too)
    body = b'{"nodes": [], "workloads": []}'
    status, _, answer, read = call(make_app(), "POST", "/assign-workloads", body,
                                   CONTENT_LENGTH="9" * 5000)
    assert (status, read) == (413, 0)
    assert answer == {"error": "the body is a 5000-digit number of bytes; the limit is "
                               "1048576 (max_body_bytes)"}
    status, _, _, read = call(make_app(), "POST", "/assign-workloads", body,
                              CONTENT_LENGTH="0" * 50 + str(len(body)))
    assert (status, read) == (200, len(body))
    assert Limits.from_environ({"PYLIGHTHOUSE_MAX_WORK": "0007"}).max_work == 7
    with pytest.raises(ValueError, match="PYLIGHTHOUSE_MAX_WORK: a number of 30 digits; "
                       "at most 18"):
        Limits.from_environ({"PYLIGHTHOUSE_MAX_WORK": "9" * 30})


def test_limits_given_in_code_or_as_options_are_held_to_the_variables_length(capsys):
    # (--max-rubric of 23 digits was taken; the same in the variable refused)
    from pylighthouse.cli import main
    assert Limits(max_rubric=10 ** 18 - 1).max_rubric == 10 ** 18 - 1
    with pytest.raises(ValueError, match="max_rubric: a number of 19 digits; at most 18"):
        Limits(max_rubric=10 ** 18)
    with pytest.raises(ValueError, match="max_body_bytes: a number of 23 digits; at most 18"):
        make_app(10 ** 22)
    assert main(["serve", "--max-rubric", "9" * 23]) == 2
    assert "serve: --max-rubric: a number of 23 digits; at most 18" in capsys.readouterr().err


@pytest.mark.parametrize("sent", [" {}", "{} ", "\t{}\t "])
def test_spaces_around_a_content_length_are_not_part_of_it(sent):
    body = json.dumps({"nodes": [{"name": "n", "resources": {"cpu": 1}}],
                       "workloads": [{"name": "w", "requirements": {"cpu": 1}}]}).encode()
    status, _, answer, _ = call(make_app(), "POST", "/assign-workloads", body,
                                CONTENT_LENGTH=sent.format(len(body)))
    assert (status, answer["assignments"]) == (200, {"w": "n"})


def test_a_content_length_of_other_digits_is_shown_as_sent():
    # (WSGI hands header bytes over decoded as Latin-1: UTF-8 full-width
    # digits used to show as mojibake)
    sent = "\uff12\uff17".encode("utf-8").decode("latin-1")
    status, _, answer, read = call(make_app(), "POST", "/assign-workloads", b"{}",
                                   CONTENT_LENGTH=sent)
    assert (status, read) == (400, 0)
    assert answer == {"error": "Content-Length: not a byte count (ASCII digits only): "
                               "'\uff12\uff17'"}
    status, _, answer, _ = call(make_app(), "POST", "/assign-workloads", b"{}",
                                CONTENT_LENGTH="\xff2")  # (not UTF-8: as it came)
    assert answer["error"].endswith("'\xff2'")


def test_missing_content_length_gets_411_unless_the_body_is_chunked_and_terminated():
    body = b'{"nodes": [], "workloads": []}'
    status, _, _, read = call(make_app(), "POST", "/assign-workloads", body, CONTENT_LENGTH="")
    assert (status, read) == (411, 0)
    # gunicorn marks every input terminated: without chunking, still 411.
    status, _, _, read = call(make_app(), "POST", "/assign-workloads", body, CONTENT_LENGTH="",
                              **{"wsgi.input_terminated": True})
    assert (status, read) == (411, 0)
    chunked = {"wsgi.input_terminated": True, "HTTP_TRANSFER_ENCODING": "chunked"}
    status, _, _, _ = call(make_app(), "POST", "/assign-workloads", body, CONTENT_LENGTH="",
                           **chunked)
    assert status == 200
    status, _, _, read = call(make_app(max_body_bytes=5), "POST", "/assign-workloads", body,
                              CONTENT_LENGTH="", **chunked)
    assert (status, read) == (413, 6)


def test_an_internal_error_still_answers_json(monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(service, "solve", broken)
    status, _, answer, _ = call(make_app(), "POST", "/assign-workloads",
                                b'{"nodes": [], "workloads": []}')
    assert (status, answer) == (500, {"error": "internal error"})


def test_make_app_checks_its_limit():
    with pytest.raises(ValueError):
        make_app(max_body_bytes=-1)


def test_the_module_level_app_serves_health():
    assert call(service.app, "GET", "/health")[0] == 200


# -------------------------------------------------------------- OpenAPI

def test_the_openapi_document_is_valid():
    validator = pytest.importorskip("openapi_spec_validator")
    validator.validate(OPENAPI, base_uri=(SCHEMAS / "openapi.json").as_uri())
    assert OPENAPI["info"]["version"] == pylighthouse.__version__
    request_schema = OPENAPI["paths"]["/assign-workloads"]["post"]["requestBody"]
    assert request_schema["content"]["application/json"]["schema"]["$ref"] \
        == "problem.schema.json"
