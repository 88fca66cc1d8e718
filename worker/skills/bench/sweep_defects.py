"""Sweep the candidates the search actually draws for defects: DRC violations and LVS mismatches.

    cargo build -p centroid-cli          # `centroid run` drafts, runs and evaluates the candidates
    cd worker/skills && ../../.venv/bin/python bench/sweep_defects.py [--seed 3 --seed 5 ...]
        [--candidates 8] [--iterations 4] [--circuit ota5 --circuit align/five_transistor_ota ...]
        [--slots 2] [--fingers 5] [--points defects.json]
    ../../.venv/bin/python bench/sweep_defects.py --replay defects.json [--circuit ...]

For every circuit (``examples/*``, ``examples/gf180/*`` and ALIGN's SKY130 OTAs from the shared
folder: ``$CENTROID_SHARED_DIR`` or ``../shared`` beside the checkout) and every seed, one
``centroid run`` with ``--patience 1000 --no-memory`` (so every iteration runs: candidates x
iterations design points of the search), then every candidate of its ``report.json`` is
classified:

* ``DRC <rule>``: a DRC violation of that rule;
* ``LVS short a+b``: nets the layout joins (a layout net named ``a,b``, or a device terminal on
  it);
* ``LVS <kind>``: any other difference (device only in the layout or netlist, parameters);
* ``failed <code>``: a step failed (no layout to judge).

A candidate with several defects counts once per kind.  Prints per circuit the candidates, how
many had DRC > 0, an LVS mismatch, either, or failed, then every defect kind with its count and
one example candidate; ``--points`` writes every defective candidate's design point (for
``centroid plan --point``) to a JSON file, and ``--replay`` that file draws those points again
on the current checkout (did a fix mend them, and which).  ``--fingers N`` draws every circuit with N times
the fingers of every MOS device (and N times its width: the same fingers), the multi-finger
units ALIGN's netlists have.  Exits 1 when any run could not be done, else 0.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SKILLS_DIR = Path(__file__).resolve().parents[1]
REPO_ROOT = SKILLS_DIR.parents[1]
sys.path.insert(0, str(SKILLS_DIR))
sys.path.insert(0, str(SKILLS_DIR / "tests"))

import rust_plans  # noqa: E402

ALIGN = ("five_transistor_ota", "telescopic_ota")
NETLIST_SUFFIXES = (".json", ".sp", ".spice", ".cir", ".cdl")
#: wall-clock limit of one `centroid run`
RUN_TIMEOUT_S = 1800


@dataclass(frozen=True)
class Circuit:
    name: str
    directory: Path
    netlist: Path | None = None  # overrides the directory's netlist


def shared_dir() -> Path:
    return Path(os.environ.get("CENTROID_SHARED_DIR") or REPO_ROOT.parent / "shared")


def all_circuits() -> list[Circuit]:
    """Every example circuit (both rule sets' directories) and ALIGN's SKY130 OTAs."""
    out = []
    examples = REPO_ROOT / "examples"
    for parent, prefix in ((examples, ""), (examples / "gf180", "gf180/")):
        for d in sorted(parent.iterdir()):
            if (d / "drc_rules.json").is_file() and (d / "objectives.json").is_file():
                out.append(Circuit(prefix + d.name, d))
    for name in ALIGN:
        out.append(Circuit(f"align/{name}", REPO_ROOT / "tests" / "benches" / "align_sky130" / name,
                           shared_dir() / "benches" / "align_sky130" / name / "netlist.sp"))
    return out


@dataclass
class Tally:
    runs: int = 0
    candidates: int = 0
    drc: int = 0
    lvs: int = 0
    defective: int = 0
    failed: int = 0
    kinds: Counter[str] = field(default_factory=Counter)
    example: dict[str, str] = field(default_factory=dict)  # kind -> a candidate showing it

    def count(self, kinds: set[str], drc: bool, lvs: bool, example: str) -> None:
        """One candidate with these defect kinds."""
        failed = any(k.startswith("failed") for k in kinds)
        self.candidates += 1
        self.drc += drc
        self.lvs += lvs
        self.failed += failed
        self.defective += bool(kinds) and not failed
        for kind in kinds:
            self.kinds[kind] += 1
            self.example.setdefault(kind, example)


_TERMINALS = re.compile(r"^parameters differ: (\{.*\})$")


def lvs_kinds(lines: list[str]) -> set[str]:
    """The kinds of LVS difference in ``lvs_mismatches`` (evaluator.rs's lines)."""
    kinds: set[str] = set()
    for line in lines:
        what, _, text = line.partition(": ")
        if what == "net only in the layout" and "," in text:
            kinds.add("LVS short " + "+".join(sorted(text.split(","))))
            continue
        match = _TERMINALS.match(line)
        if match:
            try:
                layout = json.loads(match.group(1)).get("layout") or {}
            except json.JSONDecodeError:
                layout = {}
            shorted = [n for n in (layout.get("terminals") or {}).values() if "," in str(n)]
            for net in shorted:
                kinds.add("LVS short " + "+".join(sorted(str(net).split(","))))
            if shorted:
                continue
        if what == "net only in the netlist" and kinds:
            continue  # the other side of a short already named
        kinds.add(f"LVS {what}")
    return kinds


def defects(candidate: dict[str, Any]) -> tuple[set[str], bool, bool]:
    """(defect kinds, DRC > 0, LVS mismatch) of one candidate of report.json."""
    error = candidate.get("error")
    metrics = candidate.get("metrics")
    if error or not metrics:
        code = (error or {}).get("code", "no metrics") if isinstance(error, dict) else str(error)
        return {f"failed {code}"}, False, False
    kinds = {f"DRC {rule}" for rule, n in (metrics.get("drc_by_rule") or {}).items() if n}
    drc = bool(metrics.get("drc_violations"))
    if drc and not kinds:
        kinds.add("DRC ?")
    lvs = metrics.get("lvs_match") is False
    if lvs:
        kinds |= lvs_kinds(list(metrics.get("lvs_mismatches") or [])) or {"LVS ?"}
    return kinds, drc, lvs


def netlist_of(circuit: Circuit) -> dict[str, Any]:
    """The circuit's netlist as netlist 1.1.0 JSON (a SPICE netlist via `centroid convert`)."""
    source = circuit.netlist or next(p for p in sorted(circuit.directory.iterdir())
                                     if p.stem == "netlist" and p.suffix in NETLIST_SUFFIXES)
    if source.suffix == ".json":
        netlist: dict[str, Any] = json.loads(source.read_text())
        return netlist
    done = subprocess.run([str(rust_plans.centroid_binary()), "convert", str(source)],
                          capture_output=True, text=True, check=True)
    converted: dict[str, Any] = json.loads(done.stdout)
    return converted


def fingered(netlist: dict[str, Any], factor: int) -> dict[str, Any]:
    """``netlist`` with ``factor`` times the fingers and width of every MOS device."""
    for cell in netlist["cells"]:
        for device in cell.get("devices") or []:
            if device["type"] in ("nmos", "pmos"):
                device["nf"] = int(device.get("nf") or 1) * factor
                device["w"] = device["w"] * factor
    return netlist


def with_fingers(circuit: Circuit, factor: int, directory: Path) -> Circuit:
    """The circuit with ``factor`` times the fingers of every MOS device, its netlist written
    to ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "netlist.json"
    path.write_text(json.dumps(fingered(netlist_of(circuit), factor)))
    return Circuit(circuit.name, circuit.directory, path)


def run_one(circuit: Circuit, seed: int, args: argparse.Namespace, out: Path) -> dict[str, Any]:
    argv = [str(rust_plans.centroid_binary()), "run", str(circuit.directory),
            "--candidates", str(args.candidates), "--iterations", str(args.iterations),
            "--patience", "1000", "--slots", str(args.slots), "--no-memory",
            "--seed", str(seed), "--out", str(out)]
    if circuit.netlist is not None:
        argv += ["--netlist", str(circuit.netlist)]
    env = dict(os.environ, CENTROID_PYTHON=sys.executable, CENTROID_SKILLS_DIR=str(SKILLS_DIR))
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=RUN_TIMEOUT_S,
                          check=False)
    if done.returncode not in (0, 3):  # 3: completed without a passing layout
        raise RuntimeError(f"{circuit.name} seed {seed}: `centroid run` exited with "
                           f"{done.returncode}:\n{done.stderr[-3000:]}")
    report: dict[str, Any] = json.loads((out / "report.json").read_text())
    return report


def sweep(args: argparse.Namespace, circuits: list[Circuit]) -> int:
    """`centroid run` of every circuit and seed; the tables of what its candidates drew."""
    seeds = args.seed or [3, 5, 7]
    tallies: dict[str, Tally] = {}
    points: list[dict[str, Any]] = []
    problems = 0
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="centroid-sweep-") as tmp:
        for circuit in circuits:
            tally = tallies.setdefault(circuit.name, Tally())
            if args.fingers != 1:
                circuit = with_fingers(circuit, args.fingers,
                                       Path(tmp) / circuit.name.replace("/", "_"))
            for seed in seeds:
                try:
                    report = run_one(circuit, seed, args,
                                     Path(tmp) / f"{circuit.name.replace('/', '_')}-{seed}")
                except (RuntimeError, subprocess.TimeoutExpired, OSError, ValueError) as exc:
                    print(f"!! {exc}", file=sys.stderr)
                    problems += 1
                    continue
                tally.runs += 1
                for cand in report.get("candidates") or []:
                    kinds, drc, lvs = defects(cand)
                    tally.count(kinds, drc, lvs, f"seed {seed} {cand['id']}")
                    if kinds:
                        points.append({"circuit": circuit.name, "fingers": args.fingers,
                                       "seed": seed, "id": cand["id"], "defects": sorted(kinds),
                                       "design": cand.get("design")})
                print(f"{circuit.name} seed {seed}: {tally.candidates} candidates so far, "
                      f"{tally.defective} defective", file=sys.stderr, flush=True)
    fingers = f", {args.fingers}x the fingers" if args.fingers != 1 else ""
    print(f"\n{len(seeds)} seeds ({', '.join(map(str, seeds))}) x {args.candidates} candidates "
          f"x {args.iterations} iterations per circuit{fingers}, "
          f"{time.perf_counter() - started:.0f} s\n")
    print_tables(tallies, runs=True)
    if args.points:
        args.points.write_text(json.dumps(points, indent=1) + "\n")
    return 1 if problems else 0


def print_tables(tallies: dict[str, Tally], runs: bool) -> None:
    """Per circuit the counts, then every defect kind with its count and an example."""
    first = "| circuit | runs | candidates |" if runs else "| circuit | candidates |"
    print(f"{first} DRC > 0 | LVS mismatch | either | failed |")
    print("|---|" + ("---:|" if runs else "") + "---:|---:|---:|---:|---:|")
    total = Tally()
    for name, t in list(tallies.items()) + [("**all**", total)]:
        lead = f"| {name} | {t.runs} |" if runs else f"| {name} |"
        print(f"{lead} {t.candidates} | {t.drc} | {t.lvs} | {t.defective} | {t.failed} |")
        if t is not total:
            for attr in ("runs", "candidates", "drc", "lvs", "defective", "failed"):
                setattr(total, attr, getattr(total, attr) + getattr(t, attr))
    print("\n| circuit | defect | candidates | e.g. |")
    print("|---|---|---:|---|")
    for name, t in tallies.items():
        for kind, n in sorted(t.kinds.items(), key=lambda kv: (-kv[1], kv[0])):
            print(f"| {name} | {kind} | {n} | {t.example[kind]} |")


#: lvs.run's difference lists as evaluator.rs names them in report.json
LVS_LISTS = (("unmatched_devices_layout", "device only in the layout"),
             ("unmatched_devices_schematic", "device only in the netlist"),
             ("parameter_mismatches", "parameters differ"),
             ("unmatched_nets_layout", "net only in the layout"),
             ("unmatched_nets_schematic", "net only in the netlist"),
             ("net_mismatches", "nets differ"))


def result_defects(result: dict[str, Any]) -> tuple[set[str], bool, bool]:
    """(defect kinds, DRC > 0, LVS mismatch) of a plan run by ``rust_plans.run_plan``."""
    if not result["ok"]:
        return {f"failed {result['failed']['error'].get('code')}"}, False, False
    drc = result["results"]["drc.run"]
    kinds = {f"DRC {v['id']}" for v in drc["violations"] if v["count"]}
    lvs = result["results"]["lvs.run"]
    if not lvs["match"]:
        lines = [f"{what}: {item if isinstance(item, str) else json.dumps(item)}"
                 for key, what in LVS_LISTS for item in lvs.get(key) or []]
        kinds |= lvs_kinds(lines) or {"LVS ?"}
    return kinds, bool(drc["total"]), not lvs["match"]


def replay(path: Path, circuits: list[Circuit], fingers: int) -> int:
    """Every design point of an earlier sweep's ``--points`` file planned (`centroid plan
    --point`) and run again on this checkout; tables of what they draw now, and of what each
    defect found then became."""
    from centroid_skills.server import Server

    by_name = {c.name: c for c in circuits}
    points = [p for p in json.loads(path.read_text()) if p["circuit"] in by_name]
    inputs: dict[tuple[str, int], tuple[dict[str, Any], dict[str, Any], dict[str, Any]]] = {}
    requests = []
    for p in points:
        key = (p["circuit"], int(p.get("fingers", fingers)))
        if key not in inputs:
            circuit = by_name[key[0]]
            inputs[key] = (fingered(netlist_of(circuit), key[1]),
                           json.loads((circuit.directory / "drc_rules.json").read_text()),
                           json.loads((circuit.directory / "objectives.json").read_text()))
        requests.append(rust_plans.PlanRequest.of(*inputs[key], point=p["design"]))
    rust_plans.prefetch(requests)
    tallies: dict[str, Tally] = {}
    became: Counter[tuple[str, str, str]] = Counter()  # (circuit, defect then, now) -> points
    server = Server()
    with tempfile.TemporaryDirectory(prefix="centroid-replay-") as tmp:
        for k, (p, request) in enumerate(zip(points, requests, strict=True)):
            steps = rust_plans.draft(request).candidates[0].steps
            kinds, drc, lvs = result_defects(rust_plans.run_plan(steps, Path(tmp) / str(k),
                                                                 server=server))
            tallies.setdefault(p["circuit"], Tally()).count(kinds, drc, lvs,
                                                            f"seed {p['seed']} {p['id']}")
            for then in p["defects"]:
                became[(p["circuit"], then, ", ".join(sorted(kinds)) or "clean")] += 1
    rust_plans.stop_prefetch()
    print(f"\n{len(points)} design points of {path} drawn again\n")
    print_tables(tallies, runs=False)
    print("\n| circuit | defect then | now | points |")
    print("|---|---|---|---:|")
    for (circuit, then, now), n in sorted(became.items()):
        print(f"| {circuit} | {then} | {now} | {n} |")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--seed", type=int, action="append", help="default: 3, 5, 7")
    ap.add_argument("--candidates", type=int, default=8, help="per iteration (default 8)")
    ap.add_argument("--iterations", type=int, default=4, help="(default 4)")
    ap.add_argument("--slots", type=int, default=2)
    ap.add_argument("--circuit", action="append",
                    help="e.g. ota5, gf180/miller_ota, align/telescopic_ota (default: all)")
    ap.add_argument("--fingers", type=int, default=1,
                    help="every MOS device with this many times its fingers and width")
    ap.add_argument("--points", type=Path, help="write the defective candidates' design points here")
    ap.add_argument("--replay", type=Path,
                    help="instead of a sweep: draw again the design points of an earlier --points "
                         "file on this checkout (centroid plan --point, each plan run in process)")
    args = ap.parse_args()
    circuits = all_circuits()
    if args.circuit:
        unknown = set(args.circuit) - {c.name for c in circuits}
        if unknown:
            ap.error(f"unknown circuits {sorted(unknown)}; known: {[c.name for c in circuits]}")
        circuits = [c for c in circuits if c.name in args.circuit]
    if args.replay:
        return replay(args.replay, circuits, args.fingers)
    return sweep(args, circuits)


if __name__ == "__main__":
    raise SystemExit(main())
