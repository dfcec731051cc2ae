"""Elastic planning: how many nodes to add for pending work, and which nodes to give back.

Both planners answer by simulation. They copy the distributor they are asked
about (:meth:`~pylighthouse.Distributor.to_dict`, then
:meth:`~pylighthouse.Distributor.from_dict`, once; each trial is made on
that copy and undone) and call the copy's own methods, so a plan follows
the distributor's strategy and the one fit rule exactly, and the
distributor itself is never changed.
"""
import functools
import math
from collections import Counter
from collections.abc import Mapping as MappingABC
from decimal import Decimal
from fractions import Fraction
from typing import (Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Set,
                    Tuple, TypeVar, Union, cast)

import attr

from .bestfit import dominant_share, largest_capacities
from .distributors import Distributor, NodeState, PrioritizedDistributor
from .errors import (InvalidInputError, InvalidTypeError, LighthouseException, counted,
                     shown)
from .explain import RefusalTally
from .fit import check_fit, reason_of
from .model import Node, Workload, _build_all, _quick_workload, check_fields, check_name
from .quantities import ZERO, exactly, made_quantity, quantity_text, to_number, to_quantity

__all__ = ["plan_scale_up", "plan_scale_down", "ScaleUpPlan", "ScaleDownPlan",
           "lower_bound"]

#: The name prefix of new nodes made from a dict template that gives none.
DEFAULT_PREFIX = "node"

TemplateLike = Union[Node, Mapping[str, Any]]
Mix = Tuple[int, ...]  # template positions, in the order their nodes are added


_Planner = TypeVar("_Planner", bound=Callable[..., Any])


def _holding_its_lock(planner: _Planner) -> _Planner:
    """Run ``planner`` with its distributor's lock held throughout: other
    threads' calls on that distributor wait, and the plan sees one state."""
    @functools.wraps(planner)
    def run(distributor: Any, *args: Any, **kwargs: Any) -> Any:
        if not isinstance(distributor, Distributor):
            raise InvalidTypeError(
                f"distributor: expected a Distributor, got {type(distributor).__name__}")
        with distributor._lock:
            return planner(distributor, *args, **kwargs)
    return cast(_Planner, run)


# ------------------------------------------------------------------ plans

@attr.s(frozen=True, auto_attribs=True, kw_only=True)
class ScaleUpPlan:
    """What :func:`plan_scale_up` advises: nodes to create and where the work goes.

    ``new_nodes`` are the nodes to create, in the order to add them;
    ``order`` names every pending workload, in the order to submit them (the
    order they were given, or largest first when that needs fewer nodes);
    ``assignments`` maps every pending workload that would be placed to its
    node (an existing node or a new one), in that order; ``unplaceable``
    maps every other pending workload to the reason it would stay pending,
    in that order too; ``cost`` is the summed cost of the new nodes.

    Apply a plan with ``add_nodes(plan.new_nodes)`` then
    ``attempt_assign_loads`` on the pending workloads arranged as
    ``plan.order`` says; the placements are then exactly ``assignments``.
    """

    new_nodes: List[Node]
    order: List[str]
    assignments: Dict[str, str]
    unplaceable: Dict[str, str]
    cost: Any

    def to_dict(self) -> Dict[str, Any]:
        """Return the plan as plain data (nodes as :meth:`Node.to_dict` gives them)."""
        return {"new_nodes": [node.to_dict() for node in self.new_nodes],
                "order": list(self.order),
                "assignments": dict(self.assignments),
                "unplaceable": dict(self.unplaceable),
                "cost": self.cost}

    def __str__(self) -> str:
        lines = _section("add", "node", [f"{node.name} {_resources(node)}"
                                         for node in self.new_nodes],
                         f" (cost {self.cost})")
        lines += _section("place", "workload", [f"{load} -> {node}" for load, node
                                                in self.assignments.items()])
        if self.unplaceable:
            lines += _section("leave", "workload", [f"{load}: {why}" for load, why
                                                    in self.unplaceable.items()], " pending")
        return "\n".join(lines)


@attr.s(frozen=True, auto_attribs=True, kw_only=True)
class ScaleDownPlan:
    """What :func:`plan_scale_down` advises: nodes to give back and the moves it takes.

    ``removable`` names the nodes to remove, in the order to remove them;
    ``moves`` maps every workload that changes node to the node it ends on
    (a workload moved twice is listed once, with its last node); ``kept``
    maps every other node to the reason it has to stay.
    """

    removable: List[str]
    moves: Dict[str, str]
    kept: Dict[str, str]

    def to_dict(self) -> Dict[str, Any]:
        """Return the plan as plain data."""
        return {"removable": list(self.removable), "moves": dict(self.moves),
                "kept": dict(self.kept)}

    def __str__(self) -> str:
        lines = [f"remove {counted(len(self.removable), 'node')}: "
                 f"{', '.join(self.removable)}" if self.removable else "remove no nodes"]
        lines += _section("move", "workload", [f"{load} -> {node}" for load, node
                                               in self.moves.items()])
        if self.kept:
            lines += _section("keep", "node", [f"{node}: {why}" for node, why
                                               in self.kept.items()])
        return "\n".join(lines)


def _section(verb: str, noun: str, rows: List[str], note: str = "") -> List[str]:
    """A heading such as ``place 2 workloads:`` and its rows, indented."""
    if not rows:
        return [f"{verb} no {noun}s"]
    return [f"{verb} {counted(len(rows), noun)}{note}:"] + [f"  {row}" for row in rows]


def _resources(node: Node) -> str:
    return "{" + ", ".join(f"{key} {quantity_text(value)}"
                           for key, value in node.resources.items()) + "}"


# -------------------------------------------------------------- scale up

@attr.s(frozen=True, slots=True, auto_attribs=True)
class _Template:
    """A node shape: the prefix of its nodes' names, its resources and its cost."""

    prefix: str
    shape: Node
    cost: Decimal


@exactly
@_holding_its_lock
def plan_scale_up(distributor: Distributor, pending: Iterable[Any],
                  templates: Union[TemplateLike, Iterable[TemplateLike]],
                  max_new_nodes: Optional[int] = None) -> ScaleUpPlan:
    """Plan the new nodes that would let ``pending`` be placed, and where it would go.

    ``pending`` holds workloads (Workload objects or dicts) that are not
    placed yet. ``templates`` holds the node shapes that can be created: a
    :class:`~pylighthouse.Node` (its name is the prefix of the new nodes'
    names, its cost 1) or a dict with ``resources`` and, optionally, ``name``
    (the prefix, default ``"node"``) and ``cost`` (a number of at least 0,
    default 1). A single template may be given without a list. New nodes are
    named ``<prefix>-1``, ``<prefix>-2``... skipping names already taken.

    The plan places the pending workloads with the distributor's own
    strategy, existing nodes and new nodes together, exactly as
    ``add_nodes(plan.new_nodes)`` followed by ``attempt_assign_loads`` of
    the pending workloads in ``plan.order`` would. Among the sets of new
    nodes it tries it keeps the one that leaves the fewest workloads
    pending, then has the fewest nodes, then the lowest cost.

    When the strategy places workloads in the order they come, at least
    among equals (Prioritized, RoundRobin, BestFit; not BinPack, which sorts
    them itself, ties by name), the search runs
    twice: on the order given and on the workloads largest first. The
    better plan by the same ranking is kept; on a tie, the order given.
    Largest first sorts by dominant share, descending, and keeps the given
    order among equals. A workload's dominant share is the largest fraction
    it needs of any resource, measured against the biggest capacity any
    template has of it; resources whose biggest capacity is zero or
    unlimited do not count.

    A workload that no template could host even when empty does not cause
    any node to be added: it is listed in ``unplaceable`` with the fit
    rule's reason for every template. The exception: one that an open node
    had room for before the plan, and that waits because other pending work
    took that room, gets nodes added for that work when they draw it away
    (then it is placed), and is listed with the planned cluster's
    explanation too when they do not. ``max_new_nodes`` caps the number of
    new nodes; when the plan uses all it allows, the other workloads left
    waiting (not given every template's reason) are listed in
    ``unplaceable`` with ``max_new_nodes=<cap> reached;`` before the
    one-line explanation of the planned cluster (more nodes might place
    them, not always: see the planning docs), and without it otherwise; a
    workload set aside with every template's reason gets the note only
    when the cap cut the nodes tried for the work in its way.
    The distributor is not changed.

    Raises:
        InvalidInputError, InvalidTypeError: a workload, a template or
            ``max_new_nodes`` is malformed, or no template is given.
        DuplicateNameError: a pending name repeats or is already placed.

    Cost: the distributor read once from its snapshot, O(P x R log N) for P
    placed workloads, N nodes and R resources; then every trial places the
    pending workloads on that copy with the trial's new nodes, O(W x N x
    R) at worst for W pending, and undoes it, O(R log N) per node it
    changed; the plan chosen is placed once more on a copy of its own, to
    explain what still waits (O(P x R log N) to copy).
    With one template the trials run from the lower bound
    up to the first count that places everything: one trial per count (a
    few where the work comes in a few sizes; dozens where many workloads of
    their own sizes leave the bound loose), or, for Prioritized with no
    aversion group pending, two trials whatever the count; with several,
    the templates are counted up alone the least lower bound first, and
    none past the fewest nodes a count before it needed to place
    everything (a template whose lower bound is above that is not counted
    at all; the greedy and naive plans stop there too), then
    one trial per node the greedy plan adds (the naive plan needs none
    where one template is the first to host every pending workload, and
    Prioritized with no aversion group pending tries each node of both
    alone on what waits instead, one placement of what waits on one
    empty node), and one per node the trimming pass tries to drop or
    cheapen, but for sets of new nodes that cannot hold the pending
    demand of some resource while nothing waits (BinPack, with templates
    of distinct names, places alike whatever order new nodes join in:
    one trial per count of templates; Prioritized with no aversion group
    pending places, for a trial, only what waited without new nodes, on
    the new nodes alone). Where a
    workload no template hosts waits though an open node had room for it,
    one more trial per template, or, where new nodes place more, about
    log2 of the number of nodes the plan may add. Prioritized and
    RoundRobin do all this for both orders (once if they agree), after an
    O(W x R + W log W) sort.
    """
    shapes = accept_templates(templates)
    limit = _accept_limit(max_new_nodes, "max_new_nodes")
    found = []
    # (named as the caller passed them: "pending[1]", not "workloads[1]")
    loads = _build_all(Workload, pending, "pending", _quick_workload)
    for order in _orders(distributor, loads, shapes):
        search = _Search(distributor, order, shapes)
        found.append((search, search.best(limit)))
    # min keeps the first of equal ranks: on a tie, the caller's order.
    # (Across orders every workload left waiting counts: the ones a search
    # set aside as no template's differ from one order to the other.)
    search, mix = min(found, key=lambda pair: pair[0].rank(pair[1], every=True))
    final, result = search.settle(mix)
    assignments = {name: node for name, node in result.items() if node is not None}
    unplaceable = {}
    for load in search.loads:
        if result[load.name] is not None:
            continue
        capped = limit is not None and len(mix) == limit
        if load.name in search.homeless:
            reason = search.homeless[load.name]
            if load.name in search.stuck:  # (an open node had room for it: see unstick)
                reason = f"{reason}; {final.explain(load)}"
                if capped and search.capped:  # (the cap cut the nodes tried for it)
                    reason = f"max_new_nodes={limit} reached; {reason}"
            unplaceable[load.name] = reason
        elif capped:
            unplaceable[load.name] = f"max_new_nodes={limit} reached; {final.explain(load)}"
        else:
            unplaceable[load.name] = str(final.explain(load))
    return ScaleUpPlan(new_nodes=search.nodes(mix), order=[load.name for load in search.loads],
                       assignments=assignments, unplaceable=unplaceable,
                       cost=to_number(search.cost(mix)))


def _orders(distributor: Distributor, loads: List[Workload],
            templates: List[_Template]) -> List[List[Workload]]:
    """The submission orders worth a search: the caller's, then largest first
    when the strategy does not sort each call itself and the two differ."""
    if distributor._sorts_each_call:
        return [loads]
    largest = _largest_first(loads, templates)
    same = [load.name for load in largest] == [load.name for load in loads]
    return [loads] if same else [loads, largest]


def _largest_first(loads: List[Workload], templates: List[_Template]) -> List[Workload]:
    """``loads`` sorted by dominant share, descending; ties keep their order.

    A workload's dominant share is its largest requirement as a fraction of
    the biggest capacity any template has of that resource, over the
    resources whose biggest capacity is positive and finite (0 if none).
    """
    scale = {key: Fraction(capacity) for key, capacity in _largest_capacities(templates).items()}

    return sorted(loads, key=lambda load: dominant_share(load, scale), reverse=True)


@exactly
@_holding_its_lock
def lower_bound(distributor: Distributor, pending: Iterable[Any],
                templates: Union[TemplateLike, Iterable[TemplateLike]]) -> int:
    """Return a number of new nodes below which ``pending`` cannot all be placed.

    For each resource: the pending demand (of the workloads some node or
    template can host) minus the free room on the existing uncordoned
    nodes and what every pending workload asking less than zero of it could
    give back, divided by the largest capacity any template offers, rounded
    up; the largest of these. Requirements a workload is immune to are not
    counted, as they may overdraw a node. No plan needs fewer new nodes; the
    benchmark measures :func:`~pylighthouse.plan_scale_up` against this number.

    Cost: one placement of ``pending`` on a copy, plus O(W x R).
    """
    search = _Search(distributor, Workload.from_list(pending),
                     accept_templates(templates))
    return search.bound(range(len(search.templates)))


class _Search:
    """Trial placements of the pending workloads on a copy given extra nodes."""

    def __init__(self, distributor: Distributor, loads: List[Workload],
                 templates: List[_Template]):
        # (read once from its snapshot: each trial places the pending work
        # on this one and undoes it, see Distributor._placed_on_trial)
        self.base = Distributor.from_dict(distributor.to_dict())
        self.loads = loads
        self.templates = templates
        self.taken = {node.name for node in distributor.nodes}
        states = distributor.node_states()
        self.free = _free_room(states)
        self._trials: Dict[Mix, Dict[str, Optional[str]]] = {}
        # (BinPack tries nodes by their score, then their name, whatever
        # order they joined in, and new nodes are named per template, each
        # template's numbered in the order they come: with templates of
        # distinct prefixes, every order of a mix makes the same nodes, and
        # its trial places the work alike, so one trial serves them all;
        # see :meth:`_key`)
        self.unordered = distributor.strategy == "BinPack" and \
            len({template.prefix for template in templates}) == len(templates)
        # (per mix: the hostable workloads it leaves waiting, all of them,
        # and their names)
        self._missing: Dict[Mix, Tuple[int, int, List[str]]] = {}
        result = self.run(())
        # (every workload waiting without new nodes, in order)
        self.unplaced = [load for load in loads if result[load.name] is None]
        self.homeless = {load.name: self._homeless_reason(load) for load in self.unplaced
                         if not any(self.hosts(index, load)
                                    for index in range(len(templates)))}
        # (and of those, the ones some template hosts)
        self.waiting = [load for load in self.unplaced if load.name not in self.homeless]
        # (of those, the ones an open node could take with the room it has
        # now: they wait because other pending work took that room first,
        # which new nodes may draw away; see :meth:`unstick`)
        rooms = ((load.name, [state.name for state in states if not state.cordoned
                              and check_fit(state.remaining, load) is None])
                 for load in loads if load.name in self.homeless)
        # (per such workload, the open nodes that had room for it)
        self.stuck: Dict[str, List[str]] = {name: where for name, where in rooms if where}
        # (whether the cap cut the nodes :meth:`unstick` would have tried)
        self.capped = False
        # (new nodes join last and Prioritized takes the first node where a
        # workload fits: with no aversion group pending, a new node takes,
        # of what waits without it, what it would take alone; see
        # :meth:`grow` and :meth:`leap`)
        self.joins_last = self.base.strategy == "Prioritized" \
            and not any(load.aversion_groups for load in loads)
        self._needs = _needs(loads, self.homeless, self.free)

    # ------------------------------------------------------------ trials

    def nodes(self, mix: Sequence[int]) -> List[Node]:
        """The new nodes of ``mix``, named from their templates, clashing with no name."""
        used = set(self.taken)
        numbers: Dict[str, int] = {}
        nodes = []
        for index in mix:
            template = self.templates[index]
            number = numbers.get(template.prefix, 0) + 1
            while f"{template.prefix}-{number}" in used:
                number += 1
            numbers[template.prefix] = number
            name = f"{template.prefix}-{number}"
            used.add(name)
            nodes.append(Node(name, template.shape.resources))
        return nodes

    def _key(self, mix: Sequence[int]) -> Mix:
        """What a trial of ``mix`` is known by: the mix, or, where the
        order of the new nodes makes no difference (:attr:`unordered`), the
        mix sorted, so that the trimming pass, which swaps one node at a
        time for a cheaper template, tries each count of templates once,
        not once per place of the node swapped. O(M log M) for M nodes."""
        return tuple(sorted(mix)) if self.unordered else tuple(mix)

    def run(self, mix: Sequence[int]) -> Dict[str, Optional[str]]:
        """Where the pending workloads go once the nodes of ``mix`` join:
        placed on the copy read once, then undone (see
        Distributor._placed_on_trial)."""
        key = self._key(mix)
        if key not in self._trials:
            # Only the latest trial is kept: the counts the search compares
            # are remembered in _missing.
            self._trials = {key: self.base._placed_on_trial(self.nodes(key), self.loads)}
        return self._trials[key]

    def settle(self, mix: Sequence[int]) -> Tuple[Distributor, Dict[str, Optional[str]]]:
        """A copy given the nodes of ``mix``, and the pending workloads
        placed on it (to explain what still waits)."""
        copy = self.base._replica()
        copy.add_nodes(self.nodes(mix))
        return copy, copy.attempt_assign_loads(self.loads)

    def missing(self, mix: Sequence[int], every: bool = False) -> int:
        """How many hostable pending workloads ``mix`` leaves unplaced; with
        ``every``, how many pending workloads, hostable or not."""
        hostable, pending, _ = self._left(mix)
        return pending if every else hostable

    def left_by(self, mix: Sequence[int]) -> List[str]:
        """The names of the pending workloads ``mix`` leaves unplaced."""
        return self._left(mix)[2]

    def _left(self, mix: Sequence[int]) -> Tuple[int, int, List[str]]:
        """What a trial of ``mix`` leaves waiting (see :attr:`_missing`),
        found once per mix."""
        key = self._key(mix)
        if key not in self._missing:
            if self.joins_last and key:
                waiting = self.left_on_new(key)
            else:
                result = self.run(key)
                waiting = [load.name for load in self.loads if result[load.name] is None]
            self._missing[key] = (sum(1 for name in waiting if name not in self.homeless),
                                  len(waiting), waiting)
        return self._missing[key]

    def left_on_new(self, mix: Mix) -> List[str]:
        """The names of the pending workloads that the nodes of ``mix`` leave
        waiting, where new nodes join last and take what waits
        (:attr:`joins_last`): what waited without new nodes, placed, in
        its order, on the new nodes alone. Prioritized takes the first
        node in join order where a workload fits, so a workload that found
        an existing node without new nodes finds the same one (the nodes
        before it are in the same state when it comes), and one that found
        none meets the new nodes as the workloads before it that waited
        left them. The same count as a trial on the whole cluster, for the
        cost of placing what waits on the new nodes. O(W x M x R) at
        worst for W waiting workloads and M new nodes."""
        taken = PrioritizedDistributor(self.nodes(mix)).attempt_assign_loads(self.unplaced)
        return [load.name for load in self.unplaced if taken[load.name] is None]

    def cost(self, mix: Sequence[int]) -> Decimal:
        return sum((self.templates[index].cost for index in mix), ZERO)

    def rank(self, mix: Sequence[int], every: bool = False) -> Tuple[int, int, Decimal]:
        """Better plans rank lower: fewer left pending, fewer nodes, lower
        cost. Pending counts the hostable workloads left waiting; with
        ``every``, all of them (to compare the plans of two searches)."""
        return self.missing(mix, every), len(mix), self.cost(mix)

    def hosts(self, index: int, load: Workload) -> bool:
        """Whether an empty node of template ``index`` would take ``load``."""
        return reason_of(self.templates[index].shape.resources, load) is None

    def _homeless_reason(self, load: Workload) -> str:
        reasons = "; ".join(f"{template.prefix}: {reason_of(template.shape.resources, load)}"
                            for template in self.templates)
        return f"no template can host it ({reasons})"

    # ------------------------------------------------------------ search

    def best(self, limit: Optional[int]) -> Mix:
        """The best mix found within ``limit`` new nodes."""
        if limit == 0 or not (self.waiting or self.stuck):
            if limit == 0 and self.stuck:
                self.unstick((), 0)  # (for :attr:`capped` only)
            return ()
        # One new node per hostable pending workload is enough in practice.
        # Not one per waiting workload: new nodes can draw workloads away
        # from existing ones (RoundRobin's cursor passes them), so a plan may
        # need more new nodes than workloads that waited without them.
        hostable = len(self.loads) - len(self.homeless)
        ceiling = hostable if limit is None else min(limit, hostable)
        candidates: List[Mix] = []
        if self.waiting:
            candidates = self.each_alone(ceiling)
            if len(self.templates) > 1:
                # (a greedy plan with more nodes than one that places
                # everything is not the best: each stops there, see
                # :meth:`capped_at`)
                candidates.append(self.grow(self.capped_at(candidates, ceiling),
                                            self.most_taken))
                candidates.append(self.grow(self.capped_at(candidates, ceiling),
                                            self.first_host))
                candidates = [self.trim(min(candidates, key=self.rank))]
        # (no new node at all, when none leaves fewer waiting: nodes that
        # only change which workload waits are not worth buying)
        return self.unstick(min([(), *candidates], key=self.rank), ceiling)

    def unstick(self, mix: Mix, ceiling: int) -> Mix:
        """``mix``, or more nodes if they place workloads that no template
        could host and that wait in the trial of ``mix`` though an open node
        had room for them as the plan began (``stuck``): other pending work
        took that room, and new nodes may draw it away.

        Per template that can host some pending workload, ``mix`` is given
        as many more nodes as ``ceiling`` allows (one a hostable workload, as
        many as any plan has): if that places no more workloads than
        ``mix``, no count of the template is taken (one trial); else the
        fewest that leave as few waiting are searched for by halving (the
        fewest where more nodes never leave more waiting; RoundRobin's
        cursor can make a count in between place less, and halving may then
        settle above the fewest). The best by (every workload waiting,
        nodes, cost) is kept, ``mix`` on a tie. O(log C) trials per template
        for C nodes allowed, one where new nodes do not help. Where the cap
        keeps ``ceiling`` below one node a hostable workload, sets
        :attr:`capped` if that many would have placed a stuck workload (one
        more trial).
        """
        if not self.stuck:
            return mix
        result = self.run(mix)
        waiting = [name for name in self.stuck if result[name] is None]
        if not waiting:
            return mix
        room = ceiling - len(mix)
        hostable = len(self.loads) - len(self.homeless)
        best = mix
        for index in range(len(self.templates)):
            if not any(self.hosts(index, load) for load in self.loads):
                continue
            if room < hostable - len(mix) and not self.capped:
                # (the cap cuts them: say so if the nodes cut would place one)
                freed = self.run(mix + (index,) * (hostable - len(mix)))
                self.capped = any(freed[name] is not None for name in waiting)
            if room <= 0:
                continue
            goal = self.missing(mix + (index,) * room, True)
            if goal >= self.missing(mix, True):
                continue  # (new nodes of this template place nothing more)
            # (by halving: ``fewer`` nodes leave more waiting, ``enough`` do not)
            fewer, enough = 0, room
            while enough - fewer > 1:
                middle = (fewer + enough) // 2
                if self.missing(mix + (index,) * middle, True) <= goal:
                    enough = middle
                else:
                    fewer = middle
            best = min(best, mix + (index,) * enough,
                       key=lambda chosen: self.rank(chosen, every=True))
        return best

    def capped_at(self, plans: List[Mix], ceiling: int) -> int:
        """``ceiling``, or fewer: the fewest nodes of ``plans`` (plans
        tried) that place everything, if some do. A plan that adds nodes
        one at a time (:meth:`grow`, :meth:`count_up`) makes the same
        nodes whatever its ceiling until it reaches it; stopped there, it
        leaves work waiting, and ranks below such a plan as the plan it
        would have gone on to does. O(P) for P plans, their trials known."""
        done = [len(mix) for mix in plans if not self.missing(mix)]
        return min([ceiling, *done])

    def each_alone(self, ceiling: int) -> List[Mix]:
        """:meth:`count_up` for each template that hosts every waiting
        workload, in template order, but for those whose plan could not be
        the best of them.

        The plans are ranked by what they leave waiting, then by their
        number of nodes: once one template's count places everything, no
        other can do better with more nodes. So the templates are counted
        up the fewest nodes they could need first (their lower bound, the
        earlier template first among equals); each count that places
        everything caps the counts of the templates after it, and a
        template whose lower bound is above that cap is not counted at
        all. A capped count finds the same plan as an uncapped one when
        that plan has at most the cap's nodes, and otherwise a plan that
        leaves work waiting: in both cases the best of them, the first in
        template order among equals, is the one the uncapped counts give.
        (With three templates of 8, 16 and 32 cpu, the two smaller ones,
        whose counts start at two and four times the larger one's, are
        not tried at all where the larger one's count places everything.)
        Cost: O(T x R) for the bounds, then :meth:`count_up`'s trials."""
        hosting = [index for index in range(len(self.templates))
                   if all(self.hosts(index, load) for load in self.waiting)]
        bounds = {index: self.bound([index]) for index in hosting}
        found: Dict[int, Mix] = {}
        for index in sorted(hosting, key=lambda index: (bounds[index], index)):
            cap = self.capped_at(list(found.values()), ceiling)
            if cap < ceiling and bounds[index] > cap:
                continue  # (it needs more nodes than a plan that places everything)
            found[index] = self.count_up(index, cap)
        return [found[index] for index in hosting if index in found]

    def count_up(self, index: int, ceiling: int, leap: bool = True) -> Mix:
        """Nodes of one template only: the fewest that place everything.

        Counts below the lower bound cannot work, so the first count that
        places everything, searching up from the bound, is the smallest.
        Where nodes are tried in join order and no pending workload has an
        aversion group, the count is found from two trials instead of one
        per count (see :meth:`leap`; ``leap=False`` tries every count, as
        the other strategies do).
        """
        start = min(max(self.bound([index]), 1), ceiling)
        if leap and start < ceiling and self.joins_last:
            found = self.leap(index, start, ceiling)
            if found is not None:
                return found
        tried = []
        for count in range(start, ceiling + 1):
            mix = (index,) * count
            if not self.missing(mix):
                return mix
            tried.append(mix)
        return min(tried, key=self.rank)

    def leap(self, index: int, start: int, ceiling: int) -> Optional[Mix]:
        """:meth:`count_up` for Prioritized with no aversion group pending:
        the mix the count from ``start`` up to ``ceiling`` would choose,
        found from what ``start`` nodes leave waiting (:meth:`left_by`), one
        placement of it, and one check (:meth:`missing`, a placement on the
        new nodes alone: see :meth:`left_on_new`; ``None`` if the check
        fails: the caller then counts up).

        Prioritized takes the first node in join order where a workload
        fits, and new nodes join last. With more new nodes than ``start``,
        every workload that found a node in the trial of ``start`` finds
        the same node (the nodes before it are in the same state when it
        comes, and it fits there first), and the others meet those nodes
        as they were when they found none there: they go, in their order,
        to the first of the nodes past ``start`` where they fit, as they
        would on a cluster of those nodes alone. So placing them once on
        ``ceiling - start`` fresh nodes of the template tells, for every
        count, what waits: the count choosing the last node that a
        hostable workload went to is the first that leaves the fewest
        waiting. (An aversion group breaks this: a workload that found
        only nodes hosting its group would take a new node instead.)
        O(P + W x N x R) for the trial of ``start`` nodes (that of
        :meth:`missing`, known) and for the check.
        """
        mix = (index,) * start
        if not self.missing(mix):
            return mix
        stayed = set(self.left_by(mix))
        left = [load for load in self.loads if load.name in stayed]
        fresh = self.nodes((index,) * ceiling)[start:]
        placed = PrioritizedDistributor(fresh).attempt_assign_loads(left)
        at = {node.name: number for number, node in enumerate(fresh, 1)}
        hosts = [placed[load.name] for load in left if load.name not in self.homeless]
        used = max((at[node] for node in hosts if node is not None), default=0)
        mix = (index,) * (start + used)
        waiting = hosts.count(None)
        return mix if self.missing(mix) == waiting else None

    def grow(self, ceiling: int, pick: Any, shortcuts: bool = True) -> Mix:
        """Add one node at a time, of the template ``pick`` chooses, placing
        everything again after each, until nothing hostable waits.

        Two shortcuts choose the same nodes (``shortcuts=False`` takes
        neither). Where new nodes join last and take what waits (see
        :attr:`joins_last`), each new node is tried alone on what waits
        before it instead: Prioritized gives every workload that the nodes
        before it took the same node again (they are in the same state
        when it comes), and each other workload meets the new node in the
        state the workloads before it that waited left it: one placement
        of what waits per node added, on one empty node, not one of
        everything on the whole cluster. Else, where ``pick`` is
        :meth:`first_host` and one template is the first to host every
        hostable pending workload, the next node is of that template
        whatever waits, and a set of new nodes that cannot hold the work
        (:meth:`short`) needs no trial to say that something waits.
        """
        mix: Mix = ()
        if shortcuts and self.joins_last:
            waiting = self.unplaced
            while len(mix) < ceiling:
                left = [load for load in waiting if load.name not in self.homeless]
                index = pick(left) if left else None
                if index is None:
                    break
                mix += (index,)
                alone = Node("probe", self.templates[index].shape.resources)
                taken = PrioritizedDistributor([alone]).attempt_assign_loads(waiting)
                waiting = [load for load in waiting if taken[load.name] is None]
            return mix
        constant = self.same_first_host if shortcuts and pick == self.first_host else None
        if constant is not None:
            while len(mix) < ceiling and (self.short(mix) or self.missing(mix)):
                mix += (constant,)
            return mix
        while len(mix) < ceiling:
            result = self.run(mix)
            left = [load for load in self.loads
                    if result[load.name] is None and load.name not in self.homeless]
            index = pick(left) if left else None
            if index is None:  # (nothing waiting that a new node could take)
                break
            mix += (index,)
        return mix

    @functools.cached_property
    def same_first_host(self) -> Optional[int]:
        """The template :meth:`first_host` picks whichever workload waits,
        when that is one template; else ``None``. (A workload an open node
        took without new nodes is not set aside even when no template
        hosts it: where there is one, the pick may be none.)
        O(W x T x R), once."""
        firsts = {next((index for index in range(len(self.templates))
                        if self.hosts(index, load)), None)
                  for load in self.loads if load.name not in self.homeless}
        return firsts.pop() if len(firsts) == 1 else None

    def first_host(self, left: List[Workload]) -> Optional[int]:
        """The first template that can host the first workload still waiting
        that some template can host (``None`` if none can: a workload that
        an existing node took without new nodes may wait with them, and no
        template have what it asks)."""
        for load in left:
            for index in range(len(self.templates)):
                if self.hosts(index, load):
                    return index
        return None

    def most_taken(self, left: List[Workload]) -> int:
        """The template one empty node of which takes the most waiting workloads
        (ties: the cheaper, then the earlier template)."""
        def taken(index: int) -> Tuple[int, Decimal, int]:
            probe = PrioritizedDistributor([Node("probe", self.templates[index].shape.resources)])
            placed = sum(1 for node in probe.attempt_assign_loads(left).values() if node)
            return -placed, self.templates[index].cost, index
        return min(range(len(self.templates)), key=taken)

    def trim(self, mix: Mix, prove: bool = True) -> Mix:
        """Drop nodes, then swap nodes for cheaper templates, while no more
        workloads are left pending; repeat until neither helps.

        While nothing hostable waits, a smaller or cheaper set whose room
        cannot hold the pending demand of some resource (:meth:`short`)
        is passed over without a trial: it would leave a workload waiting.
        (``prove=False`` tries every one: the same sets are kept.)"""
        while True:
            missing = self.missing(mix)

            def holds(trial: Mix) -> bool:
                if prove and not missing and self.short(trial):
                    return False
                return self.missing(trial) <= missing

            better = next((trial for trial in self._smaller(mix) if holds(trial)), None)
            if better is None:
                better = next((trial for trial in self._cheaper(mix) if holds(trial)), None)
            if better is None:
                return mix
            mix = better

    def short(self, mix: Mix) -> bool:
        """Whether the new nodes of ``mix`` and the room the open nodes have
        now cannot hold every hostable pending workload, on some resource:
        a workload not immune to a resource takes a node only where its
        requirement leaves the node at least zero, so what such workloads
        ask of it, placed anywhere, is at most the room above zero of the
        nodes that can take work, plus what every pending workload asking
        less than zero could give back. Exact (fractions). O(T x R) for T
        templates in ``mix`` and R resources asked."""
        counts = Counter(mix)
        for key, (demand, room) in self._needs.items():
            for index, count in counts.items():
                capacity = self.templates[index].shape.resources.get(key, ZERO)
                if capacity == math.inf:
                    break
                if capacity > 0:
                    room += count * Fraction(capacity)
            else:
                if demand > room:
                    return True
        return False

    def _smaller(self, mix: Mix) -> Iterable[Mix]:
        """``mix`` without the last node of one template, dearest template first."""
        for index in sorted(set(mix), key=lambda i: (-self.templates[i].cost, i)):
            position = len(mix) - 1 - mix[::-1].index(index)
            yield mix[:position] + mix[position + 1:]

    def _cheaper(self, mix: Mix) -> Iterable[Mix]:
        """``mix`` with one node made of a cheaper template, cheapest first."""
        by_cost = sorted(range(len(self.templates)), key=lambda i: (self.templates[i].cost, i))
        for position in reversed(range(len(mix))):
            for index in by_cost:
                if self.templates[index].cost < self.templates[mix[position]].cost:
                    yield mix[:position] + (index,) + mix[position + 1:]

    # ------------------------------------------------------- lower bound

    def bound(self, indexes: Iterable[int]) -> int:
        """The per-resource lower bound on new nodes of the templates
        ``indexes``: what hostable pending work asks of a resource beyond
        the room :meth:`short` counts (the open nodes' room above zero and
        what every pending workload asking less than zero gives back),
        over the largest capacity of the templates, rounded up."""
        largest = _largest_capacities(self.templates[index] for index in indexes)
        nodes = 0
        for key, (wanted, room) in self._needs.items():
            capacity = largest.get(key)
            if capacity is not None and wanted > room:
                nodes = max(nodes, math.ceil((wanted - room) / Fraction(capacity)))
        return nodes


def _largest_capacities(templates: Iterable[_Template]) -> Dict[str, Decimal]:
    """Per resource, the largest capacity any of ``templates`` offers, for
    the resources where that is positive and finite (the others cannot
    measure demand)."""
    return largest_capacities(template.shape.resources for template in templates)


def _free_room(states: List[NodeState]) -> Dict[str, Any]:
    """Free room per resource on the uncordoned nodes (infinite room as ``math.inf``)."""
    room: Dict[str, Any] = {}
    for state in states:
        if state.cordoned:
            continue
        for key, left in state.remaining.items():
            if left == math.inf:
                room[key] = math.inf
            elif left > 0 and room.get(key) != math.inf:
                room[key] = room.get(key, Fraction(0)) + _exact(left)
    return room


def _needs(loads: Sequence[Workload], homeless: Mapping[str, str],
           free: Mapping[str, Any]) -> Dict[str, Tuple[Fraction, Fraction]]:
    """Per resource that hostable pending workloads (not in ``homeless``)
    ask more than zero of, not immune to it, and that no open node has
    unlimited (``free``, see :func:`_free_room`): what they ask of it in
    all, and the room that can hold it before new nodes, the open nodes'
    room above zero plus what every pending workload asking less than
    zero of it gives back (see :meth:`_Search.short`)."""
    demand: Dict[str, Fraction] = {}
    back: Dict[str, Fraction] = {}
    for load in loads:
        hostable = load.name not in homeless
        for key, needed in load.requirements.items():
            if needed < 0:
                back[key] = back.get(key, Fraction(0)) - Fraction(needed)
            elif needed > 0 and hostable and key not in load.immunities:
                demand[key] = demand.get(key, Fraction(0)) + Fraction(needed)
    return {key: (wanted, free.get(key, Fraction(0)) + back.get(key, Fraction(0)))
            for key, wanted in demand.items() if free.get(key) != math.inf}


def _exact(number: Any) -> Fraction:
    """A finite number of a node state (made by the library: sums beyond
    the input range included) as an exact fraction."""
    return Fraction(made_quantity(number, "quantity"))


def accept_templates(templates: Any) -> List[_Template]:
    if isinstance(templates, (Node, MappingABC)):
        templates = [templates]
    if isinstance(templates, (str, bytes)) or not isinstance(templates, Iterable):
        raise InvalidTypeError(
            f"templates: expected a list of nodes or dicts, got {type(templates).__name__}")
    accepted = [_template(item, f"templates[{index}]")
                for index, item in enumerate(templates)]
    if not accepted:
        raise InvalidInputError("templates: give at least one node shape")
    return accepted


def _template(item: Any, where: str) -> _Template:
    if isinstance(item, Node):
        return _Template(item.name, item, Decimal(1))
    if not isinstance(item, MappingABC):
        raise InvalidTypeError(
            f"{where}: expected a Node or a dict, got {type(item).__name__}")
    check_fields(item, ("name", "resources", "cost"), where, "template")
    if "resources" not in item:
        raise InvalidInputError(f"{where}: missing field 'resources'")
    prefix = check_name(item.get("name", DEFAULT_PREFIX), where)
    cost = to_quantity(item.get("cost", 1), f"{where}: cost", finite=True)
    if cost < 0:
        raise InvalidInputError(f"{where}: cost must be at least 0, got {to_number(cost)}")
    try:
        shape = Node(prefix, item["resources"])
    except LighthouseException as error:  # (its message names the node: name the template)
        raise type(error)(f"{where}: {error}") from None
    return _Template(prefix, shape, cost)


def _accept_limit(value: Any, what: str) -> Optional[int]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidTypeError(
            f"{what}: expected a whole number or None, got {type(value).__name__} {shown(value)}")
    if value < 0:
        raise InvalidInputError(f"{what}: must be at least 0, got {value}")
    whole: int = value
    return whole


# ------------------------------------------------------------ scale down

@exactly
@_holding_its_lock
def plan_scale_down(distributor: Distributor, max_nodes: Optional[int] = None,
                    values: Optional[Mapping[str, Any]] = None,
                    keep: Iterable[str] = ()) -> ScaleDownPlan:
    """Plan which nodes could be given back, each with all its workloads moved away.

    Candidates are tried most-empty first: cordoned nodes (already on their
    way out) before the others, then fewer workloads, then a lower used
    share (the largest fraction of any finite resource in use), then a
    higher value in ``values``, then the distributor's node order.
    ``values`` maps node names to a number from 0 to 1 saying how much the
    provider wants the node back (elasticslice's ``SetResourceValues``);
    nodes it does not mention count 0.

    A candidate is accepted when, on a copy holding every earlier accepted
    removal, ``drain(node)`` moves every one of its workloads; the copy then
    removes it. Passes repeat until one accepts nothing, so the plan is
    maximal: planning again on the result finds no further node. Applying
    the plan with ``drain(node)`` then ``remove_nodes([node])`` for each node
    of ``removable`` in order moves the workloads exactly as ``moves`` says.
    An empty node is always removable, so an idle cluster may be planned
    away entirely: use ``max_nodes`` to cap the count. ``keep`` names nodes
    that must stay (nodes the cluster does not own, say): they are never
    candidates, so they neither count against ``max_nodes`` nor get planned
    away, but workloads may move onto them; they are listed in ``kept``.
    The distributor is not changed.

    Raises:
        InvalidInputError: ``values`` or ``keep`` names an unknown node,
            ``values`` holds a value outside [0, 1], or ``max_nodes`` is
            negative.
        InvalidTypeError: ``values`` is not a mapping of numbers, ``keep``
            is not a list of names, or ``max_nodes`` is not a whole number.

    Cost: one copy of the distributor, O((N + P) x R log N) for P placed
    workloads; then O(N) trials per pass (usually two passes, at worst N),
    each a drain of the node on that copy (placing its K workloads), undone
    in O(R log N) per node it changed plus O(P) in C when work is left
    behind, or followed by the node's removal (O(N + P) in C) when not; and
    the reason each kept node stays, worked out in the last pass only:
    O(N x R) per shape of the workloads left behind (requirements and
    immunities), until a node is removed, then O(R) per node a drain
    changed and O(log N) per kind of reason. About half a second for 1,000
    nodes, 2 to 3 s for 5,000 of which half can go, 2 to 5 s for 5,000
    that all stay (see the docs' page on planning).
    """
    limit = _accept_limit(max_nodes, "max_nodes")
    wanted = _accept_values(values, distributor)
    staying = _accept_keep(keep, distributor)
    # (one copy, changed by each removal accepted: a drain that leaves a
    # workload behind is undone, see Distributor._drain_or_undo)
    trial = Distributor.from_dict(distributor.to_dict())
    removable: List[str] = []
    moves: Dict[str, str] = {}
    # (the reasons nodes refuse workloads, by shape, while no node changes:
    # see Distributor._drain_or_undo)
    known: Dict[Any, RefusalTally] = {}
    while True:
        kept: Dict[str, str] = {}
        accepted = False
        for name in _most_empty_first(trial, wanted):
            if name in staying:
                kept[name] = "named in keep"
                continue
            if limit is not None and len(removable) >= limit:
                kept[name] = f"max_nodes={limit} reached"
                continue
            # (the reasons a node stays are those of the last pass, one that
            # accepts nothing: once a pass accepts a node, the reasons of
            # the nodes it keeps after it are not worked out)
            moved, why = trial._drain_or_undo(name, None if accepted else known)
            if why is not None:
                kept[name] = why
                continue
            trial.remove_nodes([name])
            known.clear()  # (nodes changed)
            removable.append(name)
            moves.update({load: node for load, node in moved.items() if node is not None})
            accepted = True
        if not accepted:
            return ScaleDownPlan(removable=removable, moves=moves, kept=kept)


def _most_empty_first(distributor: Distributor, values: Mapping[str, Decimal]) -> List[str]:
    states = distributor.node_states()

    def emptiness(position: int) -> Tuple[bool, int, Fraction, Decimal, int]:
        state = states[position]
        return (not state.cordoned, len(state.workloads), _used_share(state),
                -values.get(state.name, ZERO), position)
    return [states[position].name for position in sorted(range(len(states)), key=emptiness)]


def _used_share(state: NodeState) -> Fraction:
    """The largest fraction in use of any finite, positive resource of the node."""
    share = Fraction(0)
    for key, capacity in state.capacity.items():
        left = state.remaining[key]
        if 0 < capacity < math.inf and -math.inf < left < math.inf:
            share = max(share, (_exact(capacity) - _exact(left)) / _exact(capacity))
    return share


def _accept_keep(keep: Any, distributor: Distributor) -> Set[str]:
    if isinstance(keep, (str, bytes)) or isinstance(keep, MappingABC) \
            or not isinstance(keep, Iterable):
        raise InvalidTypeError(f"keep: expected a list of node names, got {type(keep).__name__}")
    names = {node.name for node in distributor.nodes}
    staying = set()
    for index, name in enumerate(keep):
        if not isinstance(name, str):
            raise InvalidTypeError(
                f"keep[{index}]: expected a node name, got {type(name).__name__}")
        if name not in names:
            raise InvalidInputError(f"keep[{index}]: node {shown(name)}: no such node")
        staying.add(name)
    return staying


def _accept_values(values: Any, distributor: Distributor) -> Dict[str, Decimal]:
    if values is None:
        return {}
    if not isinstance(values, MappingABC):
        raise InvalidTypeError(
            f"values: expected a mapping of node name to number, got {type(values).__name__}")
    names = {node.name for node in distributor.nodes}
    accepted = {}
    for name, value in values.items():
        if name not in names:
            raise InvalidInputError(f"values: node {shown(name)}: no such node")
        number = to_quantity(value, f"values: node {shown(name)}")
        if not ZERO <= number <= 1:
            raise InvalidInputError(
                f"values: node {shown(name)}: value must be from 0 to 1, got {shown(value)}")
        accepted[name] = number
    return accepted
