"""Every example circuit as a block (issue 26): the Rust planner's draft candidate of the
example (matched modules, dummies, rows as the planner draws them) routed by ``route.nets``
with ``ports`` (the top cell's ports, else every net — many ports over a dense row 0),
instanced twice side by side in a parent whose instances share only the bulk and supply
nets: DRC clean and LVS clean against the flat devices (``XA/M1``, nets ``XA/n1``) on
SKY130, IHP and GF180."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from rust_plans import PlanRequest, draft, example_request, run_plan, step_of

from centroid_skills.server import Server

EXAMPLES = ["ota5", "folded_cascode", "miller_ota", "strongarm_comparator", "mirror_bank"]
RULE_SETS = ["sky130", "ihp_sg13g2", "gf180mcu"]
SUPPLY = ("power", "ground")


def plans(params: dict[str, Any]) -> list[PlanRequest]:
    return [example_request(params["example"], params["pdk"])]


def call(server: Server, name: str, **arguments: Any) -> dict[str, Any]:
    response = server.handle_message({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                      "params": {"name": name, "arguments": arguments}})
    assert response is not None
    result: dict[str, Any] = json.loads(json.dumps(response["result"]))
    assert result["ok"], f"{name}: {result['error']}"
    return result["data"]


@pytest.mark.rust_plans(requests=plans)
@pytest.mark.parametrize("pdk", RULE_SETS)
@pytest.mark.parametrize("example", EXAMPLES)
def test_example_as_a_block_instanced_twice(example: str, pdk: str, tmp_path: Path) -> None:
    request = example_request(example, pdk)
    steps = draft(request).candidates[0].steps
    netlist = json.loads(request.netlist_json)
    top = next(c for c in netlist["cells"] if c["name"] == netlist["top"])
    nets = [n["name"] if isinstance(n, dict) else n for n in top.get("nets", [])]
    types = {n["name"]: n.get("type") for n in top.get("nets", []) if isinstance(n, dict)}
    ports = list(top.get("ports") or nets)

    def as_block(step: dict[str, Any]) -> dict[str, Any]:
        if step["skill"] == "route.nets":
            step["arguments"].update(cell_name="BLK", ports=ports)
        return step

    server = Server()
    block = run_plan(steps, tmp_path, server=server, edit=as_block, until="route.nets")
    assert block["ok"], block.get("failed")
    routed = block["results"]["route.nets"]
    assert sorted(p["net"] for p in routed["ports"]) == sorted(ports)
    assert all(p["box_um"][1] == routed["bbox_um"][1] for p in routed["ports"])

    flat_devices = step_of(steps, "lvs.run")["arguments"]["devices"]
    shared = ({d["terminals"]["b"] for d in flat_devices if d["terminals"].get("b")}
              | {n for n, t in types.items() if t in SUPPLY})
    pitch = call(server, "route.info")["pitch_um"]
    cells, devices, flat = [], [], []
    for inst in ("XA", "XB"):
        cells.append(call(server, "layout.instantiate_block", block="BLK", device_id=inst,
                          cell_name=f"I_{inst}")["cell"])
        conn = {p: p if p in shared else f"{inst}_{p}" for p in ports}
        devices.append({"id": inst, "type": "block", "terminals": conn})
        flat += [{**d, "id": f"{inst}/{d['id']}",
                  "terminals": {k: conn.get(n, f"{inst}/{n}") for k, n in d["terminals"].items()}}
                 for d in flat_devices]
    call(server, "layout.place", cell_name="TOP_ROW", rows=[{"cells": cells, "gap": pitch}])
    supplies = [{"name": n, "net_type": types.get(n) or "ground"} for n in sorted(shared)]
    call(server, "route.nets", cell_name="TOP", rows=["TOP_ROW"], devices=devices, nets=supplies)
    drc = call(server, "drc.run", cell="TOP")
    assert drc["total"] == 0, [(v["id"], v["count"], v["markers_um"][:2]) for v in drc["violations"]]
    lvs = call(server, "lvs.run", cell="TOP", devices=flat)
    assert lvs["match"], {k: lvs.get(k) for k in ("device_mismatches", "net_mismatches")}
