"""A process the generators were not written against: GF180MCU (3.3 V devices,
``examples/pdk/gf180mcu.json``, rule set 1.2.0 with its real line-end, adjacent-side, area and
wide-metal rules).  Every example circuit, plain and 1.5x scaled, comes out DRC- and
LVS-clean on it (test_flow.py runs the Rust planner's candidates on all three processes);
here: the rule set itself, seeded random circuits, and wide metal (a capacitor plate wider
than every width_over) routing clean on all three processes."""

from __future__ import annotations

import copy
from pathlib import Path

import klayout.db as kdb
import pytest
from helpers import REPO_ROOT, load_rule_set
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
from test_routing import RANDOM_SEEDS, check_random, random_request

from centroid_skills.tech import Technology, opened

GF180 = REPO_ROOT / "examples" / "pdk" / "gf180mcu.json"
RULE_SETS = ["ihp_sg13g2", "sky130", "gf180mcu"]


def test_the_fixture_is_a_real_1_2_0_rule_set() -> None:
    rules = load_rule_set(GF180)
    tech = Technology.from_rules(rules)
    # 1.2.0 rules; 1.4.0 since it carries parasitics (examples/pdk/README.md)
    assert tech.schema_version == "1.4.0" and tech.grid_nm == 5
    kinds = {("end" if r.end_min else "adjacent" if r.adjacent_min else "wide" if r.width_over else r.type)
             for r in tech.rules}
    assert {"end", "adjacent", "wide", "area", "width", "spacing", "enclosure", "extension"} <= kinds
    # the foundry's GDS numbers (GF180MCU layers_def: COMP 22, Poly2 30, Contact 33, Metal1 34...)
    gds = {name: (ldef.layer, ldef.datatype) for name, ldef in tech.layers.items()}
    assert gds["COMP"] == (22, 0) and gds["Poly2"] == (30, 0) and gds["Contact"] == (33, 0)
    assert gds["Metal1"] == (34, 0) and gds["Via1"] == (35, 0) and gds["Metal2"] == (36, 0)
    assert gds["Nwell"] == (21, 0) and gds["Nplus"] == (32, 0) and gds["Pplus"] == (31, 0)


@pytest.mark.rust_plans(requests=lambda p: [random_request(p["seed"], "gf180mcu")])
@pytest.mark.parametrize("seed", RANDOM_SEEDS)
def test_random_circuits_clean_on_gf180(seed: int, tmp_path: Path) -> None:
    check_random(seed, "gf180mcu", tmp_path)


def wide_parts(gds: Path, tech: Technology) -> dict[str, int]:
    """Per wide-metal rule id: how many parts of its layer are wider than its width_over in
    the exported layout (proof that a test exercises the rule)."""
    layout = kdb.Layout()
    layout.read(str(gds))
    top = layout.top_cell()
    out = {}
    for r in tech.rules:
        if r.width_over is None:
            continue
        region = tech.region(layout, top, r.layer)
        out[r.id] = opened(region, tech.nm(r.width_over)).count()
    return out


def wide_capacitor_request(pdk: str) -> PlanRequest:
    """The Miller OTA with a 24 µm x 24 µm compensation capacitor, sized for the process."""
    rules = rule_set(pdk)
    netlist = copy.deepcopy(example_netlist("miller_ota"))
    capacitors = 0
    for cell in netlist["cells"]:
        for d in cell["devices"]:
            if d["type"] == "capacitor":
                d["w"] = d["l"] = 24e-6
                capacitors += 1
    assert capacitors == 1
    return PlanRequest.of(sized_for(netlist, rules), rules, example_objectives("miller_ota"))


@pytest.mark.rust_plans(requests=lambda p: [wide_capacitor_request(p["pdk"])])
@pytest.mark.parametrize("pdk", RULE_SETS)
def test_wide_capacitor_plates_route_clean(pdk: str, tmp_path: Path) -> None:
    """The Miller OTA with a 24 µm x 24 µm compensation capacitor: its plates are wider than
    every width_over of the three processes (IHP 10 µm, SKY130 3 µm, GF180 10 µm), so the
    neighbours keep the wide-metal spacing (M1.f/M2.f, m1.3ab, M1.2b/M2.2b)."""
    rules = rule_set(pdk)
    candidate = draft(wide_capacitor_request(pdk)).candidates[0]
    assert any(s["skill"] == "layout.create_device" and s["arguments"]["type"] == "capacitor"
               and s["arguments"]["w"] == 24e-6 for s in candidate.steps)
    result = run_plan(candidate.steps, tmp_path)
    check_clean(result)
    gds = tmp_path / "layout.gds"
    tech = Technology.from_rules(rules)
    parts = wide_parts(gds, tech)
    # the capacitor's metal is wide where the process has no density limit on it (GF180);
    # with a maximum density the plates are combs of narrow stripes (IHP, SKY130)
    if pdk == "gf180mcu":
        assert parts["M1.2b"] >= 1 and parts["M2.2b"] >= 1, parts
