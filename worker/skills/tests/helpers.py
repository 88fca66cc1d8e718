"""Test helpers: rule sets (fixture + examples/pdk/*.json), an in-process client, the
third-party files of the shared folder (foundry decks)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from centroid_skills.server import Server
from centroid_skills.skills import signoff

SKILLS_DIR = Path(__file__).resolve().parents[1]
REPO_ROOT = SKILLS_DIR.parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"

#: names the folder of third-party test files (foundry DRC decks, ALIGN's netlists)
SHARED_DIR_ENV = "CENTROID_SHARED_DIR"


def shared_dir() -> Path:
    """The folder of third-party files kept outside the repository: ``$CENTROID_SHARED_DIR``
    when set, else ``shared/`` next to the repository (``<repository>/../shared``)."""
    configured = os.environ.get(SHARED_DIR_ENV)
    return Path(configured) if configured else REPO_ROOT.parent / "shared"


def shared_file(relative: str) -> Path:
    """A file of the shared folder (e.g. ``decks/sky130/sky130A_mr.drc``).  When it is
    missing the test FAILS (never skips), naming the path and how to provide it."""
    path = shared_dir() / relative
    if not path.is_file():
        pytest.fail(f"missing {path}: third-party test files (foundry DRC decks with their "
                    f"licences) are not in the repository; put the shared folder next to the "
                    f"checkout ({REPO_ROOT.parent / 'shared'}) or set {SHARED_DIR_ENV} to the "
                    f"folder that holds {relative}", pytrace=False)
    return path


def foundry_deck(relative: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A foundry deck of the shared folder made the one ``signoff.run`` finds; the test FAILS
    when the ``klayout`` binary that runs decks is missing."""
    if shutil.which(os.environ.get(signoff.BINARY_ENV) or signoff.DEFAULT_BINARY) is None:
        pytest.fail("no klayout binary on PATH: `make signoff` installs it")
    deck = shared_file(relative)
    monkeypatch.setenv(signoff.DECKS_ENV, str(deck))
    return deck


def assert_top_deck_clean(client: Client, deck: Path, folder: Path) -> None:
    """``TOP`` written under ``folder`` and run through ``deck``: it ran on TOP, reported
    the deck's rules, and found no violation."""
    gds = client.call("layout.export", cell="TOP", path=str(folder / "top.gds"))["path"]
    data = client.call("signoff.run", deck=deck.name, gds_path=gds,
                       report_path=str(folder / "signoff.lyrdb"))
    assert data["ran"] and data["top_cell"] == "TOP" and data["rules_reported"] > 100
    assert data["violations"] == 0, data["by_rule"]


def rule_set_paths() -> list[Path]:
    paths = sorted(FIXTURES.glob("*.json"))
    paths += sorted((REPO_ROOT / "examples" / "pdk").glob("*.json"))
    return paths


def load_rule_set(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


RULE_SET_PATHS = rule_set_paths()
RULE_SET_IDS = [p.stem for p in RULE_SET_PATHS]


def known_gap(request: pytest.FixtureRequest, rule_set_id: str, reason: str) -> None:
    """Marks this test, when run on rule set ``rule_set_id``, as a known gap: expected to fail
    (strict: a pass fails the run, so the mark goes when the gap is closed)."""
    callspec = getattr(request.node, "callspec", None)
    if callspec is not None and callspec.id == rule_set_id:
        request.applymarker(pytest.mark.xfail(strict=True, reason=reason))


class Client:
    """In-process caller of the server (same dispatch path as stdio, without the pipe)."""

    def __init__(self) -> None:
        self.server = Server()
        self._id = 0

    def call(self, name: str, **arguments: Any) -> dict[str, Any]:
        result = self.raw(name, arguments)
        assert result["ok"], f"{name} failed: {result['error']}"
        return result["data"]

    def raw(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        self._id += 1
        response = self.server.handle_message(
            {"jsonrpc": "2.0", "id": self._id, "method": "tools/call",
             "params": {"name": name, "arguments": arguments}})
        assert response is not None and "result" in response, response
        # the result must survive JSON (what the worker sees)
        return json.loads(json.dumps(response["result"], allow_nan=False))




def scaled_rule_set(data: dict[str, Any], factor: float = 1.5, layer_offset: int = 100,
                    prefix: str = "X") -> dict[str, Any]:
    """Same process scaled by ``factor`` with other GDS numbers and other layer names.

    A 1.4.0 ``parasitics`` section follows the renamed layers, its lengths (``*_m``)
    scaled too. Every length (rule min/max except densities and areas, the 1.2.0 lengths end_min,
    end_width, adjacent_min, adjacent_below, width_over, the grid) is multiplied by
    ``factor``, every area by ``factor``²; the grid is rounded to whole nm (the database
    unit) and every length to the new grid (as in a real rule set, where every length is
    on grid), every area to whole nm²; layers get new
    numbers and names, derived layers new names; every role is declared explicitly
    (the new names allow no inference).
    """
    from centroid_skills.tech import Technology

    tech = Technology.from_rules(data)
    rename = {name: f"{prefix}{i:02d}_{ldef.role or 'norole'}" for i, ldef in
              enumerate(tech.layers.values()) for name in [ldef.name]}
    rename.update({name: f"{prefix}D{i:02d}" for i, name in enumerate(tech.derived)})
    layers: dict[str, Any] = {}
    for name, ldef in tech.layers.items():
        spec: dict[str, Any] = {"layer": ldef.layer + layer_offset, "datatype": ldef.datatype + 1}
        if ldef.role:
            spec["role"] = ldef.role
        if ldef.sheet_resistance is not None:
            spec["sheet_resistance"] = ldef.sheet_resistance
        if ldef.area_capacitance is not None:
            spec["area_capacitance"] = ldef.area_capacitance
        layers[rename[name]] = spec
    derived = {rename[n]: {"op": op, "a": rename[a], "b": rename[b]} for n, (op, a, b) in tech.derived.items()}
    grid_nm = max(1, round(data.get("grid", 1e-9) * factor * 1e9))
    rules = []
    for r in data["rules"]:
        nr = dict(r)
        nr["id"] = f"{prefix}.{r['id']}"
        nr["layer"] = rename[r["layer"]]
        if "layer2" in r:
            nr["layer2"] = rename[r["layer2"]]
        lengths = ("end_min", "end_width", "adjacent_min", "adjacent_below", "width_over")
        if r["type"] not in ("density", "area"):
            lengths = ("min", "max", *lengths)
        for key in lengths:
            if key in r and r[key] is not None:
                nr[key] = round(r[key] * factor * 1e9 / grid_nm) * grid_nm / 1e9
        if r["type"] == "area" and r.get("min") is not None:
            nr["min"] = round(r["min"] * factor * factor * 1e18) / 1e18
        rules.append(nr)
    scaled = {
        "schema_version": "1.2.0",
        "tech": f"{data['tech']}_x{factor}",
        "grid": grid_nm * 1e-9,
        "layers": layers,
        "derived_layers": derived,
        "rules": rules,
    }
    if "parasitics" in data:  # 1.4.0: layers renamed, the coupling's lengths scaled
        section = data["parasitics"]
        scaled["schema_version"] = "1.4.0"
        scaled["parasitics"] = {
            "layers": {rename[n]: {k: (v * factor if k.endswith("_m") else v) for k, v in spec.items()}
                       for n, spec in section["layers"].items()},
            "overlaps": [{**o, "layer": rename[o["layer"]], "layer2": rename[o["layer2"]]}
                         for o in section.get("overlaps", [])],
            "cuts": {rename[n]: spec for n, spec in section.get("cuts", {}).items()},
        }
        if "fringe_shield" in section:
            shield = section["fringe_shield"]
            scaled["parasitics"]["fringe_shield"] = {**shield, "halo_m": shield["halo_m"] * factor}
    return scaled


def drc_total(client: Client, cell: str) -> tuple[int, list[Any]]:
    data = client.call("drc.run", cell=cell)
    return data["total"], [(v["id"], v["count"], v["markers_um"][:3]) for v in data["violations"]]
