"""Hierarchical blocks: ``layout.instantiate_block``.

A block is a cell routed by ``route.nets`` with ``ports`` (one metal-2 pin per port
net at its bottom edge, no labels inside).  Each instance of the subcircuit it draws
is a cell of its own holding ONE reference to the block cell (never a copy: the GDS
holds the block once), recorded with kind ``block``, the instance's ``device_id``
(``X1``) and the block's pins.  ``layout.place`` places instance cells in rows like any
cell; ``route.nets`` sees an instance as a device of type ``block`` whose terminals map
each port net inside the block to a net of the parent.
"""

from __future__ import annotations

from typing import Any

import klayout.db as kdb

from centroid_skills.errors import invalid
from centroid_skills.registry import NAME, obj, skill
from centroid_skills.session import CellRecord, Session, box_um


@skill("layout.instantiate_block",
       "Make cell cell_name holding one instance (a reference, not a copy) of a block routed "
       "by route.nets with ports; the new cell is the block instance device_id (e.g. X1): "
       "place it in a row with layout.place and route it as a device of type block.",
       obj({"block": NAME, "device_id": {"type": "string", "minLength": 1, "maxLength": 200},
            "cell_name": NAME},
           ["block", "device_id", "cell_name"]))
def instantiate_block(session: Session, args: dict[str, Any]) -> dict[str, Any]:
    session.need_tech()
    name = args["block"]
    rec = session.cells.get(name)
    block = session.layout.cell(name)
    if rec is None or block is None:
        problem = "unknown"
    elif rec.kind != "block":
        problem = f"a {rec.kind} cell, not a block"
    elif "device_id" in rec.params or "ports" not in rec.params:
        problem = "an instance of a block, not a block"
    else:
        problem = None
    if problem is not None:
        raise invalid(f"{name} is {problem}: give a cell routed by route.nets with ports",
                      block=name, reason="not_a_block", blocks=sorted(n for n, r in session.cells.items()
                                                if r.kind == "block" and "device_id" not in r.params)[:50])
    cell = session.new_cell(args["cell_name"])
    cell.insert(kdb.CellInstArray(block.cell_index(), kdb.Trans()))
    inst = CellRecord(name=cell.name, kind="block",
                      params={"device_id": args["device_id"], "block": name,
                              "ports": list(rec.params["ports"])},
                      pins=list(rec.pins), device_area_nm2=rec.device_area_nm2)
    session.cells[cell.name] = inst
    return {"cell": cell.name, "block": name, "device_id": args["device_id"],
            "bbox_um": box_um(cell.bbox()), "pins": [p.to_dict() for p in inst.pins]}
