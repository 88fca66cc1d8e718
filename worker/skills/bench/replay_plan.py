"""Replay one candidate of ``centroid plan --json`` in-process (issue 26): every step on one
in-process skill server, and for each ``route.nets`` the routed cell's size, its trunk
columns, verticals, taps and rail ports, its rows and the tracks of every channel (read from
the router's own plan and stack); then DRC, LVS and the metrics as the job would see them.
Tracks on metal 1 (the second track layer) are listed per channel.
A routing change is measured on the same plan in seconds, without the coordinator; a job's
best candidate is the plan's candidate of the same index (same seed, same objectives).

    centroid plan --json --candidates 4 --seed 1 <dir> > plan.json
    cd worker/skills && PYTHONPATH=. ../../.venv/bin/python bench/replay_plan.py plan.json 0 [--cell BLK_ota5]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from helpers import Client  # noqa: E402
from route_record import SEEN, um  # noqa: E402  (wraps the router: SEEN)
from rust_plans import substituted  # noqa: E402


def print_route(client: Client, cell: str, seconds: float) -> None:
    bb = client.server.session.layout.cell(cell).bbox()
    plan, stack = SEEN["plan"], SEEN["stack"]
    print(f"route {cell}: {um(bb.width()):.2f} x {um(bb.height()):.2f} um ({seconds:.1f} s); "
          f"trunks {sorted(plan.trunk_x)}; verticals {[(v.net, v.ch) for v in plan.verticals]}; "
          f"taps {plan.taps}; rail ports {plan.rail_ports}; column ports {plan.column_ports}")
    for i, info in enumerate(SEEN["infos"]):
        cb = info.cell.bbox()
        print(f"   row {i} {info.kind}: {um(cb.width()):.2f} x {um(cb.height()):.2f}")
    for ch, tracks in enumerate(plan.tracks):
        low = plan.low[ch] if ch < len(plan.low) else set()
        print(f"   channel {ch}: {stack.n_tracks[ch]} tracks, "
              f"{ {net: k for net, (k, _l, _r) in sorted(tracks.items(), key=lambda kv: kv[1][0])} }"
              + (f", on metal 1 {sorted(low)}" if low else ""))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("plan", help="output of `centroid plan --json`")
    ap.add_argument("candidate", type=int)
    ap.add_argument("--cell", help="stop after routing this cell")
    args = ap.parse_args()
    candidate = json.loads(Path(args.plan).read_text())["candidates"][args.candidate]
    client = Client()
    with tempfile.TemporaryDirectory(prefix="centroid_replay-") as scratch:
        client.server.handle_message({"jsonrpc": "2.0", "id": 0, "method": "session/reset",
                                      "params": {"scratch_dir": scratch}})
        for step in candidate["plan"]["steps"]:
            arguments = substituted(step["arguments"], scratch)
            started = time.perf_counter()
            result = client.raw(step["skill"], arguments)
            seconds = time.perf_counter() - started
            if not result["ok"]:
                print(f"{step['step_id']} failed: {result['error']['message']}")
                return 1
            data = result["data"]
            if step["skill"] == "route.nets":
                print_route(client, arguments["cell_name"], seconds)
                if arguments["cell_name"] == args.cell:
                    return 0
            elif step["skill"] == "drc.run":
                print(f"DRC {data['total']} ({seconds:.1f} s)")
            elif step["skill"] == "lvs.run":
                print(f"LVS match {data['match']} ({seconds:.1f} s)")
            elif step["skill"] == "layout.metrics":
                print(f"bbox {data['bbox_area_um2']:.1f} um2, devices {data['device_area_um2']:.1f} um2, "
                      f"utilisation {100 * data['utilisation']:.1f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
