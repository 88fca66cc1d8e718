"""Passives that carry no current and devices the circuit itself shorts (issue 26: public
SKY130 circuits, e.g. a band-gap's start-up with rings of dummy resistors on its ground and
diode-shorted transistors on signal nets): the Rust planner's candidate is LVS-matched and
electrically clean.  A ring reduced by ``combine_devices`` in the extraction's order came
out as another pair of resistors than the schematic's (LVS mismatch) and left a dangling
inner net; the circuit's shorted devices were floating dummies."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rust_plans import PlanRequest, draft, example_objectives, rule_set, run_plan


def resistor(name: str, a: str, b: str) -> dict[str, Any]:
    return {"id": name, "type": "resistor", "w": 0.35e-6, "l": 17e-6, "terminals": {"p": a, "n": b}}


def mos(name: str, kind: str, d: str, g: str, s: str, b: str, nf: int = 1) -> dict[str, Any]:
    return {"id": name, "type": kind, "w": 1e-6, "l": 1e-6, "nf": nf,
            "terminals": {"d": d, "g": g, "s": s, "b": b}}


def start_up_netlist() -> dict[str, Any]:
    """A mirror, a diode-shorted device on its output (by design), and two instances of a
    ring of five dummy resistors whose both ends sit on the ground (a block: the ring's
    inner nets carry no label)."""
    ring = ["vss", "a1", "a2", "a3", "a4", "vss"]
    devices = [
        mos("M1", "nmos", "bias", "bias", "vss", "vss"),
        mos("M2", "nmos", "out", "bias", "vss", "vss"),
        mos("M3", "nmos", "out", "out", "out", "vss", nf=2),
        mos("M4", "pmos", "out", "in", "vdd", "vdd"),
    ]
    nets = [{"name": "vdd", "type": "power"}, {"name": "vss", "type": "ground"}]
    ring_cell = {"name": "ring", "ports": ["vss"],
                 "devices": [resistor(f"R{k + 1}", ring[k], ring[k + 1]) for k in range(5)]}
    return {"schema_version": "1.1.0", "top": "start_up",
            "cells": [{"name": "start_up", "ports": ["in", "out", "bias", "vdd", "vss"],
                       "nets": nets, "devices": devices,
                       "subcells": [{"name": f"X{k}", "cell": "ring", "connections": {"vss": "vss"}}
                                    for k in (1, 2)]},
                      ring_cell]}


@pytest.mark.parametrize("pdk", ["sky130", "gf180mcu"])
def test_a_ring_of_dummy_resistors_and_shorted_devices_are_lvs_and_electrically_clean(
        tmp_path: Path, pdk: str) -> None:
    request = PlanRequest.of(start_up_netlist(), rule_set(pdk), example_objectives("ota5"), candidates=1)
    candidate = draft(request).candidates[0]
    electrical_steps = [s for s in candidate.steps if s["skill"] == "check.electrical"]
    assert electrical_steps and electrical_steps[0]["arguments"].get("circuit_dummies") == 2, electrical_steps
    result = run_plan(candidate.steps, tmp_path)
    assert result["ok"], result.get("failed")
    assert result["drc_total"] == 0
    lvs = result["results"]["lvs.run"]
    assert lvs["match"], lvs
    assert lvs["inert_passive_groups"] == 2, lvs
    electrical = result["results"]["check.electrical"]
    assert electrical["clean"], electrical["issues"]
    assert electrical["inert_passive_groups"] == 2
    assert [i["reason"] for i in electrical["by_design"]] == ["floating_dummy"] * 2, electrical
