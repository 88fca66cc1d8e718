"""Module generators (pairs, groups, dummies, guard rings, placement) are DRC-clean."""

from __future__ import annotations

from typing import Any

import pytest
from helpers import Client, drc_total


def dev(device_id: str, mos_type: str, m: int = 2, w: float = 2e-6, length: float = 0.5e-6, nf: int = 2) -> dict[str, Any]:
    return {"device_id": device_id, "type": mos_type, "w": w, "l": length, "nf": nf, "m": m}


@pytest.mark.parametrize("mos_type", ["nmos", "pmos"])
def test_common_centroid_pairs_clean(loaded: Client, mos_type: str) -> None:
    for arrangement, m in (("ABBA", 2), ("ABAB", 1), ("2D", 2), ("ABBA/BAAB", 4)):
        tag = arrangement.replace("/", "_")
        p = loaded.call("layout.create_common_centroid_pair", device_a=dev(f"A{tag}", mos_type, m),
                        device_b=dev(f"B{tag}", mos_type, m), arrangement=arrangement)
        assert drc_total(loaded, p["cell_name"]) == (0, []), arrangement
        assert len(p["units"]) == 2 * m
        assert {u["orientation"] for u in p["units"]} == {"R0"}
        d = loaded.call("layout.add_dummies", cell=p["cell_name"])
        rows = len({u["row"] for u in p["units"]})
        assert len(d["dummies"]) == 2 * rows
        assert all(u["dummy"] for u in d["dummies"])
        assert drc_total(loaded, p["cell_name"]) == (0, []), (arrangement, "dummies")
        g = loaded.call("layout.add_guard_ring", cell=p["cell_name"])
        assert drc_total(loaded, g["cell_name"]) == (0, []), (arrangement, "ring")


def test_seed_example_call(loaded: Client) -> None:
    """The call of seed 001 §5.5.1 (m=2 each, ABBA; l = 0.18 µm, or the process minimum
    where that is longer, e.g. 0.28 µm for GF180MCU 3.3 V devices)."""
    tech = loaded.server.session.tech
    assert tech is not None
    length = max(0.18e-6, tech.width("poly") * 1e-9)
    p = loaded.call("layout.create_common_centroid_pair",
                    device_a={"device_id": "M1", "type": "nmos", "w": 2e-6, "l": length, "m": 2},
                    device_b={"device_id": "M2", "type": "nmos", "w": 2e-6, "l": length, "m": 2},
                    arrangement="ABBA")
    assert p["device_instances"] == ["M1_A1", "M2_B1", "M2_B2", "M1_A2"]
    assert drc_total(loaded, p["cell_name"])[0] == 0


@pytest.mark.parametrize("mos_type", ["nmos", "pmos"])
def test_interdigitated_clean(loaded: Client, mos_type: str) -> None:
    devices = [dict(dev(f"{mos_type}{i}", mos_type, 1, w=1e-6, length=1e-6, nf=1), units=u)
               for i, u in enumerate((1, 2, 4))]
    g = loaded.call("layout.create_interdigitated_group", devices=devices)
    assert g["pattern"] == "CBCACBC"
    assert drc_total(loaded, g["cell_name"])[0] == 0
    loaded.call("layout.add_dummies", cell=g["cell_name"], count=2)
    assert drc_total(loaded, g["cell_name"])[0] == 0
    r = loaded.call("layout.add_guard_ring", cell=g["cell_name"])
    assert drc_total(loaded, r["cell_name"])[0] == 0


@pytest.mark.parametrize("kind", ["substrate", "well"])
def test_guard_rings_around_devices(loaded: Client, kind: str) -> None:
    mos_type = "pmos" if kind == "well" else "nmos"
    d = loaded.call("layout.create_device", type=mos_type, w=4e-6, l=0.5e-6, nf=4)
    g = loaded.call("layout.add_guard_ring", cell=d["cell_name"], kind=kind)
    assert g["pins"]["B"]["layer"]
    assert drc_total(loaded, g["cell_name"])[0] == 0
    # a substrate ring around a pmos too
    p = loaded.call("layout.create_device", type="pmos", w=2e-6, l=0.5e-6, nf=1)
    g = loaded.call("layout.add_guard_ring", cell=p["cell_name"], kind="substrate")
    assert drc_total(loaded, g["cell_name"])[0] == 0


def test_dummies_around_single_device(loaded: Client) -> None:
    d = loaded.call("layout.create_device", type="nmos", w=2e-6, l=0.5e-6, nf=2, device_id="MX")
    w = loaded.call("layout.add_dummies", cell="MX")
    assert len(w["dummies"]) == 2
    assert drc_total(loaded, w["cell_name"])[0] == 0
    assert d["cell_name"] == "MX"


def build_ota(client: Client) -> str:
    pair = client.call("layout.create_common_centroid_pair", device_a=dev("M1", "nmos", 2, w=4e-6),
                       device_b=dev("M2", "nmos", 2, w=4e-6), arrangement="ABBA")
    client.call("layout.add_dummies", cell=pair["cell_name"])
    mirror = client.call("layout.create_common_centroid_pair", device_a=dev("M3", "pmos", 2, w=4e-6),
                         device_b=dev("M4", "pmos", 2, w=4e-6), arrangement="ABBA")
    tail = client.call("layout.create_device", device_id="M5", type="nmos", w=4e-6, l=0.5e-6, nf=2)
    client.call("layout.place", cell_name="ota", rows=[
        {"cells": [tail["cell_name"]]}, {"cells": [pair["cell_name"]]}, {"cells": [mirror["cell_name"]]}])
    return "ota"


def test_ota_rows_clean_and_symmetric(loaded: Client) -> None:
    build_ota(loaded)
    assert drc_total(loaded, "ota") == (0, [])
    data = loaded.call("layout.metrics", cell="ota")
    x1, _, x2, _ = data["bbox_um"]
    assert abs(x1 + x2) < 0.02  # centred on the axis x = 0
    assert {g["module"] for g in data["groups"]} == {"cc_M1_M2", "cc_M3_M4"}
    assert all(g["centroid_error"] == 0 for g in data["groups"])
    g = loaded.call("layout.add_guard_ring", cell="ota", kind="substrate")
    assert drc_total(loaded, g["cell_name"]) == (0, [])


def test_mixed_row_placement_clean(loaded: Client) -> None:
    a = loaded.call("layout.create_device", type="nmos", w=2e-6, l=0.5e-6, nf=2)["cell_name"]
    b = loaded.call("layout.create_device", type="pmos", w=2e-6, l=0.5e-6, nf=2)["cell_name"]
    c = loaded.call("layout.create_device", type="pmos", w=3e-6, l=1e-6, nf=1)["cell_name"]
    r = loaded.call("layout.create_device", type="resistor", w=1e-6, l=4e-6)["cell_name"]
    k = loaded.call("layout.create_device", type="capacitor", w=4e-6, l=4e-6)["cell_name"]
    loaded.call("layout.place", cell_name="mix", rows=[{"cells": [a, b, c]}, {"cells": [r, k, a]},
                                                       {"cells": [c, b, a]}])
    assert drc_total(loaded, "mix") == (0, [])


def test_place_items_overlap_conflict(loaded: Client) -> None:
    a = loaded.call("layout.create_device", type="nmos", w=2e-6, l=0.5e-6)["cell_name"]
    r = loaded.raw("layout.place", {"cell_name": "p1", "items": [
        {"cell": a, "x": 0, "y": 0}, {"cell": a, "x": 0.5, "y": 0.2, "name": "second"}]})
    assert r["ok"] is False and r["error"]["code"] == "CONFLICT"
    # far apart: fine, and clean
    ok = loaded.call("layout.place", cell_name="p2", items=[
        {"cell": a, "x": 0, "y": 0}, {"cell": a, "x": 20, "y": 0, "name": "b"},
        {"cell": a, "x": 0, "y": 20, "name": "c", "orientation": "R90"}])
    assert len(ok["instances"]) == 3
    assert drc_total(loaded, "p2")[0] == 0
    # abutting bboxes (no overlap): either the rules allow it (and it is clean) or CONFLICT
    width = ok["instances"][0]["bbox_um"][2] - ok["instances"][0]["bbox_um"][0]
    for other in (a, loaded.call("layout.create_device", type="pmos", w=2e-6, l=0.5e-6)["cell_name"]):
        r = loaded.raw("layout.place", {"cell_name": f"p3{other}", "items": [
            {"cell": a, "x": 0, "y": 0}, {"cell": other, "x": width, "y": 0, "name": "b"}]})
        if r["ok"]:
            assert drc_total(loaded, f"p3{other}")[0] == 0
        else:
            assert r["error"]["code"] == "CONFLICT"
            assert r["error"]["details"]["need_x_um"] > 0


def test_unknown_cells_not_found(loaded: Client) -> None:
    for name, args in (("layout.add_dummies", {"cell": "nope"}),
                       ("layout.add_guard_ring", {"cell": "nope"}),
                       ("layout.metrics", {"cell": "nope"}),
                       ("layout.export", {"cell": "nope", "path": "/tmp/x.gds"}),
                       ("layout.place", {"cell_name": "z", "rows": [{"cells": ["nope"]}]})):
        r = loaded.raw(name, args)
        assert r["error"]["code"] == "NOT_FOUND", name


def test_matching_needs_same_type(loaded: Client) -> None:
    r = loaded.raw("layout.create_common_centroid_pair",
                   {"device_a": dev("M1", "nmos"), "device_b": dev("M2", "pmos")})
    assert r["error"]["code"] == "INVALID_PARAM"
    assert r["error"]["details"] == {"device_a_type": "nmos", "device_b_type": "pmos"}
    r = loaded.raw("layout.create_common_centroid_pair",
                   {"device_a": dev("M1", "nmos", 3), "device_b": dev("M2", "nmos", 3), "arrangement": "ABBA"})
    assert r["error"]["code"] == "INVALID_PARAM"
    r = loaded.raw("layout.create_interdigitated_group",
                   {"devices": [dev("M1", "nmos"), dev("M2", "nmos", w=3e-6)]})
    assert r["error"]["code"] == "INVALID_PARAM"
