"""Instructions one cell of the matrix executes, counted by valgrind: a figure
that does not move with the machine's other work, for comparing versions of
the library where timed runs differ by more than the change does.

Run from the repository root, each version checked out in a folder of its
own (``git worktree add ../before HEAD~1``)::

    python benchmarks/instructions.py --mix kinds --strategy BinPack \\
        --size 2000x20000 ../before .

For each folder, Python runs under ``valgrind --tool=callgrind`` twice: once
to import the library and make the problem only (``mixes.problem``, from
this script's folder, so that every version gets the same one), and once
to do that, build the distributor from the node dicts and place the
workload dicts in one call, as the matrix times them. The difference is
the cell's count; the script prints it per folder, and its ratio to the
first folder's. Hash randomisation is off (``PYTHONHASHSEED=0``) and,
where ``setarch`` is found, address randomisation too: the index keeps
nodes in sets, ordered by their addresses, so that with it on a count
moves by a few hundredths of a percent from one run to the next. With it
off, two runs of one folder agreed to within a millionth, and the same
code in two folders of names of other lengths (which shift the addresses)
to within 0.2%: smaller differences say nothing. Two runs at a time (the
machine's two cores); valgrind runs about 60 times slower than Python
alone (5000x50000 takes about four minutes a run).

Instructions are not time: memory traffic is left out, so a change that
saves instructions but reads more memory can still be slower (growth with
the cluster's size is mostly that). Confirm a gain with timed runs
(``matrix.py``); a loss of a few percent in instructions is a loss.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from typing import List, Optional, Sequence

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
# (the mixes only: they import no library, which must come from the
# checkout named; the matrix, which does, is imported in the run counted)
from mixes import STRATEGIES, size_of  # noqa: E402
#: valgrind's summary line of the instructions counted.
COLLECTED = re.compile(r"Collected\s*:\s*(\d+)")


def run_cell(root: str, mix: str, strategy: str, size: str, place: bool) -> None:
    """Import the library in ``root``, make the problem of ``mix`` at
    ``size`` and, with ``place``, build ``strategy``'s distributor and
    place the problem."""
    sys.path[:0] = [os.path.abspath(root), HERE]
    # (in both runs, so that imports are not counted; the library first,
    # from ``root``: the matrix's own import of it then finds that one)
    import pylighthouse  # noqa: F401
    import matrix
    import mixes
    nodes, workloads = mixes.problem(mix, *size_of(size))
    if not place:
        return
    matrix.build(strategy, nodes).attempt_assign_loads(workloads)


def command(root: str, mix: str, strategy: str, size: str, place: bool,
            out: str) -> List[str]:
    """The command line counting one run of :func:`run_cell`."""
    line = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
            sys.executable, os.path.abspath(__file__), "--cell", root,
            "--mix", mix, "--strategy", strategy, "--size", size]
    if place:
        line.append("--place")
    if shutil.which("setarch"):
        line[:0] = ["setarch", "-R"]
    return line


def collected(output: str) -> int:
    """The instructions counted, from valgrind's output."""
    found = COLLECTED.search(output)
    if found is None:
        raise RuntimeError(f"no count in valgrind's output:\n{output}")
    return int(found.group(1))


def count(root: str, mix: str, strategy: str, size: str, place: bool) -> int:
    """Instructions of one run of :func:`run_cell` under valgrind."""
    environment = dict(os.environ, PYTHONHASHSEED="0", PYTHONDONTWRITEBYTECODE="1")
    with tempfile.TemporaryDirectory() as folder:  # (for callgrind's own file)
        done = subprocess.run(command(root, mix, strategy, size, place,
                                      os.path.join(folder, "callgrind.out")),
                              capture_output=True, text=True, env=environment)
    if done.returncode:
        raise RuntimeError(f"the run in {root} failed:\n{done.stderr}")
    return collected(done.stderr)


def report(roots: Sequence[str], counts: Sequence[int]) -> List[str]:
    """One line per folder: its count and its ratio to the first's."""
    first = counts[0]
    return [f"{root}: {number:,} instructions, {number / first:.4f}"
            for root, number in zip(roots, counts)]


def main(argv: Optional[Sequence[str]] = None) -> List[int]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("roots", nargs="*", help="checkouts of the project to compare")
    parser.add_argument("--mix", default="types")
    parser.add_argument("--strategy", default="BinPack", choices=STRATEGIES)
    parser.add_argument("--size", default="2000x20000")
    parser.add_argument("--cell", help=argparse.SUPPRESS)  # (the run counted)
    parser.add_argument("--place", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.cell is not None:
        run_cell(args.cell, args.mix, args.strategy, args.size, args.place)
        return []
    if not args.roots:
        parser.error("name at least one checkout")
    if shutil.which("valgrind") is None:
        parser.error("valgrind is not installed")
    jobs = [(root, place) for root in args.roots for place in (False, True)]
    with ThreadPoolExecutor(2) as pool:
        counted = list(pool.map(
            lambda job: count(job[0], args.mix, args.strategy, args.size, job[1]), jobs))
    counts = [counted[2 * at + 1] - counted[2 * at] for at in range(len(args.roots))]
    print(f"{args.mix}, {args.strategy}, {args.size}: building and placing")
    for line in report(args.roots, counts):
        print(line)
    return counts


if __name__ == "__main__":
    main()
