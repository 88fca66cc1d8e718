"""Guard rings: a substrate ring (p+ tap) or a well ring (n+ tap in nwell) around a cell.

The ring is a closed band of tap diffusion (role ``tap`` when the rule set separates
it, else ``active``) with a row of contacts along its centre line, a metal-1 band over
the contacts (pin ``B`` on the lower side), and the tap implant (pplus for a substrate
ring, nplus for a well ring, each only if the rule set has that layer) around the band.
A well ring also gets one nwell rectangle over the ring and everything inside it.

The band width is the larger of the tap width rule and one contact with its tap
enclosure; the gap to the inner cell on each side is the smallest the rules allow
(:mod:`centroid_skills.abut`, measured on a clipped prototype of each side).
"""

from __future__ import annotations

from typing import Any

import klayout.db as kdb

from centroid_skills import abut
from centroid_skills.cuts import along_margin, cut_rules
from centroid_skills.errors import invalid
from centroid_skills.registry import NAME, obj, skill
from centroid_skills.rules import cover, draw_rules
from centroid_skills.session import CellRecord, Pin, Session, um
from centroid_skills.skills.devices import cell_summary, contact_column
from centroid_skills.tech import Technology


def ring_roles(tech: Technology, kind: str) -> tuple[str, str | None]:
    tap = "tap" if tech.has("tap") else "active"
    imp = "pplus" if kind == "substrate" else "nplus"
    return tap, (imp if tech.has(imp) else None)


def draw_ring(tech: Technology, layout: kdb.Layout, cell: kdb.Cell, inner: kdb.Box, kind: str,
              fill_well: bool) -> dict[str, Any]:
    """Draw a ring whose tap band's inner edge is ``inner``; returns the pieces drawn."""
    r = draw_rules(tech)
    tap, imp = ring_roles(tech, kind)
    rw = tech.snap_up(max(r.tap_w, r.cont + 2 * r.tap_ct, r.g))
    while True:
        c_off = tech.snap_down((rw - r.cont) / 2)
        if c_off >= r.tap_ct and rw - c_off - r.cont >= r.tap_ct:
            break
        rw += r.g

    def band(inside: kdb.Box, width: int) -> kdb.Region:
        return kdb.Region(inside.enlarged(width, width)) - kdb.Region(inside)

    def put(role: str, region: kdb.Region) -> None:
        cell.shapes(tech.role_index(layout, role)).insert(region)

    put(tap, band(inner, rw))
    m_in = c_off - r.m1_ct
    m_w = max(r.cont + 2 * r.m1_ct, tech.snap_up(r.m1w))
    metal_inner = inner.enlarged(m_in, m_in)
    put("metal1", band(metal_inner, m_w))
    if imp:
        e = cover(tech, imp, tap)
        wmin = tech.width(imp)
        if rw + 2 * e < wmin:
            e = tech.snap_up((wmin - rw) / 2)
        put(imp, band(inner.enlarged(-e, -e), rw + 2 * e))
    # contacts: full rows on the lower and upper side, columns in between on the sides; the
    # end contacts of a row sit in the ring's corners, where the band turns: they keep the
    # along margin (adjacent-side and line-end rules) from the outer corner on both layers
    outer = inner.enlarged(rw, rw)
    c_side = min(c_off, rw - c_off - r.cont)
    tap_along = along_margin(cut_rules(tech, tap, "contact"), c_side, rw)
    m_side = min(r.m1_ct, m_w - r.m1_ct - r.cont)
    m_along = along_margin(cut_rules(tech, "metal1", "contact"), m_side, m_w)
    corner = max(r.tap_ct, tap_along, m_along + rw - m_in - m_w)
    n, off = contact_column(tech, r, outer.width(), corner)
    cts = kdb.Region()
    ys = (outer.bottom + c_off, inner.top + c_off)
    xs_row = [outer.left + off + k * (r.cont + r.cs) for k in range(n)]
    for y in ys:
        for x in xs_row:
            cts.insert(kdb.Box(x, y, x + r.cont, y + r.cont))
    y_lo = ys[0] + r.cont + r.cs
    y_hi = ys[1] - r.cs
    n2, off2 = contact_column(tech, r, y_hi - y_lo, 0)
    for x in (outer.left + c_off, inner.right + c_off):
        for k in range(n2):
            y = y_lo + off2 + k * (r.cont + r.cs)
            cts.insert(kdb.Box(x, y, x + r.cont, y + r.cont))
    put("contact", cts)
    well = None
    if kind == "well":
        e = tech.enc("nwell", tap)
        well = outer.enlarged(e, e)
        if fill_well:
            put("nwell", kdb.Region(well))
        else:
            put("nwell", band(inner.enlarged(-e, -e), rw + 2 * e))
    metal_outer = metal_inner.enlarged(m_w, m_w)
    return {"band_width": rw, "outer": outer, "metal_outer": metal_outer,
            "pin": kdb.Box(metal_outer.left, metal_outer.bottom, metal_outer.right,
                           metal_outer.bottom + m_w)}


def side_extents(tech: Technology, layout: kdb.Layout, kind: str) -> tuple[dict[str, abut.Extents], dict[str, int], int]:
    """Extents of a clipped prototype of each ring side, and each side's offset from the
    prototype's bbox edge (facing the inside) to the tap band's inner edge."""
    r = draw_rules(tech)
    size = 40 * max(r.cont + r.cs, r.tap_w, r.m1w, r.g) + 4 * tech.space("nwell")
    inner = kdb.Box(0, 0, size, size)
    proto = layout.create_cell("__ring_proto")
    draw_ring(tech, layout, proto, inner, kind, fill_well=False)
    big = 4 * size
    third = size // 3
    clips = {
        "left": kdb.Box(-big, third, size // 2, size - third),
        "right": kdb.Box(size // 2, third, big, size - third),
        "bottom": kdb.Box(third, -big, size - third, size // 2),
        "top": kdb.Box(third, size // 2, size - third, big),
    }
    exts: dict[str, abut.Extents] = {}
    offs: dict[str, int] = {}
    for side, clip in clips.items():
        ci = layout.clip(proto.cell_index(), clip)
        ccell = layout.cell(ci)
        ex = abut.extents(tech, layout, ccell)
        exts[side] = ex
        if side == "left":
            offs[side] = ex.bbox.right - inner.left
        elif side == "right":
            offs[side] = inner.right - ex.bbox.left
        elif side == "bottom":
            offs[side] = ex.bbox.top - inner.bottom
        else:
            offs[side] = inner.top - ex.bbox.bottom
        ccell.delete()
    proto.delete()
    return exts, offs, size


@skill(
    "layout.add_guard_ring",
    "Put a guard ring around a cell in a new cell: substrate (p+ tap) or well (n+ tap in "
    "nwell, nwell over everything inside), with contacts and metal-1 (pin B). kind=auto "
    "picks well when the cell has nwell, else substrate.",
    obj({"cell": NAME, "kind": {"enum": ["substrate", "well", "auto"], "default": "auto"},
         "cell_name": NAME,
         "extra_gap": {"type": "number", "minimum": 0, "default": 0,
                       "description": "extra clearance in µm on every side"}},
        ["cell"]),
)
def add_guard_ring(session: Session, args: dict[str, Any]) -> dict[str, Any]:
    tech = session.need_tech()
    layout = session.layout
    inner_cell = session.any_cell(args["cell"])
    kind = args.get("kind", "auto")
    nwell = tech.layer_for("nwell")
    inner_ex = abut.extents(tech, layout, inner_cell)
    if kind == "auto":
        kind = "well" if nwell is not None and nwell.name in inner_ex.boxes else "substrate"
    if kind == "well":
        tech.require("nwell", "a well guard ring")
    if inner_ex.bbox.empty():
        raise invalid("cannot put a guard ring around an empty cell", cell=inner_cell.name)
    extra = tech.snap_up(tech.nm(float(args.get("extra_gap", 0)) * 1e-6))
    exts, offs, _ = side_extents(tech, layout, kind)
    ib = inner_ex.bbox
    filled = frozenset({nwell.name}) if kind == "well" and nwell is not None else frozenset()
    opts: dict[str, Any] = {"minimum": extra, "bridge": False, "filled": filled}
    gl = abut.required_gap(tech, exts["left"], inner_ex, "x", **opts)
    gr = abut.required_gap(tech, inner_ex, exts["right"], "x", **opts)
    gb = abut.required_gap(tech, exts["bottom"], inner_ex, "y", **opts)
    gt = abut.required_gap(tech, inner_ex, exts["top"], "y", **opts)
    band_inner = kdb.Box(ib.left - gl - offs["left"], ib.bottom - gb - offs["bottom"],
                         ib.right + gr + offs["right"], ib.top + gt + offs["top"])
    name = args.get("cell_name") or session.unique_name(f"{inner_cell.name}_gr")
    cell = session.new_cell(name)
    cell.insert(kdb.CellInstArray(inner_cell.cell_index(), kdb.Trans()))
    info = draw_ring(tech, layout, cell, band_inner, kind, fill_well=True)
    inner_rec = session.cells.get(inner_cell.name)
    rec = CellRecord(name=name, kind="guard_ring",
                     params={"ring": kind, "inner": inner_cell.name,
                             "band_width_um": um(info["band_width"]),
                             "gaps_um": {"left": um(gl), "right": um(gr), "bottom": um(gb), "top": um(gt)}},
                     pins=[Pin("B", tech.require("metal1").name, "metal1", info["pin"])])
    if inner_rec is not None:
        rec.pins += [Pin(p.name, p.layer, p.role, p.box) for p in inner_rec.pins]
        rec.device_area_nm2 = inner_rec.device_area_nm2
    session.cells[name] = rec
    return cell_summary(session, rec)
