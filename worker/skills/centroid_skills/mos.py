"""The MOS transistor generator (``layout.create_device`` type nmos/pmos), one cell per
device; the skill itself is in :mod:`centroid_skills.skills.devices`.

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
  (the first source strap runs up into the gate strap, a via-1 on it joins the drain
  bus; pins ``TIE``, the gate strap, and ``TIE_S``, the source bus) -- used for
  dummies at row ends; same pitch as the device.

* ``regions`` (:class:`RegionMetal`, one per source/drain region left to right) draws other
  nets than S and D on the regions (:mod:`centroid_skills.series_stacks`: a series stack
  finger by finger): a region's strap carries a via-1 onto its net's metal-2 bar below the
  diffusion (as the drain), or runs down to its net's metal-1 bus ``level`` buses below the
  source bus (level 0: where the source bus is); the pins are then named by the nets, the
  gate strap's (``G``) last.

Cut enclosures follow :mod:`centroid_skills.cuts`: the straps and buses are lines with
their cuts in a row, so each reaches past its last cut by the along margin (line-end and
adjacent-side rules); small islands (a one-finger drain bus or gate strap, a drain strap)
grow to the layer's minimum area; the diffusion grows (longer source/drain) to its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import klayout.db as kdb

from centroid_skills.cuts import CutRules, along_margin, block_margins, cut_rules
from centroid_skills.draw import Painter, contact_column, grow_to_area, grow_to_width, implant_role
from centroid_skills.errors import invalid
from centroid_skills.rules import DrawRules, cover, draw_rules
from centroid_skills.session import Pin, Session, um
from centroid_skills.tech import Technology


@dataclass(frozen=True)
class RegionMetal:
    """How one source/drain region is strapped: its net and either a via-1 onto the net's
    metal-2 bar (``level`` ``None``) or a metal-1 bus ``level`` buses below the source bus."""

    net: str
    level: int | None


def plain_regions(fingers: int) -> list[RegionMetal]:
    """S G D G S …: sources on the metal-1 source bus, drains on the metal-2 drain bus."""
    return [RegionMetal("S", 0) if i % 2 == 0 else RegionMetal("D", None) for i in range(fingers + 1)]


def bus_pitch(tech: Technology, r: DrawRules) -> int:
    """How far a metal-1 bus of one level stands below the one of the level above."""
    return tech.snap_up(r.m1w) + tech.snap_up(r.m1s)


def _strip(tech: Technology, r: DrawRules) -> tuple[int, int, int]:
    """Width of an S/D strap and the offsets of its contact and via (centred, each with
    its enclosure on both sides)."""
    strip_w = tech.snap_up(max(r.m1w, r.cont + 2 * r.m1_ct, r.v1 + 2 * r.m1_v1))
    while True:
        sc = tech.snap_down((strip_w - r.cont) / 2)
        sv = tech.snap_down((strip_w - r.v1) / 2)
        if (sc >= r.m1_ct and strip_w - sc - r.cont >= r.m1_ct
                and sv >= r.m1_v1 and strip_w - sv - r.v1 >= r.m1_v1):
            return strip_w, sc, sv
        strip_w += r.g


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
    cr_act = cut_rules(tech, "active", "contact")
    strip_w, sc, sv = _strip(tech, r)
    ctm = max(r.ct_poly, r.act_ct)
    if cr_act.end_min and wf < cr_act.end_width:  # the diffusion's ends are line ends
        ctm = max(ctm, cr_act.end_min)
    act_area = tech.area("active")
    # (vias on neighbouring straps: dummies tie their drain bus to a source strap)
    d = tech.snap_up(max(r.sd_ext, r.poly_s, r.cs + r.cont - length, strip_w + r.m1s - length,
                         r.v1s + r.v1 - length, r.g))
    if wf < max(r.act_w, r.g):
        need = max(r.act_w, r.cont + 2 * r.act_ct)
        raise invalid(f"finger width w/nf={um(wf)} µm is below {um(need)} µm (diffusion width / "
                      "one contact with enclosure)", finger_w_um=um(wf), min_finger_w_um=um(need))
    fits_at_all = contact_column(tech, r, wf, r.act_ct)[0] >= 1
    d_limit = d + max(tech.snap_up(act_area / wf), 64 * (r.cont + r.cs + r.g))
    while d <= d_limit:
        sx = tech.snap_down((d - strip_w) / 2)
        cx = sx + sc
        vx = sx + sv
        act_len = fingers * length + (fingers + 1) * d
        # contacts in the diffusion: the ends of a column keep the margin that the end
        # regions' side margin asks for (adjacent-side rule) and the diffusion's line-end
        # margin; a narrow finger makes the source/drain longer instead
        margin_y = max(r.act_ct, along_margin(cr_act, min(cx, d - cx - r.cont), act_len))
        n_ct, ct_off = contact_column(tech, r, wf, margin_y)
        if (cx >= ctm and d - cx - r.cont >= ctm and vx >= r.v1_poly
                and d - vx - r.v1 >= r.v1_poly and length + d - strip_w >= r.m1s
                and act_len * wf >= act_area and (n_ct >= 1 or not fits_at_all)):
            break
        d += r.g
    pitch = length + d
    if wf < r.act_w or n_ct < 1:
        need = max(r.act_w, r.cont + 2 * margin_y)
        raise invalid(f"finger width w/nf={um(wf)} µm is below {um(need)} µm (diffusion width / "
                      "one contact with enclosure)", finger_w_um=um(wf), min_finger_w_um=um(need))
    # vertical plan (active from 0 to wf)
    col_len = n_ct * r.cont + (n_ct - 1) * r.cs
    ct_y0 = ct_off
    ct_y1 = ct_off + col_len
    cr_m1ct = cut_rules(tech, "metal1", "contact")
    cr_m1v1 = cut_rules(tech, "metal1", "via1")
    ct_side = min(sc, strip_w - sc - r.cont)
    strip_top = ct_y1 + along_margin(cr_m1ct, ct_side, strip_w)
    via_top = tech.snap_down(min(ct_y0 - r.v1_ct, -r.v1_act if r.v1_act else 0, ct_y0 - r.m1_ct))
    via_top = min(via_top, 0)
    via_bot = via_top - r.v1
    d_strip_bot = via_bot - along_margin(cr_m1v1, min(sv, strip_w - sv - r.v1), strip_w)
    # a drain strap is an island of metal 1 until it is routed: at least the minimum area
    strip_top = max(strip_top, d_strip_bot + tech.snap_up(tech.area("metal1") / strip_w))
    m2_bot = via_bot - r.m2_v1
    m2_top = via_top + r.m2_v1
    if m2_top - m2_bot < r.m2w:
        m2_bot = m2_top - tech.snap_up(r.m2w)
    s_bus_top = d_strip_bot - r.m1s
    s_bus_bot = s_bus_top - tech.snap_up(r.m1w)
    # gate contacts in a row on the poly bus, under the metal-1 gate strap
    row_w = (fingers - 1) * pitch + r.cont
    pmx, pmy = block_margins(tech, cut_rules(tech, "poly", "contact"), row_w, r.cont,
                             r.poly_ct, r.poly_ct, grow="x")
    smx, smy = block_margins(tech, cr_m1ct, row_w, r.cont, r.m1_ct, r.m1_ct, grow="x")
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
        wf + max(r.endcap, r.poly_act) + pmy,
        wf + r.ct_act,
        strip_top + r.m1s + smy,
        ct_y1 + r.ct_poly + pmy,
        ct_y1 + r.cs,
        (wf + r.pcm_act + r.pcm_ct) if r.pcm_ct or r.pcm_act else 0,
    ))
    return {
        "r": r, "fingers": fingers, "wf": wf, "l": length, "d": d, "pitch": pitch,
        "act_len": act_len, "strip_w": strip_w, "sx": sx, "sc": sc, "sv": sv,
        "n_ct": n_ct, "ct_y0": ct_y0, "ct_y1": ct_y1, "strip_top": strip_top,
        "via_top": via_top, "via_bot": via_bot, "d_strip_bot": d_strip_bot,
        "m2_bot": m2_bot, "m2_top": m2_top, "s_bus_top": s_bus_top, "s_bus_bot": s_bus_bot,
        "pc_y": pc_y, "pmx": pmx, "pmy": pmy, "smx": smx, "smy": smy,
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
             m: int, dummy: bool = False, regions: list[RegionMetal] | None = None
             ) -> tuple[list[Pin], dict[str, Any]]:
    tech = session.need_tech()
    extra = 0
    for _ in range(8):
        pins, info = _draw_mos_once(session, cell, mos_type, w_nm, l_nm, nf, m, dummy, extra, regions)
        more = density_relief(tech, session.layout, cell)
        if more == 0:
            return pins, info
        extra += more
        cell.clear()
    return _draw_mos_once(session, cell, mos_type, w_nm, l_nm, nf, m, dummy, extra, regions)


def cut_row_bar(tech: Technology, cr: CutRules, cuts: list[kdb.Box], bottom: int, top: int,
                width_min: int, area: int) -> kdb.Box:
    """A horizontal bar from ``bottom`` to ``top`` (or further) over a row of cuts: it
    reaches past the end cuts by what the enclosure rules ask of a line that high, is at
    least ``width_min`` high (grown upwards) and large enough for ``area``."""
    if top - bottom < width_min:
        top = bottom + tech.snap_up(width_min)
    left, right = cuts[0].left, cuts[-1].right
    side = min(cuts[0].bottom - bottom, top - cuts[0].top)
    mx, my = block_margins(tech, cr, right - left, cuts[0].height(),
                           along_margin(cr, side, top - bottom), side, grow="x")
    bar = kdb.Box(left - mx, min(bottom, cuts[0].bottom - my), right + mx, max(top, cuts[0].top + my))
    return grow_to_area(bar, area, tech)


def _draw_mos_once(session: Session, cell: kdb.Cell, mos_type: str, w_nm: int, l_nm: int,
                   nf: int, m: int, dummy: bool, extra_gap: int,
                   regions: list[RegionMetal] | None = None) -> tuple[list[Pin], dict[str, Any]]:
    tech = session.need_tech()
    p = mos_plan(tech, w_nm, l_nm, nf, m, mos_type, extra_gap)
    r: DrawRules = p["r"]
    pt = Painter(session, cell)
    wf, length, d, pitch, fingers = p["wf"], p["l"], p["d"], p["pitch"], p["fingers"]
    plain = regions is None
    plan = plain_regions(fingers) if regions is None else regions
    if len(plan) != fingers + 1:
        raise invalid(f"{len(plan)} region nets for {fingers} fingers", fingers=fingers)
    active = pt.box("active", kdb.Box(0, 0, p["act_len"], wf))
    bus_h = tech.snap_up(r.m1w)
    # S/D regions, contacts, straps; per net its straps (metal-1 buses) or vias (metal-2 bars)
    bus_straps: dict[tuple[str, int], list[kdb.Box]] = {}
    net_vias: dict[str, list[kdb.Box]] = {}
    for i, region in enumerate(plan):
        x0 = i * pitch
        sx0 = x0 + p["sx"]
        for k in range(p["n_ct"]):
            y = p["ct_y0"] + k * (r.cont + r.cs)
            pt.box("contact", kdb.Box(sx0 + p["sc"], y, sx0 + p["sc"] + r.cont, y + r.cont))
        top = p["strip_top"]
        if dummy and i == 0:
            top = p["pc_y"] - p["smy"]  # the first source strap joins the gate strap
        vx = sx0 + p["sv"]
        via = kdb.Box(vx, p["via_bot"], vx + r.v1, p["via_top"])
        if region.level is not None:
            bottom = p["s_bus_bot"] - region.level * bus_pitch(tech, r)
            strip = kdb.Box(sx0, bottom, sx0 + p["strip_w"], top)
            bus_straps.setdefault((region.net, region.level), []).append(strip)
            if dummy and i == 0:  # a via-1 ties the drain bus to the source
                net_vias.setdefault("D", []).append(pt.box("via1", via))
        else:
            strip = kdb.Box(sx0, p["d_strip_bot"], sx0 + p["strip_w"], top)
            net_vias.setdefault(region.net, []).append(pt.box("via1", via))
        pt.box("metal1", strip)
    buses: dict[str, kdb.Box] = {}
    for (net, level), strips in bus_straps.items():
        bottom = p["s_bus_bot"] - level * bus_pitch(tech, r)
        buses[net] = pt.box("metal1", kdb.Box(strips[0].left, bottom, strips[-1].right, bottom + bus_h))
    bars: dict[str, kdb.Box] = {}
    for net, vias in net_vias.items():
        bar = cut_row_bar(tech, cut_rules(tech, "metal2", "via1"), vias, p["m2_bot"], p["m2_top"],
                          r.m2w, tech.area("metal2"))
        bars[net] = pt.box("metal2", grow_to_width(bar, r.m2w, tech))
    s_bus = buses.get("S", kdb.Box())
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
    pmx, pmy = p["pmx"], p["pmy"]
    bus = kdb.Box(min(gates_left, pcs[0].left - pmx), pc_y - pmy,
                  max(gates_right, pcs[-1].right + pmx), pc_y + r.cont + pmy)
    if bus.height() < r.poly_w:
        bus = kdb.Box(bus.left, bus.bottom, bus.right, bus.bottom + tech.snap_up(r.poly_w))
    pt.box("poly", bus)
    smx, smy = p["smx"], p["smy"]
    strap = kdb.Box(pcs[0].left - smx, pc_y - smy, pcs[-1].right + smx, pc_y + r.cont + smy)
    if dummy:  # the strap reaches the first source strap: gate, source and drain on one net
        strap = kdb.Box(min(strap.left, bus_straps[("S", 0)][0].left), strap.bottom, strap.right,
                        strap.top)
    if strap.height() < r.m1w:
        strap = kdb.Box(strap.left, strap.bottom, strap.right, strap.bottom + tech.snap_up(r.m1w))
    strap = grow_to_area(grow_to_width(strap, r.m1w, tech), tech.area("metal1"), tech)
    pt.box("metal1", strap)
    if tech.has("poly_contact_marker"):
        pcm = kdb.Box(pcs[0].left - r.pcm_ct, pc_y - r.pcm_ct, pcs[-1].right + r.pcm_ct,
                      pc_y + r.cont + r.pcm_ct)
        if pcm.height() < r.pcm_w:  # grow away from the diffusion
            pcm = kdb.Box(pcm.left, pcm.bottom, pcm.right, pcm.bottom + tech.snap_up(r.pcm_w))
        pcm = grow_to_width(pcm, r.pcm_w, tech)
        pt.box("poly_contact_marker", grow_to_area(pcm, tech.area("poly_contact_marker"), tech))
    # implant and well
    imp = implant_role(tech, mos_type)
    imp_box = None
    if imp:
        e = cover(tech, imp, "active")
        imp_box = grow_to_width(active.enlarged(e, e), tech.width(imp), tech)
        imp_box = pt.box(imp, grow_to_area(imp_box, tech.area(imp), tech))
    if mos_type == "pmos":
        tech.require("nwell", "pmos devices")
        e = tech.enc("nwell", "active")
        well = active.enlarged(e, e)
        if imp_box is not None:
            e2 = tech.enc("nwell", imp)  # type: ignore[arg-type]
            well = well + imp_box.enlarged(e2, e2)
        well = grow_to_width(well, tech.width("nwell"), tech)
        pt.box("nwell", grow_to_area(well, tech.area("nwell"), tech))
    if dummy:  # its source bus too: a row's router drops it onto the supply rail below
        pins = [pt.pin("TIE", "metal1", strap), pt.pin("TIE_S", "metal1", s_bus)]
    elif plain:
        pins = [pt.pin("S", "metal1", s_bus), pt.pin("D", "metal2", bars["D"]),
                pt.pin("G", "metal1", strap)]
    else:  # one pin per net: its metal-2 bar, else its metal-1 bus; the gate strap's last
        pins = [pt.pin(net, "metal2", bar) for net, bar in bars.items()]
        pins += [pt.pin(net, "metal1", bus) for net, bus in buses.items() if net not in bars]
        pins.append(pt.pin("G", "metal1", strap))
    info = {"finger_w_um": um(wf), "l_um": um(length), "fingers": fingers,
            "w_drawn_um": um(wf * nf), "gate_pitch_um": um(pitch),
            "active_area_um2": round(active.area() * 1e-6, 6),
            "contacts_per_region": p["n_ct"]}
    return pins, info
