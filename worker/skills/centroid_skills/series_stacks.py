"""A series stack of one- or two-finger devices drawn finger by finger on one diffusion
(issue 26).

A unit of two fingers reads S G D G S: both its ends are one net, so neighbouring units of
a stack ``d-i1, i1-i2, i2-i3, i3-s`` share only every other inner node
(:mod:`centroid_skills.diffusion_runs`).  A diffusion piece whose every gate is a finger
of the stack is a walk over the stack's nodes using each device twice; it ends where it
started.  Started at the middle node ``c`` it goes out to the one end and back, then out
to the other end and back::

    i2 i3 s i3 i2 i1 d i1 i2      (four devices: c = i2; gates i2|i3 = the device i2-i3, …)

so every node is one piece of diffusion with its neighbours, and the walk's repeated
regions nest: ``i3`` (regions 1, 3) and ``i1`` (5, 7) lie inside ``i2`` (0, 4, 8).  The
generator (:func:`centroid_skills.mos.draw_mos` with ``regions``) straps them so: the two
ends of the stack (``d``, ``s``: one region each, innermost) take a via-1 onto a metal-2
bar below the diffusion, as a unit's drain — their pins —; every inner node a metal-1 bus
below, the innermost right under the drain bars (where a unit's source bus is), each
enclosing one a level lower (the straps of an outer node stand outside the spans of the
inner ones, so no two cross).  The stack costs a gate pitch per finger and one metal-1
level per nesting depth beyond the first instead of a unit width and a rule gap per
two devices.  Devices of one finger (S G D: a run pairs them, the left one mirrored) are
simply drawn end to end, ``d i1 i2 i3 s``, each inner node one region under its own strap.

Only stacks of three or more devices are drawn so (two share their one inner node as a
run already), each device of one or two fingers, all alike (type, W, L), on one gate and
one bulk net, the inner nodes never the bulk.  The first stack of a unit and size drawn on
a rule set is checked against every rule (density excepted); where it does not pass, the
stacks of that unit and size are left to the runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from centroid_skills.mos import RegionMetal, draw_mos
from centroid_skills.routing.terminals import STACK_KIND
from centroid_skills.session import CellRecord, Pin, Session

#: fingers per device of the stacks drawn finger by finger
STACK_FINGERS = (1, 2)
#: the fewest devices drawn as a stack (two share their inner node as a run)
MIN_DEVICES = 3

#: verdicts of stacks drawn: (rule-set fingerprint, the unit's parameters but its device, devices) -> clean
_VERDICTS: dict[tuple[object, ...], bool] = {}
_MAX_VERDICTS = 1024


@dataclass(frozen=True)
class StackDevice:
    """One device of a stack: its unit cell and its terminals."""

    cell: str  # the unit cell placed in the row
    rec: CellRecord
    terminals: dict[str, str]

    @property
    def device_id(self) -> str:
        return str(self.rec.params["device_id"])


def chain_nodes(devices: list[StackDevice]) -> list[str] | None:
    """The stack's nodes end to end (``n0 … nk`` for ``k`` devices, device ``j`` between
    ``nj`` and ``nj+1``), or ``None`` when the devices are not one series chain whose
    inner nodes are distinct and none of them the bulk."""
    if len(devices) < 2:
        return None
    bulk = devices[0].terminals.get("b")
    ends = [(dev.terminals["d"], dev.terminals["s"]) for dev in devices]
    if any(a == b for a, b in ends):
        return None
    shared = set(ends[0]) & set(ends[1])
    if len(shared) != 1:
        return None
    (first,) = shared
    nodes = [ends[0][1] if ends[0][0] == first else ends[0][0], first]
    for a, b in ends[1:]:
        if nodes[-1] not in (a, b):
            return None
        nodes.append(b if a == nodes[-1] else a)
    inner = nodes[1:-1]
    if len(set(nodes)) != len(nodes) or bulk in inner:
        return None
    return nodes


def walk(count: int, fingers: int) -> list[int]:
    """The node index of each source/drain region, left to right, of ``count`` devices:
    of one finger end to end, of two from the middle node out to each end and back."""
    if fingers == 1:
        return list(range(count + 1))
    c = count // 2
    right = list(range(c, count + 1)) + list(range(count - 1, c - 1, -1))
    left = list(range(c - 1, -1, -1)) + list(range(1, c + 1))
    return right + left


def level(count: int, fingers: int, node: int) -> int | None:
    """The metal-1 bus level of a node (0: right under the drain bars, the source bus's
    place), ``None`` for the stack's ends (a via onto a metal-2 bar)."""
    c = count // 2
    if node in (0, count):
        return None
    if fingers == 1:  # one region: its strap alone
        return 0
    if node > c:
        return count - 1 - node
    if node < c:
        return node - 1
    return max(count - 1 - c, c - 1, 0)


def region_plan(nodes: list[str], fingers: int) -> list[RegionMetal]:
    count = len(nodes) - 1
    return [RegionMetal(nodes[j], level(count, fingers, j)) for j in walk(count, fingers)]


def _fingerprint(session: Session) -> object:
    tech = session.need_tech()
    return (tech.name, tuple(tech.rules), tuple(sorted(tech.layers.items())))


def draw_stack(session: Session, devices: list[StackDevice], nodes: list[str]) -> str | None:
    """The stack's cell (kind ``series_stack``), or ``None`` when it does not pass every rule."""
    from centroid_skills.skills.drc import run_checks  # the DRC skill family's checker

    tech = session.need_tech()
    unit = devices[0].rec
    drawn = tuple(sorted((k, str(v)) for k, v in unit.params.items() if k != "device_id"))
    key = (_fingerprint(session), drawn, len(devices))
    if _VERDICTS.get(key) is False:
        return None
    nf = int(unit.params["nf"])
    w_nm, l_nm = tech.nm(unit.params["w"]), tech.nm(unit.params["l"])
    per_device = int(unit.params["fingers"])
    fingers = per_device * len(devices)
    finger_w = tech.snap(w_nm / nf)
    cell = session.new_cell(session.unique_name(f"{devices[0].cell}_stack"))
    pins, info = draw_mos(session, cell, str(unit.params["type"]), finger_w * fingers, l_nm,
                          fingers, 1, regions=region_plan(nodes, per_device))
    if key not in _VERDICTS:
        types = sorted({r.type for r in tech.rules} - {"density"})
        if len(_VERDICTS) >= _MAX_VERDICTS:
            _VERDICTS.clear()
        _VERDICTS[key] = all(result.count == 0 for result in
                             run_checks(tech, session.layout, cell, types=types))
    if not _VERDICTS[key]:
        cell.delete()
        return None
    rec = CellRecord(name=cell.name, kind=STACK_KIND)
    *regions, gate = pins  # the gate strap's pin comes last
    rec.pins = [_device_pin(pin, devices) for pin in regions]
    rec.pins.append(Pin(f"{devices[0].device_id}.G", gate.layer, gate.role, gate.box))
    rec.params = {"type": unit.params["type"], "devices": [d.device_id for d in devices],
                  "nodes": nodes, "fingers": fingers, "gate_pitch_um": info["gate_pitch_um"],
                  # what the devices measure drawn alone (``layout.metrics``' device area)
                  "device_areas_nm2": [d.rec.device_area_nm2 for d in devices]}
    rec.device_area_nm2 = sum(d.rec.device_area_nm2 for d in devices)
    session.cells[cell.name] = rec
    return cell.name


def _device_pin(pin: Pin, devices: list[StackDevice]) -> Pin:
    """A source/drain pin of the drawn stack (named by its net) as one device's terminal:
    ``<device>.<S|D>``."""
    for dev in devices:
        for terminal in ("d", "s"):
            if dev.terminals[terminal] == pin.name:
                return Pin(f"{dev.device_id}.{terminal.upper()}", pin.layer, pin.role, pin.box)
    raise ValueError(f"net {pin.name} is no device's terminal")  # the plan names only these
