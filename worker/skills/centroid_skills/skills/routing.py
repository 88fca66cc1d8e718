"""Routing skills: ``route.info`` (routing pitches for the planner) and ``route.nets``.

``route.nets`` stacks placed rows (cells from ``layout.place``, bottom to top) with
supply rails (tap strips on each MOS row's bulk net) and routing channels between
them, and connects every net of the flattened circuit (see
:mod:`centroid_skills.routing.router` for the structure).  Every net gets a text label
with its name on one of its shapes (``<metal>_label`` layer when the rule set has one,
else the metal layer).  With ``ports`` the routed cell is a block: one metal-2 pin per
port at its bottom edge (:mod:`centroid_skills.routing.ports`), no labels inside; a parent
places its instances (``layout.instantiate_block``) and routes them as ``type: block``
devices.  With ``pack_block_rows`` the rows holding only block instances (and passive devices)
are packed again by their real sizes before routing (:mod:`centroid_skills.routing.block_packing`):
the planner's rows of blocks are a preference, kept unless a packing is smaller; packed
shelves whose other order puts fewer nets in the channels are routed in both orders, the
smaller cell kept (:mod:`centroid_skills.routing.shelf_order`).  With
``fold_device_rows`` the rows of each MOS kind are cut again into as many rows as give the
smallest estimated cell (:mod:`centroid_skills.routing.device_folding`): the planner leaves
the count open, the given rows are kept unless a folding is smaller.
"""

from __future__ import annotations

from typing import Any

from centroid_skills.errors import invalid
from centroid_skills.registry import NAME, obj, skill
from centroid_skills.routing.block_packing import packed_rows
from centroid_skills.routing.block_reshaping import reshaped_rows
from centroid_skills.routing.device_folding import folded_rows
from centroid_skills.routing.dims import routing_dims
from centroid_skills.routing.net_currents import currents_of
from centroid_skills.routing.report import record, result_dict
from centroid_skills.routing.router import route
from centroid_skills.routing.shelf_order import smallest_route
from centroid_skills.session import Session, um
from centroid_skills.skills.blocks import instantiate_block
from centroid_skills.skills.devices import create_device
from centroid_skills.skills.placement import DEVICE_ITEM, place


@skill("route.info",
       "Routing dimensions of the loaded rule set (µm): stub pitch (use it as the extra gap "
       "between cells of a row for layout.place), track pitch, track layer, clearance.",
       obj({}))
def info(session: Session, args: dict[str, Any]) -> dict[str, Any]:
    d = routing_dims(session.need_tech())
    return {"pitch_um": um(d.px), "track_pitch_um": um(d.py), "track_layer": d.h_role,
            "track_via": d.h_via, "clearance_um": um(d.c_out),
            "row_gap_um": um(d.px),
            # what route.nets accepts, for planners
            "accepts": {"row_cells": "one row of cells per row cell (layout.place with one row)",
                        "guard_rings": False, "two_row_modules": False,
                        "mixed_nmos_pmos_rows": False, "pin_roles": ["metal1", "metal2"],
                        # issue 26: ports, layout.instantiate_block, devices of type block
                        # (rows of blocks, or blocks beside a row's own devices)
                        "blocks": True, "mixed_block_mos_rows": True}}


@skill("route.nets",
       "Stack placed rows (bottom to top) with supply rails (substrate/well taps on each MOS "
       "row's bulk net) and routing channels, and route every net of the flattened circuit "
       "(metal1/metal2 stubs, metal3 or metal1 tracks, metal2 trunks), with a name label per "
       "net. Returns the new top cell, per-net wire length and label, channels.",
       obj({"cell_name": NAME,
            "rows": {"type": "array", "minItems": 1, "items": NAME,
                     "description": "row cells (e.g. from layout.place), bottom to top"},
            "devices": {"type": "array", "minItems": 1, "items": DEVICE_ITEM,
                        "description": "flattened circuit devices (id, type, terminals)"},
            "nets": {"type": "array",
                     "items": {"type": "object",
                               "properties": {
                                   "name": {"type": "string", "minLength": 1},
                                   "net_type": {"type": "string"},
                                   "current": {"type": "number", "exclusiveMinimum": 0,
                                               "description": "DC amperes the net carries "
                                                              "through any one wire: its rails "
                                                              "and trunks are drawn at least "
                                                              "current / max_current_density "
                                                              "(of their layer) wide"}}},
                     "description": "flattened nets ({name, net_type, current}); supply nets "
                                    "first in the trunk column"},
            "balance_partners": {"type": "boolean", "default": True,
                                 "description": "give the partner nets of a matched pair (same "
                                                "terminal of both devices) tracks of equal span"},
            "short_nets": {"type": "array", "uniqueItems": True, "maxItems": 1000,
                           "items": {"type": "string", "minLength": 1, "maxLength": 200},
                           "description": "nets kept short (sensitive nets: an amplifier's "
                                          "output): no partner balancing stretches their tracks "
                                          "and their trunks take the columns nearest the rows "
                                          "after the supplies"},
            "ports": {"type": "array", "minItems": 1, "uniqueItems": True,
                      "items": {"type": "string", "minLength": 1, "maxLength": 200},
                      "description": "nets of the routed cell that become its ports: the cell "
                                     "is a block (layout.instantiate_block), each port a metal-2 "
                                     "pin at its bottom edge; no net labels inside a block"},
            "pack_block_rows": obj({"gap": {"type": "number", "minimum": 0, "default": 0,
                                            "description": "extra gap between blocks in µm, "
                                                           "as layout.place's row gap"},
                                    "whole_rows": {"type": "array",
                                                   "items": {"type": "array", "minItems": 1,
                                                             "items": {"type": "string",
                                                                       "minLength": 1}},
                                                   "description": "groups of rows (names "
                                                                  "among rows) never taken "
                                                                  "apart: each group's rows "
                                                                  "stay one above the other, "
                                                                  "at one x (a matched "
                                                                  "module's interleaved "
                                                                  "instances)"},
                                    "rank": {"type": "integer", "minimum": 0, "default": 0,
                                             "maximum": 1000,
                                             "description": "which of the distinct packings "
                                                            "weighed: 0 the smallest estimate "
                                                            "(or the given rows), 1 the next "
                                                            "smallest, …; past the last, the "
                                                            "last"}},
                                   description="pack the rows holding only block instances "
                                               "and passive devices again by their real sizes (tallest first, "
                                               "the width of the smallest bounding box); the "
                                               "given rows are kept unless a packing is "
                                               "smaller; the result's rows name the rows "
                                               "routed"),
            "fold_device_rows": obj({"gap": {"type": "number", "minimum": 0, "default": 0,
                                             "description": "extra gap between cells in µm, "
                                                            "as layout.place's row gap"}},
                                    description="cut the consecutive rows of each MOS kind (one "
                                                "bulk net) again into as many rows, in the "
                                                "given order, as give the smallest estimated "
                                                "cell (the tracks its channels need counted); "
                                                "the given rows are kept unless a folding is "
                                                "smaller; the result's rows name the rows "
                                                "routed")},
           ["cell_name", "rows", "devices"]))
def nets(session: Session, args: dict[str, Any]) -> dict[str, Any]:
    net_types = {}
    for n in args.get("nets") or []:
        if isinstance(n, dict) and isinstance(n.get("name"), str):
            net_types[n["name"]] = str(n.get("net_type") or n.get("type") or "signal")
    currents = currents_of(args.get("nets"))
    tech = session.need_tech()
    layout = session.layout
    ports = args.get("ports")
    if ports is not None:
        _check_ports(ports, args["devices"])
    before = {c.cell_index() for c in layout.each_cell()}
    d = routing_dims(tech)
    rows: list[str] = list(args["rows"])
    replaced: list[str] = []
    other: list[str] | None = None
    try:
        fold = args.get("fold_device_rows")
        if fold is not None:
            by_id = {dev["id"]: dev for dev in args["devices"]}
            rows, replaced = folded_rows(session, rows, by_id, d, args["cell_name"], place,
                                         float(fold.get("gap", 0)))
        pack = args.get("pack_block_rows")
        if pack is not None:
            skills = {"place": place, "route": nets, "create_device": create_device,
                      "instantiate_block": instantiate_block}
            rows, reshaped = reshaped_rows(session, rows, d, args["cell_name"], skills,
                                           float(pack.get("gap", 0)), pack.get("whole_rows"))
            replaced += reshaped
            rows, packed, other = packed_rows(session, rows, d, args["cell_name"], place,
                                              float(pack.get("gap", 0)), pack.get("whole_rows"),
                                              int(pack.get("rank", 0)), args["devices"],
                                              ports is not None)
            replaced += packed

        def route_rows(order: list[str]) -> Any:
            return route(session, order, args["devices"], net_types, args["cell_name"],
                         bool(args.get("balance_partners", True)), ports or (),
                         short_nets=args.get("short_nets") or (), currents=currents)

        res, rows = smallest_route(session, [rows] if other is None else [rows, other], route_rows)
    except Exception:
        # leave the session as it was: drop the top, rail and packed row cells made before
        # the failure
        for ci in sorted({c.cell_index() for c in layout.each_cell()} - before, reverse=True):
            if layout.is_valid_cell_index(ci):
                session.cells.pop(layout.cell(ci).name, None)
                layout.delete_cell(ci)
        raise
    for name in replaced:  # the planner's rows, folded or packed again: no longer placed
        session.cells.pop(name, None)
        layout.delete_cell(layout.cell(name).cell_index())
    rec = record(session, res, rows, d, ports)
    if ports is not None:  # a block: how to route it again (its rows as routed)
        rec.params["route_args"] = {k: v for k, v in args.items()
                                    if k not in ("fold_device_rows", "pack_block_rows")} | {"rows": rows}
    out = result_dict(session, res, d)
    out["rows"] = rows
    return out


def _check_ports(ports: list[str], devices: list[dict[str, Any]]) -> None:
    """Every port is a net some device of the cell touches (a terminal on it)."""
    touched = {net for dev in devices for net in (dev.get("terminals") or {}).values()}
    untouched = [p for p in ports if p not in touched]
    if untouched:
        raise invalid(f"port {untouched[0]} is not a net of any device of the cell: a port "
                      "must be touched by a device terminal", ports=untouched,
                      reason="port_not_touched")
