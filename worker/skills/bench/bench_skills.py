"""Benchmark the skills through the real stdio server (JSON-RPC round trip included).

    cd worker/skills && ../../.venv/bin/python bench/bench_skills.py [--runs 20] [rules.json ...]

Prints, per rule set, a table of wall-clock times per skill call (median / p90 / min over
N runs, milliseconds, measured in the client around one request/response line) and the
server-side ``duration_ms`` median.  The OTA row is ``drc.run`` on a placed five-transistor
OTA: nmos input pair M1/M2 ABBA (m=2 each, dummies), pmos mirror M3/M4 ABBA (m=2 each),
nmos tail M5; every device w=4 µm, l=0.5 µm, nf=2.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SKILLS_DIR = Path(__file__).resolve().parents[1]
REPO = SKILLS_DIR.parents[1]


class Server:
    def __init__(self) -> None:
        env = dict(os.environ, PYTHONPATH=str(SKILLS_DIR))
        self.proc = subprocess.Popen([sys.executable, "-m", "centroid_skills"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        self.next_id = 0

    def request(self, method: str, params: dict[str, Any] | None = None) -> tuple[dict[str, Any], float]:
        assert self.proc.stdin and self.proc.stdout
        self.next_id += 1
        line = json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method,
                           "params": params or {}}).encode() + b"\n"
        t0 = time.perf_counter()
        self.proc.stdin.write(line)
        self.proc.stdin.flush()
        out = self.proc.stdout.readline()
        elapsed = (time.perf_counter() - t0) * 1000
        return json.loads(out), elapsed

    def call(self, name: str, **arguments: Any) -> tuple[dict[str, Any], float]:
        resp, ms = self.request("tools/call", {"name": name, "arguments": arguments})
        result = resp["result"]
        if not result["ok"]:
            raise RuntimeError(f"{name}: {result['error']}")
        return result, ms

    def close(self) -> None:
        assert self.proc.stdin
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def mos(device_id: str, mos_type: str, m: int = 2) -> dict[str, Any]:
    return {"device_id": device_id, "type": mos_type, "w": 4e-6, "l": 0.5e-6, "nf": 2, "m": m}


def one_run(srv: Server, rules: dict[str, Any], k: int, tmp: str, record: Any) -> None:
    record("debug.noop", srv.call("debug.noop"))
    record("tech.load", srv.call("tech.load", rules=rules))
    record("create_device nmos", srv.call("layout.create_device", type="nmos", w=4e-6, l=0.5e-6, nf=2))
    record("create_device pmos", srv.call("layout.create_device", type="pmos", w=4e-6, l=0.5e-6, nf=2))
    record("create_device resistor", srv.call("layout.create_device", type="resistor", w=1e-6, l=10e-6))
    record("create_device capacitor", srv.call("layout.create_device", type="capacitor", w=10e-6, l=10e-6))
    pair, ms = srv.call("layout.create_common_centroid_pair", device_a=mos("M1", "nmos"),
                        device_b=mos("M2", "nmos"), arrangement="ABBA")
    record("create_common_centroid_pair ABBA", (pair, ms))
    record("create_common_centroid_pair 2D", srv.call(
        "layout.create_common_centroid_pair", device_a=mos("X1", "nmos"), device_b=mos("X2", "nmos"),
        arrangement="2D"))
    record("create_interdigitated_group 1:2:4", srv.call(
        "layout.create_interdigitated_group",
        devices=[dict(mos(f"G{i}", "nmos", 1), units=u) for i, u in enumerate((1, 2, 4))]))
    pair_cell = pair["data"]["cell_name"]
    record("add_dummies", srv.call("layout.add_dummies", cell=pair_cell))
    mirror, _ = srv.call("layout.create_common_centroid_pair", device_a=mos("M3", "pmos"),
                         device_b=mos("M4", "pmos"), arrangement="ABBA")
    tail, _ = srv.call("layout.create_device", device_id="M5", type="nmos", w=4e-6, l=0.5e-6, nf=2)
    record("place rows (OTA)", srv.call("layout.place", cell_name="ota", rows=[
        {"cells": [tail["data"]["cell_name"]]}, {"cells": [pair_cell]},
        {"cells": [mirror["data"]["cell_name"]]}]))
    record("add_guard_ring (OTA)", srv.call("layout.add_guard_ring", cell="ota", kind="substrate"))
    dev_drc = srv.call("drc.run", cell=tail["data"]["cell_name"], report_path=f"{tmp}/dev.lyrdb")
    record("drc.run (one nmos)", dev_drc)
    ota_drc = srv.call("drc.run", cell="ota", report_path=f"{tmp}/ota.lyrdb")
    assert ota_drc[0]["data"]["total"] == 0, ota_drc[0]["data"]["violations"]
    record("drc.run (5-transistor OTA)", ota_drc)
    record("layout.metrics (OTA)", srv.call("layout.metrics", cell="ota"))
    record("layout.export GDS (OTA)", srv.call("layout.export", cell="ota", path=f"{tmp}/ota.gds"))
    record("layout.export OASIS (OTA)", srv.call("layout.export", cell="ota", path=f"{tmp}/ota.oas"))
    record("layout.render PNG 800x600 (OTA)", srv.call("layout.render", cell="ota", path=f"{tmp}/ota.png"))
    srv.request("session/reset")


def bench(rules_path: Path, runs: int) -> None:
    rules = json.loads(rules_path.read_text())
    wall: dict[str, list[float]] = {}
    server_ms: dict[str, list[float]] = {}

    def record(name: str, result: tuple[dict[str, Any], float]) -> None:
        wall.setdefault(name, []).append(result[1])
        server_ms.setdefault(name, []).append(result[0]["duration_ms"])

    srv = Server()
    srv.request("initialize")
    with tempfile.TemporaryDirectory(prefix="centroid_bench_") as tmp:
        one_run(srv, rules, -1, tmp, lambda *_: None)  # warm-up
        for k in range(runs):
            one_run(srv, rules, k, tmp, record)
    srv.close()
    print(f"\n### {rules['tech']} ({rules_path.relative_to(REPO) if rules_path.is_relative_to(REPO) else rules_path}), "
          f"{runs} runs, wall-clock per call through stdio (ms)\n")
    print("| skill | median | p90 | min | server median |")
    print("|---|---:|---:|---:|---:|")
    for name, values in wall.items():
        vs = sorted(values)
        p90 = vs[min(len(vs) - 1, int(round(0.9 * (len(vs) - 1))))]
        print(f"| {name} | {statistics.median(vs):.2f} | {p90:.2f} | {vs[0]:.2f} | "
              f"{statistics.median(server_ms[name]):.0f} |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("rules", nargs="*", type=Path, help="rule sets (default: examples/pdk/*.json)")
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    paths = args.rules or sorted((REPO / "examples" / "pdk").glob("*.json"))
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    for p in paths:
        bench(p.resolve(), args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
