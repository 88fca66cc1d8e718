"""Several bulk nets in one routing call: a placed PMOS row holding devices on three bulk
nets (two supplies and a PMOS with its bulk on its source) is split by ``route.nets`` into
one row per bulk net, each in its own n-well with its own tap rail — DRC clean with our
checker and LVS clean on every rule set; a cell mixing two bulk nets is refused, naming
its devices."""

from __future__ import annotations

from typing import Any

import klayout.db as kdb
from helpers import Client

DEVICES = [  # an OTA on vdd1 and a PMOS source follower on vdd2 with its bulk on its source
    ("M1", "nmos", {"d": "n1", "g": "inp", "s": "tail", "b": "vss"}),
    ("M2", "nmos", {"d": "out", "g": "inn", "s": "tail", "b": "vss"}),
    ("M5", "nmos", {"d": "tail", "g": "vbias", "s": "vss", "b": "vss"}),
    ("M3", "pmos", {"d": "n1", "g": "n1", "s": "vdd1", "b": "vdd1"}),
    ("M6", "pmos", {"d": "buf", "g": "vbp", "s": "vdd2", "b": "vdd2"}),
    ("M4", "pmos", {"d": "out", "g": "n1", "s": "vdd1", "b": "vdd1"}),
    ("M7", "pmos", {"d": "vss", "g": "out", "s": "buf", "b": "buf"}),
]
NETS = ([{"name": n, "net_type": "power"} for n in ("vdd1", "vdd2")] + [{"name": "vss", "net_type": "ground"}]
        + [{"name": n, "net_type": "signal"} for n in ("n1", "inp", "inn", "out", "tail", "vbias", "vbp", "buf")])


def circuit() -> list[dict[str, Any]]:
    return [{"id": i, "type": t, "w": 2e-6, "l": 0.5e-6, "nf": 2, "m": 1, "terminals": terms}
            for i, t, terms in DEVICES]


def nwell_polygons(client: Client, cell: str) -> int:
    session = client.server.session
    tech = session.tech
    assert tech is not None
    layer = tech.role_index(session.layout, "nwell")
    return kdb.Region(session.layout.cell(cell).begin_shapes_rec(layer)).merged().count()


def test_a_row_on_three_bulk_nets_becomes_three_wells(loaded: Client) -> None:
    pitch = loaded.call("route.info")["pitch_um"]
    cells = {}
    for d in circuit():
        cells[d["id"]] = loaded.call("layout.create_device", device_id=d["id"], type=d["type"], w=d["w"],
                                     l=d["l"], nf=d["nf"], cell_name=f"dev_{d['id']}")["cell_name"]
    nmos = [cells[i] for i, t, _ in DEVICES if t == "nmos"]
    pmos = [cells[i] for i, t, _ in DEVICES if t == "pmos"]
    loaded.call("layout.place", cell_name="ROW0", rows=[{"cells": nmos, "gap": pitch}])
    loaded.call("layout.place", cell_name="ROW1", rows=[{"cells": pmos, "gap": pitch}])
    devices = [{k: d[k] for k in ("id", "type", "terminals")} for d in circuit()]
    routed = loaded.call("route.nets", cell_name="TOP", rows=["ROW0", "ROW1"], devices=devices, nets=NETS)
    assert len(routed["channels"]) == 5, "ROW1 split into three rows: vdd1, vdd2, buf"
    assert nwell_polygons(loaded, "TOP") == 3
    layout = loaded.server.session.layout
    whole = layout.cell("ROW1").bbox().width()
    for k, held in enumerate((2, 1, 1)):  # vdd1: M3, M4; vdd2: M6; buf: M7 — packed side by side
        part = layout.cell(f"ROW1_b{k}")
        assert part.child_instances() == held
        assert part.bbox().width() < whole * (held + 0.5) / 4, (k, part.bbox().width(), whole)
    drc = loaded.call("drc.run", cell="TOP")
    assert drc["total"] == 0, drc["violations"][:3]
    lvs = loaded.call("lvs.run", cell="TOP", devices=circuit())
    assert lvs["match"], {k: lvs.get(k) for k in ("device_mismatches", "net_mismatches")}


def test_a_cell_on_two_bulk_nets_is_refused(loaded: Client) -> None:
    spec = {"type": "pmos", "w": 2e-6, "l": 0.5e-6, "nf": 2, "m": 2}
    pair = loaded.call("layout.create_common_centroid_pair", device_a={**spec, "device_id": "M3"},
                       device_b={**spec, "device_id": "M6"})["cell_name"]
    nmos = loaded.call("layout.create_device", device_id="M1", cell_name="dev_M1",
                       **{**spec, "type": "nmos"})["cell_name"]
    loaded.call("layout.place", cell_name="R0", rows=[{"cells": [nmos], "gap": 1}])
    loaded.call("layout.place", cell_name="R1", rows=[{"cells": [pair], "gap": 1}])
    devices = [{"id": i, "type": t, "terminals": terms} for i, t, terms in DEVICES if i in ("M1", "M3", "M6")]
    r = loaded.raw("route.nets", {"cell_name": "T", "rows": ["R0", "R1"], "devices": devices})
    assert r["error"]["code"] == "INVALID_PARAM"
    message = r["error"]["message"]
    assert "different bulk nets" in message and "M3" in message and "M6" in message, message
