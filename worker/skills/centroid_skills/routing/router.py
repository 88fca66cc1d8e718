"""Row-based channel router: supply rails, pin escapes, tracks in channels, trunks.

Input: placed rows (cells made by ``layout.place``, bottom to top), the flattened
devices of the circuit (terminal -> net).  Output: one new top cell with the rows,
their supply rails and every net routed.

Structure, bottom to top, for every row ``r`` (all coordinates rule-derived):

* **channel r**: horizontal tracks (metal3 when the rule set has via2 + metal3, else
  metal1), one net per track segment (left-edge packing, :mod:`.track_packing`); with
  metal3, a level also holds a metal1 track beside it (via1 from the metal2 stubs);
* **rail r** (MOS rows only): a tap strip with a metal-1 rail (substrate tap under
  nmos rows, well tap in an nwell drawn over the whole pmos row), on the row's bulk
  net, so every device's bulk terminal reaches its supply through the tap;
* **via zone**: between the rail and the devices, where metal-1 pins going down get
  their via-1;
* **row r** itself (devices and modules, untouched).

Pins escape straight out of their device: pins in the upper half of their device
(gate straps, dummy ties) go up into the channel above the row, the others (source
bus, drain bus, resistor and capacitor terminals) go down into the channel below.
A metal-1 pin gets a metal-1 bar to a via-1 outside the row, then a metal-2 stub to
its net's track (via2 or via1); a metal-2 pin is a metal-2 stub.  Source pins on the
row's rail net drop straight onto the rail with a metal-1 bar.  Stubs in one channel
keep one pitch apart (x chosen as close to the pin centre as possible, so a
symmetric placement gives a symmetric routing).  Nets present in several channels or
rails are joined by vertical metal-2 trunks in a column left or right of the rows
(whichever is nearer the net's pins); nets without a rail, where the track layer is free
over the rows between their channels, by verticals of the track layer straight over those
rows instead (:mod:`.verticals`).

Every shape outside a row keeps ``c_out`` (the largest spacing any routing layer has
to any layer) from the row's bbox; the bars inside a row stay within their pin's
extent, so they keep the device's own spacing.  Channel heights are the larger of
the routing need and the rule-derived gap between the neighbouring rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from centroid_skills.routing.channel_plan import ChannelPlan, partner_nets
from centroid_skills.routing.dims import Dims, routing_dims
from centroid_skills.routing.net_currents import current_report, with_net_currents
from centroid_skills.routing.plan_choice import planned_route
from centroid_skills.routing.report import (
    Result,
    channel_reports,
    module_reports,
    net_reports,
)
from centroid_skills.routing.row_pairs import turn_block_rows
from centroid_skills.routing.rows import (
    ExtentsCache,
    RowInfo,
    add_rails,
    collect_rows,
    with_wide_clearance,
)
from centroid_skills.routing.stacking import Stack
from centroid_skills.routing.verticals import row_gaps
from centroid_skills.session import Session


def route(session: Session, rows: list[str], devices: list[dict[str, Any]],
          net_types: dict[str, str], cell_name: str, balance_partners: bool = True,
          ports: Sequence[str] = (), short_nets: Sequence[str] = (),
          currents: Mapping[str, float] | None = None) -> Result:
    """Stacks ``rows`` (bottom to top) with rails and channels into a new top cell
    ``cell_name`` and routes every net of ``devices``; ``net_types`` (net -> power,
    ground, ...) puts supply trunks first in their column; ``balance_partners`` gives the
    partner nets of matched pairs tracks of equal span.  With ``ports`` the cell is a
    block: one metal-2 pin per port net at its bottom edge (:mod:`.ports`) and no net
    labels (a block's nets are named by its parent's labels only, so the flattened
    instances of one block are never joined by name).  ``short_nets`` (a per-net choice)
    are kept short: left out of partner balancing, their trunks nearest the rows.
    ``currents`` (net -> DC amperes) widen the rails and trunks of those nets to the width
    their current needs on each layer (:mod:`.net_currents`).

    Steps: collect the rows' pins and nets (:mod:`.rows`), turn rows of blocks upside down
    in pairs so two share a channel (:mod:`.row_pairs`), raise the clearance for wide
    metal, draw the rails and measure the rows, plan stubs, trunks and tracks of every
    channel (:mod:`.channel_plan`), stack channels and rows (:mod:`.stacking`), draw
    (:mod:`.drawing`) -- a top cell that joins nets by verticals also with trunks only,
    the smaller kept (:mod:`.plan_choice`) -- and report (:mod:`.report`)."""
    tech = session.need_tech()
    layout = session.layout
    by_id = {dev["id"]: dev for dev in devices}
    infos = collect_rows(session, rows, by_id)
    turn_block_rows(session, infos, by_id, bool(ports))
    top = session.new_cell(cell_name)
    cache: ExtentsCache = {}
    currents = dict(currents or {})
    d = with_net_currents(tech, routing_dims(tech), currents)
    d = with_wide_clearance(tech, layout, d, infos, cache)
    add_rails(session, infos, d, cell_name, cache)
    short = set(short_nets)
    partners = [p for p in partner_nets(infos, by_id, balance_partners) if not short & set(p)]
    gaps = row_gaps(tech, layout, d, infos)
    plan, stack, drawn = planned_route(tech, layout, top, d, infos, net_types, partners, ports,
                                       gaps, short)

    return Result(top, nets=net_reports(tech, plan, drawn.wire, drawn.labels),
                  channels=channel_reports(d, plan, stack), trunks=len(plan.trunk_x),
                  verticals=len(plan.verticals),
                  modules=module_reports(infos, plan.stubs),
                  partners=[list(p) for p in partners], clearance=d.c_out, ports=drawn.ports,
                  current_widths=current_report(tech, d, currents,
                                                _drawn_widths(d, infos, plan, stack)))


def _drawn_widths(d: Dims, infos: list[RowInfo], plan: ChannelPlan, stack: Stack
                  ) -> dict[tuple[str, str], int]:
    """(net, role) -> the narrowest rail (metal 1), the trunk (metal 2) and the narrowest
    track of the track layer of each net."""
    out: dict[tuple[str, str], int] = {}
    for ch, tracks in enumerate(plan.tracks):
        for net in tracks:
            if ch < len(plan.low) and net in plan.low[ch]:
                continue
            width = (d.track_levels(net)[0] - 1) * stack.pitch[ch] + 2 * d.hh
            key = (net, d.h_role)
            out[key] = min(out.get(key, width), width)
    for info in infos:
        if info.rail is not None and info.rail_net is not None:
            key = (info.rail_net, "metal1")
            out[key] = min(out.get(key, info.rail.metal.height()), info.rail.metal.height())
    for net, hw in plan.trunk_hw.items():
        out[(net, "metal2")] = 2 * hw
    return out
