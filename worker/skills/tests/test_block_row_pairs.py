"""Rows of blocks turned upside down in pairs share one channel (issue 26, :mod:`.row_pairs`).

A parent of four OTA block instances in two rows of two (unity buffers on a shared bias
and supplies), routed on every rule set, written to GDS and read back: the lower row's
instances are upside down (their ports at their top edge), the upper row's are not; the
parent's own routing lies between the two rows only — nothing below the lower row (the
channel each row of blocks needed before) and nothing above the upper one — so the cell is
no taller than the two rows and one channel; DRC and LVS clean.  A parent that is a block
itself (ports at its bottom edge) keeps its bottom row facing down into channel 0."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import klayout.db as kdb
import pytest
from helpers import RULE_SET_IDS, RULE_SET_PATHS, Client, load_rule_set
from test_blocks import OTA, SUPPLIES, buffer_ports, check_clean, flat_devices, ota_block

INSTANCES = {f"X{i}": buffer_ports(f"in{i}", f"out{i}", "vdd", "vss", "vb") for i in range(4)}


def parent(client: Client, rows_of: list[list[str]], ports: list[str] | None = None) -> dict[str, Any]:
    """The OTA block, one instance per id of ``rows_of`` in rows (bottom to top), routed
    into TOP (a block with ``ports`` when given)."""
    pitch = client.call("route.info")["pitch_um"]
    ota_block(client)
    rows = []
    for r, ids in enumerate(rows_of):
        cells = [client.call("layout.instantiate_block", block="BLK_OTA", device_id=i,
                             cell_name=f"I_{i}")["cell"] for i in ids]
        client.call("layout.place", cell_name=f"TOP_ROW{r}", rows=[{"cells": cells, "gap": pitch}])
        rows.append(f"TOP_ROW{r}")
    args: dict[str, Any] = {
        "cell_name": "TOP", "rows": rows, "nets": SUPPLIES,
        "devices": [{"id": i, "type": "block", "terminals": INSTANCES[i]}
                    for ids in rows_of for i in ids]}
    if ports:
        args["ports"] = ports
    return client.call("route.nets", **args)


def written(client: Client, folder: Path) -> tuple[kdb.Box, kdb.Box, list[tuple[kdb.Box, bool]]]:
    """TOP read back from its GDS: its bbox, the box of its own shapes (its routing,
    instances left out) and every block instance in it: its box and whether it stands
    upside down (its bottom edge, where the ports are, facing up)."""
    path = client.call("layout.export", cell="TOP", path=str(folder / "top.gds"))["path"]
    layout = kdb.Layout()
    layout.read(path)
    top = layout.cell("TOP")
    blocks: list[tuple[kdb.Box, bool]] = []

    def walk(cell: kdb.Cell, trans: kdb.Trans) -> None:
        for inst in cell.each_inst():
            at = trans * inst.trans
            if inst.cell.name == "BLK_OTA":
                blocks.append((inst.cell.bbox().transformed(at), (at * kdb.Vector(0, -1)).y > 0))
            else:
                walk(inst.cell, at)

    walk(top, kdb.Trans())
    own = kdb.Box()
    for li in layout.layer_indexes():
        for shape in top.shapes(li).each():
            if not shape.is_text():
                own = own + shape.bbox()
    return top.bbox(), own, sorted(blocks, key=lambda b: (b[0].bottom, b[0].left))


@pytest.mark.parametrize("path", RULE_SET_PATHS, ids=RULE_SET_IDS)
def test_two_rows_of_blocks_share_one_channel(path: Path, tmp_path: Path) -> None:
    client = Client()
    client.call("tech.load", rules=load_rule_set(path))
    parent(client, [["X0", "X1"], ["X2", "X3"]])
    bbox, routing, blocks = written(client, tmp_path)
    lower, upper = blocks[:2], blocks[2:]
    assert all(flipped for _b, flipped in lower) and not any(flipped for _b, flipped in upper)
    lower_top = max(b.top for b, _f in lower)
    upper_bottom = min(b.bottom for b, _f in upper)
    # the parent's routing lies in the one channel between the rows (its trunk columns
    # beside them), never below the lower row nor above the upper one
    assert routing.bottom >= min(b.bottom for b, _f in lower)
    assert routing.top <= max(b.top for b, _f in upper)
    assert bbox.height() == max(b.top for b, _f in upper) - min(b.bottom for b, _f in lower)
    assert routing.bottom < upper_bottom and routing.top > lower_top
    flat = [d for i, ports in INSTANCES.items() for d in flat_devices(i, OTA, ports)]
    check_clean(client, "TOP", flat)


def test_a_block_with_ports_keeps_its_bottom_row_facing_down(tmp_path: Path) -> None:
    """Three rows: row 0 escapes into channel 0 beside the cell's ports; rows 1 and 2 pair."""
    client = Client()
    client.call("tech.load", rules=load_rule_set(RULE_SET_PATHS[-1]))
    routed = parent(client, [["X0"], ["X1"], ["X2"]], ports=["vb", "vdd", "vss", "in0"])
    assert {p["net"] for p in routed["ports"]} == {"vb", "vdd", "vss", "in0"}
    _bbox, _routing, blocks = written(client, tmp_path)
    assert [flipped for _b, flipped in blocks] == [False, True, False]
    flat = [d for i in ("X0", "X1", "X2") for d in flat_devices(i, OTA, INSTANCES[i])]
    check_clean(client, "TOP", flat)
