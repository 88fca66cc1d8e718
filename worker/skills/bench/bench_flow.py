"""Benchmark one whole candidate (flow.plan) on one real stdio skill server.

    cd worker/skills && ../../.venv/bin/python bench/bench_flow.py [--runs 11] [--pdk sky130 ...]
                                                                   [--circuit ota5 ...]

For every circuit x rule set: ``session/reset`` then every call of the candidate's plan
over the JSON-RPC pipe (tech.load, route.info, modules/devices, layout.place per row,
route.nets, drc.run, lvs.run, layout.metrics, layout.export), timed in the client around
each request/response line.  Prints the median (and min/max) of the whole candidate and
the median per step group; checks every run is DRC clean and LVS clean.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

SKILLS_DIR = Path(__file__).resolve().parents[1]
REPO = SKILLS_DIR.parents[1]
sys.path.insert(0, str(SKILLS_DIR))

from centroid_skills import flow  # noqa: E402

GROUPS = {
    "tech.load": "tech.load",
    "route.info": "route.info",
    "layout.create_device": "devices+modules",
    "layout.create_common_centroid_pair": "devices+modules",
    "layout.create_interdigitated_group": "devices+modules",
    "layout.add_dummies": "devices+modules",
    "layout.place": "place",
    "route.nets": "route",
    "drc.run": "drc",
    "lvs.run": "lvs",
    "layout.metrics": "metrics",
    "layout.export": "export",
}
ORDER = ["tech.load", "route.info", "devices+modules", "place", "route", "drc", "lvs", "metrics",
         "export"]


class Server:
    def __init__(self) -> None:
        env = dict(os.environ, PYTHONPATH=str(SKILLS_DIR))
        self.proc = subprocess.Popen([sys.executable, "-m", "centroid_skills"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        self.next_id = 0

    def request(self, method: str, params: dict[str, Any]) -> tuple[dict[str, Any], float]:
        assert self.proc.stdin and self.proc.stdout
        self.next_id += 1
        line = json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method,
                           "params": params}).encode() + b"\n"
        t0 = time.perf_counter()
        self.proc.stdin.write(line)
        self.proc.stdin.flush()
        out = self.proc.stdout.readline()
        return json.loads(out), time.perf_counter() - t0

    def close(self) -> None:
        assert self.proc.stdin
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def one_candidate(server: Server, circuit: dict[str, Any], rules: dict[str, Any],
                  export_dir: str) -> tuple[float, dict[str, float]]:
    server.request("session/reset", {})
    per: dict[str, float] = {}
    total = 0.0
    pitch = None
    calls = flow.plan(circuit, rules, None, {"export_path": os.path.join(export_dir, "cand.gds")})
    for c in calls:
        if pitch is not None:
            c = flow.fill(c, pitch)
        resp, dt = server.request("tools/call", {"name": c["name"], "arguments": c["arguments"]})
        result = resp["result"]
        if not result["ok"]:
            raise RuntimeError(f"{c['name']}: {result['error']['message']}")
        data = result["data"]
        if c["name"] == "route.info":
            pitch = data["pitch_um"]
        if c["name"] == "drc.run" and data["total"]:
            raise RuntimeError(f"DRC violations: {data['total']}")
        if c["name"] == "lvs.run" and not data["match"]:
            raise RuntimeError("LVS mismatch")
        group = GROUPS.get(c["name"], c["name"])
        per[group] = per.get(group, 0.0) + dt
        total += dt
    return total, per


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=11)
    ap.add_argument("--pdk", action="append", help="ihp_sg13g2 | sky130 (default both)")
    ap.add_argument("--circuit", action="append", help="fixture circuit (default ota5, miller_ota)")
    args = ap.parse_args()
    pdks = args.pdk or ["ihp_sg13g2", "sky130"]
    circuits = args.circuit or ["ota5", "miller_ota"]
    export_dir = os.path.join(os.environ.get("TMPDIR", "/tmp"), "centroid_bench_flow")
    os.makedirs(export_dir, exist_ok=True)
    server = Server()
    header = f"{'circuit':12s} {'rules':11s} {'median':>8s} {'min':>7s} {'max':>7s} | " + " ".join(
        f"{g:>8s}" for g in ORDER)
    print(f"whole candidate over stdio, {args.runs} runs each, milliseconds (per step: median)")
    print(header)
    print("-" * len(header))
    try:
        for cname in circuits:
            circuit = json.loads((SKILLS_DIR / "tests" / "fixtures" / "circuits" / f"{cname}.json").read_text())
            for pdk in pdks:
                rules = json.loads((REPO / "examples" / "pdk" / f"{pdk}.json").read_text())
                one_candidate(server, circuit, rules, export_dir)  # warm-up
                totals = []
                steps: dict[str, list[float]] = {g: [] for g in ORDER}
                for _ in range(args.runs):
                    total, per = one_candidate(server, circuit, rules, export_dir)
                    totals.append(total)
                    for g in ORDER:
                        steps[g].append(per.get(g, 0.0))
                med = statistics.median(totals) * 1000
                print(f"{cname:12s} {pdk:11s} {med:8.1f} {min(totals) * 1000:7.1f} "
                      f"{max(totals) * 1000:7.1f} | "
                      + " ".join(f"{statistics.median(steps[g]) * 1000:8.1f}" for g in ORDER))
    finally:
        server.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
