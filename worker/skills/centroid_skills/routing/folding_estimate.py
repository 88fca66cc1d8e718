"""The estimate a row folding is chosen by (issue 26): the width and height of rows of
cells stacked with the channels the router would put between them — each channel's tracks at
its busiest x, its height as :func:`.stacking.stack_rows` stacks it, the trunk columns beside
(see :mod:`.device_folding`, which cuts the rows and compares the estimates)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from centroid_skills import abut
from centroid_skills.routing.dims import Dims


@dataclass(frozen=True)
class Item:
    """One cell of a foldable row: its size and its pins' nets (x from its left edge)."""

    name: str
    width: int
    height: int
    up: tuple[tuple[str, int], ...]  # nets of pins escaping up, with their x
    down: tuple[tuple[str, int], ...]  # nets of pins escaping down (not onto the rail)
    m1_up: bool  # a metal-1 pin escapes up


@dataclass
class Row:
    """A row as the estimate sees it: its cells (or, kept as given, its own nets)."""

    items: list[Item]
    width: int
    height: int
    rail: str | None
    up: list[tuple[str, int]] = field(default_factory=list)
    down: list[tuple[str, int]] = field(default_factory=list)
    m1_up: bool = False  # a metal-1 pin escapes up
    kind: str = ""  # the kind of its cells (``nmos``, ``pmos``; empty: a row kept as given)


def _demand(pins: list[tuple[str, int]], sides: dict[str, int], margin: int) -> int:
    """Tracks at the busiest x: each net from its leftmost to its rightmost pin, reaching its
    trunk's side (``sides``: the x of the trunk column of each net that leaves the channel,
    left or right of the rows, whichever is nearer the net's pins), and ``margin`` further
    either way (a track's end keeps its spacing from the next one's)."""
    spans: dict[str, list[int]] = {}
    for net, x in pins:
        lo, hi = spans.setdefault(net, [x, x])
        spans[net] = [min(lo, x), max(hi, x)]
    events: list[tuple[int, int]] = []
    for net, (lo, hi) in spans.items():
        if net in sides:
            lo, hi = min(lo, sides[net]), max(hi, sides[net])
        events += [(lo - margin, 1), (hi + margin + 1, -1)]
    most = now = 0
    for _x, step in sorted(events):
        now += step
        most = max(most, now)
    return most


def demands(rows: list[Row], d: Dims) -> tuple[int, set[str], list[int]]:
    """The rows' width, the nets in several channels or on a rail and several channels (their
    trunks or verticals) and each channel's tracks at its busiest x."""
    width = max(r.width for r in rows)
    channels: list[list[tuple[str, int]]] = [[] for _ in range(len(rows) + 1)]
    for ri, r in enumerate(rows):
        shift = (width - r.width) // 2
        channels[ri] += [(n, x + shift) for n, x in r.down]
        channels[ri + 1] += [(n, x + shift) for n, x in r.up]
    nets_in = [{n for n, _x in ch} for ch in channels]
    rails = {r.rail for r in rows if r.rail}
    spread = {n for n in set().union(*nets_in) if sum(n in s for s in nets_in) + (n in rails) > 1}
    xs: dict[str, list[int]] = {}
    for pins in channels:
        for net, x in pins:
            xs.setdefault(net, []).append(x)
    sides = {net: 0 if 2 * sum(xs[net]) < width * len(xs[net]) else width for net in spread}
    tracks = [_demand(pins, sides, d.px) for pins in channels]
    return width, spread, tracks


@dataclass(frozen=True)
class Assembly:
    """What the router adds to a row of one kind: below its cells (rail, via zone) and above
    them (n-well), and the rule gap one such assembly keeps from the next (measured once on
    a given row by the router's own :func:`.rows.add_rails`)."""

    below: int
    above: int
    ext: abut.Extents | None  # the assembly's extents (row coordinates)


def _channel(d: Dims, tracks: int, m1_up: bool, first: bool) -> int:
    """The height between a row's assembly and the next one's that a channel of ``tracks``
    takes (as :func:`.stacking.stack_rows` stacks it)."""
    if first:
        return (tracks - 1) * d.py + 2 * d.hvt + d.c_out if tracks else 0
    if m1_up and d.h_role == "metal1":  # a via row above the row
        low = d.c_out + 2 * d.hstack
        return low + d.c_out + 2 * d.hvt + (tracks - 1) * d.py + d.c_out if tracks else low + d.c_out
    foot = max(d.hvt, d.hstack, d.stack_low) if m1_up else d.hvt
    return d.c_out + foot + d.hvt + (tracks - 1) * d.py + d.c_out if tracks else 0


def estimate(rows: list[Row], d: Dims, gap_y: Callable[[Row, Row], int]) -> tuple[int, int, list[int]]:
    """Width and height of ``rows`` stacked with their channels (see the module)."""
    width, spread, tracks = demands(rows, d)
    height = 0
    for ch, count in enumerate(tracks):
        m1_up = ch > 0 and rows[ch - 1].m1_up
        between = _channel(d, count, m1_up, ch == 0)
        if 0 < ch < len(rows):
            between = max(between, gap_y(rows[ch - 1], rows[ch]))
        height += between + (rows[ch].height if ch < len(rows) else 0)
    # a trunk a stub pitch apart, a supply's (a rail net of several rows) a pitch wider; the
    # columns a pitch from the rows either side
    rails = [r.rail for r in rows if r.rail]
    supplies = {net for net in rails if rails.count(net) > 1}
    return width + (len(spread) + len(supplies) + 2) * d.px, height, tracks
