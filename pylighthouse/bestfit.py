"""BestFit: the strategy that packs each workload onto the fullest node where it fits.

The strategy only orders: one call's workloads largest first, and the nodes
from the least room left to the most. The node index serves this order the
way it serves BinPack's (the order key of a node changes when its room
does), and :func:`pylighthouse.fit.check_fit` decides every fit.
"""
import contextlib
import decimal
import math
from collections import Counter
from decimal import Decimal
from fractions import Fraction
from itertools import chain
from operator import itemgetter
from typing import (Any, Dict, FrozenSet, Iterable, Iterator, List, Mapping, Optional,
                    Sequence, Set, Tuple, Type, TypeVar, Union)

from .distributors import Distributor, NodeLike, _field, _Pass, _reading, _Slot
from .errors import json_path
from .fit import reason_of
from .index import NodeOrder
from .model import Node, Workload
from .quantities import EXACT, INFINITY, ZERO, from_json_quantity, to_json_quantity
from .rubric import Rubric

__all__ = ["BestFitDistributor", "RARE", "SHARES", "SLACK"]

#: A BestFit class's own type (a subclass's from_list returns the subclass).
_BestFit = TypeVar("_BestFit", bound="BestFitDistributor")

#: The context in which BestFit's default score divides and adds shares:
#: 28 significant digits (Python's default), rounding half to even. The
#: same remaining room over the same capacity always gives the same score.
SHARES = decimal.Context(prec=28, rounding=decimal.ROUND_HALF_EVEN,
                         Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN,
                         traps=[decimal.InvalidOperation, decimal.DivisionByZero])

RubricLike = Union[Rubric, Mapping[str, Any]]

#: A workload asking for a resource at most this many nodes have (a node's
#: own tag) and that none of them can take as a call begins counts as a
#: forced miss (see :class:`BestFitDistributor`).
RARE = 32

#: A node scored on more than this many resources keeps the share of each
#: (see :meth:`BestFitDistributor._room`): a placement divides again only
#: the shares of the resources it changed.
KEPT_SHARES = 8

#: A call's second order is tried only when the first misses more than
#: one in this many of its workloads beyond the misses a resource forces;
#: and the order given only when the first uses more than one in this many
#: new nodes beyond the fewest its demand needs.
SLACK = 100


def largest_capacities(capacities: Iterable[Mapping[str, Decimal]]) -> Dict[str, Decimal]:
    """Return, per resource, the largest of ``capacities`` (resource maps),
    keeping only the resources where that is positive and finite: the scale
    a dominant share is measured against. Cost: O(total number of resources).
    """
    return {key: capacity for key, capacity in _largest(capacities).items()
            if ZERO < capacity < INFINITY}


def _largest(capacities: Iterable[Mapping[str, Decimal]]) -> Dict[str, Decimal]:
    """Per resource, the largest of ``capacities``, whatever it is (unlimited,
    zero or below). O(total number of resources)."""
    largest: Dict[str, Decimal] = {}
    for resources in capacities:
        for key, capacity in resources.items():
            largest[key] = max(largest.get(key, capacity), capacity)
    return largest


def dominant_share(workload: Workload, scale: Mapping[str, Fraction]) -> Fraction:
    """Return the largest fraction of ``scale`` that ``workload`` requires of
    any resource in it (0 when it requires none of them), exactly.
    Cost: O(requirements)."""
    return max((Fraction(needed) / scale[key]
                for key, needed in workload.requirements.items() if key in scale),
               default=Fraction(0))


def share_ranks(loads: Sequence[Workload], scale: Mapping[str, Fraction]) -> List[int]:
    """Per workload of ``loads``, the rank of its :func:`dominant_share`
    among theirs: equal shares have equal ranks, a larger share a larger
    one. Workloads repeat the same quantities, even when no two ask for all
    the same: each distinct (resource, quantity) is divided once, and the
    fractions so made are put in order once (by their nearest floats, which
    never reverse two fractions, then exactly where the floats are equal);
    a workload's share is then the largest of its fractions' places, an
    integer. Cost: O(W x R) and O(P log P) for P distinct (resource,
    quantity) pairs."""
    asked = [[pair for pair in load.requirements.items() if pair[0] in scale]
             for load in loads]
    zero = Fraction(0)  # (the share of a workload asking for none of them)
    parts = sorted([(_nearest(part), part, pair) for pair, part in
                    ((pair, Fraction(pair[1]) / scale[pair[0]])
                     for pair in set(chain.from_iterable(asked)))]
                   + [(0.0, zero, None)], key=itemgetter(0, 1))
    place: Dict[Any, int] = {}
    at = -1
    previous: Any = None
    for _, part, pair in parts:
        if part != previous:
            at += 1
            previous = part
        place[pair] = at
    nothing = place[None]
    shares = [max(map(place.__getitem__, pairs)) if pairs else nothing for pairs in asked]
    rank = {share: at for at, share in enumerate(sorted(set(shares)))}
    return [rank[share] for share in shares]


#: Up to this many resources, :meth:`BestFitDistributor._rooms_before` looks
#: each up at every node; more, and it reads each node's own instead where
#: they are fewer (see :func:`_having`).
FEW_KEYS = 8


def _having(keys: List[str], wanted: Set[str], resources: Mapping[str, Any]) -> List[str]:
    """The names of ``keys`` (``wanted`` is the same as a set) that
    ``resources`` has, read from the shorter of the two: a call may ask for
    thousands of names (each node's own tag) of nodes having a few each.
    O(min(len(keys), len(resources)))."""
    if len(keys) <= len(resources):
        return [key for key in keys if key in resources]
    return [key for key in resources if key in wanted]


def _nearest(part: Fraction) -> float:
    """The float nearest ``part`` (an infinity beyond the floats' range)."""
    try:
        return part.numerator / part.denominator
    except OverflowError:
        return math.inf if part > 0 else -math.inf


def asks_below_zero(loads: Iterable[Workload]) -> bool:
    """Whether some workload of ``loads`` asks less than zero of a resource.
    O(W x R), each requirement map shared by workloads read once."""
    seen: Set[int] = set()
    for load in loads:
        requirements = load.requirements
        if id(requirements) not in seen:  # (the maps stay alive in ``loads``)
            seen.add(id(requirements))
            if any(needed < ZERO for needed in requirements.values()):
                return True
    return False


def asked_for(loads: Iterable[Workload]) -> Dict[str, List[Decimal]]:
    """Per resource that no workload of ``loads`` asks less than zero of,
    what each workload asking more than zero of it (and not immune to it)
    asks, in order. Cost: O(W x R)."""
    asked: Dict[str, List[Decimal]] = {}
    negative: Set[str] = set()
    # Workloads read from the same numbers share one requirement map: what
    # such a map asks, for the same immunities, is sorted out once.
    known: Dict[Tuple[int, FrozenSet[str]], List[Tuple[List[Decimal], Decimal]]] = {}
    for load in loads:
        requirements, immunities = load.requirements, load.immunities
        entries = known.get((id(requirements), immunities))
        if entries is None:
            entries = known[id(requirements), immunities] = []
            for key, needed in requirements.items():
                if needed < ZERO:
                    negative.add(key)
                elif needed > ZERO and key not in immunities:
                    needs = asked.get(key)
                    if needs is None:
                        needs = asked[key] = []
                    entries.append((needs, needed))
        for needs, needed in entries:
            needs.append(needed)
    for key in negative:
        asked.pop(key, None)
    return asked


class _Room:
    """Per resource, the room above zero of a set of nodes, summed exactly:
    finite quantities added under :data:`~pylighthouse.quantities.EXACT`,
    infinite ones counted (an infinite room taken back out of a sum would
    leave no number). O(1) a quantity."""

    __slots__ = ("finite", "infinite")

    def __init__(self) -> None:
        self.finite: Dict[str, Decimal] = {}
        self.infinite: Counter[str] = Counter()

    def add(self, rooms: Mapping[str, Decimal], sign: int) -> None:
        """Add (``sign`` 1) or take out (-1) ``rooms`` (quantities above
        zero, by resource)."""
        finite = self.finite
        for key, here in rooms.items():
            if here == INFINITY:
                self.infinite[key] += sign
            elif sign > 0:
                finite[key] = EXACT.add(finite.get(key, ZERO), here)
            else:
                finite[key] = EXACT.subtract(finite[key], here)

    def part(self, keys: Iterable[str]) -> "_Room":
        """A copy of the sums of ``keys``. O(len(keys))."""
        part = _Room()
        for key in keys:
            part.finite[key] = self.finite.get(key, ZERO)
            part.infinite[key] = self.infinite[key]
        return part

    def total(self, key: str) -> Decimal:
        """The room of ``key`` summed (infinite when some node's is)."""
        return INFINITY if self.infinite[key] > 0 else self.finite.get(key, ZERO)


class BestFitDistributor(Distributor):
    """Places each workload on the node with the least room left where it fits.

    Within one call the workloads go largest first: by *dominant share*,
    descending, the largest fraction a workload requires of any resource,
    measured against the largest capacity of that resource among the
    distributor's nodes (cordoned ones included; only resources whose
    largest capacity is positive and finite count), compared exactly (as
    fractions, never rounded). Equal shares keep the order given.

    Each workload then goes to the first node where it fits, the nodes
    ordered by, in turn:

    1. the number of the node's resources whose capacity is below zero
       (wards, shortcomings), most first: such a node takes only the
       workloads that offset or are immune to them, so they go there first;
    2. the number of its tags (resources of capacity zero), fewest first:
       a tagged node is kept for the workloads that need its tag;
    3. its *room score*, least first, computed on its remaining resources
       and computed again after every change:

       * without a rubric, the sum of remaining / capacity over the node's
         resources whose capacity is positive and finite (a full node
         scores 0, an empty one with cpu, mem and disk 3), each share
         divided and added in the node's resource order under
         :data:`~pylighthouse.bestfit.SHARES`;
       * with a ``rubric``, the rubric's score of the remaining resources,
         as BinPack computes it (a score meeting both infinities comes
         last);
    4. the node order: the order the nodes were given in, nodes added
       later last.

    On nodes of one capacity, this is the node where the workload leaves
    the least room once placed. Aversion groups stay soft: the first pass
    skips nodes hosting a workload that shares a group with it, the second
    takes any node.

    When largest first leaves workloads of the call unplaced, the call may
    be placed a second time from the same starting state, smallest first
    (ascending dominant share, equal shares in the order given), with the
    same node rule. The second placement is kept only when it leaves
    strictly fewer workloads unplaced; otherwise the first is restored
    exactly, placement for placement. ``remove_nodes`` re-places the
    displaced workloads the same way; ``drain`` moves a node's workloads
    one by one, largest first, with no second order.

    The second order is tried only when the first leaves out more than
    ``len(workloads) // SLACK`` workloads
    (:data:`~pylighthouse.bestfit.SLACK` is 100; with ``all_or_nothing``,
    more than none) beyond the *forced* count, the sum of two counts.
    First, unless a workload of the call asks less than zero of some
    resource, the workloads that ask for a resource at most
    :data:`~pylighthouse.bestfit.RARE` (32) nodes have, none of which (if
    open) could take them before the call: nodes only lose room in a call.
    Second, among the other workloads, per resource that no workload of
    the call asks less than zero of, the workloads asking for it (and not
    immune to it) can take at most what the open nodes had left of it
    before the call, summed over the nodes; at least as many of them as
    must be dropped, largest first, to fit within that sum find no node in
    any order: the largest such count over the resources. Every order
    misses at least the forced count, so skipping the second order costs at most one
    workload in a hundred of the call (and none with ``all_or_nothing``,
    which succeeds when either order places every workload), for half the
    time of such a call.

    When largest first places every workload of the call but puts
    workloads on more *new* nodes (nodes that held none before the call)
    than the call needs, the call is placed a second time from the same
    starting state, in the order given, with the same node rule. That
    placement is kept only when it too places every workload, on strictly
    fewer new nodes; otherwise the first is restored exactly. Largest first
    puts workloads of one size together, which can fill one resource of a
    node while another stays half empty; the order given mixes them.
    "More than needed" means more than the *new-node bound* plus
    ``bound // SLACK``: per resource that no
    workload of the call asks less than zero of, the demand of the
    workloads asking for it (and not immune to it), less what the nodes
    holding workloads before the call had left of it (above zero), must be
    covered by new nodes, at least as many as it takes with the largest
    rooms first (above zero; all of them if they cannot cover it); the
    largest such count over the resources (cordoned nodes take nothing).
    No placement can use fewer new nodes than the bound.

    Cost: a call whose workloads all have the same dominant share, whose
    first order misses few more than the forced count, or places
    everything on few enough new nodes costs one placement per workload,
    and O(W x R + W log W) to count the forced misses or the bound: the
    distributor keeps, per resource, the room above zero of the open nodes
    and of those holding workloads, summed, and brings the sums up to date
    from the nodes changed since they were last read (O(R) each), so a
    small call on a large cluster does not read every node. Only a call
    asking more of a resource than the nodes holding workloads have left
    reads the nodes holding none (O(N x R + N log N)) for its bound. One
    that leaves workloads out otherwise also costs the second placement,
    which stops once it has missed as many workloads as the first: on a
    copy of the state before the call when that state holds no more nodes
    and other workloads than the call placed (O((N + placed) x R log N) to
    build), else after undoing the first placement and, if the first
    stays, restoring it; up to about three times the cost of one placement
    in all. One that places everything on more new nodes also costs
    undoing it and the placement in the order given, which stops at its
    first miss or once it has used as many new nodes as the first (and,
    if the first stays, undoing that and restoring the first): two to
    three times one placement. On clusters of mixed node sizes the bound
    is loose, so most calls that place everything pay for it. Undoing or
    restoring a placement of more workloads than there are nodes builds
    the node index again (O(N x R log N)) rather than moving nodes in it.

    Raises (constructor):
        InvalidInputError, InvalidTypeError: a node or the rubric is malformed.
        DuplicateNameError: two nodes share a name.
    """

    strategy = "BestFit"
    _resumable = True
    _logs_changes = True

    def __init__(self, nodes: Iterable[NodeLike] = (),
                 rubric: Optional[RubricLike] = None):
        self._rubric = rubric if rubric is None or isinstance(rubric, Rubric) \
            else Rubric(rubric)
        self._sequence_numbers: Dict[str, int] = {}
        self._joined_count = 0
        self._counted: Dict[str, Tuple[int, int, Tuple[Tuple[str, Decimal], ...]]] = {}
        # Per node scored on more than KEPT_SHARES resources, its shares as
        # last scored, and the place of each resource among them.
        self._shares: Dict[str, Tuple[Dict[str, int], List[Decimal]]] = {}
        self._scale: Optional[Dict[str, Fraction]] = None
        # (per resource, the largest capacity of any node, unlimited and
        # negative ones too, and how many nodes have it: kept with the scale
        # as nodes join and leave, see :meth:`_joined`)
        self._largest: Dict[str, Decimal] = {}
        self._at_largest: Counter[str] = Counter()
        # The room above zero of the open nodes, and of those of them
        # holding workloads, summed: the bounds of a call read these sums
        # instead of every node (see :meth:`_room_sums`). The sums catch up
        # with the nodes changed since (the distributor logs their names)
        # when read, from what each node was counted with (its mark).
        self._open_room = _Room()
        self._held_room = _Room()
        self._room_marks: Dict[str, Tuple[bool, Dict[str, Decimal]]] = {}
        super().__init__(nodes)

    @classmethod
    def from_list(cls: Type[_BestFit], nodes: Iterable[NodeLike],
                  rubric: Optional[RubricLike] = None) -> _BestFit:
        """Return a BestFit distributor over ``nodes`` (scored with ``rubric``
        when one is given, else by shares of each node's capacity).

        Raises:
            InvalidInputError, InvalidTypeError: a node or the rubric is malformed.
            DuplicateNameError: two nodes share a name.

        Cost: O(N x R log N), amortised.
        """
        return cls(nodes, rubric)

    @property
    def rubric(self) -> Optional[Rubric]:
        """The rubric the distributor scores room with, or ``None`` (shares)."""
        return self._rubric

    @_reading
    def room_score(self, name: str) -> Decimal:
        """Return the room score of node ``name`` now (see the class docs; NaN
        for a rubric score meeting both infinities).

        Raises:
            InvalidTypeError: ``name`` is not a string (nor a :class:`Node`).
            UnknownNameError: no node has that name.

        Cost: O(R).
        """
        flag, score = self._room(self._slot(name, "room_score"))
        return Decimal("NaN") if flag else score

    # ------------------------------------------------------ strategy hooks

    def _room(self, slot: _Slot, changed: Optional[Iterable[str]] = None) -> Tuple[int, Decimal]:
        """The room score of ``slot``, behind a flag that puts undefined
        scores (a rubric meeting both infinities) last. ``changed``: the
        only resources whose room changed since the node was last scored,
        when known (the shares of the others are kept, on a node scored on
        more than :data:`KEPT_SHARES` resources). Cost: O(R) additions,
        and a division a resource (a resource changed, when kept)."""
        if self._rubric is not None:
            score = self._rubric._score(slot.remaining)
            return (1, ZERO) if score.is_nan() else (0, score)
        divide = SHARES.divide
        remaining = slot.remaining
        scored = self._kinds(slot)[2]
        if len(scored) <= KEPT_SHARES:
            add = SHARES.add
            score = ZERO
            for key, capacity in scored:
                score = add(score, divide(remaining[key], capacity))
            return (0, score)
        kept = self._shares.get(slot.name)
        if kept is None or changed is None:
            kept = self._shares[slot.name] = (
                {key: at for at, (key, _) in enumerate(scored)},
                [divide(remaining[key], capacity) for key, capacity in scored])
        else:
            places, shares = kept
            for key in changed:
                at = places.get(key)
                if at is not None:
                    shares[at] = divide(remaining[key], scored[at][1])
        # The same additions, in the same order and context, in C.
        saved = decimal.getcontext()
        decimal.setcontext(SHARES)
        try:
            return (0, sum(kept[1], ZERO))
        finally:
            decimal.setcontext(saved)

    def _kinds(self, slot: _Slot) -> Tuple[int, int, Tuple[Tuple[str, Decimal], ...]]:
        """How many resources of ``slot`` its capacity puts below zero (wards,
        shortcomings) and at zero (tags), and its resources of positive,
        finite capacity, in its order. Cost: O(R), then O(1) for the node."""
        kinds = self._counted.get(slot.name)
        if kinds is None:
            resources = slot.node.resources.items()
            kinds = self._counted[slot.name] = (
                sum(1 for _, capacity in resources if capacity < ZERO),
                sum(1 for _, capacity in resources if capacity == ZERO),
                tuple((key, capacity) for key, capacity in resources
                      if ZERO < capacity < INFINITY))
        return kinds

    def _index_order(self) -> NodeOrder:
        return _RoomOrder(self)

    def _index_key(self, slot: _Slot, changed: Optional[Iterable[str]] = None) -> Any:
        number = self._sequence_numbers.get(slot.name)
        if number is None:
            self._joined_count += 1
            number = self._sequence_numbers[slot.name] = self._joined_count
        below, tags, _ = self._kinds(slot)
        flag, score = self._room(slot, changed)
        # The score's nearest float before it: the order is the same (that
        # conversion never reverses two decimals) and most comparisons end
        # on the floats.
        return (-below, tags, flag, float(score), score, number)

    def _order(self) -> Sequence[_Slot]:
        return sorted(self._slots.values(), key=self._index_key)

    def _sequence(self, workloads: List[Workload]) -> List[Workload]:
        ranks = self._ranks(workloads)
        order = sorted(range(len(workloads)), key=ranks.__getitem__, reverse=True)
        return [workloads[place] for place in order]

    def _ranks(self, workloads: List[Workload]) -> List[int]:
        """The rank of each workload's dominant share among the call's
        (larger share, larger rank). Cost: O(W x R + F log F) for F flavours."""
        scale = self._scale
        if scale is None:
            scale = self._measure()
        # Workloads come in a few flavours: each is measured once, and the
        # sort compares small integers (the rank of a share), not fractions.
        flavours: Dict[Tuple[Tuple[str, Decimal], ...], int] = {}
        firsts: List[Workload] = []
        keys = []
        for load in workloads:
            flavour = tuple(load.requirements.items())
            found = flavours.get(flavour)
            if found is None:
                found = flavours[flavour] = len(firsts)
                firsts.append(load)
            keys.append(found)
        rank = share_ranks(firsts, scale)
        return [rank[found] for found in keys]

    def _assign(self, loads: List[Workload], all_or_nothing: bool) -> Dict[str, Optional[str]]:
        result: Dict[str, Optional[str]] = {load.name: None for load in loads}
        ranks = self._ranks(loads)
        largest = sorted(range(len(loads)), key=ranks.__getitem__, reverse=True)
        # All or nothing: a trial gives up at its first miss. Otherwise the
        # second trial gives up once it has missed as many as the first: it
        # can then no longer place more.
        before: Dict[str, Dict[str, Decimal]] = {}
        kept, missed, opened = self._trial([loads[place] for place in largest],
                                           1 if all_or_nothing else None, before=before)
        # The second order can place at most the first's misses beyond those
        # a resource forces: not worth a second placement of the call when
        # they are few (all or nothing: when there is any).
        slack = 0 if all_or_nothing else len(loads) // SLACK
        if missed > slack and missed - self._fewest_misses(loads, before, kept,
                                                           missed - slack) > slack:
            smallest = sorted(range(len(loads)), key=ranks.__getitem__)
            # The same order again (all shares equal) would place the same.
            if smallest != largest:
                found = self._instead(loads, kept, [loads[place] for place in smallest],
                                      missed, None, not all_or_nothing)
                if found is not None:
                    kept, missed = found
                elif all_or_nothing:  # neither placed everything: all undone
                    return result
        elif not missed and opened:
            bound = self._fewest_openings(loads, kept, before)
            if opened > bound + bound // SLACK:
                # Everything placed, on more new nodes than needed: the order
                # given mixes workloads of every shape on each node, which
                # largest first does not; it may need fewer.
                found = self._instead(loads, kept, loads, 1, opened)
                if found is not None:
                    kept, missed = found
        if missed and all_or_nothing:
            self._undo(kept)
            return result
        for load, slot in kept:
            result[load.name] = slot.name
        return result

    def _instead(self, loads: List[Workload], kept: List[Tuple[Workload, _Slot]],
                 order: List[Workload], give_up: int, openings: Optional[int],
                 restore: bool = True,
                 ) -> Optional[Tuple[List[Tuple[Workload, _Slot]], int]]:
        """Place the call's ``loads`` again, in ``order``, from the state
        before the call (``kept``: the call's placements so far). The new
        placement stays if it misses fewer than ``give_up`` workloads and,
        when ``openings`` is given, misses none and puts workloads on fewer
        than ``openings`` nodes that held none: then returns it and its
        misses. Otherwise the state is as it was (``kept`` placed; without
        ``restore``, as before the call) and the result is ``None``. Cost: up
        to two placements of the call, or one and a copy of the state when
        the state holds little else."""
        def better(missed: int, opened: int) -> bool:
            if openings is None:
                return missed < give_up
            return not missed and opened < openings
        # The order given (``openings``) mostly wins where it is tried, so it
        # always runs here after undoing the first placement. The second
        # order mostly loses: on a small state, trying it on a copy of the
        # state before the call, and redoing it here only if it wins, is
        # cheaper than undoing.
        if openings is None and len(self._slots) + len(self._where) - len(kept) <= len(kept):
            copy = self._copy_without(loads)
            trial, missed, opened = copy._trial(order, give_up, openings)
            if not better(missed, opened):
                if not restore:
                    self._undo(kept)
                return None
            self._undo(kept)
            placed = [(load, self._slots[slot.name]) for load, slot in trial]
            self._redo(placed)
            return placed, missed
        self._undo(kept)
        second, missed, opened = self._trial(order, give_up, openings)
        if better(missed, opened):
            return second, missed
        self._undo(second)
        if restore:
            self._redo(kept)
        return None

    def _fewest_openings(self, loads: List[Workload], kept: List[Tuple[Workload, _Slot]],
                         before: Mapping[str, Mapping[str, Decimal]]) -> int:
        """How many nodes that held no workload before the call must take
        some of ``loads``, at least (``kept``: the call's placements so far;
        ``before``: what the nodes they changed had left before the call).

        Per resource of :func:`asked_for`: the demand of the workloads
        asking for it, less what the nodes holding workloads before the call
        had left of it (above zero), must come from nodes that held none, at
        least as many of them as it takes to cover it, the largest first.
        The largest such count over the resources; cordoned nodes take
        nothing.
        Cost: O(W x R + C x R) for C nodes the call changed so far, and
        O(N x R + N log N) per resource asked more of than the nodes
        holding workloads had left."""
        asked = asked_for(loads)
        placed = Counter(slot.name for _, slot in kept)
        held = self._room_sums(asked, before, placed)
        # (what the nodes holding workloads had left of a resource mostly
        # covers the call's demand: only the others are read one by one)
        short = {key: needed for key, needed in
                 ((key, sum(needs, ZERO) - held[key]) for key, needs in asked.items())
                 if needed > ZERO}
        fewest = 0
        for key, rooms in self._rooms_before(short, before).items():
            needed = short[key]
            count = 0
            for here in sorted((here for slot, here in rooms
                                if len(slot.workloads) <= placed[slot.name]), reverse=True):
                count += 1
                needed -= here
                if needed <= ZERO:
                    break
            fewest = max(fewest, count)
        return fewest

    def _fewest_misses(self, loads: List[Workload],
                       before: Mapping[str, Mapping[str, Decimal]],
                       kept: Sequence[Tuple[Workload, _Slot]] = (),
                       enough: Optional[int] = None) -> int:
        """How many of ``loads`` find no node in any order, at least, from the
        state before the call (``before``: what the nodes the call changed
        so far had left before it; ``kept``: the call's placements so far).
        With ``enough``, a count of at least ``enough`` may be returned as
        soon as one is known (the caller asks only whether it reaches it):
        the stranded workloads alone, when they are enough.

        The workloads :meth:`_stranded` finds, plus, among the others, per
        resource of :func:`asked_for`: the workloads asking for it can take
        at most what the open nodes have left of it, summed over the nodes
        (a node takes such a workload only while it has as much left, and
        nothing the call places gives any back): at least as many of them
        as must be dropped, largest first, to bring their demand within that
        sum find no node. The largest such count over the resources.
        Cost: O(W x R + W log W + C x R) for C nodes the call changed so
        far, and a ``check_fit`` per node bearing the rare resource of each
        workload left out so far that asks for one."""
        placed = {load.name for load, _ in kept}
        # (a workload asking less than zero of something could give a node room)
        stranded = set() if asks_below_zero(loads) else self._stranded(
            [load for load in loads if load.name not in placed], before)
        fewest = len(stranded)
        if enough is not None and fewest >= enough:
            return fewest
        asked = asked_for([load for load in loads if load.name not in stranded]
                          if stranded else loads)
        most = 0
        lefts = self._room_sums(asked, before)
        for key, needs in asked.items():
            left = lefts[key]
            demand = sum(needs, ZERO)
            if demand <= left:
                continue  # (none dropped: no need to sort)
            dropped = 0
            for needed in sorted(needs, reverse=True):
                if demand <= left:
                    break
                demand -= needed
                dropped += 1
            most = max(most, dropped)
        return fewest + most

    def _stranded(self, candidates: List[Workload],
                  before: Mapping[str, Mapping[str, Decimal]]) -> Set[str]:
        """The names of the workloads of ``candidates`` that ask for a
        resource at most :data:`RARE` nodes have (a node's own tag, say) and
        that none of those nodes could take as the call began (``before``:
        what the nodes the call changed so far had left before it). When no
        workload of the call asks less than zero of anything, such a
        workload finds no node in any order: in a call, nodes only lose room.
        Any node that takes such a workload bears every resource it asks
        for, so the bearers of any one of them decide; the rarest are read.
        Cost: O(W x R + K x A) for W candidates, K classes of the node index
        and A resources asked, and a ``check_fit`` per node bearing the rare
        resource of each candidate that asks for one (O(N x R) for the
        bearers without the index, while a trial is undone in bulk)."""
        wanted = {key for load in candidates for key in load.requirements}
        if not wanted:
            return set()
        index = self._index
        counts: Dict[str, int]
        bearers: Dict[str, List[_Slot]] = {}
        if index is not None:
            counts = {key: index.bearer_count(key) for key in wanted}
        else:
            bearers = {key: [] for key in wanted}
            for slot in self._slots.values():
                for key in slot.node.resources:
                    found = bearers.get(key)
                    if found is not None:
                        found.append(slot)
            counts = {key: len(found) for key, found in bearers.items()}
        stranded = set()
        for load in candidates:
            if not load.requirements:
                continue
            rarest = min(load.requirements, key=counts.__getitem__)
            if counts[rarest] > RARE:
                continue
            rare = bearers.get(rarest)
            if rare is None:
                assert index is not None  # (without it, every list is made above)
                rare = bearers[rarest] = index.bearers(rarest)
            if not any(not slot.cordoned
                       and reason_of(before.get(slot.name, slot.remaining), load) is None
                       for slot in rare):
                stranded.add(load.name)
        return stranded

    def _room_sums(self, keys: Iterable[str], before: Mapping[str, Mapping[str, Decimal]],
                   placed: Optional[Mapping[str, int]] = None) -> Dict[str, Decimal]:
        """Per resource of ``keys``, what the open nodes had left of it
        above zero before the call, summed; with ``placed`` (the call's
        placements per node), only over the nodes that held workloads before
        it. ``before``: the remaining quantities before the call of the
        nodes it changed so far (open, and holding workloads now). Read from
        the sums kept as nodes change, corrected for those nodes.
        Cost: O((C + 1) x R) for C nodes in ``before``, R the fewer of the
        resources asked and a node's own."""
        keys = list(keys)
        wanted = set(keys)
        self._catch_up_room()
        room = (self._open_room if placed is None else self._held_room).part(keys)
        for name, was in before.items():
            slot = self._slots[name]
            now = slot.remaining
            mine = _having(keys, wanted, now)
            room.add({key: now[key] for key in mine if now[key] > ZERO}, -1)
            if placed is None or len(slot.workloads) > placed[name]:
                room.add({key: was[key] for key in mine if was[key] > ZERO}, 1)
        return {key: room.total(key) for key in keys}

    def _rooms_before(self, keys: Iterable[str], before: Mapping[str, Mapping[str, Decimal]],
                      ) -> Dict[str, List[Tuple[_Slot, Decimal]]]:
        """Per resource of ``keys``, each open node that has it with what it
        had left of it before the call (``before``: the remaining quantities
        before the call of the nodes it changed so far), where that was
        above zero. Cost: O(N x R), R the fewer of ``keys`` and a node's own
        resources (a call asking for thousands of hostname tags reads each
        node's few), nothing without ``keys``."""
        keys = list(keys)
        rooms: Dict[str, List[Tuple[_Slot, Decimal]]] = {key: [] for key in keys}
        if not keys:
            return rooms
        # (more names than a few: each node's own read where they are fewer)
        wanted = set(keys) if len(keys) > FEW_KEYS else None
        for slot in self._slots.values():
            if not slot.cordoned:
                remaining = before.get(slot.name, slot.remaining)
                for key in keys if wanted is None else _having(keys, wanted, remaining):
                    found = remaining.get(key)
                    if found is not None and found > ZERO:
                        rooms[key].append((slot, found))
        return rooms

    def _copy_without(self, loads: List[Workload]) -> "BestFitDistributor":
        """A new distributor in this one's state less ``loads``: the same
        nodes in the same order and cordons, the other workloads on the same
        nodes. Cost: O((N + placed workloads) x R log N)."""
        copy = type(self)([slot.node for slot in self._slots.values()], self._rubric)
        for slot in self._slots.values():
            if slot.cordoned:
                copy._cordon(copy._slots[slot.name], True)
        leaving = {load.name for load in loads}
        for name, slot in self._where.items():
            if name not in leaving:
                copy._put(slot.workloads[name], copy._slots[slot.name])
        return copy

    def _trial(self, order: List[Workload], give_up: Optional[int],
               openings: Optional[int] = None,
               before: Optional[Dict[str, Dict[str, Decimal]]] = None,
               ) -> Tuple[List[Tuple[Workload, _Slot]], int, int]:
        """Place ``order`` one by one, each on the node :meth:`_choose` picks;
        stop once ``give_up`` workloads (if given) found no node, or once
        ``openings`` (if given) nodes that held no workload took one. Returns
        the placements made, in order, how many workloads found no node and
        how many nodes that held none took one. ``before``, if given, gets
        the remaining quantities each node taking a workload had before its
        first."""
        placed = []
        missed = opened = 0
        run = _Pass(self._index, self._dominance) if self._index is not None else None
        for load in order:
            slot = self._choose(load, run)
            if slot is None:
                missed += 1
                if missed == give_up:
                    break
                continue
            if not slot.workloads:
                opened += 1
            if run is not None:
                run.took(load, slot)
            if before is not None and slot.name not in before:
                before[slot.name] = dict(slot.remaining)
            self._place(load, slot)
            placed.append((load, slot))
            if opened == openings:
                break
        return placed, missed, opened

    def _undo(self, placed: List[Tuple[Workload, _Slot]]) -> None:
        """Take back ``placed`` (a trial's placements), last first: the nodes
        and their order are then exactly as before the trial."""
        with self._unindexed(len(placed)):
            for load, _ in reversed(placed):
                self._unplace(load.name)

    def _redo(self, placed: List[Tuple[Workload, _Slot]]) -> None:
        """Make ``placed`` (a trial's placements, taken back) again, in order."""
        with self._unindexed(len(placed)):
            for load, slot in placed:
                self._place(load, slot)

    @contextlib.contextmanager
    def _unindexed(self, changes: int) -> Iterator[None]:
        """Make ``changes`` placements or removals of workloads: with the
        node index set aside and built again afterwards, when they are more
        than the nodes (building it costs less than moving each node in it
        once per change), else through it."""
        index = self._index
        if index is None or changes <= len(self._slots):
            yield
            return
        self._index = None
        try:
            yield
        finally:
            self._index = self._indexed_again()
            self._index.keep_columns_of(index)

    def _measure(self) -> Dict[str, Fraction]:
        """The scale of dominant shares (:func:`largest_capacities`), made
        from every node and kept as nodes join and leave. O(N x R)."""
        largest = self._largest = _largest(slot.node.resources for slot in self._slots.values())
        self._at_largest = Counter(key for slot in self._slots.values()
                                   for key, capacity in slot.node.resources.items()
                                   if capacity == largest[key])
        self._scale = {key: Fraction(capacity) for key, capacity in largest.items()
                       if ZERO < capacity < INFINITY}
        return self._scale

    def _joined(self, slot: _Slot) -> None:
        # (the scale follows, O(R): nodes often join one at a time)
        scale = self._scale
        if scale is None:
            return
        largest, at = self._largest, self._at_largest
        for key, capacity in slot.node.resources.items():
            was = largest.get(key)
            if was is None or capacity > was:
                largest[key] = capacity
                at[key] = 1
                if ZERO < capacity < INFINITY:
                    scale[key] = Fraction(capacity)
                else:
                    scale.pop(key, None)
            elif capacity == was:
                at[key] += 1

    def _leaving(self, slot: _Slot) -> None:
        # (the scale stays unless the node had the largest capacity of some
        # resource alone: then it is made again when next needed)
        if self._scale is not None:
            largest, at = self._largest, self._at_largest
            for key, capacity in slot.node.resources.items():
                if capacity == largest[key]:
                    at[key] -= 1
                    if not at[key]:
                        self._scale = None
                        break
        self._counted.pop(slot.name, None)
        self._shares.pop(slot.name, None)
        self._sequence_numbers.pop(slot.name, None)

    def _rolled_back(self) -> None:
        # (a node that joined in the undone call is gone, one that left is
        # back at its place in join order: the numbers that break ties are
        # given again in that order, and what was kept per node name, and
        # the sums of room, are made afresh from the nodes as they are)
        self._scale = None
        self._counted.clear()
        self._shares.clear()
        self._sequence_numbers = {name: number for number, name in enumerate(self._slots, 1)}
        self._joined_count = len(self._slots)
        self._open_room = _Room()
        self._held_room = _Room()
        self._room_marks.clear()

    def _catch_up_room(self) -> None:
        """Bring the sums of room up to date: the mark of each node changed
        since taken out, and the node, if still here and open, counted as it
        is now. O(R) a node changed since the last catch-up."""
        changed = self._changed_nodes
        assert changed is not None  # (BestFit logs them)
        marks, slots = self._room_marks, self._slots
        for name in changed:
            mark = marks.pop(name, None)
            if mark is not None:
                self._count_room(mark, -1)
            slot = slots.get(name)
            if slot is not None and not slot.cordoned:
                mark = marks[name] = (bool(slot.workloads),
                                      {key: here for key, here in slot.remaining.items()
                                       if here > ZERO})
                self._count_room(mark, 1)
        changed.clear()

    def _count_room(self, mark: Tuple[bool, Dict[str, Decimal]], sign: int) -> None:
        held, rooms = mark
        self._open_room.add(rooms, sign)
        if held:
            self._held_room.add(rooms, sign)

    def _settings(self) -> Dict[str, Any]:
        if self._rubric is None:
            return {}
        return {"rubric": {key: to_json_quantity(weight)
                           for key, weight in self._rubric.weights.items()}}

    @classmethod
    def _restore(cls, snapshot: Mapping[str, Any], nodes: List[Node]) -> "Distributor":
        if snapshot.get("rubric") is None:  # (no rubric: left out, or null)
            return cls(nodes)
        rubric = _field(snapshot, "rubric", Mapping, "snapshot")
        return cls(nodes, {key: from_json_quantity(value, json_path("snapshot: rubric", key),
                                                   finite=True, decimal_strings=True)
                           for key, value in rubric.items()})


class _RoomOrder:
    """The node index's order for BestFit: the distributor's own node key."""

    __slots__ = ("owner",)

    def __init__(self, owner: BestFitDistributor):
        self.owner = owner

    def key(self, slot: Any) -> Any:
        return self.owner._index_key(slot)

    def after(self, slot: Any, before: Mapping[str, Decimal]) -> Any:
        # (a share score rounds: it has no exact increment, so it is added
        # up afresh, from the shares of the resources ``before`` names
        # divided again)
        return self.owner._index_key(slot, before)
