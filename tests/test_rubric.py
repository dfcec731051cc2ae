"""Rubric scoring against its literal definition, whichever side is smaller."""
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from pylighthouse.rubric import Rubric

KEYS = st.sampled_from([f"r{i}" for i in range(12)])
WEIGHTS = st.sampled_from([Decimal(0), Decimal(1), Decimal("0.5"), Decimal(-2), Decimal("1e-3")])
QUANTITIES = st.sampled_from([Decimal(0), Decimal(3), Decimal("-1.5"), Decimal("Infinity"),
                              Decimal("-Infinity"), Decimal("0.1")])


def literal(weights, quantities):
    """SPEC.md: sum of weight x quantity over rubric keys present in the map;
    a zero weight adds 0 even against an infinity; both infinities: undefined."""
    terms = [weights[key] * quantities[key] for key in weights
             if key in quantities and weights[key] != 0]
    if Decimal("Infinity") in terms and Decimal("-Infinity") in terms:
        return "undefined"
    return sum(terms, Decimal(0))


@settings(max_examples=300, deadline=None)
@given(weights=st.dictionaries(KEYS, WEIGHTS, max_size=12),
       quantities=st.dictionaries(KEYS, QUANTITIES, max_size=12))
def test_score_is_the_literal_sum_from_either_side(weights, quantities):
    score = Rubric(weights).score(quantities)
    expected = literal(weights, quantities)
    if expected == "undefined":
        assert score.is_nan()
    else:
        assert score == expected


def test_resources_no_map_has_do_not_change_the_score():
    wide = Rubric({**{f"unused-{i}": 1 for i in range(20_000)}, "cpu": 2})
    assert wide.score({"cpu": Decimal(3), "mem": Decimal(8)}) == 6
    assert wide.relevant({"cpu": Decimal(3), "mem": Decimal(8)}) == (("cpu", Decimal(3)),)
    assert Rubric({"cpu": 2}).relevant({"cpu": Decimal(3), "mem": Decimal(8)}) == \
        (("cpu", Decimal(3)),)


def test_a_rubric_made_from_a_rubric_takes_its_checked_weights_as_they_are(monkeypatch):
    import pylighthouse.rubric as module
    from pylighthouse import BestFitDistributor, BinPackDistributor
    rubric = Rubric({**{f"unused-{i}": 1 for i in range(2_000)}, "cpu": 2, "mem": 0})
    checked = []
    monkeypatch.setattr(module, "to_quantities", lambda *args: checked.append(args))
    copies = [Rubric(rubric), BinPackDistributor(rubric).rubric,
              BestFitDistributor([], rubric)._rubric]
    assert checked == []  # (a problem's rubric is read once, not again per distributor)
    for copy in copies:
        assert copy == rubric and copy.weights is rubric.weights
    monkeypatch.undo()
    for copy in copies:
        assert copy.score({"cpu": Decimal(3), "mem": Decimal(8)}) == 6
    assert "mem" not in Rubric(rubric).weights  # (zero weights stayed out)


@settings(max_examples=200, deadline=None)
@given(weights=st.dictionaries(st.sampled_from(["cpu", "mem", "disk"]),
                               st.decimals(-10, 10, places=2), min_size=1),
       before=st.dictionaries(st.sampled_from(["cpu", "mem", "disk", "gpu"]),
                              st.decimals(-1000, 1000, places=3), min_size=1),
       change=st.dictionaries(st.sampled_from(["cpu", "mem", "disk", "gpu"]),
                              st.decimals(-50, 50, places=4)))
def test_a_score_moved_by_a_change_is_the_score_of_the_new_quantities(weights, before, change):
    rubric = Rubric(weights)
    after = dict(before)
    old = {}
    for key, delta in change.items():
        if key in after:
            old[key] = after[key]
            after[key] = after[key] + delta
    assert rubric.moved(rubric.score(before), after, old) == rubric.score(after)
