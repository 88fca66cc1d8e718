"""The MOS geometry is what KLayout's MOS4 extractor expects (gate = poly AND active,
S/D = active NOT poly): one device per finger with the right W and L, combining to
the requested size, with S, D and G on three separate nets."""

from __future__ import annotations

import klayout.db as kdb
import pytest
from helpers import Client


def extract(client: Client, cell_name: str, mos_type: str) -> tuple[kdb.LayoutToNetlist, kdb.Netlist]:
    session = client.server.session
    tech = session.tech
    assert tech is not None
    layout = session.layout
    cell = layout.cell(cell_name)
    l2n = kdb.LayoutToNetlist(kdb.RecursiveShapeIterator(layout, cell, []))

    def layer(role: str) -> kdb.Region:
        ldef = tech.require(role)
        return l2n.make_layer(layout.layer(ldef.info()), role)

    active, poly, cont = layer("active"), layer("poly"), layer("contact")
    m1, v1, m2 = layer("metal1"), layer("via1"), layer("metal2")
    gate = poly & active
    sd = active - poly
    l2n.register(gate, "gate")
    l2n.register(sd, "sd")
    bulk = kdb.Region(cell.bbox())
    l2n.register(bulk, "bulk")
    extractor = kdb.DeviceExtractorMOS4Transistor(mos_type.upper())
    l2n.extract_devices(extractor, {"SD": sd, "G": gate, "P": poly, "W": bulk})
    for a, b in ((sd, cont), (poly, cont), (cont, m1), (m1, v1), (v1, m2)):
        l2n.connect(a)
        l2n.connect(a, b)
    l2n.connect(m2)
    l2n.connect(bulk)
    l2n.extract_netlist()
    return l2n, l2n.netlist()  # the netlist lives as long as l2n


@pytest.mark.parametrize("mos_type", ["nmos", "pmos"])
@pytest.mark.parametrize("size", [(4e-6, 0.5e-6, 2, 1), (2e-6, 1e-6, 1, 1), (6e-6, 0.5e-6, 3, 2)])
def test_mos4_extraction(loaded: Client, mos_type: str, size: tuple[float, float, int, int]) -> None:
    w, length, nf, m = size
    d = loaded.call("layout.create_device", type=mos_type, w=w, l=length, nf=nf, m=m)
    _l2n, netlist = extract(loaded, d["cell_name"], mos_type)
    circuit = netlist.circuit_by_name(d["cell_name"])
    devices = list(circuit.each_device())
    assert len(devices) == nf * m
    for dev in devices:
        assert dev.parameter("L") == pytest.approx(length * 1e6, abs=1e-3)
        assert dev.parameter("W") == pytest.approx(w * 1e6 / nf, abs=0.01)
    nets = {
        t: {dev.net_for_terminal(t).expanded_name() for dev in devices}
        for t in ("S", "D", "G")
    }
    # every finger's gate on one net; source and drain nets alternate between fingers
    assert len(nets["G"]) == 1
    sd_nets = nets["S"] | nets["D"]
    assert len(sd_nets) == 2
    assert not nets["G"] & sd_nets
    netlist.combine_devices()
    combined = list(netlist.circuit_by_name(d["cell_name"]).each_device())
    assert len(combined) == 1
    assert combined[0].parameter("W") == pytest.approx(w * 1e6 * m, abs=0.02)
