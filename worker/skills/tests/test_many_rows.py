"""``route.nets`` takes any number of rows: 70 one-device rows (nmos and pmos alternating,
a chain of signal nets through them) are stacked, routed DRC clean and LVS clean."""

from __future__ import annotations

import time

from helpers import REPO_ROOT, Client, load_rule_set

ROWS = 70


def chain(rows: int) -> list[dict]:
    """Device i: gate on n{i}, drain on n{i+1}; nmos to gnd, pmos to vdd (bulk = source)."""
    devices = []
    for i in range(rows):
        mos = "nmos" if i % 2 == 0 else "pmos"
        rail = "gnd" if mos == "nmos" else "vdd"
        devices.append({"id": f"M{i}", "type": mos, "w": 0.5e-6, "l": 0.15e-6, "nf": 1, "m": 1,
                        "terminals": {"d": f"n{i + 1}", "g": f"n{i}", "s": rail, "b": rail}})
    return devices


def test_more_than_64_rows_route_clean() -> None:
    client = Client()
    client.call("tech.load", rules=load_rule_set(REPO_ROOT / "examples" / "pdk" / "sky130.json"))
    devices = chain(ROWS)
    pitch = client.call("route.info")["pitch_um"]
    rows = []
    for d in devices:
        cell = client.call("layout.create_device", device_id=d["id"], type=d["type"], w=d["w"],
                           l=d["l"], nf=1, cell_name=f"dev_{d['id']}")["cell_name"]
        client.call("layout.place", cell_name=f"ROW_{d['id']}", rows=[{"cells": [cell], "gap": pitch}])
        rows.append(f"ROW_{d['id']}")
    nets = [{"name": "gnd", "net_type": "ground"}, {"name": "vdd", "net_type": "power"}]
    nets += [{"name": f"n{i}", "net_type": "signal"} for i in range(ROWS + 1)]
    started = time.monotonic()
    routed = client.call("route.nets", cell_name="TOP", rows=rows,
                         devices=[{k: d[k] for k in ("id", "type", "terminals")} for d in devices],
                         nets=nets)
    elapsed = time.monotonic() - started
    assert len(routed["channels"]) == ROWS + 1
    drc = client.call("drc.run", cell="TOP")
    assert drc["total"] == 0, drc["violations"][:3]
    lvs = client.call("lvs.run", cell="TOP", devices=devices)
    assert lvs["match"], {k: lvs.get(k) for k in ("device_mismatches", "net_mismatches")}
    assert elapsed < 60, f"route.nets took {elapsed:.1f} s for {ROWS} rows"
