"""Block-size scaling of ``centroid run`` (issue 26): time per candidate, wall time and peak
memory at 10 / 50 / 100 / 250 / 500 / 1,000 devices, then the 500-device job with 8
candidates on 2 and on 8 slots.

The circuit is a bank of k identical five-transistor OTAs (differential pair, PMOS mirror
load, tail source; each OTA with its own inputs and output, the bias shared), written as
SPICE with one ``ota5`` subcircuit and k X instances (``--flat``: the same devices as M
lines), with the SKY130 rules of ``examples/ota5_spice``. Peak memory is each process's
VmHWM (``/proc/<pid>/status``), sampled every 0.2 s over the process tree of ``centroid run``.
``--steps``: instead, the draft candidate of each size from ``centroid plan --json`` run step
by step on one skill server (``bench_flow.py``'s), seconds per step group.

    cargo build -p centroid-cli -p centroid-coordinator -p centroid-worker
    cd worker/skills && ../../.venv/bin/python bench/bench_scaling.py
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(REPO / "worker" / "skills" / "tests"))

import rust_plans  # noqa: E402
from bench_flow import GROUPS, ORDER, Server  # noqa: E402

OTA_LINES = [  # drain gate source bulk model size: one five-transistor OTA
    ("1", "{n1} {inp} {tail} vss sky130_fd_pr__nfet_01v8 w=4u l=0.5u nf=2"),
    ("2", "{out} {inn} {tail} vss sky130_fd_pr__nfet_01v8 w=4u l=0.5u nf=2"),
    ("3", "{n1} {n1} vdd vdd sky130_fd_pr__pfet_01v8 w=4u l=0.5u nf=2"),
    ("4", "{out} {n1} vdd vdd sky130_fd_pr__pfet_01v8 w=4u l=0.5u nf=2"),
    ("5", "{tail} vbias vss vss sky130_fd_pr__nfet_01v8 w=4u l=1u nf=2"),
]


def ota_devices(prefix: str, inp: str, inn: str, out: str, n1: str, tail: str) -> list[str]:
    nets = {"inp": inp, "inn": inn, "out": out, "n1": n1, "tail": tail}
    return [f"M{prefix}{number} " + line.format(**nets) for number, line in OTA_LINES]


def bank_netlist(devices: int, flat: bool) -> str:
    """SPICE of a bank of devices // 5 OTAs (top subcircuit ``bank``)."""
    count = max(1, devices // len(OTA_LINES))
    ports = " ".join(f"inp{i} inn{i} out{i}" for i in range(count)) + " vbias"
    lines = [f"* bank of {count} five-transistor OTAs ({count * len(OTA_LINES)} devices)", ".global vdd vss"]
    if not flat:
        lines += [".subckt ota5 inp inn out vbias", *ota_devices("", "inp", "inn", "out", "n1", "tail"), ".ends ota5"]
    lines.append(f".subckt bank {ports}")
    for i in range(count):
        if flat:
            lines += ota_devices(f"_{i}_", f"inp{i}", f"inn{i}", f"out{i}", f"n1_{i}", f"tail_{i}")
        else:
            lines.append(f"X{i} inp{i} inn{i} out{i} vbias ota5")
    lines += [".ends bank", ".end"]
    return "\n".join(lines) + "\n"


def write_circuit(devices: int, flat: bool, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "netlist.sp").write_text(bank_netlist(devices, flat))
    shutil.copy(REPO / "examples" / "ota5_spice" / "drc_rules.json", folder / "drc_rules.json")
    objectives = {
        "schema_version": "1.0.0",
        "objectives": [{"name": "area_min", "weight": 0.5}, {"name": "matching_max", "weight": 0.5}],
        "constraints": {"max_iterations": 1},
    }
    (folder / "objectives.json").write_text(json.dumps(objectives, indent=2))
    return folder


def process_role(pid: int) -> str:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "gone"
    if "centroid-coordinator" in cmdline:
        return "coordinator"
    if "centroid_skills" in cmdline or "klayout" in cmdline:
        return "worker"
    if " run " in cmdline and "centroid" in cmdline.split(" ")[0]:
        return "cli"
    return "other"


def children(pid: int) -> list[int]:
    found = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            text = (task / "children").read_text().split()
            found += [int(child) for child in text]
    except OSError:
        return found
    return found


def peak_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        return 0
    return 0


@dataclass
class TreeWatcher:
    """Samples the peak RSS of every process under ``root`` until ``stop``."""

    root: int
    peaks: dict[str, int] = field(default_factory=dict)  # role -> largest VmHWM of one process, KiB
    stop: threading.Event = field(default_factory=threading.Event)

    def sample(self) -> None:
        pending = [self.root]
        while pending:
            pid = pending.pop()
            pending += children(pid)
            role = process_role(pid)
            self.peaks[role] = max(self.peaks.get(role, 0), peak_kib(pid))

    def watch(self) -> None:
        while not self.stop.is_set():
            self.sample()
            self.stop.wait(0.2)


def run_job(centroid: Path, circuit: Path, out: Path, candidates: int, slots: int, timeout: float) -> dict:
    command = [str(centroid), "run", str(circuit), "--no-memory", "--candidates", str(candidates),
               "--iterations", "1", "--slots", str(slots), "--seed", "1", "--out", str(out)]
    log = (out.parent / f"{out.name}.log").open("w")
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    watcher = TreeWatcher(process.pid)
    thread = threading.Thread(target=watcher.watch, daemon=True)
    thread.start()
    try:
        code: int | str = process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        code = "timeout"
    wall = time.perf_counter() - start
    watcher.stop.set()
    thread.join()
    log.close()
    row = {"exit": code, "wall_s": wall, "peaks_kib": watcher.peaks, "log": str(out.parent / f"{out.name}.log")}
    report = out / "report.json"
    if report.is_file():
        row.update(summarise(json.loads(report.read_text())))
    else:
        lines = Path(row["log"]).read_text().strip().splitlines()
        row["error"] = lines[-1] if lines else "no output"
    return row


def summarise(report: dict) -> dict:
    candidates = report.get("candidates") or []
    seconds = [c["seconds"] for c in candidates if c.get("seconds") is not None]
    best = report.get("best") or {}
    metrics = best.get("metrics") or {}
    errors = sorted({str(c["error"]) for c in candidates if c.get("error")})
    return {
        "status": report.get("status"),
        "candidate_s": sum(seconds) / len(seconds) if seconds else None,
        "drc": (best.get("checks") or {}).get("drc"),
        "lvs": (best.get("checks") or {}).get("lvs"),
        "area_um2": metrics.get("area_um2"),
        "utilisation": metrics.get("utilization"),
        "error": "; ".join(errors) or report.get("message"),
    }


def step_profile(centroid: Path, circuit: Path, scratch: Path) -> dict[str, tuple[int, float]]:
    """Calls and seconds per step group of the draft candidate, run on one skill server."""
    drafted = subprocess.run([str(centroid), "plan", "--json", "--candidates", "1", str(circuit)],
                             capture_output=True, text=True, check=True)
    steps = json.loads(drafted.stdout)["candidates"][0]["plan"]["steps"]
    server = Server()
    server.request("session/reset", {"scratch_dir": str(scratch)})
    groups: dict[str, tuple[int, float]] = {}
    for step in steps:
        arguments = rust_plans.substituted(step["arguments"], str(scratch))
        response, seconds = server.request("tools/call", {"name": step["skill"], "arguments": arguments})
        if not response["result"]["ok"]:
            raise RuntimeError(f"{step['step_id']}: {response['result']['error']['message']}")
        group = GROUPS.get(step["skill"], step["skill"])
        calls, total = groups.get(group, (0, 0.0))
        groups[group] = (calls + 1, total + seconds)
    server.close()
    return groups


def print_profiles(centroid: Path, sizes: list[int], flat: bool, scratch: Path) -> None:
    print("| devices | " + " | ".join(f"{group} (calls) s" for group in ORDER) + " | total s |")
    print("|---:|" + "---:|" * (len(ORDER) + 1))
    for devices in sizes:
        circuit = write_circuit(devices, flat, scratch / f"bank{devices}")
        (scratch / f"steps{devices}").mkdir()
        groups = step_profile(centroid, circuit, scratch / f"steps{devices}")
        cells = [f"{groups[g][1]:.1f} ({groups[g][0]})" if g in groups else "—" for g in ORDER]
        print(f"| {devices} | " + " | ".join(cells) + f" | {sum(t for _, t in groups.values()):.1f} |", flush=True)


def cell(value, fmt: str) -> str:
    return "—" if value is None else format(value, fmt)


def print_row(label: str, row: dict) -> None:
    peaks = row["peaks_kib"]
    mib = {role: peaks.get(role, 0) / 1024 for role in ("cli", "coordinator", "worker")}
    print(f"| {label} | {row['exit']} | {row.get('drc') or '—'} / {row.get('lvs') or '—'} "
          f"| {cell(row.get('candidate_s'), '.1f')} | {row['wall_s']:.1f} "
          f"| {mib['cli']:.0f} / {mib['coordinator']:.0f} / {mib['worker']:.0f} "
          f"| {cell(row.get('area_um2'), '.0f')} | {cell(row.get('utilisation'), '.1%')} "
          f"| {row.get('error') or ''} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,50,100,250,500,1000")
    parser.add_argument("--flat", action="store_true", help="M lines only, no subcircuit")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per job")
    parser.add_argument("--parallel", type=int, default=500, help="devices of the job run on several slot counts (0: skip)")
    parser.add_argument("--parallel-slots", default="1,2,8", help="the slot counts of that job")
    parser.add_argument("--steps", action="store_true", help="seconds per step group of the draft candidate")
    parser.add_argument("--centroid", type=Path, help="the centroid binary (default: target/release, else debug)")
    args = parser.parse_args()
    centroid = args.centroid or next(
        (p for p in (REPO / "target" / "release" / "centroid", REPO / "target" / "debug" / "centroid") if p.is_file()),
        REPO / "target" / "debug" / "centroid")
    os.environ.setdefault("CENTROID_PYTHON", str(REPO / ".venv" / "bin" / "python"))
    os.environ.setdefault("CENTROID_SKILLS_DIR", str(REPO / "worker" / "skills"))
    scratch = Path(tempfile.mkdtemp(prefix="bench_scaling_"))
    print(f"{centroid}, {'flat' if args.flat else 'hierarchical'} netlists, scratch {scratch}")
    sizes = [int(n) for n in args.sizes.split(",")]
    if args.steps:
        print_profiles(centroid, sizes, args.flat, scratch)
        return
    print("| devices | exit | DRC / LVS | s per candidate | wall s | peak RSS MiB cli / coordinator / worker "
          "| area µm² | utilisation | error |")
    print("|---:|---|---|---:|---:|---|---:|---:|---|")
    for devices in sizes:
        circuit = write_circuit(devices, args.flat, scratch / f"bank{devices}")
        print_row(f"{devices}, 1 candidate, 1 slot",
                  run_job(centroid, circuit, scratch / f"out{devices}", 1, 1, args.timeout))
    if args.parallel:
        circuit = write_circuit(args.parallel, args.flat, scratch / f"bank{args.parallel}")
        walls: dict[int, float] = {}
        for slots in [int(n) for n in args.parallel_slots.split(",")]:
            row = run_job(centroid, circuit, scratch / f"out{args.parallel}_s{slots}", 8, slots, args.timeout)
            print_row(f"{args.parallel}, 8 candidates, {slots} slots", row)
            if row["exit"] == 0:
                walls[slots] = row["wall_s"]
        print_speed_ups(walls)


def print_speed_ups(walls: dict[int, float]) -> None:
    """Wall time of the fewest slots over each slot count's (the parallel speed-up)."""
    if len(walls) < 2:
        return
    fewest = min(walls)
    print()
    print(f"| slots | wall s | speed-up over {fewest} slot(s) |")
    print("|---:|---:|---:|")
    for slots, wall in sorted(walls.items()):
        print(f"| {slots} | {wall:.1f} | {walls[fewest] / wall:.2f}× |", flush=True)

if __name__ == "__main__":
    main()
