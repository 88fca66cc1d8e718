"""lvs.run: single devices match on every rule set; an injected open, short and wrong W
on a routed five-transistor OTA are each reported, naming what is wrong."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import klayout.db as kdb
import pytest
from helpers import Client
from rust_plans import draft, example_request, run_plan, step_of, substituted


def mos(dev_id: str, mos_type: str, w: float, length: float, nf: int = 1, m: int = 1) -> dict[str, Any]:
    return {"id": dev_id, "type": mos_type, "w": w, "l": length, "nf": nf, "m": m,
            "terminals": {"g": "g", "d": "d", "s": "s", "b": "b"}}


@pytest.mark.parametrize("mos_type", ["nmos", "pmos"])
def test_single_mos_matches(loaded: Client, mos_type: str) -> None:
    d = loaded.call("layout.create_device", device_id="M1", type=mos_type, w=4e-6, l=5e-7, nf=2, m=2)
    r = loaded.call("lvs.run", cell=d["cell_name"], devices=[mos("M1", mos_type, 4e-6, 5e-7, 2, 2)])
    assert r["match"], r
    assert r["devices_extracted"] == 4 and r["devices_after_combine"] == 1


def test_single_mos_wrong_l_and_type(loaded: Client) -> None:
    d = loaded.call("layout.create_device", device_id="M1", type="nmos", w=4e-6, l=5e-7, nf=2)
    r = loaded.call("lvs.run", cell=d["cell_name"], devices=[mos("M1", "nmos", 4e-6, 1e-6, 2)])
    assert not r["match"]
    assert r["parameter_mismatches"][0]["schematic"]["name"] == "M1"
    r = loaded.call("lvs.run", cell=d["cell_name"], devices=[mos("M1", "pmos", 4e-6, 5e-7, 2)])
    assert not r["match"]
    assert [x["name"] for x in r["unmatched_devices_schematic"]] == ["M1"]
    assert [x["class"] for x in r["unmatched_devices_layout"]] == ["NMOS"]


def test_finger_count_is_compared(loaded: Client) -> None:
    """Same total W and L, but one finger drawn where the circuit has two."""
    d = loaded.call("layout.create_device", device_id="M1", type="nmos", w=4e-6, l=5e-7, nf=1)
    r = loaded.call("lvs.run", cell=d["cell_name"], devices=[mos("M1", "nmos", 4e-6, 5e-7, 2)])
    assert not r["match"]
    (mm,) = r["parameter_mismatches"]
    assert mm["schematic"]["name"] == "M1"
    assert mm["differences"] == {"fingers": {"layout": 1, "schematic": 2}}
    ok = loaded.call("lvs.run", cell=d["cell_name"], devices=[mos("M1", "nmos", 4e-6, 5e-7, 1)])
    assert ok["match"]


def test_resistor_and_capacitor_match(loaded: Client) -> None:
    r1 = loaded.call("layout.create_device", device_id="R1", type="resistor", w=1e-6, l=4e-6)
    res = loaded.call("lvs.run", cell=r1["cell_name"], devices=[
        {"id": "R1", "type": "resistor", "w": 1e-6, "l": 4e-6, "terminals": {"p": "a", "n": "b"}}])
    assert res["match"], res
    bad = loaded.call("lvs.run", cell=r1["cell_name"], devices=[
        {"id": "R1", "type": "resistor", "w": 1e-6, "l": 8e-6, "terminals": {"p": "a", "n": "b"}}])
    assert not bad["match"] and bad["parameter_mismatches"][0]["schematic"]["name"] == "R1"
    c1 = loaded.call("layout.create_device", device_id="C1", type="capacitor", w=1e-5, l=1e-5)
    cap = loaded.call("lvs.run", cell=c1["cell_name"], devices=[
        {"id": "C1", "type": "capacitor", "w": 1e-5, "l": 1e-5, "terminals": {"p": "a", "n": "b"}}])
    assert cap["match"], cap


def test_bad_input(loaded: Client) -> None:
    r = loaded.raw("lvs.run", {"cell": "nope", "devices": [mos("M1", "nmos", 1e-6, 1e-6)]})
    assert not r["ok"] and r["error"]["code"] == "NOT_FOUND"
    d = loaded.call("layout.create_device", device_id="M1", type="nmos", w=4e-6, l=5e-7)
    bad = mos("M1", "nmos", 4e-6, 5e-7)
    bad["terminals"] = {"g": "g", "d": "d", "s": "s", "x": "b"}
    r = loaded.raw("lvs.run", {"cell": d["cell_name"], "devices": [bad]})
    assert not r["ok"] and r["error"]["code"] == "INVALID_PARAM"
    r = loaded.raw("lvs.run", {"cell": d["cell_name"], "devices": [{"id": "M1", "type": "bjt"}]})
    assert not r["ok"] and r["error"]["code"] == "INVALID_PARAM"


# --------------------------------------------------------------------------------------------
# injected faults on a routed OTA
# --------------------------------------------------------------------------------------------

def routed(pdk: str, scratch: Path, edit: Any = None) -> tuple[Client, dict[str, Any], dict[str, Any]]:
    """ota5's default candidate as the Rust planner drafts it, run up to route.nets (``edit``
    may change a step); the candidate's own lvs.run arguments."""
    client = Client()
    steps = draft(example_request("ota5", pdk)).candidates[0].steps
    result = run_plan(steps, scratch, server=client.server, edit=edit, until="route.nets")
    assert result["ok"], result.get("failed")
    lvs_args = substituted(step_of(steps, "lvs.run")["arguments"], str(scratch))
    return client, result["results"]["route.nets"], lvs_args


def ota5_plans(params: dict[str, Any]) -> list[Any]:
    return [example_request("ota5", params["pdk"])]


def track_layer_index(client: Client, track: dict[str, Any]) -> int:
    """The layer of one track of the route's report (metal 3, or metal 1 beside it)."""
    tech = client.server.session.tech
    assert tech is not None
    return tech.role_index(client.server.session.layout, track["layer"])


@pytest.mark.rust_plans(requests=ota5_plans)
@pytest.mark.parametrize("pdk", ["ihp_sg13g2", "sky130"])
def test_clean_then_open(pdk: str, tmp_path: Path) -> None:
    client, route, lvs_args = routed(pdk, tmp_path)
    assert client.call("lvs.run", **lvs_args)["match"]
    # delete the track of a net that joins several stubs in one channel
    ch = next(c for c in route["channels"] if "tail" in c["tracks_um"])
    tr = ch["tracks_um"]["tail"]
    layout = client.server.session.layout
    top = layout.cell(route["cell_name"])
    li = track_layer_index(client, tr)
    probe = kdb.Point(int(round(tr["x"][1] * 1000)), int(round(tr["y"] * 1000)))
    victims = [s for s in top.shapes(li).each() if s.polygon.inside(probe) or s.bbox().contains(probe)]
    assert victims
    for s in victims:
        top.shapes(li).erase(s)
    r = client.call("lvs.run", **lvs_args)
    assert not r["match"]
    named = set(r["unmatched_nets_layout"]) | set(r["unmatched_nets_schematic"]) | {
        n["schematic"] for n in r["net_mismatches"]} | {n["layout"] for n in r["net_mismatches"]}
    assert "tail" in named or "tail" in r["unlabelled_nets"], r


@pytest.mark.rust_plans(requests=ota5_plans)
@pytest.mark.parametrize("pdk", ["ihp_sg13g2", "sky130"])
def test_short(pdk: str, tmp_path: Path) -> None:
    client, route, lvs_args = routed(pdk, tmp_path)
    # two nets on neighbouring tracks of one layer in one channel, bridged where their spans
    # overlap
    pair = None
    for ch in route["channels"]:
        trs = ch["tracks_um"]
        for a in trs:
            for b in trs:
                ta, tb = trs[a], trs[b]
                lo, hi = max(ta["x"][0], tb["x"][0]), min(ta["x"][1], tb["x"][1])
                if (a < b and hi > lo and ch["track_of"][b] == ch["track_of"][a] + 1
                        and ta["layer"] == tb["layer"]):
                    pair = (a, b, (lo + hi) / 2, ta, tb)
    assert pair is not None
    a, b, x, ta, tb = pair
    hw = ta["half_width"]
    layout = client.server.session.layout
    top = layout.cell(route["cell_name"])
    box = kdb.DBox(x - hw, ta["y"], x + hw, tb["y"]).to_itype(layout.dbu)
    top.shapes(track_layer_index(client, ta)).insert(box)
    r = client.call("lvs.run", **lvs_args)
    assert not r["match"]
    named = set(r["unmatched_nets_layout"]) | set(r["unmatched_nets_schematic"]) | {
        n["schematic"] for n in r["net_mismatches"]} | {n["layout"] for n in r["net_mismatches"]}
    named |= {t for d in r["unmatched_devices_layout"] for t in d["terminals"].values()}
    assert named & {a, b} or any(a in n and b in n for n in named if n), (a, b, r)


@pytest.mark.rust_plans(requests=ota5_plans)
@pytest.mark.parametrize("pdk", ["ihp_sg13g2", "sky130"])
def test_wrong_width(pdk: str, tmp_path: Path) -> None:
    edited = []

    def wider_m5(step: dict[str, Any]) -> dict[str, Any]:
        if step["skill"] == "layout.create_device" and step["arguments"]["device_id"] == "M5":
            step["arguments"]["w"] = 6e-6
            edited.append(step["step_id"])
        return step

    client, _route, lvs_args = routed(pdk, tmp_path, wider_m5)
    assert len(edited) == 1
    r = client.call("lvs.run", **lvs_args)
    assert not r["match"]
    mism = r["parameter_mismatches"]
    assert [m["schematic"]["name"] for m in mism] == ["M5"], r
    assert mism[0]["layout"]["params"]["W"] == pytest.approx(6.0, abs=0.02)
    assert mism[0]["schematic"]["params"]["W"] == pytest.approx(4.0, abs=0.02)
