"""Folded (serpentine) poly resistors on every rule set: a 10 kΩ-class resistor folds
into an even number of segments, close to square, DRC-clean, and LVS sees ONE resistor of
the drawn W and L; a short one (or ``segments=1``) stays today's straight bar."""

from __future__ import annotations

from typing import Any

import pytest
from helpers import Client, drc_total

TEN_K = 10e3


def ten_k_length(loaded: Client, w: float) -> float:
    """Bar length (m) of a 10 kΩ resistor ``w`` wide from the rule set's sheet resistance."""
    tech = loaded.server.session.tech
    assert tech is not None
    ldef = tech.layer_for("poly_res")
    sheet = (ldef.sheet_resistance if ldef else None) or tech.require("poly").sheet_resistance or 1.0
    return round(TEN_K / sheet * w, 8)


def min_width(loaded: Client) -> float:
    tech = loaded.server.session.tech
    assert tech is not None
    from centroid_skills.passives import resistor_frame

    return resistor_frame(tech, 10**6).min_w * 1e-9


def lvs_one(loaded: Client, cell: str, w: float, length: float) -> dict[str, Any]:
    return loaded.call("lvs.run", cell=cell, devices=[
        {"id": "R1", "type": "resistor", "w": w, "l": length, "terminals": {"p": "a", "n": "b"}}])


def aspect(d: dict[str, Any]) -> float:
    return max(d["width_um"], d["height_um"]) / min(d["width_um"], d["height_um"])


def pins_down(d: dict[str, Any]) -> bool:
    """Both terminals in the lower half of the cell (the router takes them down)."""
    mid = (d["bbox_um"][1] + d["bbox_um"][3]) / 2
    return all((p["box_um"][1] + p["box_um"][3]) / 2 <= mid for p in d["pins"].values())


def test_long_resistor_folds(loaded: Client) -> None:
    w = min_width(loaded)
    length = ten_k_length(loaded, w)
    bar = loaded.call("layout.create_device", device_id="R1", type="resistor", w=w, l=length,
                      segments=1, cell_name="bar")
    d = loaded.call("layout.create_device", device_id="R1", type="resistor", w=w, l=length,
                    cell_name="folded")
    n = d["params"]["segments"]
    assert n > 1 and n % 2 == 0, d["params"]
    assert aspect(d) <= 3, (d["bbox_um"], n)
    assert max(d["width_um"], d["height_um"]) < bar["width_um"] / 4  # no longer a row-long bar
    assert set(d["pins"]) == {"PLUS", "MINUS"} and pins_down(d), d["pins"]
    assert abs(d["params"]["l_um"] - length * 1e6) <= 0.001 * length * 1e6
    total, v = drc_total(loaded, d["cell_name"])
    assert total == 0, v
    res = lvs_one(loaded, d["cell_name"], w, length)
    assert res["match"], res
    assert res["devices_extracted"] == n and res["devices_after_combine"] == 1
    bad = lvs_one(loaded, d["cell_name"], w, length * 1.05)  # the folded L is compared
    assert not bad["match"]


@pytest.mark.parametrize("segments", [2, 4, 6])
def test_forced_segments(loaded: Client, segments: int) -> None:
    w, length = 1e-6, 40e-6
    d = loaded.call("layout.create_device", device_id="R1", type="resistor", w=w, l=length,
                    segments=segments)
    assert d["params"]["segments"] == segments and pins_down(d)
    total, v = drc_total(loaded, d["cell_name"])
    assert total == 0, (segments, v)
    res = lvs_one(loaded, d["cell_name"], w, length)
    assert res["match"], res


def test_short_and_forced_bar_stay_straight(loaded: Client) -> None:
    short = loaded.call("layout.create_device", type="resistor", w=1e-6, l=4e-6)
    assert short["params"]["segments"] == 1
    w = min_width(loaded)
    length = ten_k_length(loaded, w)
    bar = loaded.call("layout.create_device", device_id="R1", type="resistor", w=w, l=length, segments=1)
    assert bar["params"]["segments"] == 1
    # today's bar: as long as the body plus two heads, as high as one head
    assert bar["width_um"] > length * 1e6 > 10 * bar["height_um"]
    assert drc_total(loaded, bar["cell_name"])[0] == 0
    assert lvs_one(loaded, bar["cell_name"], w, length)["match"]


def test_odd_segments_rejected(loaded: Client) -> None:
    r = loaded.raw("layout.create_device", {"type": "resistor", "w": 1e-6, "l": 40e-6, "segments": 3})
    assert r["error"]["code"] == "INVALID_PARAM" and r["error"]["details"]["segments"] == 3
    r = loaded.raw("layout.create_device", {"type": "resistor", "w": 1e-6, "l": 2e-6, "segments": 200})
    assert r["error"]["code"] == "INVALID_PARAM"


def test_folded_resistor_has_no_dangling_joints(loaded: Client) -> None:
    """The bends between segments are nets of the extraction that combining leaves with no
    device: check.electrical must not report them as dangling wires (a lone device reports
    what a straight bar reports: its two unlabelled terminals and the substrate)."""
    bar = loaded.call("layout.create_device", device_id="R1", type="resistor", w=1e-6, l=40e-6, segments=1)
    d = loaded.call("layout.create_device", device_id="R2", type="resistor", w=1e-6, l=40e-6, segments=4)
    expected = loaded.call("check.electrical", cell=bar["cell_name"])["counts"]
    assert loaded.call("check.electrical", cell=d["cell_name"])["counts"] == expected


def test_folded_resistors_route_clean(loaded: Client) -> None:
    """A row of a folded 10 kΩ-class resistor, a folded one of 4 segments and a bar, in
    series: route.nets takes both terminals of each down; DRC clean, LVS three resistors."""
    w = min_width(loaded)
    sizes = {"R1": (w, ten_k_length(loaded, w), None), "R2": (1e-6, 40e-6, 4), "R3": (1e-6, 4e-6, None)}
    nets = {"R1": ("a", "b"), "R2": ("b", "c"), "R3": ("c", "d")}
    cells = []
    for dev, (dw, dl, seg) in sizes.items():
        extra = {} if seg is None else {"segments": seg}
        cells.append(loaded.call("layout.create_device", device_id=dev, type="resistor", w=dw, l=dl,
                                 cell_name=dev, **extra)["cell_name"])
    pitch = loaded.call("route.info")["pitch_um"]
    loaded.call("layout.place", cell_name="rrow", rows=[{"cells": cells, "gap": pitch}])
    loaded.call("route.nets", cell_name="rtop", rows=["rrow"], devices=[
        {"id": dev, "type": "resistor", "terminals": {"p": p, "n": n}} for dev, (p, n) in nets.items()])
    total, v = drc_total(loaded, "rtop")
    assert total == 0, v
    res = loaded.call("lvs.run", cell="rtop", devices=[
        {"id": dev, "type": "resistor", "w": sizes[dev][0], "l": sizes[dev][1],
         "terminals": {"p": p, "n": n}} for dev, (p, n) in nets.items()])
    assert res["match"], res


def test_count_that_misses_l_is_refused(loaded: Client) -> None:
    """Segments sit on the grid: a count whose total misses l by more than 0.1 % is refused."""
    grid = loaded.server.session.tech.grid_nm  # type: ignore[union-attr]
    length = (200 * grid + 3 * grid) * 1e-9  # 203 grid steps: 2 × 102 = 204 steps, +0.5 %
    r = loaded.raw("layout.create_device", {"type": "resistor", "w": 1e-6, "l": length, "segments": 2})
    assert r["error"]["code"] == "INVALID_PARAM" and "grid" in r["error"]["message"], r
