"""Slots held and wall time of ``centroid run`` with the rule-based planner against the
LLM planner served by a model that answers every request after a delay (issue 28).

The model is ``fake-llm`` (``tests/src/bin/fake_llm.rs``), an OpenAI-compatible server on
loopback answering every request with one JSON object that is at once a planning answer
(one design point), a critique and a guidance rewrite. Runs alternate heuristic / llm
(paired). "Slots held" = Σ seconds each candidate held its slot (report.json
``candidates[].slot_seconds``) / (search seconds × slots).

    cargo build -p centroid-cli -p centroid-coordinator -p centroid-worker -p centroid-tests
    cd worker/skills && ../../.venv/bin/python bench/bench_llm_slots.py \\
        --point '{"arrangement": "ABAB", "dummies": 1}' [--results-before-advice-pct 50]
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


def start_model(reply_file: Path, delay_ms: int) -> tuple[subprocess.Popen[str], str]:
    """The fake model server and its base URL (its first line of output)."""
    server = subprocess.Popen(
        [str(REPO / "target/debug/fake-llm"), "--reply-file", str(reply_file),
         "--delay-ms", str(delay_ms)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    return server, server.stdout.readline().strip()


def run_once(planner: str, args: argparse.Namespace, out: Path, env: dict[str, str]) -> Run:
    started = time.monotonic()
    done = subprocess.run(
        [str(REPO / "target/debug/centroid"), "run", "--no-memory", "--seed", "1",
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
    args = parser.parse_args()
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
    server, url = start_model(reply_file, args.delay_ms)
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
    runs: dict[str, list[Run]] = {"heuristic": [], "llm": []}
    try:
        for index in range(args.runs):
            for planner, done in runs.items():
                run = run_once(planner, args, work / f"{planner}-{index}", env)
                done.append(run)
                print(f"{planner} {index}: {run}", flush=True)
    finally:
        server.kill()
    print("| planner | wall s, median | search s, median | slots held, median | model calls |")
    print("|---|---|---|---|---|")
    for planner, done in runs.items():
        print(
            f"| {planner} | {statistics.median(r.wall_s for r in done):.2f} "
            f"| {statistics.median(r.search_s for r in done):.2f} "
            f"| {statistics.median(r.slots_held_pct for r in done):.0f} % "
            f"| {statistics.median(r.model_calls for r in done):.0f} |"
        )
    pairs = zip(runs["heuristic"], runs["llm"], strict=True)
    ratios = [llm.wall_s / rule.wall_s for rule, llm in pairs]
    print(
        f"paired wall ratio llm / heuristic: median {statistics.median(ratios):.2f} "
        f"({min(ratios):.2f}–{max(ratios):.2f})"
    )


if __name__ == "__main__":
    main()
