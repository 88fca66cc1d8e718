"""Bad input and failing skills never end the session; checks fire on the real rule sets."""

from __future__ import annotations

import math
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


def _inject(tech: Any, session: Session, cell: kdb.Cell, rule: Any, g: int) -> bool:
    """Draw a one-grid-step violation of ``rule`` (between drawn layers); False when the
    rule has nothing to violate by one step."""
    lo = tech.nm(rule.min or 0) if rule.type != "area" else 0
    big = 20 * lo
    if rule.type == "area":
        area = int(round(rule.min * 1e18))
        w = tech.snap_up(math.sqrt(area))
        h = tech.snap_up(area / w)
        _box(tech, session, cell, rule.layer, kdb.Box(0, 0, w, h - g))  # one step short
    elif rule.type == "spacing" and rule.width_over is not None:
        wide = tech.snap_up(tech.nm(rule.width_over)) + 10 * g  # both boxes wider than width_over
        _box(tech, session, cell, rule.layer, kdb.Box(0, 0, wide, wide))
        _box(tech, session, cell, rule.layer, kdb.Box(wide + lo - g, 0, 2 * wide + lo, wide))
    elif rule.type == "enclosure" and rule.end_min is not None:
        # a line narrower than end_width, a shape end_min - g inside its end
        width = tech.snap_down(tech.nm(rule.end_width) - 1)
        end = tech.snap_up(tech.nm(rule.end_min))
        if end < 2 * g or width < 4 * g:
            return False
        inset = tech.snap_down(width / 4)
        length = 40 * width
        _box(tech, session, cell, rule.layer, kdb.Box(0, 0, width, length))
        _box(tech, session, cell, rule.layer2,
             kdb.Box(inset, length - end + g - 2 * inset, width - inset, length - end + g))
    elif rule.type == "enclosure" and rule.adjacent_min is not None:
        # thin on the left (adjacent_below - g), adjacent_min - g below
        below = tech.snap_down(tech.nm(rule.adjacent_below) - 1)
        amin = tech.snap_up(tech.nm(rule.adjacent_min))
        if amin < 2 * g:
            return False
        size = 20 * max(amin, g)
        _box(tech, session, cell, rule.layer, kdb.Box(0, 0, 4 * size, 4 * size))
        _box(tech, session, cell, rule.layer2,
             kdb.Box(below, amin - g, below + size, amin - g + size))
    elif lo < 2 * g or rule.type == "density":
        return False
    elif rule.type == "width":
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
        return False
    return True


def test_checks_fire_on_real_rules(loaded: Client, rule_set: dict[str, Any]) -> None:
    """For every width/spacing/enclosure/extension/area rule between drawn layers (not
    derived), including line-end, adjacent-side and wide-metal forms, a violation by one
    grid step is reported under that rule id."""
    session = loaded.server.session
    tech = session.tech
    assert tech is not None
    g = tech.grid_nm
    checked: dict[str, int] = {}
    for i, rule in enumerate(tech.rules):
        if rule.layer not in tech.layers or (rule.layer2 and rule.layer2 not in tech.layers):
            continue
        cell = session.layout.create_cell(f"mut{i}")
        if not _inject(tech, session, cell, rule, g):
            continue
        data = loaded.call("drc.run", cell=cell.name, rules=[rule.id])
        assert data["total"] == 1, (rule.id, data["violations"])
        kind = "end" if rule.end_min else "adjacent" if rule.adjacent_min else \
            "wide" if rule.width_over else rule.type
        checked[kind] = checked.get(kind, 0) + 1
    assert sum(checked.values()) >= 10
    if tech.schema_version.startswith("1.2"):  # every 1.2.0 kind the rule set has was injected
        kinds = {"end" if r.end_min else "adjacent" if r.adjacent_min else "wide" if r.width_over else r.type
                 for r in tech.rules if r.layer in tech.layers and (not r.layer2 or r.layer2 in tech.layers)}
        for kind in ("end", "adjacent", "wide", "area"):
            assert (kind in kinds) == (kind in checked), (kind, checked)


@pytest.mark.parametrize("bad", ["ABC", "A/B/", ""])
def test_bad_pattern(loaded: Client, bad: str) -> None:
    dev = {"type": "nmos", "w": 2e-6, "l": 0.5e-6, "m": 2}
    r = loaded.raw("layout.create_common_centroid_pair", {
        "device_a": {**dev, "device_id": "A"}, "device_b": {**dev, "device_id": "B"}, "arrangement": bad})
    assert r["error"]["code"] == "INVALID_PARAM"
