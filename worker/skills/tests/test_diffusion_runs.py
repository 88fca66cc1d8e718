"""Series stacks on one diffusion (issue 26): ``layout.place`` given the row's devices puts
neighbours facing one net on one diffusion — read from the drawn geometry on every rule set:
fewer diffusion pieces, a narrower row than the same cells placed with rule gaps, DRC
clean and LVS clean once routed (also on the rule sets scaled by 1.5); a neighbour on another gate net keeps its gap.
Two-finger devices in series (three or more) are one diffusion drawn finger by finger
(:mod:`centroid_skills.series_stacks`), every inner node shared."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from helpers import Client

from centroid_skills import series_stacks, shared_diffusion
from centroid_skills.skills import lvs


def stack(tag: str, count: int, nf: int, gates: list[str] | None = None) -> list[dict[str, Any]]:
    """``count`` nmos in series from ``out`` down to ``gnd``, under one gate unless ``gates``."""
    nets = ["out"] + [f"i{k}" for k in range(1, count)] + ["gnd"]
    gates = gates or ["g"] * count
    return [{"id": f"{tag}M{k}", "type": "nmos", "w": 0.84e-6 * nf, "nf": nf, "m": 1,
             "terminals": {"d": nets[k], "g": gates[k], "s": nets[k + 1], "b": "gnd"}}
            for k in range(count)]


def _terminals(devices: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: d[k] for k in ("id", "type", "terminals")} for d in devices]


def _min_l(rule_set: dict[str, Any]) -> float:
    for rule in rule_set["rules"]:
        if rule.get("type") == "width" and rule.get("layer") == "poly":
            return float(rule["min"])
    return 0.15e-6


def place_row(client: Client, devices: list[dict[str, Any]], tag: str, share: bool,
              length: float) -> str:
    pitch = client.call("route.info")["pitch_um"]
    cells = [client.call("layout.create_device", device_id=d["id"], type="nmos", w=d["w"],
                         l=length, nf=d["nf"], cell_name=f"{tag}_{d['id']}")["cell_name"]
             for d in devices]
    extra = {"devices": _terminals(devices)} if share else {}
    client.call("layout.place", cell_name=f"{tag}_ROW", rows=[{"cells": cells, "gap": pitch}], **extra)
    return f"{tag}_ROW"


def diffusion_pieces(client: Client, cell: str) -> int:
    session = client.server.session
    tech = session.need_tech()
    active = tech.layer_for("active")
    assert active is not None
    region = tech.region(session.layout, session.layout.cell(cell), active.name)
    return len(list(region.merged().each()))


def width(client: Client, cell: str) -> int:
    return client.server.session.layout.cell(cell).bbox().width()


def routed_clean(client: Client, row: str, devices: list[dict[str, Any]], length: float) -> None:
    top = client.call("route.nets", cell_name=f"{row}_TOP", rows=[row], devices=_terminals(devices),
                      nets=[{"name": "gnd", "net_type": "ground"}])["cell_name"]
    drc = client.call("drc.run", cell=top)
    assert drc["total"] == 0, drc["violations"][:3]
    session = client.server.session
    drawn = {str(rec.params.get("device_id")): rec.params["l_um"] * 1e-6
             for rec in session.cells.values() if rec.kind == "nmos"}  # L on the rule set's grid
    lvs = client.call("lvs.run", cell=top, devices=[dict(d, l=drawn.get(d["id"], length))
                                                    for d in devices])
    assert lvs["match"], {k: lvs.get(k) for k in ("device_mismatches", "net_mismatches")}


@pytest.mark.parametrize("nf", [1, 2, 4])
def test_a_series_stack_shares_its_inner_regions(loaded: Client, rule_set: dict[str, Any],
                                                 nf: int) -> None:
    check_stack(loaded, _min_l(rule_set) * 2, nf)


def test_a_series_stack_on_scaled_rules(client: Client, scaled_rules: dict[str, Any]) -> None:
    client.call("tech.load", rules=scaled_rules)
    check_stack(client, 0.75e-6, 2)  # the renamed layers hide the poly width: 1.5 × 0.5 µm


def active_widths(client: Client, cell: str) -> list[int]:
    session = client.server.session
    tech = session.need_tech()
    active = tech.layer_for("active")
    assert active is not None
    region = tech.region(session.layout, session.layout.cell(cell), active.name)
    return sorted(p.bbox().width() for p in region.merged().each())


def check_stack(loaded: Client, length: float, nf: int) -> None:
    devices = stack(f"S{nf}", 4, nf)
    gapped = place_row(loaded, devices, f"G{nf}", False, length)
    shared = place_row(loaded, stack(f"S{nf}", 4, nf), f"H{nf}", True, length)
    assert diffusion_pieces(loaded, gapped) == 4
    session = loaded.server.session
    unit = session.cells[f"G{nf}_S{nf}M0"]
    shape = shared_diffusion.unit_shape(session, unit)
    assert shape is not None
    unit_active = shape.active[1] - shape.active[0]
    unit_width = session.layout.cell(unit.name).bbox().width()
    cells = [u["cell"] for u in loaded.call("layout.cell_info", cell=shared)["units"]]
    if nf <= 2:
        # one or two fingers each, drawn finger by finger: one diffusion, every inner node
        # shared, narrower than the two pairs sharing i1 and i3 (without even the gap between them)
        assert diffusion_pieces(loaded, shared) == 1
        assert [session.cells[c].kind for c in cells] == ["series_stack"]
        assert active_widths(loaded, shared) == [4 * unit_active - 3 * shape.region]
        assert width(loaded, shared) < 2 * (2 * unit_width - shape.region)
    else:
        # S G D G S G D G S units: pairs facing an inner node share it
        assert diffusion_pieces(loaded, shared) == 2
        assert [session.cells[c].kind for c in cells] == ["diffusion_run"] * 2
        assert [session.cells[c].params["net"] for c in cells] == ["i1", "i3"]
        for run in cells:  # a pair is two units' diffusion less the one region they share
            assert width(loaded, run) <= 2 * unit_width - shape.region
    assert width(loaded, shared) < width(loaded, gapped)
    drc = loaded.call("drc.run", cell=shared)
    assert drc["total"] == 0, drc["violations"][:3]
    routed_clean(loaded, shared, devices, length)


@pytest.mark.parametrize(("count", "nf"), [(3, 2), (5, 2), (8, 2), (5, 1)])
def test_a_longer_stack_is_one_diffusion(loaded: Client, rule_set: dict[str, Any], count: int,
                                         nf: int) -> None:
    """Three to eight devices of one or two fingers in series: one piece of diffusion of a
    gate pitch per finger, DRC clean, routed DRC and LVS clean."""
    length = _min_l(rule_set) * 2
    tag = f"L{count}{nf}"
    devices = stack(tag, count, nf)
    row = place_row(loaded, devices, tag, True, length)
    session = loaded.server.session
    shape = shared_diffusion.unit_shape(session, session.cells[f"{tag}_{tag}M0"])
    assert shape is not None
    fingers = nf * count
    assert active_widths(loaded, row) == [fingers * shape.gate + (fingers + 1) * shape.region]
    # the repeated regions of a node are strapped: the extracted fingers combine into one
    # device each, between the stack's count + 1 nodes (an open strap leaves more)
    extracted = lvs.extract(session, session.layout.cell(row))
    top = extracted.netlist.top_circuit()
    assert top is not None
    mos = list(top.each_device())
    assert len(mos) == count and {extracted.fingers[d.id()] for d in mos} == {nf}
    assert len({d.net_for_terminal(t).cluster_id for d in mos for t in "SD"}) == count + 1
    drc = loaded.call("drc.run", cell=row)
    assert drc["total"] == 0, drc["violations"][:3]
    routed_clean(loaded, row, devices, length)


def test_another_gate_net_keeps_the_gap(loaded: Client, rule_set: dict[str, Any]) -> None:
    length = _min_l(rule_set) * 2
    devices = stack("T", 2, 2, gates=["g1", "g2"])
    row = place_row(loaded, devices, "T", True, length)
    assert diffusion_pieces(loaded, row) == 2
    assert all(loaded.server.session.cells[u["cell"]].kind == "nmos"
               for u in loaded.call("layout.cell_info", cell=row)["units"])
    routed_clean(loaded, row, devices, length)


def test_a_source_on_the_bulk_net_keeps_the_gap(client: Client, toy_rules: dict[str, Any]) -> None:
    """Two devices on one gate whose sources are their bulk (a supply on the tap rail): not
    shared (it moved the routing of larger blocks for little)."""
    client.call("tech.load", rules=toy_rules)
    length = _min_l(toy_rules) * 2
    devices = [{"id": f"B{k}", "type": "nmos", "w": 1.68e-6, "nf": 2, "m": 1,
                "terminals": {"d": f"o{k}", "g": "g", "s": "gnd", "b": "gnd"}} for k in range(2)]
    row = place_row(client, devices, "BB", True, length)
    assert diffusion_pieces(client, row) == 2
    routed_clean(client, row, devices, length)


def test_drain_facing_drain_is_read_swapped(client: Client, toy_rules: dict[str, Any]) -> None:
    """Two devices sharing their drain net: the right one is drawn as it is, its pins read
    the other way round, so the router reaches each net once and LVS matches."""
    client.call("tech.load", rules=toy_rules)
    length = _min_l(toy_rules) * 2
    devices = [{"id": f"D{k}", "type": "nmos", "w": 1.68e-6, "nf": 2, "m": 1,
                "terminals": {"d": "out", "g": "g", "s": f"s{k}", "b": "gnd"}} for k in range(2)]
    row = place_row(client, devices, "DD", True, length)
    (run,) = [u["cell"] for u in client.call("layout.cell_info", cell=row)["units"]]
    rec = client.server.session.cells[run]
    assert [u["swapped"] for u in rec.units] == [True, True]
    assert diffusion_pieces(client, row) == 1
    routed_clean(client, row, devices, length)


@pytest.mark.parametrize("count", range(2, 11))
def test_the_walk_uses_each_device_twice_and_its_straps_nest(count: int) -> None:
    """Every gate of the walk lies between neighbouring nodes (one device), each device
    twice; a node's metal-1 bus spans only regions of nodes nested inside it, so no strap
    of another node crosses it at its level; the stack's ends are single regions."""
    regions = series_stacks.walk(count, 2)
    assert len(regions) == 2 * count + 1 and regions[0] == regions[-1]
    gates = [min(a, b) for a, b in itertools.pairwise(regions)]
    assert all(abs(a - b) == 1 for a, b in itertools.pairwise(regions))
    assert sorted(gates) == sorted(list(range(count)) * 2)
    assert regions.count(0) == regions.count(count) == 1
    for node in range(1, count):
        level = series_stacks.level(count, 2, node)
        assert level is not None
        at = [i for i, n in enumerate(regions) if n == node]
        for i in range(at[0] + 1, at[-1]):  # every strap under the bus ends above it
            other = series_stacks.level(count, 2, regions[i])
            assert regions[i] == node or other is None or other < level
