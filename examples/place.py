"""Place the workloads of a problem file from Python and print where each one went.

Usage: python examples/place.py [examples/tour.json]

The ``pylighthouse assign`` command does the same (and more); this shows the
few calls behind it.
"""
import sys
from pathlib import Path

from pylighthouse.problem import load_problem, solve


def main(path: str) -> int:
    problem = load_problem(Path(path).read_bytes())
    outcome = solve(problem, partial=True)
    for name, node in outcome.assignments.items():
        if node is None:
            print(f"{name}: not placed ({outcome.unplaced[name]})")
        else:
            print(f"{name} -> {node}")
    return 0 if outcome.successful else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else str(Path(__file__).with_name("tour.json"))))
