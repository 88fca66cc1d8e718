"""Wires as wide as their current needs (issue 26).

A net given a DC current (``route.nets`` ``nets[].current``, amperes: the most the net
carries through any one wire, from objectives ``constraints.net_currents``) has its wires
drawn at least ``current / max_current_density`` wide on each layer, the density (A per
metre of wire width) read from that layer of the rule set, snapped up to the grid and
never below the rule set's widths.  The widths are kept in :class:`.dims.Dims`
(``net_halves``) so every part of the router that draws a net's wire reads them there:
the rows' rails (metal 1, :mod:`.rails`), the trunks (metal 2,
:func:`.channel_plan.place_trunks`) and the tracks of the track layer (a wide track spans
several levels of its channel, with free levels beside it for the wide-metal spacing,
:mod:`.track_packing`; such a net takes no vertical and no metal-1 track).  The stubs
are as wide as their pin allows and the other nets' stubs beside them leave room
(:func:`.drawing.stub_sides`): a device's own pin sets what its terminal carries.  Where a
wide trunk meets its net's rail or
wide track, an array of cuts joins them (:func:`.drawing.draw_trunks`; the rule set gives no
current per cut, so as many as the junction holds).

A current on a net whose wires would lie on a layer without ``max_current_density``, or
that needs a width beyond the layer's largest width rule, is refused before anything is
drawn, with the net, the current, the layer and the width (the coordinator refuses the
same inputs at load, ``schemas/src/net_currents.rs``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from centroid_skills.errors import invalid
from centroid_skills.routing.dims import Dims
from centroid_skills.tech import Technology

NM_PER_M = 1e9
# the wires the router sizes today, by layer role (see the module docstring)
SIZED_WIRES = {"metal1": "rails (stubs within their pins)",
               "metal2": "trunks (stubs within their pins)"}
TRACKS = "tracks (levels of a channel joined into one wide track)"


def currents_of(nets: Any) -> dict[str, float]:
    """The ``current`` of each item of ``route.nets``' ``nets`` that gives one."""
    out: dict[str, float] = {}
    for n in nets or []:
        if isinstance(n, dict) and isinstance(n.get("name"), str) and n.get("current") is not None:
            out[n["name"]] = float(n["current"])
    return out


def wire_roles(tech: Technology, d: Dims) -> list[str]:
    """The layer roles the router draws wires on: metal 1 and 2, and the track layer."""
    roles = ["metal1", "metal2"]
    if d.h_role not in roles:
        roles.append(d.h_role)
    return roles


def needed_width(tech: Technology, role: str, net: str, amperes: float) -> int:
    """The width (nm, snapped up to the grid) a wire of ``net`` carrying ``amperes`` needs on
    ``role``; refused when the layer declares no density or the width is beyond its largest
    width."""
    ldef = tech.require(role, "a wire of a net given a current")
    density = ldef.max_current_density
    if not amperes > 0:
        raise invalid(f"net {net}: current {amperes} A must be greater than 0", net=net,
                      current=amperes, reason="net_current")
    if density is None:
        raise invalid(
            f"net \"{net}\" carries {amperes} A (objectives constraints.net_currents) and its "
            f"wires lie on layer \"{ldef.name}\" ({role}), which declares no current limit: add "
            "\"max_current_density\" (A per metre of wire width; 1 mA/µm = 1000 A/m) to that "
            "layer, from the process's electromigration rules",
            net=net, current=amperes, layer=ldef.name, reason="no_current_density")
    width = tech.snap_up(amperes / density * NM_PER_M)
    widest = tech.rule_max("width", role)
    if widest is not None and width > widest:
        raise invalid(
            f"net \"{net}\" carries {amperes} A: its wires on layer \"{ldef.name}\" ({role}, at "
            f"most {density} A/m) would be {width / 1000:.3f} µm wide, beyond the largest width "
            f"{widest / 1000:.3f} µm; give a smaller current",
            net=net, current=amperes, layer=ldef.name, width_um=width / 1000,
            reason="net_current_too_wide")
    return max(width, tech.width(role))


def with_net_currents(tech: Technology, d: Dims, currents: Mapping[str, float]) -> Dims:
    """``d`` with the least half width of every wire of the nets given a current, and the
    levels their tracks span (:func:`wide_track`)."""
    halves = []
    spaces = []
    wide = []
    for net in sorted(currents):
        for role in wire_roles(tech, d):
            width = needed_width(tech, role, net, currents[net])
            halves.append((net, role, tech.snap_up(width / 2)))
            spaces.append((net, role, tech.space_for_width(role, 2 * tech.snap_up(width / 2))))
            if role == d.h_role and width > 2 * d.hh:
                wide.append((net, *wide_track(tech, d, width)))
    return replace(d, net_halves=tuple(halves), net_spaces=tuple(spaces),
                   wide_tracks=tuple(wide))


def wide_track(tech: Technology, d: Dims, width: int) -> tuple[int, int, int]:
    """A track ``width`` wide on the track layer: the levels it spans (drawn from the lowest
    level's track bottom to the highest's top, a track pitch apart at least), the levels
    it keeps free below and above, and the spacing it keeps from the tracks beside it on its
    levels, so its neighbours keep the layer's spacing next to a wire that wide (the
    wide-metal spacing)."""
    levels = 1 + -(-(width - 2 * d.hh) // d.py)
    drawn = (levels - 1) * d.py + 2 * d.hh
    gap = d.py - 2 * d.hh  # between two tracks on neighbouring levels
    need = tech.space_for_width(d.h_role, drawn)
    guard = -(-(need - gap) // d.py) if need > gap else 0
    return levels, guard, need


def widest_wires(d: Dims) -> dict[str, int]:
    """role -> the widest wire (nm) a current asks for on it (for the wide-metal clearance)."""
    out: dict[str, int] = {}
    for _net, role, half in d.net_halves:
        out[role] = max(out.get(role, 0), 2 * half)
    return out


def current_report(tech: Technology, d: Dims, currents: Mapping[str, float],
                   drawn: Mapping[tuple[str, str], int]) -> list[dict[str, Any]]:
    """Per net and layer: the current, the width it needs, the widest wire of that kind drawn
    (``drawn``: (net, role) -> nm) and which wires were sized."""
    out = []
    for net, role, half in d.net_halves:
        ldef = tech.require(role)
        out.append({"net": net, "current_a": currents[net], "layer": ldef.name, "role": role,
                    "needed_um": 2 * half / 1000,
                    "drawn_um": drawn[(net, role)] / 1000 if (net, role) in drawn else None,
                    "wires": wires_of(d, role)})
    return out


def wires_of(d: Dims, role: str) -> str:
    """Which wires on ``role`` are sized for their current (the track layer's tracks; on a
    rule set without metal 3 the tracks are metal 1, as the rails)."""
    kinds = [SIZED_WIRES[role]] if role in SIZED_WIRES else []
    if role == d.h_role:
        kinds.append(TRACKS)
    return " and ".join(kinds) or "none sized (rule width)"
