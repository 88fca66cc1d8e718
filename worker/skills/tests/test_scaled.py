"""A rule set scaled by 1.5 with other GDS numbers and other layer names comes out clean."""

from __future__ import annotations

from typing import Any

from helpers import Client, drc_total, scaled_rule_set


def test_scaled_rule_set_is_really_different(toy_rules: dict[str, Any]) -> None:
    s = scaled_rule_set(toy_rules, 1.5)
    assert not set(s["layers"]) & set(toy_rules["layers"])
    nums = {v["layer"] if isinstance(v, dict) else v for v in toy_rules["layers"].values()}
    assert not {v["layer"] for v in s["layers"].values()} & nums
    tech_roles = {v["role"] for v in s["layers"].values() if "role" in v}
    assert {"active", "poly", "contact", "metal1", "via1", "metal2", "nwell"} <= tech_roles


def test_scaled_devices_and_modules_clean(client: Client, scaled_rules: dict[str, Any]) -> None:
    data = client.call("tech.load", rules=scaled_rules)
    assert not [r for r in data["missing_roles"] if r != "pplus|nplus"]
    for mos_type in ("nmos", "pmos"):
        for w, length, nf, m in ((1.5e-6, 0.75e-6, 1, 1), (6e-6, 0.75e-6, 2, 1), (6e-6, 1.5e-6, 4, 2)):
            d = client.call("layout.create_device", type=mos_type, w=w, l=length, nf=nf, m=m)
            assert drc_total(client, d["cell_name"]) == (0, []), (mos_type, w, length, nf, m)
    for dtype, w, length in (("resistor", 1.5e-6, 6e-6), ("capacitor", 6e-6, 6e-6)):
        d = client.call("layout.create_device", type=dtype, w=w, l=length)
        assert drc_total(client, d["cell_name"]) == (0, []), dtype
    pair = client.call("layout.create_common_centroid_pair",
                       device_a={"device_id": "M1", "type": "nmos", "w": 6e-6, "l": 0.75e-6, "nf": 2, "m": 2},
                       device_b={"device_id": "M2", "type": "nmos", "w": 6e-6, "l": 0.75e-6, "nf": 2, "m": 2},
                       arrangement="2D")
    client.call("layout.add_dummies", cell=pair["cell_name"])
    mirror = client.call("layout.create_common_centroid_pair",
                         device_a={"device_id": "M3", "type": "pmos", "w": 6e-6, "l": 0.75e-6, "nf": 2, "m": 2},
                         device_b={"device_id": "M4", "type": "pmos", "w": 6e-6, "l": 0.75e-6, "nf": 2, "m": 2})
    group = client.call("layout.create_interdigitated_group", devices=[
        {"device_id": f"G{i}", "type": "nmos", "w": 1.5e-6, "l": 1.5e-6, "units": u} for i, u in enumerate((1, 2, 4))])
    client.call("layout.place", cell_name="top", rows=[{"cells": [group["cell_name"]]},
                                                       {"cells": [pair["cell_name"]]},
                                                       {"cells": [mirror["cell_name"]]}])
    ring = client.call("layout.add_guard_ring", cell="top", kind="substrate")
    assert drc_total(client, ring["cell_name"]) == (0, [])
    wring = client.call("layout.add_guard_ring", cell=mirror["cell_name"], kind="well")
    assert drc_total(client, wring["cell_name"]) == (0, [])
