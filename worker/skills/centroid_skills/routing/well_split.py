"""A placed row whose MOS devices sit on several bulk nets (two supplies, a PMOS with its
bulk tied to its source) split into one row per bulk net, bottom to top in the order the
nets first appear from the left: each row then gets its own tap rail and, for PMOS, its
own n-well, which the stacking keeps the rule set's n-well spacing from the next row's.

Each new row is placed again as ``layout.place`` places a row (the cells in their order,
rule gaps plus the extra gap the row had, bridges between neighbours), centred where its
cells stood; a row whose cells are rotated or mirrored keeps every cell in place instead,
its own shapes going to the new row whose cells alone they touch. A cell that holds
devices on two bulk nets cannot stand in one well and is refused, naming its devices."""

from __future__ import annotations

from typing import Any

import klayout.db as kdb

from centroid_skills import abut
from centroid_skills.errors import invalid
from centroid_skills.routing.terminals import instance_terms
from centroid_skills.session import Session
from centroid_skills.skills import placement

Devices = dict[str, dict[str, Any]]


def bulk_of(device: dict[str, Any]) -> str | None:
    return (device.get("terminals") or {}).get("b")


def _instance_bulk(session: Session, row: str, inst: kdb.Instance, devices: Devices,
                   mos_types: set[str]) -> str | None:
    """The one bulk net of the MOS devices in ``inst`` (``None``: only dummies or passives);
    adds their types to ``mos_types``."""
    nets: dict[str, list[str]] = {}
    for t in instance_terms(session, inst):
        if t.mos:
            mos_types.add(t.mos)
        if t.mos and t.device is not None and t.device in devices:
            net = bulk_of(devices[t.device])
            if net is not None and t.device not in nets.setdefault(net, []):
                nets[net].append(t.device)
    if len(nets) > 1:
        described = "; ".join(f"{net}: {', '.join(devs[:6])}" for net, devs in sorted(nets.items()))
        raise invalid(f"{inst.cell.name} in row {row} holds devices on different bulk nets "
                      f"({described}): one cell stands in one well; draw them as separate cells",
                      row=row, cell=inst.cell.name, bulk_nets=sorted(nets))
    return next(iter(nets), None)


def split_by_bulk(session: Session, name: str, cell: kdb.Cell,
                  devices: Devices) -> list[tuple[str, kdb.Cell]]:
    """``[(name, cell)]`` when the row's MOS devices share one bulk net (or the row mixes
    nmos and pmos, which the caller refuses), else one new row cell per bulk net (named
    ``<row>_b<k>``), bottom to top."""
    instances = sorted(cell.each_inst(), key=lambda inst: (inst.bbox().left, inst.bbox().bottom))
    mos_types: set[str] = set()
    bulk = [_instance_bulk(session, name, inst, devices, mos_types) for inst in instances]
    nets = list(dict.fromkeys(net for net in bulk if net is not None))
    if len(nets) < 2 or len(mos_types) > 1:
        return [(name, cell)]
    # cells without a MOS device of the circuit (dummies alone) stay with the net left of them
    last = nets[0]
    for i, net in enumerate(bulk):
        last = net if net is not None else last
        bulk[i] = last
    groups = [[inst for inst, on in zip(instances, bulk, strict=True) if on == net] for net in nets]
    if all(_translated(inst) for inst in instances):
        return [_packed_row(session, f"{name}_b{k}", group, _row_gap(session, instances))
                for k, group in enumerate(groups)]
    return _kept_in_place(session, name, cell, groups)


def _translated(inst: kdb.Instance) -> bool:
    trans = inst.cell_inst.trans
    return not inst.is_regular_array() and trans.rot == 0 and not trans.is_mirror()


def _row_gap(session: Session, instances: list[kdb.Instance]) -> int:
    """The extra gap the placement kept between neighbours: the smallest gap between two
    neighbouring cells' bboxes (a pair the rules keep further apart only widens it)."""
    gaps = [b.bbox().left - a.bbox().right for a, b in zip(instances, instances[1:], strict=False)]
    return max(0, min(gaps)) if gaps else 0


def _packed_row(session: Session, name: str, group: list[kdb.Instance], gap: int) -> tuple[str, kdb.Cell]:
    """The group's cells placed again side by side as ``layout.place`` places a row (rule
    gaps, the row's extra gap, bridges between neighbours), centred where the cells were."""
    tech = session.need_tech()
    layout = session.layout
    left = min(inst.bbox().left for inst in group)
    right = max(inst.bbox().right for inst in group)
    placed = placement.place_rows(session, [{"cells": [inst.cell.name for inst in group],
                                              "gap": gap / 1000}], tech.snap((left + right) // 2), 0)
    part = session.new_cell(session.unique_name(name))
    for p in placed:
        part.insert(kdb.CellInstArray(p.cell.cell_index(), p.trans))
    drawn: list[tuple[str, kdb.Box]] = []
    for a, b in zip(placed, placed[1:], strict=False):
        drawn += abut.bridges(tech, a.ex, b.ex, "x")
    abut.draw_bridges(tech, layout, part, drawn)
    abut.heal_bridges(tech, layout, part, drawn)
    return part.name, part


def _kept_in_place(session: Session, name: str, cell: kdb.Cell,
                   groups: list[list[kdb.Instance]]) -> list[tuple[str, kdb.Cell]]:
    """One row per group, every cell where it stood; the row's own shapes (bridges) go to
    the row whose cells alone they touch."""
    layout = session.layout
    parts: list[tuple[str, kdb.Cell]] = []
    boxes: list[kdb.Region] = []
    for k, group in enumerate(groups):
        part = session.new_cell(session.unique_name(f"{name}_b{k}"))
        region = kdb.Region()
        for inst in group:
            part.insert(inst.cell_inst)
            region.insert(inst.bbox())
        boxes.append(region)
        parts.append((part.name, part))
    for li in layout.layer_indexes():
        for shape in cell.shapes(li).each():
            probe = kdb.Region(shape.bbox().enlarged(1, 1))
            touched = [k for k, region in enumerate(boxes) if not (probe & region).is_empty()]
            if len(touched) == 1:
                parts[touched[0]][1].shapes(li).insert(shape)
    return parts
