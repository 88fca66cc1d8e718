"""No floating devices (issue 27): every dummy of the Rust planner's candidates is tied to
its well's rail (PMOS to the supply, NMOS to ground) and LVS still matches; check.electrical
reports floating gates, dangling nets, supply shorts and untied dummies by name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import REPO_ROOT, Client, load_rule_set
from rust_plans import PlanRequest, draft, example_netlist, example_request, rule_set, run_plan

from centroid_skills.skills.lvs import extract

SUPPLIES = {"ota5": ["vdd"], "miller_ota": ["vdd"], "strongarm_comparator": ["vdd"]}


def electrical(client: Client, cell: str, **extra: Any) -> dict[str, Any]:
    return client.call("check.electrical", cell=cell, supplies=["vdd"], grounds=["vss"], **extra)


@pytest.mark.parametrize("pdk", ["sky130", "ihp_sg13g2", "gf180mcu"])
@pytest.mark.parametrize("example", sorted(SUPPLIES))
def test_every_dummy_is_tied_to_its_rail(tmp_path: Path, pdk: str, example: str) -> None:
    from centroid_skills.server import Server

    candidates = draft(example_request(example, pdk)).candidates[:2]
    with_dummies = 0
    for k, candidate in enumerate(candidates):
        server = Server()
        result = run_plan(candidate.steps, tmp_path / str(k), server=server)
        assert result["ok"] and result["lvs_match"], result.get("failed")
        client = Client()
        client.server = server
        report = electrical(client, result["cell"])
        assert report["clean"], report["issues"]
        with_dummies += report["dummies"]
    assert with_dummies > 0, "no candidate drew dummies: the test proves nothing"


def test_floating_and_untied_devices_are_named(client: Client, tmp_path: Path) -> None:
    client.call("tech.load", rules=load_rule_set(REPO_ROOT / "examples" / "pdk" / "sky130.json"))
    # a lone dummy transistor (its TIE pin routed nowhere) and a plain transistor whose
    # gate strap is not connected to anything
    client.call("layout.create_device", type="pmos", w=1e-6, l=5e-7, nf=1, cell_name="D",
                dummy=True)
    client.call("layout.create_device", type="nmos", w=1e-6, l=5e-7, nf=1, cell_name="N")
    client.call("layout.place", cell_name="T", items=[{"cell": "D", "x": 0, "y": 0},
                                                      {"cell": "N", "x": 10, "y": 0}])
    report = electrical(client, "T")
    assert not report["clean"]
    assert report["counts"]["floating_dummy"] == 1, report
    assert report["counts"]["floating_gate"] == 1, report
    failed = client.raw("check.electrical", {"cell": "T", "supplies": ["vdd"], "grounds": ["vss"],
                                             "fail_on_issue": True})
    assert failed["error"]["code"] == "CONFLICT" and failed["error"]["details"]["reason"] == "electrical"


def test_gate_only_nets_of_the_circuit_are_no_issue(client: Client) -> None:
    client.call("tech.load", rules=load_rule_set(REPO_ROOT / "examples" / "pdk" / "sky130.json"))
    # two transistors whose gate straps reach nothing: two floating gates in the layout
    for name in ("N1", "N2"):
        client.call("layout.create_device", type="nmos", w=1e-6, l=5e-7, nf=1, cell_name=name)
    client.call("layout.place", cell_name="T", items=[{"cell": "N1", "x": 0, "y": 0},
                                                      {"cell": "N2", "x": 10, "y": 0}])
    assert electrical(client, "T")["counts"]["floating_gate"] == 2
    # a circuit with two gate-only nets of its own (a clock left internal): the layout's are
    # those, no issue (the unconnected sources and drains still are)
    report = electrical(client, "T", gate_only_nets=2)
    assert report["counts"]["floating_gate"] == 0, report
    assert all(issue["reason"] != "floating_gate" for issue in report["issues"]), report
    assert report["counts"]["single_connection"] > 0
    assert [issue["reason"] for issue in report["by_design"]] == ["floating_gate"] * 2
    # one gate-only net in the circuit, two in the layout: the layout floats one of its own,
    # both are issues
    report = electrical(client, "T", gate_only_nets=1)
    assert report["counts"]["floating_gate"] == 2, report
    assert report["by_design"] == []


def test_a_net_shorted_to_a_supply_is_named(client: Client) -> None:
    client.call("tech.load", rules=load_rule_set(REPO_ROOT / "examples" / "pdk" / "sky130.json"))
    client.call("layout.add_shapes", cell="T", create=True, shapes=[{"role": "metal1", "box": [0, 0, 10, 1]}])
    client.call("layout.add_label", cell="T", text="vdd", role="metal1_label", x=1, y=0.5)
    client.call("layout.add_label", cell="T", text="out", role="metal1_label", x=9, y=0.5)
    report = electrical(client, "T")
    assert report["counts"]["shorted_to_supply"] == 1, report
    assert "vdd" in report["issues"][0]["item"] and "out" in report["issues"][0]["item"]


def test_a_substrate_with_nothing_on_it_is_no_dangling_net(client: Client) -> None:
    """A block of PMOS only (ALIGN's powertrain cells: no ground net, no substrate tap) leaves
    the substrate's net without a terminal: its parent ties it, it is no dangling wire. A
    wire tied to nothing still is one."""
    client.call("tech.load", rules=load_rule_set(REPO_ROOT / "examples" / "pdk" / "sky130.json"))
    client.call("layout.add_shapes", cell="T", create=True, shapes=[{"role": "metal1", "box": [0, 0, 10, 1]}])
    report = electrical(client, "T")
    assert report["counts"]["single_connection"] == 1, report  # the wire, not the substrate
    client.call("layout.add_label", cell="T", text="out", role="metal1_label", x=1, y=0.5)
    assert electrical(client, "T")["clean"], "a labelled wire on a substrate with nothing on it"


def _pmos_input_ota(pair_bulk: str) -> dict[str, Any]:
    """ota5 mirrored (PMOS pair, NMOS mirror), the pair's bulk on ``pair_bulk``."""
    netlist = example_netlist("ota5")
    swap = {"vdd": "vss", "vss": "vdd"}
    for device in netlist["cells"][0]["devices"]:
        device["type"] = {"nmos": "pmos", "pmos": "nmos"}[device["type"]]
        device["terminals"] = {t: swap.get(n, n) for t, n in device["terminals"].items()}
        if device["terminals"]["s"] == "tail":
            device["terminals"]["b"] = pair_bulk
    return netlist


def _own_well_requests(_: Any) -> list[Any]:
    return [PlanRequest.of(_pmos_input_ota("tail"), rule_set("sky130"), candidates=2)]


@pytest.mark.rust_plans(requests=_own_well_requests)
def test_dummies_of_a_pair_in_its_own_well_are_tied_to_that_well(tmp_path: Path) -> None:
    # AnalogGym's SKY130 amplifiers: a PMOS pair whose bulk is its tail (a well of its own);
    # the pair's dummies sit in that well, every terminal on the tail: off, not floating
    from centroid_skills.server import Server

    tail_dummies = 0
    for k, candidate in enumerate(draft(_own_well_requests(None)[0]).candidates):
        server = Server()
        result = run_plan(candidate.steps, tmp_path / str(k), server=server)
        assert result["ok"] and result["drc_total"] == 0 and result["lvs_match"], result.get("failed")
        client = Client()
        client.server = server
        report = electrical(client, result["cell"])
        assert report["clean"], report["issues"]
        extraction = extract(server.session, server.session.any_cell(result["cell"]), set_aside_inert=True)
        tail_dummies += sum(1 for kind, net, bulk in extraction.dummies if net == "tail" == bulk)
    assert tail_dummies > 0, "no dummy in the pair's well: the test proves nothing"
