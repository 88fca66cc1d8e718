"""What one routing call reports: per net (wire length, trunk, stubs, label), per channel
(tracks and their geometry), per matched module (whether every unit escapes each pin at
the same offset), and the session record of the routed top cell."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import klayout.db as kdb

from centroid_skills.routing.channel_plan import ChannelPlan
from centroid_skills.routing.channels import Stub
from centroid_skills.routing.dims import Dims
from centroid_skills.routing.drawing import LabelShapes, label_role
from centroid_skills.routing.rows import RowInfo
from centroid_skills.routing.stacking import Stack
from centroid_skills.session import CellRecord, Pin, Session, box_um, um
from centroid_skills.tech import Technology


@dataclass
class Result:
    cell: kdb.Cell
    nets: dict[str, dict[str, Any]] = field(default_factory=dict)
    channels: list[dict[str, Any]] = field(default_factory=list)
    trunks: int = 0
    verticals: int = 0
    modules: dict[str, dict[str, Any]] = field(default_factory=dict)
    partners: list[list[str]] = field(default_factory=list)
    clearance: int = 0  # c_out used (raised by wide-metal spacing where it applies)
    ports: list[tuple[str, kdb.Box]] = field(default_factory=list)  # a block's (net, pin box)
    # per net given a current and layer: the width needed and drawn (:mod:`.net_currents`)
    current_widths: list[dict[str, Any]] = field(default_factory=list)


def net_reports(tech: Technology, plan: ChannelPlan, wire: dict[str, int],
                labels: LabelShapes) -> dict[str, dict[str, Any]]:
    """Per net of the circuit (sorted): wire length, trunk position and half width, number
    of stubs, whether it has a single pin, and where its label is."""
    stubs_of: dict[str, int] = {}
    for lst in plan.stubs:
        for s in lst:
            stubs_of[s.net] = stubs_of.get(s.net, 0) + 1
    nets: dict[str, dict[str, Any]] = {}
    for net in sorted(set(plan.term_count) | set(plan.places)):
        trunk = net in plan.trunk_x
        label = labels.get(net)
        nets[net] = {"wire_um": um(wire.get(net, 0)), "trunk": trunk,
                     "trunk_x_um": um(plan.trunk_x[net]) if trunk else None,
                     "trunk_half_width_um": um(plan.trunk_hw[net]) if trunk else None,
                     "stubs": stubs_of.get(net, 0),
                     "verticals": sum(1 for v in plan.verticals if v.net == net),
                     "single_pin": net in plan.single_pin,
                     "label": None if label is None else {
                         "layer": tech.require(label_role(tech, label[0])).name,
                         "at_um": [um(label[1].center().x), um(label[1].center().y)]}}
    return nets


def channel_reports(d: Dims, plan: ChannelPlan, stack: Stack) -> list[dict[str, Any]]:
    """Per channel: its track count, nets, stubs, each net's track index and the absolute
    track geometry."""
    channels = []
    for ch, tracks in enumerate(plan.tracks):
        channels.append({
            "channel": ch, "tracks": stack.n_tracks[ch], "nets": sorted(tracks),
            "stubs": len(plan.stubs[ch]),
            "track_of": {net: k for net, (k, _l, _r) in tracks.items()},
            "pitch_um": um(stack.pitch[ch]) if ch < len(stack.pitch) else um(d.py),
            "tracks_um": {net: {"y": um(stack.track_y[ch][net]), "x": [um(left), um(right)],
                                "half_width": um(d.reach_of(low)[0]),
                                "layer": "metal1" if low else d.h_role}
                          for net, (_k, left, right) in sorted(tracks.items())
                          for low in [ch < len(plan.low) and net in plan.low[ch]]}})
    return channels


def module_reports(infos: list[RowInfo], stubs: list[list[Stub]]) -> dict[str, dict[str, Any]]:
    """The matching of the wiring: in a module every unit should escape each pin at the
    same offset in its own frame (from the left of a plain unit, from the right of a
    mirrored one), so every unit sees the same wires."""
    modules: dict[str, dict[str, Any]] = {}
    offsets: dict[str, dict[str, list[int]]] = {}
    for lst in stubs:
        for s in lst:
            if s.term.module is None or s.term.device is None:
                continue
            entry = modules.setdefault(s.term.module, {"stubs": 0})
            entry["stubs"] += 1
            x = s.x - infos[s.row].dx
            offset = s.term.block.right - x if s.term.mirrored else x - s.term.block.left
            offsets.setdefault(s.term.module, {}).setdefault(s.term.pin, []).append(offset)
    for module, entry in modules.items():
        offs = offsets[module]
        entry["escape_offset_spread_um"] = {p: um(max(v) - min(v)) for p, v in sorted(offs.items())}
        entry["uniform_escapes"] = all(max(v) == min(v) for v in offs.values())
    return modules


def record(session: Session, res: Result, rows: list[str], d: Dims,
           ports: list[str] | None = None) -> CellRecord:
    """Records the routed top cell in the session: a placement holding the rows' devices,
    or with ``ports`` a block (one metal-2 pin per port, named by its net)."""
    tech = session.need_tech()
    rec = CellRecord(name=res.cell.name, kind="placement" if ports is None else "block")
    for name in rows:
        child = session.cells.get(name)
        if child is not None:
            rec.device_area_nm2 += child.device_area_nm2
    rec.params = {"routed": True, "rows": rows, "track_layer": d.h_role,
                  "pitch_um": um(d.px), "track_pitch_um": um(d.py)}
    if ports is not None:
        rec.params["ports"] = list(ports)
        metal2 = tech.require("metal2").name
        rec.pins = [Pin(net, metal2, "metal2", box) for net, box in res.ports]
    session.cells[res.cell.name] = rec
    return rec


def result_dict(session: Session, res: Result, d: Dims) -> dict[str, Any]:
    """The result of ``route.nets``."""
    bbox = res.cell.bbox()
    return {
        "cell_name": res.cell.name,
        "bbox_um": box_um(bbox),
        "width_um": um(bbox.width()),
        "height_um": um(bbox.height()),
        "track_layer": d.h_role,
        "pitch_um": um(d.px),
        "track_pitch_um": um(d.py),
        "clearance_um": um(res.clearance or d.c_out),
        "channels": res.channels,
        "trunks": res.trunks,
        "verticals": res.verticals,
        "modules": res.modules,
        "partner_nets": res.partners,
        "nets": res.nets,
        "wire_um": round(sum(n["wire_um"] for n in res.nets.values()), 3),
        "ports": [{"net": net, "box_um": box_um(box)} for net, box in res.ports],
        "net_currents": res.current_widths,
    }
