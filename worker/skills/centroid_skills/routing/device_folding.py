"""Rows of one device kind folded into as many rows as make the cell smallest (issue 26).

The planner cuts each kind's cells into the design point's number of rows (one by default)
without knowing how wide the cells came out nor how many tracks the channels between rows
will need.  A row of thin devices is then long, every net spans it, and the channel beside
it holds as many tracks as nets cross its busiest x: the channels, not the devices, set the
cell's height.  Here, when the planner leaves the count open (``fold_device_rows``), the
consecutive rows holding the MOS cells of one kind on one bulk net are taken as one
sequence (the planner's order, left to right, row after row) and cut again into ``k``
contiguous rows of about equal width, ``k`` chosen for each kind together (so an nmos and a
pmos part come out about as long as each other) as the smallest estimated bounding box:

* a row's width: its cells and the rules' gaps between them (``layout.place``'s, with the
  planner's extra gap); its height: its tallest cell and the assembly the router builds
  around a row of its kind (tap rail, via zone, n-well: measured once on a given row by
  :func:`.rows.add_rails`), and at least the rule gap from the assembly below;
* a channel's height as :func:`.stacking.stack_rows` stacks it, for the most tracks its
  pins' nets need at one x: each net from its leftmost to its rightmost pin in the channel,
  out to its trunk's side (left or right of the rows, nearer the mean x of all its pins)
  when it is in another channel or on a rail too, a stub pitch further either way;
* the trunk columns: a stub pitch per net in several channels (a supply's, the rail net of
  several rows, one more) and a pitch either side.

A cell never splits (a matched module is one cell: its common centroid stays whole); the
order is kept, so the planner's order genes still mean left to right, row after row within
each kind; the rows of the smallest foldings may be stacked in another order of the kinds
(a pmos row between two nmos parts: the nets shared by each part and the pmos row do not
pass through the channel between the parts) where that is estimated smaller.  The
planner's rows are kept unless the estimate of a folding is smaller by more than the
estimate's error; same input, same rows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import permutations, product
from typing import Any

import klayout.db as kdb

from centroid_skills import abut
from centroid_skills.routing.dims import Dims
from centroid_skills.routing.folding_estimate import Assembly, Item, Row, estimate
from centroid_skills.routing.rows import PIN_TERMINAL, RowInfo, add_rails, assign_nets
from centroid_skills.routing.terminals import Term, collect_terms, instance_terms
from centroid_skills.session import Session

#: the most rows one kind is folded into
MOST_ROWS = 8
#: a folding's width and height stay within this factor of each other
MAX_ASPECT = 4.0
#: a folding replaces the planner's rows only when its estimate is smaller by more than this
#: (the estimate came within 3 % of the routed cell for most foldings tried, BENCHMARKS.md;
#: up to 8 % under it for eight rows a kind)
ESTIMATE_ERROR = 0.03

Devices = dict[str, dict[str, Any]]


@dataclass
class Group:
    """Consecutive rows of one MOS kind on one bulk net: the sequence a folding cuts."""

    first: int  # index of its first row in the given rows
    count: int  # how many given rows it spans
    items: list[Item]
    rail: str


def _net(t: Term, devices: Devices, rail: str | None) -> str | None:
    if t.device is None:
        return rail
    terminal = t.pin if t.of_block else PIN_TERMINAL.get(t.pin)
    return (devices.get(t.device, {}).get("terminals") or {}).get(terminal or "")


def _row(session: Session, cell: kdb.Cell, devices: Devices) -> tuple[list[Item], str | None, set[str]]:
    """The row's cells left to right, its one bulk net (``None``: none or several) and the
    kinds of its cells (``nmos``/``pmos``; ``other`` for anything not a MOS device)."""
    insts = sorted(cell.each_inst(), key=lambda i: (i.bbox().left, i.bbox().bottom))
    bulks: set[str] = set()
    kinds: set[str] = set()
    raw: list[tuple[kdb.Instance, list[Term]]] = []
    for inst in insts:
        terms = instance_terms(session, inst)
        raw.append((inst, terms))
        for t in terms:
            kinds.add(t.mos or "other")
            if t.mos and t.device is not None:
                bulk = (devices.get(t.device, {}).get("terminals") or {}).get("b")
                if bulk:
                    bulks.add(bulk)
    rail = next(iter(bulks)) if len(bulks) == 1 else None
    items: list[Item] = []
    for inst, terms in raw:
        bb = inst.bbox()
        up: list[tuple[str, int]] = []
        down: list[tuple[str, int]] = []
        m1_up = False
        for t in terms:
            net = _net(t, devices, rail)
            if net is None:
                continue
            x = t.box.center().x - bb.left
            if t.up:
                up.append((net, x))
                m1_up = m1_up or t.role == "metal1"
            elif not (net == rail and t.role == "metal1"):  # drops onto the rail
                down.append((net, x))
        items.append(Item(inst.cell.name, bb.width(), bb.height(), tuple(up), tuple(down), m1_up))
    return items, rail, kinds


def _cut(items: list[Item], rows: int, gap: Callable[[Item, Item], int]) -> list[list[Item]]:
    """``items`` in order cut into ``rows`` contiguous rows of about equal width."""
    rows = max(1, min(rows, len(items)))
    total = sum(i.width for i in items) + sum(gap(a, b) for a, b in zip(items, items[1:], strict=False))
    cut: list[list[Item]] = [[]]
    used = 0
    for index, item in enumerate(items):
        left = len(items) - index
        to_fill = rows - len(cut)
        if cut[-1] and to_fill > 0:
            step = gap(cut[-1][-1], item)
            full = (used + step + item.width / 2) * rows > total * len(cut)
            if full or left <= to_fill:
                cut.append([])
                used += step
        used += (gap(cut[-1][-1], item) if cut[-1] else 0) + item.width
        cut[-1].append(item)
    return cut


def _placed(items: list[Item], rail: str | None, kind: str, assembly: Assembly,
            gap: Callable[[Item, Item], int]) -> Row:
    height = max(i.height for i in items) + assembly.below + assembly.above
    row = Row(items, 0, height, rail, m1_up=any(i.m1_up for i in items), kind=kind)
    x = 0
    for k, item in enumerate(items):
        if k:
            x += gap(items[k - 1], item)
        row.up += [(net, x + dx) for net, dx in item.up]
        row.down += [(net, x + dx) for net, dx in item.down]
        x += item.width
    row.width = x
    return row


def _groups(infos: list[tuple[list[Item], str | None, set[str]]]) -> list[Group]:
    groups: list[Group] = []
    for index, (items, rail, kinds) in enumerate(infos):
        foldable = items and rail is not None and len(kinds) == 1 and kinds <= {"nmos", "pmos"}
        if not foldable:
            continue
        last = groups[-1] if groups else None
        if (last is not None and last.first + last.count == index and last.rail == rail
                and _kind(infos[last.first]) == _kind(infos[index])):
            last.count += 1
            last.items += items
        else:
            groups.append(Group(index, 1, list(items), str(rail)))
    return groups


def _kind(info: tuple[list[Item], str | None, set[str]]) -> str:
    return next(iter(info[2]))


def _assemblies(session: Session, rows: list[str], groups: list[Group], devices: Devices,
                d: Dims) -> dict[str, Assembly]:
    """Per kind: the assembly the router builds around a given row of it (its rail drawn in a
    scratch cell, then dropped)."""
    layout = session.layout
    out: dict[str, Assembly] = {}
    before = {c.cell_index() for c in layout.each_cell()}
    try:
        for group in groups:
            name = rows[group.first]
            cell = session.any_cell(name)
            terms: list[Term] = []
            collect_terms(session, cell, kdb.Trans(), terms)
            kind = next(t.mos for t in terms if t.mos)
            if kind in out:
                continue
            assign_nets(name, terms, devices, group.rail)
            info = RowInfo(name, cell, terms, kind, group.rail)
            add_rails(session, [info], d, "FOLD_PROBE", {})
            bb = cell.bbox()
            out[kind] = Assembly(bb.bottom - info.bottom, info.top - bb.top, info.ext)
    finally:
        for ci in sorted({c.cell_index() for c in layout.each_cell()} - before, reverse=True):
            session.cells.pop(layout.cell(ci).name, None)
            layout.delete_cell(ci)
    return out


@dataclass(frozen=True)
class Option:
    """A folding: its estimated bounding box, rows per group (each kind's consecutive rows),
    the rows bottom to top (a given row kept: its name; a new row: its cells' names) and the
    tracks estimated in each channel."""

    width: int
    height: int
    counts: tuple[int, ...]
    rows: list[str | list[str]]
    tracks: list[int]
    stack: tuple[Row, ...] = field(default=(), compare=False)  # the rows as estimated

    @property
    def area(self) -> int:
        return self.width * self.height


def options(session: Session, rows: list[str], devices: Devices, d: Dims,
            extra_gap: int) -> tuple[Option, list[Option]]:
    """The given rows' estimate and every folding's: width, height, rows per group (each
    kind's consecutive rows) and the rows bottom to top, a given row kept (its name) or a new
    row (its cells' names); no folding when no kind has two cells."""
    tech = session.need_tech()
    layout = session.layout
    cells = [session.any_cell(name) for name in rows]
    infos = [_row(session, cell, devices) for cell in cells]
    groups = [g for g in _groups(infos) if len(g.items) > 1]
    if not groups:
        return Option(0, 0, (), list(rows), []), []
    cache: dict[int, abut.Extents] = {}
    exts: dict[str, abut.Extents] = {}
    gaps: dict[tuple[str, str], int] = {}

    def gap(a: Item, b: Item) -> int:
        for item in (a, b):
            if item.name not in exts:
                e = abut.extents(tech, layout, layout.cell(item.name), cache)
                exts[item.name] = e.moved(kdb.Trans(-e.bbox.left, -e.bbox.bottom))
        key = (a.name, b.name)
        if key not in gaps:
            gaps[key] = abut.required_gap(tech, exts[a.name], exts[b.name], "x", extra_gap)
        return gaps[key]

    assemblies = _assemblies(session, rows, groups, devices, d)
    gaps_y: dict[tuple[str, str], int] = {}

    def gap_y(a: Row, b: Row) -> int:
        """The rule gap between the assemblies of two rows of the kinds of ``a`` and ``b``."""
        if not (a.kind in assemblies and b.kind in assemblies):
            return 0
        key = (a.kind, b.kind)
        if key not in gaps_y:
            ea, eb = assemblies[a.kind].ext, assemblies[b.kind].ext
            gaps_y[key] = 0 if ea is None or eb is None else abut.required_gap(
                tech, ea, eb.moved(kdb.Trans(0, 0)), "y", 0, bridge=False)
        return gaps_y[key]

    kept: dict[int, Row] = {}
    for index, (items, rail, kinds) in enumerate(infos):
        bb = cells[index].bbox()
        kind = next(iter(kinds)) if len(kinds) == 1 else ""
        assembly = assemblies.get(kind, Assembly(0, 0, None))
        row = _placed(items, rail, kind, assembly, gap) if items else Row([], 0, 0, rail)
        row.width, row.height = bb.width(), bb.height() + assembly.below + assembly.above
        kept[index] = row

    def stacked(cuts: list[list[list[Item]]] | None) -> list[tuple[str, Row]]:
        out: list[tuple[str, Row]] = []
        index = 0
        while index < len(infos):
            at = next((k for k, g in enumerate(groups) if g.first == index), None)
            if at is None or cuts is None:
                out.append((rows[index], kept[index]))
                index += 1
                continue
            group = groups[at]
            kind = kept[index].kind
            out += [("", _placed(part, group.rail, kind, assemblies[kind], gap))
                    for part in cuts[at]]
            index += group.count
        return out

    def option(cuts: list[list[list[Item]]] | None) -> Option:
        stack = stacked(cuts)
        w, h, tracks = estimate([row for _name, row in stack], d, gap_y)
        plan: list[str | list[str]] = [name or [i.name for i in row.items] for name, row in stack]
        counts = tuple(len(c) for c in cuts) if cuts else tuple(g.count for g in groups)
        return Option(w, h, counts, plan, tracks, tuple(row for _name, row in stack))

    counts = product(*[range(1, min(MOST_ROWS, len(g.items)) + 1) for g in groups])
    choices = [option([_cut(g.items, k, gap) for g, k in zip(groups, c, strict=True)])
               for c in counts]
    choices += _moved_cuts(choices, groups, option)
    return option(None), choices + _reordered(choices, d, gap_y)


#: the foldings whose cuts are moved (the smallest estimates), and how far each cut moves
MOVED_FOLDINGS = 3
CUT_MOVES = (-2, -1, 1, 2)


def _moved_cuts(choices: list[Option], groups: list[Group],
                option: Callable[[list[list[list[Item]]]], Option]) -> list[Option]:
    """The smallest foldings with their cuts moved a cell or two where that lowers the estimate
    (fewer nets cut apart: fewer trunks, lower channels), cut by cut, until none does."""
    out: list[Option] = []
    for start in sorted(choices, key=lambda c: (c.area, c.counts))[:MOVED_FOLDINGS]:
        bounds = [_bounds(g.items, start.rows) for g in groups]
        best = start
        improved = True
        while improved:
            improved = False
            for at, group_bounds in enumerate(bounds):
                for b in range(len(group_bounds)):
                    for move in CUT_MOVES:
                        trial = [list(x) for x in bounds]
                        trial[at][b] += move
                        edges = [0, *trial[at], len(groups[at].items)]
                        if any(lo >= hi for lo, hi in zip(edges, edges[1:], strict=False)):
                            continue
                        candidate = option([_parts(g.items, t) for g, t in zip(groups, trial, strict=True)])
                        if candidate.area < best.area:
                            best, bounds, improved = candidate, trial, True
        if best is not start:
            out.append(best)
    return out


#: the foldings whose rows are stacked in every other order, and the most rows that are
MOST_REORDERED = 3
MOST_REORDERED_ROWS = 5


def _reordered(choices: list[Option], d: Dims, gap_y: Callable[[Row, Row], int]) -> list[Option]:
    """The smallest foldings with their rows stacked in the order of smallest estimate, where
    that is not the order cut: a row of another kind between two parts of one kind keeps the
    nets shared by each part and that row out of the channel between the parts (they would
    pass through it on their way to the far row).  Each row keeps its cells' order, each
    kind its rows' order bottom to top (the rows kept as given theirs too)."""
    out: list[Option] = []
    for start in sorted(choices, key=lambda c: (c.area, c.counts))[:MOST_REORDERED]:
        if not 2 < len(start.stack) <= MOST_REORDERED_ROWS:
            continue
        best = start
        for order in permutations(range(len(start.stack))):
            rows = [start.stack[i] for i in order]
            if any(rows[a].kind == rows[b].kind and order[a] > order[b]
                   for a in range(len(rows)) for b in range(a + 1, len(rows))):
                continue  # one kind's rows stay bottom to top in their order
            w, h, tracks = estimate(rows, d, gap_y)
            if w * h < best.area:
                best = Option(w, h, start.counts, [start.rows[i] for i in order], tracks, tuple(rows))
        if best is not start:
            out.append(best)
    return out


def _bounds(items: list[Item], plan: list[str | list[str]]) -> list[int]:
    """Where the group's rows of ``plan`` start in ``items`` (each row after the first)."""
    names = {i.name for i in items}
    starts: list[int] = []
    at = 0
    for entry in plan:
        if isinstance(entry, list) and entry and entry[0] in names:
            if at:
                starts.append(at)
            at += len(entry)
    return starts


def _parts(items: list[Item], bounds: list[int]) -> list[list[Item]]:
    edges = [0, *bounds, len(items)]
    return [items[lo:hi] for lo, hi in zip(edges, edges[1:], strict=False)]


def fold(session: Session, rows: list[str], devices: Devices, d: Dims,
         extra_gap: int) -> list[str | list[str]] | None:
    """The rows bottom to top of the folding with the smallest estimate (a given row kept: its
    name; a new row: its cells' names), its width and height within :data:`MAX_ASPECT` of
    each other; ``None`` when the given rows are estimated as small."""
    given, choices = options(session, rows, devices, d, extra_gap)
    if not choices:
        return None
    fitting = [c for c in choices if max(c.width, c.height) <= MAX_ASPECT * min(c.width, c.height)]
    best = min(fitting or choices, key=lambda c: (c.area, c.counts))
    if best.area >= (1 - ESTIMATE_ERROR) * given.area:
        return None
    return best.rows


def folded_rows(session: Session, rows: list[str], devices: Devices, d: Dims, cell_name: str,
                place: Callable[[Session, dict[str, Any]], Any], extra_gap_um: float
                ) -> tuple[list[str], list[str]]:
    """``rows`` with each kind's rows folded (new row cells drawn by ``place``,
    ``layout.place``'s skill function, with the extra gap ``extra_gap_um``), and the row
    cells the folding replaced (to drop once routed); ``rows`` unchanged and nothing to drop
    when the given rows are estimated as small."""
    tech = session.need_tech()
    plan = fold(session, rows, devices, d, tech.snap_up(extra_gap_um * 1000))
    if plan is None:
        return rows, []
    out: list[str] = []
    for entry in plan:
        if isinstance(entry, str):
            out.append(entry)
            continue
        name = session.unique_name(f"{cell_name}_FROW{len(out)}")
        place(session, {"cell_name": name, "rows": [{"cells": entry, "gap": extra_gap_um}]})
        out.append(name)
    return out, [name for name in rows if name not in out]
