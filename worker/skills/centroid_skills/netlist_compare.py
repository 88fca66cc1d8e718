"""The comparison of ``lvs.run``: a layout netlist against a schematic netlist with KLayout's
:class:`klayout.db.NetlistComparer`, and what differs as a report.

Nets whose label names a schematic net are paired by name before matching, so an open,
a short or a label on the wrong net is reported against the right names. Compared
parameters: MOS W and L, resistor W, L and R (relative tolerance), gate fingers per
device when both sides count them; capacitors by type and connectivity only. Chains of
identical MOS in series (a stacked cell's segments) are one device on both sides first
(``series_chains.py``): the comparer pairs their inner nets badly when such stacks are
drawn in parallel. Devices the comparer leaves unpaired because their parameters differ
are paired again (same nets, or the only one of their class on each side) and reported as
parameter mismatches.
"""

from __future__ import annotations

from typing import Any

import klayout.db as kdb

from centroid_skills.series_chains import reduce_series_chains


def set_tolerances(nl: kdb.Netlist, tol: float) -> None:
    for dc in nl.each_device_class():
        dc.strict = False  # S/D of MOS, A/B of resistors and capacitors are interchangeable
        if dc.name in ("NMOS", "PMOS", "RES"):
            eq = kdb.EqualDeviceParameters(dc.parameter_id("W"), 1e-4, tol)
            eq += kdb.EqualDeviceParameters(dc.parameter_id("L"), 1e-4, tol)
            if dc.name == "RES":  # R is primary: compared unless given a tolerance too
                eq += kdb.EqualDeviceParameters(dc.parameter_id("R"), 1e-4, tol)
            dc.equal_parameters = eq
        elif dc.name == "CAP":  # connectivity only
            dc.equal_parameters = kdb.EqualDeviceParameters(dc.parameter_id("C"), 1e9, 1e9)


def _dev_info(d: kdb.Device | None) -> dict[str, Any] | None:
    if d is None:
        return None
    dc = d.device_class()
    params = {}
    for pd in dc.parameter_definitions():
        if pd.name in ("W", "L", "R", "C", "A"):
            params[pd.name] = round(d.parameter(pd.name), 6)
    terms = {}
    for td in dc.terminal_definitions():
        n = d.net_for_terminal(td.name)
        terms[td.name] = n.expanded_name() if n is not None else None
    return {"name": d.expanded_name(), "class": dc.name, "params": params, "terminals": terms}


def _net_name(n: kdb.Net | None) -> str | None:
    return None if n is None else n.expanded_name()


def _status_name(st: Any) -> str:
    for name in ("Match", "MatchWithWarning", "Mismatch", "NoMatch", "Skipped", "None_"):
        if st == getattr(kdb.NetlistCrossReference, name, object()):
            return name.rstrip("_")
    return str(st)


def _param_diffs(a: dict[str, Any], b: dict[str, Any], tol: float) -> dict[str, Any]:
    keys = ("W", "L", "R") if b["class"] != "CAP" else ()
    out = {}
    for k in keys:
        va, vb = a["params"].get(k), b["params"].get(k)
        if va is None or vb is None:
            continue
        if abs(va - vb) > 1e-4 + tol * max(abs(va), abs(vb)):
            out[k] = {"layout": va, "schematic": vb}
    return out


def _terminal_key(info: dict[str, Any], rename: dict[str, str]) -> tuple[Any, ...]:
    t = {k: rename.get(v, v) if v is not None else None for k, v in info["terminals"].items()}
    if info["class"] in ("NMOS", "PMOS"):
        return (t.get("G"), t.get("B"), frozenset((t.get("S"), t.get("D"))))
    return (frozenset(t.values()),)


def pair_parameter_mismatches(lay: list[Any], sch: list[Any], out: list[Any],
                              lay2sch: dict[str, str]) -> None:
    """The comparer leaves devices with differing parameters unpaired on both sides: pair
    them again (same class, same nets through the net pairing; else the only candidate of
    its class on each side) and report them as parameter mismatches."""
    for db in list(sch):
        cands = [da for da in lay if da["class"] == db["class"]]
        same_nets = [da for da in cands
                     if _terminal_key(da, lay2sch) == _terminal_key(db, {})]
        pick = same_nets[0] if same_nets else None
        if pick is None and len(cands) == 1 and sum(x["class"] == db["class"] for x in sch) == 1:
            pick = cands[0]
        if pick is None:
            continue
        lay.remove(pick)
        sch.remove(db)
        diffs = _param_diffs(pick, db, 0.0)
        out.append({"layout": pick, "schematic": db, "status": "ParameterMismatch",
                    "differences": diffs, "nets_agree": bool(same_nets)})


def compare(layout_nl: kdb.Netlist, schematic: kdb.Netlist, tol: float,
            fingers: tuple[dict[int, int], dict[int, int]] | None = None) -> dict[str, Any]:
    set_tolerances(layout_nl, tol)
    set_tolerances(schematic, tol)
    reduced = (reduce_series_chains(layout_nl, fingers[0] if fingers else {}),
               reduce_series_chains(schematic, fingers[1] if fingers else {}))
    if fingers is not None:
        fingers = reduced
    comp = kdb.NetlistComparer()
    comp.max_branch_complexity = 500
    comp.max_depth = 16
    a = layout_nl.top_circuit()
    b = schematic.top_circuit()
    paired = []
    if a is not None and b is not None:
        for nb in b.each_net():
            na = a.net_by_name(nb.name)
            if na is not None:
                comp.same_nets(a, b, na, nb)
                paired.append(nb.name)
        comp.same_circuits(a, b)
    xref = kdb.NetlistCrossReference()
    ok = comp.compare(layout_nl, schematic, xref)
    finger_mismatch = False
    unmatched_devices_layout: list[Any] = []
    unmatched_devices_schematic: list[Any] = []
    parameter_mismatches: list[Any] = []
    unmatched_nets_layout: list[str] = []
    unmatched_nets_schematic: list[str] = []
    net_mismatches: list[Any] = []
    for cp in xref.each_circuit_pair():
        for dp in xref.each_device_pair(cp):
            st = _status_name(dp.status())
            da, db = dp.first(), dp.second()
            if da is None and db is not None:
                unmatched_devices_schematic.append(_dev_info(db))
            elif db is None and da is not None:
                unmatched_devices_layout.append(_dev_info(da))
            else:
                ia, ib = _dev_info(da), _dev_info(db)
                assert ia is not None and ib is not None
                diffs = _param_diffs(ia, ib, tol) if st != "Match" else {}
                if fingers is not None and ia["class"] in ("NMOS", "PMOS"):
                    fa, fb = fingers[0].get(da.id()), fingers[1].get(db.id())
                    ia["fingers"], ib["fingers"] = fa, fb
                    if fa != fb:
                        diffs["fingers"] = {"layout": fa, "schematic": fb}
                        finger_mismatch = True
                if (st != "Match" and (st != "MatchWithWarning" or diffs)) or "fingers" in diffs:
                    parameter_mismatches.append({"layout": ia, "schematic": ib, "status": st,
                                                 "differences": diffs})
        for np_ in xref.each_net_pair(cp):
            st = _status_name(np_.status())
            na, nb = np_.first(), np_.second()
            if na is None and nb is not None:
                unmatched_nets_schematic.append(_net_name(nb) or "?")
            elif nb is None and na is not None:
                unmatched_nets_layout.append(_net_name(na) or "?")
            elif st not in ("Match", "MatchWithWarning"):
                net_mismatches.append({"layout": _net_name(na), "schematic": _net_name(nb),
                                       "status": st})
    lay2sch: dict[str, str] = {}
    for cp in xref.each_circuit_pair():
        for np_ in xref.each_net_pair(cp):
            if np_.first() is not None and np_.second() is not None:
                lay2sch[np_.first().expanded_name()] = np_.second().expanded_name()
    pair_parameter_mismatches(unmatched_devices_layout, unmatched_devices_schematic,
                              parameter_mismatches, lay2sch)
    return {
        "match": bool(ok) and not finger_mismatch,
        "unmatched_devices_layout": unmatched_devices_layout,
        "unmatched_devices_schematic": unmatched_devices_schematic,
        "parameter_mismatches": parameter_mismatches,
        "unmatched_nets_layout": sorted(unmatched_nets_layout),
        "unmatched_nets_schematic": sorted(unmatched_nets_schematic),
        "net_mismatches": net_mismatches,
        "nets_paired_by_label": len(paired),
    }
