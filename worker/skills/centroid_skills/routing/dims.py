"""Routing dimensions, every one from the rule set (nm, on grid).

Wires are described by centre lines and *half* widths on grid, so a wire box is
``[c - h, c + h]``.  A cut of size ``v`` centred at ``c`` is ``[c - floor(v/2), ...]``
(floor to grid), so an enclosing pad needs ``enc + v - floor(v/2)`` on each side.  Pads
around vias take the pad margin of :mod:`centroid_skills.cuts` (line ends and adjacent
sides); tracks keep their narrow width and reach past their end vias by the along margin
(``he``) and far enough for the minimum area of their layer.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from centroid_skills.cuts import along_margin, cut_rules, pad_margin
from centroid_skills.rules import cover, draw_rules
from centroid_skills.tech import Technology

ROUTING_ROLES = ("metal1", "via1", "metal2", "via2", "metal3", "contact")


@dataclass(frozen=True)
class Dims:
    g: int
    h_role: str  # horizontal track layer: metal3 when the rule set has via2+metal3, else metal1
    h_via: str  # via between metal2 stubs and tracks
    v1: int  # via1 cut
    vh: int  # track via cut
    hs1: int  # half width of a metal1 bar
    hs2: int  # half width of a metal2 bar
    hp1: int  # half size of the metal1 pad around via1
    hp2: int  # half size of the metal2 pad around via1
    hp2h: int  # half size of the metal2 pad around the track via
    hh: int  # half width of a track (encloses the track via)
    ht: int  # half width of a trunk (metal2, encloses both vias)
    hstack: int  # half size of a via1 stack (max of its pads)
    hvt: int  # half height of what sits on a track (track or metal2 pad)
    px: int  # pitch of vertical stubs and trunks
    py: int  # pitch of tracks
    c_out: int  # clearance of routing from foreign cells (largest spacing a routing layer has)
    s1: int
    s2: int
    sh: int
    he: int = 0  # half extension of a track past its end via centres (along margin)
    track_area: int = 0  # minimum area of a track island (nm²)
    stack_low: int = 0  # how far a via-1 stack's metal-2 pad on a track reaches below it (area)
    # the second track layer, metal 1 under metal-3 tracks (None: one layer, the tracks' own)
    low_role: str | None = None
    hl: int = 0  # half width of a metal-1 track (encloses via 1, as its pads do)
    hel: int = 0  # half extension of a metal-1 track past its end via centres
    low_area: int = 0  # minimum area of a metal-1 track island (nm²)
    pyl: int = 0  # track pitch of a channel holding metal-1 tracks (both layers' needs)
    hvl: int = 0  # half height of what sits on a track in such a channel
    v1s: int = 0  # spacing of via-1 cuts (an array where wide wires of a net meet)
    vhs: int = 0  # spacing of track-via cuts (likewise)
    # (net, role, least half width) of the wires of nets given a current (:mod:`.net_currents`)
    net_halves: tuple[tuple[str, str, int], ...] = ()

    # (net, levels its track spans, free levels kept below and above it, spacing from the
    # tracks beside it on its levels) of the nets whose current asks for a track wider than
    # one (:mod:`.net_currents`)
    wide_tracks: tuple[tuple[str, int, int, int], ...] = ()

    # (net, role, spacing) next to the wires of nets given a current (their width's spacing)
    net_spaces: tuple[tuple[str, str, int], ...] = ()

    def space_for(self, net: str, role: str, default: int) -> int:
        """The spacing next to a wire of ``net`` on ``role`` as wide as its current needs (the
        wide-metal spacing; ``default`` when the net has no current)."""
        return max((sp for n, r, sp in self.net_spaces if n == net and r == role),
                   default=default)

    def half_for(self, net: str | None, role: str) -> int:
        """The least half width a wire of ``net`` on ``role`` takes for its current (0: the
        rule widths)."""
        return max((h for n, r, h in self.net_halves if n == net and r == role), default=0)

    def track_levels(self, net: str) -> tuple[int, int]:
        """How many levels the track of ``net`` spans (1: one track) and how many levels it
        keeps free below and above it (the wide-metal spacing of a wide track)."""
        return next(((k, g) for n, k, g, _s in self.wide_tracks if n == net), (1, 0))

    def track_space(self, net: str) -> int:
        """The spacing a wide track of ``net`` keeps from the tracks beside it on its levels
        (the wide-metal spacing; 0: the layer's own)."""
        return next((sp for n, _k, _g, sp in self.wide_tracks if n == net), 0)

    def reach_of(self, low: bool) -> tuple[int, int, int, int]:
        """Half width, along margin, minimum area and spacing of a track on the track layer
        (``low``: on metal 1, the second layer)."""
        if low:
            return self.hl, self.hel, self.low_area, self.s1
        return self.hh, self.he, self.track_area, self.sh

    def cut(self, c: int, v: int) -> tuple[int, int]:
        lo = c - (v // 2 // self.g) * self.g
        return lo, lo + v


def _half(tech: Technology, v: int, enc: int, wmin: int) -> int:
    lower = (v // 2 // tech.grid_nm) * tech.grid_nm
    need = max(enc + v - lower, enc + lower, (wmin + 1) // 2)
    return tech.snap_up(need)


def _pad(tech: Technology, v: int, outer: str, cut: str, wmin: int) -> int:
    """Half size of a square pad of ``outer`` around a ``cut`` via (every side a possible
    line end; see :func:`centroid_skills.cuts.pad_margin`)."""
    m = max(cover(tech, outer, cut), pad_margin(tech, cut_rules(tech, outer, cut), v))
    return _half(tech, v, m, wmin)


def _track_end(tech: Technology, v: int, hh: int, role: str, cut: str) -> int:
    """Half extension of a track (``2 hh`` wide, ``v`` vias on its centre line) past the
    centre of its end via: the along margin of a line that wide."""
    lower = (v // 2 // tech.grid_nm) * tech.grid_nm
    side = hh - max(lower, v - lower)
    e = along_margin(cut_rules(tech, role, cut), side, 2 * hh)
    return tech.snap_up(max(hh, e + max(lower, v - lower)))


def routing_dims(tech: Technology) -> Dims:
    r = draw_rules(tech)
    g = tech.grid_nm
    use_m3 = tech.has("metal3") and tech.has("via2")
    h_role = "metal3" if use_m3 else "metal1"
    h_via = "via2" if use_m3 else "via1"
    v1 = r.v1
    vh = tech.cut_size(h_via) if use_m3 else v1
    s1, s2 = r.m1s, r.m2s
    sh = max(tech.space(h_role), g)
    hs1 = tech.snap_up(r.m1w / 2)
    hs2 = tech.snap_up(r.m2w / 2)
    hp1 = _pad(tech, v1, "metal1", "via1", r.m1w)
    hp2 = _pad(tech, v1, "metal2", "via1", r.m2w)
    hp2h = _pad(tech, vh, "metal2", h_via, r.m2w)
    hh = _half(tech, vh, cover(tech, h_role, h_via), tech.width(h_role))
    if not use_m3:
        hh = max(hh, hp1)
    he = _track_end(tech, vh, hh, h_role, h_via)
    ht = max(hp2, hp2h, hs2)
    hstack = max(hp1, hp2)
    hvt = max(hh, hp2h)
    v1s = max(tech.space("via1"), g)
    vhs = max(tech.space(h_via), g)
    px = max(2 * hp1 + s1, 2 * max(hp2, hp2h, ht) + s2, v1 + v1s, vh + vhs)
    py = max(2 * hh + sh, vh + vhs, 2 * hp2h + s2)
    routing = set(ROUTING_ROLES) | {h_role, h_via}
    c_out = max(s1, s2, sh, v1s, vhs)
    for rule in tech.rules:
        if rule.type != "spacing" or rule.min is None or rule.width_over is not None:
            continue
        roles = tech.roles_of(rule.layer) | (tech.roles_of(rule.layer2) if rule.layer2 else set())
        if roles & routing and tech.can_exist(rule.layer, None) and (
                rule.layer2 is None or tech.can_exist(rule.layer2, None)):
            c_out = max(c_out, tech.nm(rule.min))
    d = Dims(g=g, h_role=h_role, h_via=h_via, v1=v1, vh=vh, hs1=hs1, hs2=hs2, hp1=hp1,
             hp2=hp2, hp2h=hp2h, hh=hh, ht=ht, hstack=hstack, hvt=hvt,
             px=tech.snap_up(px), py=tech.snap_up(py), c_out=tech.snap_up(c_out),
             s1=s1, s2=s2, sh=sh, he=he, track_area=tech.area(h_role), v1s=v1s, vhs=vhs,
             stack_low=max(hp2, tech.snap_up(tech.area("metal2") / (2 * hp2)) - hp2))
    return with_low_tracks(tech, d, v1s) if use_m3 else d


def with_low_tracks(tech: Technology, d: Dims, v1s: int) -> Dims:
    """``d`` with metal 1 as a second track layer under the metal-3 tracks: a metal-1 track
    as wide as the metal-1 tracks of a rule set without metal 3 (enclosing via 1 like its
    pads), and the pitch of a channel holding both: metal-1 tracks their width and spacing
    apart, via-1 cuts theirs, the metal-2 pads of via 1 and of the track via a metal-2
    spacing apart, and a via-1 stack's metal-1 pad (a metal-1 stub coming up to its track)
    the metal-1 spacing from a metal-1 track one level higher."""
    hl = max(_half(tech, d.v1, cover(tech, "metal1", "via1"), tech.width("metal1")), d.hp1)
    hel = _track_end(tech, d.v1, hl, "metal1", "via1")
    pyl = max(d.py, 2 * hl + d.s1, d.v1 + v1s, 2 * d.hp2 + d.s2, d.hp2 + d.hp2h + d.s2,
              d.hp1 + hl + d.s1)
    return replace(d, low_role="metal1", hl=hl, hel=hel, low_area=tech.area("metal1"),
                   pyl=tech.snap_up(pyl), hvl=max(d.hvt, hl, d.hp2))


def wide_clearance(tech: Technology, d: Dims, widths: dict[str, int]) -> int:
    """The clearance ``c_out`` raised to the wide-metal spacing of every routing metal
    whose widest shape (``widths``: role -> nm, the router's and the rows') is wider than
    the rule's width_over."""
    c_out = d.c_out
    for role, width in widths.items():
        for over, lo in tech.wide_spaces(role):
            if width > over:
                c_out = max(c_out, lo)
    return tech.snap_up(c_out)


def track_reach(tech: Technology, d: Dims, left: int, right: int, joined: bool = False,
                low: bool = False) -> int:
    """How far a track drawn from via centre ``left`` to via centre ``right`` reaches past
    each of them: the along margin of its end vias, and far enough for the minimum area of
    its layer (what is drawn, and what its neighbours on the same track must keep clear of);
    a track ``joined`` to a vertical (:mod:`.verticals`) is one shape with it, its area
    no concern.  ``low``: a metal-1 track (:func:`with_low_tracks`)."""
    half, end, area, _space = d.reach_of(low)
    if joined:
        return end
    return max(end, tech.snap_up((area / (2 * half) - (right - left)) / 2))
