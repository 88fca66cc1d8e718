"""A top cell routed with verticals or with trunks only, whichever is smaller (issue 26).

A top cell (no ports) whose channel plan joins nets by verticals over the rows is also
planned with trunk columns only; the smaller routed cell is kept.  Rows of nmos and pmos
devices with crossing nets: ``TWO_ROWS`` (SKY130, IHP SG13G2) and ``FOUR_ROWS`` (IHP): the
verticals stack their channels higher than the trunk columns widen the cell, so the trunks
come out (main kept the verticals: 256.3 -> 251.9, 395.0 -> 374.3, 897.8 -> 881.1 µm²);
``THREE_NETS`` (both): the verticals are smaller (425.0 against 435.6, 607.9 against 622.4
µm²) and stay.  ``FOUR_ROWS``' trunks plan has a metal-1 track (the second track layer)
whose net comes down into it at one x and up at another less than a pitch away: its track
via now sits on the up-going pin's via 1 (main drew the two via-1 cuts 10 nm apart).  Each case is routed three times with real KLayout: as is,
with the choice switched off (the verticals plan, as main draws it) and with no room for
verticals (the trunks plan); the bboxes are read from the exported GDS, DRC and LVS run on
the cell kept."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import klayout.db as kdb
import pytest
from helpers import Client, load_rule_set, rule_set_paths

import centroid_skills.routing.plan_choice as plan_choice
import centroid_skills.routing.router as router

Row = list[tuple[str, str, str, str, int]]  # per device: type, drain, gate, source nets, fingers

TWO_ROWS: list[Row] = [
    [("nmos", "n0", "n4", "n4", 2), ("nmos", "n2", "n6", "vss", 2), ("nmos", "n3", "n1", "n2", 1),
     ("nmos", "n2", "n5", "n2", 2), ("nmos", "n2", "n3", "n4", 1), ("nmos", "n1", "n4", "n2", 2)],
    [("pmos", "n0", "n6", "vdd", 2), ("pmos", "n6", "n1", "n2", 1), ("pmos", "n5", "n0", "n0", 2),
     ("pmos", "n4", "n6", "n0", 1), ("pmos", "n5", "n2", "vdd", 2), ("pmos", "n2", "n4", "n3", 2)],
]
FOUR_ROWS: list[Row] = [
    [("nmos", "n1", "n0", "n6", 2), ("nmos", "n6", "n2", "n0", 2), ("nmos", "n1", "n3", "n4", 2)],
    [("pmos", "n4", "n3", "n6", 1), ("pmos", "n1", "n1", "n1", 2), ("pmos", "n2", "n1", "n2", 2)],
    [("nmos", "n6", "n6", "n5", 2), ("nmos", "n6", "n3", "n2", 1), ("nmos", "n3", "n5", "n1", 2),
     ("nmos", "n4", "n4", "vss", 1)],
    [("pmos", "n3", "n0", "n2", 2), ("pmos", "n6", "n1", "n2", 2), ("pmos", "n5", "n4", "n0", 2),
     ("pmos", "n5", "n3", "n5", 2), ("pmos", "n0", "n1", "n1", 1), ("pmos", "n6", "n0", "n3", 1),
     ("pmos", "n5", "n4", "vdd", 2)],
]
THREE_NETS: list[Row] = [
    [("nmos", "n2", "n1", "n0", 2), ("nmos", "n0", "n0", "vss", 2), ("nmos", "n1", "n1", "n2", 1),
     ("nmos", "n2", "n1", "n2", 2), ("nmos", "n2", "n0", "n1", 2), ("nmos", "n1", "n1", "n2", 1),
     ("nmos", "n1", "n1", "n2", 1)],
    [("pmos", "n1", "n0", "n0", 1), ("pmos", "n2", "n1", "n0", 1), ("pmos", "n2", "n1", "vdd", 2),
     ("pmos", "n2", "n1", "vdd", 2)],
    [("nmos", "n0", "n0", "n1", 2), ("nmos", "n0", "n0", "n1", 1), ("nmos", "n1", "n2", "n1", 1),
     ("nmos", "n1", "n1", "n1", 2), ("nmos", "n2", "n1", "vss", 1), ("nmos", "n2", "n1", "n1", 2)],
    [("pmos", "n2", "n1", "n1", 1), ("pmos", "n2", "n0", "n2", 1), ("pmos", "n2", "n0", "vdd", 2),
     ("pmos", "n2", "n2", "n1", 1), ("pmos", "n0", "n0", "vdd", 1), ("pmos", "n1", "n0", "n2", 1)],
]
W, L = 2e-6, 0.5e-6
SUPPLIES = [{"name": "vss", "net_type": "ground"}, {"name": "vdd", "net_type": "power"}]
RULES = {p.stem: p for p in rule_set_paths()}

#: (rule set, rows, whether the trunks plan is the smaller)
CASES = [("sky130", TWO_ROWS, True), ("ihp_sg13g2", TWO_ROWS, True),
         ("ihp_sg13g2", FOUR_ROWS, True), ("sky130", THREE_NETS, False),
         ("ihp_sg13g2", THREE_NETS, False)]
IDS = ["sky130-two_rows", "ihp_sg13g2-two_rows", "ihp_sg13g2-four_rows", "sky130-three_nets",
       "ihp_sg13g2-three_nets"]


def devices(rows: list[Row]) -> list[list[dict[str, Any]]]:
    out = []
    for r, row in enumerate(rows):
        out.append([{"id": f"M{r}_{k}", "type": typ, "nf": nf,
                     "terminals": {"d": dn, "g": g, "s": s, "b": "vss" if typ == "nmos" else "vdd"}}
                    for k, (typ, dn, g, s, nf) in enumerate(row)])
    return out


def routed(rule_set: str, rows: list[Row], folder: Path, mode: str,
           monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The rows routed into TOP (``mode``: "choice" as the router does, "verticals" with the
    choice switched off, "trunks" with no room for verticals), its bbox area (nm², read from
    the exported GDS), the verticals and trunks reported, DRC total and LVS verdict."""
    by_row = devices(rows)
    flat = [dev for row in by_row for dev in row]
    with monkeypatch.context() as m:
        if mode == "verticals":
            m.setattr(plan_choice, "trunks_only", lambda *args: None)
        elif mode == "trunks":
            m.setattr(router, "row_gaps", lambda tech, layout, d, infos: [[] for _ in infos])
        client = Client()
        client.call("tech.load", rules=load_rule_set(RULES[rule_set]))
        pitch = client.call("route.info")["pitch_um"]
        names = []
        for r, row in enumerate(by_row):
            cells = [client.call("layout.create_device", device_id=dev["id"], type=dev["type"],
                                 cell_name=dev["id"], w=W, l=L, nf=dev["nf"])["cell_name"]
                     for dev in row]
            client.call("layout.place", cell_name=f"row{r}", rows=[{"cells": cells, "gap": pitch}])
            names.append(f"row{r}")
        res = client.call("route.nets", cell_name="TOP", rows=names, devices=flat, nets=SUPPLIES)
    drc = client.call("drc.run", cell="TOP")["total"]
    lvs = client.call("lvs.run", cell="TOP",
                      devices=[{**dev, "w": W, "l": L, "m": 1} for dev in flat])["match"]
    gds = client.call("layout.export", cell="TOP", path=str(folder / f"{mode}.gds"))["path"]
    layout = kdb.Layout()
    layout.read(gds)
    box = layout.top_cell().bbox()
    return {"area": box.width() * box.height(), "verticals": res["verticals"],
            "trunks": res["trunks"], "drc": drc, "lvs": lvs, "cells": layout.cells()}


@pytest.mark.parametrize(("rule_set", "rows", "trunks_smaller"), CASES, ids=IDS)
def test_top_cell_keeps_the_smaller_plan(rule_set: str, rows: list[Row], trunks_smaller: bool,
                                         tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    verticals = routed(rule_set, rows, tmp_path, "verticals", monkeypatch)
    trunks = routed(rule_set, rows, tmp_path, "trunks", monkeypatch)
    chosen = routed(rule_set, rows, tmp_path, "choice", monkeypatch)
    assert verticals["verticals"] > 0 and trunks["verticals"] == 0
    # the case still tells the two apart: the smaller plan is the one named
    assert (trunks["area"] < verticals["area"]) == trunks_smaller, (trunks, verticals)
    kept = trunks if trunks_smaller else verticals
    assert chosen["area"] == kept["area"] == min(trunks["area"], verticals["area"])
    assert (chosen["verticals"], chosen["trunks"]) == (kept["verticals"], kept["trunks"])
    assert chosen["cells"] == verticals["cells"]  # no scratch cell left behind
    assert chosen["drc"] == 0 and chosen["lvs"], chosen
