"""The benchmark suite still runs: its generator and a tiny run (no timings asserted)."""
import os
import sys
import signal
import time
from typing import Any, Dict
from unittest import mock

import pytest
from collections import Counter

BENCHMARKS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                          "benchmarks")
sys.path.insert(0, BENCHMARKS)

import problems  # noqa: E402
import run  # noqa: E402


def test_the_generator_is_seeded_and_mixes_every_feature():
    nodes, workloads = problems.problem(700, 900)
    assert (nodes, workloads) == problems.problem(700, 900)
    assert len({node["name"] for node in nodes}) == 700
    resources = [node["resources"] for node in nodes]
    assert 60 < sum(problems.TAG in r for r in resources) < 140
    assert 100 < sum(problems.SEMAPHORE in r for r in resources) < 180
    assert 30 < sum(problems.WARD in r for r in resources) < 80
    assert 60 < sum(problems.TAG in w["requirements"] for w in workloads) < 150
    assert 5 < sum("immunities" in w for w in workloads) < 40
    groups = {g for w in workloads for g in w.get("aversion_groups", ())}
    assert 30 < len(groups) <= problems.GROUPS
    assert any(w["requirements"]["cpu"] == 0.5 for w in workloads)
    over, _ = problems.problem(700, 900, over=True)
    assert len(over) < len(nodes)


def test_a_tiny_run_reports_every_figure_and_identical_decisions(capsys):
    rows = run.main(["--sizes", "40x300", "over:40x300", "--repeat", "1"])
    assert len(rows) == 8
    strategies = {"Prioritized", "RoundRobin", "BinPack", "BestFit"}
    assert {row["strategy"] for row in rows} == strategies
    for row in rows:
        assert row["identical"] is True
        for figure in ("per_s", "bytes_per_workload", "release_per_s", "replace_per_s",
                       "drain_workloads_per_s", "remove_workloads_per_s", "ratio"):
            assert row[figure] >= 0
    out = capsys.readouterr().out
    assert "BinPack" in out and "BestFit" in out


def test_growth_compares_each_strategy_with_its_smallest_plain_size():
    rows = [{"strategy": "BinPack", "size": "10x100", "nodes": 10, "per_s": 300.0},
            {"strategy": "BinPack", "size": "100x1000", "nodes": 100, "per_s": 200.0},
            {"strategy": "BinPack", "size": "over:100x1000", "nodes": 50, "per_s": 50.0},
            {"strategy": "RoundRobin", "size": "10x100", "nodes": 10, "per_s": 100.0}]
    assert run.growth(rows) == ["BinPack: cost per workload against 10x100: 100x1000 1.50x"]


def test_growth_is_measured_against_the_thousand_node_size_when_there_is_one():
    rows = [{"strategy": "Prioritized", "size": f"{n}x{10 * n}", "nodes": n, "per_s": s}
            for n, s in ((200, 500.0), (1000, 400.0), (10000, 250.0))]
    assert run.growth(rows) == [
        "Prioritized: cost per workload against 1000x10000: 10000x100000 1.60x"]


# (the timer may fire inside a garbage collection's callback, where Python
# reports the exception as unraisable and goes on: run.bounded expects that)
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_reference_run_past_its_budget_is_stopped_and_reported_as_bounds(capsys):
    assert run.bounded(0.05, time.sleep, 5) == (0.05, None)
    seconds, value = run.bounded(None, sorted, [2, 1])
    assert value == [1, 2] and seconds >= 0
    rows = run.main(["--sizes", "40x300", "--repeat", "1", "--strategies", "BinPack",
                     "--no-memory", "--reference-seconds", "0.001"])
    assert rows[0]["reference_stopped"] is True and "identical" not in rows[0]
    assert rows[0]["ratio"] == 0.001 / rows[0]["seconds"]
    out = capsys.readouterr().out
    assert ">" in out and "<" in out


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_budget_that_runs_out_inside_a_finalizer_still_counts_as_out_of_time():
    # Python ignores an exception raised in a finalizer (as during a garbage
    # collection): the function goes on and returns, but too late.
    pause = [5.0]

    class Slow:
        def __del__(self):
            time.sleep(pause[0])  # (cut short by the alarm)

    def work():
        Slow()
        return "done"

    # (a budget past the collection that runs before the function)
    assert run.bounded(0.3, work) == (0.3, None)
    pause[0] = 0.0
    assert run.bounded(5, work)[1] == "done"


def test_a_timer_that_fires_as_the_function_returns_counts_as_out_of_time():
    # The alarm lands after the function returned, just before the timer is
    # disarmed: bounded reports the budget, it does not raise.
    real = signal.setitimer
    fired = []

    def late(which, seconds, *rest):
        left = real(which, seconds, *rest)
        if not seconds and not fired:  # as if it had just run out
            fired.append(True)
            os.kill(os.getpid(), signal.SIGALRM)
        return left

    with mock.patch.object(run.signal, "setitimer", side_effect=late):
        assert run.bounded(30, sorted, [2, 1]) == (30, None)
    assert signal.getsignal(signal.SIGALRM) is not None
    assert real(signal.ITIMER_REAL, 0) == (0.0, 0.0)


def test_growth_alternates_two_sizes_and_reports_each_strategy(capsys):
    assert run.main(["--growth", "20x100", "60x300", "--repeat", "2",
                     "--strategies", "RoundRobin", "BinPack"]) == []
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines] == ["RoundRobin", "BinPack"]
    assert all("at 20x100" in line and "at 60x300" in line and "medians of 2" in line
               for line in lines)


def test_every_size_has_the_same_mix():
    """Types, flavours and features are dealt in exact shares, so a small
    problem is a smaller copy of a large one (growth compares like with like)."""
    for count in (100, 1000):
        nodes, workloads = problems.problem(count, 10 * count)
        kinds = Counter(node["name"].split("-")[0] for node in nodes)
        assert kinds == {"small": count * 4 // 10, "medium": count * 3 // 10,
                         "highmem": count * 2 // 10, "large": count // 10}
        resources = [node["resources"] for node in nodes]
        assert sum(problems.TAG in r for r in resources) == round(count / 7)
        assert sum(problems.SEMAPHORE in r for r in resources) == round(count / 5)
        assert sum(problems.WARD in r for r in resources) == round(count / 13)
        flavours = Counter(tuple(sorted((key, value) for key, value in w["requirements"].items()
                                        if key in ("cpu", "mem", "disk")))
                           for w in workloads)
        assert len(flavours) == 36 and max(flavours.values()) - min(flavours.values()) <= 1
        assert sum(problems.SEMAPHORE in w["requirements"] for w in workloads) == \
            round(10 * count / 15)
        assert sum("immunities" in w for w in workloads) == round(10 * count / 50)
        groups = Counter(g for w in workloads for g in w.get("aversion_groups", ()))
        assert sum(groups.values()) == round(10 * count / 4)
        assert max(groups.values()) - min(groups.values()) <= 1


def test_the_matrix_mixes_are_seeded_and_have_their_features():
    import mixes
    for mix in mixes.MIXES:
        assert mixes.problem(mix, 50, 200) == mixes.problem(mix, 50, 200)
    nodes, workloads = mixes.problem("all", 400, 2000)
    assert len({tuple(sorted(n["resources"].items())) for n in nodes}) > 300
    assert 20 < sum("gpu" in n["resources"] for n in nodes) < 70
    assert all(f"host-{n['name']}" in n["resources"] for n in nodes)
    assert 100 < sum(any(k.startswith("host-") for k in w["requirements"])
                     for w in workloads) < 300
    plain_nodes, plain_loads = mixes.strip((nodes, workloads))
    assert all(set(n["resources"]) <= {"cpu", "mem", "disk"} for n in plain_nodes)
    assert all(set(w) == {"name", "requirements"} for w in plain_loads)
    nowhere = mixes.nowhere(nodes, 40)
    assert len({tuple(w["requirements"].items()) for w in nowhere}) == 40
    # ``kinds``: each kind on about 3 nodes in 10; most workloads ask for
    # one to three kinds, so few nodes bear all a workload asks for
    nodes, workloads = mixes.problem("kinds", 400, 2000)
    for kind in mixes.KINDS:
        assert 70 < sum(kind in n["resources"] for n in nodes) < 170, kind
    asked = [len(set(w["requirements"]) & set(mixes.KINDS)) for w in workloads]
    assert set(asked) == {0, 1, 2, 3} and 1300 < sum(map(bool, asked)) < 1700
    import pylighthouse as lighthouse
    distributor = lighthouse.PrioritizedDistributor.from_list(nodes)
    assert set(distributor.attempt_assign_loads(nowhere).values()) == {None}
    # ``devices``: three kinds of 200 a node; a workload asking for kinds
    # asks for one or two that some node has together
    nodes, workloads = mixes.problem("devices", 400, 2000)
    assert all(sum(key.startswith("device-") for key in n["resources"]) == 3 for n in nodes)
    held = [frozenset(key for key in n["resources"] if key.startswith("device-"))
            for n in nodes]
    asked = [frozenset(key for key in w["requirements"] if key.startswith("device-"))
             for w in workloads]
    assert {len(kinds) for kinds in asked} == {0, 1, 2}
    assert 1300 < sum(map(bool, asked)) < 1700
    assert all(any(kinds <= having for having in held) for kinds in asked)
    # ``labels``: a zone and an instance type on every node, ssd on about
    # half; half the workloads ask for labels, each borne by some node
    nodes, workloads = mixes.problem("labels", 400, 2000)
    labels = set(mixes.ZONES) | set(mixes.INSTANCE_TYPES) | {"ssd", "spot"}
    for node in nodes:
        borne = {key for key, value in node["resources"].items() if value == 0}
        assert borne <= labels
        assert len(borne & set(mixes.ZONES)) == len(borne & set(mixes.INSTANCE_TYPES)) == 1
    assert 150 < sum("ssd" in n["resources"] for n in nodes) < 250
    asked = [set(w["requirements"]) & labels for w in workloads]
    assert 850 < sum(map(bool, asked)) < 1150
    assert sum(len(keys) == 2 for keys in asked) > 100
    assert all(any(keys <= set(n["resources"]) for n in nodes) for keys in asked)
    assert all(set(n["resources"]) <= {"cpu", "mem", "disk"}
               for n in mixes.strip((nodes, workloads))[0])


def test_a_tiny_matrix_run_reports_every_figure(capsys, monkeypatch):
    import matrix
    monkeypatch.setattr(matrix, "SHORT_RUNS", 1)  # (one run a figure: quick)
    rows = matrix.main(["--sizes", "30x200", "40x300", "--mixes", "all", "groups4000",
                        "--strategies", "RoundRobin", "BinPack"])
    assert len(rows) == 8
    for row in rows:
        for figure in ("per_s", "placed", "vs_plain", "build_us_per_node", "nowhere"):
            assert row[figure] >= 0
        # (the answer to the mix made over-subscribed: some workloads left out)
        assert row["answer"] > 0 and 0 <= row["answer_placed"] < 1
        assert "grouped" in row
    assert all("rare" in row and "pinned" in row for row in rows if row["mix"] == "all")
    out = capsys.readouterr().out
    assert "all RoundRobin: cost per workload 40x300 over 30x200" in out


def test_the_matrix_keeps_every_run_of_a_figure(capsys, monkeypatch):
    import matrix
    monkeypatch.setattr(matrix, "SHORT", 100)  # (30x200 counts as a long size here)
    (row,) = matrix.main(["--sizes", "30x200", "--mixes", "types", "--strategies",
                          "Prioritized", "--repeat", "3"])
    assert len(row["runs_per_s"]) == len(row["plain_runs_per_s"]) == 3
    assert row["per_s"] == pytest.approx(sorted(row["runs_per_s"])[1])
    assert row["plain_per_s"] == pytest.approx(sorted(row["plain_runs_per_s"])[1])


def test_the_matrix_runs_short_sizes_five_times_at_least(capsys):
    import matrix
    (row,) = matrix.main(["--sizes", "30x200", "--mixes", "types", "--strategies",
                          "Prioritized"])
    assert len(row["runs_per_s"]) == len(row["plain_runs_per_s"]) == 5
    assert row["per_s"] == pytest.approx(sorted(row["runs_per_s"])[2])
    assert [matrix.runs_for(size, repeat) for size, repeat in (
        ("1000x10000", 1), ("1000x20000", 7), ("2000x20001", 1), ("10000x100000", 3))] == [
        5, 7, 1, 3]


def test_a_tiny_small_calls_run_times_every_strategy_and_call_size(capsys):
    import calls
    rows = calls.main(["--sizes", "30x200", "--calls", "1", "7", "--mixes", "types", "all",
                       "--placed", "20"])
    assert [(row["mix"], row["call"], row["strategy"]) for row in rows] == [
        (mix, call, strategy) for mix in ("types", "all") for call in (1, 7)
        for strategy in ("Prioritized", "RoundRobin", "BinPack", "BestFit")]
    assert all(row["us_per_workload"] > 0 for row in rows)
    assert "| BestFit |" in capsys.readouterr().out


def test_the_matrix_runs_every_strategy_by_default(capsys, monkeypatch):
    import matrix
    monkeypatch.setattr(matrix, "SHORT_RUNS", 1)  # (one run a figure: quick)
    rows = matrix.main(["--sizes", "30x200", "--mixes", "types"])
    assert [row["strategy"] for row in rows] == ["Prioritized", "RoundRobin", "BinPack",
                                                 "BestFit"]
    assert all(row["per_s"] > 0 for row in rows)


def test_oversubscribed_asks_three_times_as_much_and_keeps_tags():
    import mixes
    nodes, workloads = mixes.problem("pinned", 20, 200)
    heavy_nodes, heavy = mixes.oversubscribed((nodes, workloads))
    assert heavy_nodes is nodes
    assert [load["name"] for load in heavy] == [load["name"] for load in workloads]
    for load, made in zip(workloads, heavy):
        assert made["requirements"] == {key: value * 3
                                        for key, value in load["requirements"].items()}
        assert made.get("aversion_groups") == load.get("aversion_groups")
    assert any(value == 0 for load in heavy for value in load["requirements"].values())


def test_a_tiny_answers_run_times_every_strategy_and_mode(capsys):
    import answers
    rows = answers.main(["--nodes", "20", "--workloads", "200", "--repeat", "1"])
    assert answers.STRATEGIES == ("Prioritized", "RoundRobin", "BinPack", "BestFit")
    assert [(row["strategy"], row["partial"]) for row in rows] == [
        (strategy, partial) for strategy in answers.STRATEGIES for partial in (True, False)]
    for row in rows:
        for figure in ("place", "answer", "place_e2e", "answer_e2e", "ratio", "ratio_e2e"):
            assert row[figure] > 0
    # Over-subscribed: some workloads find no node, and are explained.
    assert all(0 < row["unplaced"] < 200 for row in rows if row["partial"])
    out = capsys.readouterr().out
    assert "all-or-nothing" in out and "20,000 more" in out


def test_answers_writes_a_problem_file_the_command_line_solves(tmp_path, capsys):
    import answers
    import json
    from pylighthouse.cli import main as command_line
    from pylighthouse.problem import load_problem, solve
    path = tmp_path / "big.json"
    assert answers.main(["--nodes", "20", "--workloads", "200", "--write", str(path),
                         "--strategy", "BinPack"]) == []
    capsys.readouterr()
    data = json.loads(path.read_text())
    assert data["strategy"] == "BinPack"
    assert any(node["resources"].get(problems.WARD) == "-inf" for node in data["nodes"])
    nodes, loads = problems.problem(40, 200, over=True)
    expected = solve(load_problem({"nodes": nodes, "workloads": loads, "strategy": "BinPack",
                                   "rubric": problems.RUBRIC}), True).to_dict()
    assert command_line(["assign", str(path)]) == 1  # (some workloads found no node)
    assert json.loads(capsys.readouterr().out) == expected


def test_the_matrix_measures_fits_nowhere_against_successes_alone(capsys, monkeypatch):
    """On an over-subscribed run, a success's cost is that of placing the
    placed workloads alone (the run's average would count the cheap
    misses); on a run that placed everything, the run's own average."""
    import matrix
    monkeypatch.setattr(matrix, "SHORT_RUNS", 1)  # (one run a figure, as counted here)
    timed = []
    real = matrix.run_once

    def recording(strategy, problem):
        timed.append(len(problem[1]))
        return real(strategy, problem)

    monkeypatch.setattr(matrix, "run_once", recording)
    over, types = matrix.main(["--sizes", "30x300", "--mixes", "over", "types",
                               "--strategies", "Prioritized"])
    # over: the run, the stripped run, then the placed workloads alone (and
    # the placement of the over-subscribed problem the answer is timed against)
    assert 0 < over["placed"] < 1
    assert timed[:2] == [300, 300] and timed[2] == round(300 * over["placed"])
    assert timed[3] == 300
    assert over["nowhere"] / over["nowhere_vs_average"] == pytest.approx(
        over["seconds"] / 300 / (over["success_us"] / 1e6))
    # types: everything placed, no run of the placed workloads alone
    assert types["placed"] == 1 and timed[4:] == [300, 300, 300]
    assert types["success_us"] == pytest.approx(1e6 * types["seconds"] / 300)
    assert types["nowhere"] == pytest.approx(types["nowhere_vs_average"])


def test_the_matrix_runs_each_cells_sizes_back_to_back(capsys, monkeypatch):
    """Growth compares a cell's sizes measured minutes apart at most; the
    rows still come out size by size."""
    import matrix
    monkeypatch.setattr(matrix, "SHORT_RUNS", 1)  # (one run a figure, as counted here)
    calls = []

    def fake(mix, strategy, size, repeat):
        calls.append((mix, strategy, size))
        return {"mix": mix, "strategy": strategy, "size": size,
                "nodes": int(size.split("x")[0]), "per_s": 1.0, "placed": 1.0,
                "vs_plain": 1.0, "build_us_per_node": 1.0, "nowhere": 1.0}

    monkeypatch.setattr(matrix, "bench", fake)
    rows = matrix.main(["--sizes", "10x100", "20x200", "--mixes", "types", "over",
                        "--strategies", "BinPack", "BestFit", "--large-mixes", "over"])
    assert calls == [("types", "BinPack", "10x100"), ("types", "BestFit", "10x100"),
                     ("over", "BinPack", "10x100"), ("over", "BinPack", "20x200"),
                     ("over", "BestFit", "10x100"), ("over", "BestFit", "20x200")]
    assert [(row["size"], row["mix"], row["strategy"]) for row in rows] == [
        ("10x100", "types", "BinPack"), ("10x100", "types", "BestFit"),
        ("10x100", "over", "BinPack"), ("10x100", "over", "BestFit"),
        ("20x200", "over", "BinPack"), ("20x200", "over", "BestFit")]


def test_a_tiny_misses_run_counts_every_search_of_every_strategy(capsys):
    import misses
    rows = misses.main(["--sizes", "30x300", "--mixes", "over", "types"])
    assert [(row["mix"], row["strategy"]) for row in rows] == [
        (mix, strategy) for mix in ("over", "types")
        for strategy in ("Prioritized", "RoundRobin", "BinPack", "BestFit")]
    for row in rows:
        # (every workload of the call is searched for at least once)
        assert row["found"] + row["missed"] >= 300
        assert (row["ratio"] is None) == (not row["found"] or not row["missed"])
        assert (row["to_placement"] is None) == (row["ratio"] is None)
        # (every workload found is put on its node once at least)
        assert (row["place_us"] > 0) == (row["found"] > 0)
        if row["ratio"] is not None:
            assert row["to_placement"] < row["ratio"]
    # (an over-subscribed cluster leaves workloads out, whatever the strategy)
    assert all(row["missed"] and row["missed_us"] > 0 for row in rows if row["mix"] == "over")
    assert "| BestFit |" in capsys.readouterr().out


def test_a_tiny_groups_run_measures_grouped_and_plain_probes(capsys):
    import groups
    rows = groups.main(["--sizes", "30x300", "--groups", "2", "5", "--same",
                        "--strategies", "BinPack", "Prioritized"])
    assert [(row["groups"], row["strategy"]) for row in rows] == [
        (2, "BinPack"), (2, "Prioritized"), (5, "BinPack"), (5, "Prioritized")]
    for row in rows:
        assert row["same"] is True
        assert row["plain_us"] > 0 and row["grouped_us"] > 0
        assert row["ratio"] == pytest.approx(row["grouped_us"] / row["plain_us"])
    assert "members ask alike" in capsys.readouterr().out


def test_the_groups_script_puts_a_quarter_in_its_groups_and_members_ask_alike():
    import random
    import groups
    import mixes
    nodes, workloads = groups._grouped(mixes.problem("groups4000", 20, 2000), 3,
                                       random.Random(1))
    named = [spec["aversion_groups"] for spec in workloads if "aversion_groups" in spec]
    assert 400 < len(named) < 600
    assert {group for each in named for group in each} == {"group-0", "group-1", "group-2"}
    rng = random.Random(2)
    probes = [groups._probe("grouped", 10, True, index, rng) for index in range(200)]
    asked: Dict[str, Any] = {}
    for probe in probes:
        (group,) = probe["aversion_groups"]
        assert asked.setdefault(group, probe["requirements"]) == probe["requirements"]
    assert len(set(map(str, asked.values()))) > 1
    plain = groups._probe("plain", 10, True, 0, rng)
    assert "aversion_groups" not in plain


def test_random_mixes_are_seeded_and_decide_as_the_plain_scan(capsys):
    import hunt
    assert hunt.problem(3, 30, 200) == hunt.problem(3, 30, 200)
    assert hunt.parameters(3) == hunt.parameters(3)
    assert len({str(hunt.parameters(seed)) for seed in range(20)}) == 20
    rows = hunt.main(["--nodes", "25", "--seeds", "0", "8", "--check"])
    assert len(rows) == 8 * 4
    assert all(row["identical"] for row in rows)
    assert all(row["per_s"] > 0 and row["vs_plain"] > 0 and 0 <= row["placed"] <= 1
               for row in rows)
    out = capsys.readouterr().out
    assert " NO " not in out and out.count(" yes ") == 32 and "worst:" in out


def test_random_lifecycles_answer_as_the_plain_scan_and_a_difference_is_seen(capsys):
    import hunt
    from pylighthouse.distributors import Distributor
    rows = hunt.main(["--nodes", "20", "--seeds", "0", "3", "--lifecycle"])
    assert len(rows) == 3 * 4
    assert all(row["identical"] and row["differs_at"] is None for row in rows)
    assert all(row["steps"] > hunt.LIFE_STEPS // 2 for row in rows)
    out = capsys.readouterr().out
    assert "12 of 12 lifecycles identical" in out and " NO " not in out
    # A wrong answer of the indexed side (here: no node ever found) is seen
    # at the first step that places, as is a crash.
    with mock.patch.object(Distributor, "_indexed_choice", return_value=None):
        (row,) = hunt.lifecycles([0], 20, ["Prioritized"])
    assert not row["identical"] and row["differs_at"]["action"] == "place"
    with mock.patch.object(Distributor, "_indexed_choice", side_effect=KeyError("x")):
        (row,) = hunt.lifecycles([0], 20, ["Prioritized"])
    assert not row["identical"] and "KeyError" in row["differs_at"]["answers"]


def test_a_lifecycle_of_hundreds_of_nodes_reaches_the_columns_and_answers_as_the_plain_scan():
    """At the library's own settings, on 600 nodes: a resource on about 40
    of them searched by a sparse column, frontiers, and group columns (a
    few aversion groups with many members); every answer and state the
    plain scan's. (The random lifecycles of ``test_index`` run on clusters
    too small for the first two.)"""
    import hunt
    from pylighthouse.index import blocks, derived, groups
    mix = dict(hunt.parameters(0), base="types", kinds=6, kind_share=0.07, kind_ask=0.3,
               kind_per=1, tags=5, tag_share=0.3, tag_ask=0.1, host=False, pin=0.0, groups=3,
               group_share=0.5, decimals=False, scale=1, ward=0.05, immune=0.02, zero=False,
               ratio=None)
    from test_index_corners import wraps_counting
    made = lambda *args: True  # noqa: E731
    with mock.patch.object(blocks.NodeClass, "_add_sparse",
                           wraps_counting(blocks.NodeClass._add_sparse, made)) as sparse, \
            mock.patch.object(derived.DerivedColumns, "frontier",
                              wraps_counting(derived.DerivedColumns.frontier, made)) as frontier, \
            mock.patch.object(groups.GroupColumns, "group_column",
                              wraps_counting(groups.GroupColumns.group_column, made)) as group:
        rows = [hunt.lifecycle(7, 600, strategy, steps=50, drawn=mix, per_node=8)
                for strategy in ("Prioritized", "BinPack")]
    assert all(row["identical"] and row["steps"] > 40 for row in rows), rows
    assert sparse.seen and frontier.seen and group.seen


def test_the_planning_speed_case_plans_every_pending_workload(capsys):
    import planning_speed
    rows = planning_speed.main(["--pending", "150", "--strategies", "Prioritized", "BestFit"])
    assert [row["strategy"] for row in rows] == ["Prioritized", "BestFit"]
    assert all(row["unplaceable"] == 0 and row["new_nodes"] for row in rows)
    assert "Prioritized | 50 | 150 |" in capsys.readouterr().out


def test_the_scale_down_speed_case_finds_nodes_to_give_back_and_others_to_keep(capsys):
    import planning_speed
    rows = planning_speed.main(["--down", "40", "--strategies", "RoundRobin", "BestFit"])
    assert [(row["strategy"], row["nodes"]) for row in rows] == [
        ("RoundRobin", 40), ("BestFit", 40)]
    assert all(0 < row["removable"] < 40 and row["placed"] == 120 for row in rows)
    assert "BestFit | 40 | 120 |" in capsys.readouterr().out


def test_the_full_scale_down_speed_case_keeps_every_node(capsys):
    import planning_speed
    rows = planning_speed.main(["--down", "40", "--full", "--strategies", "Prioritized"])
    assert [(row["strategy"], row["removable"], row["moves"]) for row in rows] == [
        ("Prioritized", 0, 0)]
    assert rows[0]["placed"] > 240  # (eight offered a node, most placed: the nodes are full)
    assert "Prioritized | 40 |" in capsys.readouterr().out


#: Stands in for valgrind: runs the command after valgrind's options and
#: says it counted 1000 instructions, 1600 for a run that places.
FAKE_VALGRIND = """#!/bin/sh
while [ "${1#--}" != "$1" ]; do shift; done
"$@" || exit 1
case " $* " in
  *" --place "*) echo "==1== Collected : 1600" >&2 ;;
  *) echo "==1== Collected : 1000" >&2 ;;
esac
"""


@pytest.mark.skipif(os.name != "posix", reason="the stand-in for valgrind is a shell script")
def test_the_instructions_script_counts_building_and_placing_per_checkout(
        tmp_path, monkeypatch, capsys):
    import instructions
    fake = tmp_path / "valgrind"
    fake.write_text(FAKE_VALGRIND)
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    root = os.path.dirname(BENCHMARKS)
    counts = instructions.main(["--mix", "kinds", "--strategy", "BestFit", "--size", "12x40",
                                root, root])
    # (each checkout's placing run less its run making the problem only)
    assert counts == [600, 600]
    out = capsys.readouterr().out
    assert out.splitlines() == ["kinds, BestFit, 12x40: building and placing",
                                f"{root}: 600 instructions, 1.0000",
                                f"{root}: 600 instructions, 1.0000"]
    line = instructions.command(root, "types", "BinPack", "5x9", True, "out")
    assert line[line.index("valgrind"):line.index("valgrind") + 3] == [
        "valgrind", "--tool=callgrind", "--callgrind-out-file=out"]
    assert line[-9:] == ["--cell", root, "--mix", "types", "--strategy", "BinPack",
                         "--size", "5x9", "--place"]
    # A run that fails (a mix that does not exist) is an error, not a count.
    with pytest.raises(RuntimeError, match="failed"):
        instructions.main(["--mix", "nonesuch", root])


def test_the_instructions_script_reads_valgrinds_count_and_compares_with_the_first():
    import instructions
    assert instructions.collected("==7== Events    : Ir\n==7== Collected : 4526852628\n") \
        == 4526852628
    with pytest.raises(RuntimeError, match="no count"):
        instructions.collected("==7== error\n")
    assert instructions.report(["a", "b"], [2000, 1500]) == [
        "a: 2,000 instructions, 1.0000", "b: 1,500 instructions, 0.7500"]
    assert instructions.size_of("2000x20000") == (2000, 20000)
