"""The rows of one routing call: their pins with the nets they carry (checked against the
circuit), their kind and rail net, and, once the clearance is known, their supply rails,
via zones and assembly extents (row coordinates)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import klayout.db as kdb

from centroid_skills import abut
from centroid_skills.errors import invalid
from centroid_skills.routing.dims import Dims, wide_clearance
from centroid_skills.routing.net_currents import widest_wires
from centroid_skills.routing.rails import Rail, draw_rail, rail_half_height
from centroid_skills.routing.terminals import Term, collect_terms
from centroid_skills.routing.well_split import split_by_bulk
from centroid_skills.session import Session
from centroid_skills.tech import Technology

#: the device terminal each generator pin is on
PIN_TERMINAL = {"S": "s", "D": "d", "G": "g", "PLUS": "p", "MINUS": "n", "TOP": "p", "BOT": "n"}

Devices = dict[str, dict[str, Any]]  # device id -> {id, type, terminals}
ExtentsCache = dict[int, abut.Extents]


@dataclass
class RowInfo:
    """One placed row as the router stacks it."""

    name: str
    cell: kdb.Cell
    terms: list[Term]
    kind: str  # nmos | pmos | passive
    rail_net: str | None
    ext: abut.Extents | None = None  # assembly extents, row coordinates
    rail_cell: kdb.Cell | None = None
    rail: Rail | None = None
    rail_dy: int = 0  # rail cell offset in row coordinates
    nwell_boxes: list[kdb.Box] = field(default_factory=list)  # drawn by the router
    via_y: int = 0  # via-zone centre (row coordinates)
    bottom: int = 0  # lowest point of the assembly incl. via zone (row coordinates)
    top: int = 0
    dy: int = 0  # row offset in the top cell
    dx: int = 0  # horizontal shift of the row (to untangle a channel)

    @property
    def is_mos(self) -> bool:
        return self.kind in ("nmos", "pmos")

    @property
    def offset(self) -> kdb.Vector:
        """Where the row's origin lands in the top cell."""
        return kdb.Vector(self.dx, self.dy)

    def placed_rail_metal(self) -> kdb.Box:
        """The rail's metal-1 box in the top cell (the row must have a rail)."""
        assert self.rail is not None
        return self.rail.metal.moved(kdb.Vector(self.dx, self.dy + self.rail_dy))


def collect_rows(session: Session, names: list[str], devices: Devices) -> list[RowInfo]:
    """Every row cell with its pins, each pin given its net (dummies: the row's rail net).

    A row whose cells sit on several bulk nets becomes one row per net
    (:mod:`.well_split`).  Refuses rows that are not one row of cells, rows mixing nmos
    and pmos, cells mixing bulk nets,
    pins on other layers than metal 1 and 2, devices unknown to the circuit and devices of
    the circuit that no row holds."""
    infos: list[RowInfo] = []
    placed: set[str] = set()
    for given in names:
        for name, cell in split_by_bulk(session, given, session.any_cell(given), devices):
            terms: list[Term] = []
            collect_terms(session, cell, kdb.Trans(), terms)
            _check_one_row(name, terms)
            kind, rail_net = _kind_and_rail_net(name, terms, devices, placed)
            assign_nets(name, terms, devices, rail_net)
            infos.append(RowInfo(name, cell, terms, kind, rail_net))
    missing = sorted(set(devices) - placed)
    if missing:
        raise invalid("devices of the circuit are not placed in any row", devices=missing[:50])
    return infos


def _check_one_row(name: str, terms: list[Term]) -> None:
    """The devices of a row cell sit side by side: every block spans one common height."""
    blocks = {(b.left, b.bottom, b.right, b.top): b for b in (t.block for t in terms)}.values()
    if blocks and max(b.bottom for b in blocks) >= min(b.top for b in blocks):
        raise invalid(f"{name} is not one row of cells (e.g. a multi-row placement or a "
                      "2-D module — draw a matched array with rows = 1 to route it): route.nets "
                      "needs one row of devices per row cell", row=name)


def _kind_and_rail_net(name: str, terms: list[Term], devices: Devices,
                       placed: set[str]) -> tuple[str, str | None]:
    """The row's kind (nmos, pmos or passive) and the bulk net of its MOS devices (its
    rail's net); adds the row's devices to ``placed``."""
    mos_types = {t.mos for t in terms if t.mos}
    if len(mos_types) > 1:
        raise invalid(f"row {name} mixes nmos and pmos: give each type its own row", row=name)
    bulk_nets = set()
    for t in terms:
        if t.device is None:
            continue
        dev = devices.get(t.device)
        if dev is None:
            raise invalid(f"device {t.device} (in row {name}) is not in the circuit",
                          device=t.device, row=name)
        placed.add(t.device)
        if t.mos:
            bnet = (dev.get("terminals") or {}).get("b")
            if not bnet:
                raise invalid(f"device {t.device} has no bulk terminal", device=t.device)
            bulk_nets.add(bnet)
    if len(bulk_nets) > 1:
        raise invalid(f"row {name} holds devices with different bulk nets {sorted(bulk_nets)}",
                      row=name)
    kind = mos_types.pop() if mos_types else "passive"
    rail_net = bulk_nets.pop() if bulk_nets else None
    if kind != "passive" and rail_net is None:
        raise invalid(f"row {name} has only dummies: no bulk net known", row=name)
    return kind, rail_net


def assign_nets(name: str, terms: list[Term], devices: Devices, rail_net: str | None) -> None:
    """Sets every pin's net: its device terminal's, or the rail net for a dummy's pins."""
    for t in terms:
        if t.role not in ("metal1", "metal2"):
            raise invalid(f"pin {t.pin} of {t.device or 'a dummy'} is on {t.role}: the router "
                          "connects metal-1 and metal-2 pins only (e.g. no MIM capacitors)",
                          device=t.device, pin=t.pin, role=t.role)
        if t.device is None:
            if rail_net is None:
                raise invalid(f"dummy in row {name} without a rail net", row=name)
            t.net = rail_net
            continue
        terminal = t.pin if t.of_block else PIN_TERMINAL.get(t.pin)
        if terminal is None:
            raise invalid(f"pin {t.pin} of {t.device} has no terminal", device=t.device)
        net = (devices[t.device].get("terminals") or {}).get(terminal)
        if net is None:
            what = "port" if t.of_block else "terminal"
            raise invalid(f"device {t.device} has no {what} {terminal}", device=t.device)
        t.net = net


def with_wide_clearance(tech: Technology, layout: kdb.Layout, d: Dims, infos: list[RowInfo],
                        cache: ExtentsCache) -> Dims:
    """``d`` with the clearance raised to the wide-metal spacing of the widest metal the
    routing draws (tracks, supply trunks, rails) or the rows already hold."""
    widths = {d.h_role: 2 * d.hh, "metal2": 2 * (d.ht + tech.snap_up(d.px / 2))}
    if d.low_role is not None:
        widths[d.low_role] = max(widths.get(d.low_role, 0), 2 * d.hl)
    if any(info.is_mos for info in infos):
        widths["metal1"] = max([widths.get("metal1", 0)] + [
            2 * rail_half_height(tech, d, info.rail_net) for info in infos if info.is_mos])
    for role, width in widest_wires(d).items():  # wires as wide as their current needs
        widths[role] = max(widths.get(role, 0), width)
    for info in infos:
        for key in abut.extents(tech, layout, info.cell, cache).boxes:
            name, sep, over = key.partition(">")
            role = tech.layers[name].role if sep and name in tech.layers else None
            if role:
                widths[role] = max(widths.get(role, 0), int(over) + 1)
    return replace(d, c_out=wide_clearance(tech, d, widths))


def merge_extents(parts: list[abut.Extents]) -> abut.Extents:
    """One extents record covering every part (bboxes per layer joined)."""
    bbox = kdb.Box()
    boxes: dict[str, kdb.Box] = {}
    for p in parts:
        bbox = bbox + p.bbox
        for k, v in p.boxes.items():
            boxes[k] = boxes[k] + v if k in boxes else v
    return abut.Extents(bbox, boxes)


def _own_devices_box(info: RowInfo) -> kdb.Box:
    """The x extent the row's tap rail spans: the whole row, or in a row holding block
    instances beside its own devices, those devices (a block has its own rails)."""
    if not any(t.of_block for t in info.terms):
        return info.cell.bbox()
    box = kdb.Box()
    for t in info.terms:
        if not t.of_block:
            box = box + t.block
    return box


def _nwells_beside_blocks(session: Session, cell: kdb.Cell, nwell_name: str,
                          strip: kdb.Box) -> list[kdb.Box]:
    """The n-well of a row holding blocks beside its own pmos devices: the rail's strip and,
    per own cell (and per n-well shape of the row itself), its well's bbox reaching down to
    the strip — never over a block (a block's wells are its own: an n-well over a block
    would swallow its nmos devices)."""
    tech = session.need_tech()
    li = tech.layer_index(session.layout, nwell_name)
    wells = [shape.bbox() for shape in cell.shapes(li).each()]
    for inst in cell.each_inst():
        rec = session.cells.get(inst.cell.name)
        if (rec is None or rec.kind != "block") and not inst.bbox(li).empty():
            wells.append(inst.bbox(li))
    return [strip] + [w + kdb.Box(w.left, strip.bottom, w.right, strip.top) for w in wells]


def needs_via_zone(info: RowInfo) -> bool:
    """Whether a metal-1 pin of the row goes down to a via-1 below the row: one on another
    net than the row's rail (a pin on the rail's net drops onto the rail; a row of blocks has
    metal-2 pins only)."""
    return any(t.role == "metal1" and not t.up and not (info.is_mos and t.net == info.rail_net)
               for t in info.terms)


def add_rails(session: Session, infos: list[RowInfo], d: Dims, cell_name: str,
              cache: ExtentsCache) -> None:
    """Every MOS row gets its tap rail below it (a rule gap from the devices, a cell of
    its own; under its own devices only when it also holds blocks), and a pmos row the
    nwell over row and rail (the blocks' wells left out); every row its via zone below
    its cells where a metal-1 pin goes down off the rail's net (:func:`needs_via_zone`; not
    a row of blocks: their pins are metal 2) and its assembly extents (row, rail, nwell), in
    row coordinates."""
    tech = session.need_tech()
    layout = session.layout
    nwell_name = tech.roles.get("nwell")
    for ri, info in enumerate(infos):
        bb = info.cell.bbox()
        own = _own_devices_box(info)
        row_ext = abut.extents(tech, layout, info.cell, cache)
        parts = [row_ext]
        info.via_y = bb.bottom - d.c_out - d.hstack
        info.bottom = bb.bottom - d.c_out - 2 * d.hstack
        zone = 2 * d.c_out + 2 * d.hstack
        if not needs_via_zone(info):
            # metal-2 pins and pins dropping onto the rail only: nothing takes a via-1 below
            info.bottom, zone = bb.bottom, 0
        if info.is_mos:
            rkind = "substrate" if info.kind == "nmos" else "well"
            rcell = session.new_cell(session.unique_name(f"{cell_name}_rail{ri}"))
            rail = draw_rail(tech, layout, rcell, rkind, own.left, own.right, 0, d,
                             info.rail_net)
            rext = abut.extents(tech, layout, rcell)
            filled = frozenset({nwell_name}) if rkind == "well" and nwell_name else frozenset()
            gap = abut.required_gap(tech, rext, row_ext, "y", zone, bridge=True, filled=filled)
            dy = bb.bottom - gap - rext.bbox.top
            info.rail_cell, info.rail, info.rail_dy = rcell, rail, dy
            moved = rext.moved(kdb.Trans(0, dy))
            parts.append(moved)
            if rkind == "well" and nwell_name:
                band = rail.band.moved(kdb.Vector(0, dy))
                nb = band.enlarged(rail.nwell_enc, rail.nwell_enc)
                if any(t.of_block for t in info.terms):
                    # under a block the strip stands alone: at least the n-well's width,
                    # grown away from the row
                    nb = kdb.Box(nb.left, min(nb.bottom, nb.top - tech.width("nwell")),
                                 nb.right, nb.top)
                    info.nwell_boxes = _nwells_beside_blocks(session, info.cell, nwell_name, nb)
                else:
                    nbox = tech.region(layout, info.cell, nwell_name).bbox()
                    info.nwell_boxes = [nb if nbox.empty() else nbox + nb]
                whole = kdb.Box()
                for box in info.nwell_boxes:
                    whole = whole + box
                parts.append(abut.Extents(whole, {nwell_name: whole}))
            info.bottom = min(info.bottom, moved.bbox.bottom)
        info.ext = merge_extents(parts)
        info.bottom = min(info.bottom, info.ext.bbox.bottom)
        info.top = info.ext.bbox.top
