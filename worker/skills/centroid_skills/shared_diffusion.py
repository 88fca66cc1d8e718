"""Units of a matched module on one diffusion: neighbours share a source/drain region.

A unit of ``f`` fingers reads S G D G S … from left to right: its ends are both
sources when ``f`` is even, a source and its device's drain when ``f`` is odd.  When
the devices of a module share their gate and source nets (a current mirror, a bias
or cascode pair — what the planner declares with ``share_diffusion``), two
neighbouring units whose facing terminals are the same net (S|S, or the drain of one
device facing itself) are drawn on one diffusion: the right unit's first S/D region
lies on the left unit's last one, so the pair costs one gate pitch per finger
instead of two unit widths and a rule gap.

Odd-finger units alternate their orientation (mirrored, plain, mirrored, …) so that
every boundary faces S|S or D|D; that is done only where every device gets the same
share of mirrored units (ABBA: each device one of each — a common centroid in
orientation too) and where the cuts of a unit's end regions mirror onto themselves
(they must coincide when two regions become one).

Where the shared regions meet, gaps narrower than a layer's spacing are closed on the
layers that only carry the shared nets there (diffusion, poly and metal-1 gate and
source straps, implants, wells, markers); cuts and the drain metal above metal 1 are
never touched.  Whether a boundary may be shared is decided once per pair of units
and orientations by drawing the two units shared in a scratch cell and checking it
against every rule of the rule set (density excepted) and that no drain metal of the
one touches the other's: a rule set whose geometry does not allow it keeps the
rule-derived gap, so sharing never costs a violation.  The verdicts are kept per rule
set across candidates.
"""

from __future__ import annotations

from dataclasses import dataclass

import klayout.db as kdb

from centroid_skills.session import CellRecord, Session, unit_trans
from centroid_skills.tech import Technology

#: roles whose shapes, where two units share a region, carry only the shared nets
_CUT_PREFIXES = ("via", "contact")

#: verdicts of boundaries tried: (rule-set fingerprint, the unit's parameters but its device,
#: mirrors, kind) -> fits
_VERDICTS: dict[tuple[object, ...], bool] = {}
_MAX_VERDICTS = 4096


@dataclass(frozen=True)
class UnitShape:
    """What sharing needs to know of a unit cell (nm, cell coordinates)."""
    fingers: int
    active: tuple[int, int]
    region: int  # width of one source/drain region
    gate: int  # gate length
    symmetric: bool  # the cuts of each end region mirror onto themselves


def _closeable(role: str | None) -> bool:
    if not role or role.startswith(_CUT_PREFIXES):
        return False
    if role.startswith("metal") and role[5:].isdigit():
        return int(role[5:]) <= 1
    return True


def _cut_names(tech: Technology) -> list[str]:
    return [n for n, d in tech.layers.items() if d.role and d.role.startswith(_CUT_PREFIXES)]


def unit_shape(session: Session, rec: CellRecord) -> UnitShape | None:
    """The unit's fingers, active and region widths; ``None`` when it is not a MOS unit."""
    if rec.kind not in ("nmos", "pmos") or rec.params.get("dummy"):
        return None
    tech = session.need_tech()
    layout = session.layout
    cell = layout.cell(rec.name)
    active = tech.layer_for("active")
    if active is None:
        return None
    box = tech.region(layout, cell, active.name).bbox()
    fingers = int(rec.params["fingers"])
    gate = tech.nm(rec.params["l_um"] * 1e-6)
    region = (box.width() - fingers * gate) // (fingers + 1)
    if box.empty() or region <= 0:
        return None
    symmetric = True
    bottom = cell.bbox().bottom  # the source/drain cuts and the drain's vias; not the gate contacts above
    for name in _cut_names(tech):
        cuts = tech.region(layout, cell, name)
        for x0 in (box.left, box.right - region):
            zone = kdb.Region(kdb.Box(x0, bottom, x0 + region, box.top))
            inside = cuts & zone
            mirrored = inside.transformed(kdb.Trans(kdb.Trans.M90, 2 * x0 + region, 0))
            if not (inside ^ mirrored).is_empty():
                symmetric = False
    return UnitShape(fingers, (box.left, box.right), region, gate, symmetric)


def terminals(shape: UnitShape, mirrored: bool, device: str) -> tuple[str, str]:
    """The nets at the unit's left and right ends: ``S`` or ``D:<device>``."""
    far = "S" if shape.fingers % 2 == 0 else f"D:{device}"
    return (far, "S") if mirrored else ("S", far)


def orientations(shape: UnitShape, devices: list[str]) -> list[bool]:
    """Mirrored or not, per unit of a row: alternating for odd fingers where every device
    gets the same share of mirrored units and the end regions mirror onto themselves."""
    plain = [False] * len(devices)
    if shape.fingers % 2 == 0 or not shape.symmetric:
        return plain
    alternating = [i % 2 == 0 for i in range(len(devices))]
    shares = {
        device: sum(m for d, m in zip(devices, alternating, strict=True) if d == device)
        / devices.count(device)
        for device in set(devices)
    }
    return alternating if len(set(shares.values())) == 1 else plain


def placement(shape: UnitShape, mirrored: bool, active_left: int, y: int) -> kdb.Trans:
    """The unit's transformation putting its active's left edge at ``active_left``."""
    left, right = shape.active
    if mirrored:  # x -> -x: the active spans [-right, -left]
        return kdb.Trans(kdb.Trans.M90, active_left + right, y)
    return kdb.Trans(active_left - left, y)


def active_range(shape: UnitShape, trans: kdb.Trans) -> tuple[int, int]:
    left, right = shape.active
    a, b = trans * kdb.Point(left, 0), trans * kdb.Point(right, 0)
    return min(a.x, b.x), max(a.x, b.x)


def close_shared(tech: Technology, layout: kdb.Layout, cell: kdb.Cell, zone: kdb.Box) -> None:
    """Fills, within ``zone``, horizontal gaps narrower than the layer's spacing on the
    layers that carry only the shared nets where two regions became one."""
    for ldef in tech.layers.values():
        if not _closeable(ldef.role):
            continue
        li = layout.find_layer(ldef.layer, ldef.datatype)
        if li is None:
            continue
        space = tech.rule_min("spacing", ldef.role or "")
        if space <= 0:
            continue
        region = kdb.Region(cell.begin_shapes_rec(li)) & kdb.Region(zone)
        if region.is_empty():
            continue
        half = (space + 1) // 2
        fill = (region.sized(half, 0, 2).sized(-half, 0, 2) - region) & kdb.Region(zone)
        if not fill.is_empty():
            cell.shapes(li).insert(fill)


def shared_zone(shape: UnitShape, left_active_right: int, cell_box: kdb.Box) -> kdb.Box:
    """The shared region and the gates either side of it, over the cells' height."""
    x0 = left_active_right - shape.region - shape.gate
    return kdb.Box(x0, cell_box.bottom, left_active_right + shape.gate, cell_box.top)


def straps(session: Session, cell: kdb.Cell, unit: CellRecord, transforms: list[kdb.Trans]) -> None:
    """One source and one gate strap along a run of units on one diffusion (the devices
    share both nets): the units' own straps — pins ``S`` below the drain straps and
    ``G`` above them, as in a multi-finger device — extended from the run's first unit to
    its last, so the run offers one source and one gate pin."""
    if len(transforms) < 2:
        return
    layout = session.layout
    for name in ("S", "G"):
        pin = next((p for p in unit.pins if p.name == name), None)
        if pin is None:
            continue
        boxes = [pin.box.transformed(trans) for trans in transforms]
        bus = kdb.Box(min(b.left for b in boxes), boxes[0].bottom, max(b.right for b in boxes), boxes[0].top)
        cell.shapes(session.need_tech().layer_index(layout, pin.layer)).insert(bus)


def join_pins(session: Session, cell: kdb.Cell, units: list[dict[str, object]]) -> None:
    """Marks, per unit, the pins (``joined``) whose net a unit before it already offers
    through the same piece of metal — shared regions and closed straps connect them —
    so the router connects one pin per piece (pins at one gate pitch would not fit a
    routing pitch apart)."""
    tech = session.need_tech()
    layout = session.layout
    pieces: dict[str, list[kdb.Polygon]] = {}
    offered: set[tuple[str, str, int]] = set()
    for unit in units:
        urec = session.cells[str(unit["unit_cell"])]
        trans = unit_trans(unit)
        joined = []
        for pin in urec.pins:
            net = {"S": "S", "G": "G", "D": f"D:{unit['device_id']}"}.get(pin.name)
            if net is None:
                continue
            if pin.layer not in pieces:
                region = kdb.Region(cell.begin_shapes_rec(tech.layer_index(layout, pin.layer)))
                pieces[pin.layer] = list(region.merged().each())
            centre = pin.box.transformed(trans).center()
            piece = next((i for i, polygon in enumerate(pieces[pin.layer])
                          if polygon.inside(centre)), -1)
            if piece < 0:
                continue
            if (pin.layer, net, piece) in offered:
                joined.append(pin.name)
            offered.add((pin.layer, net, piece))
        if joined:
            unit["joined"] = joined


def _fingerprint(tech: Technology) -> object:
    return (tech.name, tuple(tech.rules), tuple(sorted(tech.layers.items())))


def boundary_fits(session: Session, rec: CellRecord, shape: UnitShape,
                  left_mirrored: bool, right_mirrored: bool, same_drain: bool) -> bool:
    """Whether two units of ``rec`` may share the region between them (see the module)."""
    from centroid_skills.skills.drc import run_checks  # the DRC skill family's checker

    tech = session.need_tech()
    drawn = tuple(sorted((k, str(v)) for k, v in rec.params.items() if k != "device_id"))
    key = (_fingerprint(tech), drawn, left_mirrored, right_mirrored, same_drain)
    if key in _VERDICTS:
        return _VERDICTS[key]
    layout = session.layout
    unit = layout.cell(rec.name)
    trial = layout.create_cell(session.unique_name("_share_trial"))
    try:
        left = placement(shape, left_mirrored, 0, 0)
        _, right_edge = active_range(shape, left)
        right = placement(shape, right_mirrored, right_edge - shape.region, 0)
        for trans in (left, right):
            trial.insert(kdb.CellInstArray(unit.cell_index(), trans))
        close_shared(tech, layout, trial, shared_zone(shape, right_edge, trial.bbox()))
        straps(session, trial, rec, [left, right])
        types = sorted({r.type for r in tech.rules} - {"density"})
        fits = all(result.count == 0 for result in run_checks(tech, layout, trial, types=types))
        if fits and not same_drain:
            fits = not _drain_metal_touches(tech, layout, unit, left, right)
    finally:
        trial.delete()
    if len(_VERDICTS) >= _MAX_VERDICTS:
        _VERDICTS.clear()
    _VERDICTS[key] = fits
    return fits


def _drain_metal_touches(tech: Technology, layout: kdb.Layout, unit: kdb.Cell,
                         left: kdb.Trans, right: kdb.Trans) -> bool:
    for ldef in tech.layers.values():
        if _closeable(ldef.role) or not ldef.role or ldef.role == "contact":
            continue
        li = layout.find_layer(ldef.layer, ldef.datatype)
        if li is None:
            continue
        shapes = kdb.Region(unit.begin_shapes_rec(li))
        if not shapes.transformed(left).interacting(shapes.transformed(right)).is_empty():
            return True
    return False
