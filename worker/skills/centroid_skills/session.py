"""One layout session per process: the KLayout database plus what the skills know about it.

The geometry lives in a :class:`klayout.db.Layout` (dbu = 1 nm).  Python keeps only
book-keeping: which cell is which device/module, its pins and its matched groups.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from typing import Any

import klayout.db as kdb

from centroid_skills.errors import INVALID_PARAM, NOT_FOUND, SkillError
from centroid_skills.tech import DBU_UM, Technology


@dataclass
class Pin:
    name: str
    layer: str  # layer name in the rule set
    role: str
    box: kdb.Box  # nm

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "layer": self.layer, "role": self.role, "box_um": box_um(self.box)}

    def transformed(self, trans: kdb.Trans) -> Pin:
        return Pin(self.name, self.layer, self.role, self.box.transformed(trans))


@dataclass
class CellRecord:
    """A generated cell: a device, a module (pair, group, ring) or a placement."""

    name: str
    kind: str  # nmos, pmos, resistor, capacitor, common_centroid, interdigitated, guard_ring, placement
    params: dict[str, Any] = field(default_factory=dict)
    pins: list[Pin] = field(default_factory=list)
    units: list[dict[str, Any]] = field(default_factory=list)  # unit instances of modules
    groups: list[dict[str, Any]] = field(default_factory=list)  # matched groups (metrics)
    device_area_nm2: int = 0
    dummies: int = 0


class Session:
    def __init__(self) -> None:
        self.tech: Technology | None = None
        self.layout = _new_layout()
        self.cells: dict[str, CellRecord] = {}
        self.devices: dict[str, str] = {}  # device_id -> cell name
        #: the candidate's scratch directory under a worker: every file a skill reads or
        #: writes must be inside it (None: a library user, unconfined)
        self.scratch_dir: str | None = None
        #: without a scratch directory, the files nobody named (a DRC report, an export
        #: without a path) go here: removed at the next reset or when the process ends
        self._unnamed: tempfile.TemporaryDirectory[str] | None = None

    def reset(self, scratch_dir: str | None = None) -> None:
        self.tech = None
        self.layout = _new_layout()
        self.cells = {}
        self.devices = {}
        self.scratch_dir = scratch_dir
        if self._unnamed is not None:
            self._unnamed.cleanup()
            self._unnamed = None

    def temporary_dir(self, prefix: str) -> str:
        """A new directory for files nobody named: inside the scratch directory when
        there is one (the worker removes it with the candidate), else inside the
        session's own temporary directory (removed at the next reset or when the
        process ends) — never left behind in the system's temporary directory."""
        root = self.scratch_dir
        if root is None:
            if self._unnamed is None:
                self._unnamed = tempfile.TemporaryDirectory(prefix="centroid_session_")
            root = self._unnamed.name
        return tempfile.mkdtemp(prefix=prefix, dir=root)

    def clear_layout(self) -> None:
        self.layout = _new_layout()
        self.cells = {}
        self.devices = {}

    def need_tech(self) -> Technology:
        if self.tech is None:
            raise SkillError(INVALID_PARAM, "no technology loaded: call tech.load first")
        return self.tech

    def record(self, name: str) -> CellRecord:
        rec = self.cells.get(name)
        if rec is None and name in self.devices:
            rec = self.cells.get(self.devices[name])
        if rec is None:
            raise SkillError(NOT_FOUND, f"unknown cell or device: {name}",
                             {"name": name, "known": sorted(self.cells)[:50]})
        return rec

    def cell(self, name: str) -> kdb.Cell:
        rec_name = self.record(name).name
        cell = self.layout.cell(rec_name)
        if cell is None:
            raise SkillError(NOT_FOUND, f"cell {rec_name} not in the layout", {"name": rec_name})
        return cell

    def any_cell(self, name: str) -> kdb.Cell:
        """A recorded cell, or any cell of the layout by name."""
        if name in self.cells or name in self.devices:
            return self.cell(name)
        cell = self.layout.cell(name)
        if cell is None:
            raise SkillError(NOT_FOUND, f"unknown cell: {name}",
                             {"name": name, "known": sorted(self.cells)[:50]})
        return cell

    def unique_name(self, base: str) -> str:
        if self.layout.cell(base) is None and base not in self.cells:
            return base
        i = 1
        while self.layout.cell(f"{base}_{i}") is not None or f"{base}_{i}" in self.cells:
            i += 1
        return f"{base}_{i}"

    def new_cell(self, name: str, replace: bool = False) -> kdb.Cell:
        existing = self.layout.cell(name)
        if existing is not None:
            if not replace:
                raise SkillError(INVALID_PARAM, f"cell {name} exists already", {"cell_name": name})
            if existing.parent_cells() > 0:
                raise SkillError(INVALID_PARAM, f"cell {name} is used by other cells",
                                 {"cell_name": name})
            existing.delete()
            self.cells.pop(name, None)
            for dev, cname in list(self.devices.items()):
                if cname == name:
                    del self.devices[dev]
        return self.layout.create_cell(name)


def _new_layout() -> kdb.Layout:
    layout = kdb.Layout()
    layout.dbu = DBU_UM
    return layout


def um(v_nm: float) -> float:
    return round(v_nm * DBU_UM, 6)


#: orientations a module's unit may have ("M90": mirrored, x -> -x)
UNIT_ORIENTATIONS = {"R0": kdb.Trans.R0, "M90": kdb.Trans.M90}


def unit_trans(unit: dict[str, Any]) -> kdb.Trans:
    """Where a module's unit stands in the module: its origin and orientation."""
    x, y = (int(round(v * 1000)) for v in unit["origin_um"])
    return kdb.Trans(UNIT_ORIENTATIONS[unit.get("orientation", "R0")], x, y)


def box_um(box: kdb.Box) -> list[float]:
    return [um(box.left), um(box.bottom), um(box.right), um(box.top)]
