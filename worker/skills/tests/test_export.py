"""GDS/OASIS export (read back) and headless PNG rendering."""

from __future__ import annotations

import base64
from collections import Counter
from pathlib import Path
from typing import Any

import klayout.db as kdb
import klayout.lay as klay
from helpers import Client


def test_export_roundtrip(client: Client, toy_rules: dict[str, Any], tmp_path: Path) -> None:
    client.call("tech.load", rules=toy_rules)
    p = client.call("layout.create_common_centroid_pair",
                    device_a={"device_id": "M1", "type": "nmos", "w": 2e-6, "l": 0.5e-6, "m": 2},
                    device_b={"device_id": "M2", "type": "nmos", "w": 2e-6, "l": 0.5e-6, "m": 2})
    for ext, fmt in (("gds", "GDS2"), ("oas", "OASIS")):
        path = tmp_path / f"pair.{ext}"
        out = client.call("layout.export", cell=p["cell_name"], path=str(path), return_base64=True)
        assert out["format"] == fmt and path.stat().st_size == out["bytes"]
        assert base64.b64decode(out["base64"]) == path.read_bytes()
        ly = kdb.Layout()
        ly.read(str(path))
        top = ly.top_cell()
        assert top.name == p["cell_name"]
        assert top.dbbox().width() == p["width_um"] or abs(top.dbbox().width() - p["width_um"]) < 1e-6
        assert ly.find_layer(1, 0) is not None  # Activ
    r = client.raw("layout.export", {"cell": p["cell_name"], "path": str(tmp_path / "x.txt")})
    assert r["error"]["code"] == "INVALID_PARAM"


def test_render_png(client: Client, toy_rules: dict[str, Any], tmp_path: Path) -> None:
    client.call("tech.load", rules=toy_rules)
    d = client.call("layout.create_device", type="pmos", w=2e-6, l=0.5e-6, nf=2)
    path = tmp_path / "dev.png"
    out = client.call("layout.render", cell=d["cell_name"], path=str(path), width=320, height=240)
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and out["bytes"] == len(data)
    # the picture shows the device: its layers in colours over the background
    image = klay.PixelBuffer.read_png(str(path))
    assert (image.width(), image.height()) == (320, 240)
    pixels = Counter(image.pixel(x, y) for x in range(320) for y in range(240))
    _, background_count = pixels.most_common(1)[0]
    assert len(pixels) >= 3, pixels
    assert background_count < 0.95 * 320 * 240, "the device covers some of the picture"
    # the session layout is untouched by rendering
    assert client.call("drc.run", cell=d["cell_name"])["total"] == 0


def test_a_layout_read_back_renders_as_drawn(client: Client, toy_rules: dict[str, Any],
                                             tmp_path: Path) -> None:
    """A kept candidate's picture is drawn from its GDS in a fresh session: the cells come
    back under their names with the same extent, and the picture equals the one drawn
    from the session that generated them."""
    client.call("tech.load", rules=toy_rules)
    p = client.call("layout.create_common_centroid_pair",
                    device_a={"device_id": "M1", "type": "nmos", "w": 2e-6, "l": 0.5e-6, "m": 2},
                    device_b={"device_id": "M2", "type": "nmos", "w": 2e-6, "l": 0.5e-6, "m": 2})
    cell = p["cell_name"]
    gds = tmp_path / "pair.gds"
    exported = client.call("layout.export", cell=cell, path=str(gds))
    drawn = tmp_path / "drawn.png"
    client.call("layout.render", cell=cell, path=str(drawn), width=200, height=150)
    reset = client.server.handle_message(
        {"jsonrpc": "2.0", "id": 0, "method": "session/reset", "params": {}})
    assert reset is not None and reset["result"] == {"ok": True}, reset
    read = client.call("layout.read", path=str(gds))
    assert read["top_cells"] == [cell] and read["cells"] >= 2, read  # the pair and its unit
    assert read["bbox_um"] == [exported["bbox_um"]]
    redrawn = tmp_path / "redrawn.png"
    client.call("layout.render", cell=cell, path=str(redrawn), width=200, height=150)
    assert redrawn.read_bytes() == drawn.read_bytes()
    # the same cells again would merge into the ones read: refused
    again = client.raw("layout.read", {"path": str(gds)})
    assert again["error"]["code"] == "INVALID_PARAM" and cell in again["error"]["details"]["cells"]
    not_gds = tmp_path / "notes.gds"
    not_gds.write_text("not a layout")
    bad = client.raw("layout.read", {"path": str(not_gds)})
    assert bad["error"]["code"] == "INVALID_PARAM" and "notes.gds" in bad["error"]["message"]
    missing = client.raw("layout.read", {"path": str(tmp_path / "missing.gds")})
    assert missing["error"]["code"] == "INVALID_PARAM"


def test_session_reset_drops_layout_and_tech(client: Client, toy_rules: dict[str, Any]) -> None:
    client.call("tech.load", rules=toy_rules)
    d = client.call("layout.create_device", type="nmos", w=2e-6, l=0.5e-6)
    resp = client.server.handle_message({"jsonrpc": "2.0", "id": 1, "method": "session/reset"})
    assert resp is not None and resp["result"] == {"ok": True}
    r = client.raw("drc.run", {"cell": d["cell_name"]})
    assert r["error"]["code"] == "INVALID_PARAM"  # no technology any more
    client.call("tech.load", rules=toy_rules)
    r = client.raw("drc.run", {"cell": d["cell_name"]})
    assert r["error"]["code"] == "NOT_FOUND"


def test_tech_load_roles_and_errors(client: Client, rule_set: dict[str, Any]) -> None:
    data = client.call("tech.load", rules=rule_set)
    assert data["missing_roles"] == []
    for role in ("active", "poly", "contact", "metal1", "via1", "metal2", "nwell"):
        assert role in data["roles"]
    bad = dict(rule_set, rules=[*rule_set["rules"], {"id": "x", "type": "width", "layer": "NoSuch"}])
    r = client.raw("tech.load", {"rules": bad})
    assert r["error"]["code"] == "INVALID_PARAM" and r["error"]["details"]["rule"] == "x"
    r = client.raw("tech.load", {"rules": {"tech": "t", "layers": {"A": "x"}, "rules": []}})
    assert r["error"]["code"] == "INVALID_PARAM" and r["error"]["details"]["path"].startswith("$.rules.layers")


def test_role_inference_1_0_0(client: Client) -> None:
    rules = {"tech": "old", "layers": {"OD": 1, "PO": 2, "CO": 3, "M1": 4, "V1": 5, "M2": 6, "NW": 7, "PP": 8},
             "rules": [{"id": "a", "type": "width", "layer": "PO", "min": 1e-7}]}
    data = client.call("tech.load", rules=rules)
    assert {r: v["layer"] for r, v in data["roles"].items()} == {
        "active": "OD", "poly": "PO", "contact": "CO", "metal1": "M1", "via1": "V1",
        "metal2": "M2", "nwell": "NW", "pplus": "PP"}
    assert all(v["source"] == "inferred" for v in data["roles"].values())
    d = client.call("layout.create_device", type="pmos", w=1e-6, l=1e-7)
    assert client.call("drc.run", cell=d["cell_name"])["total"] == 0


def test_debug_skills(client: Client) -> None:
    assert client.call("debug.noop") == {}
    assert client.call("debug.sleep", seconds=0)["slept_s"] >= 0


def test_list_cells_and_cell_info(client: Client, toy_rules: dict[str, Any]) -> None:
    client.call("tech.load", rules=toy_rules)
    d = client.call("layout.create_device", device_id="M7", type="nmos", w=2e-6, l=0.5e-6, nf=2)
    cells = client.call("layout.list_cells")
    assert cells["devices"] == {"M7": "M7"}
    assert [c["cell_name"] for c in cells["cells"]] == [d["cell_name"]]
    info = client.call("layout.cell_info", cell="M7")
    assert info["pins"] == d["pins"]
    assert client.raw("layout.cell_info", {"cell": "nope"})["error"]["code"] == "NOT_FOUND"


def test_grid_in_database_units() -> None:
    from centroid_skills.tech import grid_in_dbu

    assert [grid_in_dbu(g) for g in (5e-9, 2.5e-9, 1e-9, 7.5e-9, 1e-8, 5e-10)] == [5, 5, 1, 15, 10, 1]
