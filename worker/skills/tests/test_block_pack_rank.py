"""The parent's next-best packings of its rows of blocks (issue 26, ``route.nets``
``pack_block_rows`` ``rank``).

The parent of ``test_block_rows`` (an OTA block, nine switch blocks and a plate, folded by
count) routed with rank 0 (the packing with the smallest estimate: the same rows and bbox
as without a rank), rank 1 (the next distinct packing) and a rank past the last (the last
one): on SKY130 and IHP SG13G2, each DRC and LVS clean; read back from the written GDS,
rank 1's rows are not rank 0's (other instances share a row) and its bbox differs."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import REPO_ROOT
from test_block_rows import SWITCHES, parent, written_rows
from test_blocks import check_clean

PDK = REPO_ROOT / "examples" / "pdk"


def row_counts(rows: list) -> list[int]:
    """Instances per written row, bottom to top."""
    return [len(boxes) for _row, boxes in rows]


@pytest.mark.parametrize("path", [PDK / "sky130.json", PDK / "ihp_sg13g2.json"],
                         ids=["sky130", "ihp_sg13g2"])
def test_rank_one_is_another_packing_and_clean(path: Path, tmp_path: Path) -> None:
    first_client, first, flat = parent(path, pack=True, rank=0)
    check_clean(first_client, "TOP", flat)
    default = parent(path, pack=True)[1]
    assert first["bbox_um"] == default["bbox_um"] and len(first["rows"]) == len(default["rows"])

    second_client, second, flat = parent(path, pack=True, rank=1)
    check_clean(second_client, "TOP", flat)
    first_rows = written_rows(first_client, tmp_path / "first")
    second_rows = written_rows(second_client, tmp_path / "second")
    assert sum(row_counts(second_rows)) == sum(row_counts(first_rows)) == 2 + SWITCHES
    assert row_counts(second_rows) != row_counts(first_rows) or \
        [r for r, _b in second_rows] != [r for r, _b in first_rows], (first_rows, second_rows)
    assert second["bbox_um"] != first["bbox_um"], (first["bbox_um"], second["bbox_um"])

    last = parent(path, pack=True, rank=1000)[1]
    assert last["bbox_um"] != first["bbox_um"]
    assert last["bbox_um"] == parent(path, pack=True, rank=999)[1]["bbox_um"]
