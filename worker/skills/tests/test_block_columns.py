"""A block as the planner draws it takes no trunk column beside its rows (issue 26).

The five-transistor OTA block of the OTA bank (``bench/bench_scaling.py``): the differential
pair and the mirror as common-centroid pairs with dummies (nmos row: the pair and the tail
source; pmos row: the mirror), the ports inp inn out vbias vdd vss at the bottom edge.
On main, two nets kept metal-2 columns beside the rows: n1 (the pair's port stub for out
stood within a pitch of a tail stub coming down, which put out's track below tail's while
out's vertical needed it above: no track order in channel 0) and vdd (a port on the pmos
row's rail, above row 0). Now n1 crosses both rows on verticals and vdd reaches its rail on
a vertical and a tap from the rail: where the track layer is not metal 1, no routing shape
of the block stands beside the rows, read from the written GDS. The block instanced twice
and routed in a parent: DRC and LVS clean on every rule set."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import klayout.db as kdb
import pytest
from block_fixture import exported_block, routed_block, two_instances_clean
from helpers import RULE_SET_IDS, RULE_SET_PATHS, Client, load_rule_set
from rust_plans import min_gate_length_m

from centroid_skills.routing.dims import routing_dims

PORTS = ["inp", "inn", "out", "vbias", "vdd", "vss"]
TERMS = {
    "M1": ("nmos", {"d": "n1", "g": "inp", "s": "tail", "b": "vss"}),
    "M2": ("nmos", {"d": "out", "g": "inn", "s": "tail", "b": "vss"}),
    "M3": ("pmos", {"d": "n1", "g": "n1", "s": "vdd", "b": "vdd"}),
    "M4": ("pmos", {"d": "out", "g": "n1", "s": "vdd", "b": "vdd"}),
    "M5": ("nmos", {"d": "tail", "g": "vbias", "s": "vss", "b": "vss"}),
}


def sizes(rules: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The bank's sizes (SKY130: pairs 2 × 2/0.5 µm, tail 4/1 µm in two fingers), gates at
    least the process's minimum length."""
    l_min = min_gate_length_m(rules)
    pair = {"w": 2e-6, "l": max(0.5e-6, l_min), "nf": 1, "m": 2}
    return {"M1": pair, "M2": pair, "M3": pair, "M4": pair,
            "M5": {"w": 4e-6, "l": max(1e-6, 2 * l_min), "nf": 2, "m": 1}}


def ota_block(client: Client, size: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The planner's OTA block (the steps of ``centroid plan`` for the bank)."""
    return routed_block(client, TERMS, size, [["dp", "M5"], ["cm"]], PORTS)


def beside_rows(client: Client, folder: Path) -> list[kdb.Box]:
    """The block's own routing shapes (metal 1, metal 2, the track layer) lying beside its
    rows (wholly left or right of every row), read back from the written GDS."""
    tech = client.server.session.need_tech()
    d = routing_dims(tech)
    layout, cell = exported_block(client, folder)
    rows = [i.bbox() for i in cell.each_inst() if "_ROW" in i.cell.name]
    left, right = min(b.left for b in rows), max(b.right for b in rows)
    out = []
    for role in ("metal1", "metal2", d.h_role):
        ldef = tech.require(role)
        li = layout.find_layer(ldef.layer, ldef.datatype)
        if li is None:
            continue
        for poly in kdb.Region(cell.shapes(li)).merged().each():
            bb = poly.bbox()
            if bb.right <= left or bb.left >= right:
                out.append(bb)
    return out


@pytest.mark.parametrize("path", RULE_SET_PATHS, ids=RULE_SET_IDS)
def test_the_planners_ota_block_has_no_column(path: Path, tmp_path: Path) -> None:
    rules = load_rule_set(path)
    client = Client()
    client.call("tech.load", rules=rules)
    size = sizes(rules)
    block = ota_block(client, size)
    assert sorted(p["net"] for p in block["ports"]) == sorted(PORTS)
    if routing_dims(client.server.session.need_tech()).h_role != "metal1":
        assert block["trunks"] == 0
        assert beside_rows(client, tmp_path) == []
    # two instances side by side in a parent, its own nets per instance
    wiring = {f"X{k}": {"inp": f"inp{k}", "inn": f"inn{k}", "out": f"out{k}", "vbias": "vbias",
                        "vdd": "vdd", "vss": "vss"} for k in range(2)}
    two_instances_clean(client, wiring, TERMS, size)
