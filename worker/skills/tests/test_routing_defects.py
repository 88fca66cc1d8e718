"""Regressions of defective candidates found by ``bench/sweep_defects.py`` (candidates the
search draws that short two nets or violate DRC), each cause drawn on its own on every rule
set and its 1.5x scaling, and judged by DRC and LVS."""

from __future__ import annotations

import functools
import json
import subprocess
from pathlib import Path
from typing import Any

import klayout.db as kdb
import pytest
from helpers import (
    REPO_ROOT,
    RULE_SET_IDS,
    RULE_SET_PATHS,
    Client,
    load_rule_set,
    scaled_rule_set,
    shared_file,
)
from hypothesis import example, given
from hypothesis import strategies as st
from rust_plans import PlanRequest, centroid_binary, draft, min_gate_length_m, run_plan

from centroid_skills.routing.channels import Stub, plan_channel
from centroid_skills.routing.dims import routing_dims
from centroid_skills.routing.drawing import Painter, draw_tracks
from centroid_skills.routing.stacking import Stack
from centroid_skills.routing.terminals import Term, collect_terms
from centroid_skills.session import DBU_UM
from centroid_skills.tech import Technology

RULE_SETS = [(p, 1.0) for p in RULE_SET_PATHS] + [(p, 1.5) for p in RULE_SET_PATHS]
RULE_SET_NAMES = RULE_SET_IDS + [f"{i}_x1.5" for i in RULE_SET_IDS]

# a differential pair on a tail current source (ALIGN's five-transistor OTA, lower row)
DIFF_PAIR_ROW = {
    "mn1": {"d": "tail", "g": "vbias", "s": "vss", "b": "vss"},
    "mn2": {"d": "von", "g": "vin", "s": "tail", "b": "vss"},
    "mn3": {"d": "vop", "g": "vip", "s": "tail", "b": "vss"},
}


def load(client: Client, path: Any, factor: float) -> dict[str, float]:
    """Loads the rule set (scaled by ``factor``); MOS sizes for it: a finger a few minimum
    lengths wide, the minimum gate length."""
    rules = load_rule_set(path)
    if factor != 1.0:
        rules = scaled_rule_set(rules, factor)
    client.call("tech.load", rules=rules)
    length = min_gate_length_m(rules)
    return {"finger_w": 8 * length, "l": length}


@pytest.mark.parametrize("nf", [1, 2, 5])
@pytest.mark.parametrize("dummies", [1, 2])
@pytest.mark.parametrize(("path", "factor"), RULE_SETS, ids=RULE_SET_NAMES)
def test_dummies_of_multi_finger_units_drop_onto_their_rail(path: Any, factor: float,
                                                            dummies: int, nf: int) -> None:
    """A dummy is one gate finger whatever its module's unit: the source bus it drops onto
    the row's rail is its own, not the unit's (a unit's bus reaches over the neighbouring
    unit, whose source on another net the rail bar then shorts to the rail: ``tail`` to
    ``vss`` on ALIGN's five-transistor OTA)."""
    client = Client()
    size = load(client, path, factor)
    w = size["finger_w"] * nf
    unit = {"type": "nmos", "w": w, "l": size["l"], "nf": nf, "m": 2}
    pair = client.call("layout.create_common_centroid_pair", device_a={**unit, "device_id": "mn2"},
                       device_b={**unit, "device_id": "mn3"}, arrangement="ABBA",
                       cell_name="dp")
    client.call("layout.add_dummies", cell=pair["cell_name"], count=dummies)
    client.call("layout.create_device", device_id="mn1", type="nmos", w=2 * w, l=size["l"],
                nf=2 * nf, cell_name="tailsrc")
    pitch = client.call("route.info")["pitch_um"]
    client.call("layout.place", cell_name="row", rows=[{"cells": ["dp", "tailsrc"], "gap": pitch}])

    session = client.server.session
    terms: list[Any] = []
    collect_terms(session, session.any_cell("row"), kdb.Trans(), terms)
    tied = [t for t in terms if t.device is None and t.pin == "TIE_S"]
    assert len(tied) == 2 * dummies
    for t in tied:
        assert t.block.contains(t.box.p1) and t.block.contains(t.box.p2), (t.box, t.block)

    devices = [{"id": d, "type": "nmos", "terminals": t} for d, t in DIFF_PAIR_ROW.items()]
    client.call("route.nets", cell_name="top", rows=["row"], devices=devices)
    drc = client.call("drc.run", cell="top")
    assert drc["total"] == 0, [(v["id"], v["count"], v["markers_um"][:2]) for v in drc["violations"]]
    # every device: two units' worth (mn2, mn3: m = 2 units; mn1 drawn as one)
    lvs = client.call("lvs.run", cell="top", devices=[
        {**d, "w": 2 * w, "l": size["l"], "nf": 2 * nf, "m": 1} for d in devices])
    assert lvs["match"], {k: v for k, v in lvs.items() if not k.endswith("_netlist")}
    assert lvs["dummies_removed"] == 2 * dummies


# --------------------------------------------------------------------------------------------
# tracks sharing a track keep the spacing of what is drawn
# --------------------------------------------------------------------------------------------

TECHS = {name: Technology.from_rules(scaled_rule_set(load_rule_set(p), f) if f != 1.0
                                     else load_rule_set(p))
         for (p, f), name in zip(RULE_SETS, RULE_SET_NAMES, strict=True)}
NETS = "abcdef"


@st.composite
def channels(draw: st.DrawFn) -> tuple[str, list[tuple[str, str, int]], list[tuple[str, str]]]:
    """A rule set, stubs (net, up|down, x in sixteenths of a pitch) and partner net pairs."""
    name = draw(st.sampled_from(sorted(TECHS)))
    stubs = draw(st.lists(st.tuples(st.sampled_from(NETS), st.sampled_from(["up", "down"]),
                                    st.integers(0, 480)), min_size=2, max_size=24))
    pairs = draw(st.lists(st.tuples(st.sampled_from(NETS), st.sampled_from(NETS)), max_size=3))
    return name, stubs, [(a, b) for a, b in pairs if a != b]


#: ALIGN's telescopic OTA on sky130: c's last stub (down) 15/16 pitch left of a's first (up),
#: so c's track goes above a's; b, a's partner, takes a's span and shares c's track
PARTNER_NEXT_TO_A_NET = ("sky130", [("c", "down", 0), ("c", "down", 40), ("a", "up", 55),
                                    ("a", "up", 100), ("b", "up", 200), ("b", "up", 260)],
                         [("a", "b")])


@given(channels())
@example(PARTNER_NEXT_TO_A_NET)
def test_tracks_on_one_track_keep_their_spacing_as_drawn(
        channel: tuple[str, list[tuple[str, str, int]], list[tuple[str, str]]]) -> None:
    """Two nets share a track only where their tracks as drawn -- reaching past their end vias
    by the along margin or further for the minimum area -- keep the layer's spacing.  (Packed
    with the track's half width instead, the partner nets' balanced spans of ALIGN's
    telescopic OTA put two sky130 met2 tracks 0.125 µm apart: m2.2.)"""
    name, stubs, partners = channel
    tech = TECHS[name]
    d = routing_dims(tech)
    term = Term(None, "S", "metal1", kdb.Box(), kdb.Box(), None)
    lst = []
    for net, kind, q in stubs:
        x = tech.snap(q * d.px / 16)
        lst.append(Stub(net, term, 0, kind, x, x, x))
    low: set[str] = set()  # the nets on metal-1 tracks, where the rule set has metal 3
    tracks = plan_channel(lst, {}, d, tech, partners, low=low)
    if tracks is None:
        return
    layout = kdb.Layout()
    layout.dbu = DBU_UM
    painter = Painter(tech, layout, d)
    pitch = d.pyl if low else d.py
    stack = Stack([{net: k * pitch for net, (k, _l, _r) in tracks.items()}], [None], [len(tracks)])
    draw_tracks(tech, painter, [tracks], stack, low=[low])
    layers = [(painter.h, d.sh, set(tracks) - low)] + ([(painter.m1, d.s1, low)] if low else [])
    for li, space, nets in layers:
        drawn = painter.shapes[li].merged()
        assert drawn.count() == len(nets), (name, "tracks of two nets touch")
        too_close = drawn.space_check(space)
        assert too_close.is_empty(), (name, space, [str(e) for e in too_close.each()][:3])


# --------------------------------------------------------------------------------------------
# ALIGN's SKY130 OTAs: the candidates the sweep found defective
# --------------------------------------------------------------------------------------------

ALIGN_BENCHES = REPO_ROOT / "tests" / "benches" / "align_sky130"
#: a design point of the telescopic OTA's search (seed 5) whose partner nets' balanced
#: tracks were drawn 0.125 µm apart on one track (sky130 m2.2)
TELESCOPIC_M2_2 = {"arrangement": "ABBA", "finger_split": 4, "dummies": 1, "guard_ring": False,
                   "row_order": 1, "spacing_nm": 500, "aspect_ratio_pct": 100,
                   "order": ["m1", "m2", "m4", "m3", "m6", "m5", "m10", "m9", "m8", "m7"],
                   "rows": {"nmos": 2, "pmos": 2}}


@functools.cache
def align_request(circuit: str, candidates: int) -> PlanRequest:
    spice = shared_file(f"benches/align_sky130/{circuit}/netlist.sp")
    netlist = json.loads(subprocess.run([str(centroid_binary()), "convert", str(spice)], check=True,
                                        capture_output=True, text=True).stdout)
    bench = ALIGN_BENCHES / circuit
    return PlanRequest.of(netlist, json.loads((bench / "drc_rules.json").read_text()),
                          json.loads((bench / "objectives.json").read_text()),
                          candidates=candidates)


@pytest.mark.parametrize(("circuit", "point"), [("five_transistor_ota", None),
                                                ("telescopic_ota", None),
                                                ("telescopic_ota", TELESCOPIC_M2_2)],
                         ids=["five_transistor_ota", "telescopic_ota", "telescopic_ota-m2.2"])
def test_align_candidates_are_clean(circuit: str, point: dict[str, Any] | None,
                                    tmp_path: Path) -> None:
    """The first 8 candidates of ALIGN's SKY130 OTAs (5 of the five-transistor OTA's shorted
    tail to vss, 2 had a DRC violation) and a point of the telescopic OTA's search: every one
    DRC clean with LVS matching."""
    request = align_request(circuit, 8)
    if point is not None:
        request = request.with_point(point)
    bad = {}
    for k, candidate in enumerate(draft(request).candidates):
        result = run_plan(candidate.steps, tmp_path / str(k))
        assert result["ok"], result.get("failed")
        if result["drc_total"] or not result["lvs_match"]:
            lvs = result["results"]["lvs.run"]
            bad[k] = {
                "drc": [(v["id"], v["count"]) for v in result["results"]["drc.run"]["violations"]],
                "lvs_nets": lvs["unmatched_nets_layout"]}
    assert not bad, bad
