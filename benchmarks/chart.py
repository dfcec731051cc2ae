"""Draw the performance page's chart (an SVG) from the rows ``matrix.py --json`` wrote.

Run from the repository root, with matplotlib installed (the ``bench``
extra, ``pip install ".[bench]"``; only this script needs it, the docs
build does not)::

    python benchmarks/matrix.py --json benchmarks/results/matrix.json
    python benchmarks/chart.py benchmarks/results/matrix.json docs/_static/matrix.svg

One panel per size: workloads per second for each mix (bars grouped by
strategy), the stripped problem's speed as a tick on each bar.
"""
import json
import sys
from typing import Any, Dict, List


def draw(rows: List[Dict[str, Any]], target: str) -> None:
    try:
        import matplotlib
    except ImportError:
        sys.exit("chart.py: matplotlib is not installed (pip install matplotlib, "
                 'or install pylighthouse with its bench extra: pip install ".[bench]")')
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "pylighthouse"  # the same file for the same rows
    sizes = sorted({row["size"] for row in rows}, key=lambda size: int(size.split("x")[0]))
    mixes = sorted({row["mix"] for row in rows})
    known = ["Prioritized", "RoundRobin", "BinPack", "BestFit"]
    strategies = [name for name in known if any(row["strategy"] == name for row in rows)]
    figure, axes = plt.subplots(len(sizes), 1, figsize=(9, 3.2 * len(sizes)), squeeze=False)
    width = 0.8 / len(strategies)
    for axis, size in zip(axes[:, 0], sizes):
        for at, strategy in enumerate(strategies):
            found = {row["mix"]: row for row in rows
                     if row["size"] == size and row["strategy"] == strategy}
            xs = [index + (at - (len(strategies) - 1) / 2) * width
                  for index, mix in enumerate(mixes) if mix in found]
            speeds = [found[mix]["per_s"] / 1000 for mix in mixes if mix in found]
            plain = [found[mix]["plain_per_s"] / 1000 for mix in mixes if mix in found]
            axis.bar(xs, speeds, width, label=strategy)
            axis.plot(xs, plain, "k_", markersize=8)
        axis.axhline(30, color="grey", linewidth=0.8, linestyle="--")
        axis.set_xticks(range(len(mixes)))
        axis.set_xticklabels(mixes, rotation=20)
        axis.set_ylabel("thousand workloads/s")
        axis.set_title(f"{size} (nodes x workloads); tick: the same problem without "
                       "features; dashed: 30,000/s", fontsize=9)
    axes[0, 0].legend(fontsize=8, ncol=len(strategies))
    figure.tight_layout()
    figure.savefig(target, format="svg", metadata={"Date": None})


def main(argv: List[str]) -> None:
    if len(argv) != 2 or argv[0] in ("-h", "--help"):
        sys.exit("usage: python benchmarks/chart.py ROWS.json CHART.svg "
                 "(the rows matrix.py --json wrote; see this script's docstring)")
    with open(argv[0]) as handle:
        draw(json.load(handle), argv[1])


if __name__ == "__main__":
    main(sys.argv[1:])
