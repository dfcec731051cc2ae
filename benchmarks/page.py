"""The performance page's tables, written from the rows ``matrix.py --json`` wrote.

Run from the repository root::

    python benchmarks/page.py docs/_static/matrix.json

prints the page's two tables (workloads a second with features cost and
growth; answer over placement), each cell Prioritized / RoundRobin /
BinPack / BestFit, a line per mix the rows measured. The test suite
checks that the tables on ``docs/performance.rst`` are the ones these
rows give, so the page cannot drift from the rows published beside it.
"""
import json
import os
import sys
from typing import Any, Dict, List, Sequence, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mixes import STRATEGIES  # noqa: E402
#: The page's order of the mixes: the base, then a feature at a time, then
#: all, then the mixes added later (a table shows those its rows have).
MIXES = ("types", "shapes", "scarce", "groups40", "groups4000", "over", "decimals",
         "hostname", "pinned", "kinds", "devices", "all", "labels")
Rows = Sequence[Dict[str, Any]]


def _sizes(rows: Rows) -> List[str]:
    return sorted({row["size"] for row in rows}, key=lambda size: int(size.split("x")[0]))


def _cells(rows: Rows) -> Dict[Tuple[str, str, str], Dict[str, Any]]:
    return {(row["mix"], row["size"], row["strategy"]): row for row in rows}


def _mixes(rows: Rows) -> List[str]:
    """The mixes ``rows`` measured, in the page's order."""
    measured = {row["mix"] for row in rows}
    return [mix for mix in MIXES if mix in measured]


def _grid(head: Sequence[str], body: Sequence[Sequence[str]]) -> str:
    """An RST simple table, each column as wide as its widest entry."""
    widths = [max(len(line[at]) for line in [head, *body]) for at in range(len(head))]
    rule = "  ".join("=" * width for width in widths)

    def line(entries: Sequence[str]) -> str:
        return "  ".join(entry.ljust(width) for entry, width in zip(entries, widths)).rstrip()

    return "\n".join([rule, line(head), rule, *(line(entries) for entries in body), rule])


def _four(values: Sequence[float], form: str) -> str:
    return " / ".join(format(value, form) for value in values)


def speeds(rows: Rows) -> str:
    """Workloads a second per mix and size (thousands), the features cost
    at the largest size, and the growth from the smallest size to the
    largest (cost per workload over cost per workload)."""
    sizes, cells = _sizes(rows), _cells(rows)
    small, large = sizes[0], sizes[-1]
    head = ["mix", *(size.replace("x", " x ") for size in sizes),
            f"features cost at {large.split('x')[0]}",
            f"growth {int(small.split('x')[0]) // 1000}k to {int(large.split('x')[0]) // 1000}k"]
    body = []
    for mix in _mixes(rows):
        entries = [f"``{mix}``"]
        for size in sizes:
            entries.append(" / ".join(f"{cells[mix, size, name]['per_s'] / 1000:.0f}k"
                                      for name in STRATEGIES))
        entries.append(_four([cells[mix, large, name]["vs_plain"] for name in STRATEGIES], ".1f"))
        entries.append(_four([cells[mix, small, name]["per_s"] / cells[mix, large, name]["per_s"]
                              for name in STRATEGIES], ".1f"))
        body.append(entries)
    return _grid(head, body)


def answers(rows: Rows) -> str:
    """The answer (placing and explaining, end to end) over the placement,
    per mix and size."""
    sizes, cells = _sizes(rows), _cells(rows)
    head = ["mix", *(size.split("x")[0] for size in sizes)]
    body = [[f"``{mix}``", *(_four([cells[mix, size, name]["answer"] for name in STRATEGIES], ".1f")
                             for size in sizes)] for mix in _mixes(rows)]
    return _grid(head, body)


def main(argv: Sequence[str]) -> None:
    with open(argv[0]) as handle:
        rows = json.load(handle)
    print(speeds(rows))
    print()
    print(answers(rows))


if __name__ == "__main__":
    main(sys.argv[1:])
