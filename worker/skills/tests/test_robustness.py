"""Bad input and failing skills never end the session; checks fire on the real rule sets."""

from __future__ import annotations

from typing import Any

import klayout.db as kdb
import pytest
from helpers import Client

from centroid_skills import registry
from centroid_skills.session import Session


@registry.skill("test.crash", "raises an unexpected exception (test only)", registry.obj({}))
def _crash(session: Session, args: dict[str, Any]) -> dict[str, Any]:
    raise ZeroDivisionError("boom")


def test_internal_error_has_traceback(client: Client) -> None:
    r = client.raw("test.crash", {})
    assert r["ok"] is False and r["error"]["code"] == "INTERNAL_ERROR"
    assert "ZeroDivisionError" in r["error"]["details"]["traceback"]
    assert client.call("debug.noop") == {}


def test_bad_inputs_are_results(client: Client, toy_rules: dict[str, Any]) -> None:
    client.call("tech.load", rules=toy_rules)
    cases = [
        ("layout.create_device", {"type": "nmos", "w": 1e-6}),  # missing l
        ("layout.create_device", {"type": "bjt", "w": 1e-6, "l": 1e-6}),
        ("layout.create_device", {"type": "nmos", "w": 1.0, "l": 1e-6}),  # 1 m
        ("layout.create_device", {"type": "nmos", "w": 1e-4, "l": 1e-6, "nf": 64, "m": 64}),
        ("layout.create_device", {"type": "nmos", "w": 1e-6, "l": 1e-6, "extra": 1}),
        ("layout.create_common_centroid_pair", {"device_a": {}, "device_b": {}}),
        ("drc.run", {"cell": "../../etc/passwd"}),
        ("layout.place", {"cell_name": "x"}),
        ("tech.load", {"rules": {"tech": "x"}}),
    ]
    for name, args in cases:
        r = client.raw(name, args)
        assert r["ok"] is False and r["error"]["code"] == "INVALID_PARAM", (name, args, r)
    assert client.call("debug.noop") == {}


def _box(tech: Any, session: Session, cell: kdb.Cell, layer: str, box: kdb.Box) -> None:
    cell.shapes(tech.layer_index(session.layout, layer)).insert(box)


def test_checks_fire_on_real_rules(loaded: Client, rule_set: dict[str, Any]) -> None:
    """For every width/spacing/enclosure/extension rule between drawn layers (not derived),
    a violation by one grid step is reported under that rule id."""
    session = loaded.server.session
    tech = session.tech
    assert tech is not None
    g = tech.grid_nm
    checked = 0
    for i, rule in enumerate(tech.rules):
        if rule.layer not in tech.layers or (rule.layer2 and rule.layer2 not in tech.layers):
            continue
        lo = tech.nm(rule.min or 0)
        if rule.type == "density" or lo < 2 * g:
            continue
        cell = session.layout.create_cell(f"mut{i}")
        big = 20 * lo
        if rule.type == "width":
            _box(tech, session, cell, rule.layer, kdb.Box(0, 0, lo - g, big))
        elif rule.type == "spacing" and not rule.layer2:
            _box(tech, session, cell, rule.layer, kdb.Box(0, 0, big, big))
            _box(tech, session, cell, rule.layer, kdb.Box(big + lo - g, 0, 2 * big, big))
        elif rule.type == "spacing":
            _box(tech, session, cell, rule.layer, kdb.Box(0, 0, big, big))
            _box(tech, session, cell, rule.layer2, kdb.Box(big + lo - g, 0, 2 * big, big))
        elif rule.type == "enclosure":
            _box(tech, session, cell, rule.layer, kdb.Box(0, 0, 4 * big, 4 * big))
            _box(tech, session, cell, rule.layer2, kdb.Box(lo - g, big, 2 * big, 2 * big))
        elif rule.type == "extension":
            _box(tech, session, cell, rule.layer2, kdb.Box(0, 0, 4 * big, big))
            _box(tech, session, cell, rule.layer, kdb.Box(big, -big, 2 * big, big + lo - g))
        else:
            continue
        data = loaded.call("drc.run", cell=cell.name, rules=[rule.id])
        assert data["total"] == 1, (rule.id, data["violations"])
        checked += 1
    assert checked >= 10


@pytest.mark.parametrize("bad", ["ABC", "A/B/", ""])
def test_bad_pattern(loaded: Client, bad: str) -> None:
    dev = {"type": "nmos", "w": 2e-6, "l": 0.5e-6, "m": 2}
    r = loaded.raw("layout.create_common_centroid_pair", {
        "device_a": {**dev, "device_id": "A"}, "device_b": {**dev, "device_id": "B"}, "arrangement": bad})
    assert r["error"]["code"] == "INVALID_PARAM"
