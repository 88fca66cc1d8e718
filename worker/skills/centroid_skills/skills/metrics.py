"""``layout.metrics``: area, utilisation and a matching score per matched group.

Area
  * ``bbox_area_um2``: area of the cell's bounding box.
  * ``device_area_um2``: sum of the bbox areas of every device-cell instance in the
    hierarchy (units and plain devices; a series stack drawn finger by finger counts its
    devices' cells as each measures drawn alone); dummies are not the circuit's devices: their
    cells count in ``dummy_area_um2`` / ``dummy_instances``, so a dummy costs the layout
    its area instead of raising its utilisation.
  * ``utilisation`` = device_area / bbox_area.
  * ``area_score`` = 1 / (1 + bbox_area_um2) (seed 001 §5.4.3).

Matching, for every matched group (the devices of a common-centroid pair or of an
interdigitated group, found anywhere in the hierarchy); dummies are not units:

  * c_d = mean of the centres of device d's units (the bbox of a unit's diffusion, µm,
    top-cell coordinates);
  * D = diagonal of the union of those boxes;
  * centroid error  e = max over device pairs |c_i - c_j| / D   (0 = common centroid);
  * orientation uniformity = share of units with the most common orientation (reported);
  * orientation balance u = 1 - the largest total-variation distance between two devices'
    orientation mixes: 1 when every device has its units in the same orientations in the
    same shares — all plain, or (shared diffusion, odd fingers) half of each device's units
    mirrored: a common centroid in orientation too;
  * dummy coverage  d = share of row ends (two per row) with a dummy next to the end unit;
  * centroid error floor  e0 = the least error the unit counts allow: two devices with
    odd unit counts n_i, n_j cannot share a centroid (only one unit can stand at the
    centre of a point-symmetric arrangement), the best puts one unit of each beside the
    centre, half a unit pitch p either side: e0 = max over such pairs of
    0.5 p (1/n_i + 1/n_j) / D (p = the least centre distance of two neighbouring units
    in a row); 0 when at most one device has an odd count;
  * score = 0.6 * max(0, 1 - 2 max(0, e - e0)) + 0.25 * u + 0.15 * d, in [0, 1]: a
    layout is judged against what its unit counts allow (a pair of single-finger
    devices side by side is as matched as it can be).

ABBA (and 2-D ABBA/BAAB) gives e = 0; AABB gives e close to 0.5, so its score is
lower by about 0.6 for the same orientation balance and dummies.  ``matching_score`` is the
lowest group score (None without groups).

Matched groups from the geometry (argument ``matched``: the groups the circuit's
module recognition found, ``{module, devices, units, stacked}``; ``units``: a member's
other parallel units, measured with it as one device; ``stacked``: the other segments of
its units' series stacks, measured with it: the member is the whole stack), measured
wherever their devices
stand (:mod:`centroid_skills.matched_geometry`): ``matched_groups`` (per group the
devices' gate centroids, the centroid error in µm, whether one matched cell draws
them) and ``max_centroid_error_um``.

Blocks (hierarchical layouts): ``blocks``, per routed block cell found below the cell
(a subcircuit drawn once): its ``instances`` (placements in the whole hierarchy), its
bbox area, device area and utilisation; empty for a flat layout.

Vias: ``via_count`` and ``vias_by_layer``, the via cuts (via1…via8, not contacts)
of the whole hierarchy.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from typing import Any

import klayout.db as kdb

from centroid_skills.matched_geometry import count_vias, measure_groups
from centroid_skills.registry import NAME, obj, skill
from centroid_skills.routing.terminals import STACK_KIND
from centroid_skills.session import CellRecord, Session, box_um, um, unit_trans

DEVICE_KINDS = ("nmos", "pmos", "resistor", "capacitor")


def _orientation(t: kdb.Trans) -> str:
    return ("M" if t.is_mirror() else "R") + str(t.angle)


def collect(session: Session, cell: kdb.Cell, trans: kdb.Trans,
            groups: list[dict[str, Any]], areas: list[int], dummy_areas: list[int]) -> None:
    rec = session.cells.get(cell.name)
    if rec is not None and rec.kind in DEVICE_KINDS:
        (dummy_areas if rec.params.get("dummy") else areas).append(cell.bbox().area())
        return
    if rec is not None and rec.kind == STACK_KIND:  # its devices as each measures drawn alone
        areas.extend(int(a) for a in rec.params["device_areas_nm2"])
        return
    if rec is not None and rec.groups:
        for g in rec.groups:
            groups.append(group_geometry(session, rec, g, trans))
    for inst in cell.each_inst():
        child = inst.cell
        ct = inst.cell_inst.trans if not inst.is_regular_array() else None
        if ct is None:
            for sub in inst.cell_inst.each_trans():
                collect(session, child, trans * sub, groups, areas, dummy_areas)
        else:
            collect(session, child, trans * ct, groups, areas, dummy_areas)


def group_geometry(session: Session, rec: CellRecord, group: dict[str, Any],
                   trans: kdb.Trans) -> dict[str, Any]:
    layout = session.layout
    units = []
    for u in rec.units:
        if u["dummy"]:
            continue
        unit_cell = layout.cell(u["unit_cell"])
        full = trans * unit_trans(u)
        box = _device_box(session, unit_cell).transformed(full)
        units.append({"device_id": u["device_id"], "box": box, "orientation": _orientation(full),
                      "row": u["row"], "col": u["col"]})
    dummies = [u for u in rec.units if u["dummy"]]
    return {"module": rec.name, "devices": group["devices"], "units": units, "dummies": dummies}


def _device_box(session: Session, cell: kdb.Cell) -> kdb.Box:
    """Where a unit's transistor is: the bbox of its diffusion (what matching is about,
    whatever a unit cell draws around it), else the cell's bbox."""
    tech = session.need_tech()
    active = tech.layer_for("active")
    if active is not None:
        box = tech.region(session.layout, cell, active.name).bbox()
        if not box.empty():
            return box
    return cell.bbox()


def centroid_error_floor(units: list[dict[str, Any]], centroids: dict[str, tuple[float, float]],
                         diag: float) -> float:
    """The least centroid error the devices' unit counts allow (see the module's doc)."""
    counts = Counter(u["device_id"] for u in units if u["device_id"] in centroids)
    odd = [n for n in counts.values() if n % 2 == 1]
    if len(odd) < 2:
        return 0.0
    pitch = 0.0
    by_row: dict[Any, list[float]] = {}
    for u in units:
        by_row.setdefault(u["row"], []).append(u["box"].center().x)
    gaps = [b - a for xs in map(sorted, by_row.values())
            for a, b in itertools.pairwise(xs) if b > a]
    if gaps:
        pitch = min(gaps)
    else:  # one unit per row: neighbouring rows
        ys = sorted({u["box"].center().y for u in units})
        pitch = min((b - a for a, b in itertools.pairwise(ys)), default=0.0)
    odd.sort()
    # the two smallest odd counts give the largest floor
    return 0.5 * pitch * (1.0 / odd[0] + 1.0 / odd[1]) / diag


def score_group(g: dict[str, Any]) -> dict[str, Any]:
    units = g["units"]
    union = kdb.Box()
    for u in units:
        union = union + u["box"]
    diag = math.hypot(union.width(), union.height()) or 1.0
    centroids: dict[str, tuple[float, float]] = {}
    for dev in g["devices"]:
        pts = [u["box"].center() for u in units if u["device_id"] == dev]
        if pts:
            centroids[dev] = (sum(p.x for p in pts) / len(pts), sum(p.y for p in pts) / len(pts))
    err = 0.0
    floor = centroid_error_floor(units, centroids, diag)
    devs = list(centroids)
    for i, a in enumerate(devs):
        for b in devs[i + 1:]:
            ca, cb = centroids[a], centroids[b]
            err = max(err, math.hypot(ca[0] - cb[0], ca[1] - cb[1]) / diag)
    orient = Counter(u["orientation"] for u in units)
    uniformity = (orient.most_common(1)[0][1] / len(units)) if units else 1.0
    mixes = []
    for dev in centroids:
        own = Counter(u["orientation"] for u in units if u["device_id"] == dev)
        mixes.append({o: own[o] / sum(own.values()) for o in orient})
    balance = 1.0 - max((0.5 * sum(abs(a[o] - b[o]) for o in orient)
                         for i, a in enumerate(mixes) for b in mixes[i + 1:]), default=0.0)
    rows = sorted({u["row"] for u in units})
    ends = 2 * len(rows)
    covered = 0
    for r in rows:
        sides = {d.get("side") for d in g["dummies"] if d["row"] == r}
        covered += ("left" in sides) + ("right" in sides)
    dummy_cov = covered / ends if ends else 0.0
    excess = max(0.0, err - floor)
    score = 0.6 * max(0.0, 1.0 - 2.0 * excess) + 0.25 * balance + 0.15 * dummy_cov
    return {
        "module": g["module"],
        "devices": g["devices"],
        "units": len(units),
        "centroids_um": {d: [um(c[0]), um(c[1])] for d, c in centroids.items()},
        "centroid_error": round(err, 6),
        "centroid_error_floor": round(floor, 6),
        "orientation_uniformity": round(uniformity, 6),
        "orientation_balance": round(balance, 6),
        "dummies": len(g["dummies"]),
        "dummy_coverage": round(dummy_cov, 6),
        "score": round(score, 6),
    }


def block_figures(session: Session, cell: kdb.Cell) -> list[dict[str, Any]]:
    """The routed blocks below ``cell``, each once, with how often it is placed."""
    placements: Counter[int] = Counter()
    for index, count in _placements(cell).items():
        if index == cell.cell_index():
            continue
        rec = session.cells.get(session.layout.cell(index).name)
        if rec is not None and rec.kind == "block" and "device_id" not in rec.params:
            placements[index] += count
    out = []
    for index, count in sorted(placements.items(), key=lambda item: session.layout.cell(item[0]).name):
        block = session.layout.cell(index)
        areas: list[int] = []
        collect(session, block, kdb.Trans(), [], areas, [])
        bbox_area = block.bbox().area() * 1e-6
        device_area = sum(areas) * 1e-6
        out.append({"cell": block.name, "instances": count, "devices": len(areas),
                    "bbox_area_um2": round(bbox_area, 6), "device_area_um2": round(device_area, 6),
                    "utilisation": round(device_area / bbox_area, 6) if bbox_area else 0.0})
    return out


def _placements(cell: kdb.Cell) -> Counter[int]:
    """How many times each cell below ``cell`` is placed in its flattened hierarchy."""
    layout = cell.layout()
    counts: Counter[int] = Counter({cell.cell_index(): 1})
    # a parent has more hierarchy levels below it than any of its children: parents first
    order = [cell.cell_index()] + sorted(cell.called_cells(),
                                         key=lambda i: -layout.cell(i).hierarchy_levels())
    for index in order:
        for inst in layout.cell(index).each_inst():
            counts[inst.cell_index] += counts[index] * inst.cell_inst.size()
    return counts


def compute_metrics(session: Session, cell: kdb.Cell,
                    matched: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    tech = session.need_tech()
    groups: list[dict[str, Any]] = []
    areas: list[int] = []
    dummy_areas: list[int] = []
    collect(session, cell, kdb.Trans(), groups, areas, dummy_areas)
    bbox = cell.bbox()
    bbox_area = bbox.area() * 1e-6
    device_area = sum(areas) * 1e-6
    active = tech.layer_for("active")
    active_area = 0.0
    if active is not None:
        li = session.layout.find_layer(active.layer, active.datatype)
        if li is not None:
            reg = kdb.Region(cell.begin_shapes_rec(li))
            reg.merge()
            active_area = reg.area() * 1e-6
    scored = [score_group(g) for g in groups]
    measured = measure_groups(session, cell, matched or [])
    vias = count_vias(session, cell)
    return {
        "cell": cell.name,
        "bbox_um": box_um(bbox),
        "width_um": um(bbox.width()),
        "height_um": um(bbox.height()),
        "bbox_area_um2": round(bbox_area, 6),
        "device_area_um2": round(device_area, 6),
        "active_area_um2": round(active_area, 6),
        "device_instances": len(areas),
        "dummy_area_um2": round(sum(dummy_areas) * 1e-6, 6),
        "dummy_instances": len(dummy_areas),
        "utilisation": round(device_area / bbox_area, 6) if bbox_area else 0.0,
        "area_score": round(1.0 / (1.0 + bbox_area), 9),
        "groups": scored,
        "matching_score": min((g["score"] for g in scored), default=None),
        "matched_groups": measured,
        "max_centroid_error_um": max((g["centroid_error_um"] for g in measured), default=None),
        "via_count": sum(vias.values()),
        "vias_by_layer": vias,
        "blocks": block_figures(session, cell),
    }


MATCHED_GROUP = obj({"module": {"type": "string", "minLength": 1, "maxLength": 200},
                     "devices": {"type": "array", "minItems": 2,
                                 "items": {"type": "string", "minLength": 1, "maxLength": 200}},
                     "units": {"type": "object",
                               "description": "member → its other parallel units (one device "
                                              "drawn as several): measured together",
                               "additionalProperties": {
                                   "type": "array",
                                   "items": {"type": "string", "minLength": 1,
                                             "maxLength": 200}}},
                     "stacked": {"type": "object",
                                 "description": "member → the other segments of its units' "
                                                "series stacks (MOS in series under one gate "
                                                "net): measured with it",
                                 "additionalProperties": {
                                     "type": "array",
                                     "items": {"type": "string", "minLength": 1,
                                               "maxLength": 200}}}},
                    ["module", "devices"])


@skill("layout.metrics",
       "Area (bbox, device, utilisation), per drawn matched structure: centroid error, "
       "orientation uniformity, dummy coverage and a matching score in [0, 1]; per "
       "recognised matched group (matched): the gate centroids and centroid error in µm "
       "from the geometry; via count.",
       obj({"cell": NAME,
            "matched": {"type": "array", "items": MATCHED_GROUP,
                        "description": "the circuit's matched groups: {module, devices}"}},
           ["cell"]))
def metrics(session: Session, args: dict[str, Any]) -> dict[str, Any]:
    return compute_metrics(session, session.any_cell(args["cell"]), args.get("matched"))


@skill("layout.list_cells",
       "The generated cells of the session: name, kind, bbox (µm), number of pins and units.",
       obj({}))
def list_cells(session: Session, args: dict[str, Any]) -> dict[str, Any]:
    out = []
    for name, rec in session.cells.items():
        cell = session.layout.cell(name)
        if cell is None:
            continue
        out.append({"cell_name": name, "kind": rec.kind, "bbox_um": box_um(cell.bbox()),
                    "pins": len(rec.pins), "units": len(rec.units),
                    "top": cell.parent_cells() == 0})
    return {"cells": out, "devices": dict(session.devices)}


@skill("layout.cell_info",
       "One generated cell: kind, bbox, pins (terminal -> layer + box, µm), params and units.",
       obj({"cell": NAME}, ["cell"]))
def cell_info(session: Session, args: dict[str, Any]) -> dict[str, Any]:
    from centroid_skills.skills.devices import cell_summary

    rec = session.record(args["cell"])
    out = cell_summary(session, rec)
    out["units"] = rec.units
    return out
