"""Hierarchical blocks (issue 26): a 5-transistor OTA routed once as a block with ports,
instanced three times (a chain of unity buffers on a shared bias) next to a loose bias
device, the parent routed over the instances: DRC clean with our checker, LVS clean
against the flat devices (``X1/M1``, nets ``X1/n1``), the written GDS holding the block
cell once, referenced three times; two levels of blocks; a one-transistor block with four
ports; bad input refused.  On every rule set (the examples and the toy set, whose tracks
are metal 1)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import klayout.db as kdb
import pytest
from helpers import (
    REPO_ROOT,
    RULE_SET_IDS,
    RULE_SET_PATHS,
    Client,
    assert_top_deck_clean,
    foundry_deck,
    load_rule_set,
)

EXAMPLES = RULE_SET_PATHS  # the example rule sets (SKY130, GF180, IHP) and the toy set

OTA = [  # local ids and nets of the OTA subcircuit
    ("M1", "nmos", {"d": "n1", "g": "inp", "s": "tail", "b": "vss"}),
    ("M2", "nmos", {"d": "out", "g": "inn", "s": "tail", "b": "vss"}),
    ("M5", "nmos", {"d": "tail", "g": "vbias", "s": "vss", "b": "vss"}),
    ("M3", "pmos", {"d": "n1", "g": "n1", "s": "vdd", "b": "vdd"}),
    ("M4", "pmos", {"d": "out", "g": "n1", "s": "vdd", "b": "vdd"}),
]
OTA_PORTS = ["inp", "inn", "out", "vbias", "vdd", "vss"]
SIZE = {"w": 1e-6, "l": 0.5e-6, "nf": 1, "m": 1}
SUPPLIES = [{"name": "vdd", "net_type": "power"}, {"name": "gnd", "net_type": "ground"},
            {"name": "vss", "net_type": "ground"}]


@pytest.fixture(params=EXAMPLES, ids=RULE_SET_IDS)
def example(request: pytest.FixtureRequest) -> Client:
    client = Client()
    client.call("tech.load", rules=load_rule_set(request.param))
    return client


def make_rows(client: Client, prefix: str, devices: list[tuple[str, str, dict[str, str]]],
              blocks: list[str] = ()) -> list[str]:
    """Device cells (named ``<prefix>_<id>``) placed as an nmos row, a pmos row and a row of
    block instance cells (``blocks``), bottom to top; returns the row cells."""
    pitch = client.call("route.info")["pitch_um"]
    by_type: dict[str, list[str]] = {"nmos": [], "pmos": []}
    for dev_id, dtype, _terms in devices:
        by_type[dtype].append(client.call("layout.create_device", device_id=dev_id, type=dtype,
                                          cell_name=f"{prefix}_{dev_id}", **SIZE)["cell_name"])
    rows = []
    for k, cells in enumerate([by_type["nmos"], by_type["pmos"], list(blocks)]):
        if cells:
            name = f"{prefix}_ROW{k}"
            client.call("layout.place", cell_name=name, rows=[{"cells": cells, "gap": pitch}])
            rows.append(name)
    return rows


def route_items(devices: list[tuple[str, str, dict[str, str]]]) -> list[dict[str, Any]]:
    return [{"id": i, "type": t, "terminals": terms} for i, t, terms in devices]


def ota_block(client: Client, name: str = "BLK_OTA") -> dict[str, Any]:
    rows = make_rows(client, name, OTA)
    return client.call("route.nets", cell_name=name, rows=rows, devices=route_items(OTA),
                       nets=[{"name": "vdd", "net_type": "power"},
                             {"name": "vss", "net_type": "ground"}],
                       ports=OTA_PORTS)


def flat_devices(path: str, devices: list[tuple[str, str, dict[str, str]]],
                 ports: dict[str, str]) -> list[dict[str, Any]]:
    """The devices of one instance, flattened: ids ``<path>/M1``, port nets renamed to the
    parent's, internal nets ``<path>/n1``."""
    return [{"id": f"{path}/{i}", "type": t, **SIZE,
             "terminals": {k: ports.get(n, f"{path}/{n}") for k, n in terms.items()}}
            for i, t, terms in devices]


def buffer_ports(inp: str, out: str, vdd: str = "vdd", vss: str = "gnd",
                 vbias: str = "vb") -> dict[str, str]:
    """A unity buffer: the OTA's output fed back to its inverting input."""
    return {"inp": inp, "inn": out, "out": out, "vbias": vbias, "vdd": vdd, "vss": vss}


BIAS = [("MB", "nmos", {"d": "vb", "g": "vb", "s": "gnd", "b": "gnd"})]
CHAIN = {"X1": buffer_ports("in", "o1"), "X2": buffer_ports("o1", "o2"),
         "X3": buffer_ports("o2", "out")}


def check_clean(client: Client, cell: str, devices: list[dict[str, Any]]) -> None:
    drc = client.call("drc.run", cell=cell)
    assert drc["total"] == 0, [(v["id"], v["count"], v.get("markers_um", [])[:2])
                               for v in drc["violations"]]
    lvs = client.call("lvs.run", cell=cell, devices=devices)
    assert lvs["match"], {k: lvs.get(k) for k in ("device_mismatches", "net_mismatches")}


def chain_of_three(client: Client) -> list[dict[str, Any]]:
    """The OTA block, its three instances (CHAIN) and the bias device routed into TOP;
    returns the flat devices."""
    block = ota_block(client)
    assert sorted(p["net"] for p in block["ports"]) == sorted(OTA_PORTS)
    bottom = block["bbox_um"][1]
    assert all(p["box_um"][1] == bottom for p in block["ports"]), (bottom, block["ports"])
    instances = []
    for inst in CHAIN:
        made = client.call("layout.instantiate_block", block="BLK_OTA", device_id=inst,
                           cell_name=f"I_{inst}")
        assert made["bbox_um"] == block["bbox_um"] and len(made["pins"]) == len(OTA_PORTS)
        instances.append(made["cell"])
    rows = make_rows(client, "TOP", BIAS, instances)
    devices = route_items(BIAS) + [{"id": i, "type": "block", "terminals": t} for i, t in CHAIN.items()]
    client.call("route.nets", cell_name="TOP", rows=rows, devices=devices, nets=SUPPLIES)
    flat = [{"id": i, "type": t, **SIZE, "terminals": terms} for i, t, terms in BIAS]
    for inst, ports in CHAIN.items():
        flat += flat_devices(inst, OTA, ports)
    return flat


def test_ota_block_instanced_three_times(example: Client, tmp_path: Path) -> None:
    flat = chain_of_three(example)
    check_clean(example, "TOP", flat)
    metrics = example.call("layout.metrics", cell="TOP")
    assert metrics["device_area_um2"] > 0 and 0 < metrics["utilisation"] < 1
    (block,) = metrics["blocks"]
    assert block["cell"] == "BLK_OTA" and block["instances"] == 3
    assert block["devices"] == len(OTA)
    alone = example.call("layout.metrics", cell="BLK_OTA")
    assert block["bbox_area_um2"] == alone["bbox_area_um2"]
    assert block["device_area_um2"] == alone["device_area_um2"]
    assert abs(3 * block["device_area_um2"] - metrics["device_area_um2"]) < 0.5 * block["device_area_um2"]
    assert alone["blocks"] == []
    path = example.call("layout.export", cell="TOP", path=str(tmp_path / "top.gds"))["path"]
    written = kdb.Layout()
    written.read(path)
    blocks = [c for c in written.each_cell() if c.name == "BLK_OTA"]
    assert len(blocks) == 1
    refs = sum(1 for c in written.each_cell() for i in c.each_inst()
               if i.cell_index == blocks[0].cell_index())
    assert refs == 3


def test_two_levels_of_blocks(example: Client) -> None:
    """A block holding two OTA instances (a two-stage buffer), itself instanced twice."""
    ota_block(example)
    pair = {"X1": buffer_ports("inp", "mid", "vdd", "vss", "vbias"),
            "X2": buffer_ports("mid", "out", "vdd", "vss", "vbias")}
    cells = [example.call("layout.instantiate_block", block="BLK_OTA", device_id=i,
                          cell_name=f"PAIR_I_{i}")["cell"] for i in pair]
    rows = make_rows(example, "BLK_PAIR", [], cells)
    routed = example.call("route.nets", cell_name="BLK_PAIR", rows=rows,
                          devices=[{"id": i, "type": "block", "terminals": t} for i, t in pair.items()],
                          nets=SUPPLIES, ports=["inp", "out", "vbias", "vdd", "vss"])
    assert all(p["box_um"][1] == routed["bbox_um"][1] for p in routed["ports"])
    top = {"Y1": {"inp": "in", "out": "o1", "vbias": "vb", "vdd": "vdd", "vss": "gnd"},
           "Y2": {"inp": "o1", "out": "out", "vbias": "vb", "vdd": "vdd", "vss": "gnd"}}
    cells = [example.call("layout.instantiate_block", block="BLK_PAIR", device_id=i,
                          cell_name=f"I_{i}")["cell"] for i in top]
    rows = make_rows(example, "TOP", BIAS, cells)
    devices = route_items(BIAS) + [{"id": i, "type": "block", "terminals": t} for i, t in top.items()]
    example.call("route.nets", cell_name="TOP", rows=rows, devices=devices, nets=SUPPLIES)
    flat = [{"id": i, "type": t, **SIZE, "terminals": terms} for i, t, terms in BIAS]
    for outer, outer_ports in top.items():
        for inner, inner_ports in pair.items():
            ports = {k: outer_ports.get(n, f"{outer}/{n}") for k, n in inner_ports.items()}
            flat += flat_devices(f"{outer}/{inner}", OTA, ports)
    check_clean(example, "TOP", flat)
    placed = {b["cell"]: b["instances"] for b in example.call("layout.metrics", cell="TOP")["blocks"]}
    assert placed == {"BLK_OTA": 4, "BLK_PAIR": 2}


def test_a_narrow_block_has_room_for_its_ports(example: Client) -> None:
    """One transistor, four ports: the ports stand beyond the row, the trunks further out."""
    switch = [("M1", "nmos", {"d": "a", "g": "en", "s": "b", "b": "vss"})]
    rows = make_rows(example, "BLK_SW", switch)
    routed = example.call("route.nets", cell_name="BLK_SW", rows=rows, devices=route_items(switch),
                          ports=["a", "en", "b", "vss"])
    assert len(routed["ports"]) == 4
    chain = {"X1": {"a": "in", "en": "e1", "b": "mid", "vss": "gnd"},
             "X2": {"a": "mid", "en": "e2", "b": "out", "vss": "gnd"}}
    cells = [example.call("layout.instantiate_block", block="BLK_SW", device_id=i,
                          cell_name=f"I_{i}")["cell"] for i in chain]
    rows = make_rows(example, "TOP", [], cells)
    example.call("route.nets", cell_name="TOP", rows=rows,
                 devices=[{"id": i, "type": "block", "terminals": t} for i, t in chain.items()])
    flat = []
    for inst, ports in chain.items():
        flat += flat_devices(inst, switch, ports)
    check_clean(example, "TOP", flat)


@pytest.mark.parametrize("loose", ["nmos", "pmos"])
def test_blocks_beside_own_devices_in_one_row(example: Client, loose: str) -> None:
    """A parent row holding its own MOS devices between block instances: the tap rail runs
    under the own devices only, a pmos row's n-well leaves the blocks' wells alone."""
    ota_block(example)
    supply = "gnd" if loose == "nmos" else "vdd"
    own = [("MA", loose, {"d": "vb", "g": "vb", "s": supply, "b": supply}),
           ("MC", loose, {"d": "o1", "g": "vb", "s": supply, "b": supply})]
    pitch = example.call("route.info")["pitch_um"]
    cells = {i: example.call("layout.create_device", device_id=i, type=t, cell_name=f"TOP_{i}",
                             **SIZE)["cell_name"] for i, t, _terms in own}
    chain = {"X1": buffer_ports("in", "o1"), "X2": buffer_ports("o1", "out")}
    instances = [example.call("layout.instantiate_block", block="BLK_OTA", device_id=i,
                              cell_name=f"I_{i}")["cell"] for i in chain]
    example.call("layout.place", cell_name="MIXED",
                 rows=[{"cells": [cells["MA"], instances[0], cells["MC"], instances[1]], "gap": pitch}])
    devices = route_items(own) + [{"id": i, "type": "block", "terminals": t} for i, t in chain.items()]
    example.call("route.nets", cell_name="TOP", rows=["MIXED"], devices=devices, nets=SUPPLIES)
    flat = [{"id": i, "type": t, **SIZE, "terminals": terms} for i, t, terms in own]
    for inst, ports in chain.items():
        flat += flat_devices(inst, OTA, ports)
    check_clean(example, "TOP", flat)


def test_a_port_on_the_top_channel_still_escapes_down(example: Client) -> None:
    """A port net whose only pins are the pmos gates (top channel): its pin is the foot of
    its trunk, climbing past the block's middle, or stands under the net's verticals over
    the rows (where the track layer leaves them room); the parent still escapes it down."""
    latch = [("M1", "nmos", {"d": "a", "g": "b", "s": "vss", "b": "vss"}),
             ("M2", "nmos", {"d": "b", "g": "a", "s": "vss", "b": "vss"}),
             ("M3", "pmos", {"d": "a", "g": "en", "s": "vdd", "b": "vdd"}),
             ("M4", "pmos", {"d": "b", "g": "en", "s": "vdd", "b": "vdd"})]
    rows = make_rows(example, "BLK_L", latch)
    block = example.call("route.nets", cell_name="BLK_L", rows=rows, devices=route_items(latch),
                         ports=["en", "a", "vdd", "vss"])
    bottom, top = block["bbox_um"][1], block["bbox_um"][3]
    en = next(p["box_um"] for p in block["ports"] if p["net"] == "en")
    assert en[1] == bottom and (en[3] > (bottom + top) / 2 or block["verticals"]), (
        en, block["bbox_um"])
    chain = {i: {"en": "en", "a": f"{i}_a", "vdd": "vdd", "vss": "gnd"} for i in ("X1", "X2")}
    cells = [example.call("layout.instantiate_block", block="BLK_L", device_id=i,
                          cell_name=f"I_{i}")["cell"] for i in chain]
    rows = make_rows(example, "TOP", [], cells)
    example.call("route.nets", cell_name="TOP", rows=rows,
                 devices=[{"id": i, "type": "block", "terminals": t} for i, t in chain.items()])
    flat = []
    for inst, ports in chain.items():
        flat += flat_devices(inst, latch, ports)
    check_clean(example, "TOP", flat)


def test_bad_blocks_are_refused(client: Client) -> None:
    client.call("tech.load", rules=load_rule_set(EXAMPLES[-1]))
    rows = make_rows(client, "BLK_OTA", OTA)
    r = client.raw("route.nets", {"cell_name": "BLK_OTA", "rows": rows, "devices": route_items(OTA),
                                  "ports": ["inp", "nowhere"]})
    assert r["error"]["code"] == "INVALID_PARAM" and "nowhere" in r["error"]["message"], r
    r = client.raw("layout.instantiate_block", {"block": "NO_SUCH", "device_id": "X1",
                                                "cell_name": "I_X1"})
    assert r["error"]["code"] == "INVALID_PARAM" and "NO_SUCH" in r["error"]["message"], r
    r = client.raw("layout.instantiate_block", {"block": "BLK_OTA_M1", "device_id": "X1",
                                                "cell_name": "I_X1"})
    assert r["error"]["code"] == "INVALID_PARAM" and "not a block" in r["error"]["message"], r
    client.call("route.nets", cell_name="BLK_OTA", rows=rows, devices=route_items(OTA), ports=OTA_PORTS)
    made = client.call("layout.instantiate_block", block="BLK_OTA", device_id="X1", cell_name="I_X1")
    r = client.raw("layout.instantiate_block", {"block": made["cell"], "device_id": "X2",
                                                "cell_name": "I_X2"})
    assert r["error"]["details"]["reason"] == "not_a_block", r


def test_matched_pair_inside_blocks_is_measured(client: Client) -> None:
    """The OTA's input pair drawn as a common-centroid pair inside the block: LVS clean, and
    layout.metrics finds the groups by their flat ids (``X1/M1``) below the instances."""
    client.call("tech.load", rules=load_rule_set(EXAMPLES[-1]))
    pitch = client.call("route.info")["pitch_um"]
    spec = {"type": "nmos", **SIZE, "m": 2}
    pair = client.call("layout.create_common_centroid_pair", device_a={**spec, "device_id": "M1"},
                       device_b={**spec, "device_id": "M2"}, cell_name="OTA_pair")["cell_name"]
    cells = {d: client.call("layout.create_device", device_id=d, type=t, cell_name=f"OTA_{d}",
                            **SIZE)["cell_name"] for d, t, _terms in OTA[2:]}
    client.call("layout.place", cell_name="OTA_R0", rows=[{"cells": [pair, cells["M5"]], "gap": pitch}])
    client.call("layout.place", cell_name="OTA_R1", rows=[{"cells": [cells["M3"], cells["M4"]], "gap": pitch}])
    client.call("route.nets", cell_name="BLK_OTA", rows=["OTA_R0", "OTA_R1"], devices=route_items(OTA),
                ports=OTA_PORTS)
    chain = {"X1": buffer_ports("in", "o1"), "X2": buffer_ports("o1", "out")}
    instances = [client.call("layout.instantiate_block", block="BLK_OTA", device_id=i,
                             cell_name=f"I_{i}")["cell"] for i in chain]
    rows = make_rows(client, "TOP", BIAS, instances)
    client.call("route.nets", cell_name="TOP", rows=rows, devices=route_items(BIAS) + [
        {"id": i, "type": "block", "terminals": t} for i, t in chain.items()])
    flat = [{"id": i, "type": t, **SIZE, "terminals": terms} for i, t, terms in BIAS]
    for inst, ports in chain.items():
        flat += [{**d, "m": 2} if d["id"].endswith(("M1", "M2")) else d
                 for d in flat_devices(inst, OTA, ports)]
    check_clean(client, "TOP", flat)
    metrics = client.call("layout.metrics", cell="TOP", matched=[
        {"module": "dp", "devices": ["X1/M1", "X1/M2"]},
        {"module": "dp_ids", "devices": ["X2_M1", "X2_M2"]},  # as a planner writes ids
        {"module": "loads", "devices": ["X1/M3", "X2/M3"]},
        {"module": "nowhere", "devices": ["X9/M1", "MB"]}])
    assert len(metrics["groups"]) == 2, "the pair drawn once per instance"
    dp, dp_ids, loads, nowhere = metrics["matched_groups"]
    for pair in (dp, dp_ids):
        assert pair["structure"] == "common_centroid" and pair["missing"] == [], pair
        assert pair["units"] == 4 and pair["centroid_error_um"] < 0.01, pair
    assert dp["centroids_um"]["X1/M1"] != dp_ids["centroids_um"]["X2_M1"], "two instances"
    assert loads["missing"] == [] and loads["centroid_error_um"] > 1, loads
    assert nowhere["missing"] == ["X9/M1"], nowhere


@pytest.mark.signoff
@pytest.mark.parametrize(("pdk", "deck"), [("sky130", "decks/sky130/sky130A_mr.drc"),
                                           ("ihp_sg13g2", "decks/ihp_sg13g2/sg13g2_maximal.lydrc")])
def test_foundry_deck_on_the_hierarchical_layout(pdk: str, deck: str, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The three OTA instances' GDS (the block once) is clean under the foundry's deck."""
    path = foundry_deck(deck, monkeypatch)
    client = Client()
    client.call("tech.load", rules=load_rule_set(REPO_ROOT / "examples" / "pdk" / f"{pdk}.json"))
    chain_of_three(client)
    assert_top_deck_clean(client, path, tmp_path)
