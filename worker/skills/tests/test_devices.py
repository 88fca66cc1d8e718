"""Every device generator is DRC-clean on every rule set, at several sizes."""

from __future__ import annotations

from typing import Any

import pytest
from helpers import Client, drc_total

MOS_SIZES = [
    # (w, length, nf, m)
    (1e-6, 0.5e-6, 1, 1),
    (4e-6, 0.5e-6, 2, 1),
    (4e-6, 1e-6, 4, 1),
    (2e-6, 0.5e-6, 1, 2),
    (8e-6, 0.35e-6, 4, 2),
    (20e-6, 2e-6, 2, 1),
]


@pytest.mark.parametrize("mos_type", ["nmos", "pmos"])
def test_mos_clean(loaded: Client, mos_type: str) -> None:
    for w, length, nf, m in MOS_SIZES:
        d = loaded.call("layout.create_device", type=mos_type, w=w, l=length, nf=nf, m=m)
        total, v = drc_total(loaded, d["cell_name"])
        assert total == 0, (mos_type, w, length, nf, m, v)
        assert set(d["pins"]) == {"S", "D", "G"}
        assert d["params"]["fingers"] == nf * m
        assert abs(d["params"]["w_drawn_um"] - w * 1e6) <= 0.01 * nf
        x1, y1, x2, y2 = d["bbox_um"]
        for pin in d["pins"].values():
            px1, py1, px2, py2 = pin["box_um"]
            assert x1 <= px1 < px2 <= x2 and y1 <= py1 < py2 <= y2


@pytest.mark.parametrize("mos_type", ["nmos", "pmos"])
def test_mos_minimum_sizes_clean(loaded: Client, mos_type: str) -> None:
    tech = loaded.server.session.tech
    assert tech is not None
    from centroid_skills.rules import draw_rules

    r = draw_rules(tech)
    l_min = max(r.poly_w, tech.width("poly")) * 1e-9
    w_min = max(r.act_w, r.cont + 2 * r.act_ct) * 1e-9
    for nf in (1, 3):
        d = loaded.call("layout.create_device", type=mos_type, w=w_min * nf, l=l_min, nf=nf)
        total, v = drc_total(loaded, d["cell_name"])
        assert total == 0, (nf, v)


def test_mos_dummy_variant_clean(loaded: Client) -> None:
    d = loaded.call("layout.create_device", type="nmos", w=2e-6, l=0.5e-6, nf=2, dummy=True)
    assert set(d["pins"]) == {"TIE", "TIE_S"}  # gate strap, source bus: one net
    assert drc_total(loaded, d["cell_name"])[0] == 0


@pytest.mark.parametrize("size", [(1e-6, 5e-6), (0.5e-6, 2e-6), (2e-6, 20e-6)])
def test_resistor_clean(loaded: Client, size: tuple[float, float]) -> None:
    w, length = size
    d = loaded.call("layout.create_device", type="resistor", w=w, l=length)
    assert set(d["pins"]) == {"PLUS", "MINUS"}
    assert drc_total(loaded, d["cell_name"])[0] == 0


@pytest.mark.parametrize("size", [(5e-6, 5e-6), (2e-6, 10e-6), (20e-6, 20e-6)])
def test_capacitor_clean(loaded: Client, size: tuple[float, float]) -> None:
    w, length = size
    d = loaded.call("layout.create_device", type="capacitor", w=w, l=length)
    assert set(d["pins"]) == {"TOP", "BOT"}
    assert drc_total(loaded, d["cell_name"])[0] == 0


def test_too_small_is_invalid(loaded: Client) -> None:
    r = loaded.raw("layout.create_device", {"type": "nmos", "w": 1e-6, "l": 1e-9})
    assert r["error"]["code"] == "INVALID_PARAM" and "min_l_um" in r["error"]["details"]
    r = loaded.raw("layout.create_device", {"type": "nmos", "w": 2e-9, "l": 1e-6})
    assert r["error"]["code"] == "INVALID_PARAM"
    r = loaded.raw("layout.create_device", {"type": "nmos", "w": -1, "l": 1e-6})
    assert r["error"]["code"] == "INVALID_PARAM" and r["error"]["details"]["path"] == "$.w"


def test_no_tech_is_invalid(client: Client) -> None:
    r = client.raw("layout.create_device", {"type": "nmos", "w": 1e-6, "l": 1e-6})
    assert r["error"]["code"] == "INVALID_PARAM"


def test_every_coordinate_on_grid(loaded: Client) -> None:
    import klayout.db as kdb

    session = loaded.server.session
    tech = session.tech
    assert tech is not None
    d = loaded.call("layout.create_device", type="pmos", w=3e-6, l=0.5e-6, nf=3)
    cell = session.layout.cell(d["cell_name"])
    g = tech.grid_nm
    for li in session.layout.layer_indexes():
        for sh in kdb.RecursiveShapeIterator(session.layout, cell, li).each():
            for pt in sh.shape().polygon.transformed(sh.trans()).each_point_hull():
                assert pt.x % g == 0 and pt.y % g == 0


@pytest.mark.parametrize("size", [(5e-6, 5e-6), (3e-6, 12e-6)])
def test_mim_capacitor(loaded: Client, size: tuple[float, float]) -> None:
    w, length = size
    r = loaded.raw("layout.create_device", {"type": "capacitor", "w": w, "l": length, "cap_kind": "mim"})
    tech = loaded.server.session.tech
    assert tech is not None
    if not tech.has("mim"):
        assert r["error"]["code"] == "INVALID_PARAM"
        return
    d = r["data"]
    assert set(d["pins"]) == {"TOP", "BOT"} and d["params"]["vias"] >= 1
    assert drc_total(loaded, d["cell_name"]) == (0, [])


def test_mim_capacitor_scaled(client: Client, scaled_rules: dict[str, Any]) -> None:
    client.call("tech.load", rules=scaled_rules)
    if not client.server.session.tech.has("mim"):  # type: ignore[union-attr]
        pytest.skip("no mim layer in this rule set")
    d = client.call("layout.create_device", type="capacitor", w=9e-6, l=9e-6, cap_kind="mim")
    assert drc_total(client, d["cell_name"]) == (0, [])
