"""Rows of blocks turned upside down in pairs, so that two rows of blocks share one channel.

A block's ports all reach its bottom edge (:mod:`.ports`), so each row of blocks escapes
down into the channel below it and every row needs a channel of its own.  Of two rows of
blocks one above the other, the lower one is drawn upside down (mirrored about its
horizontal axis, in place: the row cell keeps its name): its ports then face up, into the channel between the two rows, where the
upper row's ports come down; the channel below the turned row keeps only what passes
through it.  Rows holding anything but block instances (devices with rails, passive
devices) are left as they are.  In a routed cell that is a block itself (it has ports at
its own bottom edge, in channel 0) the pairs start at row 1, so that row 0 still escapes
into channel 0 beside the cell's ports."""

from __future__ import annotations

import klayout.db as kdb

from centroid_skills.routing.rows import Devices, RowInfo, assign_nets
from centroid_skills.routing.terminals import Term, collect_terms
from centroid_skills.session import CellRecord, Session


def _blocks_only(info: RowInfo) -> bool:
    return bool(info.terms) and all(t.of_block for t in info.terms)


def pair_rows(infos: list[RowInfo], has_ports: bool) -> list[int]:
    """The rows to turn: the lower row of each pair of rows of blocks one above the other,
    pairs taken bottom up (from row 1 in a cell with ports)."""
    turned: list[int] = []
    r = 1 if has_ports else 0
    while r + 1 < len(infos):
        if _blocks_only(infos[r]) and _blocks_only(infos[r + 1]):
            turned.append(r)
            r += 2
        else:
            r += 1
    return turned


def _turn_record(rec: CellRecord, mirror: kdb.Trans) -> None:
    """The record of a row cell turned upside down: the same devices and area, its pins and
    instances mirrored."""
    rec.pins = [pin.transformed(mirror) for pin in rec.pins]
    for unit in rec.units:
        if "bbox_um" in unit:
            left, bottom, right, top = unit["bbox_um"]
            unit["bbox_um"] = [left, -top, right, -bottom]
            unit["y_um"] = -top
        if "orientation" in unit:
            turned = mirror * kdb.Trans.from_s(f"{unit['orientation']} 0,0")
            unit["orientation"] = str(turned).split(" ")[0]


def turn_block_rows(session: Session, infos: list[RowInfo], devices: Devices,
                    has_ports: bool) -> list[int]:
    """Turns the rows of blocks so that those :func:`pair_rows` picks face up and every
    other one faces down (a row turned by an earlier call is turned back where it is not
    picked again): the row cell's instances and shapes mirrored about its x axis (row
    coordinates: y -> -y), its record too, its pins collected again.  Returns the rows
    facing up."""
    mirror = kdb.Trans(kdb.Trans.M0, 0, 0)
    picked = pair_rows(infos, has_ports)
    for r, info in enumerate(infos):
        if not _blocks_only(info) or all(t.flipped for t in info.terms) == (r in picked):
            continue
        for inst in list(info.cell.each_inst()):
            inst.transform(mirror)
        for li in session.layout.layer_indexes():
            info.cell.shapes(li).transform(mirror)
        rec = session.cells.get(info.cell.name)
        if rec is not None:
            _turn_record(rec, mirror)
        terms: list[Term] = []
        collect_terms(session, info.cell, kdb.Trans(), terms)
        assign_nets(info.name, terms, devices, info.rail_net)
        info.terms = terms
    return picked
