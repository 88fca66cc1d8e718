"""The ports of a routed block: one metal-2 pin per port net, reaching the routed cell's
bottom edge, so that a parent router escapes it down into the channel below the block's
row like any down-going metal-2 pin.

The ports are a virtual row of pins below channel 0: each port is a stub going *up*
into channel 0, so the channel planning spaces them one pitch apart (among themselves
and against the stubs coming down from row 0) and gives their nets tracks there.  A
port may stand anywhere under the rows' width; it prefers the mean x of its net's other
stubs in channel 0 (else of all its stubs), so its track stays short.  Once channel 0 is
stacked, each port is a metal-2 bar from the cell's lowest point (below every track, via
pad and trunk end of channel 0) up to its track, where the channel's track via joins it
(:func:`.drawing.draw_ports`).
"""

from __future__ import annotations

from collections.abc import Sequence

import klayout.db as kdb

from centroid_skills.routing.channels import Stub
from centroid_skills.routing.dims import Dims
from centroid_skills.routing.rows import RowInfo
from centroid_skills.routing.terminals import Term
from centroid_skills.tech import Technology


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
