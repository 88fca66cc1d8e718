"""Matched arrays of any size (``layout.create_interdigitated_group``): 32 units of two or
four devices drawn as a 2-D common-centroid grid, exported, read back from the GDS, and
every device's centroid computed from its gate shapes (poly ∩ active) — within one grid
step of the array's centroid — and DRC clean with our checker, on SKY130 and GF180."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import klayout.db as kdb
import pytest
from helpers import REPO_ROOT, Client, drc_total, load_rule_set

from centroid_skills.matched_array import arrange, grid_shape

PDKS = ["sky130", "gf180mcu"]


def gds_gates(client: Client, gds: Path, cell_name: str) -> list[tuple[float, float, float]]:
    """(x nm, y nm, area) of every gate of ``cell_name`` in the GDS file (flattened)."""
    tech = client.server.session.tech
    assert tech is not None
    layout = kdb.Layout()
    layout.read(str(gds))
    cell = layout.cell(cell_name)
    assert cell is not None, f"{cell_name} is not in {gds}"
    scale = layout.dbu * 1000  # database units → nm

    def region(role: str) -> kdb.Region:
        ldef = tech.layer_for(role)
        assert ldef is not None, role
        return kdb.Region(cell.begin_shapes_rec(layout.layer(ldef.layer, ldef.datatype)))

    out = []
    for polygon in (region("poly") & region("active")).each_merged():
        centre = polygon.bbox().center()
        out.append((centre.x * scale, centre.y * scale, float(polygon.area())))
    return out


def device_centroids(units: list[dict[str, Any]], gates: list[tuple[float, float, float]],
                     pitch_nm: tuple[float, float]) -> dict[str, tuple[float, float]]:
    """Each device's area-weighted gate centroid: a gate belongs to the unit whose centre
    is within half a pitch of it (the unit positions come from the skill's result)."""
    sums: dict[str, list[float]] = {}
    claimed = 0
    for x, y, area in gates:
        owner = [u for u in units if abs(u["x_um"] * 1000 - x) < pitch_nm[0] / 2
                 and abs(u["y_um"] * 1000 - y) < pitch_nm[1] / 2]
        assert len(owner) == 1, (x, y, owner)
        claimed += 1
        acc = sums.setdefault(owner[0]["device_id"], [0.0, 0.0, 0.0])
        acc[0] += x * area
        acc[1] += y * area
        acc[2] += area
    assert claimed == len(gates)
    return {d: (sx / a, sy / a) for d, (sx, sy, a) in sums.items()}


@pytest.mark.parametrize("pdk", PDKS)
@pytest.mark.parametrize(("devices", "units"), [(2, 16), (4, 8)])
def test_a_32_unit_array_is_common_centroid_in_2d_and_clean(pdk: str, devices: int, units: int,
                                                             tmp_path: Path) -> None:
    rules = load_rule_set(REPO_ROOT / "examples" / "pdk" / f"{pdk}.json")
    grid_nm = float(rules["grid"]) * 1e9
    client = Client()
    client.call("tech.load", rules=rules)
    specs = [{"device_id": f"M{i}", "type": "nmos", "w": 1e-6, "l": 0.5e-6, "nf": 1, "units": units}
             for i in range(devices)]
    one_row = client.call("layout.create_interdigitated_group", devices=specs, cell_name="one_row")
    assert "/" not in one_row["pattern"] and one_row["not_centred"] == []  # the default: one row
    g = client.call("layout.create_interdigitated_group", devices=specs, share_diffusion=True,
                    rows="auto")
    rows = g["pattern"].split("/")
    assert len(rows) > 1, f"32 units in one row: {g['pattern']}"
    assert g["not_centred"] == []
    assert sum(row.count(letter) for row in rows for letter in "ABCD") == devices * units
    rec = client.server.session.cells[g["cell_name"]]
    pitch = (rec.params["pitch_x_um"] * 1000, rec.params["pitch_y_um"] * 1000)
    width, height = len(rows[0]) * pitch[0], len(rows) * pitch[1]
    assert max(width, height) / min(width, height) < 2.5, f"not square: {width} × {height} nm"
    assert drc_total(client, g["cell_name"]) == (0, [])

    gds = tmp_path / "array.gds"
    client.call("layout.export", cell=g["cell_name"], path=str(gds))
    gates = gds_gates(client, gds, g["cell_name"])
    assert len(gates) == devices * units
    total = sum(a for _, _, a in gates)
    cx = sum(x * a for x, _, a in gates) / total
    cy = sum(y * a for _, y, a in gates) / total
    centroids = device_centroids(g["units"], gates, pitch)
    assert sorted(centroids) == [s["device_id"] for s in specs]
    for device, (x, y) in centroids.items():
        assert math.hypot(x - cx, y - cy) <= grid_nm, (device, x - cx, y - cy, grid_nm)


def test_one_row_stays_one_row_and_explicit_rows_are_honoured() -> None:
    assert grid_shape(7, 1500, 2500, None) == (1, 7)
    assert grid_shape(32, 1500, 2500, 1) == (1, 32)
    assert grid_shape(32, 1500, 2500, 4) == (4, 8)
    (row,), off = arrange({"A": 1, "B": 2, "C": 4}, 1, 7)
    assert "".join(k or "." for k in row) == "CBCACBC" and off == []


@pytest.mark.parametrize("counts", [{"A": 16, "B": 16}, {"A": 8, "B": 8, "C": 8, "D": 8},
                                    {"A": 5, "B": 6, "C": 7}, {"A": 2, "B": 40},
                                    {f"D{i}": 1 for i in range(33)}])
@pytest.mark.parametrize("rows", [2, 3, 4, 5])
def test_every_even_count_is_centred_exactly_on_the_grid(counts: dict[str, int], rows: int) -> None:
    total = sum(counts.values())
    shape = grid_shape(total, 1, 1, rows)
    grid, off = arrange(counts, *shape)
    placed = [(r, c, d) for r, row in enumerate(grid) for c, d in enumerate(row) if d is not None]
    assert len(placed) == total
    centre = ((shape[0] - 1) / 2, (shape[1] - 1) / 2)
    for device, count in counts.items():
        mine = [(r, c) for r, c, d in placed if d == device]
        assert len(mine) == count
        at = (sum(r for r, _ in mine) / count, sum(c for _, c in mine) / count)
        if device not in off:
            assert at == centre, (device, at, centre)
    if all(c % 2 == 0 for c in counts.values()) and (shape[0] * shape[1] - total) % 2 == 0:
        assert off == []
    for row in grid:  # spare slots only at the ends of a row
        keys = "".join("." if k is None else "x" for k in row)
        assert "." not in keys.strip("."), keys


def test_a_70_device_group_is_drawn_and_measured(loaded: Client) -> None:
    """More devices than a matched group once took (16 drawn, 64 measured): 70 devices of
    two units each, as a 2-D grid, DRC clean, every device on the centroid (layout.metrics
    measures the gates where they stand)."""
    specs = [{"device_id": f"D{i}", "type": "nmos", "w": 1e-6, "l": 0.5e-6, "units": 2}
             for i in range(70)]
    g = loaded.call("layout.create_interdigitated_group", devices=specs, rows="auto")
    assert g["pattern"].count("/") > 0 and g["not_centred"] == []
    assert drc_total(loaded, g["cell_name"])[0] == 0
    ids = [s["device_id"] for s in specs]
    data = loaded.call("layout.metrics", cell=g["cell_name"], matched=[{"module": "big", "devices": ids}])
    (group,) = data["matched_groups"]
    assert group["missing"] == [] and group["units"] == 140
    grid_um = loaded.server.session.need_tech().grid_nm / 1000
    assert group["centroid_error_um"] <= grid_um, group["centroid_error_um"]
