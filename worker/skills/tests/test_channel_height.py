"""Channels and rails no taller than the rows' pins need (issue 26).

The OTA block of ``test_blocks`` (an nmos row under a pmos row; the nmos gates go up on
metal 1, the pmos sources drop onto their rail, their drains are metal 2 on SKY130), routed
on every rule set and read back from its GDS:

* where the tracks are not metal 1, the nmos gates' via-1 stands under their track via:
  the channel above the nmos row starts its first track at the clearance and one via
  stack's (or track's) half height above the row — no via row of its own;
* on SKY130 the pmos row, whose metal-1 pins all drop onto its rail, has no via zone: its
  tap rail stands closer to its devices than the zone the other rows keep;

DRC and LVS clean."""

from __future__ import annotations

from pathlib import Path

import klayout.db as kdb
import pytest
from helpers import RULE_SET_IDS, RULE_SET_PATHS, Client, load_rule_set
from test_blocks import OTA, SIZE, check_clean, ota_block

from centroid_skills.routing.dims import routing_dims


def read_block(client: Client, folder: Path) -> tuple[list[kdb.Box], list[kdb.Box], list[int]]:
    """The block's rows' boxes and rails' boxes (bottom to top) and the y of every level a
    track of the track layer stands on, read back from the written GDS."""
    tech = client.server.session.need_tech()
    ldef = tech.require(routing_dims(tech).h_role)
    path = client.call("layout.export", cell="BLK_OTA", path=str(folder / "blk.gds"))["path"]
    layout = kdb.Layout()
    layout.read(path)
    cell = layout.cell("BLK_OTA")
    rows = sorted((i.bbox() for i in cell.each_inst() if "_ROW" in i.cell.name),
                  key=lambda b: b.bottom)
    rails = sorted((i.bbox() for i in cell.each_inst() if "_rail" in i.cell.name),
                   key=lambda b: b.bottom)
    levels: set[int] = set()
    li = layout.find_layer(ldef.layer, ldef.datatype)
    if li is not None:
        for poly in kdb.Region(cell.shapes(li)).decompose_trapezoids_to_region().each():
            if poly.bbox().width() > poly.bbox().height():
                levels.add(poly.bbox().center().y)
    return rows, rails, sorted(levels)


@pytest.mark.parametrize("path", RULE_SET_PATHS, ids=RULE_SET_IDS)
def test_channels_and_rails_only_as_tall_as_the_pins_need(path: Path, tmp_path: Path) -> None:
    client = Client()
    client.call("tech.load", rules=load_rule_set(path))
    ota_block(client)
    tech = client.server.session.need_tech()
    d = routing_dims(tech)
    rows, rails, levels = read_block(client, tmp_path)
    assert len(rows) == 2 and len(rails) == 2
    nmos, pmos = rows
    zone = 2 * d.c_out + 2 * d.hstack  # what a via zone (or a via row) keeps
    if d.h_role != "metal1":
        above_nmos = [y for y in levels if nmos.top < y < rails[1].bottom]
        assert above_nmos, levels
        # the clearance and one via stack or track: below a via row's zone and a track
        first = min(above_nmos) - nmos.top
        assert first < zone + d.hvt, (first, d)
    if tech.name == "sky130":
        assert pmos.bottom - rails[1].top < zone, (pmos, rails[1], zone)
        assert nmos.bottom - rails[0].top >= zone  # the tail sources take their via-1 there
    check_clean(client, "BLK_OTA", [{"id": i, "type": t, **SIZE, "terminals": terms}
                                    for i, t, terms in OTA])
