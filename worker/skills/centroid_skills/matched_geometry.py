"""Matched groups measured from the geometry, wherever their devices stand.

A recognised matched group (a differential pair, a mirror, …) is judged by where
its devices' gates are, not by how the planner meant to draw it: a pair drawn as
two loose devices far apart is measured as such.

* Gate centroid of a device: the area-weighted centroid of its gate region
  (poly ∩ active) — over every non-dummy unit of its matched module, or over its
  own device cell — in the measured cell's coordinates; without poly/active
  (resistors, capacitors) the centre of the device's bounding box.
* Parallel units (``units``: member → its other units, devices wired alike between
  the same nets, e.g. the copies of an ``m=k`` instance): one member; its gate centroid
  is that of all its units together, wherever each stands.
* Series stacks (``stacked``: member → the other segments of its units' stacks, MOS in
  series under one gate net: one long transistor drawn as segments, e.g. a stacked-device
  subcircuit): the member is the whole stack; its gate centroid is that of every segment,
  so a stack drawn as a block and one whose segments stand apart in rows are measured by
  the same rule (the segment a recognition names alone would make a flat layout look
  matched while the rest of each stack is anywhere).
* Centroid error of a group: the largest distance between two of its members'
  gate centroids (0: a common centroid).
* Structure: ``common_centroid`` / ``interdigitated`` when every device of the
  group is drawn by one module cell of that kind, else ``separate``.
* A device inside blocks is named by its path (``X1/M1``, ``X1/X2/M1``: the flat ids of a
  hierarchical layout; or ``X1_M1``, a planner's id where ``/`` is not allowed): found
  below the block instance cells the path names.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import klayout.db as kdb

from centroid_skills.session import CellRecord, Session, um, unit_trans
from centroid_skills.tech import VIA_ROLES

#: (x·area, y·area, area) of a cell's gates in its own coordinates (nm)
Moments = tuple[float, float, float]


def _local_moments(session: Session, cell: kdb.Cell, cache: dict[int, Moments]) -> Moments:
    found = cache.get(cell.cell_index())
    if found is not None:
        return found
    tech = session.need_tech()
    layout = session.layout
    poly, active = tech.layer_for("poly"), tech.layer_for("active")
    moments: Moments = (0.0, 0.0, 0.0)
    if poly is not None and active is not None:
        gates = (kdb.Region(cell.begin_shapes_rec(tech.layer_index(layout, poly.name)))
                 & kdb.Region(cell.begin_shapes_rec(tech.layer_index(layout, active.name))))
        sx = sy = total = 0.0
        for polygon in gates.each_merged():
            area = float(polygon.area())
            centre = polygon.bbox().center()
            sx += centre.x * area
            sy += centre.y * area
            total += area
        moments = (sx, sy, total)
    if moments[2] == 0.0:  # no gate: the bounding box stands for the device
        box = cell.bbox()
        centre = box.center()
        area = float(max(box.area(), 1))
        moments = (centre.x * area, centre.y * area, area)
    cache[cell.cell_index()] = moments
    return moments


def _placements(cell: kdb.Cell, targets: set[int], trans: kdb.Trans,
                found: dict[int, list[kdb.Trans]]) -> None:
    """Every placement of the `targets` cells below `cell` (not looking inside them)."""
    if cell.cell_index() in targets:
        found.setdefault(cell.cell_index(), []).append(trans)
        return
    for inst in cell.each_inst():
        for sub in inst.cell_inst.each_trans():
            _placements(inst.cell, targets, trans * sub, found)


def _located(session: Session, cell: kdb.Cell, device: str, found: dict[int, list[kdb.Trans]]
             ) -> tuple[kdb.Cell | None, list[kdb.Trans], str]:
    """The cell drawing ``device``, its placements below ``cell`` and the device's id in
    that cell: a plain id through the session's device table (``found``: the placements of
    those cells); else a path through block instances, ``X1/M1`` or ``X1/X2/M1`` (ids
    local to each block; ``X1_M1`` too, as a planner writes a path where ``/`` is not
    allowed), found below the block instance cells the path names."""
    name = session.devices.get(device)
    target = session.layout.cell(name) if name is not None else None
    placed = found.get(target.cell_index(), []) if target is not None else []
    if target is not None and placed:
        return target, placed, device
    hits = _along_path(session, cell, kdb.Trans(), device)
    if len({c.cell_index() for c, _t, _l in hits}) != 1:
        return None, [], device
    return hits[0][0], [t for _c, t, _l in hits], hits[0][2]


def _along_path(session: Session, frame: kdb.Cell, trans: kdb.Trans, rest: str
                ) -> list[tuple[kdb.Cell, kdb.Trans, str]]:
    """The cells drawing device ``rest`` below ``frame`` (not inside block instances), and
    below every block instance whose id starts ``rest`` (``X1/…`` or ``X1_…``) the cells
    drawing the rest of the path."""
    own: list[tuple[kdb.Cell, kdb.Trans]] = []
    _walk(session, frame, trans, lambda rec: _draws(rec, rest), own)
    hits = [(c, t, rest) for c, t in own]
    inner: list[tuple[kdb.Cell, kdb.Trans]] = []
    _walk(session, frame, trans, lambda rec: _instance_on_path(rec, rest), inner)
    for child, placed in inner:
        name = str(session.cells[child.name].params["device_id"])
        hits += _along_path(session, child, placed, rest[len(name) + 1:])
    return hits


def _instance_on_path(rec: CellRecord, path: str) -> bool:
    """A block instance whose id is the first step of ``path``."""
    name = rec.params.get("device_id")
    return (rec.kind == "block" and isinstance(name, str)
            and (path.startswith(name + "/") or path.startswith(name + "_")))


def _draws(rec: CellRecord, device: str) -> bool:
    """Whether a device cell or a module cell draws ``device`` (not as a dummy)."""
    if rec.kind in ("nmos", "pmos", "resistor", "capacitor"):
        return rec.params.get("device_id") == device and not rec.params.get("dummy")
    return any(u.get("device_id") == device and not u.get("dummy") for u in rec.units)


def _walk(session: Session, cell: kdb.Cell, trans: kdb.Trans, match: Callable[[CellRecord], bool],
          out: list[tuple[kdb.Cell, kdb.Trans]]) -> None:
    """Every cell below ``cell`` whose record ``match`` accepts (not looking inside it), never
    looking inside a block instance the match does not accept (its devices are another path's)."""
    for inst in cell.each_inst():
        for sub in inst.cell_inst.each_trans():
            child, placed = inst.cell, trans * sub
            rec = session.cells.get(child.name)
            if rec is not None and match(rec):
                out.append((child, placed))
            elif rec is None or rec.kind != "block" or "device_id" not in rec.params:
                _walk(session, child, placed, match, out)


def _moved(moments: Moments, trans: kdb.Trans) -> Moments:
    sx, sy, area = moments
    point = trans.to_dtype(1.0) * kdb.DPoint(sx / area, sy / area)
    return (point.x * area, point.y * area, area)


def measure_groups(session: Session, cell: kdb.Cell,
                   groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    layout = session.layout
    cache: dict[int, Moments] = {}
    targets: set[int] = set()
    for group in groups:
        for device in _all_units(group):
            name = session.devices.get(device)
            target = layout.cell(name) if name is not None else None
            if target is not None:
                targets.add(target.cell_index())
    found: dict[int, list[kdb.Trans]] = {}
    _placements(cell, targets, kdb.Trans(), found)
    out = []
    for group in groups:
        centroids: dict[str, tuple[float, float]] = {}
        missing: list[str] = []
        drawn_by: set[str] = set()
        units = 0
        for member in group["devices"]:
            sx = sy = total = 0.0
            for device in _member_devices(group, member):
                target, placed, local_id = _located(session, cell, device, found)
                if target is None or not placed:
                    missing.append(device)
                    continue
                drawn_by.add(target.name)
                for trans in placed:
                    for moments in _device_moments(session, target, local_id, cache):
                        mx, my, area = _moved(moments, trans)
                        sx, sy, total = sx + mx, sy + my, total + area
                        units += 1
            if total > 0.0:
                centroids[member] = (sx / total, sy / total)
        error = 0.0
        names = list(centroids)
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                (ax, ay), (bx, by) = centroids[a], centroids[b]
                error = max(error, math.hypot(ax - bx, ay - by))
        structure = "separate"
        if len(drawn_by) == 1 and not missing:
            rec = session.cells.get(next(iter(drawn_by)))
            if rec is not None and rec.kind in ("common_centroid", "interdigitated"):
                structure = rec.kind
        out.append({
            "module": group["module"],
            "devices": list(group["devices"]),
            "centroids_um": {d: [round(um(x), 6), round(um(y), 6)] for d, (x, y) in centroids.items()},
            "centroid_error_um": round(um(error), 6),
            "structure": structure,
            "units": units,
            "missing": missing,
        })
    return out


def _member_devices(group: dict[str, Any], member: str) -> list[str]:
    """The devices a member is measured by: itself, its parallel units and the other
    segments of their series stacks."""
    parallel: dict[str, list[str]] = group.get("units") or {}
    stacked: dict[str, list[str]] = group.get("stacked") or {}
    return [member, *parallel.get(member, []), *stacked.get(member, [])]


def _all_units(group: dict[str, Any]) -> list[str]:
    """Every device of a group: its members, their parallel units and stack segments."""
    return [d for member in group["devices"] for d in _member_devices(group, member)]


def _device_moments(session: Session, target: kdb.Cell, local_id: str,
                    cache: dict[int, Moments]) -> list[Moments]:
    """The gate moments of device ``local_id`` in ``target``'s coordinates: one per
    non-dummy unit of a module cell drawing it, else the device cell's own."""
    rec = session.cells.get(target.name)
    own = [u for u in (rec.units if rec is not None else [])
           if u.get("device_id") == local_id and not u.get("dummy")]
    if not own:
        return [_local_moments(session, target, cache)]
    return [_moved(_local_moments(session, session.layout.cell(unit["unit_cell"]), cache),
                   unit_trans(unit)) for unit in own]


def count_vias(session: Session, cell: kdb.Cell) -> dict[str, int]:
    """Via cuts (via1…via8, not contacts) per layer name, over the whole hierarchy."""
    tech = session.need_tech()
    counts: dict[str, int] = {}
    for role in VIA_ROLES:
        ldef = tech.layer_for(role)
        if ldef is None:
            continue
        shapes = cell.begin_shapes_rec(tech.layer_index(session.layout, ldef.name))
        count = 0
        while not shapes.at_end():
            count += 1
            shapes.next()
        counts[ldef.name] = count
    return counts
