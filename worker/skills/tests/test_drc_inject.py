"""Inject one kind of violation at a time and check drc.run reports it (rule id + count)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import klayout.db as kdb
import klayout.rdb as krdb
import pytest
from helpers import Client


def draw(client: Client, cell_name: str, shapes: list[tuple[str, tuple[float, float, float, float]]]) -> None:
    session = client.server.session
    tech = session.tech
    assert tech is not None
    cell = session.layout.cell(cell_name) or session.layout.create_cell(cell_name)
    for layer, (x1, y1, x2, y2) in shapes:
        li = tech.layer_index(session.layout, layer)
        cell.shapes(li).insert(kdb.DBox(x1, y1, x2, y2).to_itype(session.layout.dbu))


def counts(client: Client, cell: str, **kw: Any) -> dict[str, int]:
    data = client.call("drc.run", cell=cell, **kw)
    return {v["id"]: v["count"] for v in data["violations"]}


@pytest.fixture
def toy(client: Client, toy_rules: dict[str, Any]) -> Client:
    client.call("tech.load", rules=toy_rules)
    return client


def test_clean_metal_is_clean(toy: Client) -> None:
    draw(toy, "c", [("Metal1", (0, 0, 1, 1)), ("Metal1", (1.5, 0, 2.5, 1))])
    assert counts(toy, "c") == {}


def test_width(toy: Client) -> None:
    draw(toy, "c", [("Metal1", (0, 0, 0.2, 2)), ("Metal1", (1, 0, 1.23, 2))])
    assert counts(toy, "c") == {"M1.a": 1}


def test_width_max_fixed_cut(toy: Client) -> None:
    # a 0.30 µm contact where the cut is fixed at 0.22: too wide; with metal and poly around it
    draw(toy, "c", [("Cont", (0, 0, 0.3, 0.3)), ("Metal1", (-0.1, -0.1, 0.4, 0.4)),
                    ("GatPoly", (-0.2, -0.2, 0.5, 0.5))])
    c = counts(toy, "c")
    assert c.get("Cnt.a") == 1
    assert "Cnt.g" not in c


def test_spacing(toy: Client) -> None:
    draw(toy, "c", [("Metal1", (0, 0, 1, 1)), ("Metal1", (1.1, 0, 2, 1)),
                    ("Metal1", (5, 0, 6, 1)), ("Metal1", (6.2, 0, 7, 1))])
    assert counts(toy, "c") == {"M1.b": 2}


def test_spacing_touching_shapes_merge(toy: Client) -> None:
    draw(toy, "c", [("Metal1", (0, 0, 1, 1)), ("Metal1", (1, 0, 2, 1))])
    assert counts(toy, "c", types=["spacing", "width"]) == {}


def test_spacing_to_layer2(toy: Client) -> None:
    # poly 0.05 µm from an active it does not overlap -> Gat.d; the crossing gate is not measured
    draw(toy, "c", [("Activ", (0, 0, 2, 1)), ("GatPoly", (2.05, 0, 2.3, 1)),
                    ("GatPoly", (0.8, -0.3, 1.0, 1.3))])
    assert counts(toy, "c", rules=["Gat.d"]) == {"Gat.d": 1}
    # touching (distance 0) is not overlapping: also a violation
    draw(toy, "t", [("Activ", (0, 0, 2, 1)), ("GatPoly", (2.0, 0, 2.3, 1))])
    assert counts(toy, "t", rules=["Gat.d"]) == {"Gat.d": 1}


def test_enclosure(toy: Client) -> None:
    draw(toy, "c", [
        ("Metal1", (0, 0, 0.3, 0.3)), ("Cont", (0.04, 0.04, 0.26, 0.26)),  # 0.04 margin: ok (>=0.005)
        ("Metal1", (2, 0, 2.3, 0.3)), ("Cont", (2.0, 0.04, 2.22, 0.26)),  # flush on one side
        ("Metal1", (4, 0, 4.3, 0.3)), ("Cont", (4.2, 0.04, 4.42, 0.26)),  # sticks out
        ("Cont", (6, 0, 6.22, 0.22)),  # contact not touching metal1: not checked by M1.c
    ])
    assert counts(toy, "c", rules=["M1.c"]) == {"M1.c": 2}


def test_extension(toy: Client) -> None:
    draw(toy, "c", [
        ("Activ", (0, 0, 1, 1)), ("GatPoly", (0.4, -0.3, 0.6, 1.3)),  # 0.3 both ends: ok
        ("Activ", (3, 0, 4, 1)), ("GatPoly", (3.4, -0.1, 3.6, 1.3)),  # 0.1 < 0.22 at the bottom
        ("Activ", (6, 0, 7, 1)), ("GatPoly", (6.4, 0.0, 6.6, 1.0)),  # flush at both ends
    ])
    assert counts(toy, "c", rules=["Gat.c"]) == {"Gat.c": 3}


def test_extension_flush_zero_length(toy: Client) -> None:
    # poly ends exactly on the active edge: a zero-length endcap
    draw(toy, "c", [("Activ", (0, 0, 1, 1)), ("GatPoly", (0.4, -0.3, 0.6, 1.0))])
    data = toy.call("drc.run", cell="c", rules=["Gat.c"])
    assert data["total"] == 1
    (marker,) = data["violations"][0]["markers_um"]
    assert marker == [0.4, 1.0, 0.6, 1.22]


def test_extension_source_drain(toy: Client) -> None:
    # active extends 0.1 past the gate on the right (< Gat.e 0.23)
    draw(toy, "c", [("Activ", (0, 0, 0.7, 1)), ("GatPoly", (0.4, -0.3, 0.6, 1.3))])
    assert counts(toy, "c", rules=["Gat.e"]) == {"Gat.e": 1}


def test_overlap(toy: Client) -> None:
    draw(toy, "c", [
        ("Cont", (0, 0, 0.22, 0.22)), ("Metal1", (-0.1, -0.1, 0.32, 0.32)),  # full: ok
        ("Cont", (2, 0, 2.22, 0.22)), ("Metal1", (2.1, -0.1, 2.6, 0.32)),  # 0.12 overlap
        ("Cont", (4, 0, 4.22, 0.22)), ("Metal1", (4.22, -0.1, 4.6, 0.32)),  # touching only
    ])
    assert counts(toy, "c", rules=["Cnt.g"]) == {"Cnt.g": 2}


def test_overlap_touching_contact_next_to_a_covered_one(toy: Client) -> None:
    # one metal over one contact (fine) and touching a second contact: the touching pair counts
    draw(toy, "c", [("Metal1", (0, 0, 1, 0.5)), ("Cont", (0.1, 0.1, 0.32, 0.32)),
                    ("Cont", (1.0, 0.1, 1.22, 0.32))])
    assert counts(toy, "c", rules=["Cnt.g"]) == {"Cnt.g": 1}


def test_density(toy: Client, tmp_path: Path) -> None:
    draw(toy, "c", [("Metal1", (0, 0, 10, 10)), ("Activ", (0, 0, 10.5, 10.5))])
    data = toy.call("drc.run", cell="c", rules=["M1.dens"], report_path=str(tmp_path / "d.lyrdb"))
    (v,) = data["violations"]
    assert v["id"] == "M1.dens" and v["count"] == 1 and v["value"] > 0.9
    rdb = krdb.ReportDatabase("x")
    rdb.load(str(tmp_path / "d.lyrdb"))
    assert rdb.num_items() == 1


def test_lyrdb_written(toy: Client, tmp_path: Path) -> None:
    draw(toy, "c", [("Metal1", (0, 0, 0.2, 2))])
    path = tmp_path / "r.lyrdb"
    data = toy.call("drc.run", cell="c", report_path=str(path), types=["width"])
    assert data["report_path"] == str(path) and path.exists()
    rdb = krdb.ReportDatabase("x")
    rdb.load(str(path))
    assert rdb.num_items() == 1
    cats = [c.name() for c in rdb.each_category()]
    assert "M1.a" in cats


def test_fail_on_violation_and_unknowns(toy: Client) -> None:
    draw(toy, "c", [("Metal1", (0, 0, 0.2, 2))])
    r = toy.raw("drc.run", {"cell": "c", "fail_on_violation": True})
    assert r["ok"] is False and r["error"]["code"] == "DRC_VIOLATION"
    r = toy.raw("drc.run", {"cell": "nope"})
    assert r["error"]["code"] == "NOT_FOUND"
    r = toy.raw("drc.run", {"cell": "c", "rules": ["X.y"]})
    assert r["error"]["code"] == "INVALID_PARAM"
