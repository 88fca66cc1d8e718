"""Partner nets that both cross a row on verticals keep a plan of their channel (issue 26).

The channel below the nmos row of the planner's OTA block (SKY130, ``bank_netlist``): the
differential pair's drains n1 and out (partners) come down at the pair's interleaved
fingers and each leaves upward on a vertical over the row, out's left of n1's.  Balanced to
the union of their spans, n1's track crosses out's vertical and out's crosses n1's: each
would have to lie above the other, so the channel had no plan and both nets took trunk
columns beside the rows (19 % of the block's width).  Now the two keep their own spans
there: the channel is planned, each vertical's net above the tracks crossing its band, on
every rule set."""

from __future__ import annotations

import klayout.db as kdb
import pytest
from helpers import RULE_SET_IDS, RULE_SET_PATHS, Client, load_rule_set

from centroid_skills.routing.channels import Stub, band_constraints, plan_channel
from centroid_skills.routing.dims import routing_dims
from centroid_skills.routing.terminals import Term

#: (net, kind, x in pitches): the stubs coming down from the nmos row, the block's ports
DOWN = [("tail", -9), ("n1", -7.5), ("tail", -6), ("out", -4.5), ("tail", -3), ("out", -1.5),
        ("tail", 0), ("n1", 1.5), ("tail", 8.5)]
#: (net, x in pitches): the verticals leaving upward
BANDS = [("out", 5.5), ("n1", 6.5)]


@pytest.mark.parametrize("path", RULE_SET_PATHS, ids=RULE_SET_IDS)
def test_partners_with_verticals_keep_a_plan(path: object) -> None:
    client = Client()
    client.call("tech.load", rules=load_rule_set(path))
    tech = client.server.session.need_tech()
    d = routing_dims(tech)
    term = Term(None, "D", "metal2", kdb.Box(), kdb.Box(), None)
    lst = []
    for net, q in DOWN:
        x = tech.snap(q * d.px)
        lst.append(Stub(net, term, 0, "down", x, x, x))
    bands = [(net, tech.snap(q * d.px), True) for net, q in BANDS]
    tracks = plan_channel(lst, {}, d, tech, [("n1", "out")], bands)
    assert tracks is not None
    spans = {net: (left, right) for net, (_k, left, right) in tracks.items()}
    # each keeps its own span, out's reaching its vertical short of n1's
    assert spans["out"] == (tech.snap(-4.5 * d.px), bands[0][1])
    assert spans["n1"] == (tech.snap(-7.5 * d.px), bands[1][1])
    entries = [(left, right, net) for net, (left, right) in spans.items()]
    for net, below in band_constraints(bands, entries, d, tech).items():
        assert all(tracks[b][0] < tracks[net][0] for b in below), (net, below, tracks)
