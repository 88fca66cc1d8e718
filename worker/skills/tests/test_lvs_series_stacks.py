"""LVS of parallel copies of series stacks (issue 26: ``test_vga``'s eight-device
``plvt_s_pcell_1`` stacks, ``m=4``, failing LVS with "parameters differ").

A differential pair of pmos stacks — each side eight segments in series under one gate,
four parallel copies of it, every copy with inner nodes of its own — drawn as one device
cell per segment in two pmos rows in a shuffled order and routed. The layout is right, yet
KLayout's comparer alone pairs segments across stacks and gates (the copies' inner nets are
ambiguous); with the series chains reduced on both sides (``series_chains.py``) it matches,
on every rule set. The reduction hides no defect: a segment on the wrong gate, two copies'
inner nodes joined, or a segment of the wrong length in the compared circuit still fail.
"""

from __future__ import annotations

import copy
import random
from pathlib import Path
from typing import Any

import pytest
from helpers import RULE_SET_IDS, RULE_SET_PATHS, Client, load_rule_set
from test_blocks import SIZE

SEGMENTS = 8
COPIES = 4
ROWS = 2
SIDES = {"A": ("vinn", "voutp"), "B": ("vinp", "voutn")}  # stack -> (gate, drain end)
PORTS = ["vinn", "vinp", "voutp", "voutn", "tail", "vdd"]


def stack_devices() -> list[dict[str, Any]]:
    """Every segment of every copy: drain end, inner nodes ``<stack><copy>/i<k>``, tail."""
    devices = []
    for stack, (gate, drain) in SIDES.items():
        for c in range(COPIES):
            nodes = [drain] + [f"{stack}{c}/i{k}" for k in range(1, SEGMENTS)] + ["tail"]
            for k in range(SEGMENTS):
                devices.append({"id": f"{stack}{c}_{k}", "type": "pmos", **SIZE, "terminals": {
                    "d": nodes[k], "g": gate, "s": nodes[k + 1], "b": "vdd"}})
    return devices


def draw(path: Path, devices: list[dict[str, Any]]) -> Client:
    """The segments' cells in ``ROWS`` pmos rows in a shuffled order, routed into TOP."""
    client = Client()
    client.call("tech.load", rules=load_rule_set(path))
    pitch = client.call("route.info")["pitch_um"]
    cells = [client.call("layout.create_device", device_id=d["id"], type=d["type"],
                         cell_name=f"D_{d['id']}", **SIZE)["cell_name"] for d in devices]
    random.Random(1).shuffle(cells)
    per_row = -(-len(cells) // ROWS)
    rows = []
    for r in range(ROWS):
        client.call("layout.place", cell_name=f"ROW{r}",
                    rows=[{"cells": cells[r * per_row:(r + 1) * per_row], "gap": pitch}])
        rows.append(f"ROW{r}")
    client.call("route.nets", cell_name="TOP", rows=rows, ports=PORTS,
                nets=[{"name": "vdd", "net_type": "power"}],
                devices=[{"id": d["id"], "type": d["type"], "terminals": d["terminals"]}
                         for d in devices])
    return client


def segment(devices: list[dict[str, Any]], device_id: str) -> dict[str, Any]:
    return next(d for d in devices if d["id"] == device_id)


@pytest.mark.parametrize("path", RULE_SET_PATHS, ids=RULE_SET_IDS)
def test_parallel_stacks_in_shuffled_rows_match(path: Path) -> None:
    devices = stack_devices()
    client = draw(path, devices)
    result = client.call("lvs.run", cell="TOP", devices=devices)
    assert result["match"], (result["parameter_mismatches"][:3], result["unmatched_nets_layout"][:5])
    assert result["parameter_mismatches"] == [] and result["net_mismatches"] == []
    assert result["devices_extracted"] >= len(devices) and result["dummies_removed"] == 0
    # one device per copy of a stack is compared, each the whole stack's length
    assert result["devices_after_combine"] == result["schematic_devices"] == len(SIDES) * COPIES
    assert client.call("drc.run", cell="TOP")["total"] == 0


@pytest.mark.parametrize("path", RULE_SET_PATHS[:1], ids=RULE_SET_IDS[:1])
def test_a_wrong_stack_still_fails(path: Path) -> None:
    """The same layout against circuits that differ from it at the stacks' segments."""
    devices = stack_devices()
    client = draw(path, devices)

    wrong_gate = copy.deepcopy(devices)
    segment(wrong_gate, "B0_3")["terminals"]["g"] = "vinn"
    joined = copy.deepcopy(devices)  # copy 1's third inner node is copy 0's
    for d in joined:
        for t, net in d["terminals"].items():
            if net == "A1/i3":
                d["terminals"][t] = "A0/i3"
    longer = copy.deepcopy(devices)
    segment(longer, "A2_5")["l"] = 2 * SIZE["l"]
    for circuit in (wrong_gate, joined, longer):
        result = client.call("lvs.run", cell="TOP", devices=circuit)
        assert not result["match"], result
