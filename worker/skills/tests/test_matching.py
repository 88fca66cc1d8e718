"""Matching metrics: ABBA has centroid error 0, AABB not, and the score ranks them."""

from __future__ import annotations

from typing import Any

from helpers import Client

from centroid_skills.skills.matching import interdigitate, pattern_rows


def pair(client: Client, arrangement: str, tag: str, m: int = 2) -> str:
    d = client.call("layout.create_common_centroid_pair",
                    device_a={"device_id": f"A{tag}", "type": "nmos", "w": 2e-6, "l": 0.5e-6, "nf": 2, "m": m},
                    device_b={"device_id": f"B{tag}", "type": "nmos", "w": 2e-6, "l": 0.5e-6, "nf": 2, "m": m},
                    arrangement=arrangement)
    return d["cell_name"]


def group_metrics(client: Client, cell: str) -> dict[str, Any]:
    data = client.call("layout.metrics", cell=cell)
    (g,) = data["groups"]
    return g


def test_abba_vs_aabb(loaded: Client) -> None:
    abba = group_metrics(loaded, pair(loaded, "ABBA", "1"))
    aabb = group_metrics(loaded, pair(loaded, "AABB", "2"))
    abab = group_metrics(loaded, pair(loaded, "ABAB", "3", m=2))
    cross = group_metrics(loaded, pair(loaded, "2D", "4"))
    assert abba["centroid_error"] == 0
    assert cross["centroid_error"] == 0
    assert aabb["centroid_error"] > 0.3
    assert 0 < abab["centroid_error"] < aabb["centroid_error"]
    assert abba["score"] > abab["score"] > aabb["score"]
    assert abba["orientation_uniformity"] == 1.0


def test_dummies_raise_the_score(loaded: Client) -> None:
    cell = pair(loaded, "ABBA", "1")
    before = group_metrics(loaded, cell)
    loaded.call("layout.add_dummies", cell=cell)
    after = group_metrics(loaded, cell)
    assert before["dummy_coverage"] == 0 and after["dummy_coverage"] == 1
    assert after["score"] > before["score"]
    assert after["centroid_error"] == 0  # dummies are not units


def test_a_dummy_is_one_finger_and_not_device_area(loaded: Client) -> None:
    cell = pair(loaded, "ABBA", "1")  # units of nf=2
    before = loaded.call("layout.metrics", cell=cell)
    added = loaded.call("layout.add_dummies", cell=cell)["dummies"]
    after = loaded.call("layout.metrics", cell=cell)
    session = loaded.server.session
    unit = session.cells[session.cells[cell].units[0]["unit_cell"]]
    for entry in added:
        dummy = session.cells[entry["unit_cell"]]
        assert dummy.params["fingers"] == 1 < unit.params["fingers"]
        assert dummy.params["finger_w_um"] == unit.params["finger_w_um"]
        assert dummy.params["l_um"] == unit.params["l_um"]
    # dummies cost the layout their area: utilisation counts the circuit's devices only
    assert after["device_area_um2"] == before["device_area_um2"]
    assert after["device_instances"] == before["device_instances"]
    assert after["dummy_instances"] == len(added) == 2 and after["dummy_area_um2"] > 0
    assert after["bbox_area_um2"] > before["bbox_area_um2"]
    assert after["utilisation"] < before["utilisation"]


def test_metrics_area_fields(loaded: Client) -> None:
    cell = pair(loaded, "ABBA", "1")
    data = loaded.call("layout.metrics", cell=cell)
    assert data["device_instances"] == 4
    assert 0 < data["utilisation"] <= 1
    assert data["bbox_area_um2"] >= data["device_area_um2"] > 0
    assert 0 < data["area_score"] < 1
    assert data["matching_score"] == data["groups"][0]["score"]


def test_metrics_through_hierarchy(loaded: Client) -> None:
    a = pair(loaded, "ABBA", "1")
    b = pair(loaded, "AABB", "2")
    loaded.call("layout.place", cell_name="top", rows=[{"cells": [a]}, {"cells": [b]}])
    data = loaded.call("layout.metrics", cell="top")
    scores = {g["module"]: g for g in data["groups"]}
    assert scores[a]["centroid_error"] == 0 and scores[b]["centroid_error"] > 0
    assert data["matching_score"] == scores[b]["score"]


def test_patterns() -> None:
    assert pattern_rows("ABBA", 2) == ["ABBA"]
    assert pattern_rows("ABBA", 4) == ["ABBAABBA"]
    assert pattern_rows("ABAB", 1) == ["AB"]
    assert pattern_rows("2D", 2) == ["AB", "BA"]
    assert pattern_rows("2D", 4) == ["ABBA", "BAAB"]
    assert pattern_rows("aabb", 2) == ["AABB"]
    row, off = interdigitate({"A": 1, "B": 2, "C": 4})
    assert "".join(row) == "CBCACBC" and off == []
    row, off = interdigitate({"A": 2, "B": 2})
    assert row == row[::-1]
    row, off = interdigitate({"A": 1, "B": 1, "C": 2})
    assert sorted(row) == ["A", "B", "C", "C"] and off == ["A", "B"]


def test_odd_unit_counts_are_judged_against_what_they_allow(loaded: Client) -> None:
    # one unit each: no arrangement shares a centroid; side by side is the best there is
    single = group_metrics(loaded, pair(loaded, "ABAB", "s", m=1))
    assert single["units"] == 2
    assert single["centroid_error"] > 0
    assert single["centroid_error_floor"] == single["centroid_error"]
    even = group_metrics(loaded, pair(loaded, "ABBA", "e", m=2))
    assert single["score"] == even["score"]  # same balance and dummies, no error beyond the floor
    # three units each: ABABAB leaves the centroids a whole pitch apart, the floor is a third
    three = group_metrics(loaded, pair(loaded, "ABAB", "t", m=3))
    assert three["centroid_error"] > three["centroid_error_floor"] > 0
    assert abs(three["centroid_error_floor"] * 3 - three["centroid_error"]) < 1e-3
    assert three["score"] < even["score"]
