"""sim.run / sim.testbench / sim.schematic with real ngspice and the sky130 models (make
ngspice models): a good testbench measures, the schematic and the extracted 5T OTA both
simulate; a broken testbench (syntax error, unknown node, missing .meas result,
non-convergence) is a clear error naming file and line; a deadline kills ngspice; the
dangerous parts of ngspice's language are refused; a process without models says so."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import REPO_ROOT, Client, load_rule_set
from rust_plans import draft, example_request, run_plan, step_of

PORTS = ["inp", "inn", "out", "vbias", "vdd", "vss"]
OTA_ROLES: dict[str, Any] = {
    "circuit": "ota5", "ports": PORTS, "supply": {"net": "vdd", "volts": 1.8}, "ground": "vss",
    # inn drives the output's side of the pair: the minus input
    "inputs": {"plus": "inp", "minus": "inn", "common_mode_v": 0.9}, "outputs": ["out"],
    "bias": [{"net": "vbias", "volts": 0.7}], "load_f": 1e-13,
}


@pytest.fixture
def sky(client: Client) -> Client:
    client.call("tech.load", rules=load_rule_set(REPO_ROOT / "examples" / "pdk" / "sky130.json"))
    return client


@pytest.fixture(scope="module")
def ota_layout(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The Rust planner's default ota5 candidate on SKY130, its extracted netlist and its
    schematic, in one scratch directory."""
    from centroid_skills.server import Server

    scratch = tmp_path_factory.mktemp("ota5")
    steps = draft(example_request("ota5", "sky130")).candidates[0].steps
    server = Server()
    result = run_plan(steps, scratch, server=server)
    assert result["ok"] and result["lvs_match"] and result["drc_total"] == 0, result.get("failed")
    client = Client()
    client.server = server
    devices = step_of(steps, "lvs.run")["arguments"]["devices"]
    extracted = client.call("extract.netlist", cell=result["cell"], path=str(scratch / "ext.spice"),
                            circuit="ota5", ports=PORTS, sensitive_nets=["out", "n1", "tail"],
                            symmetric_pairs=[["inp", "inn"]])
    client.call("sim.schematic", path=str(scratch / "sch.spice"), circuit="ota5", ports=PORTS,
                devices=devices)
    return {"scratch": scratch, "client": client, "extracted": extracted}


def write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


def simulate(client: Client, dut: str, testbench: str, **extra: Any) -> dict[str, Any]:
    return client.raw("sim.run", {"dut_path": dut, "testbench_path": testbench, **extra})


def test_the_ota_measures_before_and_after_layout(ota_layout: dict[str, Any]) -> None:
    client, scratch = ota_layout["client"], ota_layout["scratch"]
    client.call("sim.testbench", path=str(scratch / "tb.sp"), kind="ota_ac", **OTA_ROLES)
    measures = {}
    for dut in ("sch", "ext"):
        out = simulate(client, str(scratch / f"{dut}.spice"), str(scratch / "tb.sp"), circuit="ota5",
                       deck_path=str(scratch / f"{dut}.cir"))
        assert out["ok"], out["error"]
        measures[dut] = out["data"]["measures"]
    sch, ext = measures["sch"], measures["ext"]
    assert 30 < sch["gain_db"] < 50 and 1e7 < sch["ugbw_hz"] < 1e9 and 45 < sch["phase_margin_deg"] < 100
    # the layout adds capacitance: the same gain, a lower unity-gain frequency
    assert abs(ext["gain_db"] - sch["gain_db"]) < 0.05 * sch["gain_db"]
    assert ext["ugbw_hz"] < sch["ugbw_hz"]
    nets = ota_layout["extracted"]["nets"]
    assert nets["out"]["cap_fF"] > 0 and nets["out"]["coupling_fF"]
    assert ota_layout["extracted"]["symmetric_pairs"][0]["nets"] == ["inp", "inn"]
    text = (scratch / "ext.spice").read_text()
    assert text.count("sky130_fd_pr__nfet_01v8") == 3 and text.count("sky130_fd_pr__pfet_01v8") == 2
    assert " as=" in text and " pd=" in text and " nf=2 " in text


def test_the_estimated_junctions_slow_the_schematic_and_the_bare_one_is_faster(
        ota_layout: dict[str, Any]) -> None:
    """sim.schematic's default carries estimated junctions (the designer's reference); the
    bare netlist has none: its UGBW is higher, the DC gain the same."""
    client, scratch = ota_layout["client"], ota_layout["scratch"]
    client.call("sim.testbench", path=str(scratch / "tb_j.sp"), kind="ota_ac", **OTA_ROLES)
    steps = draft(example_request("ota5", "sky130")).candidates[0].steps
    devices = step_of(steps, "lvs.run")["arguments"]["devices"]
    client.call("sim.schematic", path=str(scratch / "bare.spice"), circuit="ota5", ports=PORTS,
                devices=devices, junctions="none")
    measures = {}
    for dut in ("sch", "bare"):
        out = simulate(client, str(scratch / f"{dut}.spice"), str(scratch / "tb_j.sp"), circuit="ota5",
                       deck_path=str(scratch / f"j_{dut}.cir"))
        assert out["ok"], out["error"]
        measures[dut] = out["data"]["measures"]
    assert " ad=" in (scratch / "sch.spice").read_text()
    assert " ad=" not in (scratch / "bare.spice").read_text()
    assert measures["sch"]["ugbw_hz"] < measures["bare"]["ugbw_hz"], measures
    assert abs(measures["sch"]["gain_db"] - measures["bare"]["gain_db"]) < 0.01 * measures["bare"]["gain_db"]


def test_the_ac_sweep_of_a_node_is_returned_for_a_bode_plot(ota_layout: dict[str, Any]) -> None:
    client, scratch = ota_layout["client"], ota_layout["scratch"]
    client.call("sim.testbench", path=str(scratch / "tb.sp"), kind="ota_ac", **OTA_ROLES)
    out = simulate(client, str(scratch / "sch.spice"), str(scratch / "tb.sp"), circuit="ota5",
                   deck_path=str(scratch / "sweep.cir"), ac_sweep={"node": "out"})
    assert out["ok"], out["error"]
    data = out["data"]
    sweep, measures = data["ac_sweep"], data["measures"]
    # the testbench's 20 points a decade from 1 Hz to 10 GHz, every page of ngspice's table
    assert sweep["node"] == "out" and len(sweep["frequency_hz"]) == 201
    assert sweep["frequency_hz"][0] == 1.0 and abs(sweep["frequency_hz"][-1] - 1e10) < 1
    assert abs(sweep["gain_db"][0] - measures["gain_db"]) < 1e-3
    # unwrapped: the phase only falls, with no 360° jump; at the UGBW it is PM - 180°
    assert all(b <= a + 1.0 for a, b in zip(sweep["phase_deg"], sweep["phase_deg"][1:], strict=False))
    at_ugbw = min(range(201), key=lambda i: abs(sweep["frequency_hz"][i] - measures["ugbw_hz"]))
    assert abs(sweep["phase_deg"][at_ugbw] - (measures["phase_margin_deg"] - 180)) < 5


@pytest.mark.parametrize("kind,extra,measure", [
    ("ota_offset", {}, "offset_v"),
    ("comparator_delay", {"overdrive_v": 0.1, "t_stop_s": 1e-7}, "delay_s"),
])
def test_the_other_built_in_ota_testbenches_measure(ota_layout: dict[str, Any], kind: str,
                                                    extra: dict[str, Any], measure: str) -> None:
    client, scratch = ota_layout["client"], ota_layout["scratch"]
    written = client.call("sim.testbench", path=str(scratch / f"{kind}.sp"), kind=kind, **OTA_ROLES, **extra)
    assert written["measures"] == [measure]
    out = simulate(client, str(scratch / "sch.spice"), str(scratch / f"{kind}.sp"))
    assert out["ok"], out["error"]
    value = out["data"]["measures"][measure]
    assert (abs(value) < 0.05) if kind == "ota_offset" else (0 < value < 1e-7)


def test_a_mirror_ratio_error(sky: Client, tmp_path: Path) -> None:
    dut = write(tmp_path / "m.spice", ".subckt mirror iin o1 o2 vss\n"
                "XA iin iin vss vss sky130_fd_pr__nfet_01v8 w=2 l=1 nf=1\n"
                "XB o1 iin vss vss sky130_fd_pr__nfet_01v8 w=2 l=1 nf=1\n"
                "XC o2 iin vss vss sky130_fd_pr__nfet_01v8 w=4 l=1 nf=2\n.ends mirror\n")
    sky.call("sim.testbench", path=str(tmp_path / "tb.sp"), kind="mirror_ratio", circuit="mirror",
             ports=["iin", "o1", "o2", "vss"], supply={"net": "tb_vdd", "volts": 1.8}, ground="vss",
             mirror={"input": "iin", "outputs": ["o1", "o2"], "input_amps": 1e-5, "output_volts": 0.9,
                     "ratios": [1, 2]})
    out = simulate(sky, dut, str(tmp_path / "tb.sp"))
    assert out["ok"], out["error"]
    errors = out["data"]["measures"]
    assert set(errors) == {"ratio_error_0", "ratio_error_1"}
    assert all(abs(v) < 0.05 for v in errors.values()), errors


def test_a_port_without_a_role_is_refused(sky: Client, tmp_path: Path) -> None:
    roles = dict(OTA_ROLES, bias=[])
    out = sky.raw("sim.testbench", {"path": str(tmp_path / "tb.sp"), "kind": "ota_ac", **roles})
    assert out["error"]["details"]["reason"] == "testbench_port_unassigned"
    assert out["error"]["details"]["ports"] == ["vbias"]


OTA_SOURCES = """* a hand-written testbench
Vdd vdd 0 1.8
Vss vss 0 0
Vb vbias 0 0.7
Vcm cm 0 0.9
Vin inp cm dc 0 ac 0.5
Ein inn cm inp cm -1
X1 inp inn out vbias vdd vss ota5
"""


@pytest.mark.parametrize("body,reason,line", [
    ("Vx vq 0 abc\n.ac dec 10 1 1e9\n.meas ac g max vm(out)\n", "sim_syntax", 9),
    ("X2 inp inn out ota5\n.ac dec 10 1 1e9\n.meas ac g max vm(out)\n", "sim_syntax", 9),
    (".ac dec 10 1 1e9\n.meas ac g max vm(nowhere)\n", "sim_unknown_node", 10),
    (".ac dec 10 1 1e9\n.meas ac ugbw when vdb(nowhere)=0\n", "sim_unknown_node", 10),
    (".ac dec 10 1 1e9\n.meas ac ugbw when vdb(out)=200\n", "sim_measure_missing", 10),
])
def test_a_broken_testbench_names_file_and_line(ota_layout: dict[str, Any], tmp_path: Path,
                                                body: str, reason: str, line: int) -> None:
    client = ota_layout["client"]  # confined to the candidate's scratch directory
    tb = write(ota_layout["scratch"] / f"broken_{reason}_{line}.sp", OTA_SOURCES + body)
    out = simulate(client, str(ota_layout["scratch"] / "sch.spice"), tb)
    assert not out["ok"]
    details = out["error"]["details"]
    assert (out["error"]["code"], details["reason"]) == ("INVALID_PARAM", reason), out["error"]
    assert details["file"] == tb and details["line"] == line, details


def test_no_convergence_is_a_clear_error(sky: Client, tmp_path: Path) -> None:
    dut = write(tmp_path / "d.spice", ".subckt d a\nR1 a 0 1k\n.ends d\n")
    # no real solution: the current 1 + v² leaves node a whatever its voltage
    tb = write(tmp_path / "tb.sp", "* nc\nX1 a d\nB1 a 0 I=1+v(a)*v(a)\n.op\n")
    out = simulate(sky, dut, tb)
    assert not out["ok"] and out["error"]["details"]["reason"] == "sim_no_convergence", out["error"]
    assert out["error"]["details"].get("node") == "a"


def test_the_deadline_kills_ngspice(sky: Client, tmp_path: Path) -> None:
    dut = write(tmp_path / "d.spice", ".subckt d a\nR1 a 0 1k\nC1 a 0 1p\n.ends d\n")
    tb = write(tmp_path / "tb.sp", "* long\nX1 a d\nV1 a0 0 sin(0 1 1e9)\nR2 a0 a 1\n"
               ".tran 1f 1m\n.meas tran v find v(a) at=1m\n")
    started = time.monotonic()
    out = simulate(sky, dut, tb, timeout_s=1.5)
    assert time.monotonic() - started < 10
    assert out["error"]["code"] == "TIMEOUT" and out["error"]["details"]["reason"] == "sim_timeout"
    assert not any("ngspice" in p.name() for p in _children()), "ngspice outlived its deadline"


def _children() -> list[Any]:
    class Proc:
        def __init__(self, pid: str) -> None:
            self.pid = pid

        def name(self) -> str:
            try:
                return Path(f"/proc/{self.pid}/comm").read_text().strip()
            except OSError:
                return ""

    me = str(os.getpid())
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().split()
            except OSError:
                continue
            if stat[3] == me:
                out.append(Proc(entry.name))
    return out


@pytest.mark.parametrize("line,what", [
    (".control\nshell touch /tmp/centroid_pwned\n.endc\n", ".control"),
    ("shell touch /tmp/centroid_pwned\n", "shell"),
    (".exec echo hi\n", ".exec"),
    (".include /etc/passwd\n", "outside"),
    (".lib ../../secret.lib tt\n", "outside"),
    ("A1 a b filesrc\n", "XSPICE"),
])
def test_dangerous_testbench_lines_are_refused(sky: Client, tmp_path: Path, line: str, what: str) -> None:
    dut = write(tmp_path / "d.spice", ".subckt d a\nR1 a 0 1k\n.ends d\n")
    tb = write(tmp_path / "tb.sp", "* tb\nX1 a d\nV1 a 0 1\n" + line + ".op\n")
    out = simulate(sky, dut, tb)
    assert not out["ok"] and out["error"]["details"]["reason"] == "testbench_refused", out["error"]
    assert what in out["error"]["message"] and out["error"]["details"]["line"] == 4
    assert not Path("/tmp/centroid_pwned").exists()
    assert not (tmp_path / "sim.cir").exists(), "nothing ran"


def test_a_process_without_models_is_not_simulated(client: Client, tmp_path: Path) -> None:
    dut = write(tmp_path / "d.spice", ".subckt d a\nR1 a 0 1k\n.ends d\n")
    tb = write(tmp_path / "tb.sp", "* tb\nX1 a d\nV1 a 0 1\n.op\n")
    env = {k: os.environ.pop(k) for k in ("CENTROID_PDK_ROOT",) if k in os.environ}
    try:
        for tech, why in (("gf180mcu_3v3", "no PyPI package"), ("ihp_sg13g2", ""), ("frobnitz", "knows models")):
            out = simulate(client, dut, tb, tech=tech)
            assert out["error"]["code"] == "NOT_FOUND", out
            details = out["error"]["details"]
            assert details["reason"] == "sim_no_models" and details["install"], details
            assert why in out["error"]["message"]
    finally:
        os.environ.update(env)


def test_the_deck_loads_only_the_models_in_the_scratch_directory(ota_layout: dict[str, Any]) -> None:
    scratch = ota_layout["scratch"]
    deck = (scratch / "sch.cir").read_text() if (scratch / "sch.cir").exists() else ""
    assert ".option wnflag=1" in deck and "models_sky130_fets.spice" in deck
    assert json.dumps(deck).count(".include") >= 6


def test_only_the_bins_the_dut_uses_are_read(ota_layout: dict[str, Any], tmp_path: Path) -> None:
    from centroid_skills.models import binned, convention, find_models, mos_sizes

    client, scratch = ota_layout["client"], ota_layout["scratch"]
    client.call("sim.testbench", path=str(scratch / "bins.sp"), kind="ota_offset", **OTA_ROLES)
    assert simulate(client, str(scratch / "ext.spice"), str(scratch / "bins.sp"))["ok"]
    deck_models = (scratch / "models_sky130_fets.spice").read_text()
    every_bin = find_models("sky130").extra_files["models_sky130_fets.spice"]
    assert 2 <= deck_models.count(".model ") < every_bin.count(".model ") // 4
    conv = convention("sky130")
    sizes = mos_sizes(["XM1 d g s b sky130_fd_pr__nfet_01v8 w=4 l=0.5 nf=2"], conv)
    assert sizes == {"sky130_fd_pr__nfet_01v8": {(0.5e-6, 2e-6)}}
    assert mos_sizes(["XM1 d g s b sky130_fd_pr__nfet_01v8 w={wn} l=0.5"], conv) is None
    one = binned(every_bin, {(0.5e-6, 2e-6)})
    assert 1 <= one.count(".model ") < 10 and one.count(".subckt") == 2


def test_aligns_five_transistor_ota_before_and_after_layout(tmp_path: Path) -> None:
    """ALIGN's SKY130 five-transistor OTA (the shared folder's benchmark netlist): a layout of
    the Rust planner's, extracted and simulated against its schematic."""
    import subprocess

    from helpers import shared_file
    from rust_plans import PlanRequest, centroid_binary, example_objectives, rule_set

    from centroid_skills.server import Server

    spice = shared_file("benches/align_sky130/five_transistor_ota/netlist.sp")
    netlist = json.loads(subprocess.run([str(centroid_binary()), "convert", str(spice)], check=True,
                                        capture_output=True, text=True).stdout)
    # the first LVS- and DRC-clean candidate (every one of the 8 is since the dummies drop
    # their own source bus onto the rail: test_routing_defects.py)
    request = PlanRequest.of(netlist, rule_set("sky130"), example_objectives("ota5"), candidates=8)
    for k, candidate in enumerate(draft(request).candidates):
        server = Server()
        steps = candidate.steps
        result = run_plan(steps, tmp_path / str(k), server=server)
        if result["ok"] and result["lvs_match"] and result["drc_total"] == 0:
            break
    else:
        pytest.fail("no clean candidate among 8")
    tmp_path = tmp_path / str(k)
    client = Client()
    client.server = server
    ports = ["vbias", "vss", "vdd", "von", "vin", "vip"]
    client.call("extract.netlist", cell=result["cell"], path=str(tmp_path / "ext.spice"),
                circuit="five_transistor_ota", ports=ports, sensitive_nets=["von", "vop", "tail"],
                symmetric_pairs=[["vin", "vip"], ["von", "vop"]])
    client.call("sim.schematic", path=str(tmp_path / "sch.spice"), circuit="five_transistor_ota",
                ports=ports, devices=step_of(steps, "lvs.run")["arguments"]["devices"])
    # von is the output of vin's side (vop is the mirror's diode): vin is the minus input
    client.call("sim.testbench", path=str(tmp_path / "tb.sp"), kind="ota_ac", circuit="five_transistor_ota",
                ports=ports, supply={"net": "vdd", "volts": 1.8}, ground="vss", outputs=["von"],
                inputs={"plus": "vip", "minus": "vin", "common_mode_v": 0.9},
                bias=[{"net": "vbias", "volts": 0.6}], load_f=1e-13)
    measured = {}
    for dut in ("sch", "ext"):
        out = simulate(client, str(tmp_path / f"{dut}.spice"), str(tmp_path / "tb.sp"))
        assert out["ok"], out["error"]
        measured[dut] = out["data"]["measures"]
    sch, ext = measured["sch"], measured["ext"]
    print("ALIGN 5T OTA schematic", sch, "post-layout", ext)
    assert sch["gain_db"] > 10 and sch["ugbw_hz"] > 1e7
    assert abs(ext["gain_db"] - sch["gain_db"]) < 0.05 * sch["gain_db"]
    assert ext["ugbw_hz"] < sch["ugbw_hz"]
