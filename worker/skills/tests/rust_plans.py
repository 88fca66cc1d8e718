"""Plans of the Rust planner, run on the skill package: the test support for whole candidates.

The planner crate (``planner/``, which the coordinator drafts with) is the only planner.  Tests and
benchmarks that need a whole candidate ask it for plans with ``centroid plan --json``
(the first iteration's candidates exactly as the coordinator drafts them, against one
skill process started from this checkout) and execute the steps here, in process, the way
the worker does over stdio::

    drafted = draft(PlanRequest.of(netlist, rules, objectives, candidates=5))
    result = run_plan(drafted.candidates[0].steps, tmp_path)
    assert result["ok"] and result["drc_total"] == 0 and result["lvs_match"]

``run_plan`` sends ``session/reset {scratch_dir}`` (so the skill server confines every file
argument to it), then every step as a JSON-RPC ``tools/call`` with ``${CANDIDATE_DIR}``
replaced by that scratch directory, and stops at the first failing step (optional or not),
like the worker.  Its result: ``ok``, ``failed`` ({step, error}) when a step failed,
``steps`` (per step: id, skill, ok, seconds), ``results`` (the data of each skill's first
call), and for a complete run ``cell`` (the routed top cell), ``drc_total`` and
``lvs_match``.

``centroid plan`` starts KLayout (~1 s per call), so requests are memoised and
:func:`prefetch` drafts the plans a test session will need on a background thread
(``conftest.py`` collects them from the tests' ``rust_plans`` markers).  The ``centroid``
binary is the newest of ``target/{debug,release}/centroid`` in this checkout, else one on
``PATH``; without it every test that needs a plan fails, saying how to build it.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SKILLS_DIR = Path(__file__).resolve().parents[1]
REPO_ROOT = SKILLS_DIR.parents[1]
EXAMPLES_DIR = REPO_ROOT / "examples"
FIXTURES = Path(__file__).resolve().parent / "fixtures"

#: placeholder for the candidate's scratch directory in step arguments (worker/src/candidate.rs)
CANDIDATE_DIR = "${CANDIDATE_DIR}"
BUILD_HINT = "build it with `cargo build -p centroid-cli` (make test builds it before pytest runs)"
#: deadline of one `centroid plan` call (it starts one KLayout process)
PLAN_TIMEOUT_S = 120

Step = dict[str, Any]
StepEdit = Callable[[Step], Step]


class PlanUnavailable(RuntimeError):
    """No plan: the binary is missing, or `centroid plan` failed (its output attached)."""


def centroid_binary() -> Path:
    """The `centroid` binary of this checkout (the newest build), else one on PATH."""
    built = [p for p in (REPO_ROOT / "target" / profile / "centroid" for profile in ("debug", "release"))
             if p.is_file()]
    if built:
        return max(built, key=lambda p: p.stat().st_mtime)
    on_path = shutil.which("centroid")
    if on_path:
        return Path(on_path)
    raise PlanUnavailable(f"no centroid binary in {REPO_ROOT / 'target'}/{{debug,release}} "
                          f"nor on PATH: {BUILD_HINT}")


# --------------------------------------------------------------------------------------------
# inputs
# --------------------------------------------------------------------------------------------

def rule_set(name: str) -> dict[str, Any]:
    """A rule set by name: ``examples/pdk/NAME.json``, else ``tests/fixtures/NAME.json``."""
    for path in (EXAMPLES_DIR / "pdk" / f"{name}.json", FIXTURES / f"{name}.json"):
        if path.is_file():
            data: dict[str, Any] = json.loads(path.read_text())
            return data
    raise FileNotFoundError(f"no rule set {name} in examples/pdk or tests/fixtures")


def example_netlist(example: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((EXAMPLES_DIR / example / "netlist.json").read_text())
    return data


def example_objectives(example: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((EXAMPLES_DIR / example / "objectives.json").read_text())
    return data


DEFAULT_OBJECTIVES: dict[str, Any] = {
    "schema_version": "1.0.0",
    "objectives": [{"name": "area_min", "weight": 0.5}, {"name": "matching_max", "weight": 0.5}],
    "constraints": {"max_iterations": 1},
}


def _devices(netlist: dict[str, Any]) -> Iterable[dict[str, Any]]:
    for cell in netlist["cells"]:
        yield from cell.get("devices") or []


def scaled_netlist(netlist: dict[str, Any], factor: float) -> dict[str, Any]:
    """Every device's W and L (in every cell) times ``factor``."""
    netlist = copy.deepcopy(netlist)
    for device in _devices(netlist):
        for key in ("w", "l"):
            if device.get(key) is not None:
                device[key] = device[key] * factor
    return netlist


def min_gate_length_m(rules: dict[str, Any]) -> float:
    """The process's minimum gate length (its poly width), in metres."""
    from centroid_skills.tech import Technology

    return Technology.from_rules(rules).width("poly") * 1e-9


def sized_for(netlist: dict[str, Any], rules: dict[str, Any]) -> dict[str, Any]:
    """The netlist with every MOS gate at least the process's minimum length (a designer
    porting a circuit to GF180 3.3 V lengthens 0.15 µm gates to 0.28 µm); unchanged on a
    process whose minimum the circuit already meets."""
    l_min = min_gate_length_m(rules)
    netlist = copy.deepcopy(netlist)
    for device in _devices(netlist):
        if device["type"] in ("nmos", "pmos") and device.get("l") is not None:
            device["l"] = max(device["l"], l_min)
    return netlist


def netlist_of_circuit(circuit: dict[str, Any]) -> dict[str, Any]:
    """A flat circuit (devices with ``params``, nets with ``net_type``) as a netlist 1.1.0
    file with one cell.  Modules are not carried: the Rust side recognises them."""
    devices = []
    for d in circuit["devices"]:
        p = d.get("params") or {}
        device = {"id": d["id"], "type": d["type"], "terminals": dict(d["terminals"])}
        for key in ("w", "l", "nf", "m"):
            if p.get(key) is not None:
                device[key] = p[key]
        devices.append(device)
    nets = [{"name": n["name"], "type": n.get("net_type", "signal")} for n in circuit["nets"]]
    name = circuit.get("name") or "top"
    return {"schema_version": "1.1.0", "top": name,
            "cells": [{"name": name, "nets": nets, "devices": devices}]}


# --------------------------------------------------------------------------------------------
# drafting with `centroid plan`
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class PlanRequest:
    """The inputs of one `centroid plan` call, as canonical JSON text (hashable)."""

    netlist_json: str
    rules_json: str
    objectives_json: str
    candidates: int = 1
    seed: int = 0
    #: a design point to plan instead of drafting an iteration (`centroid plan --point`)
    point_json: str = ""

    @staticmethod
    def of(netlist: dict[str, Any], rules: dict[str, Any], objectives: dict[str, Any] | None = None,
           *, candidates: int = 1, seed: int = 0,
           point: dict[str, Any] | None = None) -> PlanRequest:
        def text(value: dict[str, Any]) -> str:
            return json.dumps(value, sort_keys=True, allow_nan=False)

        return PlanRequest(text(netlist), text(rules), text(objectives or DEFAULT_OBJECTIVES),
                           candidates, seed, text(point) if point is not None else "")

    def with_point(self, point: dict[str, Any]) -> PlanRequest:
        """The same inputs, planning `point` alone."""
        return dataclasses.replace(self, candidates=1,
                                   point_json=json.dumps(point, sort_keys=True, allow_nan=False))

    def key(self) -> str:
        h = hashlib.sha256()
        for part in (self.netlist_json, self.rules_json, self.objectives_json,
                     str(self.candidates), str(self.seed), self.point_json):
            h.update(part.encode())
            h.update(b"\0")
        return h.hexdigest()

    @property
    def circuit_name(self) -> str:
        name: str = json.loads(self.netlist_json).get("top", "?")
        return name


@dataclass(frozen=True)
class Candidate:
    candidate_id: str
    origin: str
    design_point: dict[str, Any]
    summary: str
    steps: list[Step]


@dataclass(frozen=True)
class Drafted:
    route_pitch_um: float | None
    design_space_size: int
    candidates: list[Candidate]
    seconds: float


def _plan_environment() -> dict[str, str]:
    # the skill process `centroid plan` asks for its catalog and routing pitch is this
    # checkout's package on this interpreter, whatever the caller's environment says
    env = dict(os.environ, CENTROID_PYTHON=sys.executable, CENTROID_SKILLS_DIR=str(SKILLS_DIR))
    if env.pop("PYTHONDONTWRITEBYTECODE", None) and "PYTHONPYCACHEPREFIX" not in env:
        # no bytecode in the source tree, but cached outside it: otherwise the skill process
        # compiles the whole package at every call (about half of its start-up time)
        env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / f"centroid-pycache-{os.getuid()}")
    return env


def _write_inputs(request: PlanRequest, directory: Path) -> dict[str, str]:
    """The request's three files in ``directory``: {"netlist": path, "drc": ..., "objectives": ...}."""
    directory.mkdir(parents=True, exist_ok=True)
    files = {}
    for name, text in (("netlist", request.netlist_json), ("drc", request.rules_json),
                       ("objectives", request.objectives_json)):
        path = directory / f"{name}.json"
        path.write_text(text)
        files[name] = str(path)
    return files


def _drafted(document: dict[str, Any], seconds: float) -> Drafted:
    candidates = [Candidate(c["candidate_id"], c["origin"], c["design_point"], c["plan"]["summary"],
                            c["plan"]["steps"]) for c in document["candidates"]]
    return Drafted(document["route_pitch_um"], document["design_space_size"], candidates, seconds)


def _plan_now(request: PlanRequest) -> Drafted:
    binary = centroid_binary()
    with tempfile.TemporaryDirectory(prefix="centroid-plan-") as tmp:
        files = _write_inputs(request, Path(tmp))
        argv = [str(binary), "plan", "--netlist", files["netlist"], "--drc", files["drc"],
                "--objectives", files["objectives"],
                "--candidates", str(request.candidates), "--seed", str(request.seed), "--json"]
        if request.point_json:
            point = Path(tmp) / "point.json"
            point.write_text(request.point_json)
            argv += ["--point", str(point)]
        started = time.perf_counter()
        try:
            out = subprocess.run(argv, capture_output=True, text=True, env=_plan_environment(),
                                 timeout=PLAN_TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired as exc:
            raise PlanUnavailable(f"`centroid plan` ran past {PLAN_TIMEOUT_S} s "
                                  f"({request.circuit_name})") from exc
        seconds = time.perf_counter() - started
    if out.returncode != 0:
        raise PlanUnavailable(f"`{binary} plan` for {request.circuit_name} exited with "
                              f"{out.returncode}:\n{out.stdout[-2000:]}\n{out.stderr[-4000:]}")
    return _drafted(json.loads(out.stdout), seconds)


def _plan_batch(requests: list[PlanRequest]) -> dict[str, Drafted | PlanUnavailable]:
    """Drafts many requests with one `centroid plan --batch` (one KLayout process)."""
    binary = centroid_binary()
    outcomes: dict[str, Drafted | PlanUnavailable] = {}
    with tempfile.TemporaryDirectory(prefix="centroid-plan-batch-") as tmp:
        lines = []
        for index, request in enumerate(requests):
            files = _write_inputs(request, Path(tmp) / str(index))
            line: dict[str, Any] = {"id": request.key(), **files, "candidates": request.candidates,
                                    "seed": request.seed}
            if request.point_json:
                line["point"] = json.loads(request.point_json)
            lines.append(json.dumps(line))
        batch = Path(tmp) / "batch.jsonl"
        batch.write_text("\n".join(lines) + "\n")
        started = time.perf_counter()
        try:
            out = subprocess.run([str(binary), "plan", "--batch", str(batch)], capture_output=True,
                                 text=True, env=_plan_environment(),
                                 timeout=PLAN_TIMEOUT_S * max(1, len(requests) // 10), check=False)
        except subprocess.TimeoutExpired as exc:
            failure = PlanUnavailable(f"`centroid plan --batch` of {len(requests)} ran too long")
            failure.__cause__ = exc
            return {request.key(): failure for request in requests}
        seconds = (time.perf_counter() - started) / max(1, len(requests))
    if out.returncode != 0:
        failure = PlanUnavailable(f"`{binary} plan --batch` exited with {out.returncode}:\n"
                                  f"{out.stderr[-4000:]}")
        return {request.key(): failure for request in requests}
    for line in out.stdout.splitlines():
        document = json.loads(line)
        key = document.get("id")
        if not isinstance(key, str):
            continue
        if document.get("error"):
            outcomes[key] = PlanUnavailable(f"`centroid plan --batch`: {document['error']}")
        else:
            outcomes[key] = _drafted(document, seconds)
    for request in requests:
        outcomes.setdefault(request.key(), PlanUnavailable(
            f"`centroid plan --batch` gave no answer for {request.circuit_name}"))
    return outcomes


class _Drafts:
    """Memoised `centroid plan` calls; a background thread drafts prefetched requests while
    the tests run (on a second core), a test waits only for the plan it needs."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._done: dict[str, Drafted | PlanUnavailable] = {}
        self._running: dict[str, threading.Event] = {}
        self._queue: list[PlanRequest] = []
        self._thread: threading.Thread | None = None
        self._stopped = False
        self.calls = 0
        self.seconds = 0.0

    def get(self, request: PlanRequest) -> Drafted:
        key = request.key()
        with self._lock:
            outcome = self._done.get(key)
            event = self._running.get(key)
            mine = outcome is None and event is None
            if mine:
                event = self._running[key] = threading.Event()
        if outcome is None and mine:
            started = time.perf_counter()
            try:
                outcome = _plan_now(request)
            except PlanUnavailable as exc:
                outcome = exc
            except Exception as exc:  # e.g. unreadable output: kept, raised to every test that asks
                outcome = PlanUnavailable(f"`centroid plan` for {request.circuit_name}: {exc!r}")
            with self._lock:
                self._done[key] = outcome
                del self._running[key]
                self.calls += 1
                self.seconds += time.perf_counter() - started
            assert event is not None
            event.set()
        elif outcome is None:
            assert event is not None
            event.wait()
            outcome = self._done[key]
        if isinstance(outcome, PlanUnavailable):
            raise outcome
        return outcome

    def prefetch(self, requests: Iterable[PlanRequest]) -> None:
        with self._lock:
            self._queue.extend(requests)
            start = self._thread is None and bool(self._queue) and not self._stopped
            if start:
                self._thread = threading.Thread(target=self._work, name="centroid-plan-prefetch",
                                                daemon=True)
        if start and self._thread is not None:
            self._thread.start()

    def _work(self) -> None:
        """Drafts everything queued with one `centroid plan --batch` per round."""
        while True:
            with self._lock:
                if self._stopped or not self._queue:
                    self._thread = None
                    return
                batch: dict[str, PlanRequest] = {}
                for request in self._queue:
                    key = request.key()
                    if key not in self._done and key not in self._running:
                        batch.setdefault(key, request)
                self._queue.clear()
                events = {key: threading.Event() for key in batch}
                self._running.update(events)
            if not batch:
                continue
            started = time.perf_counter()
            try:
                outcomes = _plan_batch(list(batch.values()))
            except Exception as exc:  # e.g. unreadable output: kept, raised to every test that asks
                failure = PlanUnavailable(f"`centroid plan --batch`: {exc!r}")
                outcomes = {key: failure for key in batch}
            with self._lock:
                for key in batch:
                    self._done[key] = outcomes[key]
                    del self._running[key]
                self.calls += 1
                self.seconds += time.perf_counter() - started
            for event in events.values():
                event.set()

    def stop(self) -> None:
        """Drop what is queued and wait for the call in progress (end of the session)."""
        with self._lock:
            self._stopped = True
            self._queue.clear()
            thread = self._thread
        if thread is not None:
            thread.join(timeout=PLAN_TIMEOUT_S)


_DRAFTS = _Drafts()


def draft(request: PlanRequest) -> Drafted:
    """The candidates `centroid plan` drafts for ``request`` (memoised)."""
    return _DRAFTS.get(request)


def prefetch(requests: Iterable[PlanRequest]) -> None:
    """Draft these in the background, in order (duplicates are drafted once)."""
    _DRAFTS.prefetch(requests)


def stop_prefetch() -> None:
    _DRAFTS.stop()


def statistics() -> tuple[int, float]:
    """`centroid plan` calls made so far and their total wall time (seconds)."""
    return _DRAFTS.calls, _DRAFTS.seconds


#: candidates drafted per example request (one request per example x rule set x variant is
#: shared by every test that needs one of its plans)
EXAMPLE_CANDIDATES = 8


def example_request(example: str, rules_name: str, variant: str = "plain") -> PlanRequest:
    """An example circuit on a rule set, sized for the process (gates at least its minimum
    length); variant ``x1.5``: the rule set scaled 1.5x with other layer numbers and names
    (``helpers.scaled_rule_set``) and every W and L 1.5x."""
    from helpers import scaled_rule_set

    rules = rule_set(rules_name)
    netlist = sized_for(example_netlist(example), rules)
    if variant == "x1.5":
        rules = scaled_rule_set(rules, 1.5)
        netlist = scaled_netlist(netlist, 1.5)
    elif variant != "plain":
        raise ValueError(f"unknown variant {variant}")
    return PlanRequest.of(netlist, rules, example_objectives(example), candidates=EXAMPLE_CANDIDATES)


# --------------------------------------------------------------------------------------------
# running a plan, as the worker does
# --------------------------------------------------------------------------------------------

def substituted(value: Any, scratch_dir: str) -> Any:
    """``value`` with ``${CANDIDATE_DIR}`` replaced in every string (as the worker does)."""
    if isinstance(value, str):
        return value.replace(CANDIDATE_DIR, scratch_dir)
    if isinstance(value, list):
        return [substituted(v, scratch_dir) for v in value]
    if isinstance(value, dict):
        return {k: substituted(v, scratch_dir) for k, v in value.items()}
    return value


def step_of(steps: list[Step], skill: str) -> Step:
    """The first step calling ``skill``."""
    found = [s for s in steps if s["skill"] == skill]
    assert found, f"the plan has no {skill} step: {[s['skill'] for s in steps]}"
    return found[0]


def run_plan(steps: list[Step], scratch_dir: Path | str, *, server: Any | None = None,
             edit: StepEdit | None = None, until: str | None = None) -> dict[str, Any]:
    """Execute ``steps`` on ``server`` (a fresh ``centroid_skills.server.Server`` by default)
    through its JSON-RPC dispatch, confined to ``scratch_dir`` as under a worker.  ``edit``
    may change a step before it is sent (fault injection); ``until`` stops after the first
    step calling that skill."""
    if server is None:
        from centroid_skills.server import Server

        server = Server()
    scratch = Path(scratch_dir).resolve()
    scratch.mkdir(parents=True, exist_ok=True)
    request_id = 0

    def rpc(method: str, params: dict[str, Any]) -> Any:
        nonlocal request_id
        request_id += 1
        response = server.handle_message({"jsonrpc": "2.0", "id": request_id, "method": method,
                                          "params": params})
        assert response is not None and "result" in response, response
        # what the worker receives went through JSON
        return json.loads(json.dumps(response["result"], allow_nan=False))

    rpc("session/reset", {"scratch_dir": str(scratch)})
    timings: list[dict[str, Any]] = []
    results: dict[str, Any] = {}
    for step in steps:
        if edit is not None:
            step = edit(copy.deepcopy(step))
        arguments = substituted(step["arguments"], str(scratch))
        started = time.perf_counter()
        out = rpc("tools/call", {"name": step["skill"], "arguments": arguments})
        timings.append({"step_id": step["step_id"], "skill": step["skill"], "ok": out["ok"],
                        "seconds": time.perf_counter() - started})
        if not out["ok"]:
            return {"ok": False, "failed": {"step": step, "error": out["error"]}, "steps": timings,
                    "results": results}
        results.setdefault(step["skill"], out["data"])
        if until is not None and step["skill"] == until:
            break
    outcome: dict[str, Any] = {"ok": True, "steps": timings, "results": results}
    if "route.nets" in results:
        outcome["cell"] = results["route.nets"]["cell_name"]
    if "drc.run" in results:
        outcome["drc_total"] = results["drc.run"]["total"]
    if "lvs.run" in results:
        outcome["lvs_match"] = results["lvs.run"]["match"]
    return outcome


def check_clean(result: dict[str, Any]) -> None:
    """A whole candidate ran every step, is DRC clean, LVS matches, every net is labelled."""
    assert result["ok"], result.get("failed")
    names = [s["skill"] for s in result["steps"]]
    for skill in ("route.nets", "drc.run", "lvs.run"):
        assert skill in names, f"the plan has no {skill}: {names}"
    drc = result["results"]["drc.run"]
    assert drc["total"] == 0, [(v["id"], v["count"], v["markers_um"][:2]) for v in drc["violations"]]
    lvs = result["results"]["lvs.run"]
    assert lvs["match"], {k: v for k, v in lvs.items() if not k.endswith("_netlist")}
    assert lvs["unlabelled_nets"] == []
    routed = result["results"]["route.nets"]
    assert routed["nets"] and all(n["label"] is not None for n in routed["nets"].values())
