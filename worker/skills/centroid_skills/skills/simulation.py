"""``sim.run``: ngspice in batch mode on the process's models, a DUT netlist and a
testbench; the testbench's ``.meas`` results are the measures, and with ``ac_sweep``
the AC response of one node (``.print ac vdb(node) vp(node)``: frequency, gain in dB,
unwrapped phase in degrees) for a Bode plot.

The deck (``deck_path``, default ``sim.cir`` next to the testbench) is written by
Centroid: a title, the process's model lines (``models.py``), ``.include`` of the DUT
(a ``.subckt`` named like the circuit: a schematic or an ``extract.netlist`` netlist) and
of the testbench (checked first by ``testbench_check.py``), ``.save all`` and ``.end``.
ngspice runs as ``ngspice -b DECK`` in the deck's directory, in its own process group
(``OMP_WAIT_POLICY=passive``: its OpenMP threads sleep rather than spin), killed at
``timeout_s``; its output is ``<deck>.log``.

Every failure names its cause in ``error.details.reason`` (and, where ngspice points at
a line, ``file`` and ``line``):

| reason | code | when |
|---|---|---|
| ``testbench_refused`` | INVALID_PARAM | ``.control``, ``shell``, ``.exec``, XSPICE, an include outside the model directories |
| ``sim_no_models`` | NOT_FOUND | the process has no models here (``details.install`` says what to do) |
| ``sim_syntax`` | INVALID_PARAM | ngspice refused a line (unknown parameter, wrong node count, unknown subcircuit …) |
| ``sim_unknown_node`` | INVALID_PARAM | a ``.meas`` names a node or vector the circuit does not have |
| ``sim_measure_missing`` | INVALID_PARAM | a ``.meas`` produced no value (out of interval, never crossed …) |
| ``sim_no_convergence`` | INVALID_PARAM | no DC operating point / time step too small (``details.node`` when named) |
| ``sim_dut_missing`` | INVALID_PARAM | the DUT file defines no ``.subckt`` named ``circuit`` |
| ``sim_timeout`` | TIMEOUT | past ``timeout_s``; the process group was killed |
| ``sim_failed`` | INTERNAL_ERROR | ngspice exited non-zero for a reason not recognised above |
| ``ngspice_missing`` | SERVICE_UNAVAILABLE | no ngspice binary |
"""

from __future__ import annotations

import math
import os
import re
import time
from typing import Any

from centroid_skills.child_process import DeadlinePassed, log_tail, run_in_group
from centroid_skills.errors import (
    INTERNAL_ERROR,
    INVALID_PARAM,
    SERVICE_UNAVAILABLE,
    TIMEOUT,
    SkillError,
)
from centroid_skills.junction_estimate import DiffusionLengths
from centroid_skills.models import (
    CORNERS,
    ProcessModels,
    convention,
    find_models,
    mos_sizes,
    ngspice_binary,
)
from centroid_skills.registry import FILE_PATH, NAME, obj, skill
from centroid_skills.schematic_spice import schematic_subckt
from centroid_skills.session import Session
from centroid_skills.testbench_check import (
    LogicalLine,
    check_testbench,
    find_line,
    logical_lines,
    measure_names,
)
from centroid_skills.testbenches import KINDS, generate

MAX_TIMEOUT_S = 600.0
#: sim.schematic's source/drain junctions: estimated from the rule set, or none
JUNCTIONS = ("estimated", "none")
# Debian's ngspice is built with OpenMP (the BSIM4 device loads); libgomp's threads spin
# between parallel regions, and on a machine whose cores are taken (a worker runs one
# simulation per slot) the spinning costs ~1 s of CPU per small deck instead of ~0.02 s
# (wall median 1.48 s -> 0.065 s on the 5T OTA, load 12 on 2 cores): they sleep instead.
NGSPICE_ENV = {"OMP_WAIT_POLICY": "passive"}
MEASURE_LINE = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*=\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)")
NON_CONVERGENCE = ("dc solution failed", "timestep too small", "iteration limit reached",
                   "gmin stepping failed", "source stepping failed", "no convergence")
SYNTAX = ("error on line", "too few parameters", "too many parameters", "unknown subckt",
          "could not find", "unknown parameter", "undefined parameter", "unknown device",
          "simulation interrupted due to error", "syntax error", "unknown model")


def _fail(code: str, reason: str, message: str, **details: Any) -> SkillError:
    return SkillError(code, message, {"reason": reason, **details})


def read_text(path: str, what: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError as exc:
        raise _fail(INVALID_PARAM, f"{what}_unreadable", f"cannot read the {what} {path}: {exc}",
                    file=path) from exc


def write_deck(deck_path: str, models: ProcessModels, dut_path: str, testbench_path: str,
               prints: tuple[str, ...] = ()) -> None:
    folder = os.path.dirname(deck_path)
    for name, text in models.extra_files.items():
        with open(os.path.join(folder, name), "w", encoding="utf-8") as fh:
            fh.write(text)
    lines = [f"* Centroid sim.run: {models.convention.process} models ({models.source})"]
    if models.control:
        lines += [".control", *models.control, ".endc"]
    lines += [*models.lines, f'.include "{dut_path}"', f'.include "{testbench_path}"',
              *prints, ".save all", ".end", ""]
    with open(deck_path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines))


def parse_measures(output: str, wanted: set[str]) -> dict[str, float]:
    found: dict[str, float] = {}
    for line in output.splitlines():
        m = MEASURE_LINE.match(line)
        if m and m.group(1).lower() in wanted and m.group(1).lower() not in found:
            found[m.group(1).lower()] = float(m.group(2))
    return found


SWEEP_ROW = re.compile(r"^(\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s*$")


def ac_sweep_of(output: str, node: str) -> dict[str, Any] | None:
    """The `.print ac vdb(node) vp(node)` table of ngspice's output (its pages joined):
    frequency (Hz), gain (dB), phase (degrees); None when the testbench ran no `.ac`."""
    header = f"vdb({node.lower()})"
    rows: dict[int, tuple[float, float, float]] = {}
    in_table = False
    for line in output.splitlines():
        if line.startswith("Index"):
            in_table = header in line.lower()
            continue
        m = SWEEP_ROW.match(line) if in_table else None
        if m:
            try:
                rows[int(m.group(1))] = (float(m.group(2)), float(m.group(3)), float(m.group(4)))
            except ValueError:
                continue
    if not rows:
        return None
    ordered = [rows[i] for i in sorted(rows)]
    phase: list[float] = []
    for _, _, radians in ordered:  # unwrapped: ngspice's vp() folds into (-180°, 180°]
        degrees = math.degrees(radians)
        if phase:
            degrees -= 360.0 * round((degrees - phase[-1]) / 360.0)
        phase.append(degrees)
    return {"node": node, "frequency_hz": [r[0] for r in ordered], "gain_db": [r[1] for r in ordered],
            "phase_deg": phase}


def _locate(sources: list[tuple[str, list[LogicalLine]]], fragment: str) -> dict[str, Any]:
    for path, lines in sources:
        line = find_line(lines, fragment)
        if line is not None:
            return {"file": path, "line": line.number}
    return {}


def _locate_element(sources: list[tuple[str, list[LogicalLine]]], name: str) -> dict[str, Any]:
    for path, lines in sources:
        for line in lines:
            if line.text.split()[0].lower() == name.lower():
                return {"file": path, "line": line.number}
    return {}


def classify_failure(output: str, sources: list[tuple[str, list[LogicalLine]]]) -> SkillError | None:
    """A syntax error or a non-converging analysis in ngspice's output, located in the
    testbench or the DUT where ngspice quotes the line."""
    lines = output.splitlines()
    low = [line.lower() for line in lines]
    for i, text in enumerate(low):
        if any(marker in text for marker in SYNTAX):
            where: dict[str, Any] = {}
            if text.startswith("error on line") and i + 1 < len(lines):
                where = _locate(sources, lines[i + 1])
            m = re.search(r"\(instance:\s*x(\S+?)\)", lines[i], re.IGNORECASE)
            if not where and m:  # ngspice prefixes the instance name with x: X2 -> xx2
                where = _locate_element(sources, m.group(1))
            detail = " ".join(s.strip() for s in lines[i:i + 3] if s.strip())
            return _fail(INVALID_PARAM, "sim_syntax", f"ngspice refused the deck: {detail}",
                         ngspice=detail, **where)
    for i, text in enumerate(low):
        if any(marker in text for marker in NON_CONVERGENCE) and (
                "aborted" in output.lower() or "dc solution failed" in output.lower()):
            node = re.search(r'trouble with node "([^"]+)"', output)
            return _fail(INVALID_PARAM, "sim_no_convergence",
                         f"the simulation did not converge: {lines[i].strip()}",
                         ngspice=lines[i].strip(), **({"node": node.group(1)} if node else {}))
    return None


def missing_measure(name: str, line: LogicalLine, path: str, output: str) -> SkillError:
    failure = next((s.strip() for s in output.splitlines()
                    if re.search(rf"measure\s+{re.escape(name)}\b", s, re.IGNORECASE)), "")
    vector = re.search(r"no such vector as '([^']+)'", failure)
    if vector:
        return _fail(INVALID_PARAM, "sim_unknown_node",
                     f"{os.path.basename(path)}:{line.number}: .meas {name} names {vector.group(1)}, "
                     "which the circuit does not have", file=path, line=line.number,
                     measure=name, vector=vector.group(1), ngspice=failure)
    return _fail(INVALID_PARAM, "sim_measure_missing",
                 f"{os.path.basename(path)}:{line.number}: .meas {name} gave no value"
                 + (f" ({failure})" if failure else ""),
                 file=path, line=line.number, measure=name, ngspice=failure)


NO_SUCH_VECTOR = re.compile(r"no such vector as '?([^'\s]+?)'?\.?\s*$", re.IGNORECASE | re.MULTILINE)


def unknown_vector(output: str, wanted: dict[str, LogicalLine], path: str) -> SkillError | None:
    """A `.meas` naming a vector the circuit does not have: ngspice says "no such vector"
    and, for a `when` measure, still prints a value (0) — the first such `.meas` line."""
    for match in NO_SUCH_VECTOR.finditer(output):
        vector = match.group(1)
        node = re.sub(r"^\w+\((.*)\)$", r"\1", vector).lower()
        for name, line in wanted.items():
            if re.search(rf"\(\s*{re.escape(node)}\s*[),]", line.text.lower()):
                return _fail(INVALID_PARAM, "sim_unknown_node",
                             f"{os.path.basename(path)}:{line.number}: .meas {name} names {vector}, "
                             "which the circuit does not have", file=path, line=line.number,
                             measure=name, vector=vector, ngspice=match.group(0).strip())
    return None


SIM_SCHEMA = obj(
    {
        "dut_path": {**FILE_PATH, "description": "the DUT netlist: a .subckt named like the circuit"},
        "testbench_path": {**FILE_PATH, "description": "testbench.sp: the DUT instantiated, sources, analyses, .meas"},
        "deck_path": {**FILE_PATH, "description": "the deck to write (default: sim.cir next to the testbench)"},
        "circuit": {**NAME, "description": "the DUT subcircuit's name (checked to be defined)"},
        "tech": {"type": "string", "minLength": 1, "maxLength": 100,
                 "description": "the process (a rule set's tech); default: the loaded rule set's"},
        "corner": {"enum": list(CORNERS), "default": "tt"},
        "timeout_s": {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_TIMEOUT_S, "default": 60},
        "ac_sweep": obj({"node": {"type": "string", "minLength": 1, "maxLength": 200,
                                  "pattern": "^[A-Za-z0-9_.:$#<>\\[\\]-]+$"}}, ["node"]),
    },
    ["dut_path", "testbench_path"],
)


@skill("sim.run",
       "Simulate a DUT netlist with a testbench in ngspice (batch mode) on the process's "
       "device models; returns the testbench's .meas results as measures.",
       SIM_SCHEMA)
def sim_run(session: Session, args: dict[str, Any]) -> dict[str, Any]:
    started = time.monotonic()
    tech = args.get("tech") or session.need_tech().name
    dut_path, tb_path = args["dut_path"], args["testbench_path"]
    dut_lines = logical_lines(read_text(dut_path, "dut"))
    sizes = mos_sizes([line.text for line in dut_lines], convention(tech))
    models = find_models(tech, args.get("corner", "tt"), sizes)
    circuit = args.get("circuit")
    if circuit and not any(ln.text.split()[0].lower() == ".subckt" and len(ln.text.split()) > 1
                           and ln.text.split()[1].lower() == circuit.lower() for ln in dut_lines):
        raise _fail(INVALID_PARAM, "sim_dut_missing", f"{dut_path} defines no .subckt {circuit}",
                    file=dut_path, circuit=circuit)
    tb_lines = check_testbench(tb_path, read_text(tb_path, "testbench"), models.model_dirs)
    wanted = measure_names(tb_lines)
    deck_path = args.get("deck_path") or os.path.join(os.path.dirname(tb_path), "sim.cir")
    sweep_node = (args.get("ac_sweep") or {}).get("node")
    prints = (f".print ac vdb({sweep_node}) vp({sweep_node})",) if sweep_node else ()
    write_deck(deck_path, models, os.path.abspath(dut_path), os.path.abspath(tb_path), prints)
    log_path = deck_path + ".log"
    timeout_s = float(args.get("timeout_s", 60))
    binary = ngspice_binary()
    try:
        status = run_in_group([binary, "-b", os.path.basename(deck_path)], log_path,
                              os.path.dirname(os.path.abspath(deck_path)), timeout_s, NGSPICE_ENV)
    except OSError as exc:
        raise _fail(SERVICE_UNAVAILABLE, "ngspice_missing", f"cannot start {binary}: {exc}") from exc
    except DeadlinePassed:
        raise _fail(TIMEOUT, "sim_timeout", f"ngspice did not finish within {timeout_s:g} s (killed)",
                    timeout_s=timeout_s, log_path=log_path, log_tail=log_tail(log_path)) from None
    output = read_text(log_path, "log")
    failure = classify_failure(output, [(tb_path, tb_lines), (dut_path, dut_lines)])
    if failure is not None:
        failure.details = {**(failure.details or {}), "log_path": log_path}
        raise failure
    if status != 0:
        raise _fail(INTERNAL_ERROR, "sim_failed", f"ngspice exited with status {status}",
                    exit_status=status, log_path=log_path, log_tail=log_tail(log_path))
    unknown = unknown_vector(output, wanted, tb_path)
    if unknown is not None:
        raise unknown
    measures = parse_measures(output, set(wanted))
    for name, line in wanted.items():
        if name not in measures:
            raise missing_measure(name, line, tb_path, output)
    sweep = ac_sweep_of(output, sweep_node) if sweep_node else None
    return {"measures": {name: measures[name] for name in wanted}, **({"ac_sweep": sweep} if sweep else {}),
            "process": models.convention.process,
            "tech": tech, "corner": args.get("corner", "tt"), "models": models.source,
            "deck_path": deck_path, "log_path": log_path,
            "duration_ms": round((time.monotonic() - started) * 1000.0, 1)}


_NET = {"type": "string", "minLength": 1, "maxLength": 200, "pattern": "^[A-Za-z0-9_.:$#<>\\[\\]-]+$"}
_VOLTS = {"type": "number", "minimum": -100, "maximum": 100}
TESTBENCH_SCHEMA = obj(
    {
        "path": {**FILE_PATH, "description": "where to write testbench.sp"},
        "kind": {"enum": list(KINDS)},
        "circuit": NAME,
        "ports": {"type": "array", "minItems": 1, "maxItems": 1000, "items": _NET,
                  "description": "the DUT subcircuit's ports in order"},
        "supply": obj({"net": _NET, "volts": _VOLTS}, ["net", "volts"]),
        "ground": _NET,
        "inputs": obj({"plus": _NET, "minus": _NET, "common_mode_v": _VOLTS}, ["plus", "minus", "common_mode_v"]),
        "outputs": {"type": "array", "minItems": 1, "maxItems": 16, "items": _NET},
        "bias": {"type": "array", "maxItems": 64, "items": obj(
            {"net": _NET, "volts": _VOLTS, "amps": {"type": "number", "minimum": -1, "maximum": 1}}, ["net"])},
        "fixed": {"type": "array", "maxItems": 64, "items": obj({"net": _NET, "volts": _VOLTS}, ["net", "volts"])},
        "clock": obj({"net": _NET}, ["net"]),
        "load_f": {"type": "number", "minimum": 0, "maximum": 1e-6},
        "low_hz": {"type": "number", "exclusiveMinimum": 0}, "high_hz": {"type": "number", "exclusiveMinimum": 0},
        "points_per_decade": {"type": "integer", "minimum": 1, "maximum": 1000},
        "feedback_h": {"type": "number", "exclusiveMinimum": 0},
        "feedback_f": {"type": "number", "exclusiveMinimum": 0},
        "overdrive_v": {"type": "number", "exclusiveMinimum": 0, "maximum": 10},
        "t_step_s": {"type": "number", "exclusiveMinimum": 0}, "t_stop_s": {"type": "number", "exclusiveMinimum": 0},
        "edge_s": {"type": "number", "exclusiveMinimum": 0},
        "mirror": obj({"input": _NET, "outputs": {"type": "array", "minItems": 1, "maxItems": 64, "items": _NET},
                       "input_amps": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
                       "output_volts": _VOLTS, "type": {"enum": ["n", "p"]},
                       "ratios": {"type": "array", "items": {"type": "number", "exclusiveMinimum": 0}}},
                      ["input", "outputs", "input_amps", "output_volts"]),
    },
    ["path", "kind", "circuit", "ports", "supply"],
)


@skill("sim.testbench",
       "Write a built-in testbench (OTA open-loop AC, OTA offset, comparator delay, mirror "
       "ratio) for a DUT subcircuit from its ports' roles; returns the measures it defines.",
       TESTBENCH_SCHEMA)
def sim_testbench(session: Session, args: dict[str, Any]) -> dict[str, Any]:
    description = {k: v for k, v in args.items() if k != "path"}
    text = generate(description)
    with open(args["path"], "w", encoding="utf-8") as fh:
        fh.write(text)
    measures = sorted(measure_names(logical_lines(text)))
    return {"path": args["path"], "kind": args["kind"], "measures": measures, "lines": text.count("\n")}


SCHEMATIC_SCHEMA = obj(
    {
        "path": {**FILE_PATH, "description": "the SPICE file to write"},
        "circuit": NAME,
        "ports": {"type": "array", "minItems": 1, "maxItems": 1000, "items": NAME},
        "devices": {"type": "array", "minItems": 1, "maxItems": 5000, "items": {
            "type": "object", "required": ["id", "type", "terminals"],
            "properties": {"id": {"type": "string", "minLength": 1, "maxLength": 200},
                           "type": {"enum": ["nmos", "pmos", "resistor", "capacitor"]},
                           "terminals": {"type": "object", "additionalProperties": NAME}}},
            "description": "flattened circuit devices (as `centroid validate --json` prints them)"},
        "tech": {"type": "string", "minLength": 1, "maxLength": 100},
        "models": obj({"nmos": NAME, "pmos": NAME}),
        "junctions": {"enum": list(JUNCTIONS), "default": "estimated",
                      "description": "estimated: each MOSFET's AD/AS/PD/PS as a schematic tool "
                                     "estimates them from W, nf and the loaded rule set's contacted "
                                     "diffusion lengths (junction_estimate.py); none: the bare "
                                     "netlist, no junction capacitance"},
    },
    ["path", "circuit", "ports", "devices"],
)


@skill("sim.schematic",
       "Write the schematic DUT as a SPICE subcircuit for the process's models (the "
       "reference the extracted netlist is compared with), by default with the source/drain "
       "junctions a schematic tool estimates from the loaded rule set.",
       SCHEMATIC_SCHEMA)
def sim_schematic(session: Session, args: dict[str, Any]) -> dict[str, Any]:
    junctions = args.get("junctions", "estimated")
    lengths = DiffusionLengths.of(session.need_tech()) if junctions == "estimated" else None
    tech = args.get("tech") or session.need_tech().name
    text = schematic_subckt(args["circuit"], args["ports"], args["devices"], tech, args.get("models") or {},
                            lengths)
    with open(args["path"], "w", encoding="utf-8") as fh:
        fh.write(text)
    result: dict[str, Any] = {"path": args["path"], "circuit": args["circuit"],
                              "devices": len(args["devices"]), "junctions": junctions}
    if lengths is not None:
        result["diffusion_um"] = {"inner": lengths.inner_um, "end": lengths.end_um}
    return result
