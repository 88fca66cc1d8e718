"""The one place where skills are declared.

Every skill is declared once with :func:`skill` (name, description, JSON Schema of
its input, handler).  ``tools/list`` is generated from this registry and every
``tools/call`` validates its arguments against the declared schema before the
handler runs.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import jsonschema

from centroid_skills.errors import INVALID_PARAM, SkillError

if TYPE_CHECKING:
    from centroid_skills.session import Session

Handler = Callable[["Session", dict[str, Any]], dict[str, Any]]

SKILL_MODULES = (
    "centroid_skills.skills.debug",
    "centroid_skills.skills.tech_skills",
    "centroid_skills.skills.devices",
    "centroid_skills.skills.matching",
    "centroid_skills.skills.guard_ring",
    "centroid_skills.skills.placement",
    "centroid_skills.skills.blocks",
    "centroid_skills.skills.drc",
    "centroid_skills.skills.metrics",
    "centroid_skills.skills.export",
    "centroid_skills.skills.routing",
    "centroid_skills.skills.lvs",
    "centroid_skills.skills.signoff",
    "centroid_skills.skills.simulation",
    "centroid_skills.skills.extraction",
    "centroid_skills.skills.electrical",
)

VALIDATOR_CLASS = jsonschema.Draft202012Validator

#: ``error.details.reason`` of arguments that fail a skill's input schema (the
#: planner's ReAct adjustment keys on it and on ``details.pointer``).
SCHEMA_REASON = "schema"

#: The schema keyword marking a property whose value is a file path the skill reads
#: or writes. Under a worker every such path must resolve inside the candidate's
#: scratch directory (checked by the worker in Rust and again here).
FILE_KEYWORD = "x-centroid-file"

#: ``error.details.reason`` of a file path outside the scratch directory.
OUTSIDE_SCRATCH_REASON = "path_outside_scratch"


def inside(path: str, root: str) -> bool:
    """Whether ``path`` resolves (symlinks followed) inside the directory ``root``."""
    real = os.path.realpath(path)
    real_root = os.path.realpath(root)
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    input_schema: dict[str, Any]
    handler: Handler
    validator: Any = field(repr=False, compare=False, default=None)

    def tool_entry(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "inputSchema": self.input_schema}

    def file_properties(self) -> list[str]:
        """The top-level properties that carry file paths (marked with FILE_KEYWORD)."""
        properties = self.input_schema.get("properties", {})
        return [name for name, spec in properties.items()
                if isinstance(spec, dict) and spec.get(FILE_KEYWORD)]

    def confine(self, arguments: dict[str, Any], root: str) -> None:
        """Raise INVALID_PARAM when a file path argument resolves outside ``root``."""
        for name in self.file_properties():
            value = arguments.get(name)
            if isinstance(value, str) and not inside(value, root):
                raise SkillError(
                    INVALID_PARAM,
                    f"{self.name}: {name} {value!r} is outside the candidate's scratch directory",
                    {"reason": OUTSIDE_SCRATCH_REASON, "path": f"$.{name}", "pointer": f"/{name}",
                     "scratch_dir": root},
                )

    def validate(self, arguments: Any) -> None:
        """Raise INVALID_PARAM with the JSON path of the first schema error."""
        errors = sorted(self.validator.iter_errors(arguments), key=lambda e: (len(e.path), e.path))
        if not errors:
            return
        best = jsonschema.exceptions.best_match(errors)
        path = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in best.absolute_path)
        pointer = "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in best.absolute_path)
        raise SkillError(
            INVALID_PARAM,
            f"invalid arguments for {self.name} at {path}: {best.message}",
            {"reason": SCHEMA_REASON, "path": path, "pointer": pointer,
             "schema_path": "/".join(str(p) for p in best.absolute_schema_path),
             "errors": len(errors)},
        )


_REGISTRY: dict[str, Skill] = {}


def skill(name: str, description: str, input_schema: dict[str, Any]) -> Callable[[Handler], Handler]:
    """Decorator declaring a skill.  The schema is checked to be a valid JSON Schema."""

    def register(handler: Handler) -> Handler:
        if name in _REGISTRY:
            raise RuntimeError(f"skill {name} declared twice")
        schema = dict(input_schema)
        schema.setdefault("type", "object")
        VALIDATOR_CLASS.check_schema(schema)
        _REGISTRY[name] = Skill(name, description, schema, handler, VALIDATOR_CLASS(schema))
        return handler

    return register


def load_all() -> dict[str, Skill]:
    for module in SKILL_MODULES:
        importlib.import_module(module)
    return _REGISTRY


def get(name: str) -> Skill | None:
    return load_all().get(name)


def tools_list() -> list[dict[str, Any]]:
    return [s.tool_entry() for s in load_all().values()]


# --- small schema helpers shared by skill modules -------------------------------------------

def obj(properties: dict[str, Any], required: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = required
    schema.update(extra)
    return schema


LENGTH_M = {"type": "number", "exclusiveMinimum": 0, "maximum": 1e-3,
            "description": "length in metres (at most 1 mm)"}
NAME = {"type": "string", "minLength": 1, "maxLength": 200, "pattern": "^[A-Za-z0-9_.$:-]+$"}
FILE_PATH = {"type": "string", "minLength": 1, "maxLength": 4096, FILE_KEYWORD: True,
             "description": "a file in the candidate's scratch directory"}
