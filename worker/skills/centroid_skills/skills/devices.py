"""``layout.create_device``: one device cell (nmos/pmos, poly resistor, plate or MIM
capacitor).  The generators are :mod:`centroid_skills.mos` (transistors) and
:mod:`centroid_skills.passives` (resistors, capacitors); every dimension comes from the
rule set via :mod:`centroid_skills.rules` and :mod:`centroid_skills.cuts`; the cell origin
is the lower-left corner of the (first) diffusion.
"""

from __future__ import annotations

from typing import Any

from centroid_skills.draw import Painter, contact_column, grow_to_area, grow_to_width, implant_role
from centroid_skills.errors import invalid
from centroid_skills.mos import density_relief, draw_mos, mos_plan
from centroid_skills.passives import draw_capacitor, draw_mim, draw_resistor, max_density, mim_stack
from centroid_skills.registry import LENGTH_M, NAME, obj, skill
from centroid_skills.session import CellRecord, Session, box_um, um

# Re-exported for the other generators (rings, rails, modules) and the tests.
__all__ = ["MOS_TYPES", "Painter", "cell_summary", "contact_column", "density_relief", "draw_capacitor",
           "draw_mim", "draw_mos", "draw_resistor", "grow_to_area", "grow_to_width", "implant_role",
           "make_device", "max_density", "mim_stack", "mos_plan"]

MOS_TYPES = ("nmos", "pmos")
MAX_FINGERS = 1024


# --------------------------------------------------------------------------------------------
# skill
# --------------------------------------------------------------------------------------------

def make_device(session: Session, spec: dict[str, Any], cell_name: str | None = None,
                dummy: bool = False) -> CellRecord:
    """Create a device cell from a device spec; returns its record (also used by modules)."""
    tech = session.need_tech()
    dtype = spec["type"]
    w_nm = tech.nm(spec["w"])
    l_nm = tech.nm(spec["l"])
    nf = int(spec.get("nf", 1))
    m = int(spec.get("m", 1))
    device_id = spec.get("device_id")
    if dtype in MOS_TYPES and nf * m > MAX_FINGERS:
        raise invalid(f"nf*m = {nf * m} fingers is more than {MAX_FINGERS} in one cell",
                      nf=nf, m=m, max_fingers=MAX_FINGERS)
    if cell_name is None:
        cell_name = device_id or session.unique_name(f"{dtype}_w{w_nm}_l{l_nm}_nf{nf}_m{m}")
    cell = session.new_cell(cell_name, replace=bool(spec.get("replace", False)))
    try:
        if dtype in MOS_TYPES:
            pins, info = draw_mos(session, cell, dtype, w_nm, l_nm, nf, m, dummy=dummy)
            area = int(info["active_area_um2"] * 1e6)
        elif dtype == "resistor":
            pins, info = draw_resistor(session, cell, w_nm, l_nm, spec.get("segments"))
            area = 0
        elif dtype == "capacitor" and spec.get("cap_kind", "plate") == "mim":
            pins, info = draw_mim(session, cell, w_nm, l_nm)
            area = 0
        elif dtype == "capacitor":
            pins, info = draw_capacitor(session, cell, w_nm, l_nm)
            area = 0
        else:  # schema prevents this
            raise invalid(f"unknown device type {dtype}")
    except Exception:
        cell.delete()
        raise
    bbox = cell.bbox()
    rec = CellRecord(name=cell_name, kind=dtype,
                     params={"type": dtype, "w": spec["w"], "l": spec["l"], "nf": nf, "m": m,
                             "device_id": device_id, "dummy": dummy, **info},
                     pins=pins, device_area_nm2=bbox.area(), dummies=1 if dummy else 0)
    rec.params["active_area_nm2"] = area
    session.cells[cell_name] = rec
    if device_id:
        # device ids are local to a block (every block has its M1): the id names the
        # device cell made last (a parent's own devices come after its blocks')
        session.devices[device_id] = cell_name
    return rec


def cell_summary(session: Session, rec: CellRecord) -> dict[str, Any]:
    cell = session.layout.cell(rec.name)
    bbox = cell.bbox()
    return {
        "cell_name": rec.name,
        "kind": rec.kind,
        "bbox_um": box_um(bbox),
        "width_um": um(bbox.width()),
        "height_um": um(bbox.height()),
        "pins": {p.name: p.to_dict() for p in rec.pins},
        # a block's recorded route.nets arguments (block_reshaping) stay in the session
        "params": {k: v for k, v in rec.params.items() if k != "route_args"},
    }


DEVICE_SPEC = obj(
    {
        "device_id": NAME,
        "type": {"enum": ["nmos", "pmos", "resistor", "capacitor"]},
        "w": {**LENGTH_M, "maximum": 1e-2,
              "description": "MOS: total width of one instance (split over nf, each finger at most "
                             "1 mm: the circuit's checks); resistor: bar width; capacitor: plate width"},
        "l": {**LENGTH_M, "maximum": 1e-2,
              "description": "MOS: gate length; resistor: bar length (at most 1 cm, folded); "
                             "capacitor: plate length (the circuit's checks bound MOS and plates to 1 mm)"},
        "nf": {"type": "integer", "minimum": 1, "maximum": MAX_FINGERS, "default": 1},
        "m": {"type": "integer", "minimum": 1, "maximum": MAX_FINGERS, "default": 1},
        "cell_name": NAME,
        "dummy": {"type": "boolean", "default": False},
        "replace": {"type": "boolean", "default": False},
        "segments": {"type": "integer", "minimum": 1, "maximum": 256,
                     "description": "resistor: number of parallel poly segments the bar is folded "
                                    "into (1 = one straight bar; more must be even: both terminals "
                                    "stay at the bottom); default: a long bar folds into the even "
                                    "count whose bounding box is closest to square"},
        "cap_kind": {"enum": ["plate", "mim"], "default": "plate",
                     "description": "capacitor: metal-1/metal-2 plate, or MIM (needs a mim layer)"},
    },
    ["type", "w", "l"],
)


@skill("layout.create_device",
       "Create one device cell: nmos/pmos (w = total width of one instance split over nf "
       "fingers, m parallel instances, diffusion/gates/contacts/metal-1 straps/metal-2 drain "
       "bus/implant/nwell), a poly resistor or a metal-1/metal-2 plate capacitor. Returns the "
       "cell name, bbox and pins (terminal -> layer + box, µm).",
       DEVICE_SPEC)
def create_device(session: Session, args: dict[str, Any]) -> dict[str, Any]:
    rec = make_device(session, args, cell_name=args.get("cell_name"), dummy=bool(args.get("dummy")))
    return cell_summary(session, rec)
