"""Plain, slow yardsticks for the planners, written with the public API only.

``one_node_at_a_time`` is the naive autoscaler the scale-up planner must never
do worse than; ``fewest_new_nodes`` finds the true optimum of a tiny instance
by exhaustive search, to check the lower bound against.
"""
from fractions import Fraction

from pylighthouse import Distributor, Node, check_fit


def one_node_at_a_time(distributor, pending, templates):
    """Add one node of the first template that can host the first workload
    still waiting, place everything again, and repeat until nothing that a
    template could host is waiting (or one node per workload was added).

    ``templates`` are (prefix, resources) pairs. Returns (new nodes, result).
    """
    snapshot = distributor.to_dict()
    taken = {node.name for node in distributor.nodes}
    added, numbers = [], {}
    while True:
        copy = Distributor.from_dict(snapshot)
        copy.add_nodes(added)
        result = copy.attempt_assign_loads(pending)
        waiting = [load for load in pending if result[load.name] is None and any(
            check_fit(Node("empty", resources).resources, load) is None
            for _, resources in templates)]
        if not waiting or len(added) >= len(pending):
            return added, result
        for prefix, resources in templates:
            if check_fit(Node("empty", resources).resources, waiting[0]) is None:
                break
        number = numbers.get(prefix, 0) + 1
        while f"{prefix}-{number}" in taken:
            number += 1
        numbers[prefix] = number
        taken.add(f"{prefix}-{number}")
        added.append(Node(f"{prefix}-{number}", resources))


def fewest_new_nodes(rooms, loads, capacity):
    """The fewest new nodes of ``capacity`` with which every load fits somewhere.

    ``rooms`` are the free rooms of the existing nodes and ``loads`` the
    requirements, all dicts of resource -> number over the same resources.
    Every load goes to an existing node, a new node already opened, or opens
    the next new node: every packing is tried.
    """
    best = [len(loads)]

    def fits(room, load):
        return all(room[key] - Fraction(load[key]) >= 0 for key in room)

    def take(room, load):
        return {key: room[key] - Fraction(load[key]) for key in room}

    def search(position, existing, opened):
        if len(opened) >= best[0]:
            return
        if position == len(loads):
            best[0] = len(opened)
            return
        load = loads[position]
        for index, room in enumerate(existing):
            if fits(room, load):
                search(position + 1, existing[:index] + [take(room, load)]
                       + existing[index + 1:], opened)
        for index, room in enumerate(opened):
            if fits(room, load):
                search(position + 1, existing,
                       opened[:index] + [take(room, load)] + opened[index + 1:])
        fresh = {key: Fraction(value) for key, value in capacity.items()}
        if fits(fresh, load):
            search(position + 1, existing, opened + [take(fresh, load)])

    search(0, [{key: Fraction(value) for key, value in room.items()} for room in rooms], [])
    return best[0]


def one_copy_per_trial(distributor, max_nodes=None, values=None, keep=()):
    """plan_scale_down as plainly as it can be said: every candidate tried on
    a copy made afresh from the snapshot of the last accepted removal (the
    planner changes one copy and undoes the drains that leave work behind).
    Returns (removable, moves, kept)."""
    from pylighthouse.planning import _accept_keep, _accept_values, _most_empty_first

    wanted = _accept_values(values, distributor)
    staying = _accept_keep(keep, distributor)
    state = distributor.to_dict()
    removable, moves = [], {}
    while True:
        kept, accepted = {}, False
        for name in _most_empty_first(Distributor.from_dict(state), wanted):
            if name in staying:
                kept[name] = "named in keep"
                continue
            if max_nodes is not None and len(removable) >= max_nodes:
                kept[name] = f"max_nodes={max_nodes} reached"
                continue
            trial = Distributor.from_dict(state)
            moved = trial.drain(name)
            stuck = [load for load, node in moved.items() if node is None]
            if stuck:
                kept[name] = (f"{stuck[0]} cannot move: "
                              f"{trial.explain(trial.workload(stuck[0]))}")
                continue
            trial.remove_nodes([name])
            state = trial.to_dict()
            removable.append(name)
            moves.update({load: node for load, node in moved.items() if node is not None})
            accepted = True
        if not accepted:
            return removable, moves, kept
