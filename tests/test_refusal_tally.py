"""RefusalTally: the line of an explanation in which no node fits, with a few
nodes left out and a few reasons given, against the line of an Explanation
made of every reason in order (Explanation.summary counts them one by one)."""
from decimal import Decimal

from hypothesis import event, given, settings
from hypothesis import strategies as st

from pylighthouse.explain import Explanation, RefusalTally
from pylighthouse.fit import CORDONED, INSUFFICIENT, MISSING, NOT_TOLERATED, Reason

#: Quantities left, some equal but written differently: 2, 2.0 and 2.00
#: read the same in a line, but a decimal no float holds is written as it
#: came, trailing zeros too, so the line shows which node came first.
LONG, LONGER = "0.1234567890123456789", "0.12345678901234567890"
LEFTS = [Decimal(text) for text in ("0", "0.0", "1", "2", "2.0", "2.00", "3.5", "-1",
                                    LONG, LONGER)]

REASONS = st.one_of(
    st.builds(Reason, st.just(INSUFFICIENT), st.sampled_from(["cpu", "mem"]),
              st.just(Decimal("4")), st.sampled_from(LEFTS)),
    st.builds(Reason, st.just(MISSING), st.sampled_from(["gpu", "disk"])),
    st.builds(Reason, st.just(NOT_TOLERATED), st.just("ward"), st.just(Decimal(0)),
              st.just(Decimal(-1))),
    st.just(Reason(CORDONED, "")))


def plain_line(reasons):
    """The line of an explanation of ``reasons`` (name -> reason, in order)."""
    return str(Explanation(workload="w", total=len(reasons), fits=(), averse=(),
                           reasons=reasons, choice=None))


@settings(max_examples=500, deadline=None)
@given(st.data(), st.integers(1, 30), st.booleans())
def test_a_tally_gives_the_line_of_every_reason_in_order(data, count, keys):
    names = [f"n{at:02d}" for at in range(count)]
    # Each node's place: its position (Prioritized, RoundRobin), or an
    # order key of its own (BinPack, BestFit: a score, then the name).
    places = {name: (at if not keys else (Decimal(data.draw(st.integers(0, 5))), name))
              for at, name in enumerate(names)}
    base = {name: data.draw(REASONS) for name in names}
    changed = data.draw(st.lists(st.sampled_from(names), unique=True, max_size=count))
    now = {name: data.draw(REASONS) for name in changed}
    # A node changed by the trial may move in the order (BinPack, BestFit).
    moved = dict(places)
    if keys:
        for name in changed:
            moved[name] = (Decimal(data.draw(st.integers(0, 5))), name)
    # Nodes read before (some of them changed now), in any order, and
    # those still unread, which are read now (the changed ones aside).
    read = data.draw(st.permutations(names))[:data.draw(st.integers(0, count))]
    tally = RefusalTally(names)
    for name in read:
        tally.add(name, base[name], places[name])
    for name in [name for name in tally.unread if name not in now]:
        tally.add(name, base[name], places[name])
    start = 0 if keys else data.draw(st.integers(0, count - 1))
    order = sorted(names, key=moved.__getitem__)
    order = order[start:] + order[:start]
    expected = plain_line({name: now.get(name, base[name]) for name in order})
    pivot = places[order[0]] if start else None
    line = tally.line(count, [(now[name], moved[name]) for name in changed],
                      [name for name in changed if name in tally], pivot)
    event(f"changed: {min(len(changed), 3)}, rotated: {bool(start)}")
    assert line == expected


def test_a_node_left_out_takes_its_quantity_out_of_the_most_left():
    tally = RefusalTally(["a", "b", "c"])
    for name, left, place in (("a", "2", 2), ("b", "3", 0), ("c", "1", 1)):
        tally.add(name, Reason(INSUFFICIENT, "cpu", Decimal(4), Decimal(left)), place)
    assert tally.line(3, []) == "0/3 nodes fit: 3 insufficient cpu (needs 4, most left 3)"
    # b changed (a drain gave it work): 1 left now, so a's 2 is the most.
    given = [(Reason(INSUFFICIENT, "cpu", Decimal(4), Decimal("0.5")), 0)]
    assert tally.line(3, given, ["b"]) == \
        "0/3 nodes fit: 3 insufficient cpu (needs 4, most left 2)"


def test_of_equal_quantities_left_the_line_shows_the_first_in_order():
    tally = RefusalTally(["a", "b", "c"])
    for name, left, place in (("a", LONG, 2), ("b", LONGER, 0), ("c", LONG, 1)):
        tally.add(name, Reason(INSUFFICIENT, "cpu", Decimal(4), Decimal(left)), place)
    assert tally.line(3, []).endswith(f"most left {LONGER})")
    # From the node at place 1 on (RoundRobin's cursor): c, a, then b.
    assert tally.line(3, [], pivot=1).endswith(f"most left {LONG})")
    # b changed, now at place 3 with as much: c comes first of the three.
    given = [(Reason(INSUFFICIENT, "cpu", Decimal(4), Decimal(LONGER)), 3)]
    assert tally.line(3, given, ["b"]).endswith(f"most left {LONG})")


def test_equal_counts_rank_the_group_met_first_first():
    tally = RefusalTally(["a", "b"])
    tally.add("a", Reason(MISSING, "gpu"), 1)
    tally.add("b", Reason(CORDONED, ""), 0)
    assert tally.line(2, []) == "0/2 nodes fit: 1 cordoned, 1 missing resource gpu"
    # b changed: now missing gpu as well, at place 2
    assert tally.line(2, [(Reason(MISSING, "gpu"), 2)], ["b"]) == \
        "0/2 nodes fit: 2 missing resource gpu"
