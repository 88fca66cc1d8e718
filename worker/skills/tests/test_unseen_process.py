"""A process the generators were not written against: GF180MCU (3.3 V devices,
``examples/pdk/gf180mcu.json``, rule set 1.2.0 with its real line-end, adjacent-side, area and
wide-metal rules).  Every example circuit, plain and 1.5x scaled, and seeded random
circuits come out DRC- and LVS-clean; and wide metal (a capacitor plate wider than every
width_over) routes clean on all three processes."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import klayout.db as kdb
import pytest
from helpers import REPO_ROOT, load_rule_set, scaled_rule_set
from test_flow import EXAMPLES, check, circuit, scaled_circuit
from test_routing import random_circuit

from centroid_skills import flow
from centroid_skills.tech import Technology, opened

GF180 = REPO_ROOT / "examples" / "pdk" / "gf180mcu.json"
RULE_SETS = {"ihp_sg13g2": REPO_ROOT / "examples" / "pdk" / "ihp_sg13g2.json",
             "sky130": REPO_ROOT / "examples" / "pdk" / "sky130.json",
             "gf180mcu": GF180}


def sized_for(c: dict[str, Any], rules: dict[str, Any]) -> dict[str, Any]:
    """The circuit with every MOS gate at least the process's minimum length (a designer
    porting a circuit to GF180 3.3 V lengthens 0.15 µm gates to 0.28 µm)."""
    l_min = Technology.from_rules(rules).width("poly") * 1e-9
    c = copy.deepcopy(c)
    for d in c["devices"]:
        if d["type"] in ("nmos", "pmos"):
            d["params"]["l"] = max(d["params"]["l"], l_min)
    return c


def test_the_fixture_is_a_real_1_2_0_rule_set() -> None:
    rules = load_rule_set(GF180)
    tech = Technology.from_rules(rules)
    assert tech.schema_version == "1.2.0" and tech.grid_nm == 5
    kinds = {("end" if r.end_min else "adjacent" if r.adjacent_min else "wide" if r.width_over else r.type)
             for r in tech.rules}
    assert {"end", "adjacent", "wide", "area", "width", "spacing", "enclosure", "extension"} <= kinds
    # the foundry's GDS numbers (GF180MCU layers_def: COMP 22, Poly2 30, Contact 33, Metal1 34...)
    gds = {name: (ldef.layer, ldef.datatype) for name, ldef in tech.layers.items()}
    assert gds["COMP"] == (22, 0) and gds["Poly2"] == (30, 0) and gds["Contact"] == (33, 0)
    assert gds["Metal1"] == (34, 0) and gds["Via1"] == (35, 0) and gds["Metal2"] == (36, 0)
    assert gds["Nwell"] == (21, 0) and gds["Nplus"] == (32, 0) and gds["Pplus"] == (31, 0)


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_example_flow_clean_on_gf180(example: str, tmp_path: Path) -> None:
    rules = load_rule_set(GF180)
    check(flow.run(sized_for(circuit(example), rules), rules,
                   options={"export_path": str(tmp_path / f"{example}.gds")}))


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_example_flow_clean_on_gf180_scaled(example: str, tmp_path: Path) -> None:
    rules = scaled_rule_set(load_rule_set(GF180), 1.5)
    c = scaled_circuit(sized_for(circuit(example), load_rule_set(GF180)), 1.5)
    check(flow.run(c, rules, options={"export_path": str(tmp_path / f"{example}.gds")}))


@pytest.mark.parametrize("seed", [3, 8, 18, 28, 81, 93, 107, 149])
def test_random_circuits_clean_on_gf180(seed: int, tmp_path: Path) -> None:
    rules = load_rule_set(GF180)
    circ, dummies = random_circuit(seed)
    r = flow.run(sized_for(circ, rules), rules,
                 options={"dummies": dummies, "export_path": str(tmp_path / "x.gds")})
    if not r["ok"] and "below" in r["failed"]["error"]["message"]:
        pytest.skip("a random size under this process's minimum")
    assert r["ok"], r.get("failed")
    assert r["drc_total"] == 0, r["results"]["drc.run"]["violations"][:3]
    assert r["lvs_match"], r["results"]["lvs.run"]


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


@pytest.mark.parametrize("pdk", sorted(RULE_SETS))
def test_wide_capacitor_plates_route_clean(pdk: str, tmp_path: Path) -> None:
    """The Miller OTA with a 24 µm x 24 µm compensation capacitor: its plates are wider than
    every width_over of the three processes (IHP 10 µm, SKY130 3 µm, GF180 10 µm), so the
    neighbours keep the wide-metal spacing (M1.f/M2.f, m1.3ab, M1.2b/M2.2b)."""
    rules = load_rule_set(RULE_SETS[pdk])
    c = sized_for(circuit("miller_ota"), rules)
    for d in c["devices"]:
        if d["type"] == "capacitor":
            d["params"]["w"] = d["params"]["l"] = 24e-6
    gds = tmp_path / "wide.gds"
    result = flow.run(c, rules, options={"export_path": str(gds)})
    check(result)
    tech = Technology.from_rules(rules)
    parts = wide_parts(gds, tech)
    # the capacitor's metal is wide where the process has no density limit on it (GF180);
    # with a maximum density the plates are combs of narrow stripes (IHP, SKY130)
    if pdk == "gf180mcu":
        assert parts["M1.2b"] >= 1 and parts["M2.2b"] >= 1, parts
