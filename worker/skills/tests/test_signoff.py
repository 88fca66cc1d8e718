"""``signoff.run`` / ``signoff.decks``: the foundry's KLayout DRC deck on our layouts.

Real processes: the Debian ``klayout`` binary (``make signoff`` installs it) runs the
official open-PDK decks of the shared folder (``decks/`` of ``$CENTROID_SHARED_DIR``, else
``<repository>/../shared``; ``fixtures/signoff/README.md`` says what they are) on layouts
the Rust planner's candidates generate.  One deck run per test: the decks take seconds each.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import klayout.db as kdb
import klayout.rdb as krdb
import pytest
from helpers import REPO_ROOT, Client, load_rule_set, shared_file
from rust_plans import draft, example_request, run_plan

from centroid_skills.skills import signoff

#: the official decks, in the shared folder (each with its profile, DECK.json, next to it)
SKY130_DECK = "decks/sky130/sky130A_mr.drc"
IHP_DECK = "decks/ihp_sg13g2/sg13g2_maximal.lydrc"
KLAYOUT = shutil.which(os.environ.get(signoff.BINARY_ENV) or signoff.DEFAULT_BINARY)

pytestmark = pytest.mark.signoff


@pytest.fixture
def klayout_binary() -> str:
    """The klayout binary; its absence FAILS the test (make test provisions it), it
    never skips: a deck test that did not run must not look like a pass."""
    if KLAYOUT is None:
        pytest.fail("no klayout binary on PATH: `make signoff` installs Debian's klayout "
                    "(or set CENTROID_KLAYOUT_BINARY)")
    return KLAYOUT


needs_klayout = pytest.mark.usefixtures("klayout_binary")


@pytest.fixture
def decks_env(monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """The SKY130 and IHP decks of the shared folder configured as the operator's decks; a
    missing deck fails the test."""
    sky130, ihp = shared_file(SKY130_DECK), shared_file(IHP_DECK)
    monkeypatch.setenv(signoff.DECKS_ENV, f"{sky130}:{ihp}")
    return sky130, ihp


def rule(rules: dict[str, Any], rule_id: str) -> dict[str, Any]:
    return next(r for r in rules["rules"] if r["id"] == rule_id)


def generated_layout_with_sliver(tmp_path: Path, pdk: str, width_rule_id: str) -> tuple[Path, kdb.DBox]:
    """ota5 as the Rust planner's default candidate builds it on ``pdk`` (top cell TOP),
    plus one sliver of the width rule's layer one grid step narrower than the rule, a cell
    height above the layout (clear of everything)."""
    rules = load_rule_set(REPO_ROOT / "examples" / "pdk" / f"{pdk}.json")
    candidate = draft(example_request("ota5", pdk)).candidates[0]  # the Rust planner's default
    result = run_plan(candidate.steps, tmp_path / "candidate")
    assert result["ok"] and result["drc_total"] == 0 and result["lvs_match"], result.get("failed")
    clean = tmp_path / "candidate" / "layout.gds"

    width = rule(rules, width_rule_id)
    layer = rules["layers"][width["layer"]]
    grid_um = rules["grid"] * 1e6
    w_um = width["min"] * 1e6 - grid_um
    layout = kdb.Layout()
    layout.read(str(clean))
    top = layout.top_cell()
    bbox = top.dbbox()
    sliver = kdb.DBox(bbox.left, bbox.top + bbox.height(), bbox.left + 10 * width["min"] * 1e6,
                      bbox.top + bbox.height() + w_um)
    top.shapes(layout.layer(layer["layer"], layer["datatype"])).insert(sliver)
    injected = tmp_path / "ota5_sliver.gds"
    layout.write(str(injected))
    return injected, sliver


def markers(report_path: str, category: str) -> list[kdb.DBox]:
    db = krdb.ReportDatabase("")
    db.load(report_path)
    cat = next(c for c in db.each_category() if c.name() == category)
    boxes = []
    for item in db.each_item_per_category(cat.rdb_id()):
        for value in item.each_value():
            if value.is_edge_pair():
                boxes.append(value.edge_pair().bbox())
            elif value.is_polygon():
                boxes.append(value.polygon().bbox())
            elif value.is_box():
                boxes.append(value.box())
            elif value.is_edge():
                boxes.append(value.edge().bbox())
    return boxes


@needs_klayout
@pytest.mark.rust_plans(requests=lambda p: [example_request("ota5", p["pdk"])])
@pytest.mark.parametrize(("deck", "pdk", "width_rule_id"), [
    ("sky130A_mr.drc", "sky130", "m1.1"),
    ("sg13g2_maximal.lydrc", "ihp_sg13g2", "M1.a"),
])
def test_official_deck_on_a_generated_layout_counts_the_injected_sliver(
        decks_env: tuple[Path, Path], tmp_path: Path, deck: str, pdk: str, width_rule_id: str) -> None:
    gds, sliver = generated_layout_with_sliver(tmp_path, pdk, width_rule_id)
    report = tmp_path / "out" / "signoff.lyrdb"
    data = Client().call("signoff.run", deck=deck, gds_path=str(gds), report_path=str(report))

    assert data["ran"] is True and data["deck"] == deck and data["top_cell"] == "TOP"
    # the generated layout is clean under the foundry deck; the sliver is caught by the
    # deck's rule with the id our rule set gives it, once
    assert data["by_rule"] == {width_rule_id: 1}, data["by_rule"]
    assert data["violations"] == 1
    assert data["rules_reported"] > 100  # the deck really ran its rules
    assert data["report_path"] == str(report) and report.is_file()
    assert Path(data["log_path"]).is_file()
    assert data["klayout_version"] != "unknown" and data["duration_ms"] > 0
    found = markers(str(report), width_rule_id)
    assert len(found) == 1 and found[0].overlaps(sliver.enlarged(0.001, 0.001)), (found, sliver)


def write_deck(tmp_path: Path, name: str, text: str, profile: dict[str, Any] | None = None) -> Path:
    deck = tmp_path / "decks" / name
    deck.parent.mkdir(parents=True, exist_ok=True)
    deck.write_text(text)
    if profile is not None:
        Path(str(deck) + ".json").write_text(json.dumps(profile))
    return deck


def small_gds(tmp_path: Path) -> Path:
    layout = kdb.Layout()
    layout.dbu = 0.001
    top = layout.create_cell("TOP")
    top.shapes(layout.layer(1, 0)).insert(kdb.Box(0, 0, 1000, 1000))
    path = tmp_path / "small.gds"
    layout.write(str(path))
    return path


@needs_klayout
def test_a_deck_that_raises_is_an_error_not_zero(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    deck = write_deck(tmp_path, "raises.drc",
                      'source($input, $topcell)\nreport("raises", $report)\n'
                      'raise "deck broke on purpose"\n')
    monkeypatch.setenv(signoff.DECKS_ENV, str(deck))
    report = tmp_path / "r.lyrdb"
    report.write_text("stale")  # must not be read as this run's report
    out = Client().raw("signoff.run", {"deck": "raises.drc", "gds_path": str(small_gds(tmp_path)),
                                       "report_path": str(report)})
    assert out["ok"] is False and out["data"] is None
    assert out["error"]["code"] == "INTERNAL_ERROR"
    details = out["error"]["details"]
    assert details["reason"] == "deck_failed" and details["failure"] == "exit_status"
    assert details["exit_status"] != 0
    assert any("deck broke on purpose" in line for line in details["log_tail"])


@needs_klayout
def test_a_deck_that_writes_no_report_is_an_error(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # exit status 0 but the deck reads its report path from a variable the profile does
    # not map: no report at report_path -> an error, never "0 violations"
    deck = write_deck(tmp_path, "other_vars.drc",
                      'source($input)\nreport("x", $report_file) if $report_file\n')
    monkeypatch.setenv(signoff.DECKS_ENV, str(deck))
    out = Client().raw("signoff.run", {"deck": "other_vars.drc",
                                       "gds_path": str(small_gds(tmp_path)),
                                       "report_path": str(tmp_path / "r.lyrdb")})
    assert out["ok"] is False
    assert out["error"]["code"] == "INTERNAL_ERROR"
    assert out["error"]["details"]["reason"] == "deck_failed"
    assert out["error"]["details"]["failure"] == "no_report"


@needs_klayout
def test_a_report_about_another_cell_is_an_error(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # the deck ignores the top-cell variable and checks the layout's top cell instead of
    # the requested subcell: its (clean) report must not pass for the subcell's
    deck = write_deck(tmp_path, "own_top.drc", 'source($input)\nreport("x", $report)\n')
    monkeypatch.setenv(signoff.DECKS_ENV, str(deck))
    layout = kdb.Layout()
    top = layout.create_cell("TOP")
    sub = layout.create_cell("SUB")
    sub.shapes(layout.layer(1, 0)).insert(kdb.Box(0, 0, 1000, 1000))
    top.insert(kdb.CellInstArray(sub.cell_index(), kdb.Trans()))
    layout.write(str(tmp_path / "hier.gds"))
    out = Client().raw("signoff.run", {"deck": "own_top.drc", "gds_path": str(tmp_path / "hier.gds"),
                                       "report_path": str(tmp_path / "r.lyrdb"), "top_cell": "SUB"})
    assert out["ok"] is False and out["error"]["code"] == "INTERNAL_ERROR"
    assert out["error"]["details"]["reason"] == "deck_failed"
    assert out["error"]["details"]["failure"] == "wrong_top_cell"


@needs_klayout
def test_a_deck_past_its_timeout_is_killed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    deck = write_deck(tmp_path, "sleeps.drc", "sleep(60)\n")
    monkeypatch.setenv(signoff.DECKS_ENV, str(deck))
    started = time.monotonic()
    out = Client().raw("signoff.run", {"deck": "sleeps.drc", "gds_path": str(small_gds(tmp_path)),
                                       "report_path": str(tmp_path / "r.lyrdb"), "timeout_s": 2})
    assert time.monotonic() - started < 20
    assert out["ok"] is False and out["error"]["code"] == "TIMEOUT"
    assert out["error"]["details"]["reason"] == "timeout"
    # the process group is gone: no process runs this deck any more
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        assert str(deck).encode() not in cmdline, f"process {pid} still runs the deck"


def test_an_unknown_deck_is_not_found(decks_env: tuple[Path, Path], tmp_path: Path) -> None:
    out = Client().raw("signoff.run", {"deck": "not_installed.drc",
                                       "gds_path": str(small_gds(tmp_path)),
                                       "report_path": str(tmp_path / "r.lyrdb")})
    assert out["ok"] is False and out["error"]["code"] == "NOT_FOUND"
    details = out["error"]["details"]
    assert details["reason"] == "deck_not_found"
    assert details["configured"] == ["sg13g2_maximal.lydrc", "sky130A_mr.drc"]
    assert not (tmp_path / "r.lyrdb").exists()


def test_a_request_cannot_name_a_deck_file_or_bring_deck_text(decks_env: tuple[Path, Path],
                                                              tmp_path: Path) -> None:
    client = Client()
    base = {"gds_path": str(small_gds(tmp_path)), "report_path": str(tmp_path / "r.lyrdb")}
    for deck in (str(decks_env[0]), "../sky130/sky130A_mr.drc"):
        out = client.raw("signoff.run", {**base, "deck": deck})
        assert out["error"]["code"] == "INVALID_PARAM", out
    out = client.raw("signoff.run", {**base, "deck": "sky130A_mr.drc", "deck_text": "puts 1"})
    assert out["error"]["code"] == "INVALID_PARAM"


def test_a_missing_binary_is_an_error_not_zero(decks_env: tuple[Path, Path], tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    args = {"deck": "sky130A_mr.drc", "gds_path": str(small_gds(tmp_path)),
            "report_path": str(tmp_path / "r.lyrdb")}
    monkeypatch.setenv(signoff.BINARY_ENV, str(tmp_path / "no-such-klayout"))
    out = Client().raw("signoff.run", args)
    assert out["ok"] is False and out["error"]["code"] == "SERVICE_UNAVAILABLE"
    assert out["error"]["details"]["reason"] == "klayout_missing"

    monkeypatch.delenv(signoff.BINARY_ENV)
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing called klayout on PATH
    out = Client().raw("signoff.run", args)
    assert out["ok"] is False and out["error"]["code"] == "SERVICE_UNAVAILABLE"
    assert out["error"]["details"]["reason"] == "klayout_missing"


def test_operator_configuration_problems_are_service_unavailable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    args = {"gds_path": str(small_gds(tmp_path)), "report_path": str(tmp_path / "r.lyrdb")}
    bad_profile = write_deck(tmp_path, "bad.drc", "puts 1\n",
                             {"variables": {"gds": "x"}, "defines": {}})
    renames_twice = write_deck(tmp_path, "clash.drc", "puts 1\n",
                               {"variables": {"input": "in_gds"}, "defines": {"in_gds": "/etc/x"}})
    gone = tmp_path / "decks" / "gone.drc"
    monkeypatch.setenv(signoff.DECKS_ENV, f"{bad_profile}:{renames_twice}:{gone}")
    client = Client()
    for deck, reason in (("bad.drc", "deck_config"), ("clash.drc", "deck_config"),
                         ("gone.drc", "deck_missing")):
        out = client.raw("signoff.run", {**args, "deck": deck})
        assert out["ok"] is False and out["error"]["code"] == "SERVICE_UNAVAILABLE", out
        assert out["error"]["details"]["reason"] == reason
    listed = client.call("signoff.decks")["decks"]
    assert [(d["name"], d["exists"], d["profile"] is not None) for d in listed] == [
        ("bad.drc", True, True), ("clash.drc", True, True), ("gone.drc", False, False)]


@needs_klayout
def test_bad_layout_inputs(decks_env: tuple[Path, Path], tmp_path: Path) -> None:
    client = Client()
    report = str(tmp_path / "r.lyrdb")
    out = client.raw("signoff.run", {"deck": "sky130A_mr.drc", "gds_path": str(tmp_path / "none.gds"),
                                     "report_path": report})
    assert (out["error"]["code"], out["error"]["details"]["reason"]) == ("NOT_FOUND", "gds_not_found")
    out = client.raw("signoff.run", {"deck": "sky130A_mr.drc", "gds_path": str(small_gds(tmp_path)),
                                     "report_path": report, "top_cell": "NOPE"})
    assert (out["error"]["code"], out["error"]["details"]["reason"]) == (
        "NOT_FOUND", "top_cell_not_found")
    two_tops = kdb.Layout()
    two_tops.create_cell("A")
    two_tops.create_cell("B")
    two_tops.write(str(tmp_path / "two.gds"))
    out = client.raw("signoff.run", {"deck": "sky130A_mr.drc", "gds_path": str(tmp_path / "two.gds"),
                                     "report_path": report})
    assert (out["error"]["code"], out["error"]["details"]["reason"]) == (
        "INVALID_PARAM", "top_cell_ambiguous")


def test_decks_lists_the_configured_decks(decks_env: tuple[Path, Path]) -> None:
    sky130, ihp = decks_env
    listed = Client().call("signoff.decks")["decks"]
    assert listed == [
        {"name": "sky130A_mr.drc", "path": str(sky130), "exists": True,
         "profile": str(sky130) + ".json"},
        {"name": "sg13g2_maximal.lydrc", "path": str(ihp), "exists": True,
         "profile": str(ihp) + ".json"},
    ]
