"""Hostile problems through the command line (main(argv)) and the WSGI app, in-process.

A valid problem is taken apart: one field (or several) gets a hostile value
(a wrong type, a huge or tiny number, a NaN or infinity spelling, unicode
digits, an empty or repeated name, deep nesting, a lone surrogate, NUL), or
the text itself is bent (a repeated key, a bare NaN literal, truncation).
Whatever comes in, the command must exit 0, 1 or 2 with, on 2, one line that
names the file and the JSON path of the mistake; the app must answer JSON
with 200, 400 or 413, a 400 naming the JSON path. Never a traceback, never a
500.

Examples: a fixed seed (derandomized) and ``PYLIGHTHOUSE_FUZZ_EXAMPLES``
examples per test (default 200: 800 hostile inputs across the suite in
CI); set it higher for a long local run.
"""
import contextlib
import copy
import io
import json
import os
import re
import tempfile
from decimal import Decimal

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pylighthouse.cli import main
from pylighthouse.service import Limits, make_app

EXAMPLES = int(os.environ.get("PYLIGHTHOUSE_FUZZ_EXAMPLES", "200"))
FUZZ = settings(max_examples=EXAMPLES, derandomize=True, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
APP = make_app(limits=Limits(max_body_bytes=256 * 1024, max_work=10_000, max_rubric=100,
                             max_response_bytes=256 * 1024))

#: What a message must start with: the JSON path of the item's field, or
#: the document as a whole.
PATH = re.compile(r'(problem|(nodes|workloads|strategy|rubric|partial)'
                  r'(\.[A-Za-z_][\w-]*|\[\d+\]|\["(?:[^"\\]|\\.)*"\])*): ')

HOSTILE = st.one_of(
    st.none(), st.booleans(), st.just([]), st.just({}), st.just([[[[1]]]]),
    st.sampled_from([0, -1, 10 ** 400, -10 ** 400, 2 ** 63, 5e-324, 1e308, -0.0, 1.5]),
    st.sampled_from([Decimal("1e-400"), Decimal("1e400"), Decimal("1e-301"),
                     Decimal("0.1"), Decimal("-1e300")]),
    st.sampled_from([float("nan"), float("inf"), float("-inf")]),
    st.sampled_from(["NaN", "nan", "Infinity", "-Infinity", "inf", "+inf", "-inf", "∞",
                     "1e999", "0x10", "1_000"]),
    st.sampled_from(["٣", "３", "²", "Ⅻ", "७"]),
    st.sampled_from(["", " ", "n", "a\x00b", "\x00", "\ud800", "x\udfffy", "é", "🚀",
                     "x" * 5000]),
    st.text(max_size=6),
    st.integers(),
    st.recursive(st.integers(0, 3), lambda inner: st.lists(inner, max_size=2), max_leaves=8),
)

NAMES = st.sampled_from(["n1", "n2", "w1", "w2", "", "\ud800", "a\x00", "٣", "dup"])
KEYS = st.one_of(st.sampled_from(["cpu", "mem", "", "\udc00", "c\x00", "$schema", "id",
                                  "name", "resources"]), st.text(max_size=4))


def base():
    return {"strategy": "Prioritized",
            "nodes": [{"name": "n1", "resources": {"cpu": 4, "mem": 8}},
                      {"name": "n2", "resources": {"cpu": 2, "gpu": 1, "spiders": "-inf"},
                       "workloads": [{"name": "r1", "requirements": {"cpu": 1}}]}],
            "workloads": [{"name": "w1", "requirements": {"cpu": 1, "mem": 2},
                           "aversion_groups": ["g"]},
                          {"name": "w2", "requirements": {"gpu": 1},
                           "tolerations": ["spiders"]}]}


#: Where a hostile value can go, as paths into base().
SPOTS = [("strategy",), ("rubric",), ("partial",), ("nodes",), ("workloads",),
         ("nodes", 0), ("nodes", 0, "name"), ("nodes", 0, "resources"),
         ("nodes", 0, "resources", "cpu"), ("nodes", 1, "resources", "spiders"),
         ("nodes", 1, "workloads"), ("nodes", 1, "workloads", 0, "requirements", "cpu"),
         ("workloads", 0), ("workloads", 0, "name"), ("workloads", 0, "requirements"),
         ("workloads", 0, "requirements", "cpu"), ("workloads", 0, "aversion_groups"),
         ("workloads", 0, "aversion_groups", 0), ("workloads", 1, "tolerations"),
         ("workloads", 1, "tolerations", 0), ("workloads", 1, "immunities")]


def put(document, spot, value):
    value = copy.deepcopy(value)  # st.just hands out one object: never put it twice
    target = document
    for step in spot[:-1]:
        target = target[step]
    if isinstance(target, list) and spot[-1] >= len(target):
        target.append(value)
    else:
        target[spot[-1]] = value


@st.composite
def problems(draw):
    """JSON text of a problem with one to three hostile changes."""
    document = base()
    if draw(st.booleans()):
        document["strategy"] = "BinPack"
        document["rubric"] = {"cpu": 1, "mem": 0.25}
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["value", "value", "name", "key", "duplicate-name"]))
        if kind == "value":
            try:
                put(document, draw(st.sampled_from(SPOTS)), draw(HOSTILE))
            except (KeyError, IndexError, TypeError):
                pass  # the spot was replaced by an earlier change
        elif kind == "name":
            section = draw(st.sampled_from(["nodes", "workloads"]))
            if isinstance(document.get(section), list) and document[section] \
                    and isinstance(document[section][0], dict):
                document[section][0]["name"] = draw(NAMES)
        elif kind == "key":
            spot = draw(st.sampled_from([("nodes", 0, "resources"),
                                         ("workloads", 0, "requirements"), ("rubric",)]))
            try:
                target = document
                for step in spot:
                    target = target[step]
                target[draw(KEYS)] = copy.deepcopy(draw(HOSTILE | st.integers(0, 3)))
            except (KeyError, IndexError, TypeError):
                pass
        else:
            document["workloads"].append({"name": draw(st.sampled_from(["w1", "n1", "r1"])),
                                          "requirements": {}}) \
                if isinstance(document.get("workloads"), list) else None
    text = json.dumps(document, default=str)
    bend = draw(st.sampled_from(["none", "none", "repeat", "nan", "truncate", "nest"]))
    if bend == "repeat":
        text = text.replace('"cpu": ', '"cpu": 1, "cpu": ', 1)
    elif bend == "nan":
        text = text.replace('"mem": 8', '"mem": NaN', 1)
    elif bend == "truncate":
        text = text[:draw(st.integers(0, len(text)))]
    elif bend == "nest":
        depth = draw(st.sampled_from([50, 5000, 200000]))
        text = "[" * depth + text + "]" * depth
    return text


def run(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv)
    return status, out.getvalue(), err.getvalue()


@FUZZ
@given(text=problems(), options=st.lists(st.sampled_from(
    [["--partial"], ["--all-or-nothing"], ["--format", "table"], ["--strategy", "binpack"],
     ["--rubric", '{"cpu": 1, "cpu": 2}'], ["--rubric", '{"cpu": NaN}'],
     ["--rubric", '{"cpu": 1}']]), max_size=2, unique_by=lambda option: option[0]))
def test_assign_exits_cleanly_and_names_the_path(text, options):
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "problem.json")
        with open(path, "w", encoding="utf-8", errors="surrogatepass") as handle:
            handle.write(text)
        flags = [flag for option in options for flag in option]
        if "--partial" in flags and "--all-or-nothing" in flags:
            return  # argparse's own refusal, tested elsewhere
        status, out, err = run(["assign", path, *flags])
    assert status in (0, 1, 2)
    assert "Traceback" not in err
    if status == 2:
        assert out == ""
        assert err.count("\n") == 1 and len(err.splitlines()) == 1, err
        source = "--rubric: " if err.startswith("pylighthouse: --rubric") else f"{path}: "
        message = err[len("pylighthouse: "):]
        assert message.startswith(source), err
        message = message[len(source):]
        assert message.startswith(("invalid JSON", "not UTF-8")) or PATH.match(message), err
    else:
        assert err == ""
        if "table" not in flags:
            json.loads(out)


@FUZZ
@given(text=problems())
def test_validate_lists_each_mistake_with_its_path(text):
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "problem.json")
        with open(path, "w", encoding="utf-8", errors="surrogatepass") as handle:
            handle.write(text)
        status, out, err = run(["validate", path])
    assert status in (0, 2)
    assert "Traceback" not in err
    if status == 0:
        assert out.startswith(f"{path}: valid (") and err == ""
        return
    lines = err.rstrip("\n").split("\n")  # not splitlines: a message is one line of \n
    if len(lines) == 1:  # the text is not JSON: one message
        assert re.match(rf"pylighthouse: {re.escape(path)}: (invalid JSON|not UTF-8)",
                        lines[0]), err
        return
    assert lines[-1].startswith(f"{path}: ") and lines[-1].endswith(("error", "errors"))
    for line in lines[:-1]:
        prefix = f"pylighthouse: {path}: " if line.startswith("pylighthouse: ") \
            else f"{path}: "
        message = line[len(prefix):]
        assert message.startswith(("invalid JSON", "not UTF-8")) or PATH.match(message), line


def call(body, method="POST", path="/assign-workloads", **environ):
    env = {"REQUEST_METHOD": method, "PATH_INFO": path, "wsgi.input": io.BytesIO(body),
           "CONTENT_LENGTH": str(len(body)), "wsgi.errors": io.StringIO()}
    env.update(environ)
    started = {}
    raw = b"".join(APP(env, lambda status, headers: started.update(status=status,
                                                                   headers=dict(headers))))
    return int(started["status"].split()[0]), started["headers"], raw, env["wsgi.errors"]


@FUZZ
@given(text=problems())
def test_the_app_answers_json_4xx_naming_the_path(text):
    status, headers, raw, errors = call(text.encode("utf-8", "surrogatepass"))
    assert status in (200, 400, 413), raw
    assert headers["Content-Type"] == "application/json"
    assert int(headers["Content-Length"]) == len(raw)
    answer = json.loads(raw)
    assert errors.getvalue() == ""
    if status == 400:
        error = answer["error"]
        assert error.startswith("problem: invalid JSON") or error.startswith(
            "problem: not UTF-8") or PATH.match(error), error
    elif status == 200:
        assert set(answer) <= {"successful", "assignments", "unplaced"}


@FUZZ
@given(length=st.one_of(st.text(max_size=8), st.sampled_from(
    ["+5", " 5", "5 ", "1_0", "٣", "0x5", "-1", "99999999999999999999999", "5, 5"])),
    method=st.sampled_from(["POST", "GET", "HEAD", "PUT", "OPTIONS", "", "post"]),
    path=st.sampled_from(["/assign-workloads", "/health", "/openapi.json", "/", "",
                          "/\x00", "/\udc00"]),
    body=st.binary(max_size=64))
def test_the_app_answers_any_request_line_and_length_in_json(length, method, path, body):
    status, headers, raw, errors = call(body, method, path, CONTENT_LENGTH=length)
    assert status in (200, 400, 404, 405, 411, 413)
    assert headers["Content-Type"] == "application/json"
    if method == "HEAD":
        assert raw == b""
    else:
        answer = json.loads(raw)
        assert status == 200 or answer["error"]
    assert errors.getvalue() == ""
