"""Benchmark one whole candidate, as the Rust planner plans it, on one real stdio skill server.

    cargo build -p centroid-cli          # the planner: `centroid plan` drafts the candidate
    cd worker/skills && ../../.venv/bin/python bench/bench_flow.py [--runs 11] [--pdk sky130 ...]
                                                 [--circuit ota5 ...] [--candidate 0]

For every example circuit x rule set: the plan of one candidate (default: the default design
point, candidate 0) from ``centroid plan`` (``tests/rust_plans.py``: the newest
``target/{debug,release}/centroid``); then per run ``session/reset {scratch_dir}`` (file
arguments confined to a scratch directory, as under a worker) and every step of the plan
over the JSON-RPC pipe (tech.load, modules/devices, dummies, layout.place per row,
route.nets, lvs.run, drc.run, layout.metrics, layout.export; no picture: the kept candidates
get theirs when the job ends) with
``${CANDIDATE_DIR}`` replaced by the scratch directory, timed in the client around each
request/response line.  Prints the median (and min/max) of the whole candidate and the
median per step group; checks every run is DRC clean and LVS clean.  (The routing pitch is
probed once per job by the coordinator, not per candidate: no route.info step.)
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
sys.path.insert(0, str(SKILLS_DIR))
sys.path.insert(0, str(SKILLS_DIR / "tests"))

import rust_plans  # noqa: E402

GROUPS = {
    "tech.load": "tech.load",
    "layout.create_device": "devices+modules",
    "layout.create_common_centroid_pair": "devices+modules",
    "layout.create_interdigitated_group": "devices+modules",
    "layout.add_dummies": "devices+modules",
    "layout.add_guard_ring": "devices+modules",
    "layout.place": "place",
    "route.nets": "route",
    "drc.run": "drc",
    "lvs.run": "lvs",
    "layout.metrics": "metrics",
    "layout.export": "export",
}
ORDER = ["tech.load", "devices+modules", "place", "route", "drc", "lvs", "metrics", "export"]


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


def one_candidate(server: Server, steps: list[dict[str, Any]],
                  scratch_dir: str) -> tuple[float, dict[str, float]]:
    server.request("session/reset", {"scratch_dir": scratch_dir})  # as the worker does
    per: dict[str, float] = {}
    total = 0.0
    for step in steps:
        arguments = rust_plans.substituted(step["arguments"], scratch_dir)
        resp, dt = server.request("tools/call", {"name": step["skill"], "arguments": arguments})
        result = resp["result"]
        if not result["ok"]:
            raise RuntimeError(f"{step['step_id']}: {result['error']['message']}")
        data = result["data"]
        if step["skill"] == "drc.run" and data["total"]:
            raise RuntimeError(f"DRC violations: {data['total']}")
        if step["skill"] == "lvs.run" and not data["match"]:
            raise RuntimeError("LVS mismatch")
        group = GROUPS.get(step["skill"], step["skill"])
        per[group] = per.get(group, 0.0) + dt
        total += dt
    return total, per


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=11)
    ap.add_argument("--pdk", action="append", help="ihp_sg13g2 | sky130 | gf180mcu (default: the first two)")
    ap.add_argument("--circuit", action="append", help="example circuit (default ota5, miller_ota)")
    ap.add_argument("--candidate", type=int, default=0,
                    help=f"which of the {rust_plans.EXAMPLE_CANDIDATES} drafted candidates (default 0)")
    args = ap.parse_args()
    pdks = args.pdk or ["ihp_sg13g2", "sky130"]
    circuits = args.circuit or ["ota5", "miller_ota"]
    plans = {(c, p): rust_plans.draft(rust_plans.example_request(c, p)).candidates[args.candidate]
             for c in circuits for p in pdks}
    server = Server()
    header = f"{'circuit':12s} {'rules':11s} {'median':>8s} {'min':>7s} {'max':>7s} | " + " ".join(
        f"{g:>8s}" for g in ORDER)
    print(f"whole candidate over stdio, {args.runs} runs each, milliseconds (per step: median)")
    print(header)
    print("-" * len(header))
    try:
        with tempfile.TemporaryDirectory(prefix="centroid_bench_flow-") as tmp:
            scratch_dir = os.path.realpath(tmp)
            for (cname, pdk), candidate in plans.items():
                one_candidate(server, candidate.steps, scratch_dir)  # warm-up
                totals = []
                steps: dict[str, list[float]] = {g: [] for g in ORDER}
                for _ in range(args.runs):
                    total, per = one_candidate(server, candidate.steps, scratch_dir)
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
