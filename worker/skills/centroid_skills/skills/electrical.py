"""``check.electrical``: connectivity a layout must not have, from the LVS extraction.

Each issue has a ``reason``:

* ``floating_gate`` -- a MOS gate on a net that no source/drain, resistor, capacitor or
  label reaches (nothing sets its voltage);
* ``single_connection`` -- an unlabelled net with at most one device terminal (a dangling
  wire); not the substrate with no terminal at all (a block of PMOS only, whose
  substrate its parent ties);
* ``shorted_to_supply`` -- a net that carries a supply or ground label and another label
  (KLayout names such a net ``a,b``);
* ``floating_dummy`` -- a dummy (S = D = G on one net) whose net is neither one of the
  ``supplies``/``grounds`` nor its own bulk's net (a dummy is tied to its well: PMOS to the
  supply, NMOS to ground, or a device in a well of its own -- a PMOS pair whose bulk is its
  tail -- to that well's net: every terminal on one potential, the device is off);
* ``dummy_on_wrong_rail`` -- a PMOS dummy on a ground or an NMOS dummy on a supply.

The result counts them per reason and names each item. With ``fail_on_issue`` any issue
is a CONFLICT error with ``details.reason = "electrical"`` and the issues.

``gate_only_nets``: how many of the circuit's own nets reach MOS gates only, by design (a
clock or bias the netlist leaves internal, e.g. a switched-capacitor filter whose phases
are not ports). A net inside a block carries no label, so such a net is found floating in
the layout too; up to that many floating gates are the circuit's, not the layout's (LVS
compares the topology): they are listed as ``by_design`` and are no issue. More than that
are all issues.

``circuit_dummies``: likewise, the gate fingers of the circuit's own devices whose drain,
gate and source are one net off the rails (a netlist's shorted device on a signal net): up
to that many floating dummies are the circuit's (``by_design``), more are all issues.

Groups of resistors and capacitors that carry no current (a ring of dummy resistors on
the ground) are set aside before devices are combined, as LVS does (``inert_passives.py``):
combined in the extraction's order, a ring leaves a dangling inner net that is the
circuit's, not the layout's (LVS compares the groups with the schematic's).
"""

from __future__ import annotations

from typing import Any

from centroid_skills.errors import SkillError
from centroid_skills.registry import NAME, obj, skill
from centroid_skills.session import Session
from centroid_skills.skills.lvs import extract

REASONS = ("floating_gate", "single_connection", "shorted_to_supply", "floating_dummy",
           "dummy_on_wrong_rail")


def find_issues(ex: Any, supplies: set[str], grounds: set[str]) -> list[dict[str, Any]]:
    top = ex.netlist.top_circuit()
    issues: list[dict[str, Any]] = []
    rails = supplies | grounds
    for kind, net, bulk in ex.dummies:
        if net not in rails and (not net or net != bulk):
            issues.append({"reason": "floating_dummy", "item": f"{kind} dummy on {net or 'an unnamed net'}"})
        elif (kind == "PMOS" and net in grounds) or (kind == "NMOS" and net in supplies):
            issues.append({"reason": "dummy_on_wrong_rail", "item": f"{kind} dummy on {net}"})
    if top is None:
        return issues
    for net in top.each_net():
        name = net.name or ""
        terminals = [(t.device().device_class().name, t.terminal_def().name) for t in net.each_terminal()]
        labels = [n for n in name.split(",") if n]
        if len(labels) > 1 and rails & set(labels):
            issues.append({"reason": "shorted_to_supply", "item": name})
        if labels:
            continue
        gates = [t for t in terminals if t[1] == "G"]
        if gates and len(gates) == len(terminals):
            issues.append({"reason": "floating_gate", "item": net.expanded_name(), "gates": len(gates)})
        elif not terminals and net.expanded_name() == ex.substrate_net:
            continue
        elif len(terminals) <= 1:
            issues.append({"reason": "single_connection", "item": net.expanded_name()})
    return issues


CHECK_SCHEMA = obj(
    {
        "cell": NAME,
        "supplies": {"type": "array", "maxItems": 100, "items": NAME, "description": "supply nets (PMOS wells, dummies)"},
        "grounds": {"type": "array", "maxItems": 100, "items": NAME, "description": "ground nets (substrate, NMOS dummies)"},
        "fail_on_issue": {"type": "boolean", "default": False},
        "gate_only_nets": {"type": "integer", "minimum": 0, "maximum": 1_000_000, "default": 0,
                           "description": "the circuit's own nets that reach MOS gates only (by "
                                          "design): as many floating gates are no issue"},
        "circuit_dummies": {"type": "integer", "minimum": 0, "maximum": 1_000_000, "default": 0,
                            "description": "gate fingers of the circuit's own devices shorted "
                                           "(D = G = S) on a net off the rails: as many floating "
                                           "dummies are no issue"},
    },
    ["cell"],
)


@skill("check.electrical",
       "Floating gates, dangling nets, nets shorted to a supply, and dummies not tied to "
       "their well's rail, from the layout's extracted netlist; counts and named items.",
       CHECK_SCHEMA)
def check_electrical(session: Session, args: dict[str, Any]) -> dict[str, Any]:
    cell = session.any_cell(args["cell"])
    ex = extract(session, cell, set_aside_inert=True)
    issues = find_issues(ex, set(args.get("supplies") or []), set(args.get("grounds") or []))
    by_design: list[dict[str, Any]] = []
    for reason, allowed in (("floating_gate", args.get("gate_only_nets", 0)),
                            ("floating_dummy", args.get("circuit_dummies", 0))):
        found = [i for i in issues if i["reason"] == reason]
        if found and len(found) <= int(allowed):
            by_design += found
            issues = [i for i in issues if i["reason"] != reason]
    counts = {reason: sum(1 for i in issues if i["reason"] == reason) for reason in REASONS}
    result = {"cell": cell.name, "clean": not issues, "counts": counts, "issues": issues,
              "by_design": by_design, "dummies": len(ex.dummies), "devices": ex.devices_extracted,
              "inert_passive_groups": len(ex.inert)}
    if issues and args.get("fail_on_issue"):
        raise SkillError("CONFLICT", f"{len(issues)} electrical issues in {cell.name}: "
                         + ", ".join(f"{i['reason']} {i['item']}" for i in issues[:5]),
                         {"reason": "electrical", **result})
    return result
