"""GF180MCU with a third routing metal (``examples/pdk/gf180mcu_m3.json``: the 2-metal rule set
plus Via2/Metal3 from the foundry deck's 5LM stack).  The router takes its track layer from the
rule set's roles, so the same circuit comes out DRC- and LVS-clean on either stack, uses
Metal3 where the rule set has it, and needs no more area than on two metals."""

from __future__ import annotations

from pathlib import Path

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

from centroid_skills.tech import Technology

EXAMPLE = "folded_cascode"
STACKS = ["gf180mcu", "gf180mcu_m3"]


def request(pdk: str) -> PlanRequest:
    rules = rule_set(pdk)
    return PlanRequest.of(sized_for(example_netlist(EXAMPLE), rules), rules, example_objectives(EXAMPLE))


def shapes_on(gds: Path, tech: Technology, role: str) -> tuple[int, int]:
    """(shapes on the layer of ``role``, bounding-box area in dbu²) of the layout's top cell."""
    layout = kdb.Layout()
    layout.read(str(gds))
    top = layout.top_cell()
    name = next(n for n, ldef in tech.layers.items() if ldef.role == role)
    region = tech.region(layout, top, name)
    box = top.bbox()
    return region.count(), box.width() * box.height()


def test_the_third_metal_is_the_decks_via2_and_metal3() -> None:
    tech = Technology.from_rules(rule_set("gf180mcu_m3"))
    gds = {name: (ldef.layer, ldef.datatype) for name, ldef in tech.layers.items()}
    # GF180MCU layers_def: Via2 38/0, Metal3 42/0
    assert gds["Via2"] == (38, 0) and gds["Metal3"] == (42, 0)
    ids = {r.id for r in tech.rules}
    assert {"V2.1", "V2.2a", "V2.3b", "V2.4a", "M3.1", "M3.2a", "M3.2b", "M3.3"} <= ids
    two = Technology.from_rules(rule_set("gf180mcu"))
    assert not any(ldef.role == "metal3" for ldef in two.layers.values())


@pytest.mark.rust_plans(requests=lambda p: [request(pdk) for pdk in STACKS])
def test_a_third_metal_routes_clean_on_metal3_in_no_more_area(tmp_path: Path) -> None:
    found = {}
    for pdk in STACKS:
        candidate = draft(request(pdk)).candidates[0]
        result = run_plan(candidate.steps, tmp_path / pdk)
        check_clean(result)
        tech = Technology.from_rules(rule_set(pdk))
        metal3 = any(ldef.role == "metal3" for ldef in tech.layers.values())
        found[pdk] = shapes_on(tmp_path / pdk / "layout.gds", tech, "metal3" if metal3 else "metal2")
    metal3_shapes, area_three = found["gf180mcu_m3"]
    _, area_two = found["gf180mcu"]
    assert metal3_shapes > 0, "the tracks take the third metal"
    assert area_three <= area_two, (area_three, area_two)
