"""BestFit's ranking of dominant shares (each quantity divided once)
against every workload's share computed on its own."""
from decimal import Decimal
from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

import pylighthouse as lighthouse
from pylighthouse.bestfit import dominant_share, share_ranks

KEYS = ("cpu", "mem", "disk", "gpu")


def exact_ranks(loads, scale):
    shares = [dominant_share(load, scale) for load in loads]
    return [sorted(set(shares)).index(share) for share in shares]


#: Quantities that make exact ties across resources (1/3 of 3 and 2/3 of 6),
#: near ties a float cannot tell apart, equal quantities written otherwise
#: (2 and 2.0) and extreme magnitudes.
QUANTITIES = st.one_of(
    st.integers(-3, 12).map(Decimal),
    st.decimals(min_value=0, max_value=100, places=2),
    st.sampled_from([Decimal("1"), Decimal("2"), Decimal("2.0"),
                     Decimal("1.0000000000000000000001"),
                     Decimal("0.9999999999999999999999"), Decimal("1E-299"),
                     Decimal("1E+299"), Decimal("0.333333333333333333333")]))
SCALES = st.dictionaries(st.sampled_from(KEYS), st.one_of(
    st.sampled_from([Decimal(3), Decimal(6), Decimal("3.0000000000000000001"),
                     Decimal("1E+300")]),
    st.decimals(min_value=Decimal("0.01"), max_value=1000, places=2)), min_size=1)


@settings(max_examples=300, deadline=None)
@given(scale=SCALES, loads=st.lists(st.dictionaries(st.sampled_from(KEYS), QUANTITIES),
                                    max_size=30))
def test_ranks_are_those_of_the_exact_shares(scale, loads):
    workloads = [lighthouse.Workload(f"w{at}", requirements)
                 for at, requirements in enumerate(loads)]
    fractions = {key: Fraction(value) for key, value in scale.items()}
    assert share_ranks(workloads, fractions) == exact_ranks(workloads, fractions)


def test_near_ties_are_settled_exactly():
    scale = {"cpu": Fraction(3), "mem": Fraction(6)}
    workloads = [lighthouse.Workload(name, requirements) for name, requirements in [
        ("a", {"cpu": Decimal("1.0000000000000000000001")}),  # 1/3 and a hair
        ("b", {"mem": Decimal(2)}),                            # 1/3 exactly
        ("c", {"cpu": Decimal(1)}),                            # 1/3 exactly
        ("d", {"cpu": Decimal("0.9999999999999999999999")}),  # 1/3 less a hair
        ("e", {"cpu": Decimal(-1)}),                           # below zero
        ("f", {"disk": Decimal(5)})]]                          # no scale: 0
    # e (-1/3) < f (0) < d < b = c < a
    assert share_ranks(workloads, scale) == exact_ranks(workloads, scale) == [
        4, 3, 3, 2, 0, 1]


def test_shares_beyond_the_floats_range_are_ranked_exactly():
    scale = {"cpu": Fraction(Decimal("1E-300")), "mem": Fraction(Decimal("1E-299"))}
    workloads = [lighthouse.Workload(name, requirements) for name, requirements in [
        ("a", {"cpu": Decimal("2E+298")}),   # 2e598
        ("b", {"mem": Decimal("1E+299")}),   # 1e598
        ("c", {"cpu": Decimal("-1E+300")}),  # -1e600
        ("d", {"mem": Decimal("2E+299")}),   # 2e598, as a
        ("e", {"cpu": Decimal(1)})]]         # 1e300
    assert share_ranks(workloads, scale) == exact_ranks(workloads, scale) == [3, 2, 0, 3, 1]
