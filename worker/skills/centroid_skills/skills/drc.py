"""``drc.run``: the rule types of the contract (docs/contracts.md §1), on one cell.

The cell is checked flat (all hierarchy levels merged per layer).  Semantics, in
database units (1 nm), with ``A`` = region of ``layer`` and ``B`` = region of ``layer2``
(both merged; derived layers evaluated with KLayout booleans):

* width      -- ``A.width_check(min)`` (Euclidian); with ``max``: any part of A wider
                than max (A scaled by 2 and shrunk by max leaves something).
* spacing    -- no layer2: ``A.space_check(min)`` (between shapes and notches);
                with layer2: ``A.separation_check(B, min)``: only pairs of shapes
                that do not overlap are measured (touching counts as distance 0).
                ``width_over``: W = the parts of A wider than width_over (A opened by
                width_over/2); the pairs of ``A.space_check(min)`` with one edge on the
                boundary of W.
* enclosure  -- A is the outer shape: every B shape touching A
                (``B.interacting(A)``) must lie inside A (``B - A`` is a violation)
                with margin >= min (``A.enclosing_check(B', min)``).
                ``end_min``/``end_width``: line ends of A are the edges shorter than
                end_width whose both corners are convex (``A.edges(Convex)``); a B shape
                overlapping the strip ``end_min`` deep inside a line end violates.
                ``adjacent_min``/``adjacent_below``: the B edges enclosed by less than
                adjacent_below (projection metrics) are thin sides; the edges of the
                same shape adjacent to a thin side must be enclosed by adjacent_min (a B
                shape not inside A violates).  Both count and mark the B shapes.
* extension  -- where A crosses B: the edges of ``A & B`` that lie on B's boundary
                (including edges where A ends flush with B) are extruded outwards by
                min; whatever of that is not covered by A is a violation (so a flush
                end is a zero-length extension).
* overlap    -- where A and B interact: ``A & B`` must be at least min wide; shapes of
                A that only touch B, and of B that only touch A (zero overlap), are
                violations when min > 0.
* density    -- area(A inside the cell bbox) / area(cell bbox) in [min, max].
* area       -- every merged shape of A has an area >= min (m² -> nm²).

``count`` per rule is the number of separate violation sites (marker shapes that
touch or overlap are one site); ``markers`` are their bounding boxes in µm.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import klayout.db as kdb
import klayout.rdb as krdb

from centroid_skills.errors import DRC_VIOLATION, INVALID_PARAM, SkillError
from centroid_skills.registry import FILE_PATH, NAME, obj, skill
from centroid_skills.session import Session, box_um
from centroid_skills.tech import DBU_UM, RULE_LENGTH_FIELDS, Rule, Technology, opened


@dataclass
class RuleResult:
    rule: Rule
    count: int = 0
    markers: list[kdb.Box] = field(default_factory=list)
    edge_pairs: kdb.EdgePairs = field(default_factory=kdb.EdgePairs)
    polygons: kdb.Region = field(default_factory=kdb.Region)
    value: float | None = None  # density: the measured fraction

    def to_dict(self, max_markers: int) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.rule.id, "type": self.rule.type, "layer": self.rule.layer,
            "layer2": self.rule.layer2, "min": self.rule.min, "max": self.rule.max,
            "count": self.count,
            "markers_um": [box_um(b) for b in self.markers[:max_markers]],
        }
        for key in RULE_LENGTH_FIELDS:  # the 1.2.0 fields the rule carries
            if getattr(self.rule, key) is not None:
                out[key] = getattr(self.rule, key)
        if self.rule.description:
            out["description"] = self.rule.description
        if self.value is not None:
            out["value"] = round(self.value, 6)
        return out


def check_rule(tech: Technology, layout: kdb.Layout, cell: kdb.Cell, rule: Rule,
               cache: dict[str, kdb.Region]) -> RuleResult:
    res = RuleResult(rule)
    a = tech.region(layout, cell, rule.layer, cache)
    b = tech.region(layout, cell, rule.layer2, cache) if rule.layer2 else None
    lo = tech.nm(rule.min) if rule.min is not None and rule.type not in ("density", "area") else 0
    eps = kdb.EdgePairs()
    polys = kdb.Region()
    if rule.type == "width":
        if lo > 0:
            eps += a.width_check(lo)
        if rule.max is not None:
            hi = tech.nm(rule.max)
            doubled = a.transformed(kdb.ICplxTrans(2.0))
            too_wide = doubled.sized(-hi)
            if not too_wide.is_empty():
                polys += a.interacting(too_wide.transformed(kdb.ICplxTrans(0.5)))
    elif rule.type == "spacing":
        if lo > 0 and rule.width_over is not None:
            eps += wide_space_pairs(a, lo, tech.nm(rule.width_over))
        elif lo > 0:
            if b is None or rule.layer2 == rule.layer:
                eps += a.space_check(lo)
            else:
                eps += a.separation_check(b, lo)
    elif rule.type == "enclosure":
        assert b is not None
        # the shapes of layer2 touching layer: the same for every enclosure rule of
        # the pair (a minimum, a line end, adjacent sides)
        key = f"\0{rule.layer2}\0interacting\0{rule.layer}"
        inner = cache.get(key)
        if inner is None:
            inner = cache[key] = b.interacting(a)
        if rule.min is not None:
            polys += inner - a
            if lo > 0 and not inner.is_empty():
                eps += a.enclosing_check(inner, lo)
        if rule.end_min is not None and rule.end_width is not None and not inner.is_empty():
            polys += line_end_violations(a, inner, tech.nm(rule.end_min), tech.nm(rule.end_width))
        if (rule.adjacent_min is not None and rule.adjacent_below is not None
                and not inner.is_empty()):
            polys += adjacent_violations(a, inner, tech.nm(rule.adjacent_min),
                                         tech.nm(rule.adjacent_below))
    elif rule.type == "extension":
        assert b is not None
        if lo > 0:
            crossing_edges = (a & b).edges() & b.edges()
            missing = crossing_edges.extended_out(lo) - a
            missing.merge()
            polys += missing
    elif rule.type == "overlap":
        assert b is not None
        if lo > 0:
            inter = a & b
            eps += inter.width_check(lo)
            # shapes (of either layer) that touch the other layer without overlapping it
            polys += a.interacting(b).not_overlapping(b)
            polys += b.interacting(a).not_overlapping(a)
    elif rule.type == "area":
        need = int(round((rule.min or 0) * 1e18))
        if need > 0:
            polys += a.with_area(None, need, False)
    elif rule.type == "density":
        bbox = cell.bbox()
        if not bbox.empty() and bbox.area() > 0:
            covered = (a & kdb.Region(bbox)).area()
            frac = covered / bbox.area()
            res.value = frac
            too_low = rule.min is not None and frac < rule.min - 1e-12
            too_high = rule.max is not None and frac > rule.max + 1e-12
            if too_low or too_high:
                polys.insert(bbox)
    res.edge_pairs = eps
    res.polygons = polys
    sites = kdb.Region()
    for ep in eps.each():
        sites.insert(ep.bbox().enlarged(1, 1))
    for poly in polys.each():
        sites.insert(poly.bbox())
    sites.merge()
    res.count = sites.count()
    res.markers = [p.bbox() for p in sites.each()]
    res.markers.sort(key=lambda bx: (bx.left, bx.bottom))
    return res


def wide_space_pairs(a: kdb.Region, lo: int, width_over: int) -> kdb.EdgePairs:
    """Spacing pairs of ``a`` closer than ``lo`` where one edge lies on a part of ``a``
    wider than ``width_over``."""
    out = kdb.EdgePairs()
    wide = opened(a, width_over)
    if wide.is_empty():
        return out
    boundary = a.edges() & wide.edges()
    for ep in a.space_check(lo).each():
        if not (kdb.Edges([ep.first]) & boundary).is_empty() or \
                not (kdb.Edges([ep.second]) & boundary).is_empty():
            out.insert(ep)
    return out


def line_end_violations(a: kdb.Region, inner: kdb.Region, end_min: int, end_width: int) -> kdb.Region:
    """Shapes of ``inner`` closer than ``end_min`` to a line end of ``a`` (an edge shorter
    than ``end_width`` whose two corners are convex) within the projection of that end."""
    ends = a.edges(kdb.Region.Convex).with_length(None, end_width, False)
    if ends.is_empty() or end_min <= 0:
        return kdb.Region()
    return inner.overlapping(ends.extended_in(end_min))


def _thin_edges(a: kdb.Region, inner: kdb.Region, below: int) -> kdb.Edges:
    """Edges of ``inner`` (shapes inside ``a``) enclosed by ``a`` by less than ``below``
    (projection metrics; an edge on ``a``'s boundary is enclosed by 0)."""
    return a.enclosing_check(inner, below, True, kdb.Region.Projection).second_edges()


def adjacent_violations(a: kdb.Region, inner: kdb.Region, adjacent_min: int, below: int) -> kdb.Region:
    """Shapes of ``inner`` with a side enclosed by less than ``below`` whose adjacent side is
    enclosed by less than ``adjacent_min``; a shape not inside ``a`` has such sides."""
    outside = inner - a
    sticking = inner.interacting(outside) if not outside.is_empty() else kdb.Region()
    inside = inner.not_interacting(outside) if not outside.is_empty() else inner
    thin = _thin_edges(a, inside, below)
    if thin.is_empty():
        return sticking
    edges = inside.edges()
    horizontal, vertical = edges.with_angle(0, False), edges.with_angle(0, True)
    # the sides next to a thin side: the edges of the other orientation touching it
    adjacent = vertical.interacting(thin.with_angle(0, False)) + \
        horizontal.interacting(thin.with_angle(0, True))
    # the same check again only when it asks for another distance (IHP's M1.c1 asks
    # for one: the check is the rule's largest cost)
    if adjacent_min == below:
        short = thin
    else:
        short = _thin_edges(a, inside, adjacent_min) if adjacent_min > 0 else kdb.Edges()
    failing = adjacent & short
    return sticking + (inside.interacting(failing) if not failing.is_empty() else kdb.Region())


def run_checks(tech: Technology, layout: kdb.Layout, cell: kdb.Cell,
               rule_ids: list[str] | None = None, types: list[str] | None = None) -> list[RuleResult]:
    cache: dict[str, kdb.Region] = {}
    selected = tech.rules
    if rule_ids:
        known = {r.id for r in tech.rules}
        unknown = [r for r in rule_ids if r not in known]
        if unknown:
            raise SkillError(INVALID_PARAM, f"unknown rule ids: {', '.join(unknown)}",
                             {"unknown": unknown})
        selected = [r for r in selected if r.id in rule_ids]
    if types:
        selected = [r for r in selected if r.type in types]
    return [check_rule(tech, layout, cell, rule, cache) for rule in selected]


def write_lyrdb(results: list[RuleResult], cell: kdb.Cell, tech: Technology, path: str) -> None:
    rdb = krdb.ReportDatabase(f"centroid DRC {tech.name}")
    rdb.top_cell_name = cell.name
    rdb.generator = "centroid_skills drc.run"
    rcell = rdb.create_cell(cell.name)
    to_um = kdb.CplxTrans(DBU_UM)
    for res in results:
        cat = rdb.create_category(res.rule.id)
        cat.description = res.rule.description or (
            f"{res.rule.type} {res.rule.layer}" + (f"/{res.rule.layer2}" if res.rule.layer2 else "")
            + f" min={res.rule.min} max={res.rule.max}")
        for ep in res.edge_pairs.each():
            item = rdb.create_item(rcell.rdb_id(), cat.rdb_id())
            item.add_value(to_um * ep)
        for poly in res.polygons.each():
            item = rdb.create_item(rcell.rdb_id(), cat.rdb_id())
            item.add_value(to_um * poly)
            if res.value is not None:
                item.add_value(f"density={res.value:.6f}")
    rdb.save(path)


DRC_SCHEMA = obj(
    {
        "cell": {**NAME, "description": "cell (or device id) to check; checked flat"},
        "report_path": {**FILE_PATH, "description": "where to write the .lyrdb (default: a temp dir)"},
        "rules": {"type": "array", "items": {"type": "string"}, "description": "only these rule ids"},
        "types": {"type": "array", "items": {"enum": ["width", "spacing", "enclosure", "extension",
                                                      "overlap", "density", "area"]}},
        "max_markers": {"type": "integer", "minimum": 0, "default": 50},
        "fail_on_violation": {"type": "boolean", "default": False,
                              "description": "return DRC_VIOLATION instead of ok with violations"},
    },
    ["cell"],
)


@skill("drc.run",
       "Check a cell (flattened) against every rule of the loaded rule set with the contract "
       "semantics; violations per rule with marker boxes (µm); writes a KLayout .lyrdb.",
       DRC_SCHEMA)
def drc_run(session: Session, args: dict[str, Any]) -> dict[str, Any]:
    tech = session.need_tech()
    cell = session.any_cell(args["cell"])
    results = run_checks(tech, session.layout, cell, args.get("rules"), args.get("types"))
    path = args.get("report_path")
    if not path:
        path = os.path.join(session.temporary_dir("centroid_drc_"), f"{cell.name}.lyrdb")
    else:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    write_lyrdb(results, cell, tech, path)
    max_markers = int(args.get("max_markers", 50))
    violations = [r.to_dict(max_markers) for r in results if r.count > 0]
    total = sum(r.count for r in results)
    data = {
        "cell": cell.name,
        "clean": total == 0,
        "total": total,
        "rules_checked": len(results),
        "violations": violations,
        "report_path": path,
    }
    if total and args.get("fail_on_violation"):
        raise SkillError(DRC_VIOLATION, f"{total} DRC violations in {cell.name}", data)
    return data
