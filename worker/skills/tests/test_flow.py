"""The whole candidate (flow.py) on every example circuit and rule set: DRC clean and LVS
clean, also on the 1.5x-scaled, renumbered, renamed rule sets."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from helpers import REPO_ROOT, load_rule_set, scaled_rule_set

from centroid_skills import flow, registry

CIRCUITS = Path(__file__).resolve().parent / "fixtures" / "circuits"
EXAMPLES = ["ota5", "miller_ota", "mirror_bank", "strongarm_comparator", "folded_cascode"]
PDKS = ["ihp_sg13g2", "sky130"]


def circuit(name: str) -> dict[str, Any]:
    return json.loads((CIRCUITS / f"{name}.json").read_text())


def pdk(name: str) -> dict[str, Any]:
    return load_rule_set(REPO_ROOT / "examples" / "pdk" / f"{name}.json")


def scaled_circuit(c: dict[str, Any], factor: float) -> dict[str, Any]:
    c = copy.deepcopy(c)
    for d in c["devices"]:
        for k in ("w", "l"):
            d["params"][k] = d["params"][k] * factor
    return c


def check(result: dict[str, Any]) -> None:
    assert result["ok"], result.get("failed")
    drc = result["results"]["drc.run"]
    assert drc["total"] == 0, [(v["id"], v["count"], v["markers_um"][:2]) for v in drc["violations"]]
    lvs = result["results"]["lvs.run"]
    assert lvs["match"], {k: v for k, v in lvs.items() if not k.endswith("_netlist")}
    assert lvs["unlabelled_nets"] == []
    routed = result["results"]["route.nets"]
    assert all(n["label"] is not None for n in routed["nets"].values())


@pytest.mark.parametrize("rules_name", PDKS)
@pytest.mark.parametrize("example", EXAMPLES)
def test_flow_clean(example: str, rules_name: str, tmp_path: Path) -> None:
    check(flow.run(circuit(example), pdk(rules_name),
                   options={"export_path": str(tmp_path / f"{example}.gds")}))


@pytest.mark.parametrize("rules_name", PDKS)
@pytest.mark.parametrize("example", EXAMPLES)
def test_flow_clean_scaled(example: str, rules_name: str, tmp_path: Path) -> None:
    rules = scaled_rule_set(pdk(rules_name), 1.5)
    check(flow.run(scaled_circuit(circuit(example), 1.5), rules,
                   options={"export_path": str(tmp_path / f"{example}.gds")}))


@pytest.mark.parametrize("options", [{"dummies": False}, {"arrangement": "ABAB"},
                                     {"max_fingers_per_row": 8}])
def test_flow_design_points(options: dict[str, Any], tmp_path: Path) -> None:
    for example in ("ota5", "strongarm_comparator", "folded_cascode"):
        check(flow.run(circuit(example), pdk("sky130"),
                       options={**options, "export_path": str(tmp_path / "x.gds")}))


def test_plan_is_json_and_schema_valid() -> None:
    """Every call of the plan is plain JSON and valid against its skill's input schema
    (the place gap filled in as the worker would)."""
    for example in EXAMPLES:
        calls = flow.plan(circuit(example), pdk("sky130"))
        assert json.loads(json.dumps(calls)) == calls
        names = [c["name"] for c in calls]
        assert names[:2] == ["tech.load", "route.info"]
        assert names[-5:] == ["route.nets", "drc.run", "lvs.run", "layout.metrics", "layout.export"]
        for c in calls:
            skill = registry.get(c["name"])
            assert skill is not None, c["name"]
            skill.validate(flow.fill(c, 0.5)["arguments"])


def test_flow_reports_failure_without_raising() -> None:
    c = circuit("ota5")
    c["devices"][0]["params"]["l"] = 1e-9  # below every minimum gate length
    r = flow.run(c, pdk("ihp_sg13g2"))
    assert not r["ok"] and r["failed"]["error"]["code"] == "INVALID_PARAM"


def centroid_binary() -> str | None:
    """The `centroid` binary of this checkout (make test builds it before pytest runs)."""
    for profile in ("debug", "release"):
        candidate = REPO_ROOT / "target" / profile / "centroid"
        if candidate.exists():
            return str(candidate)
    return shutil.which("centroid")


@pytest.mark.skipif(centroid_binary() is None, reason="centroid binary not built (cargo build -p centroid-cli)")
def test_fixtures_match_centroid_validate() -> None:
    binary = centroid_binary()
    assert binary is not None
    for example in EXAMPLES:
        out = subprocess.run([binary, "validate", str(REPO_ROOT / "examples" / example), "--json"],
                             capture_output=True, text=True, timeout=60, check=True)
        got, want = json.loads(out.stdout)["circuit"], circuit(example)

        def essentials(c: dict[str, Any]) -> Any:
            return ({d["id"]: (d["type"], d["terminals"], d["params"].get("w"), d["params"].get("l"),
                               d["params"].get("nf"), d["params"].get("m")) for d in c["devices"]},
                    sorted((m["type"], tuple(x["device_id"] for x in m["devices"])) for m in c["modules"]))

        assert essentials(got) == essentials(want), example
