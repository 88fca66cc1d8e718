"""Confined files: under a worker (``session/reset`` with the candidate's scratch
directory) every file a skill reads or writes must resolve inside that directory; a
path outside it, through ``..`` or through a symlink, is INVALID_PARAM before anything
is written (the worker checks the same in Rust before KLayout sees the call)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from helpers import REPO_ROOT, Client, load_rule_set

from centroid_skills import registry


def confined_client(scratch: Path) -> Client:
    client = Client()
    response = client.server.handle_message(
        {"jsonrpc": "2.0", "id": 0, "method": "session/reset", "params": {"scratch_dir": str(scratch)}})
    assert response is not None and response["result"] == {"ok": True}, response
    client.call("tech.load", rules=load_rule_set(REPO_ROOT / "examples" / "pdk" / "sky130.json"))
    client.call("layout.create_device", device_id="M1", type="nmos", w=1e-6, l=1.5e-7, nf=1, m=1,
                cell_name="dev")
    return client


def refused(result: dict[str, Any]) -> dict[str, Any]:
    assert not result["ok"], result
    error = result["error"]
    assert error["code"] == "INVALID_PARAM", error
    assert error["details"]["reason"] == registry.OUTSIDE_SCRATCH_REASON, error
    return error


@pytest.mark.parametrize("escape", ["absolute", "dotdot", "symlink"])
def test_a_path_outside_the_scratch_directory_is_refused_and_nothing_written(
        escape: str, tmp_path: Path) -> None:
    scratch = tmp_path / "scratch"
    outside = tmp_path / "outside"
    scratch.mkdir()
    outside.mkdir()
    client = confined_client(scratch)
    if escape == "absolute":
        target = outside / "layout.gds"
    elif escape == "dotdot":
        target = scratch / ".." / "outside" / "layout.gds"
    else:
        (scratch / "link").symlink_to(outside, target_is_directory=True)
        target = scratch / "link" / "layout.gds"
    for skill, arguments in [("layout.export", {"cell": "dev", "path": str(target)}),
                             ("layout.render", {"cell": "dev", "path": str(target.with_suffix(".png"))}),
                             ("drc.run", {"cell": "dev", "report_path": str(target.with_suffix(".lyrdb"))})]:
        error = refused(client.raw(skill, arguments))
        assert error["details"]["scratch_dir"] == str(scratch)
    assert list(outside.iterdir()) == [], "nothing was written outside"


def test_inside_the_scratch_directory_files_are_written_and_defaults_stay_inside(tmp_path: Path) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    client = confined_client(scratch)
    exported = client.call("layout.export", cell="dev", path=str(scratch / "layout.gds"))
    assert Path(exported["path"]).is_file() and exported["bytes"] > 0
    unnamed = client.call("layout.export", cell="dev")
    assert registry.inside(unnamed["path"], str(scratch)), unnamed["path"]
    report = client.call("drc.run", cell="dev")
    assert registry.inside(report["report_path"], str(scratch)), report["report_path"]


def test_every_skill_that_takes_a_file_marks_it() -> None:
    """A skill with a property named like a path must declare it a confined file."""
    for skill in registry.load_all().values():
        properties = skill.input_schema.get("properties", {})
        for name in properties:
            if name == "path" or name.endswith("_path"):
                assert name in skill.file_properties(), f"{skill.name}.{name} is not confined"


def test_without_a_scratch_directory_a_library_caller_is_not_confined(tmp_path: Path) -> None:
    client = Client()
    client.call("tech.load", rules=load_rule_set(REPO_ROOT / "examples" / "pdk" / "sky130.json"))
    client.call("layout.create_device", device_id="M1", type="nmos", w=1e-6, l=1.5e-7, nf=1, m=1,
                cell_name="dev")
    path = tmp_path / "anywhere.gds"
    client.call("layout.export", cell="dev", path=str(path))
    assert path.is_file()
    assert os.path.isabs(str(path))


def test_without_a_scratch_directory_unnamed_files_go_with_the_session() -> None:
    """A DRC report or an export nobody named lands in the session's own temporary
    directory, which the next reset removes: a long-lived skill process (an MCP
    session, a test run) leaves nothing behind per call."""
    client = Client()
    client.call("tech.load", rules=load_rule_set(REPO_ROOT / "examples" / "pdk" / "sky130.json"))
    client.call("layout.create_device", device_id="M1", type="nmos", w=1e-6, l=1.5e-7, nf=1, m=1,
                cell_name="dev")
    report = Path(client.call("drc.run", cell="dev")["report_path"])
    exported = Path(client.call("layout.export", cell="dev")["path"])
    assert report.is_file() and exported.is_file()
    root = report.parent.parent
    assert exported.parent.parent == root and root.name.startswith("centroid_session_")
    response = client.server.handle_message(
        {"jsonrpc": "2.0", "id": 1, "method": "session/reset", "params": {}})
    assert response is not None and response["result"] == {"ok": True}, response
    assert not root.exists(), "the reset removed the session's unnamed files"
