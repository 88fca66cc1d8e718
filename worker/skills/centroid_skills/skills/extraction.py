"""``extract.netlist``: a layout's devices and interconnect parasitics as a SPICE netlist.

Devices come from the LVS extraction (``skills/lvs.py``: KLayout ``LayoutToNetlist``,
layers by role, dummies with S = D = G on one net removed, parallel fingers combined):
drawn W (total over the fingers), L, nf, AS/AD/PS/PD (each terminal's own diffusions,
``junctions_by_net.py``), on the circuit's net names (the
labels). They are written the way the process's models want them (``models.py``
``convention``: ``X… sky130_fd_pr__nfet_01v8 … w= l= nf=`` in µm for SKY130, ``ng=`` and
metres for SG13G2, a ``models`` argument overrides the names). Interconnect parasitics
come from the rule set's ``parasitics`` section (``parasitics.py``):

* every net: a capacitor to ground (node ``0``) for area + fringe capacitance per layer;
* every two nets: one coupling capacitor (same-layer lateral + cross-layer overlap);
* nets in ``sensitive_nets``, and nets whose wire is longer than ``resistance_min_um``:
  a lumped resistor. It is put in series at the net's driver: a port of the subcircuit
  is driven from outside, so the resistor joins the port to every device terminal
  (renamed ``<net>_r``); an inner net is driven by the source/drain terminals on it, so
  the resistor joins those to the gates on it (``<net>_r``). A net without gates or
  without sources/drains keeps its resistance in the result but not in the netlist. The
  net's ground capacitance is split half to each side of the resistor (a π section).

The subcircuit (``circuit``, ports in ``ports`` order) is written to ``path``; the result
has per net ``{cap_fF, coupling_fF: {other: fF}, resistance_ohm}``, totals, and for each
of ``symmetric_pairs`` the two nets' capacitances and their difference (fF).
"""

from __future__ import annotations

import re
from typing import Any

import klayout.db as kdb

from centroid_skills.errors import invalid
from centroid_skills.models import convention
from centroid_skills.models import spice_number as num
from centroid_skills.parasitics import (
    AF_PER_FF,
    DBU_UM,
    LayerCoefficients,
    NetParasitics,
    coefficients,
    fringe_af,
    ground_cap_af,
    lateral_couplings,
    overlap_couplings,
    wire_resistance,
)
from centroid_skills.registry import FILE_PATH, NAME, obj, skill
from centroid_skills.session import Session
from centroid_skills.skills.lvs import Extraction, extract, metal_stack
from centroid_skills.tech import VIA_ROLES, Technology

NO_PARASITICS_REASON = "no_parasitics"
# a SPICE node name as a label gives it; a digit first too: ALIGN's netlists name the
# ground port `0` (SPICE's ground, which the extracted subcircuit then keeps as a port)
SAFE_NET = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:<>\[\]#-]*$")
GROUND = "0"


def net_label(net: kdb.Net) -> str:
    name = net.name or ""
    return name if name and SAFE_NET.match(name) else f"n{net.cluster_id}"


def routing_layers(tech: Technology, section: dict[str, Any]) -> list[tuple[LayerCoefficients, str]]:
    """(coefficients, name of the layer registered by the LVS extraction) per routing layer."""
    out = []
    poly = tech.layer_for("poly")
    if poly is not None:
        co = coefficients(section, poly.name, "poly")
        if co is not None:
            out.append((co, "poly_c" if tech.has("poly_res") else "poly"))
    for role in metal_stack(tech):
        ldef = tech.require(role)
        co = coefficients(section, ldef.name, role)
        if co is not None:
            out.append((co, role))
    return out


def cut_layers(tech: Technology, section: dict[str, Any]) -> list[tuple[float, str]]:
    """(ohm per cut, registered layer name) of the contact and via layers with a value."""
    out = []
    cuts = section.get("cuts") or {}
    for role in ("contact", *VIA_ROLES[:len(metal_stack(tech)) - 1]):
        ldef = tech.layer_for(role)
        if ldef is not None and ldef.name in cuts:
            out.append((float(cuts[ldef.name]["resistance_ohm"]), role))
    return out


# the diffusion the LVS extraction registers (lvs.py): source/drain and taps, on nets
OWN_DIFFUSION = ("nsd", "psd", "ptap", "ntap")


def own_diffusion(l2n: kdb.LayoutToNetlist, net: kdb.Net) -> kdb.Region:
    """The net's own source/drain and tap diffusion."""
    region = kdb.Region()
    for name in OWN_DIFFUSION:
        layer = l2n.layer_by_name(name)
        if layer is not None:
            region += l2n.shapes_of_net(net, layer, True)
    return region.merged()


Shapes = dict[str, dict[str, kdb.Region]]


def net_shapes(l2n: kdb.LayoutToNetlist, top: kdb.Circuit, layers: list[tuple[LayerCoefficients, str]],
               diffusion: kdb.Region) -> tuple[Shapes, Shapes, dict[str, dict[str, kdb.Edges]]]:
    """layer name -> net label -> the net's merged shapes (poly without the gates), and
    the same without what lies over the net's own diffusion (a device's source/drain
    strips, a guard ring's metal on its tap), for the capacitance to substrate and the
    resistance: there the field ends on the same net -- the coefficients are to the
    substrate over field -- and the current runs down the contacts, not along the strip
    (ten drain strips in series were ~1.6 kΩ). Couplings see every shape. Third: the
    edges with a fringe to substrate, the real edges of the shapes off the own diffusion
    (not the cuts where a wire leaves it, nor poly's edges at its gates)."""
    out: Shapes = {}
    off_own: Shapes = {}
    fringe_edges: dict[str, dict[str, kdb.Edges]] = {}
    diffusion_edges = diffusion.edges()
    own = {net.cluster_id: own_diffusion(l2n, net) for net in top.each_net()}
    for co, registered in layers:
        source = l2n.layer_by_name(registered)
        per_net: dict[str, kdb.Region] = {}
        trimmed: dict[str, kdb.Region] = {}
        edges: dict[str, kdb.Edges] = {}
        for net in top.each_net():
            region = l2n.shapes_of_net(net, source, True)
            region.merge()
            if co.role == "poly":
                region -= diffusion
            if region.is_empty():
                continue
            label = net_label(net)
            per_net[label] = region
            below = own[net.cluster_id]
            if co.role == "poly":
                trimmed[label], edges[label] = region, region.edges() - diffusion_edges
            elif below.is_empty():
                trimmed[label], edges[label] = region, region.edges()
            else:
                trimmed[label], edges[label] = region - below, region.edges().outside_part(below)
        out[co.name] = per_net
        off_own[co.name] = trimmed
        fringe_edges[co.name] = edges
    return out, off_own, fringe_edges


def neighbours(nets: dict[str, kdb.Region], net: str, halo_um: float | None) -> kdb.Region:
    """The other nets' shapes on the layer near ``net`` (within the halo)."""
    others = kdb.Region()
    if not halo_um:
        return others
    halo = max(1, int(round(halo_um / DBU_UM)))
    box = nets[net].bbox().enlarged(halo, halo)
    for other, region in nets.items():
        if other != net and box.overlaps(region.bbox()):
            others += region
    return others


def compute(section: dict[str, Any], shapes: Shapes, off_own: Shapes,
            fringe_edges: dict[str, dict[str, kdb.Edges]],
            layers: list[tuple[LayerCoefficients, str]]) -> dict[str, NetParasitics]:
    """Per net: capacitance to substrate and resistance of ``off_own`` (the shapes off
    the net's own diffusion; the fringe of ``fringe_edges``, shielded by the other nets'
    shapes of the layer in front of them), couplings of ``shapes``."""
    nets: dict[str, NetParasitics] = {}
    by_name = {co.name: co for co, _ in layers}

    def add_coupling(pairs: dict[tuple[str, str], float]) -> None:
        for (a, b), af in pairs.items():
            for x, y in ((a, b), (b, a)):
                entry = nets.setdefault(x, NetParasitics())
                entry.coupling_af[y] = entry.coupling_af.get(y, 0.0) + af

    overlaps = [o for o in section.get("overlaps") or [] if o["layer"] in shapes and o["layer2"] in shapes]
    for co, _ in layers:
        lower = [o["layer2"] for o in overlaps if o["layer"] == co.name]
        shield = kdb.Region()
        for name in lower:
            for region in shapes[name].values():
                shield += region
        for net, region in off_own[co.name].items():
            entry = nets.setdefault(net, NetParasitics())
            fringe = fringe_af(shapes[co.name][net], fringe_edges[co.name][net],
                               neighbours(shapes[co.name], net, co.fringe_shield_um), co)
            af = ground_cap_af(region, shield, co, fringe)
            entry.cap_af += af
            entry.by_layer_af[co.name] = af
            ohm, length = wire_resistance(region, co.sheet_ohm)
            entry.resistance_ohm += ohm
            entry.wire_length_um += length
        add_coupling(lateral_couplings(shapes[co.name], by_name[co.name]))
    for o in overlaps:
        add_coupling(overlap_couplings(shapes[o["layer"]], shapes[o["layer2"]], float(o["area_cap_af_um2"])))
    return nets


def device_lines(top: kdb.Circuit, ex: Extraction, tech_name: str, names: dict[str, str],
                 rename: dict[tuple[int, str], str]) -> list[str]:
    conv = convention(tech_name)
    unit = conv.length_unit_m
    lines = []
    for i, dev in enumerate(top.each_device(), start=1):
        cls = dev.device_class().name

        def node(term: str, dev: kdb.Device = dev) -> str:
            net = dev.net_for_terminal(term)
            if net is None:
                return f"nc_{dev.id()}_{term}"
            return rename.get((dev.id(), term), net_label(net))

        if cls in ("NMOS", "PMOS"):
            model = names.get(cls.lower(), conv.models[cls.lower()])
            p = {k: dev.parameter(k) for k in ("W", "L", "AS", "AD", "PS", "PD")}
            own = ex.junctions.get(dev.id())
            if own is not None:  # by net: KLayout's combined AS/AD are their mean
                p.update(AS=own.as_um2, AD=own.ad_um2, PS=own.ps_um, PD=own.pd_um)
            lines.append(
                f"{conv.prefix}M{i} {node('D')} {node('G')} {node('S')} {node('B')} {model} "
                f"w={num(p['W'] * 1e-6 / unit)} l={num(p['L'] * 1e-6 / unit)} "
                f"{conv.finger_param}={max(1, ex.fingers.get(dev.id(), 1))} "
                f"as={num(p['AS'] * 1e-12 / unit ** 2)} ad={num(p['AD'] * 1e-12 / unit ** 2)} "
                f"ps={num(p['PS'] * 1e-6 / unit)} pd={num(p['PD'] * 1e-6 / unit)}")
        elif cls == "RES":
            lines.append(f"R{i} {node('A')} {node('B')} {num(dev.parameter('R'))}")
        elif cls == "CAP":
            lines.append(f"C{i} {node('A')} {node('B')} {num(dev.parameter('C'))}")
    return lines


def place_resistors(top: kdb.Circuit, resistive: dict[str, float], ports: set[str]
                    ) -> tuple[dict[tuple[int, str], str], list[tuple[str, str, float]]]:
    """Which device terminals move to ``<net>_r`` and the resistors (driver, loads, ohm)."""
    rename: dict[tuple[int, str], str] = {}
    resistors = []
    terminals: dict[str, list[tuple[int, str]]] = {}
    for dev in top.each_device():
        for td in dev.device_class().terminal_definitions():
            net = dev.net_for_terminal(td.name)
            if net is not None:
                terminals.setdefault(net_label(net), []).append((dev.id(), td.name))
    for net, ohm in sorted(resistive.items()):
        on_net = terminals.get(net, [])
        if net in ports:
            loads = on_net
        else:
            gates = [t for t in on_net if t[1] == "G"]
            drivers = [t for t in on_net if t[1] in ("S", "D", "A", "B") and t not in gates]
            if not gates or not drivers:
                continue
            loads = gates
        if not loads or ohm <= 0:
            continue
        for key in loads:
            rename[key] = f"{net}_r"
        resistors.append((net, f"{net}_r", ohm))
    return rename, resistors


def netlist_text(circuit: str, ports: list[str], header: list[str], devices: list[str],
                 nets: dict[str, NetParasitics], resistors: list[tuple[str, str, float]]) -> str:
    split = {a: b for a, b, _ in resistors}
    lines = [*(f"* {h}" for h in header), f".subckt {circuit} {' '.join(ports)}", *devices]
    for k, (a, b, ohm) in enumerate(resistors, start=1):
        lines.append(f"Rpar{k} {a} {b} {num(ohm)}")
    k = 0
    for net in sorted(nets):
        cap_f = nets[net].cap_af * 1e-18
        if cap_f <= 0:
            continue
        sides = [net, split[net]] if net in split else [net]
        for side in (s for s in sides if s != GROUND):  # ground to ground: nothing
            k += 1
            lines.append(f"Cgnd{k} {side} 0 {num(cap_f / len(sides))}")
    for a in sorted(nets):
        for b, af in sorted(nets[a].coupling_af.items()):
            if a < b and af > 0:
                k += 1
                lines.append(f"Ccpl{k} {a} {b} {num(af * 1e-18)}")
    lines += [f".ends {circuit}", ""]
    return "\n".join(lines)


_PAIR = {"type": "array", "minItems": 2, "maxItems": 2, "items": NAME}
EXTRACT_SCHEMA = obj(
    {
        "cell": {**NAME, "description": "top cell of the layout"},
        "path": {**FILE_PATH, "description": "the SPICE file to write"},
        "circuit": {**NAME, "description": "the subcircuit's name (the circuit's)"},
        "ports": {"type": "array", "minItems": 1, "maxItems": 1000, "items": NAME,
                  "description": "the subcircuit's ports in order (net names, as in the schematic DUT)"},
        "sensitive_nets": {"type": "array", "maxItems": 1000, "items": NAME},
        "resistance_min_um": {"type": "number", "exclusiveMinimum": 0,
                              "description": "nets with more wire than this (µm) get their resistance too"},
        "symmetric_pairs": {"type": "array", "maxItems": 1000, "items": _PAIR},
        "models": obj({"nmos": NAME, "pmos": NAME}, description="model names instead of the process's"),
    },
    ["cell", "path", "circuit", "ports"],
)


@skill("extract.netlist",
       "Extract a layout's devices (W, L, nf, AS/AD/PS/PD) and interconnect parasitics "
       "(capacitance to ground, coupling, resistance of sensitive nets) from the rule set's "
       "parasitics section into a SPICE subcircuit; per-net capacitances in the result.",
       EXTRACT_SCHEMA)
def extract_netlist(session: Session, args: dict[str, Any]) -> dict[str, Any]:
    tech = session.need_tech()
    section = tech.raw.get("parasitics")
    if not section:
        raise invalid(f"rule set {tech.name!r} has no parasitics section (schema 1.4.0)",
                      reason=NO_PARASITICS_REASON, tech=tech.name)
    cell = session.any_cell(args["cell"])
    ex = extract(session, cell)
    top = ex.netlist.top_circuit()
    if top is None:
        raise invalid(f"cell {cell.name} has nothing to extract", reason="empty_layout", cell=cell.name)
    layers = routing_layers(tech, section)
    diffusion = tech.region(session.layout, cell, tech.require("active").name)
    if tech.has("tap"):
        diffusion += tech.region(session.layout, cell, tech.require("tap").name)
    shapes, off_own, fringe_edges = net_shapes(ex.l2n, top, layers, diffusion)
    nets = compute(section, shapes, off_own, fringe_edges, layers)
    labels = {net_label(n) for n in top.each_net()}
    ports = list(args["ports"])
    missing = [p for p in ports if p not in labels]
    if missing:
        raise invalid(f"ports {missing} are not labelled nets of {cell.name}", reason="port_not_in_layout",
                      ports=missing, nets=sorted(labels))
    for (ohm, registered) in cut_layers(tech, section):
        source = ex.l2n.layer_by_name(registered)
        for net in top.each_net():
            cuts = l2n_count(ex.l2n, net, source)
            if cuts:
                nets.setdefault(net_label(net), NetParasitics()).resistance_ohm += ohm / cuts
    limit = args.get("resistance_min_um")
    resistive = {n: p.resistance_ohm for n, p in nets.items()
                 if n in set(args.get("sensitive_nets") or []) or (limit and p.wire_length_um > limit)}
    rename, resistors = place_resistors(top, resistive, set(ports))
    devices = device_lines(top, ex, tech.name, args.get("models") or {}, rename)
    header = [f"extracted by Centroid extract.netlist from cell {cell.name}, rule set {tech.name}",
              f"{len(devices)} devices ({ex.dummies_removed} dummies removed), {len(nets)} nets"]
    with open(args["path"], "w", encoding="utf-8") as fh:
        fh.write(netlist_text(args["circuit"], ports, header, devices, nets, resistors))
    pairs = []
    for a, b in args.get("symmetric_pairs") or []:
        ca = nets.get(a, NetParasitics()).cap_af + sum(nets.get(a, NetParasitics()).coupling_af.values())
        cb = nets.get(b, NetParasitics()).cap_af + sum(nets.get(b, NetParasitics()).coupling_af.values())
        pairs.append({"nets": [a, b], "cap_fF": [round(ca / AF_PER_FF, 6), round(cb / AF_PER_FF, 6)],
                      "mismatch_fF": round(abs(ca - cb) / AF_PER_FF, 6)})
    return {
        "path": args["path"], "circuit": args["circuit"], "ports": ports,
        "devices": len(devices), "dummies_removed": ex.dummies_removed,
        "nets": {n: p.to_dict() for n, p in sorted(nets.items())},
        "resistors": [{"net": a, "between": [a, b], "ohm": round(ohm, 6)} for a, b, ohm in resistors],
        "totals": {"cap_fF": round(sum(p.cap_af for p in nets.values()) / AF_PER_FF, 6),
                   "coupling_fF": round(sum(sum(p.coupling_af.values()) for p in nets.values()) / 2 / AF_PER_FF, 6)},
        "symmetric_pairs": pairs,
    }


def l2n_count(l2n: kdb.LayoutToNetlist, net: kdb.Net, layer: kdb.Region) -> int:
    """Cuts of ``net`` on a cut layer (its merged polygons)."""
    region = l2n.shapes_of_net(net, layer, True)
    region.merge()
    return region.count()
