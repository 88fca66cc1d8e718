"""A parent's rows of blocks packed by the blocks' real sizes (issue 26).

The planner folds a parent's block instances into rows by device count: it does not know
how wide or how tall each block came out.  Here, when the rows are routed, every row
holding only block instances (``layout.instantiate_block`` cells) or passive devices
(resistors, capacitors: no rail, no well) is taken apart and its cells packed again into
rows ("shelves") by their real bounding boxes, so that a big plate stands beside blocks
rather than alone in a row of its own:

* instances sorted by height, tallest first (a block's instances stay together: equal
  height, then the block, then the planner's order), each shelf filled left to right until
  the next instance would pass the width ``W`` (next-fit decreasing height);
* ``W`` is chosen among the widths where a shelf's content changes (the widest instance or
  row of the parent's own devices, and every run of ``k`` instances of one block side by
  side): the one whose estimated bounding box is the smallest, its width and height within
  a factor :data:`MAX_ASPECT` of each other; the planner's own rows are kept unless the
  packing's estimate is smaller by more than the estimate's error
  (:data:`ESTIMATE_ERROR`: equal blocks in equal rows stay as the planner put them);
* the estimate: the widest shelf (or own row) with a column of three trunk pitches either
  side (the supplies' trunks and one more), times the shelves' and own rows' heights, each
  row with a channel of two track pitches and the clearance either side (what a channel
  between rows of blocks needs at least);
* the gaps between instances are those ``layout.place`` leaves (the rules' gap, at least
  the planner's extra ``gap``), so the packed shelves are what ``layout.place`` would draw.

Rows named *whole* (a matched module's instances interleaved in rows of their own, its
members' centroids meeting only as the rows stand) are never taken apart: each group of them
is one tile, its rows kept in order in consecutive shelves, each shelf centred on the
parent's axis as the planner's rows were.  Tiles of ``k`` rows all as wide stand side by
side in bands of ``k`` shelves (widest first, next fit; a tile of rows of different widths
has a band of its own); one-row tiles and the other instances are then packed first fit
into shelves of their own, tallest first (a tile as wide as its row), so that short rows of
different modules share a shelf instead of each leaving the rest of the parent's width
empty.  A row of a tile in a band of its own whose two halves hold the same devices (as
many instances of each: a member's parallel copies, ``x.m1`` and ``x.m2``, one either side)
then takes one of those shelves between its halves where they fit in ``W`` — the shelf
saving the most height: the row stands centred as before, its halves moved apart by the same
distance, so every device's centroid stays where it was and the tile's rows stay in order in
consecutive shelves (a lone short row of a module no longer costs a shelf and a channel of
its own).  ``W`` is then chosen among the widths above, the tiles' widths and those of two
tiles side by side.

The packed shelves replace those rows where the first of them stood (the parent's MOS
rows keep their places); same input, same shelves.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import klayout.db as kdb

from centroid_skills import abut
from centroid_skills.routing.dims import Dims
from centroid_skills.routing.shelf_order import Weights, reordered
from centroid_skills.session import Session

#: a packing's width and height stay within this factor of each other (else the planner's
#: rows, or the packing nearest a square)
MAX_ASPECT = 4.0
#: how far off the estimate of a bounding box may be (columns and channels are guessed,
#: measured within a few percent): a packing replaces the planner's rows only when smaller
#: by more
ESTIMATE_ERROR = 0.05


#: device cells a shelf of blocks may hold beside them: no rail, no well
PASSIVES = ("resistor", "capacitor")
#: the suffix a netlist's ``m=`` gives each parallel copy of one device
COPY_SUFFIX = re.compile(r"\.m\d+$")


@dataclass(frozen=True)
class Item:
    """One block instance or passive device of a packable row."""

    name: str  # the instance or device cell
    block: str  # the block it instantiates (a passive: its own cell)
    width: int
    height: int
    order: int  # its place in the planner's rows
    device: str = ""  # the device it draws (parallel copies ``x.m1``, ``x.m2``: ``x``)


@dataclass
class Packing:
    """Rows of instance names (bottom to top) and their estimated bounding box."""

    rows: list[list[str]]
    width: int
    height: int
    #: the rows of each unit its order may move (a tile's band, kept together), bottom to
    #: top; empty: every row a unit of its own
    units: list[int] = field(default_factory=list)

    @property
    def area(self) -> int:
        return self.width * self.height

    @property
    def aspect(self) -> float:
        return max(self.width, self.height) / max(1, min(self.width, self.height))


def _block_of(session: Session, name: str) -> str | None:
    """The block a cell instantiates, a passive device cell's own name, else ``None``."""
    rec = session.cells.get(name)
    if rec is None:
        return None
    if rec.kind == "block" and "device_id" in rec.params:
        return str(rec.params["block"])
    return name if rec.kind in PASSIVES else None


def packable(session: Session, cell: kdb.Cell) -> bool:
    """Whether a row cell holds only block instances and passive devices."""
    insts = list(cell.each_inst())
    return bool(insts) and all(_block_of(session, inst.cell.name) is not None for inst in insts)


def _holds_blocks(session: Session, cell: kdb.Cell) -> bool:
    return any(_block_of(session, i.cell.name) not in (None, i.cell.name) for i in cell.each_inst())


def _device_of(session: Session, name: str) -> str:
    """The device a cell draws: a block instance's device id without the copy suffix the
    netlist gives parallel copies (``.m<k>``), else the cell's own name."""
    rec = session.cells.get(name)
    device = rec.params.get("device_id") if rec is not None else None
    return COPY_SUFFIX.sub("", str(device)) if device else name


def _items(session: Session, rows: list[kdb.Cell]) -> list[Item]:
    items: list[Item] = []
    for row in rows:
        for inst in sorted(row.each_inst(), key=lambda i: (i.bbox().left, i.bbox().bottom)):
            bb = inst.cell.bbox()
            block = str(_block_of(session, inst.cell.name))
            items.append(Item(inst.cell.name, block, bb.width(), bb.height(), len(items),
                              _device_of(session, inst.cell.name)))
    return items


def _shelves(items: list[Item], width: int, gap: Callable[[Item, Item], int]) -> list[list[Item]]:
    """Next fit: ``items`` in order, a new shelf when the next one would pass ``width``."""
    shelves: list[list[Item]] = []
    used = 0
    for item in items:
        if shelves and used + gap(shelves[-1][-1], item) + item.width <= width:
            used += gap(shelves[-1][-1], item) + item.width
            shelves[-1].append(item)
        else:
            shelves.append([item])
            used = item.width
    return shelves


def _row_width(row: list[Item], gap: Callable[[Item, Item], int]) -> int:
    return sum(i.width for i in row) + sum(gap(a, b) for a, b in zip(row, row[1:], strict=False))


def _estimate(rows: list[list[Item]], own: list[tuple[int, int]], margins: tuple[int, int],
              gap: Callable[[Item, Item], int]) -> Packing:
    """The packing of ``rows`` above the own rows (``own``: width, height of each);
    ``margins``: the columns beside the rows (both), the channel of each row."""
    columns, channel = margins
    width = max([_row_width(r, gap) for r in rows] + [w for w, _h in own]) + columns
    height = sum(max(i.height for i in r) + channel for r in rows) + sum(h + channel for _w, h in own)
    return Packing([[i.name for i in r] for r in rows], width, height + channel)


def _widths(items: list[Item], floor: int, gap: Callable[[Item, Item], int]) -> list[int]:
    """Where a shelf's content changes: the floor (widest instance or own row) and every run
    of ``k`` instances of one block side by side."""
    widths = {floor}
    first: dict[str, Item] = {}
    for item in items:
        first.setdefault(item.block, item)
    counts = {block: sum(1 for i in items if i.block == block) for block in first}
    for block, item in first.items():
        run = item.width
        for _k in range(1, counts[block]):
            widths.add(run)
            run += gap(item, item) + item.width
        widths.add(run)
    return sorted(w for w in widths if w >= floor)


@dataclass(frozen=True)
class Tile:
    """Rows kept whole (bottom to top), each its instances in order."""

    rows: list[list[Item]]
    width: int  # of its widest row


def _tiles(row_items: list[list[Item]], whole: list[list[int]],
           gap: Callable[[Item, Item], int]) -> tuple[list[Tile], list[Item]]:
    """The tiles of the ``whole`` groups (indices into ``row_items``) and the other rows'
    instances."""
    tiles = []
    for group in whole:
        rows = [row_items[r] for r in group]
        tiles.append(Tile(rows, max(_row_width(r, gap) for r in rows)))
    kept = {r for group in whole for r in group}
    loose = [i for r, items in enumerate(row_items) if r not in kept for i in items]
    return tiles, loose


def _tile_shelves(tiles: list[Tile], loose: list[Item], width: int,
                  gap: Callable[[Item, Item], int]) -> list[list[list[Item]]]:
    """Bands of the tiles of two rows or more (by row count, widest first, next fit), then
    one-row tiles and loose instances first fit, tallest first, into shelves of ``width``;
    a shelf of those then flanked by the halves of a row of a band of one tile where they fit
    (:func:`_flank`).  The units their order may move: each band (its shelves, bottom to
    top), then each other shelf alone."""
    bands: list[list[list[Item]]] = []
    alone: list[bool] = []  # whether the band holds one tile
    multi = sorted((t for t in tiles if len(t.rows) > 1), key=lambda t: (-len(t.rows), -t.width))
    for tile in multi:
        # each shelf is centred on the parent's axis: side by side, tiles keep their rows
        # one above the other only when every row of the band is as wide
        even = len({_row_width(row, gap) for row in tile.rows}) == 1
        band = bands[-1] if bands else []
        if even and band and len(band) == len(tile.rows) and \
                len({_row_width(row, gap) for row in band}) == 1 and \
                _row_width(band[0] + tile.rows[0], gap) <= width:
            for shelf, row in zip(band, tile.rows, strict=True):
                shelf.extend(row)
            alone[-1] = False
            continue
        bands.append([list(row) for row in tile.rows])
        alone.append(True)
    units: list[list[Item]] = [t.rows[0] for t in tiles if len(t.rows) == 1]
    units += [[i] for i in loose]
    units.sort(key=lambda u: (-max(i.height for i in u), -_row_width(u, gap), u[0].block, u[0].order))
    singles: list[list[Item]] = []
    for unit in units:
        fit = next((s for s in singles if _row_width(s + unit, gap) <= width), None)
        if fit is None:
            singles.append(list(unit))
        else:
            fit.extend(unit)
    for band, one in zip(bands, alone, strict=True):
        if one:
            _flank(band, singles, width, gap)
    return bands + [[shelf] for shelf in singles]


def _halves(row: list[Item]) -> tuple[list[Item], list[Item]] | None:
    """``row`` cut at its middle when every device has as many instances in either half,
    else ``None``.  Centred on the axis with a shelf between them, the halves move apart by
    the same distance, so every device's centroid stays where it was."""
    middle = len(row) // 2
    if len(row) % 2 or not row:
        return None
    left, right = row[:middle], row[middle:]
    if Counter(i.device for i in left) != Counter(i.device for i in right):
        return None
    return left, right


def _flank(band: list[list[Item]], singles: list[list[Item]], width: int,
           gap: Callable[[Item, Item], int]) -> None:
    """Each row of ``band`` (one tile's rows, bottom to top) whose halves keep its devices'
    centroids (:func:`_halves`) takes between them the shelf of ``singles`` (one-row tiles,
    loose instances: nothing of theirs is matched across rows) that fits in ``width`` and
    saves the most height; that shelf leaves ``singles``.  The tile's rows stay in order in
    consecutive shelves, each device's centroid where it was."""
    for at, row in enumerate(band):
        halves = _halves(row)
        if halves is None:
            continue
        left, right = halves
        tall = max(i.height for i in row)
        fits = [s for s in singles if _row_width(left + s + right, gap) <= width]
        if not fits:
            continue
        shelf = max(fits, key=lambda s: (min(tall, max(i.height for i in s)), _row_width(s, gap)))
        singles.remove(shelf)
        band[at] = left + shelf + right


def _tile_widths(tiles: list[Tile], floor: int, gap: Callable[[Item, Item], int]) -> set[int]:
    """The tiles' widths and those of every two side by side."""
    widths = {t.width for t in tiles}
    for a in tiles:
        for b in tiles:
            if a is not b:
                widths.add(_row_width(a.rows[0] + b.rows[0], gap))
    return {w for w in widths if w >= floor}


def pack(session: Session, rows: list[kdb.Cell], own: list[tuple[int, int]], d: Dims,
         extra_gap: int, whole: list[list[int]] | None = None, rank: int = 0) -> Packing | None:
    """The packing of the rows of blocks ``rows`` (beside the own rows ``own``) with the
    smallest estimated bounding box; ``None`` when the planner's rows are as small.
    ``whole``: groups of rows (indices into ``rows``) kept whole, one above the other.
    ``rank``: the packing :func:`ranked` puts there instead (0: the choice above; a rank
    past the last: the last)."""
    packings = ranked(session, rows, own, d, extra_gap, whole)
    if not packings:
        return None
    planner, chosen = packings[min(rank, len(packings) - 1)]
    return None if planner else chosen


def ranked(session: Session, rows: list[kdb.Cell], own: list[tuple[int, int]], d: Dims,
           extra_gap: int, whole: list[list[int]] | None = None) -> list[tuple[bool, Packing]]:
    """The distinct candidate packings (``True``: the planner's rows), the one
    :func:`choose` chooses first, then the others by estimated area (those within
    :data:`MAX_ASPECT` first); empty when there are fewer than two instances."""
    chosen = _candidates(session, rows, own, d, extra_gap, whole)
    if chosen is None:
        return []
    planner, best, choices = chosen
    first = planner if best is None else best
    rest = sorted([planner, *choices], key=lambda p: (p.aspect > MAX_ASPECT, p.area, p.width))
    out: list[tuple[bool, Packing]] = []
    seen: list[list[list[str]]] = []
    for packing in [first, *rest]:
        if packing.rows not in seen:
            seen.append(packing.rows)
            out.append((packing.rows == planner.rows, packing))
    return out


def choose(session: Session, rows: list[kdb.Cell], own: list[tuple[int, int]], d: Dims,
           extra_gap: int, whole: list[list[int]] | None = None) -> tuple[Packing, Packing | None] | None:
    """The planner's rows as estimated and the packing :func:`pack` chooses (``None``: the
    planner's rows are as small); ``None`` when there are fewer than two instances."""
    chosen = _candidates(session, rows, own, d, extra_gap, whole)
    return None if chosen is None else chosen[:2]


def _candidates(session: Session, rows: list[kdb.Cell], own: list[tuple[int, int]], d: Dims,
                extra_gap: int, whole: list[list[int]] | None = None
                ) -> tuple[Packing, Packing | None, list[Packing]] | None:
    """:func:`choose`'s answer and every packing it weighed."""
    tech = session.need_tech()
    layout = session.layout
    items = _items(session, rows)
    if len(items) < 2:
        return None
    cache: dict[int, abut.Extents] = {}
    exts: dict[str, abut.Extents] = {}
    for item in items:
        if item.block not in exts:
            e = abut.extents(tech, layout, layout.cell(item.name), cache)
            exts[item.block] = e.moved(kdb.Trans(-e.bbox.left, -e.bbox.bottom))
    gaps: dict[tuple[str, str], int] = {}

    def gap(a: Item, b: Item) -> int:
        key = (a.block, b.block)
        if key not in gaps:
            gaps[key] = abut.required_gap(tech, exts[a.block], exts[b.block], "x", extra_gap)
        return gaps[key]

    margins = (2 * 3 * d.px, 2 * d.py + 2 * d.c_out)
    by_name = {i.name: i for i in items}
    row_items = [[by_name[inst.cell.name] for inst in sorted(r.each_inst(), key=lambda i: i.bbox().left)]
                 for r in rows]
    planner = _estimate(row_items, own, margins, gap)
    if whole:
        tiles, loose = _tiles(row_items, whole, gap)
        floor = max([t.width for t in tiles] + [i.width for i in loose] + [w for w, _h in own])
        ordered = sorted(loose, key=lambda i: (-i.height, i.block, i.order))
        widths = set(_widths(ordered, floor, gap)) | _tile_widths(tiles, floor, gap)
        choices = []
        for w in sorted(widths):
            units = _tile_shelves(tiles, loose, w, gap)
            packing = _estimate([shelf for unit in units for shelf in unit], own, margins, gap)
            packing.units = [len(unit) for unit in units]
            choices.append(packing)
    else:
        ordered = sorted(items, key=lambda i: (-i.height, i.block, i.order))
        floor = max([i.width for i in items] + [w for w, _h in own])
        choices = [_estimate(_shelves(ordered, w, gap), own, margins, gap)
                   for w in _widths(ordered, floor, gap)]
    fitting = [p for p in choices if p.aspect <= MAX_ASPECT]
    if fitting:
        best = min(fitting, key=lambda p: (p.area, p.width))
    else:
        best = min(choices, key=lambda p: (p.aspect, p.area))
    if planner.aspect <= MAX_ASPECT and best.area >= (1 - ESTIMATE_ERROR) * planner.area:
        return planner, None, choices
    return planner, best, choices


def run_widths(session: Session, rows: list[kdb.Cell], extra_gap: int) -> dict[str, list[int]]:
    """Per block of the rows ``rows``: the widths of runs of 1, 2, … of its instances side
    by side (as many as it has), the gaps ``layout.place`` leaves between them."""
    tech = session.need_tech()
    items = _items(session, rows)
    cache: dict[int, abut.Extents] = {}
    runs: dict[str, list[int]] = {}
    for block in dict.fromkeys(i.block for i in items):
        mine = [i for i in items if i.block == block]
        e = abut.extents(tech, session.layout, session.layout.cell(mine[0].name), cache)
        e = e.moved(kdb.Trans(-e.bbox.left, -e.bbox.bottom))
        gap = abut.required_gap(tech, e, e, "x", extra_gap)
        runs[block] = [k * mine[0].width + (k - 1) * gap for k in range(1, len(mine) + 1)]
    return runs


def _nets_of(session: Session, shelves: list[list[str]], devices: list[dict[str, Any]]
             ) -> dict[str, frozenset[str] | None]:
    """Each instance's nets that some other device also touches (a net of one device needs
    no track); ``None`` for a passive device (its shelf is never turned)."""
    terminals = {dev["id"]: set((dev.get("terminals") or {}).values()) for dev in devices}
    touched = Counter(net for nets in terminals.values() for net in nets)
    out: dict[str, frozenset[str] | None] = {}
    for name in (n for shelf in shelves for n in shelf):
        rec = session.cells.get(name)
        if rec is None or rec.kind != "block":
            out[name] = None
            continue
        nets = terminals.get(str(rec.params.get("device_id")), set())
        out[name] = frozenset(net for net in nets if touched[net] > 1)
    return out


def packed_rows(session: Session, rows: list[str], d: Dims, cell_name: str,
                place: Callable[[Session, dict[str, Any]], Any], extra_gap_um: float,
                whole_rows: list[list[str]] | None = None, rank: int = 0,
                devices: list[dict[str, Any]] | None = None,
                has_ports: bool = False) -> tuple[list[str], list[str], list[str] | None]:
    """``rows`` with its rows of blocks packed by real size (new row cells drawn by
    ``place``, ``layout.place``'s skill function, with the extra gap ``extra_gap_um``), and
    the row cells the packing replaced (to drop once routed); ``rows`` unchanged and no
    cell to drop when there is nothing to pack or the planner's rows are as small.
    ``whole_rows``: groups of row names kept whole, one above the other (a group naming a
    row that is not one of blocks is left out: its rows are not packed at all).  ``rank``:
    the rank-th of the distinct packings weighed (:func:`ranked`; 0: the smallest estimate).
    ``devices``: the cell's devices (``route.nets``' list): the rows in the order whose
    channels hold the fewest nets (:mod:`.shelf_order`; ``has_ports``: a block, its rows
    paired from row 1) come third when it is not the packing's own (else ``None``), for the
    caller to route both and keep the smaller."""
    tech = session.need_tech()
    cells = [session.any_cell(name) for name in rows]
    of_blocks = [i for i, cell in enumerate(cells) if packable(session, cell)]
    groups = [group for group in whole_rows or [] if group]
    packable_names = {rows[i] for i in of_blocks}
    left_out = {name for group in groups if not set(group) <= packable_names for name in group}
    of_blocks = [i for i in of_blocks if rows[i] not in left_out]
    if not any(_holds_blocks(session, cells[i]) for i in of_blocks):
        return rows, [], None
    own = [(c.bbox().width(), c.bbox().height()) for i, c in enumerate(cells) if i not in of_blocks]
    extra = tech.snap_up(extra_gap_um * 1000)
    at_row = {rows[i]: k for k, i in enumerate(of_blocks)}
    whole = [[at_row[name] for name in group] for group in groups if set(group) <= at_row.keys()]
    packing = pack(session, [cells[i] for i in of_blocks], own, d, extra, whole, rank)
    if packing is None:
        return rows, [], None
    at = of_blocks[0]
    new_rows: list[str] = []
    for shelf in packing.rows:
        name = session.unique_name(f"{cell_name}_BROW{len(new_rows)}")
        place(session, {"cell_name": name, "rows": [{"cells": shelf, "gap": extra_gap_um}]})
        new_rows.append(name)
    other: list[str] | None = None
    if devices is not None:
        weights = Weights(d.py * packing.width, d.px * packing.height)
        shelves = reordered(packing.rows, packing.units, _nets_of(session, packing.rows, devices),
                            1 if has_ports and at == 0 else 0, weights)
        if shelves != packing.rows:
            other = [new_rows[packing.rows.index(shelf)] for shelf in shelves]
    kept = [name for i, name in enumerate(rows) if i not in of_blocks]
    before = [name for i, name in enumerate(rows) if i not in of_blocks and i < at]
    replaced = [rows[i] for i in of_blocks]
    if other is not None:
        other = before + other + kept[len(before):]
    return before + new_rows + kept[len(before):], replaced, other
