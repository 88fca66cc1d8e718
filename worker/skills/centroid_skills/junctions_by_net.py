"""The drawn source/drain junctions of each extracted MOSFET, per terminal net.

KLayout's MOS extractor gives each finger (one gate) the area and perimeter of the two
diffusions beside it, a diffusion shared by two gates split half to each. Its
``combine_devices`` then sums the fingers' AS into the combined device's AS and their AD
into its AD whatever nets those diffusions are on; the fingers of a multi-finger device
alternate S D S D, so each finger's "S" is the source net for one finger and the drain
net for the next, and the combined AS and AD come out equal (their mean). A device with
an even number of fingers draws its drain on the inner diffusions only (``mos.py``):
the output's junction would be overstated and the source's understated.

Here the fingers' diffusions are summed per net before the combination
(:func:`by_net`) and given to the combined device by its terminals' nets afterwards
(:func:`per_device`): AD is what the drain net's diffusions add up to, AS the source
net's; a device whose source and drain are one net gets half of it on each.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass

import klayout.db as kdb


@dataclass(frozen=True)
class DeviceJunctions:
    """AS, AD (µm²), PS, PD (µm) of one combined device."""

    as_um2: float
    ad_um2: float
    ps_um: float
    pd_um: float


NetSums = dict[int, list[float]]  # net cluster id -> [area µm², perimeter µm]


def _cluster(net: kdb.Net | None) -> int:
    return -1 if net is None else net.cluster_id


def by_net(circuit: kdb.Circuit, key: Callable[[kdb.Device], Hashable]) -> dict[Hashable, NetSums]:
    """Before ``combine_devices``: per combination key (devices that will become one),
    the area and perimeter of the fingers' diffusions on each net."""
    sums: dict[Hashable, NetSums] = {}
    for dev in circuit.each_device():
        if dev.device_class().name not in ("NMOS", "PMOS"):
            continue
        nets = sums.setdefault(key(dev), {})
        for terminal, area, perimeter in (("S", "AS", "PS"), ("D", "AD", "PD")):
            entry = nets.setdefault(_cluster(dev.net_for_terminal(terminal)), [0.0, 0.0])
            entry[0] += dev.parameter(area)
            entry[1] += dev.parameter(perimeter)
    return sums


def per_device(circuit: kdb.Circuit, key: Callable[[kdb.Device], Hashable],
               sums: dict[Hashable, NetSums]) -> dict[int, DeviceJunctions]:
    """After ``combine_devices``: each MOSFET's junctions by its terminals' nets (devices
    of one key that stayed apart share its sums equally)."""
    mos = [dev for dev in circuit.each_device() if dev.device_class().name in ("NMOS", "PMOS")]
    apart: dict[Hashable, int] = {}
    for dev in mos:
        apart[key(dev)] = apart.get(key(dev), 0) + 1
    out: dict[int, DeviceJunctions] = {}
    for dev in mos:
        nets = sums.get(key(dev))
        if nets is None:
            continue
        source, drain = _cluster(dev.net_for_terminal("S")), _cluster(dev.net_for_terminal("D"))
        share = 1.0 / apart[key(dev)]
        if source == drain:
            share /= 2
            drain_sums = source_sums = nets.get(source, [0.0, 0.0])
        else:
            source_sums, drain_sums = nets.get(source, [0.0, 0.0]), nets.get(drain, [0.0, 0.0])
        out[dev.id()] = DeviceJunctions(source_sums[0] * share, drain_sums[0] * share,
                                        source_sums[1] * share, drain_sums[1] * share)
    return out
