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


# --- rule set 1.2.0: line ends, adjacent sides, areas, wide metal ------------------------------

NEW_RULES = [
    {"id": "X.end", "type": "enclosure", "layer": "Metal1", "layer2": "Cont",
     "end_min": 6e-8, "end_width": 3.4e-7},
    {"id": "X.adj", "type": "enclosure", "layer": "Metal1", "layer2": "Via1",
     "adjacent_min": 6e-8, "adjacent_below": 4e-8},
    {"id": "X.area", "type": "area", "layer": "Metal1", "min": 1.444e-13},
    {"id": "X.wide", "type": "spacing", "layer": "Metal2", "min": 6e-7, "width_over": 1e-5},
]
G = 0.005  # the toy grid (µm)


@pytest.fixture
def toy12(client: Client, toy_rules: dict[str, Any]) -> Client:
    rules = {**toy_rules, "schema_version": "1.2.0", "rules": toy_rules["rules"] + NEW_RULES}
    client.call("tech.load", rules=rules)
    return client


def line_with_end_contact(end: float) -> list[tuple[str, tuple[float, float, float, float]]]:
    """A metal-1 line 0.30 wide (a line: narrower than end_width 0.34) with a contact
    ``end`` below its top end and 0.04 from its sides."""
    return [("Metal1", (0, 0, 0.30, 2.0)), ("Cont", (0.04, 2.0 - end - 0.22, 0.26, 2.0 - end))]


@pytest.mark.parametrize("step", [G, 0.0])
def test_line_end_enclosure(toy12: Client, step: float) -> None:
    draw(toy12, "c", line_with_end_contact(0.06 - step))
    assert counts(toy12, "c", rules=["X.end"]) == ({"X.end": 1} if step else {})


def test_line_end_only_at_line_ends(toy12: Client) -> None:
    # the same contact at the end of a line 0.35 wide (not narrower than end_width), and in
    # the middle of a 0.30 line: no line end near it
    draw(toy12, "c", [("Metal1", (0, 0, 0.35, 2.0)), ("Cont", (0.065, 1.75, 0.285, 1.97)),
                      ("Metal1", (2, 0, 2.30, 2.0)), ("Cont", (2.04, 0.9, 2.26, 1.12))])
    assert counts(toy12, "c", rules=["X.end"]) == {}
    # a step (one convex, one concave corner) is not a line end: a contact 0.03 under the
    # step edge of a 0.30 line is fine; the narrower stub above it ends 0.13 away
    draw(toy12, "j", [("Metal1", (0, 0, 0.30, 1.9)), ("Metal1", (0, 1.9, 0.20, 2.0)),
                      ("Cont", (0.04, 1.65, 0.26, 1.87))])
    assert counts(toy12, "j", rules=["X.end"]) == {}
    # ... but the stub's own end is: a contact 0.03 under it is a violation
    draw(toy12, "k", [("Metal1", (0, 0, 0.30, 1.9)), ("Metal1", (0, 1.9, 0.20, 2.0)),
                      ("Cont", (0.0, 1.75, 0.22, 1.97))])
    assert counts(toy12, "k", rules=["X.end"]) == {"X.end": 1}


def via_in_pad(left: float, vertical: float) -> list[tuple[str, tuple[float, float, float, float]]]:
    """A 0.26 via1 in a metal-1 pad: ``left`` margin on the left and right, ``vertical``
    margin above and below."""
    return [("Via1", (0, 0, 0.26, 0.26)),
            ("Metal1", (-left, -vertical, 0.26 + left, 0.26 + vertical))]


@pytest.mark.parametrize("step", [G, 0.0])
def test_adjacent_enclosure(toy12: Client, step: float) -> None:
    # 0.035 < adjacent_below on the left and right: top and bottom need adjacent_min 0.06
    draw(toy12, "c", via_in_pad(0.035, 0.06 - step))
    assert counts(toy12, "c", rules=["X.adj"]) == ({"X.adj": 1} if step else {})


def test_adjacent_enclosure_corner_and_thick_sides(toy12: Client) -> None:
    # every side at adjacent_below: no side is thin, nothing is required
    draw(toy12, "a", via_in_pad(0.04, 0.04))
    assert counts(toy12, "a", rules=["X.adj"]) == {}
    # a via in a pad corner (two adjacent thin sides), next to a via that is fine
    draw(toy12, "b", [("Via1", (0, 0, 0.26, 0.26)), ("Metal1", (0, 0, 1.0, 1.0)),
                      ("Via1", (0.6, 0.6, 0.86, 0.86))])
    data = toy12.call("drc.run", cell="b", rules=["X.adj"])
    assert data["total"] == 1 and data["violations"][0]["markers_um"] == [[0.0, 0.0, 0.26, 0.26]]
    # a via sticking out of its pad on one side fails the adjacent rule on its own
    draw(toy12, "c", [("Via1", (0, 0, 0.26, 0.26)), ("Metal1", (0.01, -0.1, 0.5, 0.36))])
    assert counts(toy12, "c", rules=["X.adj"]) == {"X.adj": 1}


@pytest.mark.parametrize("step", [G, 0.0])
def test_min_area(toy12: Client, step: float) -> None:
    # 0.38 x 0.38 = 0.1444 µm², one grid step shorter: 0.1425 µm²
    draw(toy12, "c", [("Metal1", (0, 0, 0.38, 0.38 - step)), ("Metal1", (2, 0, 3, 3))])
    assert counts(toy12, "c", rules=["X.area"]) == ({"X.area": 1} if step else {})


@pytest.mark.parametrize("step", [G, 0.0])
def test_wide_metal_spacing(toy12: Client, step: float) -> None:
    # a 12 x 12 plate (wider than 10) with a 0.28 line 0.6 - step above it; two narrow lines
    # at the same distance are only held to the plain spacing
    draw(toy12, "c", [("Metal2", (0, 0, 12, 12)), ("Metal2", (0, 12.6 - step, 12, 12.88 - step)),
                      ("Metal2", (20, 0, 20.28, 12)), ("Metal2", (20.88 - step, 0, 21.16 - step, 12))])
    assert counts(toy12, "c", rules=["X.wide"]) == ({"X.wide": 1} if step else {})
    assert counts(toy12, "c", rules=["M2.b"]) == {}


def test_new_kinds_in_lyrdb(toy12: Client, tmp_path: Path) -> None:
    draw(toy12, "c", line_with_end_contact(0.055) + [("Metal1", (5, 0, 5.38, 0.375))])
    path = tmp_path / "n.lyrdb"
    data = toy12.call("drc.run", cell="c", rules=["X.end", "X.area"], report_path=str(path))
    assert {v["id"]: v["count"] for v in data["violations"]} == {"X.end": 1, "X.area": 1}
    end = next(v for v in data["violations"] if v["id"] == "X.end")
    assert (end["end_min"], end["end_width"]) == (6e-8, 3.4e-7)
    assert end["markers_um"] == [[0.04, 1.725, 0.26, 1.945]]  # the contact itself
    rdb = krdb.ReportDatabase("x")
    rdb.load(str(path))
    assert {c.name() for c in rdb.each_category()} == {"X.end", "X.area"}
    assert rdb.num_items() == 2
