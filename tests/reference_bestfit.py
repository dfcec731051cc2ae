"""A literal, slow reading of BestFit's documented rule: the oracle for BestFitDistributor.

It shares no code with pylighthouse; it extends :mod:`reference` (the
reading of SPEC.md, which keeps the fit rule, aversion passes and
lifecycle) with BestFit's two orders and its second, smallest-first trial
of a call that leaves workloads out, written the way the docs state them.
"""
import decimal
from decimal import Decimal
from fractions import Fraction
from math import inf

from reference import UNDEFINED, Reference, fits, score

#: As documented: 28 significant digits, rounding half to even.
SHARES = decimal.Context(prec=28, rounding=decimal.ROUND_HALF_EVEN)
#: Wide enough to write any quantity of the tests as a decimal exactly.
WIDE = decimal.Context(prec=200)


def as_decimal(value):
    """A Fraction whose denominator divides a power of ten, as that decimal."""
    return WIDE.divide(Decimal(value.numerator), Decimal(value.denominator))


def room_score(machine, rubric):
    """(flag, score): the rubric's score, or the sum of shares of capacity."""
    if rubric is not None:
        value = score(rubric, machine.remaining)
        return (1, 0) if value == UNDEFINED else (0, value)
    total = Decimal(0)
    for key, capacity in machine.capacity.items():
        if 0 < capacity < inf:
            share = SHARES.divide(as_decimal(machine.remaining[key]), as_decimal(capacity))
            total = SHARES.add(total, share)
    return (0, total)


def largest_capacities(machines):
    """Per resource, the largest capacity of it among ``machines``."""
    largest = {}
    for machine in machines:
        for key, capacity in machine.capacity.items():
            largest[key] = max(largest.get(key, capacity), capacity)
    return largest


def dominant_share(load, largest):
    """The largest fraction of the cluster's largest capacity the load needs
    (``largest``: :func:`largest_capacities` of the cluster's machines)."""
    shares = [Fraction(needed) / largest[key] for key, needed in load.requirements.items()
              if key in largest and 0 < largest[key] < inf]
    return max(shares, default=Fraction(0))


class BestFitReference(Reference):
    def __init__(self, nodes, rubric=None):
        super().__init__("BestFit", nodes, rubric)
        self.scored = rubric is not None

    def order(self):
        rubric = self.rubric if self.scored else None
        position = {id(machine): index for index, machine in enumerate(self.machines)}

        def key(machine):
            below = sum(1 for capacity in machine.capacity.values() if capacity < 0)
            tags = sum(1 for capacity in machine.capacity.values() if capacity == 0)
            return (-below, tags, room_score(machine, rubric), position[id(machine)])
        return self.sorted_by(key)

    def sequence(self, loads):
        largest = largest_capacities(self.machines)
        return sorted(loads, key=lambda load: -dominant_share(load, largest))

    def trial(self, loads):
        """Place ``loads`` in that order; return [(load, machine)], misses."""
        done, missed = [], 0
        for load in loads:
            machine = self.choose(load)
            if machine is None:
                missed += 1
            else:
                self.put(machine, load)
                done.append((load, machine))
        return done, missed

    @staticmethod
    def asked(loads):
        """Per resource no load asks less than zero of, what each load
        asking more than zero of it, and not immune to it, asks."""
        found = {}
        for key in {key for load in loads for key in load.requirements}:
            if all(load.requirements.get(key, 0) >= 0 for load in loads):
                found[key] = [load.requirements[key] for load in loads
                              if load.requirements.get(key, 0) > 0
                              and key not in load.immunities]
        return found

    def rooms(self, key):
        """Each open machine having ``key``, with what it has left (above zero)."""
        return [(machine, max(machine.remaining[key], 0)) for machine in self.machines
                if key in machine.remaining and not machine.cordoned]

    def stranded(self, loads):
        """As documented: unless some load asks less than zero of something,
        the loads asking for a resource at most 32 machines have, none of
        which (open) can take them now."""
        if any(needed < 0 for load in loads for needed in load.requirements.values()):
            return []
        found = []
        for load in loads:
            for key in load.requirements:
                having = [machine for machine in self.machines if key in machine.capacity]
                if len(having) <= 32:
                    if not any(not machine.cordoned and fits(machine, load)
                               for machine in having):
                        found.append(load)
                    break
        return found

    def forced_misses(self, loads):
        """How many of ``loads`` no order can place, as documented: the
        stranded ones, and among the others, per resource of :meth:`asked`,
        its loads dropped largest first until their demand fits in what the
        open machines have left of it."""
        stranded = self.stranded(loads)
        loads = [load for load in loads if all(load is not other for other in stranded)]
        most = 0
        for key, needs in self.asked(loads).items():
            left = sum(room for _, room in self.rooms(key))
            demand, dropped = sum(needs), 0
            for needed in sorted(needs, reverse=True):
                if demand <= left:
                    break
                demand -= needed
                dropped += 1
            most = max(most, dropped)
        return len(stranded) + most

    def fewest_openings(self, loads, empty):
        """How many of the ``empty`` machines (those holding no load before
        the call) must take a load, at least, as documented: per resource of
        :meth:`asked`, the demand less what the other open machines have
        left of it, covered by the empty ones' room (above zero), largest
        first; all of those if they cannot cover it."""
        most = 0
        for key, needs in self.asked(loads).items():
            rooms = self.rooms(key)
            demand = sum(needs) - sum(room for machine, room in rooms
                                      if id(machine) not in empty)
            count = 0
            for room in sorted((room for machine, room in rooms
                                if id(machine) in empty and room > 0), reverse=True):
                if demand <= 0:
                    break
                demand -= room
                count += 1
            most = max(most, count)
        return most

    def place_call(self, loads, all_or_nothing):
        """Largest first; if that leaves out more than one load in a hundred
        (any, all or nothing) beyond what a resource forces out, smallest
        first from the same start instead, kept only when it places
        strictly more. If it places everything on more than the fewest
        machines that held nothing before, plus one in a hundred of those,
        the order given from the same start instead, kept only when it
        places everything on strictly fewer such machines."""
        forced = self.forced_misses(loads)
        empty = {id(machine) for machine in self.machines if not machine.loads}
        bound = self.fewest_openings(loads, empty)
        first, first_missed = self.trial(self.sequence(loads))
        slack = 0 if all_or_nothing else len(loads) // 100
        if first_missed - forced > slack:
            for load, _ in reversed(first):
                self.take(load.name)
            largest = largest_capacities(self.machines)
            smallest = sorted(loads, key=lambda load: dominant_share(load, largest))
            second, second_missed = self.trial(smallest)
            if second_missed < first_missed:
                first, first_missed = second, second_missed
            else:
                for load, _ in reversed(second):
                    self.take(load.name)
                for load, machine in first:
                    self.put(machine, load)
        elif not first_missed:
            opened = len({id(machine) for _, machine in first} & empty)
            if opened > bound + bound // 100:
                for load, _ in reversed(first):
                    self.take(load.name)
                second, second_missed = self.trial(loads)
                if not second_missed and len({id(m) for _, m in second} & empty) < opened:
                    first = second
                else:
                    for load, _ in reversed(second):
                        self.take(load.name)
                    for load, machine in first:
                        self.put(machine, load)
        if all_or_nothing and first_missed:
            for load, _ in reversed(first):
                self.take(load.name)
            first = []
        result = {load.name: None for load in loads}
        result.update({load.name: machine.name for load, machine in first})
        return result
