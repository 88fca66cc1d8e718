"""A block drawn again wider and lower for its parent's rows of blocks (issue 26).

A block whose width is set by a plate capacitor in a row of its own (a bias block's
decoupling capacitor: a square plate over a few short MOS rows) stands in its parent's
rows with the rest of the shelf beside it empty, as tall as the plate.  Before the
parent's rows are packed (:mod:`.block_packing`), each such block instanced once there is
drawn again for every width a run of another block's instances takes in the parent
(wider than the block, at most twice as wide): the capacitor's plate is as much longer
and as much narrower as keeps its plate area (its capacitance) at least the drawn one,
its row placed again with the same gaps, the block routed again with its own
``route.nets`` arguments and instanced under a new name.  The variant whose packing is
estimated smallest (:func:`.block_packing.choose`) replaces the instance in the parent's
rows; the other variants' cells are dropped, and when a variant was chosen, the block it
replaces — whose names the variant's cells then take (block, instance, plate, row, rails), so
the parent's figures and the search's block records still name the block.  Both sides of
that choice are packings by the same estimate: no margin for its error is asked.

Only the capacitor changes: its value, its nets and the block's other rows are as they
were; same input, same variants.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from centroid_skills.errors import SkillError
from centroid_skills.routing.block_packing import choose, packable, run_widths
from centroid_skills.routing.dims import Dims
from centroid_skills.session import Session, um

#: a variant is drawn for runs of another block at most this many times the block's width
MOST_WIDENING = 2.0
#: the most tries at a plate's width that keeps its area (each adds a stripe's pitch)
PLATE_TRIES = 6

Skill = Callable[[Session, dict[str, Any]], Any]


@dataclass(frozen=True)
class Plate:
    """The capacitor setting a block's width: its cell, its row and its place in it."""

    block: str  # the block cell
    row: str  # the planner's row holding the capacitor (a row of passives)
    cell: str  # the capacitor's device cell
    device_id: str


def _plate(session: Session, block: str) -> Plate | None:
    """The plate capacitor standing in a row of passives as wide as ``block``'s widest row,
    when the block was routed with its ``route.nets`` arguments recorded."""
    rec = session.cells.get(block)
    args = rec.params.get("route_args") if rec is not None else None
    if not args:
        return None
    widths = {name: session.any_cell(name).bbox().width() for name in args["rows"]}
    widest = max(widths.values())
    for name in args["rows"]:
        insts = list(session.any_cell(name).each_inst())
        kinds = [session.cells.get(i.cell.name) for i in insts]
        if widths[name] < widest or any(k is None or k.kind not in ("resistor", "capacitor") for k in kinds):
            continue
        caps = [k for k in kinds if k is not None and k.kind == "capacitor" and "stripes" in k.params]
        if caps:
            cap = max(caps, key=lambda k: session.any_cell(k.name).bbox().width())
            return Plate(block, name, cap.name, str(cap.params["device_id"]))
    return None


def _row_gap(session: Session, row: str) -> float:
    """The narrowest gap between neighbours of a placed row, µm (0: one cell)."""
    boxes = sorted((i.bbox() for i in session.any_cell(row).each_inst()), key=lambda b: b.left)
    gaps = [b.left - a.right for a, b in zip(boxes, boxes[1:], strict=False)]
    return um(min(gaps)) if gaps else 0.0


def _drop(session: Session, names: list[str]) -> None:
    """Delete the cells ``names`` and every cell below them used nowhere else."""
    layout = session.layout
    before = {c.name for c in layout.each_cell()}
    for name in names:
        cell = layout.cell(name)
        if cell is not None:
            layout.prune_cell(cell.cell_index(), -1)
    for name in before - {c.name for c in layout.each_cell()}:
        session.cells.pop(name, None)


class Variants:
    """Builds the wider variants of one block (cells named after the parent ``cell_name``)."""

    def __init__(self, session: Session, cell_name: str, skills: dict[str, Skill]) -> None:
        self.session = session
        self.cell_name = cell_name
        self.skills = skills

    def capacitor(self, plate: Plate, length: int, name: str) -> str | None:
        """A capacitor cell ``name`` of plate length ``length`` nm, narrower than ``plate``'s
        by as much, its plate area at least the original's (``None``: no such plate)."""
        session = self.session
        tech = session.need_tech()
        rec = session.cells[plate.cell]
        w, l0 = tech.nm(rec.params["w"]), tech.nm(rec.params["l"])
        area = float(rec.params["plate_area_um2"])
        width = tech.snap_up(w * l0 / length)
        step = tech.snap_up(w / max(1, int(rec.params["stripes"])))
        for _ in range(PLATE_TRIES):
            self.skills["create_device"](session, {"device_id": plate.device_id, "type": "capacitor",
                                                   "w": width * 1e-9, "l": length * 1e-9,
                                                   "cell_name": name})
            if float(session.cells[name].params["plate_area_um2"]) >= area:
                return name
            _drop(session, [name])
            width += step
        return None

    def build(self, plate: Plate, instance: str, device_id: str, target: int, k: int) -> dict[str, str] | None:
        """``plate.block`` drawn again about ``target`` nm wide: the new cells by the names
        they replace (the instance, the block, the capacitor and its row); ``None`` when no
        plate of that length holds the area or the block does not route."""
        session = self.session
        grow = target - session.any_cell(plate.block).bbox().width()
        length = session.need_tech().nm(session.cells[plate.cell].params["l"]) + grow
        base = f"{self.cell_name}_V{k}"
        cap = self.capacitor(plate, length, session.unique_name(f"{base}_{plate.cell}"))
        if cap is None:
            return None
        made = {plate.cell: cap, plate.row: session.unique_name(f"{base}_{plate.row}")}
        cells = [cap if i.cell.name == plate.cell else i.cell.name
                 for i in sorted(session.any_cell(plate.row).each_inst(), key=lambda i: i.bbox().left)]
        self.skills["place"](session, {"cell_name": made[plate.row],
                                       "rows": [{"cells": cells, "gap": _row_gap(session, plate.row)}]})
        args = dict(session.cells[plate.block].params["route_args"])
        args["cell_name"] = made[plate.block] = session.unique_name(f"{base}_{plate.block}")
        args["rows"] = [made[plate.row] if r == plate.row else r for r in args["rows"]]
        try:
            self.skills["route"](session, args)
        except SkillError:  # the route left nothing behind: drop the row and the plate
            _drop(session, [made[plate.row]])
            return None
        made[instance] = session.unique_name(f"{base}_{instance}")
        self.skills["instantiate_block"](session, {"block": made[plate.block], "device_id": device_id,
                                                   "cell_name": made[instance]})
        return made


def _rename(session: Session, made: dict[str, str]) -> None:
    """The cells ``made`` take the names of those they replaced (dropped): the block keeps
    its name in the parent's figures."""
    made = dict(made)
    for old, new in list(made.items()):  # the cells named after a new one (a block's rails)
        for cell in session.layout.each_cell():
            if cell.name.startswith(f"{new}_"):
                made[old + cell.name[len(new):]] = cell.name
    for old, new in made.items():
        if session.layout.cell(old) is not None:
            continue
        session.layout.cell(new).name = old
        rec = session.cells.pop(new, None)
        if rec is not None:
            rec.name = old
            session.cells[old] = rec
    back = {new: old for old, new in made.items() if session.layout.cell(old) is not None}
    for rec in session.cells.values():
        if rec.kind != "block":
            continue
        if rec.params.get("block") in back:
            rec.params["block"] = back[rec.params["block"]]
        for params in (rec.params, rec.params.get("route_args") or {}):
            if "rows" in params:
                params["rows"] = [back.get(r, r) for r in params["rows"]]


def reshaped_rows(session: Session, rows: list[str], d: Dims, cell_name: str, skills: dict[str, Skill],
                  extra_gap_um: float, whole_rows: list[list[str]] | None = None) -> tuple[list[str], list[str]]:
    """``rows`` with each block instanced once whose width a plate capacitor sets replaced
    by the variant whose packing is estimated smallest (its parent row placed again, by
    ``skills["place"]``), and the row cells replaced (to drop once routed).  A block in a
    row kept whole (``whole_rows``) is left as it is."""
    tech = session.need_tech()
    extra = tech.snap_up(extra_gap_um * 1000)
    cells = [session.any_cell(name) for name in rows]
    of_blocks = [i for i, cell in enumerate(cells) if packable(session, cell)]
    if not of_blocks:
        return rows, []
    instances = {inst.cell.name: i for i in of_blocks for inst in cells[i].each_inst()}
    by_block: dict[str, list[str]] = {}
    for name in instances:
        rec = session.cells.get(name)
        if rec is not None and rec.kind == "block" and "device_id" in rec.params:
            by_block.setdefault(str(rec.params["block"]), []).append(name)
    runs = run_widths(session, [cells[i] for i in of_blocks], extra)
    own = [(c.bbox().width(), c.bbox().height()) for i, c in enumerate(cells) if i not in of_blocks]
    replaced: list[str] = []
    devices = dict(session.devices)
    for block, names in by_block.items():
        plate = _plate(session, block) if len(names) == 1 else None
        if plate is None:
            continue
        instance = names[0]
        if any(rows[instances[instance]] in group for group in whole_rows or []):
            continue
        width = session.any_cell(block).bbox().width()
        targets = sorted({w for other, widths in runs.items() if other != block for w in widths
                          if width < w <= MOST_WIDENING * width})
        if not targets:
            continue

        def estimate(row_names: list[str]) -> int:
            packed = [session.any_cell(rows_i) for rows_i in row_names]
            chosen = choose(session, packed, own, d, extra)
            assert chosen is not None
            planner, best = chosen
            return (best or planner).area

        at = instances[instance]
        parent_row = rows[at]
        row_cells = [i.cell.name for i in sorted(cells[at].each_inst(), key=lambda i: i.bbox().left)]
        block_rows = [rows[i] for i in of_blocks]
        options: list[tuple[int, str, str]] = [(estimate(block_rows), instance, parent_row)]
        variants = Variants(session, cell_name, skills)
        device_id = str(session.cells[instance].params["device_id"])
        made: dict[str, dict[str, str]] = {instance: {}}
        for k, target in enumerate(targets):
            variant = variants.build(plate, instance, device_id, target, k)
            if variant is None:
                continue
            name = variant[instance]
            made[name] = variant
            row = session.unique_name(f"{cell_name}_V{k}_{parent_row}")
            skills["place"](session, {"cell_name": row, "rows": [{"cells": [
                name if c == instance else c for c in row_cells], "gap": _row_gap(session, parent_row)}]})
            options.append((estimate([row if r == parent_row else r for r in block_rows]), name, row))
        best = min(options, key=lambda o: o[0])
        for _area, name, row in options:
            if name != best[1] and name != instance:
                _drop(session, [row, name])
        session.devices.clear()
        session.devices.update(devices)
        if best[1] == instance:
            continue
        _drop(session, [instance])  # the block drawn before, now used nowhere
        _rename(session, made[best[1]])
        rows = [best[2] if r == parent_row else r for r in rows]
        cells[at] = session.any_cell(best[2])
        replaced.append(parent_row)
    return rows, replaced
