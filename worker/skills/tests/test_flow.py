"""Whole candidates as the coordinator plans them (``centroid plan``, the Rust planner), run
on the skill package: every example circuit on every process (SG13G2, SKY130, GF180MCU)
and on its 1.5x-scaled, renumbered, renamed variant, at several design points, comes out
DRC clean, LVS clean and with every net labelled; every step of every drafted plan is
valid against its skill's registered schema."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from rust_plans import (
    EXAMPLE_CANDIDATES,
    EXAMPLES_DIR,
    PlanRequest,
    centroid_binary,
    check_clean,
    draft,
    example_request,
    run_plan,
    step_of,
    substituted,
)

from centroid_skills import registry

CIRCUITS = Path(__file__).resolve().parent / "fixtures" / "circuits"
EXAMPLES = ["ota5", "miller_ota", "mirror_bank", "strongarm_comparator", "folded_cascode"]
RULE_SETS = ["ihp_sg13g2", "sky130", "gf180mcu"]
#: candidates drafted per example x rule set: rust_plans.EXAMPLE_CANDIDATES (every step of
#: each schema-checked); those run: on the rule sets as written the default point and one of the next
#: four, on the scaled variants one of the first five, rotating over the examples so that on
#: every process the runs include every arrangement, finger split, dummy count, spacing and
#: aspect ratio (test_run_design_points_cover_the_space)
VARIANTS = ("plain", "x1.5")


def run_indices(example: str, variant: str) -> tuple[int, ...]:
    i = EXAMPLES.index(example)
    return (0, 1 + i % 4) if variant == "plain" else (i % 5,)


def circuit(name: str) -> dict[str, Any]:
    """The `centroid validate --json` circuit of an example (fixtures/circuits)."""
    data: dict[str, Any] = json.loads((CIRCUITS / f"{name}.json").read_text())
    return data


def all_flow_requests(_params: dict[str, Any]) -> list[PlanRequest]:
    return [example_request(e, r, v) for e in EXAMPLES for r in RULE_SETS for v in VARIANTS]


def requests_of(params: dict[str, Any]) -> list[PlanRequest]:
    return [example_request(params["example"], params["rules_name"], params.get("variant", "plain"))]


CASES = [pytest.param(e, r, v, i, id=f"{e}-{r}-{v}-c{i}")
         for e in EXAMPLES for r in RULE_SETS for v in VARIANTS for i in run_indices(e, v)]


@pytest.mark.rust_plans(requests=requests_of)
@pytest.mark.parametrize(("example", "rules_name", "variant", "index"), CASES)
def test_candidate_clean(example: str, rules_name: str, variant: str, index: int,
                         tmp_path: Path) -> None:
    candidate = draft(example_request(example, rules_name, variant)).candidates[index]
    result = run_plan(candidate.steps, tmp_path)
    check_clean(result)
    assert result["cell"] == "TOP"
    assert (tmp_path / "layout.gds").is_file()  # the export step wrote into ${CANDIDATE_DIR}


@pytest.mark.rust_plans(requests=all_flow_requests)
def test_run_design_points_cover_the_space() -> None:
    """The candidates run above are not all one design point: on every process, plain and
    scaled, they include both arrangements, more than one value of every other knob, folded
    rows and per-module arrangements."""
    for rules_name in RULE_SETS:
        for variant in VARIANTS:
            points = [draft(example_request(e, rules_name, variant)).candidates[i].design_point
                      for e in EXAMPLES for i in run_indices(e, variant)]
            knobs = ("arrangement", "dummies", "spacing_nm", "aspect_ratio_pct", "row_order",
                     "finger_split")
            seen = {k: {p[k] for p in points} for k in knobs}
            where = (rules_name, variant, points)
            # and the placement genes: some points fold a kind into rows, some choose
            # a matched pair's arrangement on its own
            assert any(p.get("rows") for p in points), where
            assert any(p.get("module_arrangements") for p in points), where
            assert seen["arrangement"] == {"ABBA", "ABAB"}, where
            for knob in knobs:
                assert len(seen[knob]) > 1, (knob, where)


@pytest.mark.rust_plans(requests=requests_of)
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("rules_name", RULE_SETS)
@pytest.mark.parametrize("example", EXAMPLES)
def test_every_drafted_step_fits_its_skill_schema(example: str, rules_name: str,
                                                  variant: str, tmp_path: Path) -> None:
    """Every step of every drafted candidate names a registered skill and its arguments
    (with the scratch directory filled in, as the worker sends them) pass that skill's
    input schema and name files only inside the scratch directory; every plan is a whole
    routed, checked and exported candidate."""
    scratch = tmp_path.resolve()
    drafted = draft(example_request(example, rules_name, variant))
    assert len(drafted.candidates) == EXAMPLE_CANDIDATES
    assert drafted.route_pitch_um is not None and drafted.route_pitch_um > 0
    for candidate in drafted.candidates:
        skills = [s["skill"] for s in candidate.steps]
        assert skills[0] == "tech.load", skills
        for needed in ("layout.place", "route.nets", "lvs.run", "drc.run", "layout.export"):
            assert needed in skills, (candidate.candidate_id, needed, candidate.summary)
        for step in candidate.steps:
            skill = registry.get(step["skill"])
            assert skill is not None, f"{candidate.candidate_id}: unknown skill {step['skill']}"
            arguments = substituted(step["arguments"], str(scratch))
            skill.validate(arguments)
            skill.confine(arguments, str(scratch))  # files only in ${CANDIDATE_DIR}


@pytest.mark.rust_plans(requests=lambda _p: [example_request("ota5", "ihp_sg13g2")])
def test_run_plan_stops_at_the_first_failing_step(tmp_path: Path) -> None:
    steps = draft(example_request("ota5", "ihp_sg13g2")).candidates[0].steps
    failing = step_of(steps, "layout.create_common_centroid_pair")["step_id"]

    def too_short(step: dict[str, Any]) -> dict[str, Any]:
        if step["step_id"] == failing:
            step["arguments"]["device_a"]["l"] = 1e-9  # below every minimum gate length
        return step

    r = run_plan(steps, tmp_path, edit=too_short)
    assert not r["ok"] and r["failed"]["error"]["code"] == "INVALID_PARAM"
    assert r["failed"]["step"]["step_id"] == failing
    assert r["steps"][-1]["step_id"] == failing and not r["steps"][-1]["ok"]
    assert all(s["ok"] for s in r["steps"][:-1])


def test_fixtures_match_centroid_validate() -> None:
    """fixtures/circuits/*.json are what `centroid validate --json` makes of the examples."""
    binary = centroid_binary()
    for example in EXAMPLES:
        out = subprocess.run([str(binary), "validate", str(EXAMPLES_DIR / example), "--json"],
                             capture_output=True, text=True, timeout=60, check=True)
        got, want = json.loads(out.stdout)["circuit"], circuit(example)

        def essentials(c: dict[str, Any]) -> Any:
            return ({d["id"]: (d["type"], d["terminals"], d["params"].get("w"), d["params"].get("l"),
                               d["params"].get("nf"), d["params"].get("m")) for d in c["devices"]},
                    sorted((m["type"], tuple(x["device_id"] for x in m["devices"])) for m in c["modules"]))

        assert essentials(got) == essentials(want), example



def test_without_the_binary_a_plan_fails_naming_the_build_command(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No `centroid` binary: the tests that need a plan fail (never skip) and say how to
    build it."""
    import rust_plans

    monkeypatch.setattr(rust_plans, "REPO_ROOT", tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(rust_plans.PlanUnavailable, match=r"cargo build -p centroid-cli"):
        rust_plans._plan_now(example_request("ota5", "sky130"))


def test_the_skill_package_has_no_planner_of_its_own() -> None:
    """One planner (issue 16): whole candidates come from the Rust planner; the runtime
    package only runs skills."""
    import importlib.util

    assert importlib.util.find_spec("centroid_skills.flow") is None


def dummy_counts(gds: Path, cells: list[str]) -> dict[str, int]:
    """The dummy devices placed in each of `cells` of the exported layout."""
    import klayout.db as kdb

    layout = kdb.Layout()
    layout.read(str(gds))
    counts = {}
    for name in cells:
        cell = layout.cell(name)
        assert cell is not None, f"{name} is not in {gds}"
        counts[name] = sum(1 for inst in cell.each_inst() if inst.cell.name.endswith("_dummy"))
    return counts


#: a point that takes the dummies off the first matched module and gives the others two
OWN_DUMMIES = {"dummies": 2}


#: the module types drawn as matched structures (schemas `ModuleType::is_matched`)
MATCHED_TYPES = {"differential_pair", "current_mirror", "cross_coupled_pair",
                 "matched_current_sources"}


def own_dummies_request(example: str) -> PlanRequest:
    groups = [m["id"] for m in circuit(example)["modules"]
              if m["type"] in MATCHED_TYPES and len(m["devices"]) >= 2]
    return example_request(example, "sky130").with_point(
        {**OWN_DUMMIES, "module_dummies": {groups[0]: 0}})


@pytest.mark.rust_plans(requests=lambda p: [own_dummies_request(p["example"])])
@pytest.mark.parametrize("example", ["ota5", "folded_cascode"])
def test_a_matched_module_gets_its_own_dummies(example: str, tmp_path: Path) -> None:
    """A point that gives one matched module other dummies than the rest is drawn so: in
    the exported layout each module's cell holds its count of dummies at both ends of its
    row (none where the point says none), and the candidate is clean."""
    candidate = draft(own_dummies_request(example)).candidates[0]
    assert candidate.design_point.get("module_dummies"), candidate.design_point
    modules = [s["arguments"]["cell_name"] for s in candidate.steps
               if s["skill"] in ("layout.create_common_centroid_pair",
                                 "layout.create_interdigitated_group")]
    wanted = {name: 0 for name in modules}
    for step in candidate.steps:
        if step["skill"] == "layout.add_dummies":
            wanted[step["arguments"]["cell"]] = 2 * step["arguments"]["count"]
    assert sorted(set(wanted.values())) == [0, 4], (candidate.design_point, wanted)
    result = run_plan(candidate.steps, tmp_path)
    check_clean(result)
    assert dummy_counts(tmp_path / "layout.gds", modules) == wanted, candidate.summary
