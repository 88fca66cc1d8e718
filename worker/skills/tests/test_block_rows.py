"""A parent's rows of blocks packed by the blocks' real sizes (issue 26, ``route.nets``
``pack_block_rows``).

The parent holds one OTA block (several rows of devices: tall and wide), nine
one-transistor switch blocks (a chain) and a capacitor plate of its own, folded the way a
planner that does not know their sizes folds them (by count: the OTA in a row with two
switches, the plate alone in a passive row).  Packed again, on every rule set: DRC and LVS
clean; read back from the written GDS, every row but the top one ends within one switch or
plate and one gap of the longest row (no row could take another of them); the
bounding box smaller than the folded rows' (the same instances routed without packing);
the same call gives the same rows; on SKY130 clean under the foundry's deck too.  A parent
of equal blocks in equal rows keeps the planner's rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import klayout.db as kdb
import pytest
from helpers import (
    REPO_ROOT,
    RULE_SET_IDS,
    RULE_SET_PATHS,
    Client,
    assert_top_deck_clean,
    foundry_deck,
    load_rule_set,
)
from test_blocks import OTA, SUPPLIES, check_clean, flat_devices, make_rows, ota_block, route_items

SWITCH = [("M1", "nmos", {"d": "a", "g": "en", "s": "b", "b": "vss"})]
SWITCHES = 9
PLATE = {"id": "CP", "type": "capacitor", "w": 4e-6, "l": 4e-6, "nf": 1, "m": 1,
         "terminals": {"p": "c5", "n": "gnd"}}


def parent(path: Path, pack: bool, rank: int | None = None
           ) -> tuple[Client, dict[str, Any], list[dict[str, Any]]]:
    """The OTA and switch blocks, their instances in rows folded by count, the parent routed
    into TOP (rows of blocks packed again with ``pack``, the packing of rank ``rank`` when
    given); the route result and the flat devices."""
    client = Client()
    client.call("tech.load", rules=load_rule_set(path))
    pitch = client.call("route.info")["pitch_um"]
    ota_block(client)
    client.call("route.nets", cell_name="BLK_SW", rows=make_rows(client, "BLK_SW", SWITCH),
                devices=route_items(SWITCH), ports=["a", "en", "b", "vss"])
    terminals = {"XO": {"inp": "in", "inn": "fb", "out": "c0", "vbias": "vb", "vdd": "vdd",
                        "vss": "gnd"}}
    cells = [client.call("layout.instantiate_block", block="BLK_OTA", device_id="XO",
                         cell_name="I_XO")["cell"]]
    for k in range(SWITCHES):
        terminals[f"XS{k}"] = {"a": f"c{k}", "en": "en", "b": f"c{k + 1}", "vss": "gnd"}
        cells.append(client.call("layout.instantiate_block", block="BLK_SW", device_id=f"XS{k}",
                                 cell_name=f"I_XS{k}")["cell"])
    plate = client.call("layout.create_device", device_id="CP", type="capacitor", w=PLATE["w"],
                        l=PLATE["l"], cell_name="TOP_CP")["cell_name"]
    rows = []
    for r, row in enumerate([[plate], cells[0:3], cells[3:6], cells[6:]]):  # by count, not size
        client.call("layout.place", cell_name=f"TOP_ROW{r}", rows=[{"cells": row, "gap": pitch}])
        rows.append(f"TOP_ROW{r}")
    arguments: dict[str, Any] = {
        "cell_name": "TOP", "rows": rows, "nets": SUPPLIES,
        "devices": [{"id": i, "type": "block", "terminals": t} for i, t in terminals.items()]
        + [{k: PLATE[k] for k in ("id", "type", "terminals")}]}
    if pack:
        arguments["pack_block_rows"] = {"gap": pitch} if rank is None else {"gap": pitch, "rank": rank}
    routed = client.call("route.nets", **arguments)
    flat: list[dict[str, Any]] = [PLATE]
    for inst, ports in terminals.items():
        flat += flat_devices(inst, OTA if inst == "XO" else SWITCH, ports)
    return client, routed, flat


def written_rows(client: Client, folder: Path) -> list[tuple[kdb.Box, list[kdb.Box]]]:
    """TOP's rows read back from its GDS, bottom to top: each row's box and its instances'
    boxes (top-cell coordinates)."""
    path = client.call("layout.export", cell="TOP", path=str(folder / "top.gds"))["path"]
    layout = kdb.Layout()
    layout.read(path)
    top = layout.cell("TOP")
    rows = []
    for inst in top.each_inst():
        if "ROW" in inst.cell.name:
            boxes = [child.bbox().transformed(inst.trans) for child in inst.cell.each_inst()]
            rows.append((inst.bbox(), sorted(boxes, key=lambda b: b.left)))
    return sorted(rows, key=lambda row: row[0].bottom)


@pytest.mark.parametrize("path", RULE_SET_PATHS, ids=RULE_SET_IDS)
def test_rows_of_blocks_of_different_sizes_end_together(path: Path, tmp_path: Path) -> None:
    client, packed, flat = parent(path, pack=True)
    check_clean(client, "TOP", flat)
    _folded_client, folded, _flat = parent(path, pack=False)
    assert folded["rows"] == ["TOP_ROW0", "TOP_ROW1", "TOP_ROW2", "TOP_ROW3"]
    assert packed["rows"] != folded["rows"]
    area = packed["width_um"] * packed["height_um"]
    assert area < 0.95 * folded["width_um"] * folded["height_um"], (packed["bbox_um"], folded["bbox_um"])

    rows = written_rows(client, tmp_path)
    assert sum(len(boxes) for _row, boxes in rows) == 2 + SWITCHES
    widths = [client.call("layout.metrics", cell=cell)["bbox_um"] for cell in ("BLK_SW", "TOP_CP")]
    narrow = max(round((box[2] - box[0]) * 1000) for box in widths)
    gaps = [b.left - a.right for _row, boxes in rows for a, b in zip(boxes, boxes[1:], strict=False)]
    assert gaps and min(gaps) > 0
    longest = max(row.width() for row, _boxes in rows)
    for row, boxes in rows[:-1]:
        # no row but the top one could take one more switch or the plate
        assert longest - row.width() < narrow + max(gaps), (row, longest, boxes)

    again = parent(path, pack=True)[1]
    assert again["rows"] == packed["rows"] and again["bbox_um"] == packed["bbox_um"]


def test_equal_blocks_in_equal_rows_keep_the_planners_rows() -> None:
    client = Client()
    client.call("tech.load", rules=load_rule_set(RULE_SET_PATHS[0]))
    pitch = client.call("route.info")["pitch_um"]
    client.call("route.nets", cell_name="BLK_SW", rows=make_rows(client, "BLK_SW", SWITCH),
                devices=route_items(SWITCH), ports=["a", "en", "b", "vss"])
    terminals = {f"XS{k}": {"a": f"c{k}", "en": "en", "b": f"c{k + 1}", "vss": "gnd"}
                 for k in range(6)}
    cells = [client.call("layout.instantiate_block", block="BLK_SW", device_id=i,
                         cell_name=f"I_{i}")["cell"] for i in terminals]
    rows = []
    for r in range(2):
        client.call("layout.place", cell_name=f"TOP_ROW{r}",
                    rows=[{"cells": cells[3 * r:3 * r + 3], "gap": pitch}])
        rows.append(f"TOP_ROW{r}")
    routed = client.call("route.nets", cell_name="TOP", rows=rows, nets=SUPPLIES,
                         devices=[{"id": i, "type": "block", "terminals": t}
                                  for i, t in terminals.items()],
                         pack_block_rows={"gap": pitch})
    assert routed["rows"] == rows


@pytest.mark.signoff
def test_packed_rows_pass_the_foundry_deck(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The packed parent's GDS is clean under SKY130's own deck."""
    deck = foundry_deck("decks/sky130/sky130A_mr.drc", monkeypatch)
    client, routed, _flat = parent(REPO_ROOT / "examples" / "pdk" / "sky130.json", pack=True)
    assert routed["rows"] != ["TOP_ROW0", "TOP_ROW1", "TOP_ROW2", "TOP_ROW3"]
    assert_top_deck_clean(client, deck, tmp_path)
