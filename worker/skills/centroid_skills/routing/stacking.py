"""The vertical positions of one routing call: channels and rows stacked bottom to top,
each channel as high as its tracks need (and its via row only where metal-1 pins come up
into it) and each row at least the rule gap above the row below it."""

from __future__ import annotations

from dataclasses import dataclass, field

import klayout.db as kdb

from centroid_skills import abut
from centroid_skills.routing.channel_plan import Tracks
from centroid_skills.routing.dims import Dims
from centroid_skills.routing.rows import RowInfo
from centroid_skills.tech import Technology


@dataclass
class Stack:
    """Where the channels landed (top-cell coordinates); the rows' ``dy`` are set too."""

    track_y: list[dict[str, int]]  # per channel: net -> y of its track
    via_up_y: list[int | None]  # per channel: y of the vias of pins going up into it
    n_tracks: list[int]  # per channel
    pitch: list[int] = field(default_factory=list)  # per channel: its track pitch


def track_count(tracks: Tracks, d: Dims) -> int:
    """The levels of a channel's tracks (a wide track counts every level it spans)."""
    return 1 + max((k + d.track_levels(n)[0] - 1 for n, (k, _l, _r) in tracks.items()),
                   default=-1)


def stack_rows(tech: Technology, d: Dims, infos: list[RowInfo], tracks: list[Tracks],
               via_rows: list[bool], m1_up: list[bool] | None = None,
               low: list[set[str]] | None = None) -> Stack:
    """Channel 0 at y = 0, then for every row: the via zone of the metal-1 pins going up
    from the row below (only where ``via_rows[ch]``: a row of blocks has metal-2 pins
    only, which go straight up), the channel's tracks, the row itself (its ``dy``) at the
    clearance above the tracks and at least the rule gap above the row below; the last
    channel above the top row.  ``m1_up``: channels metal-1 pins come up into; without a
    via row there, their via-1 stands on their track, so the lowest track keeps its pads
    (a track's half height, a via-1 stack's metal-2 pad long enough for the layer's minimum
    area: ``d.stack_low``) the clearance above the row.  ``low``: per channel, the nets on
    metal-1 tracks (:func:`.dims.with_low_tracks`); a channel holding any has the pitch and
    half height of both track layers (``d.pyl``, ``d.hvl``)."""
    stack = Stack([], [], [])
    prev_top: int | None = None
    prev_ext: abut.Extents | None = None
    for ch, channel_tracks in enumerate(tracks):
        n_tracks = track_count(channel_tracks, d)
        two = bool(low and ch < len(low) and low[ch])
        py, hvt = (d.pyl, d.hvl) if two else (d.py, d.hvt)
        if prev_top is None:
            y_g = None
            y0 = 0
            content_top = y0 + (n_tracks - 1) * py + hvt if n_tracks else 0
        elif via_rows[ch]:
            y_g = prev_top + d.c_out + d.hstack
            y0 = y_g + d.hstack + d.c_out + hvt
            content_top = y0 + (n_tracks - 1) * py + hvt if n_tracks else y_g + d.hstack
        else:
            y_g = None
            stacked = m1_up is not None and m1_up[ch]
            y0 = prev_top + d.c_out + (max(hvt, d.hstack, d.stack_low) if stacked else hvt)
            content_top = y0 + (n_tracks - 1) * py + hvt if n_tracks else prev_top
        stack.via_up_y.append(y_g)
        stack.track_y.append({net: y0 + k * py for net, (k, _l, _r) in channel_tracks.items()})
        stack.n_tracks.append(n_tracks)
        stack.pitch.append(py)
        if ch < len(infos):
            info = infos[ch]
            want_bottom = content_top + d.c_out
            if prev_top is not None and prev_ext is not None and info.ext is not None:
                # the gap the rules need between the two assemblies (placed at dy = 0)
                gap = abut.required_gap(tech, prev_ext, info.ext.moved(kdb.Trans(0, 0)), "y", 0,
                                        bridge=False)
                want_bottom = max(want_bottom, prev_top + gap - (info.ext.bbox.bottom - info.bottom))
            info.dy = tech.snap_up(want_bottom - info.bottom)
            prev_top = info.top + info.dy
            prev_ext = info.ext.moved(kdb.Trans(0, info.dy)) if info.ext is not None else None
    return stack
