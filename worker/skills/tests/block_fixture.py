"""The planner's blocks as the routing tests build them: a differential pair and a mirror
as common-centroid pairs with dummies, the other devices single, placed in the given rows
and routed by ``route.nets`` with the rows folded; and the block instanced twice in a
parent, routed and checked DRC/LVS clean against its flat devices."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import klayout.db as kdb
from helpers import Client
from test_blocks import check_clean

#: device id -> (type, terminals)
Terms = dict[str, tuple[str, dict[str, str]]]
PAIRS = {"dp": ("M1", "M2", False), "cm": ("M3", "M4", True)}


def routed_block(client: Client, terms: Terms, size: dict[str, dict[str, Any]],
                 rows: list[list[str]], ports: list[str]) -> dict[str, Any]:
    """Block ``BLK``: ``dp`` (M1 M2) and ``cm`` (M3 M4, on one diffusion) ABBA with a dummy
    each, every other device of ``terms`` its own cell; ``rows`` name the cells bottom up
    (``dp``, ``cm`` or a device id)."""
    def dev(i: str) -> dict[str, Any]:
        return {"device_id": i, "type": terms[i][0], **size[i]}

    for name, (a, b, share) in PAIRS.items():
        client.call("layout.create_common_centroid_pair", device_a=dev(a), device_b=dev(b),
                    arrangement="ABBA", share_diffusion=share, cell_name=f"B_{name}")
    paired = {d for a, b, _share in PAIRS.values() for d in (a, b)}
    for i in terms:
        if i not in paired:
            client.call("layout.create_device", cell_name=f"B_{i}", **dev(i))
    client.call("layout.add_dummies", cell="B_cm", count=1)
    client.call("layout.add_dummies", cell="B_dp", count=1)
    pitch = client.call("route.info")["pitch_um"]
    for k, row in enumerate(rows):
        client.call("layout.place", cell_name=f"B_ROW{k}",
                    rows=[{"cells": [f"B_{c}" for c in row], "gap": pitch}])
    devices = [{"id": i, "type": t, "terminals": nets} for i, (t, nets) in terms.items()]
    return client.call("route.nets", cell_name="BLK", rows=[f"B_ROW{k}" for k in range(len(rows))],
                       devices=devices,
                       nets=[{"name": "vss", "net_type": "ground"},
                             {"name": "vdd", "net_type": "power"}],
                       ports=ports, fold_device_rows={"gap": pitch})


def exported_block(client: Client, folder: Path) -> tuple[kdb.Layout, kdb.Cell]:
    """Block ``BLK`` written to GDS under ``folder`` and read back: the layout and the cell."""
    path = client.call("layout.export", cell="BLK", path=str(folder / "blk.gds"))["path"]
    layout = kdb.Layout()
    layout.read(path)
    return layout, layout.cell("BLK")


def flat(path: str, nets: dict[str, str], terms: Terms,
         size: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Instance ``path``'s devices in the parent's flat netlist (inner nets prefixed)."""
    return [{"id": f"{path}/{i}", "type": t, **size[i],
             "terminals": {k: nets.get(n, f"{path}/{n}") for k, n in own.items()}}
            for i, (t, own) in terms.items()]


def two_instances_clean(client: Client, wiring: dict[str, dict[str, str]], terms: Terms,
                        size: dict[str, dict[str, Any]]) -> None:
    """``BLK`` instanced once per entry of ``wiring`` (instance -> port nets) side by side in
    ``TOP``, routed, DRC and LVS clean."""
    cells = [client.call("layout.instantiate_block", block="BLK", device_id=inst,
                         cell_name=f"I_{inst}")["cell"] for inst in wiring]
    pitch = client.call("route.info")["pitch_um"]
    client.call("layout.place", cell_name="TOP_ROW0", rows=[{"cells": cells, "gap": pitch}])
    client.call("route.nets", cell_name="TOP", rows=["TOP_ROW0"],
                devices=[{"id": i, "type": "block", "terminals": t} for i, t in wiring.items()],
                nets=[{"name": "vdd", "net_type": "power"}, {"name": "vss", "net_type": "ground"}])
    check_clean(client, "TOP", [d for inst, nets in wiring.items()
                                for d in flat(inst, nets, terms, size)])
