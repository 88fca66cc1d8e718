"""extract.netlist against hand calculations from the rule set's coefficients (issue 27):
a long wire on each routing layer, two parallel wires at minimum spacing (and at twice
it), two crossing wires, a neighbour shielding the fringe, on every example rule set;
the 5T OTA's extracted netlist."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pytest
from helpers import REPO_ROOT, Client, load_rule_set, scaled_rule_set

from centroid_skills.skills.lvs import metal_stack
from centroid_skills.tech import Technology

PDKS = ["sky130", "gf180mcu", "ihp_sg13g2", "sky130_x1.5", "ihp_sg13g2_x1.5"]
LENGTH_UM = 100.0
TOLERANCE = 0.10


def rules_of(pdk: str) -> dict[str, Any]:
    """An example rule set, or (``_x1.5``) it scaled 1.5x with other layer names and numbers:
    the extraction reads every coefficient and length from the rule set."""
    name, _, scaled = pdk.partition("_x")
    rules = load_rule_set(REPO_ROOT / "examples" / "pdk" / f"{name}.json")
    return scaled_rule_set(rules, float(scaled)) if scaled else rules


def routing(rules: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(role, layer name, coefficients) of the routing layers the extraction reads."""
    tech = Technology.from_rules(rules)
    out = []
    for role in ["poly", *metal_stack(tech)]:
        name = tech.require(role).name
        out.append((role, name, rules["parasitics"]["layers"][name]))
    return out


def min_width_um(rules: dict[str, Any], layer: str) -> float:
    return max(r["min"] for r in rules["rules"]
               if r["type"] == "width" and r["layer"] == layer and "layer2" not in r) * 1e6


def min_space_um(rules: dict[str, Any], layer: str) -> float:
    return max(r["min"] for r in rules["rules"] if r["type"] == "spacing" and r["layer"] == layer
               and "layer2" not in r and "width_over" not in r) * 1e6


def draw(client: Client, rules: dict[str, Any], shapes: list[dict[str, Any]],
         labels: list[tuple[str, str, float, float]]) -> None:
    client.call("tech.load", rules=rules)
    client.call("layout.add_shapes", cell="T", shapes=shapes, create=True)
    for text, role, x, y in labels:
        client.call("layout.add_label", cell="T", text=text, role=role, x=x, y=y)


def label_role(rules: dict[str, Any], role: str) -> str:
    tech = Technology.from_rules(rules)
    return f"{role}_label" if tech.has(f"{role}_label") else role


def extract(client: Client, tmp_path: Path, ports: list[str], **extra: Any) -> dict[str, Any]:
    return client.call("extract.netlist", cell="T", path=str(tmp_path / "x.spice"), circuit="t",
                       ports=ports, **extra)


def close(measured: float, expected: float) -> bool:
    return abs(measured - expected) <= TOLERANCE * abs(expected)


@pytest.mark.parametrize("pdk", PDKS)
def test_a_long_wire_on_each_routing_layer(client: Client, tmp_path: Path, pdk: str) -> None:
    rules = rules_of(pdk)
    for role, name, co in routing(rules):
        if role == "poly":
            continue  # a poly wire is labelled through metal; its cap is checked in the crossing test
        w = min_width_um(rules, name) * 2
        draw(client, rules, [{"role": role, "box": [0, 0, LENGTH_UM, w]}],
             [("a", label_role(rules, role), 1.0, w / 2)])
        data = extract(client, tmp_path, ["a"], sensitive_nets=["a"])
        net = data["nets"]["a"]
        area_af = co["area_cap_af_um2"] * LENGTH_UM * w
        fringe_af = co["fringe_cap_af_um"] * 2 * (LENGTH_UM + w)
        assert close(net["cap_fF"], (area_af + fringe_af) / 1000), (pdk, name, net)
        ohm = co["sheet_resistance_ohm"] * LENGTH_UM / w
        assert close(net["resistance_ohm"], ohm), (pdk, name, net["resistance_ohm"], ohm)


@pytest.mark.parametrize("pdk", PDKS)
def test_two_parallel_wires_couple_by_the_rule_set_and_less_when_farther(
        client: Client, tmp_path: Path, pdk: str) -> None:
    rules = rules_of(pdk)
    for role, name, co in routing(rules):
        if role == "poly":
            continue
        w, s = min_width_um(rules, name), min_space_um(rules, name)
        found = []
        for spacing in (s, 2 * s):
            draw(client, rules, [{"role": role, "box": [0, 0, LENGTH_UM, w]},
                                 {"role": role, "box": [0, w + spacing, LENGTH_UM, 2 * w + spacing]}],
                 [("a", label_role(rules, role), 1.0, w / 2),
                  ("b", label_role(rules, role), 1.0, 1.5 * w + spacing)])
            data = extract(client, tmp_path, ["a", "b"], symmetric_pairs=[["a", "b"]])
            found.append(data["nets"]["a"]["coupling_fF"]["b"])
            assert data["nets"]["b"]["coupling_fF"]["a"] == found[-1]
            assert data["symmetric_pairs"][0]["mismatch_fF"] == pytest.approx(0.0, abs=1e-6)
        s0, off = co["coupling_spacing_m"] * 1e6, co.get("coupling_offset_m", 0.0) * 1e6
        expected = co["coupling_af_um"] * LENGTH_UM / 1000
        assert close(found[0], expected), (pdk, name, found, expected)
        at_twice = co["coupling_af_um"] * (s0 + off) / (2 * s + off) * LENGTH_UM / 1000
        assert close(found[1], at_twice) and found[1] < found[0], (pdk, name, found, at_twice)


@pytest.mark.parametrize("pdk", PDKS)
def test_a_neighbour_shields_the_fringe_facing_it(client: Client, tmp_path: Path, pdk: str) -> None:
    """Two parallel wires at minimum spacing: the edge facing the other wire keeps
    (2/π)·atan(0.02 · area cap · s) of its fringe to substrate (magic's model), the outer
    edge and the ends all of it; past the rule set's fringe-shield halo, nothing is shielded."""
    rules = rules_of(pdk)
    halo = rules["parasitics"]["fringe_shield"]["halo_m"] * 1e6
    for role, name, co in routing(rules):
        if role == "poly":
            continue
        w, s = min_width_um(rules, name), min_space_um(rules, name)
        area, fringe = co["area_cap_af_um2"] * LENGTH_UM * w, co["fringe_cap_af_um"]
        for spacing, kept in ((s, 2 / math.pi * math.atan(0.02 * co["area_cap_af_um2"] * s)), (halo + s, 1.0)):
            draw(client, rules, [{"role": role, "box": [0, 0, LENGTH_UM, w]},
                                 {"role": role, "box": [0, w + spacing, LENGTH_UM, 2 * w + spacing]}],
                 [("a", label_role(rules, role), 1.0, w / 2),
                  ("b", label_role(rules, role), 1.0, 1.5 * w + spacing)])
            nets = extract(client, tmp_path, ["a", "b"])["nets"]
            expected = (area + fringe * (LENGTH_UM + 2 * w) + fringe * LENGTH_UM * kept) / 1000
            for net in ("a", "b"):
                assert close(nets[net]["cap_fF"], expected), (pdk, name, spacing, nets[net], expected)
            if kept < 1.0:
                assert nets["a"]["cap_fF"] < (area + fringe * 2 * (LENGTH_UM + w)) / 1000 * 0.8


@pytest.mark.parametrize("pdk", PDKS)
def test_two_crossing_wires_couple_by_their_overlap(client: Client, tmp_path: Path, pdk: str) -> None:
    rules = rules_of(pdk)
    layers = {role: (name, co) for role, name, co in routing(rules)}
    overlaps = {(o["layer"], o["layer2"]): o["area_cap_af_um2"] for o in rules["parasitics"]["overlaps"]}
    for upper_role, lower_role in (("metal2", "metal1"), ("metal1", "poly")):
        (upper, cu), (lower, cl) = layers[upper_role], layers[lower_role]
        wu, wl = 2 * min_width_um(rules, upper), 2 * min_width_um(rules, lower)
        shapes = [{"role": lower_role, "box": [0, -LENGTH_UM / 2, wl, LENGTH_UM / 2]},
                  {"role": upper_role, "box": [-LENGTH_UM / 2, 0, LENGTH_UM / 2, wu]}]
        labels = [("up", label_role(rules, upper_role), -LENGTH_UM / 2 + 1, wu / 2)]
        if lower_role != "poly":
            labels.append(("lo", label_role(rules, lower_role), wl / 2, -LENGTH_UM / 2 + 1))
        draw(client, rules, shapes, labels)
        data = extract(client, tmp_path, ["up"])
        nets = data["nets"]
        lo = "lo" if "lo" in nets else next(n for n in nets if n != "up")
        expected = overlaps[(upper, lower)] * wu * wl / 1000
        assert close(nets["up"]["coupling_fF"][lo], expected), (pdk, upper, lower, nets)
        # the upper wire's area over the lower one is not also counted to substrate
        ground = (cu["area_cap_af_um2"] * (LENGTH_UM * wu - wu * wl)
                  + cu["fringe_cap_af_um"] * 2 * (LENGTH_UM + wu)) / 1000
        assert close(nets["up"]["cap_fF"], ground), (pdk, upper, nets["up"], ground)
        lower_ground = (cl["area_cap_af_um2"] * LENGTH_UM * wl
                        + cl["fringe_cap_af_um"] * 2 * (LENGTH_UM + wl)) / 1000
        assert close(nets[lo]["cap_fF"], lower_ground), (pdk, lower, nets[lo], lower_ground)


def test_a_rule_set_without_parasitics_is_refused(client: Client, tmp_path: Path) -> None:
    rules = rules_of("sky130")
    del rules["parasitics"]
    rules["schema_version"] = "1.3.0"
    draw(client, rules, [{"role": "metal1", "box": [0, 0, 10, 1]}], [])
    result = client.raw("extract.netlist", {"cell": "T", "path": str(tmp_path / "x.spice"),
                                            "circuit": "t", "ports": ["a"]})
    assert not result["ok"] and result["error"]["details"]["reason"] == "no_parasitics"


def test_metal_over_its_own_diffusion_has_no_capacitance_to_substrate_nor_length(
        client: Client, tmp_path: Path) -> None:
    """A wire whose first fifth lies on its own tap (contacted): like a drain strip, that
    part's field ends on the same net and no current runs along it."""
    rules = rules_of("sky130")
    (name, co), = [(name, co) for role, name, co in routing(rules) if role == "metal1"]
    w, cut = 2 * min_width_um(rules, name), min_width_um(rules, "licon1")
    on_tap = LENGTH_UM / 5
    shapes = [{"role": "tap", "box": [0, 0, on_tap, 2]},
              {"role": "pplus", "box": [-0.5, -0.5, on_tap + 0.5, 2.5]},
              {"role": "contact", "box": [1, 0.5 + (w - cut) / 2, 1 + cut, 0.5 + (w + cut) / 2]},
              {"role": "metal1", "box": [0, 0.5, LENGTH_UM, 0.5 + w]}]
    draw(client, rules, shapes, [("a", label_role(rules, "metal1"), LENGTH_UM - 1, 0.5 + w / 2)])
    net = extract(client, tmp_path, ["a"], sensitive_nets=["a"])["nets"]["a"]
    off = LENGTH_UM - on_tap
    # the cut where the wire leaves its tap is no edge: no fringe there
    ground = (co["area_cap_af_um2"] * off * w + co["fringe_cap_af_um"] * (2 * off + w)) / 1000
    assert close(net["cap_fF"], ground), (net, ground)
    ohm = co["sheet_resistance_ohm"] * off / w + rules["parasitics"]["cuts"]["licon1"]["resistance_ohm"]
    assert close(net["resistance_ohm"], ohm), (net["resistance_ohm"], ohm)


def test_a_ground_port_named_0_stays_spices_ground(client: Client, tmp_path: Path) -> None:
    """ALIGN names the ground port `0`: the extracted subcircuit keeps it as a port, its
    neighbour's coupling to it is a capacitance to ground, and ground gets none to itself."""
    rules = rules_of("sky130")
    w, s = min_width_um(rules, "li1"), min_space_um(rules, "li1")
    draw(client, rules, [{"role": "metal1", "box": [0, 0, LENGTH_UM, w]},
                         {"role": "metal1", "box": [0, w + s, LENGTH_UM, 2 * w + s]}],
         [("a", "metal1_label", 1.0, w / 2), ("0", "metal1_label", 1.0, 1.5 * w + s)])
    data = extract(client, tmp_path, ["a", "0"])
    assert "0" in data["nets"] and data["nets"]["a"]["coupling_fF"]["0"] > 0, data["nets"]
    text = (tmp_path / "x.spice").read_text()
    assert ".subckt t a 0" in text, text
    assert not re.search(r"^Cgnd\d+ 0 0 ", text, re.M), text
    assert re.search(r"^Ccpl\d+ 0 a ", text, re.M), text


def test_a_port_the_layout_does_not_label_is_named(client: Client, tmp_path: Path) -> None:
    rules = rules_of("sky130")
    draw(client, rules, [{"role": "metal1", "box": [0, 0, 10, 1]}], [("a", "metal1_label", 1, 0.5)])
    result = client.raw("extract.netlist", {"cell": "T", "path": str(tmp_path / "x.spice"),
                                            "circuit": "t", "ports": ["a", "zz"]})
    assert not result["ok"]
    assert result["error"]["details"] | {} and result["error"]["details"]["reason"] == "port_not_in_layout"
    assert result["error"]["details"]["ports"] == ["zz"]


def spice_devices(text: str) -> list[str]:
    return [line for line in text.splitlines() if re.match(r"^[XM]M\d+ ", line)]
