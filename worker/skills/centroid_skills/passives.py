"""Passive device generators (``layout.create_device`` type resistor and capacitor); the
skill itself is in :mod:`centroid_skills.skills.devices`.

Poly resistor: a poly bar ``w`` wide and ``l`` long between two contact heads (poly
widened to hold a column of contacts, covered by metal-1 pads, pins ``PLUS``/``MINUS``);
the ``poly_res`` marker over the bar when the rule set has one.  A long bar is folded
(serpentine): an even number of equal segments joined by poly bends outside the marker,
both heads at the bottom (see :func:`draw_resistor`).  Head and pad margins come
from :mod:`centroid_skills.cuts` (line ends, adjacent sides), pads grow to the metal-1
minimum area.

Capacitor: a metal-1 bottom plate ``w`` x ``l`` with a metal-2 top plate of the same size
over it (a plate capacitor; pins ``BOT`` on a metal-1 spine and ``TOP`` on a metal-2
spine).  With ``cap_kind: "mim"`` (rule sets with a ``mim`` layer): the mim layer on a
bottom-metal plate, a via array on it and a top-metal plate, the stack found from the
enclosure rules (see :func:`mim_stack`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import klayout.db as kdb

from centroid_skills.cuts import block_margins, cut_rules
from centroid_skills.draw import Painter, contact_column, grow_to_area, grow_to_width
from centroid_skills.errors import invalid
from centroid_skills.mos import density_relief
from centroid_skills.rules import draw_rules
from centroid_skills.session import Pin, Session, um
from centroid_skills.tech import METAL_ROLES, RESISTOR_CONTEXT, VIA_ROLES, Technology

# A resistor folds only when its bar is longer than this many segment pitches: below that,
# the bends and the second head's overhang eat what folding saves.
FOLD_MIN_PITCHES = 12
# Largest relative error of the folded length (segments on the grid) against l: a tenth of
# LVS's default 1 % tolerance.
FOLD_MAX_L_ERROR = 1e-3


def folded_length(grid: int, length: int, n: int) -> int:
    """Total length of ``n`` equal segments on the grid, as close to ``length`` as can be."""
    return n * int(round(length / n / grid)) * grid


@dataclass(frozen=True)
class ResistorFrame:
    """Dimensions of a resistor drawn along x (nm): body ``w`` wide, heads ``head_len``
    long and ``head_w`` wide (a column of ``n_ct`` contacts at ``ct_off`` across it), a
    ``gap`` between the poly_res marker and the heads, segment ``pitch`` when folded."""

    w: int
    min_w: int
    head_w: int
    head_len: int
    n_ct: int
    ct_off: int
    gap: int
    pitch: int
    marker_enc: int
    pad_mx: int
    pad_my: int


def resistor_frame(tech: Technology, w: int) -> ResistorFrame:
    r = draw_rules(tech)
    ctx = RESISTOR_CONTEXT
    marker = tech.has("poly_res")
    min_w = tech.width("poly", ctx)
    if marker:
        min_w = max(min_w, tech.width("poly_res", ctx))
    if w < min_w:
        raise invalid(f"resistor width {um(w)} µm below the minimum {um(min_w)} µm",
                      w_um=um(w), min_w_um=um(min_w))
    # margins of one contact in a head (a longer column only lengthens the head's edges)
    cr_poly = cut_rules(tech, "poly", "contact", ctx)
    cr_m1 = cut_rules(tech, "metal1", "contact", ctx)
    pmx, pmy = block_margins(tech, cr_poly, r.cont, r.cont, r.poly_ct, r.poly_ct)
    mmx, mmy = block_margins(tech, cr_m1, r.cont, r.cont, r.m1_ct, r.m1_ct)
    head_w = tech.snap_up(max(w, r.cont + 2 * max(pmy, mmy), r.m1w))
    n_ct, off = contact_column(tech, r, head_w, max(pmy, mmy))
    if n_ct < 1:
        n_ct, off = 1, tech.snap_down((head_w - r.cont) / 2)
    head_len = tech.snap_up(max(r.cont + 2 * pmx, r.m1w, r.poly_w))
    while (tech.snap_down((head_len - r.cont) / 2) < pmx
           or head_len - r.cont - tech.snap_down((head_len - r.cont) / 2) < pmx):
        head_len += r.g
    gap = tech.snap_up(tech.space("poly_res", "contact", ctx)) if marker else 0
    enc = tech.enc("poly_res", "poly", ctx) if marker else 0
    pitch = w + tech.snap_up(max(tech.space_for_width("poly", w, ctx), r.poly_s))
    return ResistorFrame(w, min_w, head_w, head_len, n_ct, off, gap, pitch, enc, mmx, mmy)


def frame_size(f: ResistorFrame, length: int, n: int) -> tuple[int, int]:
    """(extent along the segments, extent across them) of a resistor of ``n`` segments."""
    seg = length // n
    if n == 1:
        return seg + 2 * (f.gap + f.head_len), max(f.head_w, f.w + 2 * f.marker_enc)
    across = (n - 1) * f.pitch + f.w + 2 * max(f.head_w - f.w, f.marker_enc)
    return f.head_len + f.gap + seg + f.w, across


def auto_segments(f: ResistorFrame, length: int, grid: int) -> int:
    """1 for a bar up to ``FOLD_MIN_PITCHES`` pitches long, else the even segment count
    (both heads on one side) whose bounding box is closest to square."""
    if length <= FOLD_MIN_PITCHES * f.pitch:
        return 1

    def aspect(n: int) -> float:
        a, b = frame_size(f, length, n)
        return max(a, b) / min(a, b)

    best, n = 1, 2
    while length // n >= max(f.min_w, f.head_len):
        exact = abs(folded_length(grid, length, n) - length) <= FOLD_MAX_L_ERROR * length
        if exact and aspect(n) < aspect(best):
            best = n
        n += 2
    return best


def draw_resistor(session: Session, cell: kdb.Cell, w_nm: int, l_nm: int,
                  segments: int | None = None) -> tuple[list[Pin], dict[str, Any]]:
    """A poly resistor; ``segments`` > 1 (or automatically, see :func:`auto_segments`)
    folds it into that many parallel segments of equal length joined by poly bends
    outside the poly_res marker (each segment is a resistor body; LVS combines the series
    chain back into one resistor of W = w, L = the segments' total length)."""
    tech = session.need_tech()
    w = tech.snap(w_nm)
    length = tech.snap(l_nm)
    f = resistor_frame(tech, w)
    n = auto_segments(f, length, tech.grid_nm) if segments is None else segments
    if n > 1 and n % 2:
        raise invalid("a folded resistor needs an even number of segments (both terminals on "
                      "one side)", segments=n)
    seg = folded_length(tech.grid_nm, length, n) // n
    if abs(seg * n - length) > FOLD_MAX_L_ERROR * length:
        raise invalid(f"{n} segments on the {tech.grid_nm} nm grid make {um(seg * n)} µm, not "
                      f"{um(length)} µm: choose another count", segments=n, l_um=um(seg * n))
    if seg < max(f.min_w, f.head_len if n > 1 else 0):
        raise invalid(f"{n} segments of {um(seg)} µm: shorter than a segment may be",
                      segments=n, segment_um=um(seg))
    pt = Painter(session, cell)
    if n == 1:
        pins = _draw_bar(tech, pt, f, seg)
    else:
        pins = _draw_folded(tech, pt, f, seg, n)
        # heads on the left -> at the bottom, where the router takes terminals down
        rot = kdb.Trans(kdb.Trans.R90)
        cell.transform(rot)
        pins = [p.transformed(rot) for p in pins]
    total = seg * n
    marker = tech.has("poly_res")
    sheet = tech.layer_for("poly_res").sheet_resistance if marker else None  # type: ignore[union-attr]
    if sheet is None:
        sheet = tech.require("poly").sheet_resistance
    info: dict[str, Any] = {"w_um": um(w), "l_um": um(total), "squares": round(total / w, 4),
                            "segments": n, "segment_l_um": um(seg)}
    if sheet is not None:
        info["resistance_ohm"] = round(sheet * total / w, 4)
    return pins, info


def _draw_head(tech: Technology, pt: Painter, f: ResistorFrame, name: str, x0: int, y0: int) -> Pin:
    """A contact head with its poly at x0..x0+head_len, y0..y0+head_w; pin ``name``."""
    r = draw_rules(tech)
    pt.box("poly", kdb.Box(x0, y0, x0 + f.head_len, y0 + f.head_w))
    cx = x0 + tech.snap_down((f.head_len - r.cont) / 2)
    cts = []
    for k in range(f.n_ct):
        y = y0 + f.ct_off + k * (r.cont + r.cs)
        cts.append(pt.box("contact", kdb.Box(cx, y, cx + r.cont, y + r.cont)))
    pad = kdb.Box(cx - f.pad_mx, cts[0].bottom - f.pad_my, cx + r.cont + f.pad_mx, cts[-1].top + f.pad_my)
    pad = grow_to_area(grow_to_width(pad, r.m1w, tech), tech.area("metal1"), tech)
    pt.box("metal1", pad)
    if tech.has("poly_contact_marker"):
        pcm = kdb.Box(cts[0].left, cts[0].bottom, cts[-1].right, cts[-1].top)
        pcm = grow_to_width(pcm.enlarged(r.pcm_ct, r.pcm_ct), r.pcm_w, tech)
        pt.box("poly_contact_marker", grow_to_area(pcm, tech.area("poly_contact_marker"), tech))
    return pt.pin(name, "metal1", pad)


def _draw_bar(tech: Technology, pt: Painter, f: ResistorFrame, length: int) -> list[Pin]:
    """One bar along x (body x=0..length), heads at both ends (MINUS left, PLUS right)."""
    y0 = tech.snap_down((f.head_w - f.w) / 2)
    pt.box("poly", kdb.Box(-f.gap, y0, length + f.gap, y0 + f.w))
    pins = [_draw_head(tech, pt, f, "MINUS", -f.gap - f.head_len, 0),
            _draw_head(tech, pt, f, "PLUS", length + f.gap, 0)]
    if tech.has("poly_res"):
        pt.box("poly_res", kdb.Box(0, y0 - f.marker_enc, length, y0 + f.w + f.marker_enc))
    return pins


def _draw_folded(tech: Technology, pt: Painter, f: ResistorFrame, seg: int, n: int) -> list[Pin]:
    """``n`` (even) segments along x (bodies x=0..seg) stacked at ``pitch``, bends at
    alternate ends (right after segments 0, 2, …, left after 1, 3, …), heads on the left
    of the first (MINUS) and last (PLUS) segment, each widened away from the others."""
    ys = [k * f.pitch for k in range(n)]
    for y in ys:
        pt.box("poly", kdb.Box(0, y, seg, y + f.w))
    for k in range(n - 1):
        x0, x1 = (seg, seg + f.w) if k % 2 == 0 else (-f.w, 0)
        pt.box("poly", kdb.Box(x0, ys[k], x1, ys[k + 1] + f.w))
    pins = []
    for name, y, head_y in (("MINUS", ys[0], ys[0] + f.w - f.head_w), ("PLUS", ys[-1], ys[-1])):
        if f.gap > 0:
            pt.box("poly", kdb.Box(-f.gap, y, 0, y + f.w))
        pins.append(_draw_head(tech, pt, f, name, -f.gap - f.head_len, head_y))
    if tech.has("poly_res"):
        pt.box("poly_res", kdb.Box(0, -f.marker_enc, seg, ys[-1] + f.w + f.marker_enc))
    return pins


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
    if w * length < tech.area(rm, ctx):
        raise invalid(f"MIM area {um(w) * um(length):.4f} µm² below the minimum "
                      f"{tech.area(rm, ctx) * 1e-6:.4f} µm²", min_um2=tech.area(rm, ctx) * 1e-6)
    pt = Painter(session, cell)
    mim_box = pt.box(rm, kdb.Box(0, 0, length, w))
    e_bot = tech.enc(rb, rm, ctx)
    pt.box(rb, mim_box.enlarged(e_bot, e_bot))
    cut = tech.cut_size(rv)
    cs = max(tech.space(rv, None, ctx), tech.grid_nm)
    margin = max(tech.enc(rm, rv, ctx), tech.enc(rb, rv, ctx) - e_bot)
    margin = max(block_margins(tech, cut_rules(tech, rm, rv, ctx), cut, cut, margin, margin))
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
    tmx, tmy = block_margins(tech, cut_rules(tech, rt, rv, ctx), cuts.width(), cuts.height(), e_top, e_top)
    top_box = grow_to_width(cuts.enlarged(tmx, tmy), tech.width(rt, ctx), tech)
    top_box = pt.box(rt, grow_to_area(top_box, tech.area(rt, ctx), tech))
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
