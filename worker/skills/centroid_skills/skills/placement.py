"""Placement: cells at coordinates, or in rows around a vertical symmetry axis.

* ``items``: each cell at (x, y) µm (its bbox lower-left corner, or its origin with
  ``anchor: origin``), with an orientation.  Overlapping bboxes -> CONFLICT; with
  ``check_spacing`` (default) cells closer than the rules allow (along both axes)
  -> CONFLICT as well.
* ``rows``: rows bottom to top; cells in a row left to right, bboxes bottom-aligned,
  each row centred on ``axis_x``; gaps between neighbours and between rows are the
  smallest the rules allow (:mod:`centroid_skills.abut`), wells/implants of the same
  layer that end up closer than their spacing are bridged.  Given ``devices`` (their
  terminals, as ``route.nets`` takes them), neighbouring MOS cells of a row whose facing
  terminals are one net stand on one diffusion (:mod:`centroid_skills.diffusion_runs`):
  each such run is placed as one cell.
"""

from __future__ import annotations

from typing import Any

import klayout.db as kdb

from centroid_skills import abut, diffusion_runs
from centroid_skills.errors import conflict, invalid
from centroid_skills.registry import NAME, obj, skill
from centroid_skills.session import CellRecord, Pin, Session, box_um, um
from centroid_skills.skills.devices import cell_summary

ORIENTATIONS = {
    "R0": kdb.Trans.R0, "R90": kdb.Trans.R90, "R180": kdb.Trans.R180, "R270": kdb.Trans.R270,
    "M0": kdb.Trans.M0, "M45": kdb.Trans.M45, "M90": kdb.Trans.M90, "M135": kdb.Trans.M135,
}

ITEM = obj({"cell": NAME, "name": NAME, "x": {"type": "number"}, "y": {"type": "number"},
            "orientation": {"enum": list(ORIENTATIONS), "default": "R0"},
            "anchor": {"enum": ["bbox", "origin"], "default": "bbox"}},
           ["cell", "x", "y"])
DEVICE_ITEM = {
    "type": "object", "required": ["id", "type", "terminals"],
    "properties": {
        "id": {"type": "string", "minLength": 1, "maxLength": 200},
        "type": {"enum": ["nmos", "pmos", "resistor", "capacitor", "block"],
                 "description": "block: an instance from layout.instantiate_block; its terminals "
                                "map each port net inside the block to a net here"},
        "terminals": {"type": "object", "additionalProperties": {"type": "string", "minLength": 1}},
    },
}
ROW = obj({"cells": {"type": "array", "minItems": 1, "items": NAME},
           "gap": {"type": "number", "minimum": 0, "description": "extra gap in µm"}},
          ["cells"])


class Placed:
    def __init__(self, name: str, rec_name: str, cell: kdb.Cell, trans: kdb.Trans, ex: abut.Extents) -> None:
        self.name = name
        self.rec_name = rec_name
        self.cell = cell
        self.trans = trans
        self.ex = ex.moved(trans)


def _nm(tech_snap: Any, v_um: float) -> int:
    return int(tech_snap(round(v_um * 1000)))


def place_items(session: Session, items: list[dict[str, Any]], check_spacing: bool) -> list[Placed]:
    tech = session.need_tech()
    layout = session.layout
    cache: dict[int, abut.Extents] = {}
    placed: list[Placed] = []
    for i, it in enumerate(items):
        cell = session.any_cell(it["cell"])
        rot = kdb.Trans(ORIENTATIONS[it.get("orientation", "R0")])
        x = _nm(tech.snap, float(it["x"]))
        y = _nm(tech.snap, float(it["y"]))
        if it.get("anchor", "bbox") == "bbox":
            bb = cell.bbox().transformed(rot)
            trans = kdb.Trans(x - bb.left, y - bb.bottom) * rot
        else:
            trans = kdb.Trans(x, y) * rot
        ex = abut.extents(tech, layout, cell, cache)
        placed.append(Placed(it.get("name") or f"{cell.name}_{i}", cell.name, cell, trans, ex))
    for i, a in enumerate(placed):
        for b in placed[i + 1:]:
            ov = a.ex.bbox & b.ex.bbox
            if not ov.empty() and ov.width() > 0 and ov.height() > 0:
                raise conflict(f"{a.name} and {b.name} overlap", a=a.name, b=b.name,
                               overlap_um=box_um(ov), reason="overlap")
            if check_spacing:
                too_close = _too_close(tech, a.ex, b.ex)
                if too_close:
                    raise conflict(f"{a.name} and {b.name} are closer than the rules allow",
                                   a=a.name, b=b.name, reason="too_close", **too_close)
    return placed


def _too_close(tech: Any, a: abut.Extents, b: abut.Extents) -> dict[str, Any] | None:
    """Both axis gaps below what the rules need (a pair is fine if far enough along one axis)."""
    if a.bbox.right <= b.bbox.left:
        gx, need_x = b.bbox.left - a.bbox.right, abut.required_gap(tech, a, b, "x", bridge=False)
    elif b.bbox.right <= a.bbox.left:
        gx, need_x = a.bbox.left - b.bbox.right, abut.required_gap(tech, b, a, "x", bridge=False)
    else:
        gx, need_x = -1, 0
    if a.bbox.top <= b.bbox.bottom:
        gy, need_y = b.bbox.bottom - a.bbox.top, abut.required_gap(tech, a, b, "y", bridge=False)
    elif b.bbox.top <= a.bbox.bottom:
        gy, need_y = a.bbox.bottom - b.bbox.top, abut.required_gap(tech, b, a, "y", bridge=False)
    else:
        gy, need_y = -1, 0
    ok_x = gx >= 0 and gx >= need_x
    ok_y = gy >= 0 and gy >= need_y
    if ok_x or ok_y:
        return None
    return {"gap_x_um": um(gx), "need_x_um": um(need_x), "gap_y_um": um(gy), "need_y_um": um(need_y)}


def place_rows(session: Session, rows: list[dict[str, Any]], axis_x: int, row_gap: int) -> list[Placed]:
    tech = session.need_tech()
    layout = session.layout
    cache: dict[int, abut.Extents] = {}
    placed: list[Placed] = []
    prev_row: list[Placed] = []
    y = 0
    for ri, row in enumerate(rows):
        cells = [session.any_cell(n) for n in row["cells"]]
        exts = [abut.extents(tech, layout, c, cache) for c in cells]
        extra = tech.snap_up(float(row.get("gap", 0)) * 1000)
        # x positions relative to the row start (bboxes bottom-aligned at 0)
        xs = [0]
        moved = [e.moved(kdb.Trans(-e.bbox.left, -e.bbox.bottom)) for e in exts]
        for a, b in zip(moved, moved[1:], strict=False):
            gap = abut.required_gap(tech, a, b, "x", extra)
            xs.append(xs[-1] + a.bbox.width() + gap)
        width = xs[-1] + moved[-1].bbox.width()
        x0 = tech.snap(axis_x - width / 2)
        row_items = []
        for k, (c, e) in enumerate(zip(cells, exts, strict=False)):
            row_items.append((c, e, x0 + xs[k]))
        if ri > 0:
            # the row sits at the largest height any pair needs; a pair then may end up
            # further apart than its own minimum, which can turn "touching wells/implants"
            # into "too close": repeat until every pair accepts the common height
            cands = [e.moved(kdb.Trans(x - e.bbox.left, -e.bbox.bottom)) for _c, e, x in row_items]
            need = y
            for _ in range(8):
                before = need
                for cand in cands:
                    for p in prev_row:
                        at = max(row_gap, need - p.ex.bbox.top)
                        gap = abut.required_gap(tech, p.ex, cand, "y", at)
                        need = max(need, p.ex.bbox.top + gap)
                if need == before:
                    break
            y = need
        current: list[Placed] = []
        for k, (c, e, x) in enumerate(row_items):
            trans = kdb.Trans(x - e.bbox.left, y - e.bbox.bottom)
            current.append(Placed(f"{c.name}_r{ri}_{k}", c.name, c, trans, e))
        placed += current
        prev_row = current
        y = max(p.ex.bbox.top for p in current)
    return placed


@skill(
    "layout.place",
    "Place cells into a new cell: at coordinates (items, µm; overlap -> CONFLICT) or in rows "
    "(bottom to top) centred on a vertical symmetry axis with rule-derived gaps.",
    obj({"cell_name": NAME, "items": {"type": "array", "minItems": 1, "items": ITEM},
         "rows": {"type": "array", "minItems": 1, "items": ROW},
         "axis_x": {"type": "number", "default": 0, "description": "symmetry axis x in µm"},
         "row_gap": {"type": "number", "minimum": 0, "default": 0},
         "check_spacing": {"type": "boolean", "default": True},
         "devices": {"type": "array", "items": DEVICE_ITEM,
                     "description": "the devices of the rows' cells (as route.nets takes them): "
                                    "neighbours facing one net share their source/drain region"}},
        ["cell_name"]),
)
def place(session: Session, args: dict[str, Any]) -> dict[str, Any]:
    tech = session.need_tech()
    layout = session.layout
    if ("items" in args) == ("rows" in args):
        raise invalid("give exactly one of items or rows")
    if "items" in args:
        placed = place_items(session, args["items"], bool(args.get("check_spacing", True)))
    else:
        if args.get("devices"):
            by_id = {str(dev["id"]): dev for dev in args["devices"]}
            args = {**args, "rows": [{**row, "cells": diffusion_runs.share_row(session, list(row["cells"]), by_id)}
                                     for row in args["rows"]]}
        placed = place_rows(session, args["rows"], tech.snap(float(args.get("axis_x", 0)) * 1000),
                            tech.snap_up(float(args.get("row_gap", 0)) * 1000))
    if "rows" in args:  # instance names: the cell name when it is placed once
        counts: dict[str, int] = {}
        for p in placed:
            counts[p.rec_name] = counts.get(p.rec_name, 0) + 1
        for p in placed:
            if counts[p.rec_name] == 1:
                p.name = p.rec_name
    names = [p.name for p in placed]
    if len(set(names)) != len(names):
        raise invalid("placed instance names must be unique", names=names)
    cell = session.new_cell(args["cell_name"])
    rec = CellRecord(name=cell.name, kind="placement")
    for p in placed:
        cell.insert(kdb.CellInstArray(p.cell.cell_index(), p.trans))
        child = session.cells.get(p.rec_name)
        rec.units.append({"instance": p.name, "cell": p.rec_name, "bbox_um": box_um(p.ex.bbox),
                          "x_um": um(p.ex.bbox.left), "y_um": um(p.ex.bbox.bottom),
                          "orientation": str(p.trans).split(" ")[0], "dummy": False})
        if child is not None:
            rec.device_area_nm2 += child.device_area_nm2
            for pin in child.pins:
                moved = pin.transformed(p.trans)
                rec.pins.append(Pin(f"{p.name}.{pin.name}", moved.layer, moved.role, moved.box))
    if "rows" in args:  # bridges between neighbours in a row and between rows
        by_row: list[list[Placed]] = []
        i = 0
        for row in args["rows"]:
            by_row.append(placed[i:i + len(row["cells"])])
            i += len(row["cells"])
        drawn: list[tuple[str, kdb.Box]] = []
        for ri, row_p in enumerate(by_row):
            for a, b in zip(row_p, row_p[1:], strict=False):
                drawn += abut.bridges(tech, a.ex, b.ex, "x")
            if ri + 1 < len(by_row):
                for a in row_p:
                    for b in by_row[ri + 1]:
                        drawn += abut.bridges(tech, a.ex, b.ex, "y")
        abut.draw_bridges(tech, layout, cell, drawn)
        abut.heal_bridges(tech, layout, cell, drawn)
    session.cells[cell.name] = rec
    out = cell_summary(session, rec)
    out["instances"] = rec.units
    return out


@skill(
    "layout.add_shapes",
    "Draw boxes (µm) on layers given by role (e.g. metal1) or layer name into a cell; for "
    "routing and tests.",
    obj({"cell": NAME, "shapes": {"type": "array", "minItems": 1, "maxItems": 100000, "items": obj(
        {"role": {"type": "string"}, "layer": {"type": "string"},
         "box": {"type": "array", "items": {"type": "number"}, "minItems": 4, "maxItems": 4}},
        ["box"])},
        "create": {"type": "boolean", "default": False}},
        ["cell", "shapes"]),
)
def add_shapes(session: Session, args: dict[str, Any]) -> dict[str, Any]:
    tech = session.need_tech()
    layout = session.layout
    name = args["cell"]
    cell = layout.cell(name)
    if cell is None:
        if not args.get("create"):
            session.any_cell(name)  # raises NOT_FOUND
        cell = session.new_cell(name)
        session.cells[name] = CellRecord(name=name, kind="shapes")
    for i, sh in enumerate(args["shapes"]):
        if ("role" in sh) == ("layer" in sh):
            raise invalid("each shape needs exactly one of role or layer", path=f"$.shapes[{i}]")
        if "role" in sh:
            lname = tech.require(sh["role"]).name
        else:
            lname = sh["layer"]
            if lname not in tech.layers:
                raise invalid(f"unknown layer {lname}", path=f"$.shapes[{i}].layer")
        x1, y1, x2, y2 = sh["box"]
        box = kdb.Box(tech.snap(min(x1, x2) * 1000), tech.snap(min(y1, y2) * 1000),
                      tech.snap(max(x1, x2) * 1000), tech.snap(max(y1, y2) * 1000))
        cell.shapes(tech.layer_index(layout, lname)).insert(box)
    return {"cell_name": cell.name, "bbox_um": box_um(cell.bbox()), "added": len(args["shapes"])}


@skill(
    "layout.add_label",
    "Put a text label (net name) on a layer (role, e.g. metal1_label, or layer name) at (x, y) µm.",
    obj({"cell": NAME, "text": {"type": "string", "minLength": 1, "maxLength": 200},
         "role": {"type": "string"}, "layer": {"type": "string"},
         "x": {"type": "number"}, "y": {"type": "number"}},
        ["cell", "text", "x", "y"]),
)
def add_label(session: Session, args: dict[str, Any]) -> dict[str, Any]:
    tech = session.need_tech()
    cell = session.any_cell(args["cell"])
    if "layer" in args:
        if args["layer"] not in tech.layers:
            raise invalid(f"unknown layer {args['layer']}")
        lname = args["layer"]
    else:
        lname = tech.require(args.get("role", "metal1_label")).name
    x, y = tech.snap(float(args["x"]) * 1000), tech.snap(float(args["y"]) * 1000)
    cell.shapes(tech.layer_index(session.layout, lname)).insert(kdb.Text(args["text"], kdb.Trans(x, y)))
    return {"cell_name": cell.name, "layer": lname, "at_um": [um(x), um(y)]}
