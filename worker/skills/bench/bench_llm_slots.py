"""Slots held and wall time of ``centroid run`` with the rule-based planner against the
LLM planner served by a model that answers every request after a delay (issue 28).

The model is ``fake-llm`` (``tests/src/bin/fake_llm.rs``), an OpenAI-compatible server on
loopback answering every request with one JSON object that is at once a planning answer
(one design point), a critique and a guidance rewrite. Runs alternate heuristic / llm
(paired). "Slots held" = Σ seconds each candidate held its slot (report.json
``candidates[].slot_seconds``) / (search seconds × slots).

    cargo build -p centroid-cli -p centroid-coordinator -p centroid-worker -p centroid-tests
    cd worker/skills && ../../.venv/bin/python bench/bench_llm_slots.py \\
        --point '{"arrangement": "ABAB", "dummies": 1}' [--results-before-advice-pct 50] \\
        [--delay-ms N] [--candidates N] [--bin-dir DIR ...] [--model-share POLICY ...]

``--bin-dir`` (repeatable) runs the LLM planner with the binaries of each directory
(``centroid``, the ``centroid-coordinator`` that ``centroid run`` starts from beside it,
and ``fake-llm``; default ``target/debug``), e.g. a build of main copied aside and
this branch's: each round runs the heuristic (first directory) then the LLM planner of every
directory in turn, so before and after are paired under the same load. The load average is
printed with every run (other builds on the machine change a candidate's run time).
``--model-share`` (repeatable: ``wait``, ``when_ready``) runs the LLM planner of every
directory once per policy (``CENTROID_LLM_MODEL_SHARE``; binaries older than the
setting ignore it and wait); default: the binaries' own default.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
SLOTS = 2


@dataclass
class Run:
    wall_s: float
    search_s: float
    slots_held_pct: float
    model_calls: int
    exit_code: int
    #: mean seconds a candidate held its slot (how loaded the machine was)
    slot_s_per_candidate: float = 0.0


def start_model(
    bin_dir: Path, reply_file: Path, delay_ms: int
) -> tuple[subprocess.Popen[str], str]:
    """The fake model server and its base URL (its first line of output)."""
    server = subprocess.Popen(
        [str(bin_dir / "fake-llm"), "--reply-file", str(reply_file),
         "--delay-ms", str(delay_ms)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    return server, server.stdout.readline().strip()


def run_once(
    planner: str, bin_dir: Path, args: argparse.Namespace, out: Path, env: dict[str, str]
) -> Run:
    """One ``centroid run`` of the circuit with ``planner``, its figures."""
    started = time.monotonic()
    done = subprocess.run(
        [str(bin_dir / "centroid"), "run", "--no-memory", "--seed", "1",
         "--candidates", str(args.candidates), "--iterations", str(args.iterations),
         "--patience", "1000000", "--slots", str(SLOTS), "--planner", planner,
         "--out", str(out), str(REPO / "examples" / args.circuit)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.monotonic() - started
    report = json.loads((out / "report.json").read_text())
    held = sum(candidate.get("slot_seconds") or 0.0 for candidate in report["candidates"])
    search = float(report["timings"]["search"])
    return Run(
        wall_s=wall,
        search_s=search,
        slots_held_pct=100.0 * held / (search * SLOTS),
        model_calls=int(report.get("planner", {}).get("calls", 0)),
        exit_code=done.returncode,
        slot_s_per_candidate=held / max(len(report["candidates"]), 1),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--circuit", default="folded_cascode")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--candidates", type=int, default=8)
    parser.add_argument("--iterations", type=int, default=4)
    parser.add_argument("--delay-ms", type=int, default=2000)
    parser.add_argument("--point", required=True, help="the design point the model proposes")
    parser.add_argument("--results-before-advice-pct", type=int)
    parser.add_argument(
        "--bin-dir", type=Path, action="append",
        help="binaries to run the LLM planner with (repeatable; default target/debug)",
    )
    parser.add_argument(
        "--model-share", action="append", choices=["wait", "when_ready"],
        help="[llm] model_share of the LLM runs (repeatable; default: the binaries')",
    )
    args = parser.parse_args()
    bin_dirs: list[Path] = args.bin_dir or [REPO / "target/debug"]
    for bin_dir in bin_dirs:
        for binary in ("centroid", "centroid-coordinator", "fake-llm"):
            if not (bin_dir / binary).is_file():
                parser.error(f"{bin_dir} has no {binary}")
    work = Path(tempfile.mkdtemp(prefix="bench-llm-slots-"))
    reply = {
        "thought": "keep the pair compact",
        "candidates": [json.loads(args.point)],
        "plan": None,
        "qualitative_feedback": "the matched pair is compact; try the other arrangement",
        "suggestions": ["alternate the arrangement"],
        "system_prompt": "Plan compact common-centroid layouts.",
    }
    reply_file = work / "reply.json"
    reply_file.write_text(json.dumps(reply))
    server, url = start_model(bin_dirs[0], reply_file, args.delay_ms)
    env = dict(
        os.environ,
        CENTROID_PYTHON=str(REPO / ".venv/bin/python"),
        CENTROID_SKILLS_DIR=str(REPO / "worker/skills"),
        CENTROID_LLM_BASE_URL=url,
        CENTROID_LLM_MODEL="fake",
        CENTROID_LLM_API_KEY="bench",
    )
    if args.results_before_advice_pct is not None:
        env["CENTROID_LLM_RESULTS_BEFORE_ADVICE_PCT"] = str(args.results_before_advice_pct)
    # (label, planner, binaries, policy): the heuristic once a round, the LLM
    # planner per directory and policy
    policies: list[str | None] = args.model_share or [None]
    setups: list[tuple[str, str, Path, str | None]] = [
        ("heuristic", "heuristic", bin_dirs[0], None)
    ]
    for bin_dir in bin_dirs:
        for policy in policies:
            label = "llm" + (f" {bin_dir}" if len(bin_dirs) > 1 else "")
            label += f" {policy}" if policy else ""
            setups.append((label, "llm", bin_dir, policy))
    runs: dict[str, list[Run]] = {label: [] for label, _, _, _ in setups}
    loads: list[float] = []
    try:
        for index in range(args.runs):
            for label, planner, bin_dir, policy in setups:
                out = work / f"{planner}-{len(runs[label])}-{bin_dir.name}-{policy}"
                run_env = dict(env)
                if policy:
                    run_env["CENTROID_LLM_MODEL_SHARE"] = policy
                run = run_once(planner, bin_dir, args, out, run_env)
                runs[label].append(run)
                loads.append(os.getloadavg()[0])
                print(f"{label} {index}: {run} load {loads[-1]:.1f}", flush=True)
    finally:
        server.kill()
    report(runs, loads)


def report(runs: dict[str, list[Run]], loads: list[float]) -> None:
    """Medians per setup, and each LLM setup's wall time over its round's heuristic run."""
    print(f"load average (1 min) over the runs: {min(loads):.1f}–{max(loads):.1f}")
    print("| planner | wall s, median | search s, median | slots held, median | model calls |")
    print("|---|---|---|---|---|")
    for label, done in runs.items():
        print(
            f"| {label} | {statistics.median(r.wall_s for r in done):.2f} "
            f"| {statistics.median(r.search_s for r in done):.2f} "
            f"| {statistics.median(r.slots_held_pct for r in done):.0f} % "
            f"| {statistics.median(r.model_calls for r in done):.0f} |"
        )
    for label, done in runs.items():
        if label == "heuristic":
            continue
        pairs = zip(runs["heuristic"], done, strict=True)
        ratios = [llm.wall_s / rule.wall_s for rule, llm in pairs]
        held = ", ".join(f"{r.slots_held_pct:.0f}" for r in done)
        print(
            f"{label}: paired wall ratio llm / heuristic: median {statistics.median(ratios):.2f} "
            f"({min(ratios):.2f}–{max(ratios):.2f}); slots held per run: {held} %"
        )

if __name__ == "__main__":
    main()
