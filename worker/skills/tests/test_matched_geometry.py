"""Matched groups measured from the geometry (``layout.metrics`` ``matched``): checked
against gate centroids computed here from the flattened poly ∩ active of the layout."""

from __future__ import annotations

import math
from typing import Any

import klayout.db as kdb
import pytest
from helpers import Client

NMOS = {"type": "nmos", "w": 2e-6, "l": 0.5e-6, "nf": 2}


def gates(client: Client, cell_name: str) -> list[tuple[float, float, float]]:
    """(x µm, y µm, area) of every gate polygon of the flattened cell."""
    session = client.server.session
    tech = session.tech
    assert tech is not None
    layout = session.layout
    cell = layout.cell(cell_name)
    poly = kdb.Region(cell.begin_shapes_rec(tech.role_index(layout, "poly")))
    active = kdb.Region(cell.begin_shapes_rec(tech.role_index(layout, "active")))
    out = []
    for polygon in (poly & active).each_merged():
        centre = polygon.bbox().center()
        out.append((centre.x / 1000, centre.y / 1000, float(polygon.area())))
    return out


def centroid(points: list[tuple[float, float, float]]) -> tuple[float, float]:
    total = sum(a for _, _, a in points)
    return (sum(x * a for x, _, a in points) / total, sum(y * a for _, y, a in points) / total)


def measured(client: Client, cell: str, groups: list[dict[str, Any]]) -> dict[str, Any]:
    return client.call("layout.metrics", cell=cell, matched=groups)


def test_a_common_centroid_pair_has_no_error_wherever_it_is_placed(loaded: Client) -> None:
    pair = loaded.call("layout.create_common_centroid_pair", arrangement="ABBA",
                       device_a={"device_id": "A", **NMOS, "m": 2},
                       device_b={"device_id": "B", **NMOS, "m": 2})["cell_name"]
    loaded.call("layout.place", cell_name="TOP",
                items=[{"cell": pair, "x": 7.3, "y": -3.1, "orientation": "M90"}])
    data = measured(loaded, "TOP", [{"module": "dp", "devices": ["A", "B"]}])
    (group,) = data["matched_groups"]
    assert group["structure"] == "common_centroid"
    assert group["centroid_error_um"] < 1e-3
    assert group["units"] == 4 and group["missing"] == []
    # both devices sit on the centroid of all the gates, computed from the flattened layout
    cx, cy = centroid(gates(loaded, "TOP"))
    for device in ("A", "B"):
        x, y = group["centroids_um"][device]
        assert math.hypot(x - cx, y - cy) < 2e-3, (device, x, y, cx, cy)
    assert data["max_centroid_error_um"] == group["centroid_error_um"]


def test_aabb_is_off_by_what_the_gates_say(loaded: Client) -> None:
    pair = loaded.call("layout.create_common_centroid_pair", arrangement="AABB",
                       device_a={"device_id": "A", **NMOS, "m": 2},
                       device_b={"device_id": "B", **NMOS, "m": 2})["cell_name"]
    (group,) = measured(loaded, pair, [{"module": "dp", "devices": ["A", "B"]}])["matched_groups"]
    # one row A A B B: the left half of the gates is A's, the right half B's
    points = sorted(gates(loaded, pair))
    half = len(points) // 2
    (ax, ay), (bx, by) = centroid(points[:half]), centroid(points[half:])
    assert group["centroid_error_um"] > 0
    assert abs(group["centroid_error_um"] - math.hypot(ax - bx, ay - by)) < 2e-3
    assert abs(group["centroids_um"]["A"][0] - ax) < 2e-3


def test_loose_devices_are_measured_where_they_stand(loaded: Client) -> None:
    for device in ("L", "R"):
        loaded.call("layout.create_device", device_id=device, cell_name=f"dev_{device}", **NMOS)
    loaded.call("layout.place", cell_name="TOP",
                items=[{"cell": "dev_L", "x": 0, "y": 0}, {"cell": "dev_R", "x": 12, "y": 0}])
    data = measured(loaded, "TOP", [{"module": "cm", "devices": ["L", "R"]},
                                    {"module": "ghost", "devices": ["L", "nowhere"]}])
    loose, ghost = data["matched_groups"]
    assert loose["structure"] == "separate"
    assert abs(loose["centroid_error_um"] - 12.0) < 2e-3
    points = sorted(gates(loaded, "TOP"))
    half = len(points) // 2
    (lx, _), (rx, _) = centroid(points[:half]), centroid(points[half:])
    assert abs(loose["centroids_um"]["L"][0] - lx) < 2e-3
    assert abs(loose["centroids_um"]["R"][0] - rx) < 2e-3
    assert ghost["missing"] == ["nowhere"] and ghost["centroid_error_um"] == 0
    assert data["max_centroid_error_um"] == loose["centroid_error_um"]


def gds_gates(path: str, role_layers: list[tuple[int, int]]) -> list[tuple[float, float, float]]:
    """(x µm, y µm, area) of every gate polygon of the GDS's top cell, flattened."""
    layout = kdb.Layout()
    layout.read(path)
    (top,) = layout.top_cells()
    poly, active = (kdb.Region(top.begin_shapes_rec(layout.layer(*spec))) for spec in role_layers)
    return [(p.bbox().center().x * layout.dbu, p.bbox().center().y * layout.dbu, float(p.area()))
            for p in (poly & active).each_merged()]


def test_parallel_units_are_one_member_measured_together(loaded: Client, tmp_path: Any) -> None:
    # member A drawn as two parallel units either side of member B: one device whose
    # centroid is that of both units, on B's (a matched pair), not two devices 12 µm apart
    for device in ("A", "A_2", "B"):
        loaded.call("layout.create_device", device_id=device, cell_name=f"dev_{device}", **NMOS)
    loaded.call("layout.place", cell_name="TOP",
                items=[{"cell": "dev_A", "x": 0, "y": 0}, {"cell": "dev_B", "x": 12, "y": 0},
                       {"cell": "dev_A_2", "x": 24, "y": 0}])
    data = measured(loaded, "TOP", [
        {"module": "cm", "devices": ["A", "B"], "units": {"A": ["A_2"]}},
        {"module": "apart", "devices": ["A", "B"]}])
    together, apart = data["matched_groups"]
    tech = loaded.server.session.tech
    assert tech is not None
    layers = [(tech.layer_for(role).layer, tech.layer_for(role).datatype)
              for role in ("poly", "active")]
    gds = loaded.call("layout.export", cell="TOP", path=str(tmp_path / "top.gds"))["path"]
    points = sorted(gds_gates(gds, layers))
    third = len(points) // 3
    a = centroid(points[:third] + points[2 * third:])
    b = centroid(points[third:2 * third])
    assert together["units"] == 3 and together["missing"] == []
    assert math.hypot(together["centroids_um"]["A"][0] - a[0],
                      together["centroids_um"]["A"][1] - a[1]) < 2e-3
    assert abs(together["centroids_um"]["B"][0] - b[0]) < 2e-3
    assert together["centroid_error_um"] < 2e-3
    # without its units, A is the left device alone: 12 µm from B
    assert abs(apart["centroid_error_um"] - 12.0) < 2e-3
    assert data["max_centroid_error_um"] == apart["centroid_error_um"]


def test_a_member_that_is_a_stack_segment_is_measured_as_the_whole_stack(
        loaded: Client, tmp_path: Any) -> None:
    # the bottom segments A, B of two stacks drawn as one common-centroid pair (what a flat
    # layout draws), their top segments A_top, B_top standing apart either side: the
    # bottoms alone meet, the stacks do not
    pair = loaded.call("layout.create_common_centroid_pair", arrangement="ABBA",
                       device_a={"device_id": "A", **NMOS, "m": 2},
                       device_b={"device_id": "B", **NMOS, "m": 2})["cell_name"]
    for device in ("A_top", "B_top"):
        loaded.call("layout.create_device", device_id=device, cell_name=f"dev_{device}", **NMOS)
    loaded.call("layout.place", cell_name="TOP",
                items=[{"cell": "dev_A_top", "x": -20, "y": 0}, {"cell": pair, "x": 0, "y": 0},
                       {"cell": "dev_B_top", "x": 30, "y": 0}])
    data = measured(loaded, "TOP", [
        {"module": "mcs", "devices": ["A", "B"], "stacked": {"A": ["A_top"], "B": ["B_top"]}},
        {"module": "bottoms", "devices": ["A", "B"]}])
    stacks, bottoms = data["matched_groups"]
    tech = loaded.server.session.tech
    assert tech is not None
    layers = [(tech.layer_for(role).layer, tech.layer_for(role).datatype)
              for role in ("poly", "active")]
    gds = loaded.call("layout.export", cell="TOP", path=str(tmp_path / "top.gds"))["path"]
    points = sorted(gds_gates(gds, layers))
    # the leftmost device's gates are A_top's, the rightmost B_top's, the pair's between
    per_device = len(points) // 6  # A_top, B_top: one unit each; the pair: four
    a_top, b_top = points[:per_device], points[-per_device:]
    shared = points[per_device:-per_device]
    (cx, cy), half = centroid(shared), sum(p[2] for p in shared) / 2
    for member, top in (("A", a_top), ("B", b_top)):
        (tx, ty), area = centroid(top), sum(p[2] for p in top)
        expected = ((cx * half + tx * area) / (half + area), (cy * half + ty * area) / (half + area))
        x, y = stacks["centroids_um"][member]
        assert math.hypot(x - expected[0], y - expected[1]) < 2e-3, (member, x, y, expected)
    assert stacks["units"] == 6 and stacks["missing"] == []
    distance = math.dist(stacks["centroids_um"]["A"], stacks["centroids_um"]["B"])
    assert stacks["centroid_error_um"] > 10 and abs(stacks["centroid_error_um"] - distance) < 2e-3
    # the bottom segments alone sit on one centroid: what the flat layout was judged by
    assert bottoms["centroid_error_um"] < 2e-3
    assert data["max_centroid_error_um"] == stacks["centroid_error_um"]


def test_vias_are_counted_through_the_hierarchy(loaded: Client) -> None:
    tech = loaded.server.session.tech
    assert tech is not None
    if not tech.has("via1"):
        pytest.skip("the rule set has no via1")
    boxes = [{"role": "via1", "box": [10.0 * i, 0, 10.0 * i + 0.2, 0.2]} for i in range(3)]
    loaded.call("layout.add_shapes", cell="VIAS", create=True, shapes=boxes)
    loaded.call("layout.place", cell_name="TOP",
                items=[{"cell": "VIAS", "x": 0, "y": 0}, {"cell": "VIAS", "x": 0, "y": 5}],
                check_spacing=False)
    data = loaded.call("layout.metrics", cell="TOP")
    assert data["via_count"] == 6
    assert data["vias_by_layer"][tech.layer_for("via1").name] == 6
    assert data["matched_groups"] == [] and data["max_centroid_error_um"] is None


def test_a_group_of_one_device_is_refused(loaded: Client) -> None:
    loaded.call("layout.create_device", device_id="A", cell_name="dev_A", **NMOS)
    result = loaded.raw("layout.metrics", {"cell": "dev_A",
                                           "matched": [{"module": "m", "devices": ["A"]}]})
    assert not result["ok"]
    assert result["error"]["code"] == "INVALID_PARAM"
