"""How close two cells may be placed side by side, from the rules only.

For every layer and derived layer named by a rule, a cell's *extent* is the bbox of
that layer's region.  Placing cell X to the left of cell Y with a gap ``g`` between
their bboxes, the distance between layer A of X and layer B of Y is at least
``g + margin_X(A) + margin_Y(B)`` (margins measured inwards from the facing bbox
edges).  The gap is the smallest one that keeps every pair apart by

* the ``min`` of every spacing rule (A, B) -- both ways round; a wide-metal spacing
  (``width_over``) between the *wide part* of A (its own extent, key ``A>width``) and A,
* the ``min`` of every spacing rule (A, B) -- both ways round,
* one grid step for every enclosure/extension/overlap pair (shapes of different cells
  must not touch, or they would start to interact),

except for *mergeable* layers (wells, implants, markers: no net of their own): two
shapes of the same mergeable layer may instead touch or overlap and merge.  When
they would end up closer than their spacing but not touching, the gap between them
is bridged with a box of that layer (``bridges``), which is how continuous wells
and implants are drawn.  The check is conservative (it treats all facing extents as
overlapping along the other axis).
"""

from __future__ import annotations

from dataclasses import dataclass

import klayout.db as kdb

from centroid_skills.tech import Technology, opened

MERGEABLE_ROLES = frozenset({"nwell", "pwell", "nplus", "pplus", "poly_contact_marker"})


@dataclass
class Extents:
    bbox: kdb.Box
    boxes: dict[str, kdb.Box]  # layer/derived name -> bbox of its region (cell coordinates)
    rects: frozenset[str] = frozenset()  # layers whose region is exactly one box

    def moved(self, trans: kdb.Trans) -> Extents:
        return Extents(self.bbox.transformed(trans),
                       {k: v.transformed(trans) for k, v in self.boxes.items()}, self.rects)


def rule_layer_names(tech: Technology) -> set[str]:
    names: set[str] = set()
    for r in tech.rules:
        if r.type in ("density", "area"):
            continue
        names.add(r.layer)
        if r.layer2:
            names.add(r.layer2)
    for ldef in tech.layers.values():
        if ldef.role:
            names.add(ldef.name)
    return names


def wide_key(name: str, width_over: int) -> str:
    """Extent key of the parts of layer ``name`` wider than ``width_over`` nm."""
    return f"{name}>{width_over}"


def wide_rules(tech: Technology) -> list[tuple[str, int, int]]:
    """(layer name, width_over, min) of every wide-metal spacing rule, in nm."""
    out = set()
    for r in tech.rules:
        if r.type == "spacing" and r.width_over is not None and r.min is not None and r.layer2 is None:
            out.add((r.layer, tech.nm(r.width_over), tech.snap_up(tech.nm(r.min))))
    return sorted(out)


def extents(tech: Technology, layout: kdb.Layout, cell: kdb.Cell,
            cache: dict[int, Extents] | None = None) -> Extents:
    if cache is not None and cell.cell_index() in cache:
        return cache[cell.cell_index()]
    regions: dict[str, kdb.Region] = {}
    boxes: dict[str, kdb.Box] = {}
    rects: set[str] = set()
    for name in rule_layer_names(tech):
        reg = tech.region(layout, cell, name, regions)
        if not reg.is_empty():
            boxes[name] = reg.bbox()
            if reg.count() == 1 and reg.area() == reg.bbox().area():
                rects.add(name)
    for name, over, _lo in wide_rules(tech):
        reg = tech.region(layout, cell, name, regions)
        if not reg.is_empty():
            wide = opened(reg, over)
            if not wide.is_empty():
                boxes[wide_key(name, over)] = wide.bbox()
    ex = Extents(cell.bbox(), boxes, frozenset(rects))
    if cache is not None:
        cache[cell.cell_index()] = ex
    return ex


def mergeable(tech: Technology, name: str) -> bool:
    ldef = tech.layers.get(name)
    return ldef is not None and ldef.role in MERGEABLE_ROLES


@dataclass(frozen=True)
class PairRule:
    a: str
    b: str
    dist: int
    merge_ok: bool  # same mergeable layer: touching/overlapping is fine
    # enclosure by a mergeable outer layer: no constraint when the cell holding the inner
    # shape has that outer layer itself (the outer shapes merge, e.g. wells of two pmos)
    skip_if_inner_cell_has: str | None = None


def pair_rules(tech: Technology) -> list[PairRule]:
    out: list[PairRule] = []
    for r in tech.rules:
        if r.type in ("density", "area"):
            continue
        if r.type == "spacing" and r.width_over is not None:
            if r.layer2 is None and r.min is not None:
                key = wide_key(r.layer, tech.nm(r.width_over))
                dist = tech.snap_up(tech.nm(r.min))
                out.append(PairRule(key, r.layer, dist, False))
                out.append(PairRule(r.layer, key, dist, False))
            continue
        if r.type == "spacing":
            b = r.layer2 or r.layer
            dist = tech.nm(r.min or 0)
            same = b == r.layer
            out.append(PairRule(r.layer, b, dist, same and mergeable(tech, r.layer)))
            if not same:
                out.append(PairRule(b, r.layer, dist, False))
        else:
            b = r.layer2 or r.layer
            if b == r.layer and mergeable(tech, b):
                continue
            skip = r.layer if r.type == "enclosure" and mergeable(tech, r.layer) else None
            out.append(PairRule(r.layer, b, tech.grid_nm, False, skip))
            out.append(PairRule(b, r.layer, tech.grid_nm, False, skip))
    return out


def _margins(x: Extents, y: Extents, name_x: str, name_y: str, axis: str) -> tuple[int, int] | None:
    bx = x.boxes.get(name_x)
    by = y.boxes.get(name_y)
    if bx is None or by is None:
        return None
    if axis == "x":
        return x.bbox.right - bx.right, by.left - y.bbox.left
    return x.bbox.top - bx.top, by.bottom - y.bbox.bottom


def required_gap(tech: Technology, x: Extents, y: Extents, axis: str = "x",
                 minimum: int = 0, bridge: bool = True,
                 filled: frozenset[str] = frozenset()) -> int:
    """Smallest on-grid gap between the bboxes of X (left/below) and Y (right/above).

    ``bridge``: same mergeable layers (plain rectangles only) that end up closer than
    their spacing will be bridged, or may touch/overlap and merge (X and Y must then be
    in common coordinates along the other axis); otherwise they are kept a full spacing
    apart.  ``filled``: mergeable layers the caller fills over both cells.
    """
    gap = minimum
    rules = pair_rules(tech)
    for pr in rules:
        if pr.merge_ok:
            continue
        if pr.skip_if_inner_cell_has is not None:
            outer = pr.skip_if_inner_cell_has
            inner_name = pr.b if pr.a == outer else pr.a
            inner_cell = y if pr.a == outer else x
            if outer in filled or _inside(inner_cell, inner_name, outer):
                continue
        m = _margins(x, y, pr.a, pr.b, axis)
        if m is not None:
            gap = max(gap, pr.dist - m[0] - m[1])
    gap = tech.snap_up(gap)
    # same mergeable layers: touching is fine, close but apart needs a bridge;
    # when no bridge can be drawn keep the full spacing
    for pr in rules:
        if not pr.merge_ok or pr.a in filled:
            continue
        m = _margins(x, y, pr.a, pr.a, axis)
        if m is None:
            continue
        dist = gap + m[0] + m[1]
        both_rects = pr.a in x.rects and pr.a in y.rects
        if dist <= 0 and not (bridge and both_rects and _common_length(x, y, pr.a, axis) >= tech.width(
                tech.layers[pr.a].role or "")):
            # extents touch or overlap, but the shapes may not: keep them a spacing apart
            gap = tech.snap_up(pr.dist - m[0] - m[1])
        elif 0 < dist < pr.dist and (
                not bridge
                or _common_length(x, y, pr.a, axis) < tech.width(tech.layers[pr.a].role or "")
                or not _bridgeable(tech, x, y, pr.a, axis)):
            gap = tech.snap_up(pr.dist - m[0] - m[1])
    return gap


def _inside(ex: Extents, inner: str, outer: str) -> bool:
    """Whether the extent of ``inner`` lies inside the extent of ``outer`` in one cell."""
    bi, bo = ex.boxes.get(inner), ex.boxes.get(outer)
    return bi is not None and bo is not None and bo.contains(bi.p1) and bo.contains(bi.p2)


def _related(tech: Technology, name: str) -> set[str]:
    """Layers that some rule relates to ``name`` (other than ``name`` itself)."""
    out: set[str] = set()
    for pr in pair_rules(tech):
        if pr.a == name and pr.b != name:
            out.add(pr.b)
        elif pr.b == name and pr.a != name:
            out.add(pr.a)
    return out


def _bridgeable(tech: Technology, x: Extents, y: Extents, name: str, axis: str) -> bool:
    """A bridge of ``name`` between X and Y may only cross empty ground: no layer that a
    rule relates to ``name`` may lie between ``name``'s extent and the facing bbox edge."""
    if name not in x.rects or name not in y.rects:
        return False  # only plain rectangles are bridged (the bridge meets them everywhere)
    related = _related(tech, name)
    bx, by = x.boxes[name], y.boxes[name]
    for other in related:
        ox, oy = x.boxes.get(other), y.boxes.get(other)
        if axis == "x":
            if ox is not None and ox.right > bx.right:
                return False
            if oy is not None and oy.left < by.left:
                return False
        else:
            if ox is not None and ox.top > bx.top:
                return False
            if oy is not None and oy.bottom < by.bottom:
                return False
    return True


def _common_length(x: Extents, y: Extents, name: str, axis: str) -> int:
    bx, by = x.boxes[name], y.boxes[name]
    if axis == "x":
        return min(bx.top, by.top) - max(bx.bottom, by.bottom)
    return min(bx.right, by.right) - max(bx.left, by.left)


def bridges(tech: Technology, x: Extents, y: Extents, axis: str = "x") -> list[tuple[str, kdb.Box]]:
    """Boxes (parent coordinates; X and Y already moved) joining same mergeable layers that
    ended up closer than their spacing without touching."""
    out: list[tuple[str, kdb.Box]] = []
    for pr in pair_rules(tech):
        if not pr.merge_ok:
            continue
        bx, by = x.boxes.get(pr.a), y.boxes.get(pr.a)
        if bx is None or by is None:
            continue
        if not _bridgeable(tech, x, y, pr.a, axis):
            continue
        if axis == "x":
            dist = by.left - bx.right
            lo, hi = max(bx.bottom, by.bottom), min(bx.top, by.top)
            if 0 < dist < pr.dist and hi > lo:
                out.append((pr.a, kdb.Box(bx.right, lo, by.left, hi)))
        else:
            dist = by.bottom - bx.top
            lo, hi = max(bx.left, by.left), min(bx.right, by.right)
            if 0 < dist < pr.dist and hi > lo:
                out.append((pr.a, kdb.Box(lo, bx.top, hi, by.bottom)))
    return out


def draw_bridges(tech: Technology, layout: kdb.Layout, cell: kdb.Cell,
                 items: list[tuple[str, kdb.Box]]) -> None:
    for name, box in items:
        cell.shapes(tech.layer_index(layout, name)).insert(box)


def close_mergeable(tech: Technology, layout: kdb.Layout, cell: kdb.Cell) -> None:
    """Fill gaps and notches narrower than the same-layer spacing in mergeable layers
    (morphological closing).  Only for cells whose content is one kind of device, where
    a continuous well/implant is what the designer wants."""
    for ldef in tech.layers.values():
        if ldef.role not in MERGEABLE_ROLES:
            continue
        space = tech.rule_min("spacing", ldef.role)
        if space <= 0:
            continue
        li = layout.find_layer(ldef.layer, ldef.datatype)
        if li is None:
            continue
        region = kdb.Region(cell.begin_shapes_rec(li))
        region.merge()
        if region.is_empty():
            continue
        half = (space + 1) // 2
        closed = region.sized(half).sized(-half)
        fill = closed - region
        if not fill.is_empty():
            cell.shapes(li).insert(fill)


def heal_bridges(tech: Technology, layout: kdb.Layout, cell: kdb.Cell,
                 drawn: list[tuple[str, kdb.Box]]) -> None:
    """Fill the gaps and notches narrower than the layer spacing that bridges leave where
    they meet (e.g. the corner between a row bridge and two row-to-row bridges).  Only
    fill pieces touching a bridge are added."""
    by_layer: dict[str, kdb.Region] = {}
    for name, box in drawn:
        by_layer.setdefault(name, kdb.Region()).insert(box)
    for name, bridge_region in by_layer.items():
        ldef = tech.layers[name]
        space = tech.rule_min("spacing", ldef.role or "")
        li = layout.find_layer(ldef.layer, ldef.datatype)
        if space <= 0 or li is None:
            continue
        region = kdb.Region(cell.begin_shapes_rec(li))
        region.merge()
        half = (space + 1) // 2
        fill = (region.sized(half).sized(-half) - region).interacting(bridge_region.sized(1))
        if not fill.is_empty():
            cell.shapes(li).insert(fill)
