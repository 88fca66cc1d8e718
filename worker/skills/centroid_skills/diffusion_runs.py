"""Neighbouring MOS devices of a row on one diffusion (issue 26: series stacks).

A layout engineer draws a series stack (four MOS in series under one gate) on one
diffusion: two neighbours whose facing terminals are one net share that source/drain
region instead of standing a unit width and a rule gap apart.  ``layout.place`` does
this for the device cells of a row when it is told their terminals (``devices``): a run
of consecutive cells drawn alike (same type, W, L, fingers), on one gate and one bulk
net, each facing the next with one net, becomes one cell (kind ``diffusion_run``) whose
units stand on one diffusion, as :mod:`centroid_skills.shared_diffusion` draws a matched
module's units.

A unit of ``f`` fingers reads S G D G S … (:mod:`centroid_skills.mos`); the boundaries
shared here are S|S: the physical source ends of both units on one net.  A MOS is
symmetric, so a unit whose *drain* net is the shared one is drawn as it is with its pins
``S`` and ``D`` read the other way round (``swapped``): the router and the netlist see
the terminals, the geometry is the generator's.  Even fingers end in S on both sides, so
a stack of devices ``d-i1``, ``i1-i2``, ``i2-i3``, ``i3-s`` of such units pairs up
(``d i1 | i1 … ``): every other inner node shared; parallel devices on one source run
whole.  Three or more devices of two fingers in series are therefore drawn finger by
finger as one cell instead (:mod:`centroid_skills.series_stacks`: every inner node
shared), where the rule set allows it; wider units keep the pairs.  Odd fingers
end in S and D: a pair shares when the left one is mirrored (its source on the right).
The bulk net (a source on the supply, dropping onto the row's tap rail) is never the
shared one: it gains little there and moved the routing of our own blocks (``bandgap``'s
amplifier, 2.9 % larger, BENCHMARKS.md).  Whether a boundary may be shared is decided by :func:`shared_diffusion.boundary_fits`
(the pair drawn in a scratch cell, checked against every rule): a rule set that does not
allow it keeps the rule gap.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import klayout.db as kdb

from centroid_skills import abut, series_stacks, shared_diffusion
from centroid_skills.routing.terminals import RUN_KIND, SWAPPED_PINS
from centroid_skills.session import CellRecord, Pin, Session, um

Devices = dict[str, dict[str, Any]]


@dataclass(frozen=True)
class _Device:
    """A row's device cell that may stand on a diffusion shared with its neighbours."""

    cell: str
    rec: CellRecord
    shape: shared_diffusion.UnitShape
    terminals: dict[str, str]

    @property
    def drawn_as(self) -> tuple[object, ...]:
        """What makes two cells' geometry the same (all but the device's name)."""
        return (self.rec.kind, tuple(sorted((k, str(v)) for k, v in self.rec.params.items()
                                            if k != "device_id")))


def _device(session: Session, cell: str, devices: Devices) -> _Device | None:
    rec = session.cells.get(cell)
    if rec is None or rec.kind not in ("nmos", "pmos") or rec.params.get("dummy"):
        return None
    terminals = (devices.get(str(rec.params.get("device_id"))) or {}).get("terminals") or {}
    if not all(terminals.get(t) for t in "dgs"):
        return None
    shape = shared_diffusion.unit_shape(session, rec)
    return None if shape is None else _Device(cell, rec, shape, terminals)


def _facing(a: _Device, b: _Device, net: str | None) -> str | None:
    """The net ``a`` and ``b`` may share (``net``: the one the run already shares)."""
    if a.drawn_as != b.drawn_as or a.terminals["g"] != b.terminals["g"]:
        return None
    if a.terminals.get("b") != b.terminals.get("b"):
        return None
    bulk = a.terminals.get("b")
    ends_b = [n for n in (b.terminals["s"], b.terminals["d"]) if n != bulk]
    if net is not None:
        return net if net in ends_b else None
    return next((n for n in (a.terminals["s"], a.terminals["d"]) if n in ends_b), None)


def _stack_at(found: list[_Device | None], i: int
              ) -> tuple[list[series_stacks.StackDevice], list[str]] | None:
    """The longest series stack of one- or two-finger devices alike from cell ``i`` on (at least
    :data:`series_stacks.MIN_DEVICES`), with its nodes end to end."""
    first = found[i]
    if first is None or first.shape.fingers not in series_stacks.STACK_FINGERS:
        return None
    best = None
    j = i + 1
    while j < len(found):
        dev = found[j]
        if dev is None or dev.drawn_as != first.drawn_as or any(
                dev.terminals.get(t) != first.terminals.get(t) for t in "gb"):
            break
        chain = [series_stacks.StackDevice(d.cell, d.rec, d.terminals)
                 for d in found[i:j + 1] if d is not None]
        nodes = series_stacks.chain_nodes(chain)
        if nodes is None:
            break
        if len(chain) >= series_stacks.MIN_DEVICES:
            best = (chain, nodes)
        j += 1
    return best


def share_row(session: Session, cells: list[str], devices: Devices) -> list[str]:
    """The row's cells with every run of neighbours sharing diffusion replaced by its run
    cell (left to right, as given)."""
    found = [_device(session, c, devices) for c in cells]
    out: list[str] = []
    i = 0
    while i < len(cells):
        stack = _stack_at(found, i)
        drawn = None if stack is None else series_stacks.draw_stack(session, *stack)
        if stack is not None and drawn is not None:
            out.append(drawn)
            i += len(stack[0])
            continue
        first = found[i]
        run: list[_Device] = [] if first is None else [first]
        net: str | None = None
        while run and i + len(run) < len(cells):
            a, b = run[-1], found[i + len(run)]
            odd = a.shape.fingers % 2 == 1
            if b is None or (odd and (len(run) > 1 or not a.shape.symmetric)):
                break
            shared = _facing(a, b, net)
            if shared is None or not shared_diffusion.boundary_fits(
                    session, a.rec, a.shape, odd, False, same_drain=False):
                break
            net = shared
            run.append(b)
        if len(run) < 2 or net is None:
            out.append(cells[i])
            i += 1
            continue
        out.append(draw_run(session, run, net))
        i += len(run)
    return out


def draw_run(session: Session, run: list[_Device], net: str) -> str:
    """One cell holding ``run`` on one diffusion, each boundary the shared ``net``."""
    tech = session.need_tech()
    layout = session.layout
    shape = run[0].shape
    odd = shape.fingers % 2 == 1
    unit_box = layout.cell(run[0].rec.name).bbox()
    cell = session.new_cell(session.unique_name(f"{run[0].cell}_run"))
    rec = CellRecord(name=cell.name, kind=RUN_KIND)
    transforms: list[kdb.Trans] = []
    for k, dev in enumerate(run):
        mirrored = odd and k == 0  # an odd unit's source on its right
        if k == 0:
            trans = (kdb.Trans(kdb.Trans.M90, unit_box.right, 0) if mirrored
                     else kdb.Trans(-unit_box.left, 0))
        else:
            _, prev_right = shared_diffusion.active_range(shape, transforms[-1])
            trans = shared_diffusion.placement(shape, False, prev_right - shape.region, 0)
        transforms.append(trans)
        cell.insert(kdb.CellInstArray(layout.cell(dev.rec.name).cell_index(), trans))
        rec.units.append({
            "instance": dev.cell, "device_id": str(dev.rec.params["device_id"]),
            "unit_cell": dev.rec.name, "origin_um": [um(trans.disp.x), um(trans.disp.y)],
            "orientation": "M90" if trans.is_mirror() else "R0",
            "swapped": dev.terminals["s"] != net, "dummy": False,
        })
    for prev in transforms[:-1]:
        _, prev_right = shared_diffusion.active_range(shape, prev)
        shared_diffusion.close_shared(tech, layout, cell,
                                      shared_diffusion.shared_zone(shape, prev_right, unit_box))
    shared_diffusion.straps(session, cell, run[0].rec, transforms)
    shared_diffusion.join_pins(session, cell, rec.units)
    abut.close_mergeable(tech, layout, cell)
    for unit, dev, trans in zip(rec.units, run, transforms, strict=True):
        joined = unit.get("joined", ())
        for pin in dev.rec.pins:
            if pin.name in joined:
                continue
            name = SWAPPED_PINS.get(pin.name, pin.name) if unit["swapped"] else pin.name
            moved = pin.transformed(trans)
            rec.pins.append(Pin(f"{dev.cell}.{name}", moved.layer, moved.role, moved.box))
    rec.device_area_nm2 = sum(dev.rec.device_area_nm2 for dev in run)
    rec.params = {"shared_regions": len(run) - 1, "net": net}
    session.cells[cell.name] = rec
    return cell.name
