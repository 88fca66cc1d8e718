"""The schematic's source/drain junctions (``sim.schematic`` ``junctions``): estimated from
the rule set's contact size, contact-to-gate spacing and diffusion enclosure of the contact
as a schematic tool does, checked against a hand calculation from the rule values on two
rule sets; the bare netlist on request; the estimate against what the device generator
draws (the extraction's AD/AS per terminal net); both schematics simulate in ngspice, the
estimated one slower."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from helpers import REPO_ROOT, Client, load_rule_set

from centroid_skills.junction_estimate import DiffusionLengths, estimate
from centroid_skills.mos import mos_plan
from centroid_skills.skills.lvs import extract

# the rules of the hand calculation, by id: contact size, contact on diffusion to gate,
# diffusion enclosure of the contact, diffusion past the gate
RULE_IDS = {"sky130": ("licon.1", "licon.11", "licon.5a", "poly.7"),
            "ihp_sg13g2": ("Cnt.a", "Cnt.f", "Cnt.c", "Act.c")}


def rules(pdk: str) -> dict[str, Any]:
    return load_rule_set(REPO_ROOT / "examples" / "pdk" / f"{pdk}.json")


def rule_um(data: dict[str, Any], rule_id: str) -> float:
    (rule,) = [r for r in data["rules"] if r.get("id") == rule_id]
    return rule["min"] * 1e6


def devices(w: float, nf: int) -> list[dict[str, Any]]:
    return [{"id": "m1", "type": "nmos", "terminals": {"d": "out", "g": "in", "s": "vss", "b": "vss"},
             "w": w, "l": 0.15e-6, "nf": nf}]


def spice_params(text: str) -> dict[str, float]:
    (line,) = [ln for ln in text.splitlines() if ln.lower().startswith(("xm1", "mm1"))]
    return {k: float(v) for k, v in re.findall(r"\b(ad|as|pd|ps)=(\S+)", line)}


def schematic(client: Client, tmp_path: Path, w: float, nf: int, **extra: Any) -> str:
    path = tmp_path / "sch.spice"
    client.call("sim.schematic", path=str(path), circuit="t", ports=["out", "in", "vss"],
                devices=devices(w, nf), **extra)
    return path.read_text()


# (pdk, W µm, nf) -> (AD µm², AS µm², PD µm, PS µm) by hand from the rule values:
# sky130: inner = 0.17 + 2·0.055 = 0.28, end = max(0.17 + 0.055 + 0.04, 0.25) = 0.265
#   nf 10, finger 2.1: drain 5 inner: AD = 5·2.1·0.28 = 2.94, PD = 2·5·2.1 + 2·5·0.28 = 23.8;
#   source 4 inner + 2 ends: AS = 2.1·(4·0.28 + 2·0.265) = 3.465, PS = 2·6·2.1 + 2·1.65 = 28.5
#   nf 1, finger 4: one end each: AD = AS = 4·0.265 = 1.06, PD = PS = 2·(4 + 0.265) = 8.53
# IHP SG13G2: inner = 0.16 + 2·0.11 = 0.38, end = max(0.16 + 0.11 + 0.07, 0.23) = 0.34
#   nf 3, finger 2: one inner + one end each: AD = AS = 2·(0.38 + 0.34) = 1.44,
#   PD = PS = 2·2·2 + 2·0.72 = 9.44
#   nf 4, finger 1.5: drain 2 inner: AD = 1.5·0.76 = 1.14, PD = 2·2·1.5 + 2·0.76 = 7.52;
#   source 1 inner + 2 ends: AS = 1.5·(0.38 + 0.68) = 1.59, PS = 2·3·1.5 + 2·1.06 = 11.12
HAND = {("sky130", 21.0, 10): (2.94, 3.465, 23.8, 28.5),
        ("sky130", 4.0, 1): (1.06, 1.06, 8.53, 8.53),
        ("ihp_sg13g2", 6.0, 3): (1.44, 1.44, 9.44, 9.44),
        ("ihp_sg13g2", 6.0, 4): (1.14, 1.59, 7.52, 11.12)}


@pytest.mark.parametrize("pdk", sorted(RULE_IDS))
def test_the_diffusion_lengths_come_from_the_rule_values(pdk: str) -> None:
    from centroid_skills.tech import Technology

    data = rules(pdk)
    contact, to_gate, enclosure, past_gate = (rule_um(data, i) for i in RULE_IDS[pdk])
    lengths = DiffusionLengths.of(Technology.from_rules(data))
    assert lengths.inner_um == pytest.approx(contact + 2 * to_gate, abs=1e-9)
    assert lengths.end_um == pytest.approx(max(contact + to_gate + enclosure, past_gate), abs=1e-9)


@pytest.mark.parametrize("case", sorted(HAND), ids=lambda c: f"{c[0]}-w{c[1]}-nf{c[2]}")
def test_sim_schematic_writes_the_hand_calculated_junctions(client: Client, tmp_path: Path,
                                                            case: tuple[str, float, int]) -> None:
    pdk, w_um, nf = case
    client.call("tech.load", rules=rules(pdk))
    text = schematic(client, tmp_path, w_um * 1e-6, nf)
    # SKY130's models take µm (areas µm²), SG13G2's metres
    unit = 1e-6 if pdk == "ihp_sg13g2" else 1.0
    got = spice_params(text)
    ad, as_, pd, ps = HAND[case]
    assert got["ad"] == pytest.approx(ad * unit ** 2, rel=1e-3), text
    assert got["as"] == pytest.approx(as_ * unit ** 2, rel=1e-3), text
    assert got["pd"] == pytest.approx(pd * unit, rel=1e-3), text
    assert got["ps"] == pytest.approx(ps * unit, rel=1e-3), text
    assert "junctions estimated from the rule set" in text


def test_the_bare_schematic_has_no_junctions(client: Client, tmp_path: Path) -> None:
    client.call("tech.load", rules=rules("sky130"))
    out = client.raw("sim.schematic", {"path": str(tmp_path / "sch.spice"), "circuit": "t",
                                        "ports": ["out", "in", "vss"], "devices": devices(21e-6, 10),
                                        "junctions": "none"})
    assert out["ok"] and out["data"]["junctions"] == "none", out
    assert spice_params((tmp_path / "sch.spice").read_text()) == {}
    bad = client.raw("sim.schematic", {"path": str(tmp_path / "sch.spice"), "circuit": "t",
                                        "ports": ["out", "in", "vss"], "devices": devices(21e-6, 10),
                                        "junctions": "drawn"})
    assert not bad["ok"] and bad["error"]["code"] == "INVALID_PARAM", bad


@pytest.mark.parametrize("pdk", sorted(RULE_IDS))
@pytest.mark.parametrize("nf", [10, 5])
def test_the_estimate_against_what_the_generator_draws(client: Client, pdk: str, nf: int) -> None:
    """The drawn device's junctions per terminal net (the extraction's): its inner
    diffusions are the estimate's (contacted, minimal); its ends are the generator's
    uniform source/drain length, longer than the estimate's end by what the inner length
    exceeds it. nf even: the drain (inner diffusions only) exactly as estimated."""
    client.call("tech.load", rules=rules(pdk))
    w_um = 21.0
    cell = client.call("layout.create_device", type="nmos", w=w_um * 1e-6, l=0.15e-6, nf=nf)["cell_name"]
    session = client.server.session
    ex = extract(session, session.layout.cell(cell))
    (drawn,) = ex.junctions.values()
    tech = session.need_tech()
    lengths = DiffusionLengths.of(tech)
    est = estimate(w_um, nf, lengths)
    finger = w_um / nf
    d_um = mos_plan(tech, int(w_um * 1000), 150, nf, 1)["d"] / 1000
    assert d_um == pytest.approx(lengths.inner_um)  # the generator's S/D length is the inner one
    ends_excess = finger * (d_um - lengths.end_um)
    # which terminal KLayout calls the source is its choice: compare the pair sorted
    drawn_areas = sorted([drawn.ad_um2, drawn.as_um2])
    if nf % 2 == 0:  # drain: nf/2 inner diffusions; source: both ends
        expected = sorted([est.ad_um2, est.as_um2 + 2 * ends_excess])
    else:  # one end each
        expected = sorted([est.ad_um2 + ends_excess, est.as_um2 + ends_excess])
    assert drawn_areas == pytest.approx(expected, rel=1e-6), (drawn, est)
    if nf % 2 == 0:
        assert min(drawn.ad_um2, drawn.as_um2) == pytest.approx(est.ad_um2, rel=1e-6)
