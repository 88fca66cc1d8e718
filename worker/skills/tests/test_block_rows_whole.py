"""A parent's rows of blocks packed with matched modules' rows kept whole (issue 26,
``route.nets`` ``pack_block_rows`` ``whole_rows``).

The parent holds the instances of one switch block as a planner draws three matched
modules of parallel copies — each module's members interleaved about their middle in rows
of its own (``WIDE``: two rows of eight, ``LEFT`` and ``RIGHT``: one row of four each) — and
four other instances in two rows of two, six rows in all.  Packed with the modules' rows
named whole, on every rule set: DRC and LVS clean; read back from the written GDS, each
module's rows stand one above the other in consecutive rows, their instances in the given
order, and every module's members' centroids meet (as in the given rows); the two one-row
modules share one row; fewer rows and a smaller bounding box than the given rows routed as
they are."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import klayout.db as kdb
import pytest
from helpers import RULE_SET_IDS, RULE_SET_PATHS, Client, load_rule_set
from test_blocks import SUPPLIES, check_clean, flat_devices, make_rows, route_items

SWITCH = [("M1", "nmos", {"d": "a", "g": "en", "s": "b", "b": "vss"})]
#: module -> its rows, each a sequence of members (a member: its copies' shared nets)
MODULES = {
    "WIDE": ["ABABABAB", "BABABABA"],
    "LEFT": ["CDDC"],
    "RIGHT": ["EFFE"],
}
LOOSE = 4


def member_ports(member: str) -> dict[str, str]:
    """Every copy of one member: the same gate and drain nets (parallel units)."""
    return {"a": f"d{member}", "en": f"g{member}", "b": "tail", "vss": "gnd"}



def switch_block(path: Path) -> tuple[Client, float]:
    """A client on the rule set at ``path`` with the switch block ``BLK_SW`` routed, and the
    routing pitch (µm)."""
    client = Client()
    client.call("tech.load", rules=load_rule_set(path))
    pitch = client.call("route.info")["pitch_um"]
    client.call("route.nets", cell_name="BLK_SW", rows=make_rows(client, "BLK_SW", SWITCH),
                devices=route_items(SWITCH), ports=["a", "en", "b", "vss"])
    return client, pitch


def whole_groups(rows: list[str], modules: dict[str, list[Any]]) -> list[list[str]]:
    """``rows`` (the modules' rows first, in order) cut into each module's group."""
    groups, at = [], 0
    for module_rows in modules.values():
        groups.append(rows[at:at + len(module_rows)])
        at += len(module_rows)
    return groups


def top_arguments(rows: list[str], terminals: dict[str, dict[str, str]], pitch: float,
                  whole_rows: list[list[str]] | None) -> dict[str, Any]:
    """``route.nets`` of TOP over ``rows`` of switch instances (``terminals`` by instance),
    packed with ``whole_rows`` kept whole when given."""
    arguments: dict[str, Any] = {
        "cell_name": "TOP", "rows": rows, "nets": SUPPLIES,
        "devices": [{"id": i, "type": "block", "terminals": t} for i, t in terminals.items()]}
    if whole_rows is not None:
        arguments["pack_block_rows"] = {"gap": pitch, "whole_rows": whole_rows}
    return arguments


def flat_switches(terminals: dict[str, dict[str, str]]) -> list[dict[str, Any]]:
    """The flat devices of the switch instances (``terminals`` by instance)."""
    return [d for inst, ports in terminals.items() for d in flat_devices(inst, SWITCH, ports)]

def parent(path: Path, whole: bool) -> tuple[Client, dict[str, Any], list[dict[str, Any]],
                                              dict[str, str]]:
    """The switch block, its instances in the modules' rows and the loose rows, routed into
    TOP (packed with the modules' rows whole with ``whole``, else as given); the route
    result, the flat devices and each instance's member."""
    client, pitch = switch_block(path)
    terminals: dict[str, dict[str, str]] = {}
    member_of: dict[str, str] = {}

    def instance(member: str) -> str:
        name = f"X{len(terminals)}"
        terminals[name] = member_ports(member) if member != "-" else \
            {"a": f"l{len(terminals)}", "en": "en", "b": "tail", "vss": "gnd"}
        member_of[f"I_{name}"] = member
        return client.call("layout.instantiate_block", block="BLK_SW", device_id=name,
                           cell_name=f"I_{name}")["cell"]

    given = [[instance(m) for m in row] for rows in MODULES.values() for row in rows]
    given += [[instance("-") for _ in range(LOOSE // 2)] for _ in range(2)]
    rows = []
    for r, cells in enumerate(given):
        client.call("layout.place", cell_name=f"TOP_ROW{r}", rows=[{"cells": cells, "gap": pitch}])
        rows.append(f"TOP_ROW{r}")
    routed = client.call("route.nets", **top_arguments(
        rows, terminals, pitch, whole_groups(rows, MODULES) if whole else None))
    flat = flat_switches(terminals)
    return client, routed, flat, member_of


def written_rows(client: Client, folder: Path) -> list[list[tuple[str, kdb.Box]]]:
    """TOP's rows read back from its GDS, bottom to top: each row's instances (cell name,
    box in top-cell coordinates), left to right."""
    path = client.call("layout.export", cell="TOP", path=str(folder / "top.gds"))["path"]
    layout = kdb.Layout()
    layout.read(path)
    rows = []
    for inst in layout.cell("TOP").each_inst():
        if "ROW" in inst.cell.name:
            boxes = [(child.cell.name, child.bbox().transformed(inst.trans))
                     for child in inst.cell.each_inst()]
            rows.append((inst.bbox().bottom, sorted(boxes, key=lambda b: b[1].left)))
    return [boxes for _bottom, boxes in sorted(rows, key=lambda row: row[0])]


def centroids(rows: list[list[tuple[str, kdb.Box]]], member_of: dict[str, str],
              members: str) -> dict[str, tuple[float, float]]:
    """Each member's centroid (nm) over the boxes of its copies."""
    found: dict[str, list[kdb.Point]] = {m: [] for m in members}
    for row in rows:
        for name, box in row:
            if member_of[name] in found:
                found[member_of[name]].append(box.center())
    return {m: (sum(p.x for p in ps) / len(ps), sum(p.y for p in ps) / len(ps))
            for m, ps in found.items()}


@pytest.mark.parametrize("path", RULE_SET_PATHS, ids=RULE_SET_IDS)
def test_matched_rows_stay_whole_while_short_rows_share(path: Path, tmp_path: Path) -> None:
    client, packed, flat, member_of = parent(path, whole=True)
    check_clean(client, "TOP", flat)
    given = parent(path, whole=False)[1]
    assert len(packed["rows"]) < len(given["rows"]) == 6, packed["rows"]
    area = packed["width_um"] * packed["height_um"]
    assert area < 0.95 * given["width_um"] * given["height_um"], (packed["bbox_um"], given["bbox_um"])

    rows = written_rows(client, tmp_path)
    assert sum(len(row) for row in rows) == 16 + 4 + 4 + LOOSE
    for module, module_rows in MODULES.items():
        members = set("".join(module_rows))
        # its rows: consecutive written rows, each the module's sequence in the given order
        at = [r for r, row in enumerate(rows) if any(member_of[n] in members for n, _b in row)]
        assert at == list(range(at[0], at[0] + len(module_rows))), (module, at)
        for r, sequence in zip(at, module_rows, strict=True):
            drawn = "".join(member_of[n] for n, _b in rows[r] if member_of[n] in members)
            assert drawn == sequence, (module, r, drawn)
        # its members' centroids meet (within a grid step of rounding)
        points = centroids(rows, member_of, "".join(sorted(members)))
        xs = [p[0] for p in points.values()]
        ys = [p[1] for p in points.values()]
        assert max(xs) - min(xs) <= 5 and max(ys) - min(ys) <= 5, (module, points)
    # the two one-row modules share a row
    shared = [row for row in rows if {member_of[n] for n, _b in row} >= set("CDEF")]
    assert len(shared) == 1, [[member_of[n] for n, _b in row] for row in rows]
