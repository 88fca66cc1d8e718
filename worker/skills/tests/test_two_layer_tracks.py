"""Channels with tracks on two layers (issue 26): where the rule set has metal 3 (IHP SG13G2,
SKY130, and their 1.5x scaled variants), a level of a channel holds a metal-3 track and a
metal-1 track at one y, so a channel whose nets overlap needs fewer levels and is lower;
the layout stays DRC-clean (our checker) and LVS-matched.  A rule set that stops at metal 2
(toy180, GF180MCU) routes exactly as with one track layer.  Real KLayout; the track levels
and layers are read from the GDS."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import klayout.db as kdb
import pytest
from helpers import RULE_SET_IDS, RULE_SET_PATHS, Client, load_rule_set, scaled_rule_set

import centroid_skills.routing.router as router
from centroid_skills.routing.dims import routing_dims
from centroid_skills.tech import Technology

# one nmos row, every source and drain bus going down into channel 0 on three nets that
# all overlap there (and one gate net going up): one layer needs three track levels
DEVICES = [
    {"id": "M1", "type": "nmos", "terminals": {"d": "a", "g": "g", "s": "b", "b": "vss"}},
    {"id": "M2", "type": "nmos", "terminals": {"d": "b", "g": "g", "s": "c", "b": "vss"}},
    {"id": "M3", "type": "nmos", "terminals": {"d": "a", "g": "g", "s": "c", "b": "vss"}},
    {"id": "M4", "type": "nmos", "terminals": {"d": "c", "g": "g", "s": "b", "b": "vss"}},
]
SIZE = {"w": 2e-6, "l": 1e-6, "nf": 1}
NETS = ("a", "b", "c")


def routed(rules: dict[str, Any], folder: Path, one_layer: bool,
           monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The row routed (``one_layer``: with the second track layer switched off), its DRC
    total, LVS verdict, and per net its channel-0 track as found in the exported GDS: (layer
    role, y centre)."""
    with monkeypatch.context() as m:
        if one_layer:
            m.setattr(router, "routing_dims",
                      lambda tech: replace(routing_dims(tech), low_role=None))
        client = Client()
        client.call("tech.load", rules=rules)
        cells = [client.call("layout.create_device", device_id=d["id"], type=d["type"],
                             cell_name=d["id"], **SIZE)["cell_name"] for d in DEVICES]
        pitch = client.call("route.info")["pitch_um"]
        client.call("layout.place", cell_name="row", rows=[{"cells": cells, "gap": pitch}])
        r = client.call("route.nets", cell_name="TOP", rows=["row"], devices=DEVICES)
    drc = client.call("drc.run", cell="TOP")["total"]
    lvs = client.call("lvs.run", cell="TOP", devices=[{**d, **SIZE, "m": 1} for d in DEVICES])
    gds = client.call("layout.export", cell="TOP", path=str(folder / "top.gds"))["path"]
    tech = client.server.session.tech
    assert tech is not None
    return {"drc": drc, "lvs": lvs["match"], "channel": r["channels"][0],
            "tracks": tracks_in_gds(Path(gds), tech, r["channels"][0]),
            "height": kdb_height(Path(gds))}


def kdb_height(gds: Path) -> int:
    layout = kdb.Layout()
    layout.read(str(gds))
    return layout.top_cell().bbox().height()


def tracks_in_gds(gds: Path, tech: Technology, channel: dict[str, Any]) -> dict[str, tuple[str, int]]:
    """Per net of ``NETS``: the layer its channel-0 track is on (the report says which, and
    where) with the track's y centre, once the GDS is found to hold a horizontal bar of that
    layer spanning the track."""
    layout = kdb.Layout()
    layout.read(str(gds))
    top = layout.top_cell()
    out: dict[str, tuple[str, int]] = {}
    for net in NETS:
        t = channel["tracks_um"][net]
        x0, x1 = (round(v * 1000) for v in t["x"])
        y = round(t["y"] * 1000)
        ldef = tech.require(t["layer"])
        li = layout.find_layer(ldef.layer, ldef.datatype)
        assert li is not None, t
        bars = kdb.Region(top.begin_shapes_rec(li)).merged().interacting(
            kdb.Region(kdb.Box(x0, y - 1, x1, y + 1)))
        assert any(p.bbox().left <= x0 and p.bbox().right >= x1 for p in bars.each()), (net, t)
        out[net] = (t["layer"], y)
    return out


RULE_SETS = [(load_rule_set(p), i) for p, i in zip(RULE_SET_PATHS, RULE_SET_IDS, strict=True)]
RULE_SETS += [(scaled_rule_set(r, 1.5), f"{i}_x1.5") for r, i in list(RULE_SETS)]


@pytest.mark.parametrize("rules", [r for r, _i in RULE_SETS], ids=[i for _r, i in RULE_SETS])
def test_overlapping_nets_share_levels_on_two_layers(rules: dict[str, Any], tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    tech = Technology.from_rules(rules)
    two = tech.has("metal3") and tech.has("via2")
    (tmp_path / "one").mkdir()
    one = routed(rules, tmp_path / "one", True, monkeypatch)
    both = routed(rules, tmp_path, False, monkeypatch)
    for r in (one, both):
        assert r["drc"] == 0 and r["lvs"], (r["drc"], r["lvs"])
        assert set(r["tracks"]) == set(NETS), r["tracks"]
    one_levels = {y for _role, y in one["tracks"].values()}
    levels = {y for _role, y in both["tracks"].values()}
    layers = {role for role, _y in both["tracks"].values()}
    assert len(one_levels) == 3  # the three nets overlap: a level each on one layer
    if two:
        assert layers == {"metal1", "metal3"}, both["tracks"]
        assert len(levels) < len(one_levels)
        assert both["height"] < one["height"]
        assert {t["layer"] for t in both["channel"]["tracks_um"].values()} == layers
    else:  # no metal 3: the same layout as with one layer
        assert routing_dims(tech).low_role is None
        assert both["tracks"] == one["tracks"] and both["height"] == one["height"]
        assert layers == {"metal1"}
