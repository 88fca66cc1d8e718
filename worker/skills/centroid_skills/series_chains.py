"""Series chains of identical MOS reduced to one device before LVS compares two netlists.

A stack of n identical transistors in series under one gate (a stacked-device cell, each
inner node joining exactly two of them and nothing else) is n devices and n - 1 inner nets
the comparer must pair. Stacks drawn in parallel with the same ends and gate (``m`` copies
of a stacked cell, a differential pair of such stacks) make those inner nets ambiguous, and
KLayout's :class:`klayout.db.NetlistComparer` resolves a large ambiguity of that kind badly:
it gives up and pairs devices across stacks, even across gates ("parameters differ" on
identical devices), although the two netlists are the same up to the order of the segments.

The reduction is the same on both sides and loses nothing: an inner net is one whose only
connections are the source/drain of two distinct MOS devices of one class with the same
gate, bulk, W and L (and fingers per device when counted). Every maximal chain of such nets
becomes one device between the chain's two ends with that W and L times the segment count;
its fingers are the segments' sum. Identical segments in series are interchangeable, so the
reduced netlists are isomorphic exactly when the original ones are; a short or an open at an
inner node makes that node no longer inner on one side only, and the comparison fails as it
should.
"""

from __future__ import annotations

import klayout.db as kdb

MOS_CLASSES = ("NMOS", "PMOS")
SAME = 1e-6  # relative: segments' W and L equal as numbers (both sides write them alike)


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= SAME * max(abs(a), abs(b), 1.0)


def _net_key(net: kdb.Net | None) -> tuple[int, str] | None:
    """A net's identity within its circuit (a schematic's nets all have cluster id 0)."""
    return None if net is None else (net.cluster_id, net.expanded_name())


def _segment_alike(a: kdb.Device, b: kdb.Device, fingers: dict[int, int]) -> bool:
    return (a.device_class().name == b.device_class().name
            and a.device_class().name in MOS_CLASSES
            and _net_key(a.net_for_terminal("G")) == _net_key(b.net_for_terminal("G"))
            and _net_key(a.net_for_terminal("B")) == _net_key(b.net_for_terminal("B"))
            and _close(a.parameter("W"), b.parameter("W"))
            and _close(a.parameter("L"), b.parameter("L"))
            and fingers.get(a.id()) == fingers.get(b.id()))


def _inner_pair(net: kdb.Net, fingers: dict[int, int]) -> tuple[kdb.Device, kdb.Device] | None:
    """The two devices an inner net joins, or None when it is not an inner net."""
    if net.pin_count() or net.subcircuit_pin_count() or net.terminal_count() != 2:
        return None
    refs = [(t.device(), t.terminal_def().name) for t in net.each_terminal()]
    (a, ta), (b, tb) = refs
    if a.id() == b.id() or ta not in ("S", "D") or tb not in ("S", "D"):
        return None
    return (a, b) if _segment_alike(a, b, fingers) else None


Chain = tuple[list[kdb.Device], list[kdb.Net]]  # segments in series order, inner nets between


def _chains(circuit: kdb.Circuit, fingers: dict[int, int]) -> list[Chain]:
    """Every maximal chain of the circuit (a ring of inner nets has no end: left alone)."""
    links: dict[int, list[tuple[int, kdb.Net]]] = {}  # device id -> (neighbour id, inner net)
    devices: dict[int, kdb.Device] = {}
    for net in circuit.each_net():
        pair = _inner_pair(net, fingers)
        if pair is None:
            continue
        a, b = pair
        devices[a.id()], devices[b.id()] = a, b
        links.setdefault(a.id(), []).append((b.id(), net))
        links.setdefault(b.id(), []).append((a.id(), net))
    chains: list[Chain] = []
    seen: set[int] = set()
    for start in sorted(links):
        if start in seen or len(links[start]) != 1:
            continue  # a chain starts at an end
        order, inner, here, prev = [start], [], start, -1
        seen.add(start)
        while True:
            step = [(n, net) for n, net in links[here] if n != prev]
            if not step:
                break
            prev, (here, net) = here, step[0]
            order.append(here)
            inner.append(net)
            seen.add(here)
        chains.append(([devices[i] for i in order], inner))
    return chains


def _outer_net(dev: kdb.Device, inner: kdb.Net) -> kdb.Net | None:
    """The source/drain net of an end segment that is not its chain's inner net."""
    s, d = dev.net_for_terminal("S"), dev.net_for_terminal("D")
    return d if _net_key(s) == _net_key(inner) else s


def reduce_series_chains(netlist: kdb.Netlist, fingers: dict[int, int]) -> dict[int, int]:
    """Replace every chain of identical series MOS of the top circuit by one device (in
    place); the fingers per device afterwards (a chain's device: its segments' sum)."""
    circuit = netlist.top_circuit()
    if circuit is None:
        return dict(fingers)
    out = dict(fingers)
    for segments, inner in _chains(circuit, fingers):
        first, last = segments[0], segments[-1]
        ends = (_outer_net(first, inner[0]), _outer_net(last, inner[-1]))
        dev = circuit.create_device(first.device_class(),
                                    f"{first.expanded_name()}..{last.expanded_name()}")
        for pd in first.device_class().parameter_definitions():
            dev.set_parameter(pd.name, first.parameter(pd.name))
        dev.set_parameter("L", sum(seg.parameter("L") for seg in segments))
        for terminal, net in (("S", ends[0]), ("D", ends[1]),
                              ("G", first.net_for_terminal("G")),
                              ("B", first.net_for_terminal("B"))):
            if net is not None:
                dev.connect_terminal(terminal, net)
        counted = [fingers.get(seg.id()) for seg in segments]
        if all(c is not None for c in counted):
            out[dev.id()] = sum(c for c in counted if c is not None)
        for seg in segments:
            out.pop(seg.id(), None)
            circuit.remove_device(seg)
        for net in inner:
            circuit.remove_net(net)
    return out
