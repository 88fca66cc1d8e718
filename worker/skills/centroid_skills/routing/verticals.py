"""Verticals: a net joined between two neighbouring channels by a track-layer wire straight
over the row between them, instead of a metal-2 trunk in a column beside the rows.

Only where the track layer is not metal 1 (the rows' devices use metal 1 and 2, so the track
layer is free over a row that holds none of it; over a row of routed blocks, only in the gaps
between their track-layer shapes) and for nets without a rail (a rail is joined
by its trunk's via-1).  A vertical is a wire of the track layer, as wide as a track, from the
net's track in channel ``ch`` up to its track in channel ``ch + 1``: it may cross no other
track, so in channel ``ch`` the net's track lies above every track the vertical's band
overlaps, and in channel ``ch + 1`` below them (precedence constraints of the channel's
left-edge packing, :func:`.channels.band_constraints`).  Verticals over one row keep a track pitch
apart; each stands at the mean x of its net's pins in the two channels.
"""

from __future__ import annotations

from dataclasses import dataclass

import klayout.db as kdb

from centroid_skills.routing.channels import Stub, clear_x, coming_down_x
from centroid_skills.routing.dims import Dims
from centroid_skills.routing.rows import RowInfo
from centroid_skills.tech import Technology


@dataclass(frozen=True)
class Vertical:
    net: str
    ch: int  # the lower channel: the vertical crosses row ``ch`` into channel ``ch + 1``
    x: int


Gaps = list[tuple[int, int]] | None  # where a vertical's centre may stand over a row (None: anywhere)


def row_gaps(tech: Technology, layout: kdb.Layout, d: Dims, infos: list[RowInfo]) -> list[Gaps]:
    """Per row, where a vertical may cross it: anywhere (None) when the row holds nothing on
    the track layer, else the x ranges (row coordinates) whose band keeps the clearance from
    every track-layer shape of the row (a row of routed blocks: between the blocks); no
    range at all where the track layer is metal 1."""
    if d.h_role == "metal1":
        return [[] for _ in infos]
    name = tech.require(d.h_role).name
    out: list[Gaps] = []
    for info in infos:
        region = tech.region(layout, info.cell, name)
        if region.is_empty():
            out.append(None)
            continue
        bb = info.cell.bbox()
        spans = sorted((p.bbox().left, p.bbox().right) for p in region.each())
        keep = d.hh + d.c_out
        gaps: list[tuple[int, int]] = []
        edge = bb.left + d.hh
        for left, right in spans:
            if left - keep >= edge:
                gaps.append((tech.snap_up(edge), tech.snap_down(left - keep)))
            edge = max(edge, right + keep)
        if bb.right - d.hh >= edge:
            gaps.append((tech.snap_up(edge), tech.snap_down(bb.right - d.hh)))
        out.append([g for g in gaps if g[0] <= g[1]])
    return out


def vertical_nets(places: dict[str, set[tuple[str, int]]], gaps: list[Gaps]) -> dict[str, range]:
    """Nets joined by verticals alone, with the channels they join: nets in two or more
    channels (a block's port counts as channel 0) and no rail, every row between their
    lowest and highest channel with room for a vertical."""
    out: dict[str, range] = {}
    for net, where in places.items():
        if any(kind == "rail" for kind, _i in where):
            continue
        chans = sorted({0 if kind == "port" else i for kind, i in where})
        if len(chans) < 2:
            continue
        lo, hi = chans[0], chans[-1]
        if all(gaps[r] is None or gaps[r] for r in range(lo, hi)):
            out[net] = range(lo, hi + 1)
    return out


def _in_gaps(x: int, gaps: list[tuple[int, int]]) -> int | None:
    """``x`` if it lies in a gap, else the start of the next gap to its right (None)."""
    for lo, hi in gaps:
        if x <= hi:
            return max(x, lo)
    return None


#: positions tried per vertical (its preferred x, then a track pitch further each way, ...)
CANDIDATES = 13


def candidate_x(pref: int, k: int, pitch: int) -> int:
    """The ``k``-th position tried for a vertical preferring ``pref``: pref, +1, -1, +2, ...
    pitches."""
    return pref + ((k + 1) // 2) * pitch * (1 if k % 2 else -1)


def _gap_candidate(pref: int, k: int, gaps: list[tuple[int, int]]) -> int:
    """The ``k``-th nearest position to ``pref`` over a row with gaps: ``pref`` brought
    into each gap, nearest first (the farthest once ``k`` runs past them)."""
    near = sorted((min(max(pref, lo), hi) for lo, hi in gaps), key=lambda x: (abs(x - pref), x))
    return near[min(k, len(near) - 1)]


def place_verticals(tech: Technology, d: Dims, infos: list[RowInfo], stubs: list[list[Stub]],
                    nets: dict[str, range], tries: dict[tuple[str, int], int],
                    pinned: set[str], gaps: list[Gaps]) -> tuple[list[Vertical], set[str]]:
    """One vertical per net and row it crosses, preferably at the mean preferred x of the
    net's stubs in the two channels (else of all its stubs), moved to its ``tries[(net,
    row)]``-th candidate (:func:`candidate_x`; over a row with ``gaps``, into its gaps) and
    kept within the rows' width; the verticals over one row a pitch apart (pushed right in
    order of their x, and on into the next gap).  Returns the verticals and the nets one of
    whose verticals found no room.  A ``pinned``
    net's port stub stands under its vertical over row 0 (:func:`pin_ports`), a pitch from
    every other net's stub coming down into channel 0 (moved right until it is)."""
    xs: dict[tuple[str, int], list[int]] = {}
    every: dict[str, list[int]] = {}
    for ch, lst in enumerate(stubs):
        for s in lst:
            if s.kind != "rail" and s.net in nets and not s.term.port:
                xs.setdefault((s.net, ch), []).append(s.pref)
                every.setdefault(s.net, []).append(s.pref)
    left = min(i.ext.bbox.left + i.dx for i in infos if i.ext is not None) + d.hh
    right = max(i.ext.bbox.right + i.dx for i in infos if i.ext is not None) - d.hh
    # verticals leaving one channel side by side: each band clear of the other's track end
    pitch = tech.snap_up(max(d.px, d.py, d.hh + d.he + d.sh))
    downs = coming_down_x(stubs[0], d, tech) if stubs else []
    out: list[Vertical] = []
    failed: set[str] = set()
    for row in range(len(infos)):
        want = []
        for net, chans in nets.items():
            if row not in chans or row + 1 not in chans:
                continue
            if len(chans) > 2:  # passing through a channel: every vertical of the net at one x
                near = every.get(net, [0])
                k = sum(tries.get((net, r), 0) for r in chans)
            else:
                near = xs.get((net, row), []) + xs.get((net, row + 1), []) or every.get(net, [0])
                k = tries.get((net, row), 0)
            pref = tech.snap(sum(near) / len(near))
            row_gaps_here = _moved(gaps[row], infos[row].dx)
            if row_gaps_here is None:
                x = min(max(candidate_x(pref, k, pitch), left), right)
                if k >= CANDIDATES - 2:  # the last tries: either end of the rows
                    x = right if k == CANDIDATES - 2 else left
            else:
                x = _gap_candidate(pref, k, row_gaps_here)
            want.append((x, net))
        if _moved(gaps[row], infos[row].dx) is None:
            want = _within(sorted(want), left, right, pitch, tech)
        last = None
        for x, net in sorted(want):
            if last is not None and x < last + pitch:
                x = tech.snap_up(last + pitch)
            if row == 0 and net in pinned:
                x = clear_x(x, [o for o, n in downs if n != net], d.px)
            row_gaps_here = _moved(gaps[row], infos[row].dx)
            if row_gaps_here is None and x > right:  # pushed past the rows: no room
                failed.add(net)
                continue
            if row_gaps_here is not None:
                fit = _in_gaps(x, row_gaps_here)
                if fit is None or (row == 0 and net in pinned and fit != x):
                    failed.add(net)
                    continue
                x = fit
            out.append(Vertical(net, row, x))
            last = x
    return out, failed


def _within(want: list[tuple[int, str]], left: int, right: int, pitch: int,
            tech: Technology) -> list[tuple[int, str]]:
    """Verticals over one free row (sorted by x) a pitch apart, pushed right where closer, and
    back left from the rows' right end where that pushed them past it."""
    xs: list[int] = []
    for x, _net in want:
        xs.append(x if not xs or x >= xs[-1] + pitch else tech.snap_up(xs[-1] + pitch))
    limit = right
    for i in range(len(xs) - 1, -1, -1):
        if xs[i] <= limit:
            break
        xs[i] = max(limit, left)
        limit = tech.snap_down(xs[i] - pitch)
    return [(x, net) for x, (_x, net) in zip(xs, want, strict=True)]


def _moved(gaps: Gaps, dx: int) -> Gaps:
    return None if gaps is None else [(lo + dx, hi + dx) for lo, hi in gaps]


def pin_ports(stubs: list[list[Stub]], verticals: list[Vertical], pinned: set[str]) -> None:
    """The port stub of each ``pinned`` net (a port whose net has no pin in channel 0) stands
    right under its vertical over row 0: its track there is a point, the vertical's foot, and
    the stubs coming down into channel 0 keep a pitch from it."""
    at = {v.net: v.x for v in verticals if v.ch == 0 and v.net in pinned}
    for s in stubs[0] if stubs else []:
        if s.term.port and s.net in at:
            s.lo = s.hi = s.pref = at[s.net]
            s.through = True


def channel_bands(verticals: list[Vertical], ch: int) -> list[tuple[str, int, bool]]:
    """The verticals touching channel ``ch`` as (net, x, leaves upward)."""
    return [(v.net, v.x, v.ch == ch) for v in verticals if v.ch in (ch, ch - 1)]
