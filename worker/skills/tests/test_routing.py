"""route.info / route.nets: dimensions from the rules, labels on conductors, uniform escapes
in matched modules, metal-1 tracks when the rule set has no metal3, bad input, seeded random
circuits.  Whole candidates are the Rust planner's (``rust_plans``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import klayout.db as kdb
import pytest
from helpers import REPO_ROOT, Client, load_rule_set
from rust_plans import (
    Candidate,
    PlanRequest,
    draft,
    example_request,
    netlist_of_circuit,
    rule_set,
    run_plan,
    sized_for,
)

from centroid_skills.server import Server

CIRCUITS = Path(__file__).resolve().parent / "fixtures" / "circuits"


def circuit(name: str) -> dict[str, Any]:
    return json.loads((CIRCUITS / f"{name}.json").read_text())


def test_route_info(loaded: Client) -> None:
    tech = loaded.server.session.tech
    assert tech is not None
    info = loaded.call("route.info")
    assert info["pitch_um"] > 0 and info["track_pitch_um"] > 0 and info["clearance_um"] > 0
    want = "metal3" if tech.has("metal3") and tech.has("via2") else "metal1"
    assert info["track_layer"] == want


def test_route_info_scaled(client: Client, scaled_rules: dict[str, Any]) -> None:
    client.call("tech.load", rules=scaled_rules)
    assert client.call("route.info")["pitch_um"] > 0


def default_candidate(example: str, rules_name: str, tmp_path: Path,
                      server: Server | None = None) -> dict[str, Any]:
    """Run the Rust planner's default candidate of an example on a rule set."""
    steps = draft(example_request(example, rules_name)).candidates[0].steps
    return run_plan(steps, tmp_path, server=server)


def plans_of(example: str | None = None, rules_name: str | None = None) -> Any:
    """The rust_plans marker's requests: the example/rule set named here or in the params."""
    def requests(params: dict[str, Any]) -> list[PlanRequest]:
        return [example_request(example or params["example"], rules_name or params["pdk"])]

    return requests


@pytest.mark.rust_plans(requests=plans_of("miller_ota"))
@pytest.mark.parametrize("pdk", ["ihp_sg13g2", "sky130"])
def test_every_net_labelled_on_its_conductor(pdk: str, tmp_path: Path) -> None:
    server = Server()
    r = default_candidate("miller_ota", pdk, tmp_path, server)
    assert r["ok"] and r["drc_total"] == 0 and r["lvs_match"], r.get("failed")
    session = server.session
    tech = session.tech
    assert tech is not None
    top = session.layout.cell(r["cell"])
    nets = r["results"]["route.nets"]["nets"]
    names = {n["name"] for n in circuit("miller_ota")["nets"]}
    assert set(nets) == names
    for net, info in nets.items():
        label = info["label"]
        assert label is not None, net
        layer = tech.layers[label["layer"]]
        role = layer.role
        assert role is not None
        metal_role = role[: -len("_label")] if role.endswith("_label") else role
        if role.endswith("_label"):
            assert tech.has(role)
        li = session.layout.find_layer(layer.layer, layer.datatype)
        texts = [s.text for s in top.shapes(li).each() if s.is_text() and s.text.string == net]
        assert len(texts) == 1, net
        metal = tech.region(session.layout, top, tech.require(metal_role).name)
        pt = texts[0].trans.disp
        probe = kdb.Region(kdb.Box(pt.x - 1, pt.y - 1, pt.x + 1, pt.y + 1))
        assert not (probe & metal).is_empty(), f"label {net} is not on a {metal_role} shape"


@pytest.mark.rust_plans(requests=plans_of(rules_name="sky130"))
@pytest.mark.parametrize("example", ["ota5", "strongarm_comparator", "mirror_bank"])
def test_matched_modules_have_uniform_escapes(example: str, tmp_path: Path) -> None:
    r = default_candidate(example, "sky130", tmp_path)
    assert r["ok"], r.get("failed")
    modules = r["results"]["route.nets"]["modules"]
    assert modules
    for name, m in modules.items():
        assert m["uniform_escapes"], (name, m)


@pytest.mark.rust_plans(requests=plans_of(rules_name="toy180"))
@pytest.mark.parametrize("example", ["ota5", "miller_ota", "folded_cascode"])
def test_metal1_tracks_without_metal3(example: str, tmp_path: Path) -> None:
    """The toy rule set stops at metal2: tracks fall back to metal1, still clean."""
    r = default_candidate(example, "toy180", tmp_path)
    assert r["ok"], r.get("failed")
    assert r["results"]["route.nets"]["track_layer"] == "metal1"
    assert r["drc_total"] == 0, r["results"]["drc.run"]["violations"][:3]
    assert r["lvs_match"]


def _ota_rows(client: Client) -> dict[str, str]:
    client.call("tech.load", rules=load_rule_set(REPO_ROOT / "examples" / "pdk" / "ihp_sg13g2.json"))
    cells = {}
    for dev in circuit("ota5")["devices"]:
        p = dev["params"]
        d = client.call("layout.create_device", device_id=dev["id"], type=dev["type"], w=p["w"],
                        l=p["l"], nf=p["nf"], cell_name=dev["id"])
        cells[dev["id"]] = d["cell_name"]
    return cells


def _devices() -> list[dict[str, Any]]:
    return [{"id": d["id"], "type": d["type"], "terminals": d["terminals"]}
            for d in circuit("ota5")["devices"]]


def test_bad_input(client: Client) -> None:
    cells = _ota_rows(client)
    client.call("layout.place", cell_name="mixed", rows=[{"cells": [cells["M1"], cells["M3"]], "gap": 1}])
    r = client.raw("route.nets", {"cell_name": "t1", "rows": ["mixed"], "devices": _devices()})
    assert not r["ok"] and r["error"]["code"] == "INVALID_PARAM" and "mixes" in r["error"]["message"]
    client.call("layout.place", cell_name="n", rows=[{"cells": [cells["M1"], cells["M2"], cells["M5"]], "gap": 1}])
    r = client.raw("route.nets", {"cell_name": "t2", "rows": ["n"], "devices": _devices()})
    assert not r["ok"] and r["error"]["code"] == "INVALID_PARAM"
    assert r["error"]["details"]["devices"] == ["M3", "M4"]
    r = client.raw("route.nets", {"cell_name": "t3", "rows": ["nope"], "devices": _devices()})
    assert not r["ok"] and r["error"]["code"] == "NOT_FOUND"
    r = client.raw("route.nets", {"cell_name": "t4", "rows": ["n"], "devices": _devices()[:2]})
    assert not r["ok"] and r["error"]["code"] == "INVALID_PARAM" and r["error"]["details"]["device"] == "M5"
    ring = client.call("layout.add_guard_ring", cell="n")
    r = client.raw("route.nets", {"cell_name": "t5", "rows": [ring["cell_name"]], "devices": _devices()})
    assert not r["ok"] and r["error"]["code"] == "INVALID_PARAM"
    r = client.raw("route.nets", {"cell_name": "t6", "rows": ["n"], "devices": [{"id": "M1"}]})
    assert not r["ok"] and r["error"]["code"] == "INVALID_PARAM"


def test_single_devices_without_modules_route_clean(client: Client) -> None:
    """Plain device cells (no modules), one row per type, placed with the routing pitch."""
    cells = _ota_rows(client)
    pitch = client.call("route.info")["pitch_um"]
    client.call("layout.place", cell_name="rn", rows=[{"cells": [cells["M1"], cells["M2"], cells["M5"]], "gap": pitch}])
    client.call("layout.place", cell_name="rp", rows=[{"cells": [cells["M3"], cells["M4"]], "gap": pitch}])
    r = client.call("route.nets", cell_name="ota", rows=["rn", "rp"], devices=_devices())
    # nets across the rows: a trunk column or a vertical over the rows (metal 3 is free there)
    assert r["trunks"] + r["verticals"] >= 1 and r["verticals"] >= 1
    assert client.call("drc.run", cell="ota")["total"] == 0
    devices = [{"id": d["id"], "type": d["type"], "terminals": d["terminals"], **d["params"]}
               for d in circuit("ota5")["devices"]]
    for d in devices:
        d.pop("value", None)
    assert client.call("lvs.run", cell="ota", devices=devices)["match"]


def test_two_row_module_is_refused(client: Client) -> None:
    client.call("tech.load", rules=load_rule_set(REPO_ROOT / "examples" / "pdk" / "sky130.json"))
    a = {"device_id": "M1", "type": "nmos", "w": 2e-6, "l": 5e-7, "nf": 1, "m": 2}
    pair = client.call("layout.create_common_centroid_pair", device_a=a,
                       device_b={**a, "device_id": "M2"}, arrangement="2D")
    client.call("layout.place", cell_name="row", rows=[{"cells": [pair["cell_name"]]}])
    devices = [{"id": i, "type": "nmos", "terminals": {"g": "g" + i, "d": "d" + i, "s": "s", "b": "vss"}}
               for i in ("M1", "M2")]
    r = client.raw("route.nets", {"cell_name": "t", "rows": ["row"], "devices": devices})
    assert not r["ok"] and r["error"]["code"] == "INVALID_PARAM" and "one row" in r["error"]["message"]


def random_circuit(seed: int) -> tuple[dict[str, Any], bool]:
    """A seeded random circuit: MOS of random size/fingers/m on random nets, resistors,
    capacitors; in most circuits a matched pair wired as a differential pair, a current
    mirror or a cross-coupled pair, and in some a three-device ratioed mirror (wired so the
    Rust side recognises them: it finds modules by structure).  Also: whether the candidate
    run should have dummies."""
    import random

    rnd = random.Random(seed)
    nets = [f"n{i}" for i in range(rnd.randint(2, 7))] + ["vdd", "vss"]
    devices: list[dict[str, Any]] = []
    for i in range(rnd.randint(1, 9)):
        t = rnd.choice(["nmos", "nmos", "pmos", "pmos", "resistor", "capacitor"])
        if t in ("nmos", "pmos"):
            nf = rnd.choice([1, 1, 2, 3, 4])
            params = {"w": nf * rnd.choice([0.5, 0.8, 1.0, 2.0, 3.0]) * 1e-6,
                      "l": rnd.choice([0.18, 0.35, 0.5, 1.0, 2.0]) * 1e-6, "nf": nf, "m": rnd.choice([1, 1, 2])}
            term = {"g": rnd.choice(nets), "d": rnd.choice(nets), "s": rnd.choice(nets),
                    "b": "vss" if t == "nmos" else "vdd"}
            devices.append({"id": f"M{i}", "type": t, "params": params, "terminals": term})
        else:
            size = {"w": 1e-6, "l": rnd.choice([2e-6, 5e-6])} if t == "resistor" else {"w": 5e-6, "l": 4e-6}
            devices.append({"id": f"{t[0].upper()}{i}", "type": t, "params": {**size, "nf": 1, "m": 1},
                            "terminals": {"p": rnd.choice(nets), "n": rnd.choice(nets)}})
    if rnd.random() < 0.7:
        t = rnd.choice(["nmos", "pmos"])
        sup = "vss" if t == "nmos" else "vdd"
        p = {"w": 2e-6, "l": 0.5e-6, "nf": 2, "m": 1}
        out = rnd.choice([n for n in nets if n not in ("n0", "n1")])
        wiring = {  # (PA, PB) terminals g, d, s
            "differential_pair": (("n0", "n1", "ntail"), ("pb_in", out, "ntail")),
            "current_mirror": (("n1", "n1", sup), ("n1", out, sup)),
            "cross_coupled_pair": (("n1", "n0", sup), ("n0", "n1", sup)),
        }[rnd.choice(["differential_pair", "current_mirror", "cross_coupled_pair"])]
        for name, (g, d, src) in zip(("PA", "PB"), wiring, strict=True):
            devices.append({"id": name, "type": t, "params": dict(p),
                            "terminals": {"g": g, "d": d, "s": src, "b": sup}})
    if rnd.random() < 0.5:
        # a 1:m1:m2 mirror: a diode-connected reference and two outputs of the same unit
        p = {"w": 1e-6, "l": 1e-6, "nf": 1}
        devices.append({"id": "G0", "type": "nmos", "params": {**p, "m": 1},
                        "terminals": {"g": "nbias", "d": "nbias", "s": "vss", "b": "vss"}})
        for k in (1, 2):
            devices.append({"id": f"G{k}", "type": "nmos", "params": {**p, "m": rnd.choice([1, 2, 3])},
                            "terminals": {"g": "nbias", "d": rnd.choice(nets[:-2]), "s": "vss",
                                          "b": "vss"}})
    used = sorted({n for d in devices for n in d["terminals"].values()})
    circ = {"name": f"rnd{seed}", "devices": devices,
            "nets": [{"name": n, "net_type": {"vdd": "power", "vss": "ground"}.get(n, "signal")} for n in used]}
    return circ, rnd.random() < 0.7


RANDOM_SEEDS = [3, 8, 18, 28, 81, 93, 107, 149]
#: candidates drafted per random circuit: among them one with and one without dummies
RANDOM_CANDIDATES = 5


def random_request(seed: int, rules_name: str) -> PlanRequest:
    """A random circuit as a netlist, sized for the process."""
    rules = rule_set(rules_name)
    netlist = sized_for(netlist_of_circuit(random_circuit(seed)[0]), rules)
    return PlanRequest.of(netlist, rules, candidates=RANDOM_CANDIDATES)


def draws_dummies(candidate: Candidate) -> bool:
    return any(step["skill"] == "layout.add_dummies" for step in candidate.steps)


def random_candidate(seed: int, rules_name: str) -> Candidate:
    """The first drafted candidate drawing dummies if the circuit asks for them, else one
    without; a circuit without matched cells has no dummies to draw (the space offers no
    choice there), and its first candidate is taken."""
    dummies = random_circuit(seed)[1]
    drafted = draft(random_request(seed, rules_name)).candidates
    return next((c for c in drafted if draws_dummies(c) == dummies), drafted[0])


def check_random(seed: int, rules_name: str, tmp_path: Path) -> dict[str, Any]:
    r = run_plan(random_candidate(seed, rules_name).steps, tmp_path)
    if not r["ok"] and "below" in r["failed"]["error"]["message"]:
        pytest.skip("a random size under this process's minimum")
    assert r["ok"], (rules_name, r.get("failed"))
    assert r["drc_total"] == 0, (rules_name, r["results"]["drc.run"]["violations"][:3])
    assert r["lvs_match"], (rules_name, r["results"]["lvs.run"])
    return r


@pytest.mark.rust_plans(requests=lambda p: [random_request(p["seed"], p["pdk"])])
@pytest.mark.parametrize("pdk", ["ihp_sg13g2", "sky130"])
@pytest.mark.parametrize("seed", RANDOM_SEEDS)
def test_random_circuits_clean(seed: int, pdk: str, tmp_path: Path) -> None:
    check_random(seed, pdk, tmp_path)


@pytest.mark.rust_plans(requests=lambda _p: [random_request(s, "sky130") for s in RANDOM_SEEDS])
def test_random_circuits_exercise_modules() -> None:
    """The random circuits are not all single devices: the Rust side recognises their pairs
    and mirrors, and both matched generators appear in the candidates run, with and
    without dummies."""
    made: dict[str, int] = {}
    dummies = set()
    for seed in RANDOM_SEEDS:
        candidate = random_candidate(seed, "sky130")
        for step in candidate.steps:
            made[step["skill"]] = made.get(step["skill"], 0) + 1
        dummies.add(draws_dummies(candidate))
    assert made.get("layout.create_common_centroid_pair", 0) >= 3, made
    assert made.get("layout.create_interdigitated_group", 0) >= 1, made
    assert dummies == {True, False}


def test_failed_route_leaves_no_cells(client: Client) -> None:
    cells = _ota_rows(client)
    client.call("layout.place", cell_name="n", rows=[{"cells": [cells["M1"], cells["M2"], cells["M5"]], "gap": 1}])
    client.call("layout.place", cell_name="p", rows=[{"cells": [cells["M3"], cells["M4"]], "gap": 1}])
    bad = _devices()
    bad[2] = {**bad[2], "terminals": {k: v for k, v in bad[2]["terminals"].items() if k != "s"}}
    layout = client.server.session.layout
    n_cells = layout.cells()
    r = client.raw("route.nets", {"cell_name": "ota", "rows": ["n", "p"], "devices": bad})
    assert not r["ok"] and r["error"]["code"] == "INVALID_PARAM"
    assert layout.cells() == n_cells
    # a retry under the same name works
    again = client.call("route.nets", cell_name="ota", rows=["n", "p"], devices=_devices())
    assert again["trunks"] + again["verticals"] >= 1


@pytest.mark.rust_plans(requests=plans_of("ota5", "sky130"))
def test_partner_nets_get_equal_track_spans(tmp_path: Path) -> None:
    r = default_candidate("ota5", "sky130", tmp_path)
    assert r["ok"], r.get("failed")
    routed = r["results"]["route.nets"]
    assert ["inp", "inn"] in routed["partner_nets"] and ["n1", "out"] in routed["partner_nets"]
    checked = 0
    for ch in routed["channels"]:
        trs = ch["tracks_um"]
        for a, b in routed["partner_nets"]:
            if a in trs and b in trs and not routed["nets"][a]["trunk"] and not routed["nets"][b]["trunk"]:
                if routed["nets"][a]["verticals"] and routed["nets"][b]["verticals"]:
                    continue  # two partners leaving on verticals may keep their own spans
                assert trs[a]["x"] == trs[b]["x"], (a, b, trs[a], trs[b])
                checked += 1
    assert checked >= 1


@pytest.mark.rust_plans(requests=plans_of("ota5", "sky130"))
def test_a_short_net_leaves_partner_balancing_and_gets_less_wire(tmp_path: Path) -> None:
    """``short_nets`` (a per-net choice of the plan): the output leaves partner balancing
    and its trunk moves next to the supplies'; its drawn wire, read back from the layout
    by ``extract.netlist``, is shorter and carries less capacitance. On GF180MCU, whose rule
    set has no metal above the tracks' for verticals, so ``out`` crosses the rows in a trunk
    column (on SKY130 it crosses them by a vertical, which ``short_nets`` leaves as it is)."""
    steps = draft(example_request("ota5", "gf180mcu")).candidates[0].steps
    read: dict[str, dict[str, Any]] = {}
    for short in ([], ["out"]):
        def edit(step: dict[str, Any], short: list[str] = short) -> dict[str, Any]:
            if step["skill"] == "route.nets":
                return {**step, "arguments": {**step["arguments"], "short_nets": short}}
            return step

        server = Server()
        r = run_plan(steps, tmp_path / f"short{len(short)}", server=server, edit=edit, until="route.nets")
        assert r["ok"], r.get("failed")
        routed = r["results"]["route.nets"]
        assert (["n1", "out"] in routed["partner_nets"]) == (not short), routed["partner_nets"]
        client = Client()
        client.server = server
        data = client.call("extract.netlist", cell=routed["cell_name"],
                           path=str(tmp_path / f"short{len(short)}" / "x.spice"),
                           circuit="ota5", ports=["out"])
        read[",".join(short)] = data["nets"]["out"]
    before, after = read[""], read["out"]
    assert after["wire_length_um"] < before["wire_length_um"], (before, after)
    total = [n["cap_fF"] + sum(n["coupling_fF"].values()) for n in (before, after)]
    assert total[1] < total[0], (before, after)
