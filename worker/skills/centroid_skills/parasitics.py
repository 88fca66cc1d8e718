"""Interconnect parasitics of an extracted layout, from the rule set's ``parasitics``
section (1.4.0) and KLayout region operations. Every coefficient comes from the rule set.

Per net and routing layer (poly without the gates -- gate and junction capacitances
belong to the device models --, then metal1…N by role), with the layer's shapes of that
net merged into polygons; the capacitance to substrate and the resistance leave out what
lies over the net's own source/drain or tap diffusion (the field ends on the same net
there, and the current runs down the contacts, not along a drain strip):

* **to substrate**: ``area_cap_af_um2`` × the area not over a lower conductor that has
  an overlap coefficient with it (over such a conductor the field ends there instead), +
  ``fringe_cap_af_um`` × the perimeter;
* **overlap**: for every ``overlaps`` entry (upper, lower), ``area_cap_af_um2`` × the
  area where a net's upper shapes cover another net's lower shapes;
* **lateral**: facing edges of two nets on one layer, found with a shielded projection
  separation check within the halo (a wire in between shields), each pair of facing
  edges ``coupling_af_um · (s0 + offset)/(s + offset)`` per µm of facing length at its
  distance ``s`` (``s0`` = ``coupling_spacing_m``; magic's sidewall model);
* **resistance**: each merged polygon as a rectangle of the same area and perimeter
  (length × width, so a straight wire is exact), ``sheet_resistance_ohm`` × length/width,
  polygons in series; each via/contact layer ``resistance_ohm`` / cuts of the net in
  parallel. A lumped resistance, in series between the net's driver side and its loads
  (``extract.netlist`` says where).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import klayout.db as kdb

DBU_UM = 0.001
AF_PER_FF = 1000.0
# magic's fringe distribution constant (RTimothyEdwards/magic extract/ExtTech.c
# ``FRINGE_MULT``: α = 0.02 × the area capacitance in aF/µm², per µm): a constant of the
# extractor's model, not a process number
FRINGE_MULT = 0.02


@dataclass
class LayerCoefficients:
    name: str
    role: str
    sheet_ohm: float
    area_af_um2: float
    fringe_af_um: float
    coupling_af_um: float | None
    coupling_spacing_um: float | None
    coupling_offset_um: float
    halo_um: float | None
    fringe_shield_um: float | None = None

    def coupling_at(self, spacing_um: float) -> float:
        """aF per µm of facing length at ``spacing_um``."""
        if not self.coupling_af_um or not self.coupling_spacing_um:
            return 0.0
        s0, off = self.coupling_spacing_um, self.coupling_offset_um
        return self.coupling_af_um * (s0 + off) / max(spacing_um + off, 1e-6)


@dataclass
class NetParasitics:
    cap_af: float = 0.0
    coupling_af: dict[str, float] = field(default_factory=dict)
    resistance_ohm: float = 0.0
    wire_length_um: float = 0.0
    by_layer_af: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"cap_fF": round(self.cap_af / AF_PER_FF, 6),
                "coupling_fF": {k: round(v / AF_PER_FF, 6) for k, v in sorted(self.coupling_af.items())},
                "resistance_ohm": round(self.resistance_ohm, 6),
                "wire_length_um": round(self.wire_length_um, 4),
                "cap_by_layer_fF": {k: round(v / AF_PER_FF, 6) for k, v in sorted(self.by_layer_af.items())}}


def coefficients(section: dict[str, Any], layer_name: str, role: str) -> LayerCoefficients | None:
    spec = (section.get("layers") or {}).get(layer_name)
    if spec is None:
        return None
    spacing = spec.get("coupling_spacing_m")
    halo = spec.get("coupling_halo_m")
    shield = (section.get("fringe_shield") or {}).get("halo_m")
    return LayerCoefficients(
        layer_name, role, float(spec["sheet_resistance_ohm"]), float(spec["area_cap_af_um2"]),
        float(spec["fringe_cap_af_um"]), spec.get("coupling_af_um"),
        spacing * 1e6 if spacing else None, float(spec.get("coupling_offset_m") or 0.0) * 1e6,
        halo * 1e6 if halo else (8.0 * spacing * 1e6 if spacing else None),
        float(shield) * 1e6 if shield else None)


def polygon_squares(polygon: kdb.Polygon) -> tuple[float, float]:
    """(length µm, squares) of the rectangle with this polygon's area and perimeter."""
    area = polygon.area() * DBU_UM * DBU_UM
    half = polygon.perimeter() * DBU_UM / 2.0
    if area <= 0:
        return 0.0, 0.0
    disc = max(half * half / 4.0 - area, 0.0)
    length = half / 2.0 + math.sqrt(disc)
    width = area / length
    return length, length / width


def wire_resistance(region: kdb.Region, sheet_ohm: float) -> tuple[float, float]:
    """(ohm, length µm) of a net's shapes on one layer, polygons in series."""
    ohm = length = 0.0
    for polygon in region.each_merged():
        seg, squares = polygon_squares(polygon)
        ohm += sheet_ohm * squares
        length += seg
    return ohm, length


def fringe_fraction(co: LayerCoefficients, distance_um: float) -> float:
    """The share of an edge's fringe capacitance to substrate left when another shape of
    the layer stands ``distance_um`` in front of it (within the rule set's
    ``fringe_shield`` halo): magic's model (``extRemoveSubcap``), the field reaching the
    substrate within a lateral distance d is (2/π)·atan(α·d), α = ``FRINGE_MULT`` × the
    layer's area capacitance in aF/µm² (per µm). Without a halo, or past it: 1."""
    alpha = FRINGE_MULT * co.area_af_um2
    if alpha <= 0 or not co.fringe_shield_um or distance_um > co.fringe_shield_um:
        return 1.0
    return min(1.0, 2.0 / math.pi * math.atan(alpha * max(distance_um, 0.0)))


def fringe_af(region: kdb.Region, edges: kdb.Edges, obstacles: kdb.Region, co: LayerCoefficients) -> float:
    """Fringe capacitance to substrate of ``edges`` (the real edges of ``region``: not those
    over the net's own diffusion), each part shielded by the nearest shape of
    ``obstacles`` in front of it (within the ``fringe_shield`` halo: a shielded projection
    check, nearest first), by ``fringe_fraction``; an edge without one keeps the whole
    coefficient."""
    length_um = edges.length() * DBU_UM
    if obstacles.is_empty() or not co.fringe_shield_um or co.fringe_af_um <= 0:
        return co.fringe_af_um * length_um
    halo = max(1, int(round(co.fringe_shield_um / DBU_UM)))
    pairs = region.separation_check(obstacles, halo, False, kdb.Region.Projection, None, None, None, True)
    by_distance: dict[int, kdb.Edges] = {}
    for ep in pairs.each():
        by_distance.setdefault(ep.distance(), kdb.Edges()).insert(ep.first)
    covered = kdb.Edges()
    shielded_um = af = 0.0
    for distance in sorted(by_distance):
        part = (by_distance[distance] & edges) - covered
        part.merge()
        part_um = part.length() * DBU_UM
        shielded_um += part_um
        af += co.fringe_af_um * part_um * fringe_fraction(co, distance * DBU_UM)
        covered += part
    return af + co.fringe_af_um * max(length_um - shielded_um, 0.0)


def ground_cap_af(area: kdb.Region, shield: kdb.Region | None, co: LayerCoefficients,
                  fringe: float) -> float:
    """Area capacitance of ``area`` not over ``shield`` (a lower conductor the overlap
    coefficients charge instead) + the fringe (``fringe_af``)."""
    exposed = area - shield if shield is not None and not shield.is_empty() else area
    return co.area_af_um2 * exposed.area() * DBU_UM * DBU_UM + fringe


def lateral_couplings(nets: dict[str, kdb.Region], co: LayerCoefficients) -> dict[tuple[str, str], float]:
    """aF between every two nets on one layer (facing edges, shielded, within the halo)."""
    if not co.coupling_af_um or not co.halo_um or len(nets) < 2:
        return {}
    halo = max(1, int(round(co.halo_um / DBU_UM)))
    names = sorted(nets)
    boxes = {n: nets[n].bbox() for n in names}
    out: dict[tuple[str, str], float] = {}
    for a in names:
        near = [b for b in names if b != a and boxes[a].enlarged(halo, halo).overlaps(boxes[b])]
        if not near:
            continue
        others = kdb.Region()
        for b in near:
            others += nets[b]
        pairs = nets[a].separation_check(others, halo, False, kdb.Region.Projection, None, None, None, True)
        for ep in pairs.each():
            probe = kdb.Region(kdb.Box(ep.second.p1, ep.second.p2).enlarged(1, 1))
            owner = next((b for b in near if boxes[b].overlaps(probe.bbox())
                          and not nets[b].interacting(probe).is_empty()), None)
            if owner is None:
                continue
            length = min(ep.first.length(), ep.second.length()) * DBU_UM
            af = co.coupling_at(ep.distance() * DBU_UM) * length
            key = (a, owner) if a < owner else (owner, a)
            out[key] = out.get(key, 0.0) + af / 2.0  # each pair is found from both sides
    return out


def overlap_couplings(upper: dict[str, kdb.Region], lower: dict[str, kdb.Region],
                      af_um2: float) -> dict[tuple[str, str], float]:
    out: dict[tuple[str, str], float] = {}
    lower_boxes = {n: r.bbox() for n, r in lower.items()}
    for a, ra in upper.items():
        box = ra.bbox()
        for b, rb in lower.items():
            if a == b or not box.overlaps(lower_boxes[b]):
                continue
            area = (ra & rb).area() * DBU_UM * DBU_UM
            if area > 0:
                key = (a, b) if a < b else (b, a)
                out[key] = out.get(key, 0.0) + af_um2 * area
    return out
