"""The order of a parent's packed shelves of blocks (issue 26, ``route.nets``
``pack_block_rows``, :mod:`centroid_skills.routing.shelf_order`).

The parent holds the instances of one switch block as a planner draws six matched
modules: ``MIRROR`` in two rows (one member's two copies alone under its partners' row: the
packing puts a row of another module between the copies), and four one-row modules, ``X1``
and ``X2`` drawing the same members (their instances share every net), ``Y1`` and ``Y2``
likewise, given in the order X1, Y1, X2, Y2.  Packed, the shelves that share nets stand
together (rows of blocks share a channel in pairs): on SKY130, IHP SG13G2 and GF180, DRC
and LVS clean; read back from the written GDS, the rows of ``Y1`` and ``Y2`` neighbours and
those of ``X1`` and ``X2`` too, the mirror's rows still consecutive; the bounding box smaller
than the same shelves routed in the packing's own order (bands first, then shelves as
given; ``route.nets`` routes both orders and keeps the smaller).  The cost counts each
channel's nets and the nets in more than one channel; an order is taken only when it saves
more than the margin."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import REPO_ROOT, Client
from test_block_rows_whole import (
    flat_switches,
    member_ports,
    switch_block,
    top_arguments,
    written_rows,
)
from test_blocks import SUPPLIES, check_clean

from centroid_skills.routing.router import route
from centroid_skills.routing.shelf_order import Weights, channels, cost, order, smallest_route

PDK = REPO_ROOT / "examples" / "pdk"
PDKS = ["sky130", "ihp_sg13g2", "gf180mcu"]
#: module -> its rows (bottom to top); X1 and X2 draw the same members, Y1 and Y2 too
MODULES = {"MIRROR": ["MM", "ABCDEEDCBA"], "X1": ["GHHGGHHG"], "Y1": ["JKKJJKKJ"],
           "X2": ["GHHGGHHG"], "Y2": ["JKKJJKKJ"]}


def parent(path: Path, given: list[list[str]] | None = None, routed: bool = True
           ) -> tuple[Client, dict[str, Any], list[dict[str, Any]], dict[str, str]]:
    """The switch block and its instances in the modules' rows routed into TOP, packed with
    the modules' rows whole; with ``given`` (rows of members' copies, bottom to top) those
    rows routed as they are instead.  The route result (not ``routed``: the ``route.nets``
    arguments, nothing routed), the flat devices and each instance's module and member."""
    client, pitch = switch_block(path)
    terminals: dict[str, dict[str, str]] = {}
    module_of: dict[str, str] = {}
    copies: dict[str, int] = {}

    def instance(module: str, member: str) -> str:
        copies[member] = copies.get(member, 0) + 1
        device = f"X{member}.m{copies[member]}"
        terminals[device] = member_ports(member)
        cell = f"I_X{member}_m{copies[member]}"
        module_of[cell] = f"{module}:{member}"
        return client.call("layout.instantiate_block", block="BLK_SW", device_id=device,
                           cell_name=cell)["cell"]

    rows, groups = [], []
    for module, module_rows in MODULES.items():
        groups.append([])
        for sequence in module_rows:
            cells = [instance(module, m) for m in sequence]
            rows.append(f"TOP_ROW{len(rows)}")
            groups[-1].append(rows[-1])
            if given is None:
                client.call("layout.place", cell_name=rows[-1], rows=[{"cells": cells, "gap": pitch}])
    if given is not None:  # the same instances in the rows given
        rows = []
        for r, cells in enumerate(given):
            rows.append(f"TOP_GIVEN{r}")
            client.call("layout.place", cell_name=rows[-1], rows=[{"cells": cells, "gap": pitch}])
    arguments = top_arguments(rows, terminals, pitch, groups if given is None else None)
    flat = flat_switches(terminals)
    if not routed:
        return client, arguments, flat, module_of
    return client, client.call("route.nets", **arguments), flat, module_of


def modules_of(row: list[tuple[str, Any]], module_of: dict[str, str]) -> set[str]:
    return {module_of[name].split(":")[0] for name, _box in row}


@pytest.mark.parametrize("path", [PDK / f"{name}.json" for name in PDKS], ids=PDKS)
def test_shelves_sharing_nets_stand_together(path: Path, tmp_path: Path) -> None:
    client, packed, flat, module_of = parent(path)
    check_clean(client, "TOP", flat)
    rows = written_rows(client, tmp_path / "packed")
    at = {m: [r for r, row in enumerate(rows) if m in modules_of(row, module_of)] for m in MODULES}
    assert at["MIRROR"] == [at["MIRROR"][0], at["MIRROR"][0] + 1], at
    assert abs(at["Y1"][0] - at["Y2"][0]) == 1 and abs(at["X1"][0] - at["X2"][0]) == 1, at

    # the same shelves in the packing's own order: the mirror's band (X1's row between the
    # mirror's copies), then the other one-row modules as given
    shelves = [[name for name, _box in row] for row in rows]
    band = [shelves[r] for r in at["MIRROR"]]
    assert at["X1"] == at["MIRROR"][:1], at
    rest = [shelves[at[m][0]] for m in ("Y1", "X2", "Y2")]
    _client, own_order, _flat, _modules = parent(path, given=band + rest)
    assert packed["width_um"] * packed["height_um"] < own_order["width_um"] * own_order["height_um"], \
        (packed["bbox_um"], own_order["bbox_um"])


@pytest.mark.parametrize("own_first", [True, False], ids=["cheaper-last", "cheaper-first"])
def test_the_smaller_order_is_kept_and_drawn_clean(own_first: bool, tmp_path: Path) -> None:
    """Both orders of the same row cells routed in one session (rows of blocks turned in
    place for each): the smaller kept whichever was routed last, one TOP, DRC/LVS clean."""
    path = PDK / "sky130.json"
    client, packed, _flat, module_of = parent(path)
    rows = written_rows(client, tmp_path / "packed")
    shelves = [[name for name, _box in row] for row in rows]
    at = {m: [r for r, row in enumerate(rows) if m in modules_of(row, module_of)] for m in MODULES}
    # the packing's own order: the mirror's band, then Y1, X2, Y2
    own = [shelves[r] for r in at["MIRROR"]] + [shelves[at[m][0]] for m in ("Y1", "X2", "Y2")]
    client, arguments, flat, _modules = parent(path, given=shelves, routed=False)
    names = arguments["rows"]
    by_shelf = {tuple(s): name for s, name in zip(shelves, names, strict=True)}
    orders = [[by_shelf[tuple(s)] for s in own], names]
    if not own_first:
        orders.reverse()
    session = client.server.session
    net_types = {n["name"]: n["net_type"] for n in SUPPLIES}
    res, kept = smallest_route(session, orders, lambda rows: route(
        session, rows, arguments["devices"], net_types, "TOP"))
    assert kept == names and res.cell.name == "TOP"
    box = res.cell.bbox()
    assert round(box.width() * box.height() / 1e6, 1) == round(packed["width_um"] * packed["height_um"], 1)
    assert [c.name for c in session.layout.each_cell()].count("TOP") == 1
    check_clean(client, "TOP", flat)


def test_cost_counts_each_channel_and_the_nets_between_channels() -> None:
    x, y = frozenset({"x1", "x2"}), frozenset({"y1", "y2"})
    weights = Weights(track=10, column=1)
    assert [sorted(c) for c in channels([x, y, x, y], 0)] == [sorted(x | y), sorted(x | y)]
    assert channels([x, x, y, y], 0) == [x, y]
    assert channels([None, x, x], 0) == [frozenset(), x]  # a row not of blocks: never paired
    assert channels([x, x, y], 1) == [x, x | y]  # a block's row 0 escapes alone
    assert cost([x, y, x, y], 0, weights) == 8 * 10 + 4 * 1
    assert cost([x, x, y, y], 0, weights) == 4 * 10 + 0


def test_order_takes_another_only_past_the_margin() -> None:
    x, y = frozenset({"x1", "x2"}), frozenset({"y1", "y2"})
    weights = Weights(track=10, column=1)
    units: list[list[frozenset[str] | None]] = [[x], [y], [x], [y]]
    found = order(units, 0, weights)
    assert cost([units[u][0] for u in found], 0, weights) == 40
    assert order(units, 0, weights, margin=44) == [0, 1, 2, 3]  # saves 44: not more
    band: list[list[frozenset[str] | None]] = [[x, y], [y], [x]]  # a band's rows stay together
    found = order(band, 0, weights)
    assert sorted(found) == [0, 1, 2]  # units, not rows, are ordered: the band's two rows stay one
