"""Technology: a rule set (docs/contracts.md §1, schema 1.0.0 / 1.1.0 / 1.2.0) made usable.

* layers by role (explicit ``role`` wins, then inference from the layer name),
* derived layers (``and`` / ``or`` / ``not``) as :class:`klayout.db.Region` expressions,
* rule lookup by (type, layer role, layer2 role) in integer database units,
* grid snapping.

The layout database unit is fixed at 1 nm.  Every length handed to the generators
comes from here; nothing in the generators is a process number.

Rule lookup is conservative: a rule on a derived layer counts for every role the
derived layer is built from (``a and b`` -> roles of a and b, ``a or b`` -> both,
``a not b`` -> roles of a), and the *largest* matching ``min`` wins.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import jsonschema
import klayout.db as kdb

from centroid_skills.errors import INVALID_PARAM, SkillError

DBU_UM = 0.001  # 1 nm database unit
NM_PER_M = 1e9

RULE_TYPES = ("width", "spacing", "enclosure", "extension", "overlap", "density", "area")
# 1.2.0: line-end and adjacent-side enclosures, wide-metal spacing (lengths in metres)
RULE_LENGTH_FIELDS = ("end_min", "end_width", "adjacent_min", "adjacent_below", "width_over")

# Role inference from layer names (case-insensitive exact match), contracts.md §1.
ROLE_BY_NAME: dict[str, str] = {}
for _role, _names in {
    "active": ("Activ", "COMP", "diff", "OD", "RX"),
    "poly": ("GatPoly", "Poly2", "poly", "PO", "PC"),
    "contact": ("Cont", "Contact", "CO", "CA", "licon"),
    "metal1": ("Metal1", "met1", "M1"),
    "via1": ("Via1", "V1"),
    "metal2": ("Metal2", "met2", "M2"),
    "nwell": ("NWell", "Nwell", "NW"),
    "nplus": ("nSD", "Nplus", "NP", "nsdm"),
    "pplus": ("pSD", "Pplus", "PP", "psdm"),
}.items():
    for _name in _names:
        ROLE_BY_NAME[_name.lower()] = _role

# Roles only special devices draw: rules on layers built from them do not constrain
# ordinary transistors and wiring (pass a context that names them to include them).
EXOTIC_ROLES = frozenset({"poly_res", "mim"})
DEFAULT_CONTEXT: frozenset[str] = frozenset()
RESISTOR_CONTEXT = frozenset({"poly", "poly_res", "contact", "metal1", "via1", "metal2",
                              "poly_contact_marker"})
METAL_ROLES = tuple(f"metal{i}" for i in range(1, 10))
VIA_ROLES = tuple(f"via{i}" for i in range(1, 9))

_LAYER_OBJECT = {
    "type": "object",
    "required": ["layer"],
    "properties": {
        "layer": {"type": "integer", "minimum": 0},
        "datatype": {"type": "integer", "minimum": 0},
        "role": {"type": "string", "minLength": 1},
        "sheet_resistance": {"type": "number", "minimum": 0},
        "area_capacitance": {"type": "number", "minimum": 0},
        "max_current_density": {"type": "number", "exclusiveMinimum": 0},
        "description": {"type": "string"},
    },
}

RULESET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["tech", "layers", "rules"],
    "properties": {
        "schema_version": {"type": "string", "pattern": "^1\\.[0-4]\\.[0-9]+$"},
        "tech": {"type": "string", "minLength": 1},
        "grid": {"type": "number", "exclusiveMinimum": 0},
        "layers": {
            "type": "object",
            "minProperties": 1,
            "additionalProperties": {"oneOf": [{"type": "integer", "minimum": 0}, _LAYER_OBJECT]},
        },
        "derived_layers": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "required": ["op", "a", "b"],
                "properties": {
                    "op": {"enum": ["and", "or", "not"]},
                    "a": {"type": "string"},
                    "b": {"type": "string"},
                },
            },
        },
        "rules": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["id", "type", "layer"],
                "properties": {
                    "id": {"type": "string", "minLength": 1},
                    "type": {"enum": list(RULE_TYPES)},
                    "layer": {"type": "string", "minLength": 1},
                    "layer2": {"type": "string", "minLength": 1},
                    "min": {"type": "number", "minimum": 0},
                    "max": {"type": "number", "minimum": 0},
                    **{f: {"type": "number", "minimum": 0} for f in RULE_LENGTH_FIELDS},
                    "description": {"type": "string"},
                },
            },
        },
    },
}
_RULESET_VALIDATOR = jsonschema.Draft202012Validator(RULESET_SCHEMA)


def opened(region: kdb.Region, width: int) -> kdb.Region:
    """The parts of ``region`` wider than ``width`` (nm): the region opened by width/2,
    computed at twice the scale so that odd widths stay exact; a part exactly ``width``
    wide vanishes (wide-metal spacing, ``width_over``)."""
    doubled = region.transformed(kdb.ICplxTrans(2.0))
    wide = doubled.sized(-width).sized(width).transformed(kdb.ICplxTrans(0.5))
    return wide & region


def _check_pairs(r: dict[str, Any], i: int) -> None:
    """The 1.2.0 fields come in pairs and only on their rule type (the Rust loader says the
    same with more words; this keeps a hand-written request from meaning something else)."""
    pairs = (("end_min", "end_width"), ("adjacent_min", "adjacent_below"))
    for a, b in pairs:
        if (a in r) != (b in r):
            raise SkillError(INVALID_PARAM, f"rule {r['id']!r}: {a} and {b} come together",
                             {"path": f"$.rules.rules[{i}]", "rule": r["id"]})
        if a in r and r["type"] != "enclosure":
            raise SkillError(INVALID_PARAM, f"rule {r['id']!r}: {a}/{b} belong to enclosure rules",
                             {"path": f"$.rules.rules[{i}]", "rule": r["id"]})
    if "width_over" in r and (r["type"] != "spacing" or "layer2" in r):
        raise SkillError(INVALID_PARAM, f"rule {r['id']!r}: width_over belongs to same-layer spacing rules",
                         {"path": f"$.rules.rules[{i}]", "rule": r["id"]})
    if r["type"] == "area" and ("layer2" in r or r.get("min") is None):
        raise SkillError(INVALID_PARAM, f"rule {r['id']!r}: an area rule has one layer and a min (m²)",
                         {"path": f"$.rules.rules[{i}]", "rule": r["id"]})


def grid_in_dbu(grid_m: float) -> int:
    """The smallest whole number of database units (nm) that is a multiple of the grid:
    a 5 nm grid is 5, a 2.5 nm grid 5 (coordinates must be on the grid and on the dbu)."""
    g = grid_m * NM_PER_M
    for k in range(1, 1001):
        if abs(k * g - round(k * g)) < 1e-6 * max(1.0, k * g):
            return max(1, round(k * g))
    return max(1, math.ceil(g))


@dataclass(frozen=True)
class LayerDef:
    name: str
    layer: int
    datatype: int
    role: str | None
    role_source: str  # "explicit" | "inferred" | "none"
    sheet_resistance: float | None = None
    area_capacitance: float | None = None
    max_current_density: float | None = None  # A per metre of wire width

    def info(self) -> kdb.LayerInfo:
        return kdb.LayerInfo(self.layer, self.datatype, self.name)


@dataclass(frozen=True)
class Rule:
    id: str
    type: str
    layer: str
    layer2: str | None
    min: float | None  # metres (fraction for density, m² for area)
    max: float | None
    description: str | None = None
    end_min: float | None = None  # enclosure at line ends of layer (m)
    end_width: float | None = None  # a line end is an edge shorter than this (m)
    adjacent_min: float | None = None  # enclosure of the sides adjacent to a thin side (m)
    adjacent_below: float | None = None  # a side enclosed by less than this is thin (m)
    width_over: float | None = None  # spacing of the parts of layer wider than this (m)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "type": self.type, "layer": self.layer,
                               "layer2": self.layer2, "min": self.min, "max": self.max,
                               "description": self.description}
        for key in RULE_LENGTH_FIELDS:
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out


@dataclass
class Technology:
    name: str
    schema_version: str
    grid_nm: int
    layers: dict[str, LayerDef]
    derived: dict[str, tuple[str, str, str]]
    rules: list[Rule]
    roles: dict[str, str] = field(default_factory=dict)  # role -> layer name
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def from_rules(cls, data: Any) -> Technology:
        errors = sorted(_RULESET_VALIDATOR.iter_errors(data), key=lambda e: list(e.path))
        if errors:
            err = jsonschema.exceptions.best_match(errors)
            path = "$.rules" + "".join(
                f"[{p}]" if isinstance(p, int) else f".{p}" for p in err.absolute_path)
            raise SkillError(INVALID_PARAM, f"invalid rule set at {path}: {err.message}",
                             {"path": path})
        layers: dict[str, LayerDef] = {}
        explicit: dict[str, str] = {}
        for name, spec in data["layers"].items():
            if isinstance(spec, int):
                spec = {"layer": spec}
            role = spec.get("role")
            if role is not None:
                if role in explicit:
                    raise SkillError(INVALID_PARAM, f"role {role!r} declared on two layers",
                                     {"role": role, "layers": [explicit[role], name]})
                explicit[role] = name
            layers[name] = LayerDef(name, int(spec["layer"]), int(spec.get("datatype", 0)), role,
                                    "explicit" if role else "none",
                                    spec.get("sheet_resistance"), spec.get("area_capacitance"),
                                    spec.get("max_current_density"))
        roles = dict(explicit)
        for name, ldef in list(layers.items()):
            if ldef.role is not None:
                continue
            inferred = ROLE_BY_NAME.get(name.lower())
            if inferred and inferred not in roles:
                roles[inferred] = name
                layers[name] = LayerDef(name, ldef.layer, ldef.datatype, inferred, "inferred",
                                        ldef.sheet_resistance, ldef.area_capacitance,
                                        ldef.max_current_density)
        derived: dict[str, tuple[str, str, str]] = {}
        for name, spec in (data.get("derived_layers") or {}).items():
            if name in layers:
                raise SkillError(INVALID_PARAM, f"derived layer {name!r} shadows a layer",
                                 {"layer": name})
            derived[name] = (spec["op"], spec["a"], spec["b"])
        known = set(layers) | set(derived)
        for name, (_op, a, b) in derived.items():
            for operand in (a, b):
                if operand not in known:
                    raise SkillError(INVALID_PARAM,
                                     f"derived layer {name!r} refers to unknown layer {operand!r}",
                                     {"derived_layer": name, "layer": operand})
        tech = cls(
            name=data["tech"],
            schema_version=data.get("schema_version", "1.0.0"),
            grid_nm=grid_in_dbu(float(data.get("grid", 1e-9))),
            layers=layers, derived=derived, rules=[], roles=roles, raw=data,
        )
        for name in derived:
            tech._check_acyclic(name, ())
        for i, r in enumerate(data["rules"]):
            for key in ("layer", "layer2"):
                if key in r and r[key] not in known:
                    raise SkillError(INVALID_PARAM, f"rule {r['id']!r} refers to unknown layer {r[key]!r}",
                                     {"path": f"$.rules.rules[{i}].{key}", "rule": r["id"]})
            if r["type"] in ("enclosure", "extension", "overlap") and "layer2" not in r:
                raise SkillError(INVALID_PARAM, f"rule {r['id']!r} of type {r['type']} needs layer2",
                                 {"path": f"$.rules.rules[{i}]", "rule": r["id"]})
            _check_pairs(r, i)
            tech.rules.append(Rule(r["id"], r["type"], r["layer"], r.get("layer2"), r.get("min"),
                                   r.get("max"), r.get("description"),
                                   **{f: r.get(f) for f in RULE_LENGTH_FIELDS}))
        return tech

    def _check_acyclic(self, name: str, stack: tuple[str, ...]) -> None:
        if name in stack:
            raise SkillError(INVALID_PARAM, f"derived layer cycle through {name!r}",
                             {"cycle": [*stack, name]})
        if name in self.derived:
            _op, a, b = self.derived[name]
            self._check_acyclic(a, (*stack, name))
            self._check_acyclic(b, (*stack, name))

    # -- units --------------------------------------------------------------------------------
    @staticmethod
    def nm(metres: float) -> int:
        """Metres -> integer nm (database units)."""
        return int(round(metres * NM_PER_M))

    def snap_up(self, value_nm: float) -> int:
        g = self.grid_nm
        return int(math.ceil(value_nm / g - 1e-9)) * g

    def snap_down(self, value_nm: float) -> int:
        g = self.grid_nm
        return int(math.floor(value_nm / g + 1e-9)) * g

    def snap(self, value_nm: float) -> int:
        g = self.grid_nm
        return int(round(value_nm / g)) * g

    # -- roles --------------------------------------------------------------------------------
    def layer_for(self, role: str) -> LayerDef | None:
        name = self.roles.get(role)
        return self.layers[name] if name else None

    def has(self, role: str) -> bool:
        return role in self.roles

    def require(self, role: str, why: str = "") -> LayerDef:
        ldef = self.layer_for(role)
        if ldef is None:
            raise SkillError(INVALID_PARAM, f"rule set declares no layer with role {role!r}"
                             + (f" (needed for {why})" if why else ""),
                             {"role": role, "roles": sorted(self.roles)})
        return ldef

    def roles_of(self, name: str) -> set[str]:
        if name in self.layers:
            role = self.layers[name].role
            return {role} if role else set()
        if name in self.derived:
            op, a, b = self.derived[name]
            if op == "not":
                return self.roles_of(a)
            return self.roles_of(a) | self.roles_of(b)
        return set()

    def resolved_roles(self) -> dict[str, dict[str, Any]]:
        return {role: {"layer": name, "gds": [self.layers[name].layer, self.layers[name].datatype],
                       "source": self.layers[name].role_source}
                for role, name in sorted(self.roles.items())}

    def can_exist(self, name: str, context: frozenset[str] | None) -> bool:
        """Whether layer/derived layer ``name`` can hold shapes when only the roles in
        ``context`` are drawn (None: every role except the exotic markers)."""
        ctx = DEFAULT_CONTEXT if context is None else context
        if name in self.layers:
            role = self.layers[name].role
            if role is None:
                return False
            return role in ctx or (context is None and role not in EXOTIC_ROLES)
        if name in self.derived:
            op, a, b = self.derived[name]
            if op == "and":
                return self.can_exist(a, context) and self.can_exist(b, context)
            if op == "or":
                return self.can_exist(a, context) or self.can_exist(b, context)
            return self.can_exist(a, context)
        return False

    # -- rule lookup --------------------------------------------------------------------------
    def rules_for(self, rtype: str, role: str, role2: str | None = None,
                  context: frozenset[str] | None = None) -> list[Rule]:
        """Rules of ``rtype`` whose layer (and layer2) can hold shapes of ``role`` (``role2``)
        when the roles of ``context`` are drawn (rules on layers that cannot exist there,
        e.g. a resistor-body layer for a transistor, are skipped)."""
        out = []
        for r in self.rules:
            if r.type != rtype:
                continue
            if not self.can_exist(r.layer, context) or (
                    r.layer2 is not None and not self.can_exist(r.layer2, context)):
                continue
            r1 = self.roles_of(r.layer)
            r2 = self.roles_of(r.layer2) if r.layer2 else None
            if role2 is None:
                if r.layer2 is None and role in r1:
                    out.append(r)
                continue
            if r2 is None:
                continue
            if role in r1 and role2 in r2:
                out.append(r)
            elif rtype in ("spacing", "overlap") and role2 in r1 and role in r2:
                out.append(r)
        return out

    def rule_min(self, rtype: str, role: str, role2: str | None = None, default: int = 0,
                 context: frozenset[str] | None = None) -> int:
        """Largest ``min`` (nm, snapped up to grid) over matching rules, else ``default``.
        Wide-metal spacings (``width_over``) are conditional: see :meth:`wide_spaces`."""
        values = [r.min for r in self.rules_for(rtype, role, role2, context)
                  if r.min is not None and r.width_over is None]
        if not values:
            return default
        return self.snap_up(max(self.nm(v) for v in values))

    def rule_max(self, rtype: str, role: str, role2: str | None = None,
                 context: frozenset[str] | None = None) -> int | None:
        values = [r.max for r in self.rules_for(rtype, role, role2, context) if r.max is not None]
        if not values:
            return None
        return self.snap_down(min(self.nm(v) for v in values))

    def width(self, role: str, context: frozenset[str] | None = None) -> int:
        """Minimum width of ``role`` (0 when no rule)."""
        return self.rule_min("width", role, None, 0, context)

    def space(self, role: str, role2: str | None = None,
              context: frozenset[str] | None = None) -> int:
        return self.rule_min("spacing", role, role2, 0, context)

    def enc(self, outer: str, inner: str, context: frozenset[str] | None = None) -> int:
        return self.rule_min("enclosure", outer, inner, 0, context)

    def ext(self, layer: str, past: str, context: frozenset[str] | None = None) -> int:
        return self.rule_min("extension", layer, past, 0, context)

    def wide_spaces(self, role: str, context: frozenset[str] | None = None) -> list[tuple[int, int]]:
        """(width_over, min) in nm of the wide-metal spacing rules of ``role``: parts of the
        layer wider than width_over keep min from the other shapes of the layer."""
        return sorted({(self.nm(r.width_over), self.snap_up(self.nm(r.min or 0)))
                       for r in self.rules_for("spacing", role, None, context)
                       if r.width_over is not None})

    def space_for_width(self, role: str, width: int, context: frozenset[str] | None = None) -> int:
        """Spacing of ``role`` next to a shape ``width`` nm wide (the wide-metal spacing
        when the shape is wider than its width_over)."""
        value = self.space(role, None, context)
        for over, lo in self.wide_spaces(role, context):
            if width > over:
                value = max(value, lo)
        return value

    def area(self, role: str, context: frozenset[str] | None = None) -> int:
        """Minimum area of a merged shape of ``role`` in nm² (0 when no area rule)."""
        values = [r.min for r in self.rules_for("area", role, None, context) if r.min is not None]
        return int(math.ceil(max(values) * NM_PER_M * NM_PER_M - 1e-6)) if values else 0

    def cut_size(self, role: str) -> int:
        """Size of a square cut: ``min == max`` of its width rule, else its min width,
        else the width of the layers it connects, else one grid step."""
        lo = self.width(role)
        hi = self.rule_max("width", role)
        if hi is not None and hi >= lo:
            return hi if lo == 0 else lo
        if lo:
            return lo
        return max(self.grid_nm, self.width("metal1"), self.width("poly"))

    # -- geometry access ----------------------------------------------------------------------
    def layer_index(self, layout: kdb.Layout, name: str) -> int:
        ldef = self.layers[name]
        return layout.layer(ldef.info())

    def role_index(self, layout: kdb.Layout, role: str) -> int:
        return self.layer_index(layout, self.require(role).name)

    def region(self, layout: kdb.Layout, cell: kdb.Cell, name: str,
               cache: dict[str, kdb.Region] | None = None) -> kdb.Region:
        """Flat merged region of a layer or derived layer in ``cell`` (hierarchy flattened)."""
        if cache is not None and name in cache:
            return cache[name]
        if name in self.layers:
            ldef = self.layers[name]
            li = layout.find_layer(ldef.layer, ldef.datatype)
            region = kdb.Region() if li is None else kdb.Region(cell.begin_shapes_rec(li))
            region.merge()
        else:
            op, a, b = self.derived[name]
            ra = self.region(layout, cell, a, cache)
            rb = self.region(layout, cell, b, cache)
            region = (ra & rb) if op == "and" else (ra + rb) if op == "or" else (ra - rb)
            region.merge()
        if cache is not None:
            cache[name] = region
        return region

    def summary(self) -> dict[str, Any]:
        return {
            "tech": self.name,
            "schema_version": self.schema_version,
            "grid_nm": self.grid_nm,
            "layers": len(self.layers),
            "derived_layers": sorted(self.derived),
            "rules": len(self.rules),
            "roles": self.resolved_roles(),
            "unassigned_layers": sorted(n for n, d in self.layers.items() if d.role is None),
        }
