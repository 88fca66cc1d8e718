"""The channel block of ``examples/blocks/amp_array_64`` takes fewer trunk columns (issue 26).

The planner's block (the steps of ``centroid plan`` for the example, sizes from the rule
set): a five-transistor OTA with its enable switch and tail source, an output follower with
its sink, an inverter for the enable and a pull-down; nmos rows folded in two by the router.
On main the channel below row 0 found no spacing for its stubs coming down: the ports
standing under their verticals (fixed x) and a drain pin's stub whose range spans two of
them, which the deadline order put after both (``channels.assign_x``); every plan with
verticals failed there and the block fell back to a metal-2 column for every net in two
channels.  Now the stubs' order is searched: fewer columns beside the rows, read from the
written GDS, and the block routed twice in a parent is DRC and LVS clean on every rule set."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import klayout.db as kdb
import pytest
from block_fixture import exported_block, routed_block, two_instances_clean
from helpers import RULE_SET_IDS, RULE_SET_PATHS, Client, known_gap, load_rule_set
from rust_plans import min_gate_length_m

from centroid_skills.routing.channels import Stub, assign_x
from centroid_skills.routing.dims import routing_dims
from centroid_skills.routing.terminals import Term

PORTS = ["inp", "inn", "out", "nbias", "en", "vdd", "vss"]
TERMS = {
    "M1": ("nmos", {"d": "d1", "g": "inp", "s": "tail", "b": "vss"}),
    "M2": ("nmos", {"d": "d2", "g": "inn", "s": "tail", "b": "vss"}),
    "M3": ("pmos", {"d": "d1", "g": "d1", "s": "vdd", "b": "vdd"}),
    "M4": ("pmos", {"d": "d2", "g": "d1", "s": "vdd", "b": "vdd"}),
    "ME": ("nmos", {"d": "tail", "g": "en", "s": "ts", "b": "vss"}),
    "MT": ("nmos", {"d": "ts", "g": "nbias", "s": "vss", "b": "vss"}),
    "MF": ("nmos", {"d": "vdd", "g": "d2", "s": "out", "b": "vss"}),
    "MS": ("nmos", {"d": "out", "g": "nbias", "s": "vss", "b": "vss"}),
    "MI1": ("pmos", {"d": "enb", "g": "en", "s": "vdd", "b": "vdd"}),
    "MI2": ("nmos", {"d": "enb", "g": "en", "s": "vss", "b": "vss"}),
    "MD": ("nmos", {"d": "out", "g": "enb", "s": "vss", "b": "vss"}),
}
#: the planner's nmos row, left to right (the pair stands between ME and MF)
NMOS_ROW = ["MD", "MI2", "MS", "MT", "ME", "dp", "MF"]


def sizes(rules: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The example's sizes (SKY130 µm: pair 4/0.5 in two fingers, mirror 2/1, switches at the
    minimum length), every gate at least the process's minimum length."""
    l_min = min_gate_length_m(rules)

    def size(w: float, length: float, nf: int, m: int = 1) -> dict[str, Any]:
        return {"w": w, "l": max(length, l_min), "nf": nf, "m": m}

    short = size(2e-6, l_min, 2)
    return {"M1": size(2e-6, 0.5e-6, 1, 2), "M2": size(2e-6, 0.5e-6, 1, 2),
            "M3": size(1e-6, 1e-6, 1, 2), "M4": size(1e-6, 1e-6, 1, 2),
            "ME": short, "MT": size(2e-6, 1e-6, 2), "MF": size(4e-6, 0.5e-6, 2),
            "MS": size(2e-6, 1e-6, 2), "MI1": size(1e-6, l_min, 1),
            "MI2": size(0.5e-6, l_min, 1), "MD": size(0.5e-6, l_min, 1)}


def channel_block(client: Client, size: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The planner's channel block, routed with its rows folded."""
    return routed_block(client, TERMS, size, [NMOS_ROW, ["MI1", "cm"]], PORTS)


def columns_beside_rows(client: Client, folder: Path) -> int:
    """Metal-2 shapes of the block standing wholly beside its rows and reaching over at least
    two of them (the trunk columns), read back from the written GDS."""
    tech = client.server.session.need_tech()
    layout, cell = exported_block(client, folder)
    rows = [i.bbox() for i in cell.each_inst()]
    left, right = min(b.left for b in rows), max(b.right for b in rows)
    m2 = tech.require("metal2")
    li = layout.find_layer(m2.layer, m2.datatype)
    count = 0
    for poly in kdb.Region(cell.shapes(li)).merged().each():
        bb = poly.bbox()
        beside = bb.right <= left or bb.left >= right
        if beside and sum(bb.bottom <= r.center().y <= bb.top for r in rows) >= 2:
            count += 1
    return count


def test_a_wide_stub_stands_before_fixed_ones() -> None:
    """Two ports fixed under their verticals a pitch apart and a stub whose range ends under
    the second: the deadline order puts it after both (no room); searched, it stands before
    the first."""
    term = Term(None, "x", "metal2", kdb.Box(), kdb.Box(), None)

    def stub(net: str, lo: int, hi: int, pref: int) -> Stub:
        return Stub(net, term, 0, "down", lo, hi, pref, through=lo == hi)

    stubs = [stub("a", 460, 460, 460), stub("b", 920, 920, 920), stub("c", -1000, 930, 700)]
    assert not assign_x(stubs, 460, _Grid())  # type: ignore[arg-type]
    assert assign_x(stubs, 460, _Grid(), search=True)  # type: ignore[arg-type]
    xs = sorted(s.x for s in stubs)
    assert all(b - a >= 460 for a, b in zip(xs, xs[1:], strict=False))
    assert all(s.lo <= s.x <= s.hi for s in stubs)


class _Grid:
    """The grid of a rule set as :func:`.assign_x` uses it (5 nm)."""

    def snap_up(self, v: float) -> int:
        return -(-int(v) // 5) * 5


@pytest.mark.parametrize("path", RULE_SET_PATHS, ids=RULE_SET_IDS)
def test_the_channel_block_takes_fewer_columns(path: Path, tmp_path: Path,
                                               request: pytest.FixtureRequest) -> None:
    known_gap(request, "gf180mcu_m3", "GF180 with a third metal: the channel block draws no "
              "vertical, every such net a trunk column (BENCHMARKS.md, GF180MCU on three metals)")
    rules = load_rule_set(path)
    client = Client()
    client.call("tech.load", rules=rules)
    size = sizes(rules)
    block = channel_block(client, size)
    assert sorted(p["net"] for p in block["ports"]) == sorted(PORTS)
    columns = columns_beside_rows(client, tmp_path)
    print(path.name, "trunks", block["trunks"], "verticals", block["verticals"], "columns", columns,
          "bbox", block["bbox_um"])
    if routing_dims(client.server.session.need_tech()).h_role != "metal1":
        assert block["verticals"] > 0  # main: none on SKY130, every such net a column
    assert columns == block["trunks"]
    wiring = {f"X{k}": {"inp": f"inp{k}", "inn": f"inn{k}", "out": f"out{k}", "nbias": "nbias",
                        "en": "en", "vdd": "vdd", "vss": "vss"} for k in range(2)}
    two_instances_clean(client, wiring, TERMS, size)
