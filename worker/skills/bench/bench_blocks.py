"""Hierarchical blocks vs flat (issue 26): a bank of k five-transistor OTAs (bench_scaling's
sizes: W = 4 µm, nf = 2, L = 0.5 µm / 1 µm tail; own inputs and output per OTA, shared
bias) on SKY130, laid out three ways, each checked with drc.run and lvs.run (flat devices):

* ``blocks``: the OTA routed once as a block with ports (nmos row M1 M2 M5, pmos row
  M3 M4), k instances (``layout.instantiate_block``) in rows of ``--per-row``, the top
  routed over them;
* ``flat rows``: the same device cells in one ``route.nets``, the same arrangement (per
  row of OTAs one nmos row and one pmos row of their devices side by side);
* ``planner``: the flat bank's draft candidate from ``centroid plan --json`` run step by
  step (what a flat candidate costs today; needs the ``centroid`` binary).

Prints per layout: bbox area, device area, utilisation (layout.metrics), seconds to draw
and route, seconds of drc.run and lvs.run, DRC total, LVS match.

    cd worker/skills && ../../.venv/bin/python bench/bench_blocks.py --otas 10 [--per-row 5]
        [--layouts blocks,flat,planner]
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

import rust_plans  # noqa: E402
from bench_scaling import write_circuit  # noqa: E402
from helpers import REPO_ROOT, Client, load_rule_set  # noqa: E402

OTA = [  # id, type, terminals (local nets), l
    ("M1", "nmos", {"d": "n1", "g": "inp", "s": "tail", "b": "vss"}, 0.5e-6),
    ("M2", "nmos", {"d": "out", "g": "inn", "s": "tail", "b": "vss"}, 0.5e-6),
    ("M5", "nmos", {"d": "tail", "g": "vbias", "s": "vss", "b": "vss"}, 1e-6),
    ("M3", "pmos", {"d": "n1", "g": "n1", "s": "vdd", "b": "vdd"}, 0.5e-6),
    ("M4", "pmos", {"d": "out", "g": "n1", "s": "vdd", "b": "vdd"}, 0.5e-6),
]
PORTS = ["inp", "inn", "out", "vbias", "vdd", "vss"]
SUPPLIES = [{"name": "vdd", "net_type": "power"}, {"name": "vss", "net_type": "ground"}]
W, NF = 4e-6, 2


def flat_devices(otas: int, sep: str = "/") -> list[dict[str, Any]]:
    """The bank's devices flattened: ids ``X0/M1`` (``sep``: device cells need ``X0_M1``),
    internal nets ``X0/n1``."""
    out = []
    for i in range(otas):
        ports = {"inp": f"inp{i}", "inn": f"inn{i}", "out": f"out{i}", "vbias": "vbias",
                 "vdd": "vdd", "vss": "vss"}
        for dev, dtype, terms, length in OTA:
            out.append({"id": f"X{i}{sep}{dev}", "type": dtype, "w": W, "l": length, "nf": NF, "m": 1,
                        "terminals": {k: ports.get(n, f"X{i}/{n}") for k, n in terms.items()}})
    return out


def device_cell(client: Client, dev_id: str, dtype: str, length: float, cell: str) -> str:
    return client.call("layout.create_device", device_id=dev_id, type=dtype, w=W, l=length,
                       nf=NF, cell_name=cell)["cell_name"]


def check(client: Client, cell: str, otas: int) -> dict[str, Any]:
    started = time.perf_counter()
    drc = client.call("drc.run", cell=cell)
    drc_s = time.perf_counter() - started
    started = time.perf_counter()
    lvs = client.call("lvs.run", cell=cell, devices=flat_devices(otas))
    lvs_s = time.perf_counter() - started
    metrics = client.call("layout.metrics", cell=cell)
    return {"bbox_um2": metrics["bbox_area_um2"], "device_um2": metrics["device_area_um2"],
            "utilisation": metrics["utilisation"], "drc_s": drc_s, "lvs_s": lvs_s,
            "drc": drc["total"], "lvs": lvs["match"]}


def draw_bank(client: Client, otas: int, per_row: int,
              block_routed: Callable[[], None] = lambda: None) -> None:
    """The OTA drawn and routed once as ``BLK_OTA`` (then ``block_routed()``), ``otas``
    instances of it in rows of ``per_row``, the bank routed as ``TOP``."""
    pitch = client.call("route.info")["pitch_um"]
    cells = {d: device_cell(client, d, t, length, f"OTA_{d}") for d, t, _terms, length in OTA}
    for name, ids in (("OTA_R0", ["M1", "M2", "M5"]), ("OTA_R1", ["M3", "M4"])):
        client.call("layout.place", cell_name=name, rows=[{"cells": [cells[i] for i in ids], "gap": pitch}])
    client.call("route.nets", cell_name="BLK_OTA", rows=["OTA_R0", "OTA_R1"], nets=SUPPLIES,
                devices=[{"id": d, "type": t, "terminals": terms} for d, t, terms, _l in OTA],
                ports=PORTS)
    block_routed()
    instances = [client.call("layout.instantiate_block", block="BLK_OTA", device_id=f"X{i}",
                             cell_name=f"I_X{i}")["cell"] for i in range(otas)]
    rows = []
    for r in range(math.ceil(otas / per_row)):
        client.call("layout.place", cell_name=f"TOP_R{r}",
                    rows=[{"cells": instances[r * per_row:(r + 1) * per_row], "gap": pitch}])
        rows.append(f"TOP_R{r}")
    devices = [{"id": f"X{i}", "type": "block",
                "terminals": {"inp": f"inp{i}", "inn": f"inn{i}", "out": f"out{i}",
                              "vbias": "vbias", "vdd": "vdd", "vss": "vss"}} for i in range(otas)]
    client.call("route.nets", cell_name="TOP", rows=rows, devices=devices, nets=SUPPLIES)


def blocks(client: Client, otas: int, per_row: int) -> dict[str, Any]:
    started = time.perf_counter()
    draw_bank(client, otas, per_row)
    return {"draw_route_s": time.perf_counter() - started, **check(client, "TOP", otas)}


def flat_rows(client: Client, otas: int, per_row: int) -> dict[str, Any]:
    started = time.perf_counter()
    pitch = client.call("route.info")["pitch_um"]
    flat = flat_devices(otas, "_")
    rows = []
    for r in range(math.ceil(otas / per_row)):
        group = [d for d in flat if r * per_row <= int(d["id"].split("_")[0][1:]) < (r + 1) * per_row]
        for dtype in ("nmos", "pmos"):
            cells = [device_cell(client, d["id"], dtype, d["l"], d["id"])
                     for d in group if d["type"] == dtype]
            client.call("layout.place", cell_name=f"FLAT_R{r}_{dtype}", rows=[{"cells": cells, "gap": pitch}])
            rows.append(f"FLAT_R{r}_{dtype}")
    client.call("route.nets", cell_name="TOP", rows=rows, nets=SUPPLIES,
                devices=[{k: d[k] for k in ("id", "type", "terminals")} for d in flat])
    return {"draw_route_s": time.perf_counter() - started, **check(client, "TOP", otas)}


def planner(otas: int, scratch: Path) -> dict[str, Any]:
    circuit = write_circuit(otas * len(OTA), True, scratch / "bank")
    drafted = subprocess.run([str(rust_plans.centroid_binary()), "plan", "--json", "--candidates", "1",
                              str(circuit)], capture_output=True, text=True, check=True)
    import json

    steps = json.loads(drafted.stdout)["candidates"][0]["plan"]["steps"]
    out = rust_plans.run_plan(steps, scratch / "run")
    if not out["ok"]:
        raise RuntimeError(out["failed"]["error"]["message"])
    seconds: dict[str, float] = {}
    for t in out["steps"]:
        seconds[t["skill"]] = seconds.get(t["skill"], 0.0) + t["seconds"]
    metrics = out["results"]["layout.metrics"]
    drawing = sum(s for skill, s in seconds.items() if skill not in ("drc.run", "lvs.run", "layout.metrics",
                                                                     "layout.export", "layout.render"))
    return {"bbox_um2": metrics["bbox_area_um2"], "device_um2": metrics["device_area_um2"],
            "utilisation": metrics["utilisation"], "draw_route_s": drawing,
            "drc_s": seconds.get("drc.run", 0.0), "lvs_s": seconds.get("lvs.run", 0.0),
            "drc": out.get("drc_total"), "lvs": out.get("lvs_match")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--otas", type=int, default=10)
    parser.add_argument("--per-row", type=int, default=5, help="OTAs per row (blocks and flat rows)")
    parser.add_argument("--layouts", default="blocks,flat,planner",
                        help="which layouts, comma-separated: blocks, flat (flat rows), planner")
    args = parser.parse_args()
    chosen = args.layouts.split(",")
    rules = load_rule_set(REPO_ROOT / "examples" / "ota5_spice" / "drc_rules.json")
    results = {}
    for key, name, run in (("blocks", "blocks", blocks), ("flat", "flat rows", flat_rows)):
        if key not in chosen:
            continue
        client = Client()
        client.call("tech.load", rules=rules)
        results[name] = run(client, args.otas, args.per_row)
    if "planner" in chosen:
        with tempfile.TemporaryDirectory(prefix="bench_blocks_") as scratch:
            results["planner (flat)"] = planner(args.otas, Path(scratch))
    print(f"{args.otas} OTAs ({args.otas * len(OTA)} devices), SKY130, {args.per_row} OTAs per row")
    print("| layout | bbox µm² | device µm² | utilisation | draw+route s | drc s | lvs s | DRC | LVS |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for name, r in results.items():
        print(f"| {name} | {r['bbox_um2']:.0f} | {r['device_um2']:.0f} | {100 * r['utilisation']:.1f} % | "
              f"{r['draw_route_s']:.2f} | {r['drc_s']:.2f} | {r['lvs_s']:.2f} | {r['drc']} | {r['lvs']} |")


if __name__ == "__main__":
    main()
