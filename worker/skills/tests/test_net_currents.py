"""Issue 26: a net given a DC current (objectives ``constraints.net_currents``) has its rails,
trunks and tracks drawn at least ``current / max_current_density`` wide (the density from the rule
set's layer); the other nets keep their widths; the layout stays DRC clean and LVS matches.
The Rust planner drafts the candidate (``centroid plan``: it carries the current into
``route.nets``); the widths are read from the layout the skills drew."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import klayout.db as kdb
import pytest
from rust_plans import (
    PlanRequest,
    check_clean,
    draft,
    example_netlist,
    example_objectives,
    rule_set,
    run_plan,
    sized_for,
)

from centroid_skills.server import Server
from centroid_skills.tech import Technology

EXAMPLE = "miller_ota"
NET = "vdd"  # a supply: its rails and trunk
SIGNAL = "out"  # any net may carry a current: the output's tracks
AMPERES = 1e-3


def process(pdk: str) -> dict[str, Any]:
    """The rule set; the IHP SG13G2 and GF180 example rule sets declare no densities, so the
    test gives their routing metals one (a value for the mechanism, not the process's figure;
    GF180 has no metal 3: its tracks are metal 1, as its rails)."""
    rules = copy.deepcopy(rule_set(pdk))
    for spec in rules["layers"].values():
        if isinstance(spec, dict) and spec.get("role") in ("metal1", "metal2", "metal3"):
            spec.setdefault("max_current_density", 500.0)
    return rules


def request(rules: dict[str, Any], currents: dict[str, float]) -> PlanRequest:
    objectives = copy.deepcopy(example_objectives(EXAMPLE))
    if currents:  # an objectives 1.1.0 field
        objectives.setdefault("constraints", {})["net_currents"] = currents
        objectives["schema_version"] = "1.1.0"
    netlist = sized_for(example_netlist(EXAMPLE), rules)
    return PlanRequest.of(netlist, rules, objectives)


def routed(rules: dict[str, Any], currents: dict[str, float], scratch: Path
           ) -> tuple[Server, dict[str, Any]]:
    server = Server()
    result = run_plan(draft(request(rules, currents)).candidates[0].steps, scratch, server=server)
    check_clean(result)
    return server, result


def rail_heights(server: Server, top: str) -> dict[str, list[int]]:
    """The metal-1 rails' heights (nm) per kind: ``well`` (an n-well in the rail cell: the
    pmos rows' rail, on vdd) and ``substrate``, read from the layout."""
    session = server.session
    tech = session.tech
    assert tech is not None
    layout = session.layout
    m1 = tech.role_index(layout, "metal1")
    nwell = tech.role_index(layout, "nwell")
    out: dict[str, list[int]] = {"well": [], "substrate": []}
    for cell in layout.each_cell():
        if not cell.name.startswith(f"{top}_rail"):
            continue
        kind = "well" if not cell.shapes(nwell).is_empty() else "substrate"
        out[kind] += [shape.bbox().height() for shape in cell.shapes(m1).each()]
    return out


def trunk_width(server: Server, result: dict[str, Any], net: str) -> int:
    """The width (nm) of the metal-2 trunk of ``net``, read from the top cell at the trunk's x."""
    session = server.session
    tech = session.tech
    assert tech is not None
    layout = session.layout
    top = layout.cell(result["cell"])
    x = round(result["results"]["route.nets"]["nets"][net]["trunk_x_um"] * 1000)
    region = kdb.Region(top.begin_shapes_rec(tech.role_index(layout, "metal2"))).merged()
    widths = [p.bbox().width() for p in region.each()
              if p.bbox().left <= x <= p.bbox().right and p.bbox().height() > p.bbox().width()]
    assert widths, f"no metal-2 trunk of {net} at x={x}"
    return max(widths)


def track_heights(server: Server, result: dict[str, Any], net: str, role: str) -> list[int]:
    """The height (nm) of every track of ``net`` on the track layer, read from the top
    cell's merged shapes of that layer: the piece a thin vertical cut through the track's
    span (at its ends and middle, the narrowest) holds at the track's y."""
    session = server.session
    tech = session.tech
    assert tech is not None
    layout = session.layout
    top = layout.cell(result["cell"])
    region = kdb.Region(top.shapes(tech.role_index(layout, role))).merged()
    g = tech.grid_nm
    out = []
    for channel in result["results"]["route.nets"]["channels"]:
        track = channel["tracks_um"].get(net)
        if track is None or track["layer"] != role:
            continue
        y = round(track["y"] * 1000)
        left, right = (round(v * 1000) for v in track["x"])
        heights = []
        for x in (left, (left + right) // 2 // g * g, right - g):
            cut = region & kdb.Region(kdb.Box(x, y - 10**6, x + g, y + 10**6))
            piece = [p.bbox() for p in cut.each() if p.bbox().bottom <= y <= p.bbox().top]
            assert piece, f"no {role} at ({x}, {y}) for {net}'s track"
            heights.append(piece[0].height())
        out.append(min(heights))
    return out


def trunk_cuts(server: Server, result: dict[str, Any], net: str, role: str = "via1") -> int:
    """The cuts of ``role`` (via 1: where the trunk meets its rails and metal-1 tracks; the
    track via: its tracks) of the top cell inside ``net``'s trunk column, read from the
    layout."""
    session = server.session
    tech = session.tech
    assert tech is not None
    layout = session.layout
    top = layout.cell(result["cell"])
    info = result["results"]["route.nets"]["nets"][net]
    x, hw = (round(info[k] * 1000) for k in ("trunk_x_um", "trunk_half_width_um"))
    cuts = kdb.Region(top.shapes(tech.role_index(layout, role)))
    return sum(1 for c in cuts.each() if x - hw <= c.bbox().center().x <= x + hw)


@pytest.mark.parametrize("pdk", ["sky130", "ihp_sg13g2", "gf180mcu"])
def test_rails_and_trunks_as_wide_as_the_current(pdk: str, tmp_path: Path) -> None:
    rules = process(pdk)
    tech = Technology.from_rules(rules)
    plain_server, plain = routed(rules, {}, tmp_path / "plain")
    wide_server, wide = routed(rules, {NET: AMPERES, SIGNAL: AMPERES}, tmp_path / "wide")

    grid = tech.grid_nm
    rail_need = AMPERES / tech.require("metal1").max_current_density * 1e9  # type: ignore[operator]
    trunk_need = AMPERES / tech.require("metal2").max_current_density * 1e9  # type: ignore[operator]
    before = rail_heights(plain_server, plain["cell"])
    after = rail_heights(wide_server, wide["cell"])
    assert after["well"] and all(h >= rail_need - grid for h in after["well"]), (after, rail_need)
    assert max(before["well"]) < rail_need  # the current made them wider
    assert sorted(set(after["substrate"])) == sorted(set(before["substrate"]))  # vss unchanged
    assert trunk_width(wide_server, wide, NET) >= trunk_need - grid
    assert trunk_width(plain_server, plain, NET) < trunk_need
    # where the wide trunk meets a wide rail: an array of via-1 cuts, not one
    assert trunk_cuts(wide_server, wide, NET) >= trunk_cuts(plain_server, plain, NET) + 2
    # the other nets' trunks keep their widths
    for net, info in plain["results"]["route.nets"]["nets"].items():
        if net not in (NET, SIGNAL) and info["trunk"] and \
                wide["results"]["route.nets"]["nets"][net]["trunk"]:
            assert wide["results"]["route.nets"]["nets"][net]["trunk_half_width_um"] == \
                info["trunk_half_width_um"], net
    report = {(r["net"], r["role"]): r for r in wide["results"]["route.nets"]["net_currents"]}
    assert report[(NET, "metal1")]["drawn_um"] * 1000 >= rail_need - grid
    # a track of the track layer: as wide as the current needs, wherever the net has one
    track_role = wide["results"]["route.nets"]["track_layer"]
    track_need = AMPERES / tech.require(track_role).max_current_density * 1e9  # type: ignore[operator]
    tracks = track_heights(wide_server, wide, SIGNAL, track_role)
    assert tracks and all(h >= track_need - grid for h in tracks), (tracks, track_need)
    assert min(track_heights(plain_server, plain, SIGNAL, track_role)) < track_need
    assert report[(SIGNAL, track_role)]["drawn_um"] * 1000 >= track_need - grid
    # out takes a trunk (no vertical: a track's width); its wide tracks meet it with arrays
    assert wide["results"]["route.nets"]["nets"][SIGNAL]["verticals"] == 0
    track_via = "via2" if track_role == "metal3" else "via1"
    assert trunk_cuts(wide_server, wide, SIGNAL, track_via) >= 2 * len(tracks)
    # the other nets' tracks keep the rule width (a cut may meet a vertical: the narrowest)
    for net in ("n1", "n2"):
        assert min(track_heights(wide_server, wide, net, track_role)) == \
            min(track_heights(plain_server, plain, net, track_role)), net
    assert plain["results"]["route.nets"]["net_currents"] == []


def test_layer_without_density_refused(tmp_path: Path) -> None:
    """A current on a net whose wires lie on a layer without a density: refused by route.nets
    with the layer, the net and what to add."""
    rules = rule_set("sky130")
    steps = draft(request(rules, {NET: AMPERES})).candidates[0].steps
    bare = copy.deepcopy(rules)
    for spec in bare["layers"].values():
        if isinstance(spec, dict):
            spec.pop("max_current_density", None)

    def without_density(step: dict[str, Any]) -> dict[str, Any]:
        if step["skill"] == "tech.load":
            step["arguments"]["rules"] = bare
        return step

    result = run_plan(steps, tmp_path, edit=without_density)
    assert not result["ok"]
    error = result["failed"]["error"]
    assert result["failed"]["step"]["skill"] == "route.nets"
    assert "max_current_density" in error["message"] and NET in error["message"]
    assert error["details"]["reason"] == "no_current_density"


def test_a_wide_track_keeps_below_a_vertical_that_crosses_it() -> None:
    """A wide track (two levels) whose span a vertical crosses stays below that vertical's
    track, also when the packing that puts other banded nets on metal 1 wins: the wide
    track never goes on metal 1, so the verticals' bands keep binding it (a 10 mA vss track
    once crossed nbias's vertical in two_stage_ota)."""
    from dataclasses import replace

    from centroid_skills.routing.dims import routing_dims
    from centroid_skills.routing.track_packing import pack_tracks

    tech = Technology.from_rules(rule_set("sky130"))
    d = replace(routing_dims(tech), wide_tracks=(("w", 2, 0, 0),))
    assert d.low_role == "metal1"  # a level holds a metal-1 track too
    spans = [(0, 20000, "a"), (0, 20000, "w"), (0, 20000, "v")]
    low: set[str] = set()
    levels = pack_tracks(spans, {}, {"v": {"a", "w"}}, d, tech, {"v"}, low)
    assert levels is not None
    assert levels["w"][0] + 1 < levels["v"][0], levels  # both of w's levels below v's
    assert "w" not in low


def test_a_wide_track_keeps_the_wide_metal_spacing_from_its_neighbours_on_a_level() -> None:
    """Two tracks one after the other on a level keep the layer's spacing; next to a wide
    track, its wide-metal spacing (a 10 mA vss track once ended 0.14 µm from another net's
    track on SKY130's met2, whose rule asks 0.28 µm next to a wire over 3 µm wide)."""
    from dataclasses import replace

    from centroid_skills.routing.dims import routing_dims, track_reach
    from centroid_skills.routing.track_packing import pack_tracks

    tech = Technology.from_rules(rule_set("sky130"))
    d = routing_dims(tech)
    reach = track_reach(tech, d, 0, 20000)
    start = 20000 + 2 * reach + d.sh + 4 * tech.grid_nm  # a layer spacing after a's end
    spans = [(0, 20000, "a"), (start, start + 20000, "w")]
    narrow = pack_tracks(spans, {}, {}, d, tech, set())
    assert narrow is not None and narrow["a"][0] == narrow["w"][0]  # one level holds both
    wide = replace(d, wide_tracks=(("w", 2, 0, d.sh + 10 * tech.grid_nm),))
    levels = pack_tracks(spans, {}, {}, wide, tech, set())
    assert levels is not None and levels["a"][0] != levels["w"][0], levels
