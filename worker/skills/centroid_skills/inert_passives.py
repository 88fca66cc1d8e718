"""Resistors and capacitors that carry no current, set aside before LVS combines devices.

A group of passive devices joined only through nets that nothing else touches, reaching
exactly one other net — a ring of dummy resistors whose both ends sit on the ground, a chain
hanging off one supply — carries no current.  ``combine_devices`` reduces such a ring in an
order that depends on the devices' order, so the layout and the schematic, the same ring,
come out as different pairs of resistors and never match.  Both sides therefore take these
groups out before combining and compare them as groups instead: each schematic group pairs
with a layout group of the same device classes on the same outside net (by name where the
layout labels it) whose resistors add up to the same squares (within LVS's tolerance).

A net inside a group has no pin and no subcircuit pin, only passive devices' terminals, and
no label in the layout (``labelled``: the schematic's nets that the layout labels, and every
named layout net, stay outside nets — a port's net is never inside a group).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import klayout.db as kdb

PASSIVE_CLASSES = ("RES", "CAP")


@dataclass(frozen=True, order=True)
class InertGroup:
    """One group: its devices' classes, the outside net ("" when not labelled) and
    its resistors' squares (L/W summed: a bar drawn folded in segments counts as the
    schematic's one bar; capacitors are compared by type only, as LVS does)."""

    classes: tuple[str, ...]
    outside_net: str
    squares: float

    def as_dict(self) -> dict[str, object]:
        return {"name": "inert passives", "class": "+".join(self.classes),
                "resistor_squares": round(self.squares, 3), "outside_net": self.outside_net or None}

    def same_as(self, other: InertGroup, tolerance: float) -> bool:
        return (self.classes == other.classes and self.outside_net == other.outside_net
                and abs(self.squares - other.squares) <= tolerance * max(self.squares, other.squares))


def _is_passive(device: kdb.Device) -> bool:
    return device.device_class().name in PASSIVE_CLASSES


def _inside(net: kdb.Net, labelled: Callable[[kdb.Net], bool]) -> bool:
    if net.pin_count() or net.subcircuit_pin_count() or labelled(net):
        return False
    return all(_is_passive(ref.device()) for ref in net.each_terminal())


def find_inert_groups(circuit: kdb.Circuit, labelled: Callable[[kdb.Net], bool],
                      outside_name: Callable[[kdb.Net], str]) -> list[tuple[InertGroup, list[kdb.Device]]]:
    """The groups of passives that carry no current, each with its devices."""
    passives = [d for d in circuit.each_device() if _is_passive(d)]
    parent = {d.id(): d.id() for d in passives}

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    outside: dict[int, set[tuple[str, str]]] = {}  # device -> (net, its outside name)
    inside_nets: dict[str, kdb.Net] = {}
    on_inside_net: set[int] = set()
    for net in circuit.each_net():
        if _inside(net, labelled):
            inside_nets[net.expanded_name()] = net
            ids = [ref.device().id() for ref in net.each_terminal()]
            on_inside_net.update(ids)
            for other in ids[1:]:
                parent[root(other)] = root(ids[0])
    for device in passives:
        for terminal in device.device_class().terminal_definitions():
            net = device.net_for_terminal(terminal.id())
            if net is None or net.expanded_name() in inside_nets:
                continue
            outside.setdefault(device.id(), set()).add((net.expanded_name(), outside_name(net)))
    members: dict[int, list[kdb.Device]] = {}
    for device in passives:
        members.setdefault(root(device.id()), []).append(device)
    groups = []
    for devices in members.values():
        touched: set[tuple[str, str]] = set().union(*(outside.get(d.id(), set()) for d in devices))
        # a group touching nothing, or a lone device shorted on one net (no net inside),
        # is left to the comparison
        if len(touched) != 1 or not any(d.id() in on_inside_net for d in devices):
            continue
        classes = tuple(sorted({d.device_class().name for d in devices}))
        squares = sum(d.parameter("L") / d.parameter("W") for d in devices
                      if d.device_class().name == "RES" and d.parameter("W") > 0)
        name = next(iter(touched))[1]
        groups.append((InertGroup(classes, name, squares), devices))
    return sorted(groups, key=lambda group: group[0])


def remove_inert_groups(circuit: kdb.Circuit, labelled: Callable[[kdb.Net], bool],
                        outside_name: Callable[[kdb.Net], str]) -> list[InertGroup]:
    """Removes every group of passives that carries no current, and the nets inside them;
    returns the groups, sorted."""
    found = find_inert_groups(circuit, labelled, outside_name)
    emptied: dict[str, kdb.Net] = {}  # each net inside a group once, by name
    for _, devices in found:
        for device in devices:
            for terminal in device.device_class().terminal_definitions():
                net = device.net_for_terminal(terminal.id())
                if net is not None and _inside(net, labelled):
                    emptied.setdefault(net.expanded_name(), net)
            circuit.remove_device(device)
    for net in emptied.values():
        if net.terminal_count() == 0:
            circuit.remove_net(net)
    return [group for group, _ in found]


def unpaired(layout: list[InertGroup], schematic: list[InertGroup],
             tolerance: float) -> tuple[list[InertGroup], list[InertGroup]]:
    """The groups only in the layout and only in the schematic (each schematic group pairs
    with one layout group of the same classes and outside net, squares within
    ``tolerance``)."""
    only_layout = list(layout)
    only_schematic: list[InertGroup] = []
    for group in schematic:
        twin = next((candidate for candidate in only_layout if candidate.same_as(group, tolerance)), None)
        if twin is None:
            only_schematic.append(group)
        else:
            only_layout.remove(twin)
    return only_layout, only_schematic
