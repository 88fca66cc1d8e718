"""``lvs.run``: KLayout netlist extraction of a cell compared with the input circuit.

Extraction (:class:`klayout.db.LayoutToNetlist`, flat), every layer found by role:

* diffusion = active (+ tap when the rule set separates it); p-type = diffusion AND
  pplus, n-type = diffusion AND nplus (or NOT pplus when the rule set has no nplus,
  e.g. IHP SG13G2, and vice versa);
* NMOS (:class:`DeviceExtractorMOS4Transistor`): gate = poly AND n-diffusion outside
  nwell, S/D = n-diffusion outside nwell NOT poly, bulk = substrate (the cell's bbox
  NOT nwell); PMOS: gate = poly AND p-diffusion in nwell, S/D = p-diffusion in nwell
  NOT poly, bulk = nwell;
* taps: p-diffusion outside nwell connects the substrate, n-diffusion in nwell the
  nwell; both connect through contacts like any diffusion;
* resistor (:class:`DeviceExtractorResistor`): body = poly AND poly_res, terminals on
  poly NOT poly_res; sheet resistance from the poly_res (else poly) layer, 1 Ω/□ when
  the rule set gives none; W and L from the body;
* capacitor (:class:`DeviceExtractorCapacitor`): metal1 over metal2 *inside the cells
  the generator recorded as capacitors* (the plate capacitor has no marker layer of
  its own, so routing crossings elsewhere are not capacitors); C from the area
  capacitance of metal2/metal1 when declared, else 1 fF/µm²;
* conductors: contact, metal1..N, via1..N-1 (as many as the rule set declares),
  net names from text labels on ``<metal>_label`` layers (or on the metal itself).

Before comparing: devices whose S, D and G sit on one net are dummies and are removed;
groups of resistors and capacitors that carry no current (a ring of dummy resistors on the
ground) are set aside on both sides and compared as groups (``inert_passives.py``);
parallel devices are combined (``combine_devices``: fingers and m add up W; the
segments of a folded resistor add up L, the nets between them are removed); then, on
both sides, every chain of identical MOS in series (one gate, bulk, W, L; its inner nodes
joining nothing else) is one device of the chain's length (``series_chains.py``), so
``devices_after_combine`` and ``schematic_devices`` count such a stack once.

The schematic is built from the flattened circuit (``devices`` as ``centroid validate``
prints them): one MOS4 per instance with W = w (per instance, so that m instances and
nf fingers add up to w·m after combining), L = l; resistors with W = w, L = l, R =
sheet·l/w; capacitors with C = w·l·area capacitance.  Compared parameters: MOS W and
L, resistor W and L (relative tolerance ``tolerance``, default 1 %); capacitors only
by type and connectivity (the plate capacitor's drawn area is density-limited).
Nets whose label names a schematic net are paired by name before matching, so an
open, a short or a label on the wrong net is reported against the right names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import klayout.db as kdb

from centroid_skills import junctions_by_net
from centroid_skills.errors import invalid
from centroid_skills.inert_passives import InertGroup, remove_inert_groups, unpaired
from centroid_skills.junctions_by_net import DeviceJunctions
from centroid_skills.netlist_compare import compare
from centroid_skills.registry import NAME, obj, skill
from centroid_skills.session import Session
from centroid_skills.tech import METAL_ROLES, VIA_ROLES, Technology

CLASS_NAMES = {"nmos": "NMOS", "pmos": "PMOS", "resistor": "RES", "capacitor": "CAP"}
MOS_TERMINALS = {"s": "S", "g": "G", "d": "D", "b": "B"}
TWO_TERMINALS = {"p": "A", "n": "B", "plus": "A", "minus": "B", "a": "A"}
# Without an area capacitance in the rule set, capacitors are extracted with a unit
# placeholder: LVS compares their type and connectivity, not their value, so no
# process figure is needed (or assumed) here.
DEFAULT_AREA_CAP = 1.0  # F/m², a placeholder, not a process value


@dataclass
class Extraction:
    l2n: kdb.LayoutToNetlist
    netlist: kdb.Netlist
    dummies_removed: int
    devices_extracted: int
    fingers: dict[int, int]  # combined device id -> gate fingers
    # (NMOS/PMOS, net name or "", its bulk's net name or "") of each removed dummy
    dummies: list[tuple[str, str, str]]
    # combined MOSFET id -> its drawn junctions by terminal net (KLayout's combined AS/AD
    # are the mean of source and drain: junctions_by_net.py)
    junctions: dict[int, DeviceJunctions] = field(default_factory=dict)
    substrate_net: str | None = None  # expanded name of the substrate's net (outside every well)
    # groups of passives carrying no current, set aside before combining (LVS only)
    inert: list[InertGroup] = field(default_factory=list)


def metal_stack(tech: Technology) -> list[str]:
    """metal1..metalN as long as the via below each next metal exists."""
    roles = ["metal1"]
    for i in range(1, len(METAL_ROLES)):
        if tech.has(METAL_ROLES[i]) and tech.has(VIA_ROLES[i - 1]):
            roles.append(METAL_ROLES[i])
        else:
            break
    return roles


def _capacitor_cells(session: Session) -> list[int]:
    out = []
    for name, rec in session.cells.items():
        if rec.kind == "capacitor":
            c = session.layout.cell(name)
            if c is not None:
                out.append(c.cell_index())
    return out


def extract(session: Session, cell: kdb.Cell, set_aside_inert: bool = False) -> Extraction:
    tech = session.need_tech()
    layout = session.layout
    # detached (flat) mode: flat booleans on an analog cell are much faster than deep ones
    l2n = kdb.LayoutToNetlist(cell.name, layout.dbu)
    l2n.threads = 1
    counter = [0]

    def reg(region: kdb.Region, name: str | None = None) -> kdb.Region:
        counter[0] += 1
        l2n.register(region, name or f"l{counter[0]}")
        return region

    def flat(role: str) -> kdb.Region:
        ldef = tech.layer_for(role)
        li = layout.find_layer(ldef.layer, ldef.datatype) if ldef is not None else None
        if li is None:
            return kdb.Region()
        return kdb.Region(kdb.RecursiveShapeIterator(layout, cell, li))

    def layer(role: str) -> kdb.Region:
        return reg(flat(role), role)

    def text_layer(role: str) -> kdb.Texts | None:
        ldef = tech.layer_for(role)
        if ldef is None:
            return None
        li = layout.find_layer(ldef.layer, ldef.datatype)
        if li is None:
            return None
        texts = kdb.Texts(kdb.RecursiveShapeIterator(layout, cell, li))
        l2n.register(texts, role + "_text")
        return texts

    active = flat("active")
    diff = active + flat("tap") if tech.has("tap") else active
    poly = layer("poly")
    cont = layer("contact")
    nwell = layer("nwell")
    if tech.has("pplus"):
        pdiff = diff & flat("pplus")
        ndiff = (diff & flat("nplus")) if tech.has("nplus") else (diff - pdiff)
    else:
        ndiff = diff & flat("nplus")
        pdiff = diff - ndiff
    if tech.has("poly_res"):
        res_body = reg(poly & layer("poly_res"), "res_body")
        poly_c = reg(poly - res_body, "poly_c")
    else:
        res_body = None
        poly_c = poly
    n_out = ndiff - nwell
    p_in = pdiff & nwell
    ngate = reg(poly_c & n_out, "ngate")
    pgate = reg(poly_c & p_in, "pgate")
    nsd = reg(n_out - poly, "nsd")
    psd = reg(p_in - poly, "psd")
    ptap = reg((pdiff - nwell) - poly, "ptap")
    ntap = reg((ndiff & nwell) - poly, "ntap")
    bbox = cell.bbox().enlarged(1000, 1000)
    substrate = reg(kdb.Region(bbox) - nwell, "substrate")

    l2n.extract_devices(kdb.DeviceExtractorMOS4Transistor("NMOS"),
                        {"SD": nsd, "G": ngate, "P": poly_c, "W": substrate})
    l2n.extract_devices(kdb.DeviceExtractorMOS4Transistor("PMOS"),
                        {"SD": psd, "G": pgate, "P": poly_c, "W": nwell})
    if res_body is not None:
        ldef = tech.layer_for("poly_res")
        sheet = (ldef.sheet_resistance if ldef else None) or tech.require("poly").sheet_resistance or 1.0
        l2n.extract_devices(kdb.DeviceExtractorResistor("RES", float(sheet)),
                            {"R": res_body, "C": poly_c})
    metals = metal_stack(tech)
    metal_regions = {m: layer(m) for m in metals}
    cap_cells = _capacitor_cells(session)
    if cap_cells:
        area_cap = None
        for role in ("metal2", "metal1"):
            ldef = tech.layer_for(role)
            if ldef is not None and ldef.area_capacitance:
                area_cap = ldef.area_capacitance
                break
        plates = []
        for role in ("metal1", "metal2"):
            ldef = tech.require(role)
            li = layout.find_layer(ldef.layer, ldef.datatype)
            if li is None:
                plates.append(reg(kdb.Region(), f"cap_{role}"))
                continue
            it = kdb.RecursiveShapeIterator(layout, cell, li)
            it.unselect_all_cells()
            it.select_cells(cap_cells)
            plates.append(reg(kdb.Region(it), f"cap_{role}"))
        # F/m² -> F/µm²
        l2n.extract_devices(kdb.DeviceExtractorCapacitor("CAP", (area_cap or DEFAULT_AREA_CAP) * 1e-12),
                            {"P1": plates[0], "P2": plates[1]})
        l2n.connect(plates[0])
        l2n.connect(plates[1])
        l2n.connect(plates[0], metal_regions["metal1"])
        l2n.connect(plates[1], metal_regions["metal2"])

    for conductor in (nsd, psd, ptap, ntap, poly_c, cont, nwell, substrate):
        l2n.connect(conductor)
    for d in (nsd, psd, ptap, ntap, poly_c):
        l2n.connect(d, cont)
    l2n.connect(ptap, substrate)
    l2n.connect(ntap, nwell)
    l2n.connect(cont, metal_regions["metal1"])
    for i, m in enumerate(metals):
        l2n.connect(metal_regions[m])
        texts = text_layer(f"{m}_label")
        if texts is None:
            texts = text_layer(m)
        if texts is not None:
            l2n.connect(metal_regions[m], texts)
        if i + 1 < len(metals):
            via = layer(VIA_ROLES[i])
            l2n.connect(via)
            l2n.connect(metal_regions[m], via)
            l2n.connect(via, metal_regions[metals[i + 1]])
    l2n.extract_netlist()
    # the margin around the cell is substrate whatever the wells: its net is the substrate's
    probed = l2n.probe_net(substrate, kdb.Point(bbox.left + 1, bbox.bottom + 1))
    substrate_net = probed.expanded_name() if probed is not None else None
    netlist = l2n.netlist()
    netlist.flatten()
    top = netlist.top_circuit()
    extracted = len(list(top.each_device())) if top is not None else 0
    removed = 0
    dummies: list[tuple[str, str, str]] = []
    if top is not None:
        for dev in list(top.each_device()):
            if dev.device_class().name not in ("NMOS", "PMOS"):
                continue
            nets = {_net_id(dev.net_for_terminal(t)) for t in ("S", "D", "G")}
            if len(nets) == 1:
                dummies.append((dev.device_class().name, dev.net_for_terminal("G").name or "",
                                _bulk_name(dev)))
                top.remove_device(dev)
                removed += 1
    inert: list[InertGroup] = []
    if top is not None and set_aside_inert:  # LVS: labels are the layout's only names
        inert = remove_inert_groups(top, lambda net: bool(net.name), lambda net: net.name or "")
    counts = _finger_counts(top, {}) if top is not None else {}
    joints = [n.cluster_id for n in top.each_net() if n.terminal_count() >= 2] if top is not None else []
    diffusions = junctions_by_net.by_net(top, _mos_key) if top is not None else {}
    netlist.combine_devices()
    if top is not None:
        _remove_absorbed_joints(top, joints)
    fingers = _fingers_after(top, counts) if top is not None else {}
    junctions = junctions_by_net.per_device(top, _mos_key, diffusions) if top is not None else {}
    return Extraction(l2n, netlist, removed, extracted, fingers, dummies, junctions, substrate_net, inert)


def _remove_absorbed_joints(top: kdb.Circuit, cluster_ids: list[int]) -> None:
    """Remove the unnamed nets that joined devices and now join none: the joints inside a
    series chain ``combine_devices`` made one device (a folded resistor's bends); left in,
    they would look like dangling wires."""
    for cid in cluster_ids:
        net = top.net_by_cluster_id(cid)
        if (net is not None and not net.name and net.terminal_count() == 0
                and net.pin_count() == 0 and net.subcircuit_pin_count() == 0):
            top.remove_net(net)


def _mos_key(dev: kdb.Device) -> tuple[Any, ...]:
    def n(t: str) -> str | None:
        net = dev.net_for_terminal(t)
        return None if net is None else net.expanded_name()

    return (dev.device_class().name, round(dev.parameter("L"), 4), n("G"), n("B"),
            frozenset((n("S"), n("D"))))


def _finger_counts(circuit: kdb.Circuit, weight: dict[int, int]) -> dict[tuple[Any, ...], int]:
    """Gate fingers per (class, L, G, B, {S, D}) before parallel devices are combined."""
    out: dict[tuple[Any, ...], int] = {}
    for dev in circuit.each_device():
        if dev.device_class().name in ("NMOS", "PMOS"):
            key = _mos_key(dev)
            out[key] = out.get(key, 0) + weight.get(dev.id(), 1)
    return out


def _fingers_after(circuit: kdb.Circuit, counts: dict[tuple[Any, ...], int]) -> dict[int, int]:
    return {dev.id(): counts.get(_mos_key(dev), 0) for dev in circuit.each_device()
            if dev.device_class().name in ("NMOS", "PMOS")}


def _bulk_name(dev: kdb.Device) -> str:
    """The name of the net on a MOS device's bulk terminal ("" when it has none or no name)."""
    if not any(t.name == "B" for t in dev.device_class().terminal_definitions()):
        return ""
    net = dev.net_for_terminal("B")
    return (net.name or "") if net is not None else ""


def _net_id(net: kdb.Net | None) -> int:
    return -1 if net is None else net.cluster_id


# --------------------------------------------------------------------------------------------
# schematic
# --------------------------------------------------------------------------------------------

def device_params(dev: dict[str, Any]) -> dict[str, Any]:
    """Accept both ``{w, l, nf, m}`` and ``{params: {w, l, nf, m, value}}`` (centroid validate)."""
    p = dict(dev.get("params") or {})
    for key in ("w", "l", "nf", "m", "value"):
        if key in dev and dev[key] is not None:
            p[key] = dev[key]
    return p


def build_schematic(tech: Technology, devices: list[dict[str, Any]], name: str,
                    labelled: set[str]) -> tuple[kdb.Netlist, dict[int, int], list[InertGroup]]:
    """The schematic netlist (parallel devices combined), its gate fingers per device and
    the groups of passives carrying no current it set aside (``labelled``: the nets the
    layout labels)."""
    nl = kdb.Netlist()
    circuit = kdb.Circuit()
    circuit.name = name
    nl.add(circuit)
    classes: dict[str, kdb.DeviceClass] = {}

    def cls(dtype: str) -> kdb.DeviceClass:
        if dtype not in classes:
            if dtype in ("nmos", "pmos"):
                dc: kdb.DeviceClass = kdb.DeviceClassMOS4Transistor()
            elif dtype == "resistor":
                dc = kdb.DeviceClassResistor()
            else:
                dc = kdb.DeviceClassCapacitor()
            dc.name = CLASS_NAMES[dtype]
            nl.add(dc)
            classes[dtype] = dc
        return classes[dtype]

    nets: dict[str, kdb.Net] = {}
    weight: dict[int, int] = {}

    def net(n: str) -> kdb.Net:
        if n not in nets:
            nets[n] = circuit.create_net(n)
        return nets[n]

    area_cap = DEFAULT_AREA_CAP
    for role in ("metal2", "metal1"):
        ldef = tech.layer_for(role)
        if ldef is not None and ldef.area_capacitance:
            area_cap = ldef.area_capacitance
            break
    for dev in devices:
        dtype = dev.get("type")
        if dtype not in CLASS_NAMES:
            raise invalid(f"device {dev.get('id')}: unsupported type {dtype!r}", device=dev.get("id"))
        p = device_params(dev)
        terms = dev.get("terminals") or {}
        m = int(p.get("m") or 1)
        for k in range(m):
            d = circuit.create_device(cls(dtype), dev["id"] if m == 1 else f"{dev['id']}.{k + 1}")
            w_um = float(p.get("w") or 0) * 1e6
            l_um = float(p.get("l") or 0) * 1e6
            if dtype in ("nmos", "pmos"):
                weight[d.id()] = int(p.get("nf") or 1)
                d.set_parameter("W", w_um)
                d.set_parameter("L", l_um)
                mapping = MOS_TERMINALS
                missing = [t for t in ("g", "d", "s", "b") if t not in terms]
                if missing:
                    raise invalid(f"device {dev['id']} lacks terminals {missing}", device=dev["id"])
            else:
                mapping = TWO_TERMINALS
                if dtype == "resistor":
                    d.set_parameter("W", w_um)
                    d.set_parameter("L", l_um)
                    if w_um > 0:
                        ldef = tech.layer_for("poly_res")
                        sheet = (ldef.sheet_resistance if ldef else None) or 1.0
                        d.set_parameter("R", sheet * l_um / w_um)
                else:
                    d.set_parameter("C", area_cap * w_um * l_um * 1e-12)
            for t, n in terms.items():
                tn = mapping.get(t.lower())
                if tn is None:
                    raise invalid(f"device {dev['id']}: unknown terminal {t!r}", device=dev["id"])
                d.connect_terminal(tn, net(n))
    for dev in list(circuit.each_device()):  # same rule as for the layout's dummies
        if dev.device_class().name in ("NMOS", "PMOS") and len(
                {dev.net_for_terminal(t).expanded_name() for t in ("S", "D", "G")}) == 1:
            circuit.remove_device(dev)
    inert = remove_inert_groups(circuit, lambda n: n.name in labelled,
                                lambda n: n.name if n.name in labelled else "")
    counts = _finger_counts(circuit, weight)
    nl.combine_devices()
    return nl, _fingers_after(circuit, counts), inert


LVS_SCHEMA = obj(
    {
        "cell": {**NAME, "description": "top cell of the layout to check"},
        "devices": {"type": "array", "minItems": 1, "items": {
            "type": "object", "required": ["id", "type", "terminals"],
            "properties": {
                "id": {"type": "string", "minLength": 1, "maxLength": 200},
                "type": {"enum": ["nmos", "pmos", "resistor", "capacitor"]},
                "w": {"type": "number", "exclusiveMinimum": 0},
                "l": {"type": "number", "exclusiveMinimum": 0},
                "nf": {"type": "integer", "minimum": 1},
                "m": {"type": "integer", "minimum": 1},
                "params": {"type": "object"},
                "model": {},
                "terminals": {"type": "object", "additionalProperties": {"type": "string", "minLength": 1}},
            }}, "description": "flattened circuit devices (as `centroid validate --json` prints them)"},
        "circuit_name": {"type": "string", "minLength": 1, "maxLength": 200},
        "tolerance": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.01},
        "write_netlists": {"type": "boolean", "default": False,
                           "description": "include both netlists (SPICE text) in the result"},
    },
    ["cell", "devices"],
)


@skill("lvs.run",
       "Extract the netlist of a cell with KLayout (MOS4 nmos/pmos with bulk via taps, poly "
       "resistors, plate capacitors, labels) and compare it with the flattened circuit "
       "(device types, W, L, fingers/m combined, connectivity). Reports match or the "
       "unmatched/mismatching devices and nets.",
       LVS_SCHEMA)
def lvs_run(session: Session, args: dict[str, Any]) -> dict[str, Any]:
    tech = session.need_tech()
    cell = session.any_cell(args["cell"])
    tol = float(args.get("tolerance", 0.01))
    ex = extract(session, cell, set_aside_inert=True)
    top = ex.netlist.top_circuit()
    labels = sorted({n.name for n in top.each_net() if n.name}) if top is not None else []
    schematic, sch_fingers, sch_inert = build_schematic(
        tech, args["devices"], args.get("circuit_name") or cell.name, set(labels))
    result = compare(ex.netlist, schematic, tol, (ex.fingers, sch_fingers))
    only_layout, only_schematic = unpaired(ex.inert, sch_inert, tol)
    if only_layout or only_schematic:
        result["match"] = False
        result["unmatched_devices_layout"] += [group.as_dict() for group in only_layout]
        result["unmatched_devices_schematic"] += [group.as_dict() for group in only_schematic]
    schematic_nets = sorted(n.name for n in schematic.top_circuit().each_net())
    result.update({
        "cell": cell.name,
        "devices_extracted": ex.devices_extracted,
        "dummies_removed": ex.dummies_removed,
        "inert_passive_groups": len(ex.inert),
        "devices_after_combine": len(list(top.each_device())) if top is not None else 0,
        "schematic_devices": len(list(schematic.top_circuit().each_device())),
        "unlabelled_nets": [n for n in schematic_nets if n not in labels],
    })
    if args.get("write_netlists"):
        result["layout_netlist"] = ex.netlist.to_s()
        result["schematic_netlist"] = schematic.to_s()
    return result
