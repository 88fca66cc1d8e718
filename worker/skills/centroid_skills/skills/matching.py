"""Matched-device modules: common-centroid pairs, interdigitated groups, dummies.

A module is one cell holding instances of *unit* cells (one unit = one device instance
of ``nf`` fingers, drawn by :func:`centroid_skills.skills.devices.make_device` with
``m = 1``).  Devices of equal type/w/l/nf share a single unit cell, so every unit is
geometrically identical and every unit has the same orientation (R0).  Units sit in
rows at a uniform pitch; the gap between units comes from the rules
(:mod:`centroid_skills.abut`), with well/implant bridges where needed.

Arrangements (``layout.create_common_centroid_pair``), for m units per device:

* ``ABBA``  -- one row, (ABBA) repeated m/2 times (needs m even); centroids coincide.
* ``ABAB``  -- one row, (AB) repeated m times; centroids differ by one pitch.
* ``2D``    -- two rows, row 0 = an ABBA-style row of m units, row 1 = the same row with
  A and B swapped (ABBA/BAAB, or AB/BA for m = 2: the cross-coupled quad); needs m even.
* a custom pattern of letters A/B with ``/`` between rows, e.g. ``AABB`` or ``ABBA/BAAB``.

Interdigitated groups (``layout.create_interdigitated_group``): n devices with unit
counts c_i, any number of them, in one row — or, when one row would be too long, in a
2-D grid as square as the pitches allow (:mod:`centroid_skills.matched_array`: units in
point-symmetric pairs handed out from the centre outwards, so e.g. 1:2:4 in one row
gives C B C A C B C).  Devices with odd counts beyond the first are placed nearest the
centre and are reported as not exactly centred.  Shared diffusion is drawn in one-row
arrays only.
"""

from __future__ import annotations

from typing import Any

import klayout.db as kdb

from centroid_skills import abut, matched_array, shared_diffusion
from centroid_skills.errors import invalid
from centroid_skills.registry import LENGTH_M, NAME, obj, skill
from centroid_skills.session import CellRecord, Pin, Session, um, unit_trans
from centroid_skills.skills.devices import MAX_FINGERS, cell_summary, make_device

MOS_DEVICE = obj(
    {
        "device_id": NAME,
        "type": {"enum": ["nmos", "pmos"]},
        "w": {**LENGTH_M, "maximum": 1e-2,
              "description": "total width of one instance (split over nf fingers, each at most 1 mm)"},
        "l": LENGTH_M,
        "nf": {"type": "integer", "minimum": 1, "maximum": MAX_FINGERS, "default": 1},
        "m": {"type": "integer", "minimum": 1, "default": 1,
              "description": "number of unit instances of this device"},
    },
    ["device_id", "type", "w", "l"],
)


SHARE_DIFFUSION = {"type": "boolean", "default": False,
                   "description": "the devices share their gate and source nets: neighbouring units "
                                  "facing the same net share one source/drain region where the "
                                  "rules allow (odd-finger units then alternate orientation)"}


def unit_key(spec: dict[str, Any]) -> tuple[Any, ...]:
    return (spec["type"], float(spec["w"]), float(spec["l"]), int(spec.get("nf", 1)))


def pattern_rows(arrangement: str, m: int) -> list[str]:
    arr = arrangement.upper()
    if arr == "ABBA":
        if m % 2:
            raise invalid("ABBA needs an even m per device (use ABAB or a custom pattern)", m=m,
                          reason="odd_unit_count")
        return ["ABBA" * (m // 2)]
    if arr == "ABAB":
        return ["AB" * m]
    if arr in ("2D", "COMMON_CENTROID_2D", "CROSS", "ABBA/BAAB"):
        if m % 2:
            raise invalid("a 2-D common-centroid pair needs an even m per device", m=m,
                          reason="odd_unit_count")
        row0 = "ABBA" * (m // 4) + ("AB" if m % 4 else "")
        row1 = row0.translate(str.maketrans("AB", "BA"))
        return [row0, row1]
    rows = [r for r in arr.split("/")]
    if not rows or any(not r or set(r) - {"A", "B"} for r in rows):
        raise invalid("arrangement must be ABBA, ABAB, 2D or a pattern of A/B with '/' between rows",
                      arrangement=arrangement)
    return rows


def interdigitate(counts: dict[str, int]) -> tuple[list[str], list[str]]:
    """One symmetric row for devices with the given unit counts; returns (row, off-centre ids)."""
    (row,), off_centre = matched_array.arrange(counts, 1, sum(counts.values()))
    return [key for key in row if key is not None], off_centre


def unit_pitches(session: Session, unit_cells: dict[str, CellRecord]
                 ) -> tuple[dict[str, abut.Extents], tuple[int, int], tuple[int, int]]:
    """The unit cells' extents, the rule gaps between any two of them (x, y) and the
    array's pitches (x, y): the widest/tallest unit plus its gap."""
    tech = session.need_tech()
    layout = session.layout
    cache: dict[int, abut.Extents] = {}
    exts = {k: abut.extents(tech, layout, layout.cell(rec.name), cache) for k, rec in unit_cells.items()}
    keys = list(unit_cells)
    gap_x = max(abut.required_gap(tech, exts[a], exts[b], "x") for a in keys for b in keys)
    gap_y = max(abut.required_gap(tech, exts[a], exts[b], "y") for a in keys for b in keys)
    unit_w = max(e.bbox.width() for e in exts.values())
    unit_h = max(e.bbox.height() for e in exts.values())
    return exts, (gap_x, gap_y), (unit_w + gap_x, unit_h + gap_y)


def build_module(session: Session, name: str, kind: str, rows: list[list[str | None]],
                 unit_cells: dict[str, CellRecord], device_ids: dict[str, str],
                 letters: dict[str, str], share: bool = False) -> CellRecord:
    """Place unit cells (rows of keys into ``unit_cells``) at a uniform pitch — or, with
    ``share`` (the devices share gate and source nets) and one unit cell for all, on one
    diffusion where neighbours face the same net (:mod:`centroid_skills.shared_diffusion`)."""
    tech = session.need_tech()
    layout = session.layout
    exts, (gap_x, gap_y), (pitch_x, pitch_y) = unit_pitches(session, unit_cells)
    keys = list(unit_cells)
    one_unit = len({rec.name for rec in unit_cells.values()}) == 1
    one_row_each = all(None not in row for row in rows)
    shape = (shared_diffusion.unit_shape(session, unit_cells[keys[0]])
             if share and one_unit and one_row_each else None)
    cell = session.new_cell(name)
    rec = CellRecord(name=name, kind=kind)
    placed: list[list[tuple[int, str, kdb.Trans]]] = []
    counters: dict[str, int] = {}
    shared = 0
    for ri, row in enumerate(rows):
        columns = [ci for ci, key in enumerate(row) if key is not None]  # spare slots: None
        row = [key for key in row if key is not None]
        if shape is None:  # unit bboxes aligned on the pitch grid
            transforms = [kdb.Trans(ci * pitch_x - exts[key].bbox.left, ri * pitch_y - exts[key].bbox.bottom)
                          for ci, key in zip(columns, row, strict=True)]
            zones: list[kdb.Box] = []
        else:
            ex = exts[row[0]]
            transforms, zones, joined = _shared_row(session, unit_cells[keys[0]], shape,
                                                    [device_ids[k] for k in row], ex, gap_x,
                                                    ri * pitch_y - ex.bbox.bottom)
            shared += len(zones)
            run: list[kdb.Trans] = []
            for trans, with_previous in zip(transforms, joined, strict=True):
                if not with_previous:
                    shared_diffusion.straps(session, cell, unit_cells[keys[0]], run)
                    run = []
                run.append(trans)
            shared_diffusion.straps(session, cell, unit_cells[keys[0]], run)
        row_items = []
        for ci, key, trans in zip(columns, row, transforms, strict=True):
            ex = exts[key]
            cell.insert(kdb.CellInstArray(layout.cell(unit_cells[key].name).cell_index(), trans))
            row_items.append((ci, key, trans))
            dev = device_ids[key]
            counters[dev] = counters.get(dev, 0) + 1
            inst_name = f"{dev}_{letters[key]}{counters[dev]}"
            centre = ex.bbox.transformed(trans).center()
            rec.units.append({
                "instance": inst_name, "device_id": dev, "letter": letters[key], "row": ri,
                "col": ci, "x_um": um(centre.x), "y_um": um(centre.y),
                "origin_um": [um(trans.disp.x), um(trans.disp.y)],
                "orientation": "M90" if trans.is_mirror() else "R0",
                "unit_cell": unit_cells[key].name, "dummy": False,
            })
            for pin in unit_cells[key].pins:
                moved = pin.transformed(trans)
                rec.pins.append(Pin(f"{inst_name}.{pin.name}", moved.layer, moved.role, moved.box))
        for zone in zones:
            shared_diffusion.close_shared(tech, layout, cell, zone)
        placed.append(row_items)
    if shared:
        shared_diffusion.join_pins(session, cell, rec.units)
    # bridges between neighbours (wells, implants) and between rows
    for ri, row_items in enumerate(placed):
        for (_, ka, ta), (_, kb, tb) in zip(row_items, row_items[1:], strict=False):
            abut.draw_bridges(tech, layout, cell, abut.bridges(tech, exts[ka].moved(ta), exts[kb].moved(tb), "x"))
        if ri + 1 < len(placed):  # the unit above in the same column
            above = {ci: (key, trans) for ci, key, trans in placed[ri + 1]}
            for ci, ka, ta in row_items:
                if ci in above:
                    kb, tb = above[ci]
                    abut.draw_bridges(tech, layout, cell,
                                      abut.bridges(tech, exts[ka].moved(ta), exts[kb].moved(tb), "y"))
    abut.close_mergeable(tech, layout, cell)
    rec.params = {"pitch_x_um": um(pitch_x), "pitch_y_um": um(pitch_y), "gap_x_um": um(gap_x),
                  "gap_y_um": um(gap_y),
                  "rows": ["".join("." if k is None else letters[k] for k in r) for r in rows],
                  "shared_regions": shared}
    rec.device_area_nm2 = sum(unit_cells[k].device_area_nm2 for r in rows for k in r if k is not None)
    session.cells[name] = rec
    return rec


def _shared_row(session: Session, unit: CellRecord, shape: shared_diffusion.UnitShape,
                devices: list[str], ex: abut.Extents, gap_x: int,
                y: int) -> tuple[list[kdb.Trans], list[kdb.Box], list[bool]]:
    """Transformations of one row's units, neighbours facing the same net on one
    diffusion where the rules allow it, else a rule gap apart; the shared zones; per
    unit whether it shares a region with the unit before it."""
    mirrors = shared_diffusion.orientations(shape, devices)
    transforms: list[kdb.Trans] = []
    zones: list[kdb.Box] = []
    joined: list[bool] = []
    for ci, (device, mirrored) in enumerate(zip(devices, mirrors, strict=True)):
        if ci == 0:
            trans = _at_bbox_left(ex, mirrored, 0, y)
        else:
            prev = transforms[-1]
            _, prev_right = shared_diffusion.active_range(shape, prev)
            facing = shared_diffusion.terminals(shape, mirrors[ci - 1], devices[ci - 1])[1]
            left = shared_diffusion.terminals(shape, mirrored, device)[0]
            if facing == left and shared_diffusion.boundary_fits(
                    session, unit, shape, mirrors[ci - 1], mirrored, same_drain=left != "S"):
                trans = shared_diffusion.placement(shape, mirrored, prev_right - shape.region, y)
                height = ex.bbox.moved(0, y)
                zones.append(shared_diffusion.shared_zone(shape, prev_right, height))
                joined.append(True)
                transforms.append(trans)
                continue
            # a rule gap between the units as they stand (a mirrored unit shows its other side)
            before = ex.moved(prev)
            here = ex.moved(_at_bbox_left(ex, mirrored, 0, y))
            gap = max(gap_x, abut.required_gap(session.need_tech(), before, here, "x"))
            trans = _at_bbox_left(ex, mirrored, before.bbox.right + gap, y)
        joined.append(False)
        transforms.append(trans)
    return transforms, zones, joined


def _at_bbox_left(ex: abut.Extents, mirrored: bool, left: int, y: int) -> kdb.Trans:
    """A unit's transformation putting its bbox's left edge at ``left``."""
    if mirrored:
        return kdb.Trans(kdb.Trans.M90, left + ex.bbox.right, y)
    return kdb.Trans(left - ex.bbox.left, y)


def group_entry(rec: CellRecord, devices: list[str]) -> dict[str, Any]:
    return {"devices": devices, "module": rec.name}


@skill(
    "layout.create_common_centroid_pair",
    "Two same-type MOS devices A and B as matched unit instances in one cell: ABBA, ABAB, "
    "2D (ABBA/BAAB in two rows) or a custom A/B pattern; uniform orientation; unit gaps "
    "from the rules. Returns the unit instances with positions and pins.",
    obj({"device_a": MOS_DEVICE, "device_b": MOS_DEVICE,
         "arrangement": {"type": "string", "minLength": 2, "maxLength": 200, "default": "ABBA",
                         "description": "ABBA | ABAB | 2D | custom pattern like AABB or ABBA/BAAB"},
         "share_diffusion": SHARE_DIFFUSION, "cell_name": NAME},
        ["device_a", "device_b"]),
)
def create_cc_pair(session: Session, args: dict[str, Any]) -> dict[str, Any]:
    a, b = args["device_a"], args["device_b"]
    if a["type"] != b["type"]:
        raise invalid("Devices must be same type for matching",
                      device_a_type=a["type"], device_b_type=b["type"])
    if a["device_id"] == b["device_id"]:
        raise invalid("device_a and device_b need different device_id", device_id=a["device_id"])
    ma, mb = int(a.get("m", 1)), int(b.get("m", 1))
    arrangement = args.get("arrangement", "ABBA")
    if arrangement.upper() in ("ABBA", "ABAB", "2D", "COMMON_CENTROID_2D", "CROSS", "ABBA/BAAB") and ma != mb:
        raise invalid("standard arrangements need the same m for A and B", m_a=ma, m_b=mb)
    rows_txt = pattern_rows(arrangement, ma)
    n_a = sum(r.count("A") for r in rows_txt)
    n_b = sum(r.count("B") for r in rows_txt)
    if (n_a, n_b) != (ma, mb):
        raise invalid("the arrangement does not hold m units of each device",
                      units_a=n_a, units_b=n_b, m_a=ma, m_b=mb)
    name = args.get("cell_name") or session.unique_name(f"cc_{a['device_id']}_{b['device_id']}")
    unit_cells: dict[str, CellRecord] = {}
    same = unit_key(a) == unit_key(b)
    ua = make_device(session, {**a, "m": 1, "device_id": None}, session.unique_name(f"{name}_unitA" if not same else f"{name}_unit"))
    unit_cells["A"] = ua
    unit_cells["B"] = ua if same else make_device(session, {**b, "m": 1, "device_id": None},
                                                   session.unique_name(f"{name}_unitB"))
    rec = build_module(session, name, "common_centroid", [list(r) for r in rows_txt], unit_cells,
                       {"A": a["device_id"], "B": b["device_id"]}, {"A": "A", "B": "B"},
                       share=bool(args.get("share_diffusion")))
    rec.params.update({"arrangement": arrangement, "device_a": a, "device_b": b})
    rec.groups.append(group_entry(rec, [a["device_id"], b["device_id"]]))
    session.devices[a["device_id"]] = name
    session.devices[b["device_id"]] = name
    return module_result(session, rec)


def module_result(session: Session, rec: CellRecord) -> dict[str, Any]:
    out = cell_summary(session, rec)
    out["device_instances"] = [u["instance"] for u in rec.units]
    out["units"] = rec.units
    out["pins"] = {p.name: p.to_dict() for p in rec.pins}
    return out


@skill(
    "layout.create_interdigitated_group",
    "Ratioed or matched devices (e.g. a mirror with unit counts 1:2:4, or 32 units of 2-4 "
    "devices) in one cell, common-centroid: one row, or (rows > 1 or auto) a 2-D grid, with "
    "auto as square as the units' pitches allow (each device's units in point-symmetric "
    "pairs about the array's centre). All devices share one unit (same type, w, l, nf).",
    obj({"devices": {"type": "array", "minItems": 2,
                     "items": obj({**MOS_DEVICE["properties"],
                                   "units": {"type": "integer", "minimum": 1,
                                             "description": "unit count (defaults to m)"}},
                                  ["device_id", "type", "w", "l"])},
         "rows": {"oneOf": [{"type": "integer", "minimum": 1}, {"const": "auto"}], "default": 1,
                  "description": "rows of the array: a number, or auto — one row unless it would "
                                 f"be more than {matched_array.LONGEST_ROW_ASPECT:g} times longer "
                                 "than tall, then the squarest grid (route.nets routes one-row "
                                 "modules only)"},
         "share_diffusion": {**SHARE_DIFFUSION, "description": SHARE_DIFFUSION["description"]
                             + " (one-row arrays only)"},
         "cell_name": NAME},
        ["devices"]),
)
def create_interdigitated(session: Session, args: dict[str, Any]) -> dict[str, Any]:
    devs = args["devices"]
    ids = [d["device_id"] for d in devs]
    if len(set(ids)) != len(ids):
        raise invalid("device ids must be unique", device_ids=ids)
    keys = {unit_key(d) for d in devs}
    if len(keys) != 1:
        raise invalid("interdigitated devices must share type, w, l and nf (ratios come from unit counts)",
                      units=[{"device_id": d["device_id"], "type": d["type"], "w": d["w"],
                              "l": d["l"], "nf": d.get("nf", 1)} for d in devs])
    counts = {d["device_id"]: int(d.get("units", d.get("m", 1))) for d in devs}
    name = args.get("cell_name") or session.unique_name(_group_name(ids))
    unit = make_device(session, {**devs[0], "m": 1, "device_id": None}, session.unique_name(f"{name}_unit"))
    letters = {d: _letter(i) for i, d in enumerate(ids)}
    unit_cells = {d: unit for d in ids}
    _, _, (pitch_x, pitch_y) = unit_pitches(session, {"U": unit})
    rows = args.get("rows", 1)
    shape = matched_array.grid_shape(sum(counts.values()), pitch_x, pitch_y,
                                     None if rows == "auto" else int(rows))
    grid, off_centre = matched_array.arrange(counts, *shape, pitch_x, pitch_y)
    rec = build_module(session, name, "interdigitated", grid, unit_cells, {d: d for d in ids}, letters,
                       share=bool(args.get("share_diffusion")) and shape[0] == 1)
    rec.params.update({"counts": counts, "not_centred": off_centre, "letters": letters,
                       "grid": list(shape)})
    rec.groups.append(group_entry(rec, ids))
    for d in ids:
        session.devices[d] = name
    out = module_result(session, rec)
    out["pattern"] = "/".join(rec.params["rows"])
    out["not_centred"] = off_centre
    return out


def _group_name(ids: list[str]) -> str:
    """A group's default cell name: its device ids, or for many the first and the count
    (a cell name stays well within the 200 characters a name may have)."""
    joined = "idg_" + "_".join(ids)
    return joined if len(joined) <= 64 else f"idg_{ids[0][:40]}_and_{len(ids) - 1}_more"


def _letter(index: int) -> str:
    """A device's letter in the pattern: A-Z, then a-z, then digits and more letters."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    return alphabet[index] if index < len(alphabet) else f"<{index}>"


# --------------------------------------------------------------------------------------------
# dummies
# --------------------------------------------------------------------------------------------

@skill(
    "layout.add_dummies",
    "Add dummy devices at both ends of every row of a module (or around a single MOS device "
    "cell, in a new wrapper cell). A dummy is one gate finger of the end unit's finger width "
    "and length with all terminals tied to one net (pins TIE: gate strap, TIE_S: source bus), "
    "marked dummy.",
    obj({"cell": NAME, "count": {"type": "integer", "minimum": 1, "maximum": 8, "default": 1},
         "cell_name": {**NAME, "description": "wrapper name when cell is a single device"}},
        ["cell"]),
)
def add_dummies(session: Session, args: dict[str, Any]) -> dict[str, Any]:
    tech = session.need_tech()
    layout = session.layout
    rec = session.record(args["cell"])
    count = int(args.get("count", 1))
    if rec.kind in ("nmos", "pmos"):
        # wrap a single device into a one-unit module first
        wrapper = args.get("cell_name") or session.unique_name(f"{rec.name}_dum")
        dev = rec.params.get("device_id") or rec.name
        rec = build_module(session, wrapper, "device_row", [["U"]], {"U": rec}, {"U": dev}, {"U": "U"})
        rec.groups.append(group_entry(rec, [dev]))
    if rec.kind not in ("common_centroid", "interdigitated", "device_row"):
        raise invalid(f"add_dummies needs a matched module or a MOS device, not {rec.kind}",
                      cell=rec.name, kind=rec.kind)
    if any(u["dummy"] for u in rec.units):
        raise invalid("the module has dummies already", cell=rec.name)
    cell = layout.cell(rec.name)
    cache: dict[int, abut.Extents] = {}
    added = []
    placed_dummies: dict[tuple[int, str, int], abut.Extents] = {}
    rows = sorted({u["row"] for u in rec.units})
    for ri in rows:
        units = sorted((u for u in rec.units if u["row"] == ri), key=lambda u: u["col"])
        for side, end in (("left", units[0]), ("right", units[-1])):
            unit_rec = session.cells[end["unit_cell"]]
            # one gate finger of the unit's finger width and length: what the end finger
            # needs around it (poly pitch, diffusion edge), not a copy of the whole unit
            spec = {"type": unit_rec.params["type"], "w": unit_rec.params["finger_w_um"] * 1e-6,
                    "l": unit_rec.params["l"], "nf": 1}
            dname = f"{unit_rec.name}_dummy"
            drec = session.cells.get(dname) or make_device(session, {**spec, "m": 1}, dname, dummy=True)
            uex = abut.extents(tech, layout, layout.cell(unit_rec.name), cache)
            dex = abut.extents(tech, layout, layout.cell(drec.name), cache)
            ut = unit_trans(end)
            prev_ex = uex.moved(ut)
            dex = dex.moved(kdb.Trans(0, ut.disp.y))  # same row height: comparable extents
            for k in range(count):
                if side == "left":
                    gap = abut.required_gap(tech, dex, prev_ex, "x")
                    gap = max(gap, int(round(rec.params.get("gap_x_um", 0) * 1000)))
                    x = prev_ex.bbox.left - gap - dex.bbox.width() - dex.bbox.left
                else:
                    gap = abut.required_gap(tech, prev_ex, dex, "x")
                    gap = max(gap, int(round(rec.params.get("gap_x_um", 0) * 1000)))
                    x = prev_ex.bbox.right + gap - dex.bbox.left
                trans = kdb.Trans(x, ut.disp.y)
                cell.insert(kdb.CellInstArray(layout.cell(drec.name).cell_index(), trans))
                moved = dex.moved(kdb.Trans(x, 0))
                pair = (moved, prev_ex) if side == "left" else (prev_ex, moved)
                abut.draw_bridges(tech, layout, cell, abut.bridges(tech, pair[0], pair[1], "x"))
                centre = moved.bbox.center()
                inst = f"DUMMY_{ri}_{side}{k + 1}"
                entry = {"instance": inst, "device_id": None, "letter": "D", "row": ri,
                         "col": (units[0]["col"] - k - 1) if side == "left" else (units[-1]["col"] + k + 1),
                         "x_um": um(centre.x), "y_um": um(centre.y),
                         "origin_um": [um(trans.disp.x), um(trans.disp.y)], "orientation": "R0",
                         "unit_cell": drec.name, "dummy": True, "side": side}
                rec.units.append(entry)
                for pin in drec.pins:
                    mp = pin.transformed(trans)
                    rec.pins.append(Pin(f"{inst}.{pin.name}", mp.layer, mp.role, mp.box))
                added.append(entry)
                placed_dummies[(ri, side, k)] = moved
                prev_ex = moved
    for (ri, side, k), ex in placed_dummies.items():  # wells/implants between stacked dummies
        above = placed_dummies.get((ri + 1, side, k))
        if above is not None:
            abut.draw_bridges(tech, layout, cell, abut.bridges(tech, ex, above, "y"))
    abut.close_mergeable(tech, layout, cell)
    rec.dummies += len(added)
    out = module_result(session, rec)
    out["dummies"] = added
    return out
