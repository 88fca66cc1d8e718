"""The terminals of placed rows, as the router sees them: every pin of every device
and unit (dummies included, tied to their row's rail net) and every port pin of every
block instance (``layout.instantiate_block``: the router does not look inside a block),
in row coordinates, with the device (or block instance), the unit's (block's) bbox and
the matched module it belongs to."""

from __future__ import annotations

from dataclasses import dataclass

import klayout.db as kdb

from centroid_skills.errors import invalid
from centroid_skills.session import Session, unit_trans

DEVICE_KINDS = ("nmos", "pmos", "resistor", "capacitor")
MODULE_KINDS = ("common_centroid", "interdigitated", "device_row")
#: a row's neighbours on one diffusion (:mod:`centroid_skills.diffusion_runs`): units, no module
RUN_KIND = "diffusion_run"
#: a series stack drawn finger by finger (:mod:`centroid_skills.series_stacks`): pins
#: ``<device>.<S|D|G>``, no units
STACK_KIND = "series_stack"
#: a swapped unit's pins read the other way round (its drain net on the generator's ``S``)
SWAPPED_PINS = {"S": "D", "D": "S"}


@dataclass
class Term:
    device: str | None  # None: a dummy (tied to the row's rail net)
    pin: str
    role: str  # metal1 | metal2
    box: kdb.Box  # row coordinates
    block: kdb.Box  # bbox of the device/unit the pin belongs to
    mos: str | None  # nmos | pmos | None
    net: str = ""
    module: str | None = None  # matched module the pin belongs to
    mirrored: bool = False  # the unit is mirrored (x -> -x) in its module
    of_block: bool = False  # a port pin of a block instance (pin = the port's net in the block)
    port: bool = False  # a port of the routed cell itself (drawn by :mod:`.ports`)
    flipped: bool = False  # a block instance turned upside down: its ports at its top edge
    tap: bool = False  # a port's way onto a rail above row 0 (:func:`.ports.tap_stubs`)

    @property
    def up(self) -> bool:
        """Escapes up (into the channel above its row); a block's pins go down (they reach
        its bottom edge, however high a trunk foot climbs), or up when the block is
        upside down (:mod:`.row_pairs`)."""
        if self.of_block:
            return self.flipped
        return self.box.center().y > self.block.center().y


def collect_terms(session: Session, cell: kdb.Cell, trans: kdb.Trans, out: list[Term],
                  depth: int = 0) -> None:
    if depth > 16:
        raise invalid("cell hierarchy too deep", cell=cell.name)
    layout = session.layout
    rec = session.cells.get(cell.name)
    if rec is not None and rec.kind in DEVICE_KINDS:
        dev = rec.params.get("device_id")
        if rec.params.get("dummy"):
            dev = None
        if dev is None and not rec.params.get("dummy"):
            raise invalid(f"device cell {cell.name} has no device_id: cannot tell its nets",
                          cell=cell.name)
        block = cell.bbox().transformed(trans)
        mos = rec.kind if rec.kind in ("nmos", "pmos") else None
        for p in rec.pins:
            out.append(Term(dev, p.name, p.role, p.box.transformed(trans), block, mos))
        return
    if rec is not None and (rec.kind in MODULE_KINDS or rec.kind == RUN_KIND):
        for u in rec.units:
            ucell = layout.cell(u["unit_cell"])
            urec = session.cells.get(u["unit_cell"])
            if ucell is None or urec is None:
                raise invalid(f"unit cell {u['unit_cell']} of {cell.name} is unknown", cell=cell.name)
            ut = trans * unit_trans(u)
            block = ucell.bbox().transformed(ut)
            mos = urec.kind if urec.kind in ("nmos", "pmos") else None
            dev = None if u.get("dummy") else u["device_id"]
            first = len(out)
            joined = u.get("joined", ())  # reached through an earlier unit's pin (shared diffusion)
            swapped = SWAPPED_PINS if u.get("swapped") else {}
            for p in urec.pins:
                if p.name not in joined:
                    out.append(Term(dev, swapped.get(p.name, p.name), p.role, p.box.transformed(ut),
                                    block, mos, mirrored=ut.is_mirror()))
            if rec.kind in MODULE_KINDS:
                for t in out[first:]:
                    t.module = cell.name
        return
    if rec is not None and rec.kind == STACK_KIND:
        block = cell.bbox().transformed(trans)
        for p in rec.pins:
            dev, name = p.name.rsplit(".", 1)
            out.append(Term(dev, name, p.role, p.box.transformed(trans), block, str(rec.params["type"]),
                            mirrored=trans.is_mirror()))
        return
    if rec is not None and rec.kind == "block":
        dev = rec.params.get("device_id")
        if dev is None:
            raise invalid(f"block {cell.name} is placed directly: place the cells made by "
                          "layout.instantiate_block (one per instance)", cell=cell.name)
        block = cell.bbox().transformed(trans)
        flipped = (trans * kdb.Vector(0, -1)).y > 0  # its bottom edge now faces up
        for p in rec.pins:
            out.append(Term(dev, p.name, p.role, p.box.transformed(trans), block, None,
                            of_block=True, flipped=flipped))
        return
    if rec is not None and rec.kind == "guard_ring":
        raise invalid("the router draws its own tap rails: place the cells without guard rings",
                      cell=cell.name)
    for inst in cell.each_inst():
        if inst.is_regular_array():
            for t in inst.cell_inst.each_trans():
                collect_terms(session, inst.cell, trans * t, out, depth + 1)
        else:
            collect_terms(session, inst.cell, trans * inst.cell_inst.trans, out, depth + 1)


def instance_terms(session: Session, inst: kdb.Instance) -> list[Term]:
    """The terminals of a placed instance (each element of a regular array)."""
    terms: list[Term] = []
    if inst.is_regular_array():
        for trans in inst.cell_inst.each_trans():
            collect_terms(session, inst.cell, trans, terms)
    else:
        collect_terms(session, inst.cell, inst.cell_inst.trans, terms)
    return terms
