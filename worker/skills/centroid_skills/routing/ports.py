"""The ports of a routed block: one metal-2 pin per port net, reaching the routed cell's
bottom edge, so that a parent router escapes it down into the channel below the block's
row like any down-going metal-2 pin.

A port on the bottom row's rail net with no other place (its pins drop onto that rail) is a
metal-2 pin straight up through channel 0 to a via-1 on the rail (:func:`place_rail_ports`).
A port on the rail net of row 1 (and of no other row) reaches that rail over row 0 on a
vertical (:mod:`.verticals`): a tap stub comes down from the rail into channel 1, like a pin
of row 1, with a via-1 on the rail (:func:`tap_stubs`).
A port whose net has no stub in channel 0 (its pins go up into higher channels, or drop
onto a rail) is otherwise the foot of its net's trunk: the trunk column goes on down to the cell's
bottom edge, so the net needs no track in channel 0 (:func:`column_ports`).  The other
ports are a virtual row of pins below channel 0: each is a stub going *up* into channel
0, so the channel planning spaces them one pitch apart (among themselves and against the
stubs coming down from row 0) and gives their nets tracks there.  A port may stand
anywhere under the rows' width; it prefers the mean x of its net's other stubs in channel
0, so its track stays short.  Once channel 0 is stacked, each port is a metal-2 bar from
the cell's lowest point (below every track, via pad and trunk end of channel 0) up to its
track, where the channel's track via joins it, or up to its trunk
(:func:`.drawing.draw_ports`).
"""

from __future__ import annotations

from collections.abc import Sequence

import klayout.db as kdb

from centroid_skills.routing.channels import Stub, clear_x, coming_down_x
from centroid_skills.routing.dims import Dims
from centroid_skills.routing.rows import RowInfo
from centroid_skills.routing.terminals import Term
from centroid_skills.routing.verticals import Vertical
from centroid_skills.tech import Technology


def column_ports(ports: Sequence[str], stubs: list[list[Stub]], infos: list[RowInfo]) -> list[str]:
    """The ports drawn as the foot of their net's trunk: nets with no stub of a device in
    channel 0 (``stubs``: the devices' stubs) but some in another channel or a rail."""
    in_ch0 = {s.net for s in stubs[0] if s.kind != "rail"} if stubs else set()
    elsewhere = {s.net for lst in stubs[1:] for s in lst if s.kind != "rail"}
    elsewhere |= {i.rail_net for i in infos if i.rail is not None and i.rail_net is not None}
    return [p for p in ports if p not in in_ch0 and p in elsewhere]


def port_stubs(tech: Technology, d: Dims, infos: list[RowInfo], ports: Sequence[str],
               stubs: list[list[Stub]], room: int = 0) -> list[Stub]:
    """One up-going stub into channel 0 per port, free to stand anywhere under the rows
    (their via pads kept inside the rows' extent, so clear of the trunk columns), or a
    little wider when the rows are too narrow for every port, and ``room`` further on
    either side (when they cannot stand among row 0's stubs)."""
    if not ports:
        return []
    pad = max(d.hp1, d.hp2, d.hp2h)
    left = min(i.ext.bbox.left + i.dx for i in infos if i.ext is not None) + pad
    right = max(i.ext.bbox.right + i.dx for i in infos if i.ext is not None) - pad
    # a narrow block: room for every port and every stub of channel 0 a pitch apart,
    # beyond the rows if need be (the trunk columns then move out, :func:`.channel_plan.place_trunks`)
    need = (len(ports) + sum(1 for s in stubs[0] if s.kind != "rail")) * d.px
    widen = max(0, need - (right - left)) / 2 + room
    lo, hi = tech.snap_down(left - widen), tech.snap_up(right + widen)
    xs_ch0: dict[str, list[int]] = {}
    xs_all: dict[str, list[int]] = {}
    for ch, lst in enumerate(stubs):
        for s in lst:
            if s.kind != "rail":
                xs_all.setdefault(s.net, []).append(s.pref)
                if ch == 0:
                    xs_ch0.setdefault(s.net, []).append(s.pref)
    out = []
    for net in ports:
        xs = xs_ch0.get(net) or xs_all.get(net) or [(lo + hi) // 2]
        pref = min(max(tech.snap(sum(xs) / len(xs)), lo), hi)
        term = Term("", net, "metal2", kdb.Box(lo, 0, hi, 0), kdb.Box(lo, 0, hi, 0), None,
                    net=net, port=True)
        out.append(Stub(net, term, 0, "up", lo, hi, pref))
    return out


def rail_ports(column_nets: Sequence[str], places: dict[str, set[tuple[str, int]]],
               infos: list[RowInfo]) -> list[str]:
    """The column ports on the bottom row's rail net that are nowhere else: each can go
    straight up to that rail instead of down a trunk column."""
    if not infos or infos[0].rail is None:
        return []
    return [p for p in column_nets
            if p == infos[0].rail_net and places.get(p) == {("port", 0), ("rail", 0)}]


def place_rail_ports(d: Dims, tech: Technology, infos: list[RowInfo], stubs: list[list[Stub]],
                     nets: Sequence[str]) -> list[str]:
    """Fixes the port stub of each of ``nets`` (:func:`rail_ports`) over the bottom row's
    rail, a pitch from every other stub standing in channel 0 (those coming down, and the
    ports already fixed), as a ``through`` stub; returns the nets for which the rail had no
    room."""
    if not nets:
        return []
    rail = infos[0].rail
    assert rail is not None
    lo, hi = rail.metal.left + infos[0].dx + d.hp1, rail.metal.right + infos[0].dx - d.hp1
    taken = [x for x, _n in coming_down_x(stubs[0], d, tech)]
    taken += [s.pref for s in stubs[0] if s.through]
    missed = []
    for s in stubs[0]:
        if not s.term.port or s.net not in nets:
            continue
        x = clear_x(tech.snap((lo + hi) / 2), taken, d.px)
        if x > hi:
            x = clear_x(tech.snap_up(lo), taken, d.px)
        if x > hi:
            missed.append(s.net)
            continue
        s.lo = s.hi = s.pref = s.x = x
        s.through = True
        taken.append(x)
    return missed


def tap_ports(ports: Sequence[str], places: dict[str, set[tuple[str, int]]],
              infos: list[RowInfo]) -> dict[str, int]:
    """The ports on the rail net of exactly one row, row 1, with the row: each may reach its
    rail through a tap stub in channel 1 and a vertical over row 0 (not over several rows:
    a net passing through a channel on verticals blocks its x there for every other track)."""
    out: dict[str, int] = {}
    for p in ports:
        rails = [i for i, info in enumerate(infos)
                 if info.rail is not None and info.rail_net == p]
        if rails == [1] and ("rail", 1) in places.get(p, set()):
            out[p] = 1
    return out


def tap_stubs(tech: Technology, d: Dims, infos: list[RowInfo], taps: dict[str, int]
              ) -> list[tuple[int, Stub]]:
    """One stub per tapped net (:func:`tap_ports`) coming down from its row's rail into the
    channel under that row: a metal-2 bar from a via-1 on the rail, anywhere along the
    rail, preferably at its middle; as (channel, stub)."""
    out = []
    for net, row in sorted(taps.items()):
        info = infos[row]
        assert info.rail is not None
        metal = info.rail.metal.moved(kdb.Vector(0, info.rail_dy))
        cy = metal.center().y
        box = kdb.Box(metal.left, cy, metal.right, cy)
        term = Term("", net, "metal2", box, box, None, net=net, tap=True)
        lo = tech.snap_up(metal.left + info.dx + max(d.hp1, d.hp2))
        hi = tech.snap_down(metal.right + info.dx - max(d.hp1, d.hp2))
        pref = tech.snap(min(max((metal.left + metal.right) // 2 + info.dx, lo), hi))
        out.append((row, Stub(net, term, row, "down", lo, hi, pref)))
    return out


def tap_over_verticals(stubs: list[list[Stub]], verticals: Sequence[Vertical]) -> None:
    """Each tap stub prefers the x of its net's vertical arriving in its channel (within the
    rail), so the net's track there shrinks to a point and crosses no other stub."""
    at = {(v.net, v.ch + 1): v.x for v in verticals}
    for ch, lst in enumerate(stubs):
        for s in lst:
            x = at.get((s.net, ch))
            if s.term.tap and x is not None:
                s.pref = min(max(x, s.lo), s.hi)
