"""A short row of a matched module's tile flanking another shelf (issue 26, ``route.nets``
``pack_block_rows`` ``whole_rows``; test_vga's current mirror: one device of two copies in a
row of its own under its four partners).

The parent holds the instances of one switch block as a planner draws two matched modules:
``MIRROR`` in two rows — one member of two parallel copies (``XM.m1``, ``XM.m2``, the names
a netlist's ``m=2`` gives) alone in the bottom row, its partners interleaved in a row of
eight above — and ``BANK``, one row of four.  Packed with the modules' rows named whole, on
SKY130, IHP SG13G2 and GF180: DRC and LVS clean; read back from the written GDS, two rows
instead of three: the mirror's copies stand at both ends of the bank's row, directly under
the partners' row, and every member's x centroid is where it was (on the parent's axis);
the bounding box smaller than the given rows routed as they are; SKY130's foundry deck
clean.  A row whose halves hold different devices (one copy each of two devices) is never
cut: its centroids would move."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import REPO_ROOT, Client, assert_top_deck_clean, foundry_deck
from test_block_rows_whole import (
    centroids,
    flat_switches,
    member_ports,
    switch_block,
    top_arguments,
    whole_groups,
    written_rows,
)
from test_blocks import check_clean

from centroid_skills.routing.block_packing import Item, _halves

PDK = REPO_ROOT / "examples" / "pdk"
PDKS = ["sky130", "ihp_sg13g2", "gf180mcu"]
#: module -> its rows (bottom to top), each a sequence of members; ``M``: two copies of one
#: device alone in its row
MODULES = {"MIRROR": ["MM", "ABCDDCBA"], "BANK": ["EFFE"]}


def parent(path: Path, whole: bool) -> tuple[Client, dict[str, Any], list[dict[str, Any]],
                                              dict[str, str]]:
    """The switch block and its instances in the modules' rows, routed into TOP (packed with
    the modules' rows whole with ``whole``, else as given); the route result, the flat
    devices and each instance's member."""
    client, pitch = switch_block(path)
    terminals: dict[str, dict[str, str]] = {}
    member_of: dict[str, str] = {}
    copies: dict[str, int] = {}

    def instance(member: str) -> str:
        copies[member] = copies.get(member, 0) + 1
        device = f"X{member}.m{copies[member]}"  # a netlist's parallel copies
        terminals[device] = member_ports(member)
        cell = f"I_X{member}_m{copies[member]}"
        member_of[cell] = member
        return client.call("layout.instantiate_block", block="BLK_SW", device_id=device,
                           cell_name=cell)["cell"]

    rows = []
    for module_rows in MODULES.values():
        for sequence in module_rows:
            cells = [instance(m) for m in sequence]
            rows.append(f"TOP_ROW{len(rows)}")
            client.call("layout.place", cell_name=rows[-1], rows=[{"cells": cells, "gap": pitch}])
    routed = client.call("route.nets", **top_arguments(
        rows, terminals, pitch, whole_groups(rows, MODULES) if whole else None))
    flat = flat_switches(terminals)
    return client, routed, flat, member_of


@pytest.mark.parametrize("path", [PDK / f"{name}.json" for name in PDKS], ids=PDKS)
def test_short_row_of_a_tile_flanks_another_shelf(path: Path, tmp_path: Path) -> None:
    client, packed, flat, member_of = parent(path, whole=True)
    check_clean(client, "TOP", flat)
    given_client, given, _flat, _members = parent(path, whole=False)
    assert len(given["rows"]) == 3 and len(packed["rows"]) == 2, packed["rows"]
    area = packed["width_um"] * packed["height_um"]
    assert area < 0.9 * given["width_um"] * given["height_um"], (packed["bbox_um"], given["bbox_um"])

    rows = written_rows(client, tmp_path / "packed")
    drawn = ["".join(member_of[n] for n, _b in row) for row in rows]
    # the mirror's copies at both ends of the bank's row, the partners' row right above
    assert drawn == ["MEFFEM", "ABCDDCBA"], drawn
    # every member's x centroid where the given rows had it (the parent's axis)
    before = centroids(written_rows(given_client, tmp_path / "given"), member_of, "MABCDEF")
    after = centroids(rows, member_of, "MABCDEF")
    axis = before["A"][0]
    for member in "MABCD":
        assert abs(before[member][0] - axis) <= 5 and abs(after[member][0] - after["A"][0]) <= 5, \
            (member, before, after)


def test_packed_flank_passes_the_foundry_deck(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    deck = foundry_deck("decks/sky130/sky130A_mr.drc", monkeypatch)
    client, packed, _flat, _members = parent(PDK / "sky130.json", whole=True)
    assert len(packed["rows"]) == 2
    assert_top_deck_clean(client, deck, tmp_path)


def item(name: str, device: str) -> Item:
    return Item(name, "BLK", 1000, 1000, 0, device)


def test_only_rows_whose_halves_hold_the_same_devices_are_cut() -> None:
    assert _halves([item("a", "XM"), item("b", "XM")]) is not None
    assert _halves([item("a", "XA"), item("b", "XB"), item("c", "XB"), item("d", "XA")]) is not None
    assert _halves([item("a", "XA"), item("b", "XB")]) is None  # two devices: both would move
    assert _halves([item("a", "XA"), item("b", "XA"), item("c", "XB"), item("d", "XB")]) is None
    assert _halves([item("a", "XM"), item("b", "XM"), item("c", "XM")]) is None  # odd
