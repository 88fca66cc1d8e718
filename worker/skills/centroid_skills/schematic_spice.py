"""The schematic (flattened circuit devices) as a SPICE subcircuit for a process's models:
the reference that ``extract.netlist``'s post-layout netlist is compared with. With
``lengths`` (the rule set's contacted diffusion lengths) each MOSFET carries the
source/drain junctions a schematic tool would estimate (``junction_estimate.py``);
without, the bare netlist (no AD/AS/PD/PS: no junction capacitance)."""

from __future__ import annotations

import re
from typing import Any

from centroid_skills.errors import invalid
from centroid_skills.junction_estimate import DiffusionLengths, estimate
from centroid_skills.models import convention
from centroid_skills.models import spice_number as num


def _name(device_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", device_id)


def junction_params(w_m: float, nf: int, lengths: DiffusionLengths, unit_m: float) -> str:
    """`ad= as= pd= ps=` of one instance in the models' length unit."""
    j = estimate(w_m * 1e6, nf, lengths)
    area = 1e-12 / unit_m ** 2
    return (f" ad={num(j.ad_um2 * area)} as={num(j.as_um2 * area)} "
            f"pd={num(j.pd_um * 1e-6 / unit_m)} ps={num(j.ps_um * 1e-6 / unit_m)}")


def schematic_subckt(circuit: str, ports: list[str], devices: list[dict[str, Any]], tech: str,
                     names: dict[str, str], lengths: DiffusionLengths | None = None) -> str:
    conv = convention(tech)
    unit = conv.length_unit_m
    junctions = ("junctions estimated from the rule set" if lengths else "no junctions")
    lines = [f"* schematic of {circuit} written by Centroid sim.schematic ({conv.process} models, "
             f"{junctions})", f".subckt {circuit} {' '.join(ports)}"]
    for dev in devices:
        params = dict(dev.get("params") or {})
        params.update({k: dev[k] for k in ("w", "l", "nf", "m", "value") if dev.get(k) is not None})
        terms = {k.lower(): v for k, v in dev["terminals"].items()}
        kind = dev["type"]
        if kind in ("nmos", "pmos"):
            missing = [t for t in ("d", "g", "s", "b") if t not in terms]
            if missing:
                raise invalid(f"device {dev['id']} lacks terminals {missing}", device=dev["id"])
            w, length = float(params["w"]), float(params["l"])
            nf, m = int(params.get("nf") or 1), int(params.get("m") or 1)
            line = (f"{conv.prefix}{_name(dev['id'])} {terms['d']} {terms['g']} {terms['s']} {terms['b']} "
                    f"{names.get(kind, conv.models[kind])} w={num(w / unit)} l={num(length / unit)} "
                    f"{conv.finger_param}={nf}")
            if lengths is not None:
                line += junction_params(w, nf, lengths, unit)
            lines.append(line + (f" m={m}" if m > 1 else ""))
        elif kind == "resistor":
            a, b = list(dev["terminals"].values())[:2]
            lines.append(f"R{_name(dev['id'])} {a} {b} {num(float(params.get('value') or 1.0))}")
        else:
            a, b = list(dev["terminals"].values())[:2]
            lines.append(f"C{_name(dev['id'])} {a} {b} {num(float(params.get('value') or 1e-15))}")
    lines += [f".ends {circuit}", ""]
    return "\n".join(lines)
