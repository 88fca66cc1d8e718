"""Where a routed block's bounding box goes (issue 26): the OTA block of ``bench_blocks.py``
(SKY130 rules of ``examples/ota5_spice``) and a bank of its instances, each printed as rows
(cell and assembly sizes, what lies below each row's cells: rail and via zone), channels
(tracks, nets), the gaps between the rows' assemblies and the trunk columns either side,
read from the router's own plan and stack (its ``stack_rows`` and ``plan_channels`` wrapped
for the run); then DRC and LVS of the bank.

With ``--gds``: where the parent's bounding box goes in a layout ``centroid run`` wrote (e.g.
its ``best.gds``), read from the GDS alone: the routed cell's rows (instances of ``…ROW<i>``
cells), in each row its block instances and its own cells, and the bounding box cut into
parts that add up to it: the cells' boxes, the gaps inside the rows (between cells, and above
the lower cells of a row up to its tallest), the empty ends of rows shorter than the
longest, the columns beside the rows (trunks) and the bands between and around the rows
(channels, rails, via zones).

    cd worker/skills && PYTHONPATH=. ../../.venv/bin/python bench/block_breakdown.py [otas] [per_row]
    cd worker/skills && PYTHONPATH=. ../../.venv/bin/python bench/block_breakdown.py --gds best.gds [--cell TOP] [--rules drc_rules.json]

With ``--rules`` the height outside the rows is cut further into the tap rails, the
channels' tracks (distinct track levels of the routed cell's own track-layer shapes, at one
track pitch each) and the rest (clearances to the rows, via rows, rule gaps).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import klayout.db as kdb  # noqa: E402
from bench_blocks import draw_bank, flat_devices  # noqa: E402
from helpers import REPO_ROOT, Client, load_rule_set  # noqa: E402
from route_record import SEEN, um  # noqa: E402  (wraps the router: SEEN)


def breakdown(client: Client, cell: str, label: str) -> None:
    bb = client.server.session.layout.cell(cell).bbox()
    d, infos, stack, plan = SEEN["d"], SEEN["infos"], SEEN["stack"], SEEN["plan"]
    m = client.call("layout.metrics", cell=cell)
    print(f"== {label}: bbox {um(bb.width()):.2f} x {um(bb.height()):.2f} um = "
          f"{um(bb.width()) * um(bb.height()):.1f} um2, devices {m['device_area_um2']:.1f} um2, "
          f"utilisation {100 * m['utilisation']:.1f} %")
    print(f"   pitch {um(d.px)} track pitch {um(d.py)} clearance {um(d.c_out)}")
    for i, info in enumerate(infos):
        cb = info.cell.bbox()
        rail = info.rail_cell.bbox().height() if info.rail_cell is not None else 0
        print(f"   row {i} {info.kind}: cells {um(cb.width()):.2f} x {um(cb.height()):.2f}, assembly "
              f"{um(info.top - info.bottom):.2f} high ({um(cb.bottom - info.bottom):.2f} below the "
              f"cells: rail {um(rail):.2f} + via zone)")
    for ch, n in enumerate(stack.n_tracks):
        low = sorted(plan.low[ch]) if ch < len(plan.low) else []
        print(f"   channel {ch}: {n} tracks, nets {sorted(SEEN['tracks'][ch])}"
              + (f", on metal 1 {low}" if low else ""))
    prev = bb.bottom
    for i, info in enumerate(infos):
        print(f"   below row {i}'s assembly: {um(info.bottom + info.dy - prev):.2f}")
        prev = info.top + info.dy
    print(f"   above the top row: {um(bb.top - prev):.2f}")
    left = min(i.ext.bbox.left + i.dx for i in infos if i.ext is not None)
    right = max(i.ext.bbox.right + i.dx for i in infos if i.ext is not None)
    trunks = ", ".join(f"{n} {um(x):.2f}" for n, x in sorted(plan.trunk_x.items(), key=lambda t: t[1]))
    print(f"   rows {um(left):.2f} .. {um(right):.2f}; columns left {um(left - bb.left):.2f}, right "
          f"{um(bb.right - right):.2f}; trunks: {trunks or '-'}; verticals: {len(plan.verticals)}")


ROW_CELL = re.compile(r"ROW\d+$")  # ROW<i>, a block's <prefix>_ROW<i>, packed <cell>_BROW<i>
RAIL_CELL = re.compile(r"_rail\d+$")  # a row's tap rail, <cell>_rail<i>


def band_split(cell: kdb.Cell, rows: list[kdb.Instance], track: tuple[int, int] | None,
               pitch: int) -> dict[str, float]:
    """The height (µm) outside the rows cut into: the tap rails, the channels' tracks (each
    level a horizontal shape of the track layer ``track`` (layer, datatype) stands on,
    counted at one track ``pitch``) and the rest (clearances to the rows, via rows, gaps the
    rules ask between assemblies, what is left below or above the tracks)."""
    layout = cell.layout()
    bb = cell.bbox()
    covered = [(r.bbox().bottom, r.bbox().top) for r in rows]
    rails = [i.bbox() for i in cell.each_inst() if RAIL_CELL.search(i.cell.name)]
    levels: set[int] = set()
    if track is not None:
        li = layout.find_layer(*track)
        if li is not None:
            # sliced horizontally, a track joined to a vertical is a wide slab of its own
            for poly in kdb.Region(cell.shapes(li)).decompose_trapezoids_to_region().each():
                b = poly.bbox()
                if b.width() > b.height():
                    levels.add(b.center().y)
    free = [levels_y for levels_y in sorted(levels)
            if not any(lo <= levels_y <= hi for lo, hi in covered)]
    outside = bb.height() - sum(hi - lo for lo, hi in covered)
    rail_h = sum(r.height() for r in rails)
    tracks_h = len(free) * pitch
    return {"rails": rail_h / 1e3, "tracks": tracks_h / 1e3, "levels": float(len(free)),
            "rest": (outside - rail_h - tracks_h) / 1e3, "outside rows": outside / 1e3}


def _row_parts(row: kdb.Instance) -> tuple[float, float, int]:
    """Areas (µm²) of a row's block instances and of its own cells, and its block count."""
    blocks = own = 0.0
    count = 0
    for inst in row.cell.each_inst():
        area = inst.bbox().width() * inst.bbox().height() / 1e6
        if any(child.cell.name.startswith("BLK_") for child in inst.cell.each_inst()):
            blocks += area
            count += 1
        else:
            own += area
    return blocks, own, count


def parent_breakdown(gds: Path, cell_name: str | None,
                     track: tuple[tuple[int, int], int] | None = None) -> dict[str, float]:
    """Prints and returns where the routed cell's bounding box goes (µm², parts adding up to
    the bbox): read from a GDS alone; with ``track`` (the track layer and pitch, from the
    rule set) the height outside the rows cut further (:func:`band_split`)."""
    layout = kdb.Layout()
    layout.read(str(gds))
    cell = layout.cell(cell_name) if cell_name else layout.top_cell()
    bb = cell.bbox()
    rows = sorted((i for i in cell.each_inst() if ROW_CELL.search(i.cell.name)),
                  key=lambda i: i.bbox().bottom)
    span = kdb.Box()
    for row in rows:
        span = span + row.bbox()
    width, height = bb.width() / 1e3, bb.height() / 1e3
    parts = {"block boxes": 0.0, "own cells": 0.0, "gaps inside rows": 0.0,
             "empty row ends": 0.0, "columns beside rows": 0.0, "channels, rails, margins": 0.0}
    print(f"== {gds} {cell.name}: {width:.2f} x {height:.2f} um = {width * height:.1f} um2, "
          f"{len(rows)} rows")
    rows_h = 0.0
    for row in rows:
        rb = row.bbox()
        w, h = rb.width() / 1e3, rb.height() / 1e3
        blocks, own, count = _row_parts(row)
        parts["block boxes"] += blocks
        parts["own cells"] += own
        parts["gaps inside rows"] += w * h - blocks - own
        parts["empty row ends"] += (span.width() / 1e3 - w) * h
        rows_h += h
        print(f"   {row.cell.name}: {w:.2f} x {h:.2f} at y {rb.bottom / 1e3:.2f}, {count} blocks "
              f"{blocks:.1f} um2, own cells {own:.1f} um2, gaps {w * h - blocks - own:.1f} um2")
    parts["columns beside rows"] = (width - span.width() / 1e3) * rows_h
    parts["channels, rails, margins"] = width * (height - rows_h)
    total = width * height
    for name, area in parts.items():
        print(f"   {name:26s} {area:10.1f} um2 {100 * area / total:5.1f} %")
    if track is not None:
        split = band_split(cell, rows, track[0], track[1])
        print(f"   height outside the rows {split['outside rows']:.2f} um of {height:.2f}: rails "
              f"{split['rails']:.2f}, tracks {split['tracks']:.2f} ({int(split['levels'])} levels "
              f"at {track[1] / 1e3:.2f}), clearances / via rows / gaps {split['rest']:.2f}")
        parts.update({f"height {k}": v for k, v in split.items()})
    return parts


def track_layer(rules: Path) -> tuple[tuple[int, int], int]:
    """The router's track layer (layer, datatype) and track pitch (nm) for a rule set."""
    from centroid_skills.routing.dims import routing_dims

    client = Client()
    client.call("tech.load", rules=load_rule_set(rules))
    tech = client.server.session.need_tech()
    d = routing_dims(tech)
    ldef = tech.require(d.h_role)
    return (ldef.layer, ldef.datatype), d.py


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("otas", nargs="?", type=int, default=10)
    parser.add_argument("per_row", nargs="?", type=int, default=5)
    parser.add_argument("--gds", type=Path, action="append", help="a layout written by centroid run")
    parser.add_argument("--cell", help="the routed cell (default: the top cell)")
    parser.add_argument("--rules", type=Path,
                        help="the rule set (drc_rules.json): also cut the height outside the "
                             "rows into rails, tracks and clearances")
    args = parser.parse_args()
    if args.gds:
        track = track_layer(args.rules) if args.rules else None
        for gds in args.gds:
            parent_breakdown(gds, args.cell, track)
        return
    otas, per_row = args.otas, args.per_row
    client = Client()
    client.call("tech.load", rules=load_rule_set(REPO_ROOT / "examples" / "ota5_spice" / "drc_rules.json"))
    draw_bank(client, otas, per_row, lambda: breakdown(client, "BLK_OTA", "OTA block"))
    breakdown(client, "TOP", f"bank of {otas} ({per_row} a row)")
    drc = client.call("drc.run", cell="TOP")
    lvs = client.call("lvs.run", cell="TOP", devices=flat_devices(otas))
    print(f"bank: DRC {drc['total']}, LVS match {lvs['match']}")


if __name__ == "__main__":
    main()
