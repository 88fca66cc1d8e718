"""Device generators: nmos/pmos, poly resistor, metal plate capacitor.

Every dimension comes from the rule set via :mod:`centroid_skills.rules`; the cell
origin is the lower-left corner of the (first) diffusion.

MOS transistor (``layout.create_device`` type nmos/pmos), one cell per device:

* one diffusion row with ``nf*m`` poly gates (``w/nf`` wide each, ``l`` long); source
  and drain regions alternate (S G D G S ...), neighbouring fingers share diffusion,
  so KLayout's MOS4 extractor sees gate = poly AND active, S/D = active NOT poly;
* poly gates end in an endcap below the diffusion (poly-over-active extension rule)
  and join a poly bus above it; one poly contact per gate on the bus, covered by a
  metal-1 gate strap (pin ``G``);
* a column of contacts in every S/D region under a metal-1 strap; source straps run
  down to a metal-1 source bus (pin ``S``); drain straps carry one via-1 each below the
  diffusion, joined by a metal-2 drain bus (pin ``D``);
* the implant of the device type (nplus/pplus, when the rule set has that layer)
  around the diffusion; for pmos an nwell around diffusion and implant.
* ``dummy: true`` draws the same device with gate, source and drain on one net
  ``TIE`` (the first source strap runs up into the gate strap, a via-1 on it joins
  the drain bus) -- used for dummies at row ends; same pitch as the device.

Poly resistor (type ``resistor``): a poly bar ``w`` wide and ``l`` long between two
contact heads (poly widened to hold a row of contacts, covered by metal-1 pads, pins
``PLUS``/``MINUS``); the ``poly_res`` marker over the bar when the rule set has one.

Capacitor (type ``capacitor``): a metal-1 bottom plate ``w`` x ``l`` with a metal-2 top
plate of the same size over it (a plate capacitor; pins ``BOT`` on a metal-1 tab and
``TOP`` on the metal-2 plate).  With ``cap_kind: "mim"`` (rule sets with a ``mim`` layer):
the mim layer on a bottom-metal plate, a via array on it and a top-metal plate, the
stack found from the enclosure rules (see :func:`mim_stack`).
"""

from __future__ import annotations

from typing import Any

import klayout.db as kdb

from centroid_skills.errors import INVALID_PARAM, SkillError, invalid
from centroid_skills.registry import LENGTH_M, NAME, obj, skill
from centroid_skills.rules import DrawRules, cover, draw_rules
from centroid_skills.session import CellRecord, Pin, Session, box_um, um
from centroid_skills.tech import METAL_ROLES, RESISTOR_CONTEXT, VIA_ROLES, Technology

MOS_TYPES = ("nmos", "pmos")
MAX_FINGERS = 1024


class Painter:
    """Draws boxes on layers by role into one cell."""

    def __init__(self, session: Session, cell: kdb.Cell) -> None:
        self.session = session
        self.tech = session.need_tech()
        self.cell = cell

    def box(self, role: str, box: kdb.Box) -> kdb.Box:
        li = self.tech.role_index(self.session.layout, role)
        self.cell.shapes(li).insert(box)
        return box

    def pin(self, name: str, role: str, box: kdb.Box) -> Pin:
        return Pin(name, self.tech.require(role).name, role, box)


def implant_role(tech: Technology, mos_type: str) -> str | None:
    role = "nplus" if mos_type == "nmos" else "pplus"
    return role if tech.has(role) else None


def grow_to_width(box: kdb.Box, min_w: int, tech: Technology) -> kdb.Box:
    """Enlarge a box symmetrically (on grid) so both sides are at least min_w."""
    dx = max(0, min_w - box.width())
    dy = max(0, min_w - box.height())
    if dx == 0 and dy == 0:
        return box
    lx = tech.snap_up(dx / 2)
    ly = tech.snap_up(dy / 2)
    return kdb.Box(box.left - lx, box.bottom - ly, box.right + lx, box.top + ly)


def contact_column(tech: Technology, r: DrawRules, span: int, margin: int) -> tuple[int, int]:
    """(count, offset) of a centred row of cuts in ``span`` keeping ``margin`` to both ends."""
    pitch = r.cont + r.cs
    n = max(0, (span - 2 * margin + r.cs) // pitch)
    while n >= 1:
        length = n * r.cont + (n - 1) * r.cs
        off = tech.snap_down((span - length) / 2)
        if off >= margin and span - off - length >= margin:
            return n, off
        n -= 1
    return 0, 0


# --------------------------------------------------------------------------------------------
# MOS
# --------------------------------------------------------------------------------------------

def mos_plan(tech: Technology, w_nm: int, l_nm: int, nf: int, m: int, mos_type: str = "nmos",
             extra_gap: int = 0) -> dict[str, Any]:
    """Compute the geometry of a MOS device (nm).  Raises INVALID_PARAM when impossible."""
    r = draw_rules(tech)
    fingers = nf * m
    wf = tech.snap(w_nm / nf)
    length = tech.snap(l_nm)
    gate_min = max(r.poly_w, tech.width("poly"))
    if length < gate_min:
        raise invalid(f"l={um(length)} µm is below the minimum gate length {um(gate_min)} µm",
                      l_um=um(length), min_l_um=um(gate_min))
    n_ct, ct_off = contact_column(tech, r, wf, r.act_ct)
    if wf < r.act_w or n_ct < 1:
        need = max(r.act_w, r.cont + 2 * r.act_ct)
        raise invalid(f"finger width w/nf={um(wf)} µm is below {um(need)} µm (diffusion width / "
                      "one contact with enclosure)", finger_w_um=um(wf), min_finger_w_um=um(need))
    strip_w = tech.snap_up(max(r.m1w, r.cont + 2 * r.m1_ct, r.v1 + 2 * r.m1_v1))
    while True:  # parity: contact and via centred in the strip keep their enclosures
        sc = tech.snap_down((strip_w - r.cont) / 2)
        sv = tech.snap_down((strip_w - r.v1) / 2)
        if (sc >= r.m1_ct and strip_w - sc - r.cont >= r.m1_ct
                and sv >= r.m1_v1 and strip_w - sv - r.v1 >= r.m1_v1):
            break
        strip_w += r.g
    ctm = max(r.ct_poly, r.act_ct)
    # (vias on neighbouring straps: dummies tie their drain bus to a source strap)
    d = tech.snap_up(max(r.sd_ext, r.poly_s, r.cs + r.cont - length, strip_w + r.m1s - length,
                         r.v1s + r.v1 - length, r.g))
    while True:
        sx = tech.snap_down((d - strip_w) / 2)
        cx = sx + sc
        vx = sx + sv
        if (cx >= ctm and d - cx - r.cont >= ctm and vx >= r.v1_poly
                and d - vx - r.v1 >= r.v1_poly and length + d - strip_w >= r.m1s):
            break
        d += r.g
    pitch = length + d
    act_len = fingers * length + (fingers + 1) * d
    # vertical plan (active from 0 to wf)
    col_len = n_ct * r.cont + (n_ct - 1) * r.cs
    ct_y0 = ct_off
    ct_y1 = ct_off + col_len
    strip_top = ct_y1 + r.m1_ct
    via_top = tech.snap_down(min(ct_y0 - r.v1_ct, -r.v1_act if r.v1_act else 0, ct_y0 - r.m1_ct))
    via_top = min(via_top, 0)
    via_bot = via_top - r.v1
    d_strip_bot = via_bot - r.m1_v1
    m2_bot = via_bot - r.m2_v1
    m2_top = via_top + r.m2_v1
    if m2_top - m2_bot < r.m2w:
        m2_bot = m2_top - tech.snap_up(r.m2w)
    s_bus_top = d_strip_bot - r.m1s
    s_bus_bot = s_bus_top - tech.snap_up(r.m1w)
    imp = implant_role(tech, mos_type)
    imp_clear = 0
    if imp:  # poly contacts stay clear of (never straddle) the device implant
        imp_clear = wf + cover(tech, imp, "active") + max(tech.space("contact", imp), r.g)
    pcm_clear = 0
    if tech.has("poly_contact_marker"):
        pcm_clear = ct_y1 + tech.space("poly_contact_marker", "contact") + r.pcm_ct
    pc_y = extra_gap + tech.snap_up(max(
        imp_clear,
        pcm_clear,
        wf + max(r.endcap, r.poly_act) + r.poly_ct,
        wf + r.ct_act,
        strip_top + r.m1s + r.m1_ct,
        ct_y1 + r.ct_poly + r.poly_ct,
        ct_y1 + r.cs,
        (wf + r.pcm_act + r.pcm_ct) if r.pcm_ct or r.pcm_act else 0,
    ))
    return {
        "r": r, "fingers": fingers, "wf": wf, "l": length, "d": d, "pitch": pitch,
        "act_len": act_len, "strip_w": strip_w, "sx": sx, "sc": sc, "sv": sv,
        "n_ct": n_ct, "ct_y0": ct_y0, "ct_y1": ct_y1, "strip_top": strip_top,
        "via_top": via_top, "via_bot": via_bot, "d_strip_bot": d_strip_bot,
        "m2_bot": m2_bot, "m2_top": m2_top, "s_bus_top": s_bus_top, "s_bus_bot": s_bus_bot,
        "pc_y": pc_y,
    }


def density_relief(tech: Technology, layout: kdb.Layout, cell: kdb.Cell) -> int:
    """Extra cell height (nm) that brings every maximum-density rule within bounds
    (density is measured over the cell bbox), 0 when all are met."""
    bbox = cell.bbox()
    if bbox.empty() or bbox.area() == 0:
        return 0
    extra = 0
    cache: dict[str, kdb.Region] = {}
    for rule in tech.rules:
        if rule.type != "density" or rule.max is None or rule.max <= 0:
            continue
        area = (tech.region(layout, cell, rule.layer, cache) & kdb.Region(bbox)).area()
        if area / bbox.area() > rule.max:
            need_h = area / (rule.max * bbox.width())
            extra = max(extra, tech.snap_up(need_h - bbox.height() + tech.grid_nm))
    return extra


def draw_mos(session: Session, cell: kdb.Cell, mos_type: str, w_nm: int, l_nm: int, nf: int,
             m: int, dummy: bool = False) -> tuple[list[Pin], dict[str, Any]]:
    tech = session.need_tech()
    extra = 0
    for _ in range(8):
        pins, info = _draw_mos_once(session, cell, mos_type, w_nm, l_nm, nf, m, dummy, extra)
        more = density_relief(tech, session.layout, cell)
        if more == 0:
            return pins, info
        extra += more
        cell.clear()
    return _draw_mos_once(session, cell, mos_type, w_nm, l_nm, nf, m, dummy, extra)


def _draw_mos_once(session: Session, cell: kdb.Cell, mos_type: str, w_nm: int, l_nm: int,
                   nf: int, m: int, dummy: bool, extra_gap: int) -> tuple[list[Pin], dict[str, Any]]:
    tech = session.need_tech()
    p = mos_plan(tech, w_nm, l_nm, nf, m, mos_type, extra_gap)
    r: DrawRules = p["r"]
    pt = Painter(session, cell)
    wf, length, d, pitch, fingers = p["wf"], p["l"], p["d"], p["pitch"], p["fingers"]
    active = pt.box("active", kdb.Box(0, 0, p["act_len"], wf))
    # S/D regions, contacts, straps
    s_strips: list[kdb.Box] = []
    d_strips: list[kdb.Box] = []
    vias: list[kdb.Box] = []
    for i in range(fingers + 1):
        x0 = i * pitch
        sx0 = x0 + p["sx"]
        is_source = i % 2 == 0
        for k in range(p["n_ct"]):
            y = p["ct_y0"] + k * (r.cont + r.cs)
            pt.box("contact", kdb.Box(sx0 + p["sc"], y, sx0 + p["sc"] + r.cont, y + r.cont))
        top = p["strip_top"]
        if dummy and i == 0:
            top = p["pc_y"] - r.m1_ct  # the first source strap joins the gate strap
        if is_source:
            strip = kdb.Box(sx0, p["s_bus_bot"], sx0 + p["strip_w"], top)
            s_strips.append(strip)
            if dummy and i == 0:  # a via-1 ties the drain bus to the source
                vx = sx0 + p["sv"]
                vias.append(pt.box("via1", kdb.Box(vx, p["via_bot"], vx + r.v1, p["via_top"])))
        else:
            strip = kdb.Box(sx0, p["d_strip_bot"], sx0 + p["strip_w"], top)
            d_strips.append(strip)
            vx = sx0 + p["sv"]
            vias.append(pt.box("via1", kdb.Box(vx, p["via_bot"], vx + r.v1, p["via_top"])))
        pt.box("metal1", strip)
    s_bus = pt.box("metal1", kdb.Box(s_strips[0].left, p["s_bus_bot"], s_strips[-1].right,
                                     p["s_bus_top"]))
    m2_bus = kdb.Box(vias[0].left - r.m2_v1, p["m2_bot"], vias[-1].right + r.m2_v1, p["m2_top"])
    m2_bus = pt.box("metal2", grow_to_width(m2_bus, r.m2w, tech))
    # gates, poly bus, poly contacts, gate strap
    pcs: list[kdb.Box] = []
    gates_left = d
    gates_right = d + (fingers - 1) * pitch + length
    pc_y = p["pc_y"]
    for j in range(fingers):
        gx = d + j * pitch
        pt.box("poly", kdb.Box(gx, -r.endcap, gx + length, pc_y))
        cx = gx + tech.snap_down((length - r.cont) / 2)
        pcs.append(pt.box("contact", kdb.Box(cx, pc_y, cx + r.cont, pc_y + r.cont)))
    bus = kdb.Box(min(gates_left, pcs[0].left - r.poly_ct), pc_y - r.poly_ct,
                  max(gates_right, pcs[-1].right + r.poly_ct), pc_y + r.cont + r.poly_ct)
    if bus.height() < r.poly_w:
        bus = kdb.Box(bus.left, bus.bottom, bus.right, bus.bottom + tech.snap_up(r.poly_w))
    pt.box("poly", bus)
    strap = kdb.Box(pcs[0].left - r.m1_ct, pc_y - r.m1_ct, pcs[-1].right + r.m1_ct,
                    pc_y + r.cont + r.m1_ct)
    if dummy:  # the strap reaches the first source strap: gate, source and drain on one net
        strap = kdb.Box(min(strap.left, s_strips[0].left), strap.bottom, strap.right, strap.top)
    if strap.height() < r.m1w:
        strap = kdb.Box(strap.left, strap.bottom, strap.right, strap.bottom + tech.snap_up(r.m1w))
    if strap.width() < r.m1w:
        grow = tech.snap_up((r.m1w - strap.width()) / 2)
        strap = kdb.Box(strap.left - grow, strap.bottom, strap.right + grow, strap.top)
    pt.box("metal1", strap)
    if tech.has("poly_contact_marker"):
        pcm = kdb.Box(pcs[0].left - r.pcm_ct, pc_y - r.pcm_ct, pcs[-1].right + r.pcm_ct,
                      pc_y + r.cont + r.pcm_ct)
        if pcm.height() < r.pcm_w:  # grow away from the diffusion
            pcm = kdb.Box(pcm.left, pcm.bottom, pcm.right, pcm.bottom + tech.snap_up(r.pcm_w))
        pt.box("poly_contact_marker", grow_to_width(pcm, r.pcm_w, tech))
    # implant and well
    imp = implant_role(tech, mos_type)
    imp_box = None
    if imp:
        imp_box = grow_to_width(active.enlarged(cover(tech, imp, "active"),
                                                cover(tech, imp, "active")), tech.width(imp), tech)
        pt.box(imp, imp_box)
    if mos_type == "pmos":
        nwell_role = "nwell"
        tech.require(nwell_role, "pmos devices")
        e = tech.enc("nwell", "active")
        well = active.enlarged(e, e)
        if imp_box is not None:
            e2 = tech.enc("nwell", imp)  # type: ignore[arg-type]
            well = well + imp_box.enlarged(e2, e2)
        pt.box("nwell", grow_to_width(well, tech.width("nwell"), tech))
    if dummy:
        pins = [pt.pin("TIE", "metal1", strap)]
    else:
        pins = [pt.pin("S", "metal1", s_bus), pt.pin("D", "metal2", m2_bus),
                pt.pin("G", "metal1", strap)]
    info = {"finger_w_um": um(wf), "l_um": um(length), "fingers": fingers,
            "w_drawn_um": um(wf * nf), "gate_pitch_um": um(pitch),
            "active_area_um2": round(active.area() * 1e-6, 6),
            "contacts_per_region": p["n_ct"]}
    return pins, info


# --------------------------------------------------------------------------------------------
# resistor and capacitor
# --------------------------------------------------------------------------------------------

def draw_resistor(session: Session, cell: kdb.Cell, w_nm: int, l_nm: int) -> tuple[list[Pin], dict[str, Any]]:
    tech = session.need_tech()
    r = draw_rules(tech)
    pt = Painter(session, cell)
    w = tech.snap(w_nm)
    length = tech.snap(l_nm)
    ctx = RESISTOR_CONTEXT
    marker = tech.has("poly_res")
    min_w = tech.width("poly", ctx)
    if marker:
        min_w = max(min_w, tech.width("poly_res", ctx))
    if w < min_w:
        raise invalid(f"resistor width {um(w)} µm below the minimum {um(min_w)} µm",
                      w_um=um(w), min_w_um=um(min_w))
    head_w = tech.snap_up(max(w, r.cont + 2 * r.poly_ct, r.cont + 2 * r.m1_ct, r.m1w))
    n_ct, off = contact_column(tech, r, head_w, max(r.poly_ct, r.m1_ct))
    if n_ct < 1:
        n_ct, off = 1, tech.snap_down((head_w - r.cont) / 2)
    head_len = tech.snap_up(max(r.cont + 2 * r.poly_ct, r.cont + 2 * r.m1_ct, r.m1w, r.poly_w))
    gap = 0
    if marker:
        gap = tech.snap_up(tech.space("poly_res", "contact", ctx))
    # body from x=0..length (between the heads), heads outside, marker over the body
    y0 = tech.snap_down((head_w - w) / 2)
    pt.box("poly", kdb.Box(-gap, y0, length + gap, y0 + w))
    pins = []
    for side, (hx0, hx1) in (("MINUS", (-gap - head_len, -gap)),
                             ("PLUS", (length + gap, length + gap + head_len))):
        pt.box("poly", kdb.Box(hx0, 0, hx1, head_w))
        cx = hx0 + tech.snap_down((head_len - r.cont) / 2)
        cts = []
        for k in range(n_ct):
            y = off + k * (r.cont + r.cs)
            cts.append(pt.box("contact", kdb.Box(cx, y, cx + r.cont, y + r.cont)))
        pad = kdb.Box(cx - r.m1_ct, cts[0].bottom - r.m1_ct, cx + r.cont + r.m1_ct,
                      cts[-1].top + r.m1_ct)
        pad = grow_to_width(pad, r.m1w, tech)
        pt.box("metal1", pad)
        if tech.has("poly_contact_marker"):
            pcm = kdb.Box(cts[0].left, cts[0].bottom, cts[-1].right, cts[-1].top)
            pt.box("poly_contact_marker",
                   grow_to_width(pcm.enlarged(r.pcm_ct, r.pcm_ct), r.pcm_w, tech))
        pins.append(pt.pin(side, "metal1", pad))
    if marker:
        e = tech.enc("poly_res", "poly", ctx)
        pt.box("poly_res", kdb.Box(0, y0 - e, length, y0 + w + e))
    sheet = tech.layer_for("poly_res").sheet_resistance if marker else None  # type: ignore[union-attr]
    if sheet is None:
        sheet = tech.require("poly").sheet_resistance
    info: dict[str, Any] = {"w_um": um(w), "l_um": um(length), "squares": round(length / w, 4)}
    if sheet is not None:
        info["resistance_ohm"] = round(sheet * length / w, 4)
    return pins, info


def max_density(tech: Technology, role: str) -> float | None:
    values = [r.max for r in tech.rules_for("density", role) if r.max is not None]
    return min(values) if values else None


def draw_capacitor(session: Session, cell: kdb.Cell, w_nm: int, l_nm: int) -> tuple[list[Pin], dict[str, Any]]:
    """Metal-1 bottom plate under a metal-2 top plate.  When a maximum-density rule exists
    for either metal, both plates become combs of stripes (same stripes on both layers)
    whose coverage stays below the maximum; spines join the stripes (metal-1 on the left
    = pin BOT, metal-2 on the right = pin TOP).  If the cell is still too dense (a single
    stripe), the spines are made taller until every maximum density is met."""
    tech = session.need_tech()
    extra = 0
    for _ in range(8):
        pins, info = _draw_capacitor_once(session, cell, w_nm, l_nm, extra)
        more = density_relief(tech, session.layout, cell)
        if more == 0:
            return pins, info
        extra += more
        cell.clear()
    return pins, info


def _draw_capacitor_once(session: Session, cell: kdb.Cell, w_nm: int, l_nm: int,
                         extra_h: int) -> tuple[list[Pin], dict[str, Any]]:
    tech = session.need_tech()
    r = draw_rules(tech)
    pt = Painter(session, cell)
    w = tech.snap(w_nm)
    length = tech.snap(l_nm)
    mw = max(r.m1w, r.m2w, r.g)
    ms = max(r.m1s, r.m2s)
    if w < mw or length < mw:
        raise invalid("capacitor plate below the metal width", min_um=um(mw))
    dmax = [d for d in (max_density(tech, "metal1"), max_density(tech, "metal2")) if d is not None]
    spine = tech.snap_up(max(mw, ms))
    if not dmax or min(dmax) >= 1.0:
        stripes = [(0, w)]
    else:
        target = 0.8 * min(dmax)
        sw = max(tech.snap_down(ms * target / (1 - target)), tech.snap_up(mw))
        gs = max(tech.snap_up(sw * (1 - target) / target), ms)
        n = max(1, (w + gs) // (sw + gs))
        stripes = [(k * (sw + gs), k * (sw + gs) + sw) for k in range(n)]
    plate_area = 0
    for y0, y1 in stripes:
        pt.box("metal1", kdb.Box(0, y0, length, y1))
        pt.box("metal2", kdb.Box(0, y0, length, y1))
        plate_area += length * (y1 - y0)
    top_y = stripes[-1][1] + extra_h
    # each plate's spine is on its own side: metal-1 left, metal-2 right
    bot = pt.box("metal1", kdb.Box(-spine - ms, 0, -ms, top_y))
    for y0, y1 in stripes:
        pt.box("metal1", kdb.Box(-ms, y0, 0, y1))
    top = pt.box("metal2", kdb.Box(length + ms, 0, length + ms + spine, top_y))
    for y0, y1 in stripes:
        pt.box("metal2", kdb.Box(length, y0, length + ms, y1))
    cap = None
    for role in ("metal2", "metal1"):
        ldef = tech.layer_for(role)
        if ldef is not None and ldef.area_capacitance:
            cap = ldef.area_capacitance * plate_area * 1e-18
            break
    pins = [pt.pin("TOP", "metal2", top), pt.pin("BOT", "metal1", bot)]
    info: dict[str, Any] = {"w_um": um(w), "l_um": um(length), "stripes": len(stripes),
                            "plate_area_um2": round(plate_area * 1e-6, 6)}
    if cap is not None:
        info["capacitance_f"] = cap
    return pins, info


def mim_stack(tech: Technology) -> tuple[str, str, str, str]:
    """(bottom metal, mim, via on mim, top metal) layer names, found from the rules: the
    metal enclosing the mim layer, the via the mim layer encloses, and the other metal
    enclosing that via."""
    mim = tech.require("mim", "a MIM capacitor").name

    def role(name: str | None) -> str:
        ldef = tech.layers.get(name or "")
        return (ldef.role or "") if ldef else ""

    bottoms = {r.layer for r in tech.rules if r.type == "enclosure" and r.layer2 == mim
               and role(r.layer) in METAL_ROLES}
    vias = {r.layer2 for r in tech.rules if r.type == "enclosure" and r.layer == mim
            and role(r.layer2) in VIA_ROLES}
    if len(bottoms) != 1 or len(vias) != 1:
        raise invalid("cannot tell the MIM stack from the rules (need one metal enclosing the "
                      "mim layer and one via enclosed by it)", bottoms=sorted(bottoms), vias=sorted(vias))
    bottom, via = bottoms.pop(), vias.pop()
    assert via is not None
    tops = {r.layer for r in tech.rules if r.type == "enclosure" and r.layer2 == via
            and role(r.layer) in METAL_ROLES and r.layer != bottom}
    if len(tops) != 1:
        raise invalid("cannot tell the MIM top metal from the rules", tops=sorted(tops))
    return bottom, mim, via, tops.pop()


def draw_mim(session: Session, cell: kdb.Cell, w_nm: int, l_nm: int) -> tuple[list[Pin], dict[str, Any]]:
    """MIM capacitor: the mim layer ``w`` x ``l`` on a bottom-metal plate (enclosure rule),
    an array of vias on the mim (mim enclosure, via size and spacing rules), a top-metal
    plate over the vias (pin ``TOP``); pin ``BOT`` is the bottom plate."""
    tech = session.need_tech()
    bottom, mim, via, top = mim_stack(tech)
    rb, rm, rv, rt = (tech.layers[n].role or "" for n in (bottom, mim, via, top))
    ctx = frozenset(tech.roles)
    w = tech.snap(w_nm)
    length = tech.snap(l_nm)
    mim_w = tech.width(rm, ctx)
    if min(w, length) < mim_w:
        raise invalid(f"MIM side below the minimum {um(mim_w)} µm", min_um=um(mim_w))
    pt = Painter(session, cell)
    mim_box = pt.box(rm, kdb.Box(0, 0, length, w))
    e_bot = tech.enc(rb, rm, ctx)
    pt.box(rb, mim_box.enlarged(e_bot, e_bot))
    cut = tech.cut_size(rv)
    cs = max(tech.space(rv, None, ctx), tech.grid_nm)
    margin = max(tech.enc(rm, rv, ctx), tech.enc(rb, rv, ctx) - e_bot)
    nx = max(0, (length - 2 * margin + cs) // (cut + cs))
    ny = max(0, (w - 2 * margin + cs) // (cut + cs))
    if nx < 1 or ny < 1:
        raise invalid("MIM too small for one via with its enclosure",
                      min_um=um(cut + 2 * margin))
    ox = tech.snap_down((length - (nx * cut + (nx - 1) * cs)) / 2)
    oy = tech.snap_down((w - (ny * cut + (ny - 1) * cs)) / 2)
    cuts = kdb.Box()
    for i in range(nx):
        for j in range(ny):
            x, y = ox + i * (cut + cs), oy + j * (cut + cs)
            cuts += pt.box(rv, kdb.Box(x, y, x + cut, y + cut))
    e_top = tech.enc(rt, rv, ctx)
    top_box = pt.box(rt, grow_to_width(cuts.enlarged(e_top, e_top), tech.width(rt, ctx), tech))
    bot_box = mim_box.enlarged(e_bot, e_bot)
    cap = None
    if tech.layers[mim].area_capacitance:
        cap = tech.layers[mim].area_capacitance * w * length * 1e-18
    info: dict[str, Any] = {"w_um": um(w), "l_um": um(length), "kind": "mim",
                            "layers": {"bottom": bottom, "mim": mim, "via": via, "top": top},
                            "vias": nx * ny, "plate_area_um2": round(w * length * 1e-6, 6)}
    if cap is not None:
        info["capacitance_f"] = cap
    return [pt.pin("TOP", rt, top_box), pt.pin("BOT", rb, bot_box)], info


# --------------------------------------------------------------------------------------------
# skill
# --------------------------------------------------------------------------------------------

def make_device(session: Session, spec: dict[str, Any], cell_name: str | None = None,
                dummy: bool = False) -> CellRecord:
    """Create a device cell from a device spec; returns its record (also used by modules)."""
    tech = session.need_tech()
    dtype = spec["type"]
    w_nm = tech.nm(spec["w"])
    l_nm = tech.nm(spec["l"])
    nf = int(spec.get("nf", 1))
    m = int(spec.get("m", 1))
    device_id = spec.get("device_id")
    if dtype in MOS_TYPES and nf * m > MAX_FINGERS:
        raise invalid(f"nf*m = {nf * m} fingers is more than {MAX_FINGERS} in one cell",
                      nf=nf, m=m, max_fingers=MAX_FINGERS)
    if cell_name is None:
        cell_name = device_id or session.unique_name(f"{dtype}_w{w_nm}_l{l_nm}_nf{nf}_m{m}")
    if device_id and device_id in session.devices and session.devices[device_id] != cell_name:
        raise SkillError(INVALID_PARAM, f"device {device_id} exists already", {"device_id": device_id})
    cell = session.new_cell(cell_name, replace=bool(spec.get("replace", False)))
    try:
        if dtype in MOS_TYPES:
            pins, info = draw_mos(session, cell, dtype, w_nm, l_nm, nf, m, dummy=dummy)
            area = int(info["active_area_um2"] * 1e6)
        elif dtype == "resistor":
            pins, info = draw_resistor(session, cell, w_nm, l_nm)
            area = 0
        elif dtype == "capacitor" and spec.get("cap_kind", "plate") == "mim":
            pins, info = draw_mim(session, cell, w_nm, l_nm)
            area = 0
        elif dtype == "capacitor":
            pins, info = draw_capacitor(session, cell, w_nm, l_nm)
            area = 0
        else:  # schema prevents this
            raise invalid(f"unknown device type {dtype}")
    except Exception:
        cell.delete()
        raise
    bbox = cell.bbox()
    rec = CellRecord(name=cell_name, kind=dtype,
                     params={"type": dtype, "w": spec["w"], "l": spec["l"], "nf": nf, "m": m,
                             "device_id": device_id, "dummy": dummy, **info},
                     pins=pins, device_area_nm2=bbox.area(), dummies=1 if dummy else 0)
    rec.params["active_area_nm2"] = area
    session.cells[cell_name] = rec
    if device_id:
        session.devices[device_id] = cell_name
    return rec


def cell_summary(session: Session, rec: CellRecord) -> dict[str, Any]:
    cell = session.layout.cell(rec.name)
    bbox = cell.bbox()
    return {
        "cell_name": rec.name,
        "kind": rec.kind,
        "bbox_um": box_um(bbox),
        "width_um": um(bbox.width()),
        "height_um": um(bbox.height()),
        "pins": {p.name: p.to_dict() for p in rec.pins},
        "params": rec.params,
    }


DEVICE_SPEC = obj(
    {
        "device_id": NAME,
        "type": {"enum": ["nmos", "pmos", "resistor", "capacitor"]},
        "w": {**LENGTH_M, "description": "MOS: total width of one instance (split over nf); "
                                         "resistor: bar width; capacitor: plate width"},
        "l": {**LENGTH_M, "description": "MOS: gate length; resistor: bar length; capacitor: plate length"},
        "nf": {"type": "integer", "minimum": 1, "maximum": 256, "default": 1},
        "m": {"type": "integer", "minimum": 1, "maximum": 256, "default": 1},
        "cell_name": NAME,
        "dummy": {"type": "boolean", "default": False},
        "replace": {"type": "boolean", "default": False},
        "cap_kind": {"enum": ["plate", "mim"], "default": "plate",
                     "description": "capacitor: metal-1/metal-2 plate, or MIM (needs a mim layer)"},
    },
    ["type", "w", "l"],
)


@skill("layout.create_device",
       "Create one device cell: nmos/pmos (w = total width of one instance split over nf "
       "fingers, m parallel instances, diffusion/gates/contacts/metal-1 straps/metal-2 drain "
       "bus/implant/nwell), a poly resistor or a metal-1/metal-2 plate capacitor. Returns the "
       "cell name, bbox and pins (terminal -> layer + box, µm).",
       DEVICE_SPEC)
def create_device(session: Session, args: dict[str, Any]) -> dict[str, Any]:
    rec = make_device(session, args, cell_name=args.get("cell_name"), dummy=bool(args.get("dummy")))
    return cell_summary(session, rec)
