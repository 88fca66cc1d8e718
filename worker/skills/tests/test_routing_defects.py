"""Regressions of defective candidates found by ``bench/sweep_defects.py`` (candidates the
search draws that short two nets or violate DRC), each cause drawn on its own on every rule
set and its 1.5x scaling, and judged by DRC and LVS."""

from __future__ import annotations

from typing import Any

import klayout.db as kdb
import pytest
from helpers import RULE_SET_IDS, RULE_SET_PATHS, Client, load_rule_set, scaled_rule_set
from rust_plans import min_gate_length_m

from centroid_skills.routing.terminals import collect_terms

RULE_SETS = [(p, 1.0) for p in RULE_SET_PATHS] + [(p, 1.5) for p in RULE_SET_PATHS]
RULE_SET_NAMES = RULE_SET_IDS + [f"{i}_x1.5" for i in RULE_SET_IDS]

# a differential pair on a tail current source (ALIGN's five-transistor OTA, lower row)
DIFF_PAIR_ROW = {
    "mn1": {"d": "tail", "g": "vbias", "s": "vss", "b": "vss"},
    "mn2": {"d": "von", "g": "vin", "s": "tail", "b": "vss"},
    "mn3": {"d": "vop", "g": "vip", "s": "tail", "b": "vss"},
}


def load(client: Client, path: Any, factor: float) -> dict[str, float]:
    """Loads the rule set (scaled by ``factor``); MOS sizes for it: a finger a few minimum
    lengths wide, the minimum gate length."""
    rules = load_rule_set(path)
    if factor != 1.0:
        rules = scaled_rule_set(rules, factor)
    client.call("tech.load", rules=rules)
    length = min_gate_length_m(rules)
    return {"finger_w": 8 * length, "l": length}


@pytest.mark.parametrize("nf", [1, 2, 5])
@pytest.mark.parametrize("dummies", [1, 2])
@pytest.mark.parametrize(("path", "factor"), RULE_SETS, ids=RULE_SET_NAMES)
def test_dummies_of_multi_finger_units_drop_onto_their_rail(path: Any, factor: float,
                                                            dummies: int, nf: int) -> None:
    """A dummy is one gate finger whatever its module's unit: the source bus it drops onto
    the row's rail is its own, not the unit's (a unit's bus reaches over the neighbouring
    unit, whose source on another net the rail bar then shorts to the rail: ``tail`` to
    ``vss`` on ALIGN's five-transistor OTA)."""
    client = Client()
    size = load(client, path, factor)
    w = size["finger_w"] * nf
    unit = {"type": "nmos", "w": w, "l": size["l"], "nf": nf, "m": 2}
    pair = client.call("layout.create_common_centroid_pair", device_a={**unit, "device_id": "mn2"},
                       device_b={**unit, "device_id": "mn3"}, arrangement="ABBA",
                       cell_name="dp")
    client.call("layout.add_dummies", cell=pair["cell_name"], count=dummies)
    client.call("layout.create_device", device_id="mn1", type="nmos", w=2 * w, l=size["l"],
                nf=2 * nf, cell_name="tailsrc")
    pitch = client.call("route.info")["pitch_um"]
    client.call("layout.place", cell_name="row", rows=[{"cells": ["dp", "tailsrc"], "gap": pitch}])

    session = client.server.session
    terms: list[Any] = []
    collect_terms(session, session.any_cell("row"), kdb.Trans(), terms)
    tied = [t for t in terms if t.device is None and t.pin == "TIE_S"]
    assert len(tied) == 2 * dummies
    for t in tied:
        assert t.block.contains(t.box.p1) and t.block.contains(t.box.p2), (t.box, t.block)

    devices = [{"id": d, "type": "nmos", "terminals": t} for d, t in DIFF_PAIR_ROW.items()]
    client.call("route.nets", cell_name="top", rows=["row"], devices=devices)
    drc = client.call("drc.run", cell="top")
    assert drc["total"] == 0, [(v["id"], v["count"], v["markers_um"][:2]) for v in drc["violations"]]
    # every device: two units' worth (mn2, mn3: m = 2 units; mn1 drawn as one)
    lvs = client.call("lvs.run", cell="top", devices=[
        {**d, "w": 2 * w, "l": size["l"], "nf": 2 * nf, "m": 1} for d in devices])
    assert lvs["match"], {k: v for k, v in lvs.items() if not k.endswith("_netlist")}
    assert lvs["dummies_removed"] == 2 * dummies
