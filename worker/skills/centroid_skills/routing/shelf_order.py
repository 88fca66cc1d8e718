"""The order of a parent's packed shelves of blocks: shelves sharing nets made neighbours
(issue 26).

The packing (:mod:`.block_packing`) fixes which instances share a shelf, not the order of
the shelves.  Routed, two shelves of blocks one above the other are turned to share one
channel (:mod:`.row_pairs`: pairs taken bottom up); a channel holds a track for each net of
the rows facing it, and a net in more than one channel also takes a trunk column beside the
rows.  So the order decides the tracks and the columns: four rows of one differential pair's
copies paired among themselves share their inputs and outputs, each paired with an unrelated
shelf carries both shelves' nets.

The order's units are the packing's: a band of a tile's rows (kept in order, never taken
apart) or one shelf.  Its cost counts, per channel, the nets of the rows facing it (a pair's
union) and the nets in more than one channel, weighed as the area they add (tracks: the
track pitch times the packing's width; columns: the column pitch times its height).  The
order is searched among every order of up to seven units, else by descents (a unit moved or
two swapped while that lowers the cost) from the packing's own order (bands first, then
shelves tallest first), from it reversed and from greedy chains of shelves sharing nets.
The cost counts nets, where a channel's tracks are levels that nets side by side share, and
a top cell joins some nets by verticals instead of columns: so a cheaper order is routed as
well as the packing's own and the smaller routed cell kept (:func:`smallest_route`; a tie
keeps the packing's order), and a parent whose shelves share nothing keeps its order.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from centroid_skills.errors import SkillError
from centroid_skills.session import Session

R = TypeVar("R", bound=Any)

#: up to this many units every order is weighed (7! = 5,040 orders), beyond it descents
EXHAUSTIVE = 7
#: the orders the descents may weigh in all (bounds the time of a parent of many shelves)
BUDGET = 20_000


@dataclass(frozen=True)
class Weights:
    """What a track and a trunk column add to the packing's area (nm²)."""

    track: int  # track pitch × the packing's width
    column: int  # column pitch × the packing's height


def channels(rows: list[frozenset[str] | None], first: int) -> list[frozenset[str]]:
    """The nets of each channel of ``rows`` (bottom to top; ``None``: a row that is not of
    blocks only, never turned): rows of blocks paired bottom up from row ``first`` as
    :func:`.row_pairs.pair_rows` pairs them, a pair's channel holding both rows' nets, any
    other row its own."""
    out: list[frozenset[str]] = []
    r = 0
    while r < len(rows):
        here = rows[r] or frozenset()
        if r >= first and r + 1 < len(rows) and rows[r] is not None and rows[r + 1] is not None:
            out.append(here | (rows[r + 1] or frozenset()))
            r += 2
        else:
            out.append(here)
            r += 1
    return out


def cost(rows: list[frozenset[str] | None], first: int, weights: Weights) -> int:
    """The area the channels' tracks and the trunk columns of ``rows`` add (one track per
    net of a channel, one column per net in more than one channel)."""
    chans = channels(rows, first)
    spread = Counter(net for chan in chans for net in chan)
    tracks = sum(len(chan) for chan in chans)
    columns = sum(1 for count in spread.values() if count > 1)
    return tracks * weights.track + columns * weights.column


def order(units: list[list[frozenset[str] | None]], first: int, weights: Weights,
          margin: int = 0) -> list[int]:
    """The order of ``units`` (each a unit's rows' nets, bottom to top) with the smallest
    :func:`cost`: every order when there are at most :data:`EXHAUSTIVE` units, else a
    descent (one unit moved or two swapped while the cost falls) from the given order, from
    it reversed and from each unit followed greedily by the unit sharing the most nets with
    the row below, until :data:`BUDGET` orders are weighed; the given order unless another
    costs less by more than ``margin``."""

    spent = [0]

    def of(sequence: list[int] | tuple[int, ...]) -> int:
        spent[0] += 1
        return cost([row for u in sequence for row in units[u]], first, weights)

    given = list(range(len(units)))
    best, best_cost = given, of(given)
    if len(units) <= EXHAUSTIVE:
        for sequence in itertools.permutations(given):
            c = of(sequence)
            if c < best_cost:
                best, best_cost = list(sequence), c
    else:
        for start in [given, given[::-1], *(_greedy(units, u) for u in given)]:
            if spent[0] >= BUDGET:
                break
            found, c = _descent(start, of, lambda: spent[0] >= BUDGET)
            if c < best_cost:
                best, best_cost = found, c
    return best if of(given) - best_cost > margin else given


def _greedy(units: list[list[frozenset[str] | None]], start: int) -> list[int]:
    """``start`` first, then each time the unit whose bottom row shares the most nets with
    the top row so far (the first of equals)."""
    sequence = [start]
    left = [u for u in range(len(units)) if u != start]
    while left:
        top = units[sequence[-1]][-1] or frozenset()
        nxt = max(left, key=lambda u: (len(top & (units[u][0] or frozenset())), -u))
        sequence.append(nxt)
        left.remove(nxt)
    return sequence


def _descent(start: list[int], of: Callable[[list[int]], int],
             spent: Callable[[], bool]) -> tuple[list[int], int]:
    """From ``start``, the first neighbour that costs less, until none does or the budget
    is ``spent``."""
    best, best_cost = start, of(start)
    improved = True
    while improved and not spent():
        improved = False
        for candidate in _neighbours(best):
            c = of(candidate)
            if c < best_cost:
                best, best_cost, improved = candidate, c, True
                break
    return best, best_cost


def _neighbours(sequence: list[int]) -> list[list[int]]:
    """Every order one move (a unit taken out and put elsewhere) or one swap away."""
    out: list[list[int]] = []
    n = len(sequence)
    for i in range(n):
        rest = sequence[:i] + sequence[i + 1:]
        for j in range(n):
            if j != i:
                out.append(rest[:j] + [sequence[i]] + rest[j:])
        for j in range(i + 1, n):
            swapped = list(sequence)
            swapped[i], swapped[j] = swapped[j], swapped[i]
            out.append(swapped)
    return out


def reordered(shelves: list[list[str]], units: list[int], nets: dict[str, frozenset[str] | None],
              first: int, weights: Weights, margin: int = 0) -> list[list[str]]:
    """``shelves`` (instance names, bottom to top) in the order :func:`order` finds; ``units``:
    the shelves of each unit, bottom to top (empty: one each); ``nets``: each instance's nets
    (``None``: a passive device, its shelf never turned); ``margin``: what another order
    must save (nm²) by the cost to be taken."""
    sizes = units or [1] * len(shelves)
    grouped: list[list[list[str]]] = []
    at = 0
    for size in sizes:
        grouped.append(shelves[at:at + size])
        at += size

    def of(shelf: list[str]) -> frozenset[str] | None:
        found = [nets.get(name) for name in shelf]
        if any(n is None for n in found):
            return None
        return frozenset().union(*[n for n in found if n is not None])

    sequence = order([[of(shelf) for shelf in unit] for unit in grouped], first, weights, margin)
    return [shelf for u in sequence for shelf in grouped[u]]


def _drop_cells_since(session: Session, before: set[int]) -> None:
    """Deletes the cells made since ``before`` (cell indexes) and their records."""
    layout = session.layout
    for ci in sorted({c.cell_index() for c in layout.each_cell()} - before, reverse=True):
        if layout.is_valid_cell_index(ci):
            session.cells.pop(layout.cell(ci).name, None)
            layout.delete_cell(ci)


def smallest_route(session: Session, orders: list[list[str]],
                   route_rows: Callable[[list[str]], R]) -> tuple[R, list[str]]:
    """``route_rows`` (one routing call: its result's ``cell`` the routed cell) on the first
    of ``orders`` (the packing's own) or, when another order of the same rows routes
    smaller, on that one; the result kept and its order.  Each order is routed in turn (a
    failure of another order leaves it out), the cells of each routed but the last dropped;
    the smallest routed again when it was not the last (rows of blocks are turned in place
    for each order).  The other orders are the cost's choice, so the smallest is mostly the
    last: two routes."""
    layout = session.layout
    best = (0, 0)  # (area, index) of the smallest routed so far
    res: R | None = None
    before: set[int] = set()
    last = 0
    for k, rows in enumerate(orders):
        if res is not None:  # the cell's name is free for the next order
            _drop_cells_since(session, before)
            res = None
        before = {c.cell_index() for c in layout.each_cell()}
        try:
            res = route_rows(rows)
        except SkillError:
            if k == 0:
                raise
            _drop_cells_since(session, before)
            continue
        box = res.cell.bbox()
        if k == 0 or box.width() * box.height() < best[0]:
            best = (box.width() * box.height(), k)
        last = k
    if res is not None and best[1] == last:
        return res, orders[last]
    if res is not None:
        _drop_cells_since(session, before)
    return route_rows(orders[best[1]]), orders[best[1]]
