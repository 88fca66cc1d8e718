"""Shared diffusion in matched modules (``share_diffusion``): neighbouring units facing
the same net share one source/drain region — measured on the drawn geometry of every
rule set (and the rule sets scaled by 1.5): DRC clean, narrower than the same module
with rule gaps, the centroids still common, every device with the same orientation mix,
and one source/gate pin per connected strap for the router."""

from __future__ import annotations

from typing import Any

import pytest
from helpers import Client

from centroid_skills import shared_diffusion


def mirror_pair(client: Client, tag: str, nf: int, share: bool, arrangement: str = "ABBA") -> str:
    spec = {"type": "nmos", "w": 1e-6 * nf, "l": 0.5e-6, "nf": nf, "m": 2}
    data = client.call("layout.create_common_centroid_pair",
                       device_a={**spec, "device_id": f"A{tag}"},
                       device_b={**spec, "device_id": f"B{tag}"},
                       arrangement=arrangement, share_diffusion=share)
    return data["cell_name"]


def violations(client: Client, cell: str) -> list[tuple[str, int]]:
    data = client.call("drc.run", cell=cell)
    return [(r["id"], r["count"]) for r in data["violations"] if r["type"] != "density"]


def group(client: Client, cell: str) -> dict[str, Any]:
    (g,) = client.call("layout.metrics", cell=cell)["groups"]
    return g


def check_shared_pair(client: Client, nf: int) -> None:
    plain = mirror_pair(client, f"p{nf}", nf, share=False)
    shared = mirror_pair(client, f"s{nf}", nf, share=True)
    session = client.server.session
    rec = session.cells[shared]
    assert rec.params["shared_regions"] == 3, "ABBA of one mirror: every boundary shared"
    assert violations(client, shared) == []
    assert session.layout.cell(shared).bbox().width() < session.layout.cell(plain).bbox().width()
    g = group(client, shared)
    assert g["centroid_error"] == 0
    assert g["orientation_balance"] == 1.0
    assert g["score"] == group(client, plain)["score"]
    orientations = [u["orientation"] for u in rec.units]
    if nf % 2:  # odd fingers alternate so that S faces S and a drain faces itself
        assert orientations == ["M90", "R0", "M90", "R0"]
    else:
        assert set(orientations) == {"R0"}
    # the router gets one pin per connected strap: one source, one gate, a drain per piece
    offered = [(u["device_id"], p.name) for u in rec.units
               for p in session.cells[u["unit_cell"]].pins if p.name not in u.get("joined", ())]
    assert sum(name == "S" for _, name in offered) == 1
    assert sum(name == "G" for _, name in offered) == 1
    measured = client.call("layout.metrics", cell=shared,
                           matched=[{"module": shared, "devices": [f"As{nf}", f"Bs{nf}"]}])
    assert measured["max_centroid_error_um"] == 0


@pytest.mark.parametrize("nf", [1, 2])
def test_a_shared_mirror_is_clean_narrower_and_still_common_centroid(loaded: Client, nf: int) -> None:
    check_shared_pair(loaded, nf)


@pytest.mark.parametrize("nf", [1, 2])
def test_shared_diffusion_on_scaled_rules(client: Client, scaled_rules: dict[str, Any], nf: int) -> None:
    client.call("tech.load", rules=scaled_rules)
    check_shared_pair(client, nf)


def test_dummies_next_to_a_mirrored_end_unit_are_clean(loaded: Client) -> None:
    cell = mirror_pair(loaded, "d", 1, share=True)
    loaded.call("layout.add_dummies", cell=cell)
    assert violations(loaded, cell) == []
    assert group(loaded, cell)["dummy_coverage"] == 1.0


def test_abab_shares_nothing_it_cannot(loaded: Client) -> None:
    # A B A B with odd fingers: alternating orientation would give A only mirrored units
    # and B only plain ones, so the units stay plain and no drain faces a source
    cell = mirror_pair(loaded, "ab", 1, share=True, arrangement="ABAB")
    rec = loaded.server.session.cells[cell]
    assert {u["orientation"] for u in rec.units} == {"R0"}
    assert rec.params["shared_regions"] == 0
    assert violations(loaded, cell) == []


def test_orientations_keep_every_device_balanced() -> None:
    shape = shared_diffusion.UnitShape(fingers=1, active=(0, 700), region=280, gate=150, symmetric=True)
    assert shared_diffusion.orientations(shape, ["A", "B", "B", "A"]) == [True, False, True, False]
    assert shared_diffusion.orientations(shape, ["A", "B", "A", "B"]) == [False] * 4
    even = shared_diffusion.UnitShape(fingers=2, active=(0, 1130), region=280, gate=150, symmetric=True)
    assert shared_diffusion.orientations(even, ["A", "B", "B", "A"]) == [False] * 4
    lopsided = shared_diffusion.UnitShape(fingers=1, active=(0, 700), region=280, gate=150, symmetric=False)
    assert shared_diffusion.orientations(lopsided, ["A", "B", "B", "A"]) == [False] * 4
    assert shared_diffusion.terminals(shape, False, "A") == ("S", "D:A")
    assert shared_diffusion.terminals(shape, True, "A") == ("D:A", "S")
    assert shared_diffusion.terminals(even, False, "A") == ("S", "S")


@pytest.mark.parametrize(("nf", "arrangement", "m", "shared"),
                         [(2, "2D", 2, 2), (1, "2D", 4, 6), (1, "ABBA", 4, 7)])
def test_two_rows_and_longer_rows_of_pmos_with_dummies(loaded: Client, nf: int, arrangement: str,
                                                        m: int, shared: int) -> None:
    spec = {"type": "pmos", "w": 1e-6 * nf, "l": 0.5e-6, "nf": nf, "m": m}
    cell = loaded.call("layout.create_common_centroid_pair",
                       device_a={**spec, "device_id": "PA"}, device_b={**spec, "device_id": "PB"},
                       arrangement=arrangement, share_diffusion=True)["cell_name"]
    loaded.call("layout.add_dummies", cell=cell)
    assert loaded.server.session.cells[cell].params["shared_regions"] == shared
    assert violations(loaded, cell) == []
    g = group(loaded, cell)
    assert g["centroid_error"] == 0 and g["orientation_balance"] == 1.0


@pytest.mark.parametrize(("nf", "shared"), [(1, 0), (2, 4)])
def test_a_ratioed_mirror_shares_only_with_balanced_orientations(loaded: Client, nf: int,
                                                                  shared: int) -> None:
    # 1:4 as B B A B B: odd fingers would leave A mirrored and B plain, so those stay apart
    unit = {"type": "nmos", "w": 1e-6 * nf, "l": 0.5e-6, "nf": nf}
    cell = loaded.call("layout.create_interdigitated_group",
                       devices=[{**unit, "device_id": "REF", "units": 1},
                                {**unit, "device_id": "OUT", "units": 4}],
                       share_diffusion=True)["cell_name"]
    assert loaded.server.session.cells[cell].params["shared_regions"] == shared
    assert violations(loaded, cell) == []
    g = group(loaded, cell)
    assert g["centroid_error"] == 0 and g["orientation_balance"] == 1.0
