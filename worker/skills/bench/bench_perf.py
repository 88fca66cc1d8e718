"""Extraction + simulation per candidate on the five-transistor OTA (issue 27's speed
target: ≤ 0.25 s median). The Rust planner's default SKY130 candidate is laid out once;
then ``extract.netlist`` and ``sim.run`` (open-loop AC, the built-in testbench) run
``--runs`` times on it through the server's dispatch, as a worker runs them.

    cargo build -p centroid-cli
    cd worker/skills && ../../.venv/bin/python bench/bench_perf.py --runs 11
"""

from __future__ import annotations

import argparse
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--pdk", default="sky130")
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
    for _ in range(args.runs + 1):  # the first run reads the model files: not counted
        t0 = time.perf_counter()
        client.call("extract.netlist", cell=result["cell"], path=str(scratch / "ext.spice"), circuit="ota5",
                    ports=PORTS, sensitive_nets=["out", "n1", "tail"], symmetric_pairs=[["inp", "inn"]])
        t1 = time.perf_counter()
        sim = client.call("sim.run", dut_path=str(scratch / "ext.spice"), testbench_path=str(scratch / "tb.sp"))
        t2 = time.perf_counter()
        rows.append((t1 - t0, t2 - t1, t2 - t0))
    rows = rows[1:]
    for i, name in enumerate(("extract.netlist", "sim.run", "extraction + simulation")):
        values = [r[i] * 1000 for r in rows]
        print(f"{name:26s} median {statistics.median(values):7.1f} ms  min {min(values):7.1f}  max {max(values):7.1f}")
    print("measures:", sim["measures"])


if __name__ == "__main__":
    main()
