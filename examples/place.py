"""Place the workloads of a problem file and print where each one went.

Usage: python examples/place.py [examples/tour.json]
"""
import json
import sys
from pathlib import Path

import pylighthouse as lighthouse


def main(path: str) -> int:
    problem = json.loads(Path(path).read_text())
    nodes = lighthouse.Node.from_list(problem["nodes"])
    workloads = lighthouse.Workload.from_list(problem["workloads"])
    if problem.get("strategy", "Prioritized") == "BinPack":
        distributor = lighthouse.BinPackDistributor.from_list(problem["rubric"], nodes)
    elif problem.get("strategy") == "RoundRobin":
        distributor = lighthouse.RoundRobinDistributor.from_list(nodes)
    else:
        distributor = lighthouse.PrioritizedDistributor.from_list(nodes)
    result = distributor.attempt_assign_loads(workloads)
    for workload in workloads:
        node = result[workload.name]
        if node is None:
            print(f"{workload.name}: not placed ({distributor.explain(workload)})")
        else:
            print(f"{workload.name} -> {node}")
    return 0 if all(result.values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else str(Path(__file__).with_name("tour.json"))))
