"""How far metal (or diffusion, poly) must reach around a cut, from the enclosure rules
(rule set 1.2.0, docs/contracts.md §1): the all-around ``min``, the margin inside line
ends (``end_min`` for edges shorter than ``end_width`` with convex corners at both ends)
and the adjacent-side rule (a side enclosed by less than ``adjacent_below`` makes the two
sides next to it need ``adjacent_min``).

The generators draw cuts in two situations, both handled here:

* a cut in a *line* (a strap, a bus, a track): the sides across the line have a margin
  ``side``; :func:`along_margin` is what the line must reach past the last cut towards
  its end (a line end when the line is narrower than ``end_width``);
* a cut in a *pad* (a square around one cut, perhaps with a narrower wire attached):
  :func:`pad_margin` is one margin that serves every side.

Every value is in nm on the grid; none is a process number.
"""

from __future__ import annotations

from dataclasses import dataclass

from centroid_skills.tech import Technology


@dataclass(frozen=True)
class CutRules:
    base: int  # all-around enclosure (enclosure or extension rules)
    end_min: int  # margin inside a line end (0: no rule)
    end_width: int  # edges shorter than this are line ends
    adjacent: tuple[tuple[int, int], ...]  # (adjacent_below, adjacent_min) pairs

    def side_ok(self, a: int, b: int) -> bool:
        """Whether two adjacent sides with margins ``a`` and ``b`` satisfy every adjacent
        rule (a thin side needs its neighbour at adjacent_min, both ways round)."""
        for below, amin in self.adjacent:
            if (a < below and b < amin) or (b < below and a < amin):
                return False
        return True


_CACHE: dict[tuple[int, str, str, frozenset[str] | None], tuple[Technology, CutRules]] = {}


def cut_rules(tech: Technology, outer: str, cut: str,
              context: frozenset[str] | None = None) -> CutRules:
    """The enclosure rules of ``cut`` inside ``outer`` (roles), largest values winning."""
    key = (id(tech), outer, cut, context)
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is tech:
        return hit[1]
    base = max(tech.enc(outer, cut, context), tech.ext(outer, cut, context))
    end_min = end_width = 0
    adjacent: set[tuple[int, int]] = set()
    for r in tech.rules_for("enclosure", outer, cut, context):
        if r.end_min is not None and r.end_width is not None:
            end_min = max(end_min, tech.snap_up(tech.nm(r.end_min)))
            end_width = max(end_width, tech.nm(r.end_width))
        if r.adjacent_min is not None and r.adjacent_below is not None:
            adjacent.add((tech.nm(r.adjacent_below), tech.snap_up(tech.nm(r.adjacent_min))))
    out = CutRules(base, end_min, end_width, tuple(sorted(adjacent)))
    _CACHE[key] = (tech, out)
    return out


def along_margin(cr: CutRules, side: int, line_width: int | None = None) -> int:
    """Margin a line must reach past a cut whose two sides across the line have at least
    ``side``: the all-around minimum; ``adjacent_min`` when ``side`` is a thin side (and
    ``adjacent_below`` when ``side`` is below ``adjacent_min``, so that the end is not
    thin itself); ``end_min`` when the line (``line_width`` wide; None = not a line end)
    is narrower than ``end_width``."""
    e = cr.base
    for below, amin in cr.adjacent:
        if side < below:
            e = max(e, amin)
        elif side < amin:
            e = max(e, below)
    if cr.end_min and line_width is not None and line_width < cr.end_width:
        e = max(e, cr.end_min)
    return e


def pad_margin(tech: Technology, cr: CutRules, cut: int) -> int:
    """One margin for every side of a square pad around a ``cut`` nm cut: at least the
    all-around minimum; no thin side whose neighbour would need more (equal sides: at
    least min(adjacent_below, adjacent_min)); and either every side at ``end_min`` or the
    pad at least ``end_width`` long, so that its edges are no line ends."""
    m = cr.base
    for below, amin in cr.adjacent:
        m = max(m, min(below, amin))
    if cr.end_min and cut + 2 * m < cr.end_width:
        m = max(m, min(cr.end_min, tech.snap_up((cr.end_width - cut) / 2)))
    return tech.snap_up(m)


def block_ok(cr: CutRules, w: int, h: int, mx: int, my: int) -> bool:
    """Whether a rectangle around a ``w`` x ``h`` block of cuts, ``mx`` beyond it left and
    right and ``my`` below and above, meets every rule (its edges may be line ends)."""
    if mx < cr.base or my < cr.base or not cr.side_ok(mx, my):
        return False
    if cr.end_min:
        if h + 2 * my < cr.end_width and mx < cr.end_min:
            return False
        if w + 2 * mx < cr.end_width and my < cr.end_min:
            return False
    return True


def block_margins(tech: Technology, cr: CutRules, w: int, h: int, mx: int, my: int,
                  grow: str = "y") -> tuple[int, int]:
    """The smallest on-grid margins (>= ``mx``, ``my``) of a rectangle around a ``w`` x ``h``
    block of cuts that meet every rule, growing the ``grow`` axis first."""
    g = tech.grid_nm
    mx, my = tech.snap_up(max(mx, cr.base)), tech.snap_up(max(my, cr.base))
    reach = max([cr.end_min, tech.snap_up(cr.end_width / 2), g]
                + [max(below, amin) for below, amin in cr.adjacent])
    for step_other in range(0, reach + g, g):
        for step in range(0, reach + g, g):
            x, y = (mx + step_other, my + step) if grow == "y" else (mx + step, my + step_other)
            if block_ok(cr, w, h, x, y):
                return x, y
    return mx + reach, my + reach
