"""Built-in testbenches, generated from port roles (a pure function: JSON in, SPICE out).

A description names the DUT subcircuit (``circuit``), its ports in order (``ports``) and
the role of every port; a port without a role is refused (a floating input is not a
testbench). The supply may be a net of the testbench only (a mirror's reference current
comes from it). Roles: ``supply`` {net, volts}, ``ground`` (net, 0 V), ``inputs`` {plus,
minus, common_mode_v}, ``outputs`` [net, …] (the first is measured), ``bias`` [{net,
volts} or {net, amps}: a voltage, or a current drawn out of the net to ground when
``amps`` > 0 and pushed into it from the supply when < 0], ``clock`` {net} (comparators),
``load_f`` (capacitance on every output), ``fixed`` [{net, volts}] (other pins held).

Kinds and their measures:

* ``ota_ac`` -- open-loop AC with a DC feedback path: the output drives the minus input
  through ``feedback_h`` (1 GH) and the minus input sits on AC ground through
  ``feedback_f`` (1 GF): at DC a unity-gain follower at ``common_mode_v`` (the operating
  point), above a few µHz open loop. Measures ``gain_db`` (at ``low_hz``), ``ugbw_hz``,
  ``phase_margin_deg`` (180° + phase at the unity-gain frequency).
* ``ota_offset`` -- unity-gain follower at DC: ``offset_v`` = V(out) − V(plus), the plus
  input at ``common_mode_v``.
* ``comparator_delay`` -- inputs at common mode ± ``overdrive_v``/2; with a ``clock``
  the clock rises at ``t_step_s`` (inputs steady), without one the inputs swap sign at
  ``t_step_s``; ``delay_s`` from that edge (at half supply) to the first output crossing of
  half supply.
* ``mirror_ratio`` -- ``mirror`` {input, outputs: [net, …], input_amps, output_volts,
  ratios: [expected output/input per output]}: the input current into the diode side,
  each output held at ``output_volts``; ``ratio_error_<k>`` = |I_out|/I_in/ratio − 1.
"""

from __future__ import annotations

from typing import Any

from centroid_skills.errors import INVALID_PARAM, SkillError
from centroid_skills.models import spice_number as num

KINDS = ("ota_ac", "ota_offset", "comparator_delay", "mirror_ratio")
UNASSIGNED_REASON = "testbench_port_unassigned"


def _bad(message: str, reason: str = "testbench_description", **details: Any) -> SkillError:
    return SkillError(INVALID_PARAM, message, {"reason": reason, **details})


def _role_nets(d: dict[str, Any]) -> dict[str, str]:
    """net -> role of every port the description assigns."""
    roles: dict[str, str] = {}

    def put(net: str | None, role: str) -> None:
        if net:
            roles[net] = role

    put(d.get("supply", {}).get("net"), "supply")
    put(d.get("ground"), "ground")
    inputs = d.get("inputs") or {}
    put(inputs.get("plus"), "input+")
    put(inputs.get("minus"), "input-")
    for net in d.get("outputs") or []:
        put(net, "output")
    for b in d.get("bias") or []:
        put(b.get("net"), "bias")
    put((d.get("clock") or {}).get("net"), "clock")
    for f in d.get("fixed") or []:
        put(f.get("net"), "fixed")
    mirror = d.get("mirror") or {}
    put(mirror.get("input"), "mirror_input")
    for net in mirror.get("outputs") or []:
        put(net, "mirror_output")
    return roles


def _common(d: dict[str, Any], kind: str) -> tuple[list[str], float]:
    """The lines every kind shares: supplies, biases, fixed pins, the DUT instance."""
    ports = d["ports"]
    roles = _role_nets(d)
    unassigned = [p for p in ports if p not in roles]
    if unassigned:
        raise _bad(f"ports {unassigned} of {d['circuit']} have no role", UNASSIGNED_REASON,
                   ports=unassigned)
    unknown = sorted(set(roles) - set(ports) - {d["supply"]["net"]})
    if unknown:
        raise _bad(f"roles name {unknown}, which are not ports of {d['circuit']}", ports=unknown)
    vdd = float(d["supply"]["volts"])
    out = [f"* Centroid built-in testbench: {kind} of {d['circuit']}",
           f"Vsupply {d['supply']['net']} 0 {num(vdd)}"]
    if d.get("ground") and d["ground"] != "0":
        out.append(f"Vground {d['ground']} 0 0")
    for i, b in enumerate(d.get("bias") or []):
        if "volts" in b:
            out.append(f"Vbias{i} {b['net']} 0 {num(float(b['volts']))}")
        elif float(b.get("amps", 0)) >= 0:
            out.append(f"Ibias{i} {b['net']} 0 {num(float(b['amps']))}")
        else:
            out.append(f"Ibias{i} {d['supply']['net']} {b['net']} {num(-float(b['amps']))}")
    for i, f in enumerate(d.get("fixed") or []):
        out.append(f"Vfixed{i} {f['net']} 0 {num(float(f['volts']))}")
    out.append(f"Xdut {' '.join(ports)} {d['circuit']}")
    for i, net in enumerate(d.get("outputs") or []):
        if d.get("load_f"):
            out.append(f"Cload{i} {net} 0 {num(float(d['load_f']))}")
    return out, vdd


def _need(d: dict[str, Any], *keys: str) -> None:
    for key in keys:
        if not d.get(key):
            raise _bad(f"a {d['kind']} testbench needs {key!r}", missing=key)


def ota_ac(d: dict[str, Any]) -> str:
    _need(d, "inputs", "outputs")
    lines, _ = _common(d, "ota_ac")
    inp, out = d["inputs"], d["outputs"][0]
    vcm = float(inp["common_mode_v"])
    low = float(d.get("low_hz", 1.0))
    lines += [f"Vcm tb_cm 0 {num(vcm)}",
              f"Vin {inp['plus']} tb_cm dc 0 ac 1",
              f"Lfeedback {out} {inp['minus']} {num(float(d.get('feedback_h', 1e9)))}",
              f"Cfeedback {inp['minus']} tb_cm {num(float(d.get('feedback_f', 1e9)))}",
              f".ac dec {int(d.get('points_per_decade', 20))} {num(low)} {num(float(d.get('high_hz', 1e10)))}",
              f".meas ac gain_db find vdb({out}) at={num(low)}",
              f".meas ac ugbw_hz when vdb({out})=0",
              f".meas ac phase_ugbw_rad find vp({out}) when vdb({out})=0",
              ".meas ac phase_margin_deg param='180+phase_ugbw_rad*57.29577951308232'",
              ".end"]
    return "\n".join(lines) + "\n"


def ota_offset(d: dict[str, Any]) -> str:
    _need(d, "inputs", "outputs")
    lines, _ = _common(d, "ota_offset")
    inp, out = d["inputs"], d["outputs"][0]
    vcm = float(inp["common_mode_v"])
    lines += [f"Vcm {inp['plus']} 0 {num(vcm)}",
              f"Rfeedback {out} {inp['minus']} 1",
              f"Eoffset tb_offset 0 {out} {inp['plus']} 1",
              f".dc Vcm {num(vcm - 1e-3)} {num(vcm + 1e-3)} {num(1e-3)}",
              f".meas dc offset_v find v(tb_offset) at={num(vcm)}",
              ".end"]
    return "\n".join(lines) + "\n"


def comparator_delay(d: dict[str, Any]) -> str:
    _need(d, "inputs", "outputs")
    lines, vdd = _common(d, "comparator_delay")
    inp, out = d["inputs"], d["outputs"][0]
    vcm, od = float(inp["common_mode_v"]), float(d.get("overdrive_v", 0.01))
    t0, stop = float(d.get("t_step_s", 1e-9)), float(d.get("t_stop_s", 20e-9))
    edge = float(d.get("edge_s", 50e-12))
    half = num(vdd / 2)
    clock = (d.get("clock") or {}).get("net")
    if clock:
        lines += [f"Vplus {inp['plus']} 0 {num(vcm + od / 2)}",
                  f"Vminus {inp['minus']} 0 {num(vcm - od / 2)}",
                  f"Vclock {clock} 0 pulse(0 {num(vdd)} {num(t0)} {num(edge)} {num(edge)} {num(stop)} {num(2 * stop)})"]
        trig = f"v({clock}) val={half} rise=1"
    else:
        lines += [f"Vplus {inp['plus']} 0 pwl(0 {num(vcm - od / 2)} {num(t0)} {num(vcm - od / 2)} "
                  f"{num(t0 + edge)} {num(vcm + od / 2)})",
                  f"Vminus {inp['minus']} 0 {num(vcm)}",
                  f"Vstep tb_step 0 pwl(0 0 {num(t0)} 0 {num(t0 + edge)} {num(vdd)})"]
        trig = f"v(tb_step) val={half} rise=1"
    lines += [f".tran {num(stop / 2000)} {num(stop)}",
              f".meas tran delay_s trig {trig} targ v({out}) val={half} cross=1",
              ".end"]
    return "\n".join(lines) + "\n"


def mirror_ratio(d: dict[str, Any]) -> str:
    _need(d, "mirror")
    lines, _ = _common(d, "mirror_ratio")
    m = d["mirror"]
    iin, vout = float(m["input_amps"]), float(m["output_volts"])
    outputs, ratios = m["outputs"], m.get("ratios") or [1.0] * len(m["outputs"])
    if len(ratios) != len(outputs):
        raise _bad("mirror.ratios needs one expected ratio per output")
    supply = d["supply"]["net"]
    # n-type mirror (default): the reference current flows from the supply into the diode
    lines.append(f"Iin {supply} {m['input']} {num(iin)}" if m.get("type", "n") == "n"
                 else f"Iin {m['input']} 0 {num(iin)}")
    for k, net in enumerate(outputs):
        lines.append(f"Vout{k} {net} 0 {num(vout)}")
    lines.append(f".dc Iin {num(0.99 * iin)} {num(1.01 * iin)} {num(0.01 * iin)}")
    for k, ratio in enumerate(ratios):
        lines += [f"Bratio{k} tb_ratio{k} 0 V=abs(i(Vout{k}))/{num(iin)}/{num(float(ratio))}-1",
                  f".meas dc ratio_error_{k} find v(tb_ratio{k}) at={num(iin)}"]
    lines.append(".end")
    return "\n".join(lines) + "\n"


GENERATORS = {"ota_ac": ota_ac, "ota_offset": ota_offset,
              "comparator_delay": comparator_delay, "mirror_ratio": mirror_ratio}


def generate(description: dict[str, Any]) -> str:
    """The testbench text of a description (INVALID_PARAM on a bad one)."""
    kind = description.get("kind")
    if kind not in GENERATORS:
        raise _bad(f"unknown testbench kind {kind!r}; kinds: {', '.join(KINDS)}")
    for key in ("circuit", "ports", "supply"):
        if not description.get(key):
            raise _bad(f"a testbench description needs {key!r}", missing=key)
    return GENERATORS[kind](description)
