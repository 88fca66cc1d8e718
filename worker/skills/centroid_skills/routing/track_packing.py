"""The tracks of one channel: its nets' spans packed onto levels, lowest first (left-edge
packing under the precedence of the vertical constraints), each level holding one track of
the track layer per stretch of x and, where the rule set has a second track layer
(:func:`.dims.with_low_tracks`), one of metal 1 beside it.

A metal-1 track must keep clear of the metal-1 stubs coming up through the channel to their
tracks (:func:`metal1_bars`), and a net with a vertical here keeps its track on the track
layer (the vertical is of that layer).  The verticals' precedence (their bands, which no
track of the track layer may cross) does not bind a metal-1 track: a net clear of every
metal-1 stub may go on metal 1 free of it (:func:`pack_tracks` tries both, keeps the lower).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from centroid_skills.routing.dims import Dims, track_reach
from centroid_skills.tech import Technology

if TYPE_CHECKING:
    from centroid_skills.routing.channels import Stub

Spans = list[tuple[int, int, str]]  # (left, right, net) of every track of a channel
Precedence = dict[str, set[str]]  # before[b]: nets whose track must lie below b's
Levels = dict[str, tuple[int, int, int]]  # net -> (level, left, right)


def metal1_bars(lst: list[Stub]) -> list[tuple[int, str]]:
    """The metal-1 stubs coming up through a channel to their track (x, net): a metal-1 pin
    going up where the tracks are not metal 1 (:func:`.drawing.draw_stubs`)."""
    return [(s.x, s.net) for s in lst
            if s.kind == "up" and s.term.role == "metal1" and not s.term.port]


def _left_edge(entries: Spans, before: Precedence, d: Dims, tech: Technology, joined: set[str],
               low: set[str] | None = None, bars: Sequence[tuple[int, str]] = (),
               only_low: frozenset[str] = frozenset(), bands: Precedence | None = None,
               upper: frozenset[str] = frozenset()) -> Levels | None:
    """Tracks for net spans (left, right, net); ``before[b]``: nets whose track must be
    below b's, ``bands`` the same for the verticals' bands (binding two tracks of the track
    layer only: a vertical does not cross a metal-1 track).  Each net in topological order
    takes the lowest level where its track fits (the track layer first); None on a cycle.
    Two spans share a level of one layer when the tracks as drawn (reaching past their end
    vias, :func:`.dims.track_reach`; ``joined``: nets with a vertical here) keep the
    layer's spacing.  With ``low`` (a set, filled with them) a level holds a second track on
    metal 1 (:func:`.dims.with_low_tracks`) for a net without a vertical here: clear of
    every other net's metal-1 stub coming up through the channel (``bars``: x and net),
    unless that stub's net already has its track on a lower level (the stub ends there,
    below the metal-1 track; the channel's pitch keeps the stub's via pad clear).  The nets
    of ``only_low`` go on metal 1 alone, those of ``upper`` on the track layer alone."""
    nets = {e[2]: e for e in entries}
    bands = bands or {}
    every = merged(before, bands)
    level: dict[str, int] = {}
    visiting: set[str] = set()

    def lvl(n: str) -> int | None:
        if n in level:
            return level[n]
        if n in visiting:
            return None
        visiting.add(n)
        best = 0
        for p in every.get(n, ()):
            if p not in nets:
                continue
            v = lvl(p)
            if v is None:
                return None
            best = max(best, v + 1)
        visiting.discard(n)
        level[n] = best
        return best

    for n in nets:
        if lvl(n) is None:
            return None
    if low is not None:
        low.clear()
    # (level, low): extents, each with the spacing it asks of its neighbours (a wide track's)
    occupied: dict[tuple[int, bool], list[tuple[int, int, int]]] = {}
    out: Levels = {}

    def taken(net: str, t: int, on_low: bool) -> range:
        """The levels ``net``'s track on level ``t`` keeps (a wide track: its levels and the
        free ones beside it, :meth:`.dims.Dims.track_levels`)."""
        if on_low:
            return range(t, t + 1)
        k, g = d.track_levels(net)
        return range(max(0, t - g), t + k + g)

    def fits(net: str, t: int, left: int, right: int, on_low: bool
             ) -> tuple[int, int, int] | None:
        """The drawn extent of ``net``'s track on level ``t`` and that layer, if it fits, and
        the spacing it asks of its neighbours (a wide track: the wide-metal spacing, and its
        extent reaching over its trunk's width, where it meets it)."""
        half, _end, _area, space = d.reach_of(on_low)
        reach = track_reach(tech, d, left, right, net in joined, on_low)
        own = 0 if on_low else d.track_space(net)
        if own:
            reach = max(reach, d.half_for(net, "metal2"))
        lo, hi = left - reach, right + reach
        if not all(lo - r >= max(space, own, sp) or l_ - hi >= max(space, own, sp)
                   for u in taken(net, t, on_low)
                   for l_, r, sp in occupied.get((u, on_low), [])):
            return None
        if on_low and any(n != net and (n not in out or out[n][0] >= t)
                          and lo - (x + d.hp1) < d.s1 and (x - d.hp1) - hi < d.s1
                          for x, n in bars):
            return None
        return lo, hi, own

    on_metal1: set[str] = set()
    def top(p: str) -> int:  # the highest level of p's track
        return out[p][0] + (0 if p in on_metal1 else d.track_levels(p)[0] - 1)

    for left, right, net in sorted(entries, key=lambda e: (level[e[2]], e[0], e[2])):
        lowest = 1 + max((top(p) for p in before.get(net, ()) if p in out), default=-1)
        banded = 1 + max((top(p) for p in bands.get(net, ())
                          if p in out and p not in on_metal1), default=-1)
        if d.track_levels(net)[0] > 1:  # a wide track: on the track layer
            layers: tuple[bool, ...] = (False,)
        elif net in only_low:
            layers = (True,)
        else:
            layers = ((False, True) if low is not None and net not in joined and net not in upper
                      else (False,))
        # the first level each layer may take: on the track layer above the bands' too
        first = {on_low: lowest if on_low else max(lowest, banded) for on_low in layers}
        t = min(first.values())
        while True:
            placed = next(((on_low, ext) for on_low in layers if t >= first[on_low]
                           and (ext := fits(net, t, left, right, on_low)) is not None), None)
            if placed is not None:
                break
            t += 1
        on_low, ext = placed
        for u in taken(net, t, on_low):
            occupied.setdefault((u, on_low), []).append(ext)
        if on_low:
            on_metal1.add(net)
        out[net] = (t, left, right)
    if low is not None:
        low.update(on_metal1)
    return out


def _clear_of_bars(d: Dims, tech: Technology, span: tuple[int, int, str],
                   bars: Sequence[tuple[int, str]]) -> bool:
    """Whether a metal-1 track on ``span`` keeps the metal-1 spacing from every other net's
    metal-1 stub in the channel (whatever their levels)."""
    left, right, net = span
    reach = track_reach(tech, d, left, right, False, True)
    lo, hi = left - reach, right + reach
    return all(n == net or lo - (x + d.hp1) >= d.s1 or (x - d.hp1) - hi >= d.s1
               for x, n in bars)


def _levels(res: Levels, d: Dims) -> int:
    return 1 + max((t + d.track_levels(n)[0] - 1 for n, (t, _l, _r) in res.items()), default=-1)


def pack_tracks(entries: Spans, before: Precedence, bands: Precedence, d: Dims,
                tech: Technology, joined: set[str], low: set[str] | None = None,
                bars: Sequence[tuple[int, str]] = (), upper: frozenset[str] = frozenset()
                ) -> Levels | None:
    """The level of every span under the precedence of the stubs (``before``) and of the
    verticals (``bands``, :func:`.channels.band_constraints`); None on a cycle.  With
    ``low`` (a set, filled with the nets put on metal 1) also packed with every net that
    the verticals' bands constrain and that is clear of every metal-1 stub (``bars``) on
    metal 1, free of those constraints, and the packing with fewer levels kept (on a tie,
    the one without).  The nets of ``upper`` (e.g. a matched pair's: both sides on one
    layer) and of ``joined`` (with a vertical here) stay on the track layer."""
    res = _left_edge(entries, before, d, tech, joined, low, bars, bands=bands, upper=upper)
    if low is None:
        return res
    banded = {n for b, below in bands.items() for n in (b, *below)}
    free = frozenset(e[2] for e in entries
                     if e[2] in banded and e[2] not in joined | upper
                     and d.track_levels(e[2])[0] == 1  # a wide track stays on the track layer
                     and _clear_of_bars(d, tech, e, bars))
    if not free:
        return res
    loose = {b: {n for n in below if n not in free} for b, below in bands.items() if b not in free}
    low_free: set[str] = set()
    alt = _left_edge(entries, before, d, tech, joined, low_free, bars, free, loose, upper)
    if alt is None or (res is not None and _levels(alt, d) >= _levels(res, d)):
        if res is None:  # the first packing's low set is stale
            low.clear()
        return res
    low.clear()
    low.update(low_free)
    return alt


def merged(a: Precedence, b: Precedence) -> Precedence:
    out = {k: set(v) for k, v in a.items()}
    for k, v in b.items():
        out.setdefault(k, set()).update(v)
    return out
