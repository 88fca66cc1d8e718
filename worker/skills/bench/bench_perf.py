"""Extraction + simulation per candidate on the five-transistor OTA (issue 27's speed
target: ≤ 0.25 s median). The Rust planner's default SKY130 candidate is laid out once;
then ``extract.netlist`` and ``sim.run`` (open-loop AC, the built-in testbench) run
``--runs`` times on it through the server's dispatch, as a worker runs them. Wall clock
and CPU time (this process and ngspice) per run; ``--profile``: cProfile's top functions.

    cargo build -p centroid-cli
    cd worker/skills && ../../.venv/bin/python bench/bench_perf.py --runs 11
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from helpers import Client  # noqa: E402
from rust_plans import draft, example_request, run_plan  # noqa: E402

from centroid_skills.server import Server  # noqa: E402

PORTS = ["inp", "inn", "out", "vbias", "vdd", "vss"]


def cpu_s() -> float:
    """CPU seconds of this process and its finished children (ngspice): what a candidate
    costs whatever else the machine runs (the wall clock counts the waits for a core)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--pdk", default="sky130")
    parser.add_argument("--profile", action="store_true", help="print cProfile's top functions of the runs")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="bench_perf_"))
    server = Server()
    result = run_plan(draft(example_request("ota5", args.pdk)).candidates[0].steps, scratch, server=server)
    assert result["ok"], result.get("failed")
    client = Client()
    client.server = server
    client.call("sim.testbench", path=str(scratch / "tb.sp"), kind="ota_ac", circuit="ota5", ports=PORTS,
                supply={"net": "vdd", "volts": 1.8}, ground="vss", outputs=["out"], load_f=1e-13,
                inputs={"plus": "inp", "minus": "inn", "common_mode_v": 0.9},
                bias=[{"net": "vbias", "volts": 0.7}])
    rows = []
    profile = cProfile.Profile() if args.profile else None
    for run in range(args.runs + 1):
        if profile is not None and run == 1:
            profile.enable()  # the first run reads the model files: not counted
        t0, c0 = time.perf_counter(), cpu_s()
        client.call("extract.netlist", cell=result["cell"], path=str(scratch / "ext.spice"), circuit="ota5",
                    ports=PORTS, sensitive_nets=["out", "n1", "tail"], symmetric_pairs=[["inp", "inn"]])
        t1, c1 = time.perf_counter(), cpu_s()
        sim = client.call("sim.run", dut_path=str(scratch / "ext.spice"), testbench_path=str(scratch / "tb.sp"))
        t2, c2 = time.perf_counter(), cpu_s()
        rows.append((t1 - t0, t2 - t1, t2 - t0, c1 - c0, c2 - c1, c2 - c0))
    rows = rows[1:]
    if profile is not None:
        profile.disable()
        pstats.Stats(profile).sort_stats("cumulative").print_stats(40)
    names = ("extract.netlist", "sim.run", "extraction + simulation")
    for clock, offset in (("wall", 0), ("CPU", 3)):
        for i, name in enumerate(names):
            values = [r[offset + i] * 1000 for r in rows]
            print(f"{clock:4s} {name:26s} median {statistics.median(values):7.1f} ms  "
                  f"min {min(values):7.1f}  max {max(values):7.1f}")
    print("measures:", sim["measures"])


if __name__ == "__main__":
    main()
