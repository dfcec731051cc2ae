"""A literal, slow reading of SPEC.md: the oracle the library is tested against.

It shares no code with pylighthouse. Quantities are Fractions (exact), with
the floats +inf and -inf for unlimited resources and wards. Every operation
scans every node: clarity over speed. The one thing remembered is each
node's sort key, until the node changes, and the last sorted order
(:meth:`Reference.sorted_by`), because scoring every node at every
placement made the differential tests minutes long; with :data:`CHECK`
set, every order is also made by the literal sort and must be the same.
"""
from fractions import Fraction
from math import inf, isinf

UNDEFINED = "undefined"
#: When true, :meth:`Reference.sorted_by` sorts every node anew as well and
#: asserts both orders are the same (tests/test_reference.py sets it).
CHECK = False


def exact(value):
    """A caller's number as a Fraction (floats through their repr), or +-inf."""
    if isinstance(value, float) and isinf(value):
        return value
    if isinstance(value, float):
        return Fraction(repr(value))
    return Fraction(value)


class Load:
    def __init__(self, spec):
        self.name = spec["name"]
        self.requirements = {k: exact(v) for k, v in spec.get("requirements", {}).items()}
        self.immunities = set(spec.get("immunities", ()))
        self.groups = set(spec.get("aversion_groups", ()))


class Machine:
    def __init__(self, spec):
        self.name = spec["name"]
        self.capacity = {k: exact(v) for k, v in spec.get("resources", {}).items()}
        self.remaining = dict(self.capacity)
        self.loads = []  # Load objects, in placement order
        self.cordoned = False
        self.changes = 0  # how many times ``remaining`` changed (put, take)


def fits(machine, load):
    """SPEC, "The fit rule"."""
    for key in load.requirements:
        if key not in machine.remaining:
            return False
    for key, left in machine.remaining.items():
        if key in load.immunities:
            continue
        if left - load.requirements.get(key, 0) < 0:
            return False
    return True


def score(rubric, quantities):
    """SPEC, "BinPack": sum of weight x quantity over rubric keys present."""
    terms = [weight * quantities[key] for key, weight in rubric.items()
             if weight != 0 and key in quantities]
    if inf in terms and -inf in terms:
        return UNDEFINED
    return sum(terms)


def node_key(rubric, machine):
    value = score(rubric, machine.remaining)
    if value == UNDEFINED:
        return (1, 0, machine.name)
    return (0, value, machine.name)


class Reference:
    def __init__(self, strategy, nodes, rubric=None):
        self.strategy = strategy
        self.rubric = {k: exact(v) for k, v in (rubric or {}).items()}
        self.machines = []
        self.cursor = 0
        self.where = {}  # workload name -> Machine, in placement order
        self.keys = {}  # Machine -> (its changes, its sort key), see sorted_by
        self.last = None  # the last sorted order, see sorted_by
        self.add(nodes)

    # -- node order (SPEC, "Strategies: node order for one placement")
    def order(self):
        if self.strategy == "Prioritized":
            return list(self.machines)
        if self.strategy == "RoundRobin":
            if not self.machines:
                return []
            start = self.cursor % len(self.machines)
            return self.machines[start:] + self.machines[:start]
        return self.sorted_by(lambda machine: node_key(self.rubric, machine))

    def sorted_by(self, key):
        """``sorted(self.machines, key=key)``, for a ``key`` unique to each
        machine that changes only when the machine's ``remaining`` changes
        (put, take) or the list of machines does (add, remove): a machine's
        key is remembered until then, and the last order (nearly sorted
        already, as one placement moves one machine) is what gets sorted.
        Keys being unique, the result does not depend on the order sorted."""
        def remembered(machine):
            kept = self.keys.get(machine)
            if kept is None or kept[0] != machine.changes:
                kept = self.keys[machine] = (machine.changes, key(machine))
            return kept[1]
        self.last = sorted(self.machines if self.last is None else self.last, key=remembered)
        if CHECK:
            assert self.last == sorted(self.machines, key=key)
        return self.last

    def forget_order(self):
        """The list of machines changed: no remembered key or order holds."""
        self.keys = {}
        self.last = None

    def sequence(self, loads):
        if self.strategy == "BinPack":
            return sorted(loads, key=lambda w: (-score(self.rubric, w.requirements), w.name))
        return list(loads)

    def averse(self, machine, load):
        return any(other.groups & load.groups for other in machine.loads)

    def choose(self, load):
        order = self.order()
        for machine in order:  # pass 1: no shared aversion group
            if not machine.cordoned and not self.averse(machine, load) and fits(machine, load):
                return machine
        for machine in order:  # pass 2: all nodes
            if not machine.cordoned and fits(machine, load):
                return machine
        return None

    def put(self, machine, load):
        self.book(machine, load)
        if self.strategy == "RoundRobin":
            self.cursor = self.machines.index(machine) + 1

    def book(self, machine, load):
        """``load`` runs on ``machine`` from now on: its requirements taken
        from what the machine has left."""
        for key, needed in load.requirements.items():
            machine.remaining[key] = machine.remaining[key] - needed
        machine.changes += 1
        machine.loads.append(load)
        self.where[load.name] = machine

    def take(self, name):
        machine = self.where.pop(name)
        load = next(w for w in machine.loads if w.name == name)
        machine.loads.remove(load)
        for key, needed in load.requirements.items():
            machine.remaining[key] = machine.remaining[key] + needed
        machine.changes += 1
        return machine, load

    # -- the operations
    def assign(self, specs, all_or_nothing=False):
        return self.place_call([Load(spec) for spec in specs], all_or_nothing)

    def place_call(self, loads, all_or_nothing):
        """One call's loads (or the loads of removed nodes), in sequence."""
        result = {load.name: None for load in loads}
        cursor = self.cursor
        done = []
        for load in self.sequence(loads):
            machine = self.choose(load)
            if machine is None:
                if all_or_nothing:
                    for name in reversed(done):
                        self.take(name)
                    self.cursor = cursor
                    return {load.name: None for load in loads}
                continue
            self.put(machine, load)
            done.append(load.name)
            result[load.name] = machine.name
        return result

    def release(self, names):
        return {name: self.take(name)[0].name for name in names}

    def add(self, nodes):
        self.machines.extend(Machine(spec) for spec in nodes)
        self.forget_order()

    def record(self, name, specs):
        """Workloads already running on a node (``record_running``, as the
        library documents it): each uses the node's resources with no fit
        check, even beyond its capacity, and counts for aversion;
        RoundRobin's cursor stays."""
        machine = self.machine(name)
        for load in map(Load, specs):
            self.book(machine, load)

    def machine(self, name):
        return next(m for m in self.machines if m.name == name)

    def cordon(self, name):
        self.machine(name).cordoned = True

    def uncordon(self, name):
        self.machine(name).cordoned = False

    def drain(self, name):
        machine = self.machine(name)
        machine.cordoned = True
        moves = {}
        for load in self.sequence(list(machine.loads)):
            target = self.choose(load)
            if target is not None:
                self.take(load.name)
                self.put(target, load)
            moves[load.name] = None if target is None else target.name
        return moves

    def remove(self, names):
        displaced = []
        for name in names:
            machine = self.machine(name)
            for load in list(machine.loads):
                self.take(load.name)
                displaced.append(load)
        for name in names:
            index = self.machines.index(self.machine(name))
            if index < self.cursor:
                self.cursor -= 1
            del self.machines[index]
        self.forget_order()
        return self.place_call(displaced, False)

    # -- what tests compare
    def state(self):
        return {m.name: (m.remaining, [w.name for w in m.loads], m.cordoned)
                for m in self.machines}

    def assignments(self):
        return {name: machine.name for name, machine in self.where.items()}
