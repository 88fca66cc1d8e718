"""Supply rails: a straight tap strip (substrate tap or well tap) under a metal-1 rail.

The tap diffusion (role ``tap`` when the rule set separates it, else ``active``) is a
band with one row of contacts along its centre line; the metal-1 rail over it is at
least twice the metal-1 width and holds a via-1 with its enclosure (where a trunk
lands), wider when its net is given a current (:mod:`.net_currents`); the tap implant (pplus for a substrate tap, nplus for a well tap, when the
rule set has that layer) covers the band.  A well tap's nwell is drawn by the router
over the whole row.  Every dimension is a rule lookup.
"""

from __future__ import annotations

from dataclasses import dataclass

import klayout.db as kdb

from centroid_skills.cuts import along_margin, cut_rules
from centroid_skills.draw import contact_column, grow_to_area
from centroid_skills.routing.dims import Dims
from centroid_skills.rules import cover, draw_rules
from centroid_skills.tech import Technology


@dataclass
class Rail:
    kind: str  # substrate | well
    band: kdb.Box  # tap diffusion
    metal: kdb.Box  # metal-1 rail
    nwell_enc: int  # nwell enclosure of the band (well taps)


def tap_role(tech: Technology) -> str:
    return "tap" if tech.has("tap") else "active"


def rail_half_height(tech: Technology, d: Dims, net: str | None = None) -> int:
    """Half height of the metal-1 rail (centred on the band) of ``net``: at least the half
    width its current needs (:mod:`.net_currents`)."""
    r = draw_rules(tech)
    band = band_width(tech)
    return tech.snap_up(max(r.m1w, band / 2, (r.cont + 2 * r.m1_ct + 1) / 2, d.hp1,
                            d.half_for(net, "metal1")))


def band_width(tech: Technology) -> int:
    r = draw_rules(tech)
    rw = tech.snap_up(max(r.tap_w, r.cont + 2 * r.tap_ct, r.g))
    while True:
        c_off = tech.snap_down((rw - r.cont) / 2)
        if c_off >= r.tap_ct and rw - c_off - r.cont >= r.tap_ct:
            return rw
        rw += r.g


def draw_rail(tech: Technology, layout: kdb.Layout, cell: kdb.Cell, kind: str, x0: int, x1: int,
              yc: int, d: Dims, net: str | None = None) -> Rail:
    """Draw a rail of ``net`` centred on ``yc`` with its tap band from ``x0`` to ``x1`` into
    ``cell``."""
    r = draw_rules(tech)
    tap = tap_role(tech)
    rw = band_width(tech)
    c_off = tech.snap_down((rw - r.cont) / 2)
    y0 = yc - tech.snap_down(rw / 2)
    band = kdb.Box(x0, y0, x1, y0 + rw)
    cell.shapes(tech.role_index(layout, tap)).insert(band)
    hm = rail_half_height(tech, d, net)
    metal = kdb.Box(x0, yc - hm, x1, yc + hm)
    cell.shapes(tech.role_index(layout, "metal1")).insert(metal)
    # the end contacts keep the along margin of the band and of the rail (line ends,
    # adjacent sides)
    c_top = y0 + c_off + r.cont
    tap_along = along_margin(cut_rules(tech, tap, "contact"), min(c_off, rw - c_off - r.cont), rw)
    m_side = min(y0 + c_off - metal.bottom, metal.top - c_top)
    m_along = along_margin(cut_rules(tech, "metal1", "contact"), m_side, metal.height())
    margin = max(r.tap_ct, r.m1_ct, tap_along, m_along)
    n, off = contact_column(tech, r, x1 - x0, margin)
    li = tech.role_index(layout, "contact")
    for k in range(n):
        x = x0 + off + k * (r.cont + r.cs)
        cell.shapes(li).insert(kdb.Box(x, y0 + c_off, x + r.cont, y0 + c_off + r.cont))
    imp = "pplus" if kind == "substrate" else "nplus"
    if tech.has(imp):
        e = cover(tech, imp, tap)
        box = band.enlarged(e, e)
        wmin = tech.width(imp)
        if box.height() < wmin:
            grow = tech.snap_up((wmin - box.height()) / 2)
            box = box.enlarged(0, grow)
        cell.shapes(tech.role_index(layout, imp)).insert(grow_to_area(box, tech.area(imp), tech))
    nwell_enc = 0
    if kind == "well":
        nwell_enc = tech.enc("nwell", tap)
        cell.shapes(tech.role_index(layout, "nwell")).insert(band.enlarged(nwell_enc, nwell_enc))
    return Rail(kind, band, metal, nwell_enc)
