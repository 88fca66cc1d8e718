"""Drawing one routing call into its top cell, once planned and stacked: the rows and
rails, the stubs with their via stacks, the track vias, the tracks, the trunks, the
verticals, a block's
port pins (:mod:`.ports`) and a name label per net."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import klayout.db as kdb

from centroid_skills.routing.channel_plan import ChannelPlan, Tracks
from centroid_skills.routing.channels import Stub
from centroid_skills.routing.dims import Dims, track_reach
from centroid_skills.routing.rows import RowInfo
from centroid_skills.routing.stacking import Stack
from centroid_skills.routing.verticals import Vertical
from centroid_skills.tech import Technology

LabelShapes = dict[str, tuple[str, kdb.Box]]  # net -> (role, box in the top cell) its label sits on
PortPins = list[tuple[str, kdb.Box]]  # (net, pin box in the routed cell)


@dataclass
class Drawn:
    """What drawing one plan left besides its shapes: wire length per net (nm), the shape
    each net's label sits on (none in a block) and a block's port pins."""

    wire: dict[str, int]
    labels: LabelShapes
    ports: PortPins


def via_pad(d: Dims, low: bool) -> int:
    """Half size of the metal-2 pad of a track via (``low``: of a via 1 on a metal-1 track)."""
    return d.hp2 if low else d.hp2h


def on_low(plan: ChannelPlan, ch: int, net: str) -> bool:
    """Whether ``net``'s track in channel ``ch`` is on metal 1, the second track layer."""
    return ch < len(plan.low) and net in plan.low[ch]


class Painter:
    """The routing shapes of one call, per layer (merged when written into the top cell),
    and the wire length per net (nm along the centre lines)."""

    def __init__(self, tech: Technology, layout: kdb.Layout, d: Dims) -> None:
        self.d = d
        self.m1 = tech.role_index(layout, "metal1")
        self.m2 = tech.role_index(layout, "metal2")
        self.v1 = tech.role_index(layout, "via1")
        self.h = tech.role_index(layout, d.h_role)
        self.vh = tech.role_index(layout, d.h_via)
        self.shapes: dict[int, kdb.Region] = {
            li: kdb.Region() for li in {self.m1, self.m2, self.v1, self.h, self.vh}}
        self.wire: dict[str, int] = {}

    def put(self, li: int, box: kdb.Box) -> None:
        self.shapes[li].insert(box)

    def add_wire(self, net: str, length: int) -> None:
        self.wire[net] = self.wire.get(net, 0) + length

    def via1_cut(self, x: int, y: int) -> None:
        lo, hi = self.d.cut(x, self.d.v1)
        lo_y, hi_y = self.d.cut(y, self.d.v1)
        self.put(self.v1, kdb.Box(lo, lo_y, hi, hi_y))

    def track_cut(self, x: int, y: int) -> None:
        lo, hi = self.d.cut(x, self.d.vh)
        lo_y, hi_y = self.d.cut(y, self.d.vh)
        self.put(self.vh, kdb.Box(lo, lo_y, hi, hi_y))

    def via1_array(self, box: kdb.Box) -> int:
        """Via-1 cuts filling ``box`` (metal 1 and metal 2 both cover it), each a pad's half
        size inside it and a cut spacing apart.  Returns the number of cuts (0: no room)."""
        d = self.d
        return self._array(box, d.hstack, d.v1 + d.v1s, self.via1_cut)

    def track_via_array(self, box: kdb.Box) -> int:
        """Track-via cuts filling ``box`` (metal 2 and the track layer both cover it), as
        :meth:`via1_array`."""
        d = self.d
        return self._array(box, max(d.hp2h, d.hh), d.vh + d.vhs, self.track_cut)

    def _array(self, box: kdb.Box, margin: int, pitch: int,
               cut: Callable[[int, int], None]) -> int:
        g = self.d.g

        def centres(lo: int, hi: int) -> list[int]:
            lo = -(-(lo + margin) // g) * g
            hi = hi - margin
            return [] if hi < lo else list(range(lo, hi + 1, pitch))

        xs, ys = centres(box.left, box.right), centres(box.bottom, box.top)
        for x in xs:
            for y in ys:
                cut(x, y)
        return len(xs) * len(ys)

    def via_stack_1(self, x: int, y: int) -> None:
        """A via-1 at (x, y) with its metal-1 and metal-2 pads."""
        d = self.d
        self.put(self.m1, kdb.Box(x - d.hp1, y - d.hp1, x + d.hp1, y + d.hp1))
        self.via1_cut(x, y)
        self.put(self.m2, kdb.Box(x - d.hp2, y - d.hp2, x + d.hp2, y + d.hp2))

    def via_track(self, x: int, y: int, low: bool = False) -> None:
        """A track via at (x, y) with its metal-2 pad (the track encloses it); ``low``: on a
        metal-1 track, a via 1."""
        d = self.d
        if low:
            self.via1_cut(x, y)
        else:
            self.track_cut(x, y)
        pad = via_pad(d, low)
        self.put(self.m2, kdb.Box(x - pad, y - pad, x + pad, y + pad))

    def flush(self, top: kdb.Cell) -> None:
        """Writes the merged shapes of every layer into ``top``."""
        for li, region in self.shapes.items():
            region.merge()
            top.shapes(li).insert(region)


def draw_rows(tech: Technology, layout: kdb.Layout, top: kdb.Cell, infos: list[RowInfo]) -> None:
    """Instances of every row and rail cell at their stacked positions, and the nwell
    boxes of the pmos rows."""
    for info in infos:
        top.insert(kdb.CellInstArray(info.cell.cell_index(), kdb.Trans(info.dx, info.dy)))
        if info.rail_cell is not None:
            top.insert(kdb.CellInstArray(info.rail_cell.cell_index(),
                                         kdb.Trans(info.dx, info.dy + info.rail_dy)))
        for box in info.nwell_boxes:
            top.shapes(tech.role_index(layout, "nwell")).insert(box.moved(info.offset))


def stub_sides(d: Dims, net: str, role: str, x: int, pin: kdb.Box,
               others: Sequence[int] = ()) -> tuple[int, int]:
    """The left and right edge of a stub of ``net`` on ``role`` at ``x`` from ``pin``: the rule
    width, or for a net given a current as wide as it needs within the pin's own width (the
    pin keeps its neighbours' spacing; :mod:`.net_currents`) and clear of the other nets'
    stubs (``others``: their x; on metal 2 those of the channel, where a stub of the other
    side may stand a pitch away; on metal 1 those of the row) by their via pads and the
    spacing next to a wire that wide."""
    half = d.hs1 if role == "metal1" else d.hs2
    need = d.half_for(net, role)
    if need <= half:
        return x - half, x + half
    left, right = max(pin.left, x - need), min(pin.right, x + need)
    if role == "metal1":
        clear = max(d.hp1, d.hs1) + d.space_for(net, role, d.s1)
    else:
        clear = max(d.hp2, d.hp2h, d.hs2) + d.space_for(net, role, d.s2)
    for o in others:
        if o < x:
            left = max(left, o + clear)
        else:
            right = min(right, o - clear)
    return min(x - half, left), max(x + half, right)


def draw_stubs(p: Painter, infos: list[RowInfo], stubs: list[list[Stub]], stack: Stack) -> None:
    """Every stub from its pin to its track: a metal-1 pin gets a metal-1 bar to a via-1
    outside its row (the via zone below it, or the channel's via row above it, or, going up
    where the tracks are not metal 1, right under its track via), then a metal-2 bar to the
    track; a metal-2 pin a metal-2 bar; a rail stub a metal-1 bar down
    to the rail's centre line.  A net given a current has its bars as wide as it needs
    within the pin's width (:func:`stub_sides`)."""
    d = p.d
    of_row: dict[int, list[Stub]] = {}
    for lst in stubs:
        for s in lst:
            of_row.setdefault(s.row, []).append(s)
    for ch, lst in enumerate(stubs):
        for s in lst:
            if s.term.port:
                continue  # drawn by draw_ports once the rest of channel 0 is drawn
            info = infos[s.row]
            box = s.term.box.moved(info.offset)
            x = s.x
            l1, r1 = stub_sides(d, s.net, "metal1", x, box,
                                [o.x for o in of_row[s.row] if o.net != s.net])
            l2, r2 = stub_sides(d, s.net, "metal2", x, box,
                                [o.x for o in lst if o.net != s.net and o.kind != "rail"])
            if s.kind == "rail":
                rail_y = info.placed_rail_metal().center().y
                p.put(p.m1, kdb.Box(l1, rail_y, r1, box.top))
                p.add_wire(s.net, box.top - rail_y)
                continue
            ty = stack.track_y[ch].get(s.net)
            if ty is None:  # lone stub of a net with no track here (cannot happen; be safe)
                continue
            if s.kind == "down":
                vy = info.via_y + info.dy
                if s.term.tap:  # up from the track to a via-1 on the rail
                    p.via_stack_1(x, box.top)
                if s.term.role == "metal1":
                    p.put(p.m1, kdb.Box(l1, vy, r1, box.top))
                    p.via_stack_1(x, vy)
                    p.put(p.m2, kdb.Box(l2, ty, r2, vy))
                else:
                    p.put(p.m2, kdb.Box(l2, ty, r2, box.top))
                p.add_wire(s.net, box.top - ty)
            else:
                vy = stack.via_up_y[ch]
                if s.term.role == "metal1" and vy is None:
                    # no via row: a metal-1 bar up to the track, the via-1 under the track via
                    p.put(p.m1, kdb.Box(l1, box.bottom, r1, ty))
                    p.via_stack_1(x, ty)
                    # its metal-2 pad grown down the stub's column to the layer's minimum area
                    p.put(p.m2, kdb.Box(x - d.hp2, ty - d.stack_low, x + d.hp2, ty + d.hp2))
                elif s.term.role == "metal1":
                    p.put(p.m1, kdb.Box(l1, box.bottom, r1, vy))
                    p.via_stack_1(x, vy)
                    p.put(p.m2, kdb.Box(l2, vy, r2, ty))
                else:
                    p.put(p.m2, kdb.Box(l2, box.bottom, r2, ty))
                p.add_wire(s.net, ty - box.bottom)


def draw_track_vias(p: Painter, plan: ChannelPlan, stack: Stack) -> None:
    """One track via per cluster of same-net stubs closer than a pitch (stubs from below
    and above may come that close); a metal-2 bar at the track joins the cluster.  On a
    metal-1 track the via is a via 1: where a metal-1 pin comes up into the cluster with no
    via row, it sits on that pin's own via 1 (:func:`draw_stubs`), not a cut's space from
    it."""
    d = p.d
    for ch, lst in enumerate(plan.stubs):
        by_net: dict[str, list[int]] = {}
        at: dict[str, set[int]] = {}  # net -> x of its metal-1 pins' via 1 on the track
        for s in lst:
            if s.kind != "rail" and s.net in stack.track_y[ch]:
                by_net.setdefault(s.net, []).append(s.x)
                if (s.kind == "up" and s.term.role == "metal1" and stack.via_up_y[ch] is None
                        and not s.term.port):
                    at.setdefault(s.net, set()).add(s.x)
        for net, xs in by_net.items():
            xs.sort()
            y = stack.track_y[ch][net]
            clusters: list[list[int]] = []
            for x in xs:
                if clusters and x - clusters[-1][-1] < d.px:
                    clusters[-1].append(x)
                else:
                    clusters.append([x])
            low = on_low(plan, ch, net)
            pad = via_pad(d, low)
            for cl in clusters:
                p.via_track(min((x for x in cl if x in at.get(net, ())), default=cl[0])
                            if low else cl[0], y, low)
                if len(cl) > 1:
                    p.put(p.m2, kdb.Box(cl[0] - pad, y - pad, cl[-1] + pad, y + pad))


def draw_tracks(tech: Technology, p: Painter, tracks: list[Tracks], stack: Stack,
                verticals: Sequence[Vertical] = (), low: Sequence[set[str]] = ()) -> LabelShapes:
    """Every track, on its layer (the track layer, or metal 1 for the nets of ``low``, per
    channel): past its end vias by the along margin, and long enough for the minimum area of
    its layer (unless joined to a vertical).  Returns each net's first track (its label's
    place)."""
    d = p.d
    first: LabelShapes = {}
    for ch, channel_tracks in enumerate(tracks):
        joined = {v.net for v in verticals if v.ch in (ch, ch - 1)}
        for net, (_k, left, right) in channel_tracks.items():
            y = stack.track_y[ch][net]
            on_metal1 = ch < len(low) and net in low[ch]
            half = d.reach_of(on_metal1)[0]
            ext = track_reach(tech, d, left, right, net in joined, on_metal1)
            # a wide track spans its levels (:mod:`.net_currents`); a track of one level
            # needs no pitch (a stack drawn without its channels' pitches has none)
            levels = 1 if on_metal1 else d.track_levels(net)[0]
            above = (levels - 1) * stack.pitch[ch] if levels > 1 else 0
            tb = kdb.Box(left - ext, y - half, right + ext, y + above + half)
            p.put(p.m1 if on_metal1 else p.h, tb)
            p.add_wire(net, right - left)
            first.setdefault(net, ("metal1" if on_metal1 else d.h_role, tb))
    return first


def trunk_ys(infos: list[RowInfo], plan: ChannelPlan, stack: Stack, net: str) -> list[int]:
    """The y of every track and rail a net's trunk joins."""
    ys = [stack.track_y[ch][net] for ch in range(len(plan.tracks)) if net in stack.track_y[ch]]
    ys += [info.placed_rail_metal().center().y for info in infos
           if info.rail is not None and info.rail_net == net]
    return ys


def draw_trunks(p: Painter, infos: list[RowInfo], plan: ChannelPlan, stack: Stack) -> None:
    """Every trunk: a metal-2 column from its lowest to its highest track or rail, a track
    via on each of its tracks, and a metal-1 bar with a via-1 to each rail on its net."""
    d = p.d
    for net, x in plan.trunk_x.items():
        hw = plan.trunk_hw[net]
        ys = trunk_ys(infos, plan, stack, net)
        trunk = kdb.Box(x - hw, min(ys) - d.ht, x + hw, max(ys) + d.ht)
        # a net given a current: the trunk covers its rails' height and their bars its width,
        # joined by an array of via-1 cuts (not one cut for the whole current)
        wide = d.half_for(net, "metal2") > 0
        if wide:
            for info in infos:
                if info.rail is not None and info.rail_net == net:
                    rm = info.placed_rail_metal()
                    trunk = trunk + kdb.Box(x - hw, rm.bottom, x + hw, rm.top)
        for ch in range(len(plan.tracks)):
            if net in stack.track_y[ch]:
                y = stack.track_y[ch][net]
                levels = d.track_levels(net)[0]
                via1 = d.h_role == "metal1" or on_low(plan, ch, net)
                if wide and levels > 1 and not on_low(plan, ch, net):
                    # a wide track meets the wide trunk: the track layer over the trunk's
                    # width and the track's height, joined by an array of track vias
                    joint = kdb.Box(x - hw, y - d.hh, x + hw,
                                    y + (levels - 1) * stack.pitch[ch] + d.hh)
                    p.put(p.h, joint)
                    trunk = trunk + joint
                    if p.via1_array(joint) if via1 else p.track_via_array(joint):
                        continue
                if via1:
                    p.via1_cut(x, y)  # the trunk is the via's metal-2 pad
                else:
                    p.via_track(x, y)
        for info in infos:
            if info.rail is None or info.rail_net != net:
                continue
            rm = info.placed_rail_metal()
            reach = max(d.hp1, hw) if wide else d.hp1
            if x < rm.left:
                p.put(p.m1, kdb.Box(x - reach, rm.bottom, rm.left, rm.top))
            else:
                p.put(p.m1, kdb.Box(rm.right, rm.bottom, x + reach, rm.top))
            if not (wide and p.via1_array(kdb.Box(x - hw, rm.bottom, x + hw, rm.top))):
                p.via1_cut(x, rm.center().y)
        p.put(p.m2, trunk)
        p.add_wire(net, max(ys) - min(ys))


def draw_verticals(p: Painter, plan: ChannelPlan, stack: Stack) -> None:
    """Every vertical (:mod:`.verticals`): a track-layer wire, as wide as a track, from its
    net's track in the channel below the row it crosses to its track in the channel above."""
    d = p.d
    for v in plan.verticals:
        y0 = stack.track_y[v.ch][v.net]
        y1 = stack.track_y[v.ch + 1][v.net]
        p.put(p.h, kdb.Box(v.x - d.hh, y0 - d.hh, v.x + d.hh, y1 + d.hh))
        p.add_wire(v.net, y1 - y0)


def label_shapes(infos: list[RowInfo], first_tracks: LabelShapes) -> LabelShapes:
    """The shape each net's label sits on: its first track, else the rail on it, else the
    first pin of a device on it."""
    shapes = dict(first_tracks)
    for info in infos:
        if info.rail is not None and info.rail_net is not None and info.rail_net not in shapes:
            shapes[info.rail_net] = ("metal1", info.placed_rail_metal())
    for info in infos:
        for t in info.terms:
            if t.net and t.net not in shapes and t.device is not None:
                shapes[t.net] = (t.role, t.box.moved(info.offset))
    return shapes


def label_role(tech: Technology, role: str) -> str:
    """The layer role labels of conductor ``role`` go on (``<role>_label`` when there is one)."""
    return f"{role}_label" if tech.has(f"{role}_label") else role


def draw_labels(tech: Technology, layout: kdb.Layout, top: kdb.Cell, shapes: LabelShapes) -> None:
    """A text with the net's name at the centre of every net's label shape."""
    for net, (role, box) in sorted(shapes.items()):
        c = box.center()
        top.shapes(tech.role_index(layout, label_role(tech, role))).insert(
            kdb.Text(net, kdb.Trans(c.x, c.y)))


def port_bottom(p: Painter) -> int:
    """The routed cell's lowest y once everything but the ports is drawn: channel 0 is the
    bottom of the stack, so its tracks, track-via pads and trunk ends are the lowest shapes."""
    d = p.d
    lowest = -max(d.ht, d.hvt, d.hh, d.hp2h, d.hvl)
    for region in p.shapes.values():
        if not region.is_empty():
            lowest = min(lowest, region.bbox().bottom)
    return lowest


def draw_ports(tech: Technology, p: Painter, infos: list[RowInfo], plan: ChannelPlan,
               stack: Stack) -> PortPins:
    """Every port's metal-2 pin from the cell's bottom: a stub port up to its track in
    channel 0 (the track via is drawn with the channel's other track vias), a rail port
    (:func:`.ports.rail_ports`) up to a via-1 on the bottom row's rail, a column port
    (:func:`.ports.column_ports`) up to its trunk, as wide as the trunk; returns (net, pin
    box).  The bottom is low enough for the shortest pin to hold the metal-2 minimum area
    alone (a parent may leave a port unconnected)."""
    d = p.d
    area = tech.area("metal2")
    shortest = tech.snap_up(area / (2 * d.hs2))

    def below_pad(pad: int) -> int:
        """How far a pin ending in a metal-2 pad of half size ``pad`` reaches below its top
        for the pin and the pad together to hold the layer's minimum area."""
        return pad + tech.snap_up(max(0, area - 4 * pad * pad) / (2 * d.hs2))

    spans: list[tuple[str, int, int, int, int]] = []  # net, left, right, top, shortest
    for s in plan.stubs[0] if plan.stubs else []:
        if s.term.port and s.net in plan.rail_ports:
            rail_y = infos[0].placed_rail_metal().center().y
            p.via_stack_1(s.x, rail_y)
            spans.append((s.net, s.x - d.hs2, s.x + d.hs2, rail_y, below_pad(d.hp2)))
        elif s.term.port:  # up to its track via, whose metal-2 pad joins it
            spans.append((s.net, s.x - d.hs2, s.x + d.hs2, stack.track_y[0][s.net],
                          below_pad(via_pad(d, on_low(plan, 0, s.net)))))
    for net in plan.column_ports:
        x, hw = plan.trunk_x[net], plan.trunk_hw[net]
        spans.append((net, x - hw, x + hw, min(trunk_ys(infos, plan, stack, net)), shortest))
    if not spans:
        return []
    bottom = min(port_bottom(p), min(top - short for _n, _l, _r, top, short in spans))
    pins: PortPins = []
    for net, left, right, top, _short in spans:
        box = kdb.Box(left, bottom, right, top)
        p.put(p.m2, box)
        p.add_wire(net, top - bottom)
        pins.append((net, box))
    return pins


def draw_routed(tech: Technology, layout: kdb.Layout, top: kdb.Cell, d: Dims,
                infos: list[RowInfo], plan: ChannelPlan, stack: Stack, block: bool) -> Drawn:
    """Everything of one planned and stacked routing call into ``top``: rows, stubs, track
    vias, tracks, trunks, verticals, a ``block``'s port pins (else a label per net)."""
    draw_rows(tech, layout, top, infos)
    painter = Painter(tech, layout, d)
    draw_stubs(painter, infos, plan.stubs, stack)
    draw_track_vias(painter, plan, stack)
    first_tracks = draw_tracks(tech, painter, plan.tracks, stack, plan.verticals, plan.low)
    draw_trunks(painter, infos, plan, stack)
    draw_verticals(painter, plan, stack)
    port_pins = draw_ports(tech, painter, infos, plan, stack) if block else []
    painter.flush(top)
    labels = {} if block else label_shapes(infos, first_tracks)
    draw_labels(tech, layout, top, labels)
    return Drawn(painter.wire, labels, port_pins)
