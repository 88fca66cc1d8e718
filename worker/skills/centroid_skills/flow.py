"""One candidate, start to finish, as the skill calls a worker makes on one KLayout process.

``plan(circuit, rules, pitch_um, options)`` turns a flattened circuit (the ``circuit``
object of ``centroid validate --json``: devices, nets, modules) into the ordered list of
``tools/call`` requests ``{"name", "arguments"}`` of one candidate::

    tech.load -> route.info -> modules / devices (+ dummies) -> layout.place (one per row)
    -> route.nets -> drc.run -> lvs.run -> layout.metrics -> layout.export

Only one value of the plan depends on an earlier result: the ``gap`` of every
``layout.place`` row is ``route.info``'s ``pitch_um`` (so that pins of neighbouring
cells never compete for one routing pitch).  :func:`run` executes the plan through the
server's JSON-RPC dispatch (exactly what the worker sends over stdio) and times every
step.

Module choice (the candidate's design point, fixed here; the coordinator varies it):

* differential pairs, cross-coupled pairs, current mirrors, matched current sources:
  their MOS devices are split into unit devices of one finger (w/nf wide, nf*m units
  per device); two devices with the same unit and unit count -> a common-centroid pair
  (ABBA when the count is even, else ABAB); more devices, or other counts, with one
  unit -> an interdigitated group; a device whose unit differs stays a single device;
* each module gets one dummy at both row ends (``dummies`` option);
* options: ``dummies`` (default true), ``arrangement`` ("ABBA" default, or "ABAB" for
  every pair), ``max_fingers_per_row`` (default 32: a type gets more rows beyond it),
  ``export_path`` (GDS path of the export step);
* every other device is a single device cell (``layout.create_device``);
* rows bottom to top: nmos, pmos, passives (resistors, capacitors); in a row the
  modules sit in the middle and single devices alternate left/right around them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

PASSIVE_FINGERS = 4  # a resistor or capacitor counts as this many fingers of row width
MATCHED_MODULES = ("differential_pair", "cross_coupled_pair", "current_mirror",
                   "matched_current_sources")
Call = dict[str, Any]


def _params(dev: dict[str, Any]) -> dict[str, Any]:
    p = dict(dev.get("params") or {})
    for k in ("w", "l", "nf", "m"):
        if dev.get(k) is not None:
            p[k] = dev[k]
    return p


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "_.-" else "_" for c in name)


def _unit(dev: dict[str, Any]) -> tuple[str, float, float]:
    p = _params(dev)
    nf = int(p.get("nf") or 1)
    return (dev["type"], round(float(p["w"]) / nf, 15), float(p["l"]))


def _units(dev: dict[str, Any]) -> int:
    p = _params(dev)
    return int(p.get("nf") or 1) * int(p.get("m") or 1)


def plan(circuit: dict[str, Any], rules: dict[str, Any], pitch_um: float | None = None,
         options: dict[str, Any] | None = None) -> list[Call]:
    """The calls of one candidate (``pitch_um`` None: leave the place gap as a marker
    ``"$route.info.pitch_um"`` for the caller to fill in)."""
    opts = {"dummies": True, "export_path": None, "arrangement": "ABBA", "max_fingers_per_row": 32,
            **(options or {})}
    name = _safe(circuit.get("name") or "top")
    devices = circuit["devices"]
    by_id = {d["id"]: d for d in devices}
    # layout names allow no '/': hierarchical ids X1/M3 become X1.M3 (kept unique)
    lid: dict[str, str] = {}
    for d in devices:
        cand = _safe(d["id"].replace("/", "."))
        while cand in lid.values():
            cand += "_"
        lid[d["id"]] = cand
    calls: list[Call] = [{"name": "tech.load", "arguments": {"rules": rules}},
                         {"name": "route.info", "arguments": {}}]
    used: set[str] = set()
    blocks: list[tuple[str, str, bool, int]] = []  # (cell, kind, is_module, fingers)
    for module in sorted(circuit.get("modules") or [],
                         key=lambda m: MATCHED_MODULES.index(m["type"]) if m["type"] in MATCHED_MODULES else 99):
        if module["type"] not in MATCHED_MODULES:
            continue
        members = [by_id[m["device_id"]] for m in module["devices"]
                   if m["device_id"] in by_id and m["device_id"] not in used
                   and by_id[m["device_id"]]["type"] in ("nmos", "pmos")]
        groups: dict[tuple[str, float, float], list[dict[str, Any]]] = {}
        for dev in members:
            groups.setdefault(_unit(dev), []).append(dev)
        for key, group in groups.items():
            if len(group) < 2:
                continue
            mtype, wf, length = key
            cell = _safe(f"{module['id']}_{'_'.join(lid[g['id']] for g in group)}")
            specs = [{"device_id": lid[g["id"]], "type": mtype, "w": wf, "l": length, "nf": 1,
                      "m": _units(g)} for g in group]
            if len(group) == 2 and _units(group[0]) == _units(group[1]):
                u = _units(group[0])
                arrangement = "ABBA" if u % 2 == 0 and opts["arrangement"] == "ABBA" else "AB" * u
                calls.append({"name": "layout.create_common_centroid_pair", "arguments": {
                    "device_a": specs[0], "device_b": specs[1], "arrangement": arrangement,
                    "cell_name": cell}})
            else:
                calls.append({"name": "layout.create_interdigitated_group", "arguments": {
                    "devices": [{**s, "units": s["m"], "m": 1} for s in specs], "cell_name": cell}})
            if opts["dummies"]:
                calls.append({"name": "layout.add_dummies", "arguments": {"cell": cell}})
            used.update(g["id"] for g in group)
            blocks.append((cell, mtype, True, sum(_units(g) for g in group) + 2 * bool(opts["dummies"])))
    for dev in devices:
        if dev["id"] in used:
            continue
        p = _params(dev)
        cell = lid[dev["id"]]
        calls.append({"name": "layout.create_device", "arguments": {
            "device_id": lid[dev["id"]], "type": dev["type"], "w": p["w"], "l": p["l"],
            "nf": int(p.get("nf") or 1), "m": int(p.get("m") or 1), "cell_name": cell}})
        blocks.append((cell, dev["type"], False,
                       _units(dev) if dev["type"] in ("nmos", "pmos") else PASSIVE_FINGERS))
    gap: Any = pitch_um if pitch_um is not None else "$route.info.pitch_um"
    rows = []
    budget = int(opts["max_fingers_per_row"])
    for kinds in (("nmos",), ("pmos",), ("resistor", "capacitor")):
        mods = [b for b in blocks if b[1] in kinds and b[2]]
        singles = [b for b in blocks if b[1] in kinds and not b[2]]
        if not mods and not singles:
            continue
        # rows of at most ``budget`` fingers (modules first, in the first rows); in a row
        # the modules sit in the middle and single devices alternate right/left
        type_rows: list[list[tuple[str, str, bool, int]]] = [[]]
        for b in mods + singles:
            if type_rows[-1] and sum(x[3] for x in type_rows[-1]) + b[3] > budget:
                type_rows.append([])
            type_rows[-1].append(b)
        for members in type_rows:
            order: list[str] = [b[0] for b in members if b[2]]
            for i, b in enumerate(x for x in members if not x[2]):
                if i % 2 == 0:
                    order.append(b[0])
                else:
                    order.insert(0, b[0])
            row_cell = f"{name}_row{len(rows)}"
            calls.append({"name": "layout.place", "arguments": {
                "cell_name": row_cell, "rows": [{"cells": order, "gap": gap}]}})
            rows.append(row_cell)
    flat_devices = [{"id": d["id"], "type": d["type"], "terminals": d["terminals"],
                     **{k: v for k, v in _params(d).items() if k in ("w", "l", "nf", "m")}}
                    for d in devices]
    nets = [{"name": n["name"], "net_type": n.get("net_type", "signal")}
            for n in circuit.get("nets") or [] if isinstance(n, dict) and "name" in n]
    calls.append({"name": "route.nets", "arguments": {
        "cell_name": name, "rows": rows,
        "devices": [{"id": lid[d["id"]], "type": d["type"], "terminals": d["terminals"]}
                    for d in devices],
        "nets": nets}})
    calls.append({"name": "drc.run", "arguments": {"cell": name}})
    calls.append({"name": "lvs.run", "arguments": {"cell": name, "devices": flat_devices,
                                                   "circuit_name": name}})
    calls.append({"name": "layout.metrics", "arguments": {"cell": name}})
    export: dict[str, Any] = {"cell": name}
    if opts["export_path"]:
        export["path"] = opts["export_path"]
    calls.append({"name": "layout.export", "arguments": export})
    return calls


def fill(call: Call, pitch_um: float) -> Call:
    if call["name"] != "layout.place":
        return call
    args = json.loads(json.dumps(call["arguments"]))
    for row in args.get("rows", []):
        if row.get("gap") == "$route.info.pitch_um":
            row["gap"] = pitch_um
    return {"name": call["name"], "arguments": args}


def tools_call(server: Any) -> Callable[[str, dict[str, Any]], dict[str, Any]]:
    """A caller that goes through the server's JSON-RPC dispatch (as the worker does)."""
    counter = [0]

    def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        counter[0] += 1
        response = server.handle_message({"jsonrpc": "2.0", "id": counter[0], "method": "tools/call",
                                           "params": {"name": name, "arguments": arguments}})
        return response["result"]

    return call


def run(circuit: dict[str, Any], rules: dict[str, Any], server: Any | None = None,
        options: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run one candidate; returns every step's result, the timings and a verdict.
    Stops at the first failing call (its error is in ``failed``)."""
    if server is None:
        from centroid_skills.server import Server

        server = Server()
    call = tools_call(server)
    calls = plan(circuit, rules, None, options)
    steps: list[dict[str, Any]] = []
    results: dict[str, Any] = {}
    pitch = None
    for c in calls:
        if pitch is not None:
            c = fill(c, pitch)
        t0 = time.perf_counter()
        out = call(c["name"], c["arguments"])
        dt = time.perf_counter() - t0
        steps.append({"name": c["name"], "seconds": dt, "ok": out["ok"]})
        if not out["ok"]:
            return {"ok": False, "failed": {"call": c, "error": out["error"]}, "steps": steps,
                    "results": results}
        results.setdefault(c["name"], out["data"])
        if c["name"] == "route.info":
            pitch = out["data"]["pitch_um"]
    drc = results["drc.run"]
    lvs = results["lvs.run"]
    return {"ok": True, "drc_clean": drc["clean"], "drc_total": drc["total"],
            "lvs_match": lvs["match"], "steps": steps, "results": results,
            "cell": results["route.nets"]["cell_name"]}


def main(argv: list[str] | None = None) -> int:
    """``python -m centroid_skills.flow plan|run CIRCUIT.json RULES.json [--option k=v]``:
    print the plan (JSON lines, the place gap left as a marker) or run one candidate and
    print a summary (DRC total, LVS match, step times)."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m centroid_skills.flow")
    ap.add_argument("command", choices=["plan", "run"])
    ap.add_argument("circuit", help="circuit JSON (the `circuit` of `centroid validate --json`, "
                                    "or the whole validate output)")
    ap.add_argument("rules", help="drc_rules.json")
    ap.add_argument("--option", action="append", default=[], metavar="KEY=JSON")
    args = ap.parse_args(argv)
    with open(args.circuit) as fh:
        circuit = json.load(fh)
    circuit = circuit.get("circuit", circuit)
    with open(args.rules) as fh:
        rules = json.load(fh)
    options = {}
    for item in args.option:
        key, _, value = item.partition("=")
        options[key] = json.loads(value)
    if args.command == "plan":
        for c in plan(circuit, rules, None, options):
            print(json.dumps(c))
        return 0
    result = run(circuit, rules, options=options)
    summary = {"ok": result["ok"], "steps": [{"name": s["name"], "ms": round(s["seconds"] * 1000, 1)}
                                              for s in result["steps"]]}
    if result["ok"]:
        summary.update({"cell": result["cell"], "drc_total": result["drc_total"],
                        "lvs_match": result["lvs_match"],
                        "gds": result["results"]["layout.export"]["path"]})
    else:
        summary["failed"] = {"name": result["failed"]["call"]["name"], "error": result["failed"]["error"]}
    print(json.dumps(summary, indent=1))
    return 0 if result["ok"] and result["drc_total"] == 0 and result["lvs_match"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
