"""Technology skills: load a rule set, inspect it."""

from __future__ import annotations

from typing import Any

from centroid_skills.registry import obj, skill
from centroid_skills.session import Session
from centroid_skills.tech import Technology


@skill(
    "tech.load",
    "Load the technology from a drc_rules.json object (schema 1.0.0/1.1.0/1.2.0). Replaces the "
    "current technology and clears the layout. Returns the resolved layer roles.",
    obj({"rules": {"type": "object", "description": "the drc_rules.json object"},
         "keep_layout": {"type": "boolean", "default": False}}, ["rules"]),
)
def load(session: Session, args: dict[str, Any]) -> dict[str, Any]:
    tech = Technology.from_rules(args["rules"])
    session.tech = tech
    if not args.get("keep_layout", False):
        session.clear_layout()
    missing = [r for r in ("active", "poly", "contact", "metal1", "via1", "metal2")
               if not tech.has(r)]
    if not (tech.has("pplus") or tech.has("nplus")):
        missing.append("pplus|nplus")
    return {**tech.summary(), "missing_roles": missing}


@skill("tech.info", "Summary of the loaded technology (roles, rule count, grid).", obj({}))
def info(session: Session, args: dict[str, Any]) -> dict[str, Any]:
    return session.need_tech().summary()


@skill(
    "tech.rules",
    "Rules matching a (type, role, role2) lookup, with the value the generators use (nm).",
    obj({"type": {"enum": ["width", "spacing", "enclosure", "extension", "overlap", "density",
                           "area"]},
         "role": {"type": "string"}, "role2": {"type": "string"}}, ["type", "role"]),
)
def rules(session: Session, args: dict[str, Any]) -> dict[str, Any]:
    tech = session.need_tech()
    found = tech.rules_for(args["type"], args["role"], args.get("role2"))
    if args["type"] == "area":
        return {"rules": [r.to_dict() for r in found], "value_nm2": tech.area(args["role"])}
    return {"rules": [r.to_dict() for r in found],
            "value_nm": tech.rule_min(args["type"], args["role"], args.get("role2"))}
