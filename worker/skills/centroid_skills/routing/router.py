"""Row-based channel router: supply rails, pin escapes, tracks in channels, trunks.

Input: placed rows (cells made by ``layout.place``, bottom to top), the flattened
devices of the circuit (terminal -> net).  Output: one new top cell with the rows,
their supply rails and every net routed.

Structure, bottom to top, for every row ``r`` (all coordinates rule-derived):

* **channel r**: horizontal tracks (metal3 when the rule set has via2 + metal3, else
  metal1), one net per track segment (left-edge packing);
* **rail r** (MOS rows only): a tap strip with a metal-1 rail (substrate tap under
  nmos rows, well tap in an nwell drawn over the whole pmos row), on the row's bulk
  net, so every device's bulk terminal reaches its supply through the tap;
* **via zone**: between the rail and the devices, where metal-1 pins going down get
  their via-1;
* **row r** itself (devices and modules, untouched).

Pins escape straight out of their device: pins in the upper half of their device
(gate straps, dummy ties) go up into the channel above the row, the others (source
bus, drain bus, resistor and capacitor terminals) go down into the channel below.
A metal-1 pin gets a metal-1 bar to a via-1 outside the row, then a metal-2 stub to
its net's track (via2 or via1); a metal-2 pin is a metal-2 stub.  Source pins on the
row's rail net drop straight onto the rail with a metal-1 bar.  Stubs in one channel
keep one pitch apart (x chosen as close to the pin centre as possible, so a
symmetric placement gives a symmetric routing).  Nets present in several channels or
rails are joined by vertical metal-2 trunks in a column left or right of the rows
(whichever is nearer the net's pins).

Every shape outside a row keeps ``c_out`` (the largest spacing any routing layer has
to any layer) from the row's bbox; the bars inside a row stay within their pin's
extent, so they keep the device's own spacing.  Channel heights are the larger of
the routing need and the rule-derived gap between the neighbouring rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import klayout.db as kdb

from centroid_skills import abut
from centroid_skills.errors import conflict, invalid
from centroid_skills.routing.channels import Stub, plan_channel
from centroid_skills.routing.dims import Dims, routing_dims, wide_clearance
from centroid_skills.routing.rails import Rail, draw_rail, rail_half_height
from centroid_skills.routing.terminals import Term, collect_terms
from centroid_skills.session import CellRecord, Session, box_um, um
from centroid_skills.tech import Technology

PIN_TERMINAL = {"S": "s", "D": "d", "G": "g", "PLUS": "p", "MINUS": "n", "TOP": "p", "BOT": "n"}
SUPPLY_TYPES = ("power", "ground")


@dataclass
class RowInfo:
    name: str
    cell: kdb.Cell
    terms: list[Term]
    kind: str  # nmos | pmos | passive
    rail_net: str | None
    ext: abut.Extents | None = None  # assembly extents, row coordinates
    rail_cell: kdb.Cell | None = None
    rail: Rail | None = None
    rail_dy: int = 0  # rail cell offset in row coordinates
    nwell_box: kdb.Box | None = None
    via_y: int = 0  # via-zone centre (row coordinates)
    bottom: int = 0  # lowest point of the assembly incl. via zone (row coordinates)
    top: int = 0
    dy: int = 0  # row offset in the top cell
    dx: int = 0  # horizontal shift of the row (to untangle a channel)


@dataclass
class Result:
    cell: kdb.Cell
    nets: dict[str, dict[str, Any]] = field(default_factory=dict)
    channels: list[dict[str, Any]] = field(default_factory=list)
    trunks: int = 0
    modules: dict[str, dict[str, Any]] = field(default_factory=dict)
    partners: list[list[str]] = field(default_factory=list)
    clearance: int = 0  # c_out used (raised by wide-metal spacing where it applies)


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------

def merge_extents(parts: list[abut.Extents]) -> abut.Extents:
    bbox = kdb.Box()
    boxes: dict[str, kdb.Box] = {}
    for p in parts:
        bbox = bbox + p.bbox
        for k, v in p.boxes.items():
            boxes[k] = boxes[k] + v if k in boxes else v
    return abut.Extents(bbox, boxes)


def label_role(tech: Technology, role: str) -> str:
    return f"{role}_label" if tech.has(f"{role}_label") else role


# --------------------------------------------------------------------------------------------
# the router
# --------------------------------------------------------------------------------------------

def route(session: Session, rows: list[str], devices: list[dict[str, Any]],
          net_types: dict[str, str], cell_name: str, balance_partners: bool = True) -> Result:
    tech = session.need_tech()
    layout = session.layout
    d = routing_dims(tech)
    by_id: dict[str, dict[str, Any]] = {}
    for dev in devices:
        by_id[dev["id"]] = dev
    cache: dict[int, abut.Extents] = {}
    infos: list[RowInfo] = []
    placed_devices: set[str] = set()
    for name in rows:
        cell = session.any_cell(name)
        terms: list[Term] = []
        collect_terms(session, cell, kdb.Trans(), terms)
        blocks = {(b.left, b.bottom, b.right, b.top): b for b in (t.block for t in terms)}.values()
        if blocks and max(b.bottom for b in blocks) >= min(b.top for b in blocks):
            raise invalid(f"{name} is not one row of cells (e.g. a multi-row placement or a "
                          "2-D module): route.nets needs one row of devices per row cell", row=name)
        mos_types = {t.mos for t in terms if t.mos}
        if len(mos_types) > 1:
            raise invalid(f"row {name} mixes nmos and pmos: give each type its own row", row=name)
        bulk_nets = set()
        for t in terms:
            if t.device is None:
                continue
            dev = by_id.get(t.device)
            if dev is None:
                raise invalid(f"device {t.device} (in row {name}) is not in the circuit",
                              device=t.device, row=name)
            placed_devices.add(t.device)
            if t.mos:
                bnet = (dev.get("terminals") or {}).get("b")
                if not bnet:
                    raise invalid(f"device {t.device} has no bulk terminal", device=t.device)
                bulk_nets.add(bnet)
        if len(bulk_nets) > 1:
            raise invalid(f"row {name} holds devices with different bulk nets {sorted(bulk_nets)}",
                          row=name)
        kind = mos_types.pop() if mos_types else "passive"
        rail_net = bulk_nets.pop() if bulk_nets else None
        if kind != "passive" and rail_net is None:
            raise invalid(f"row {name} has only dummies: no bulk net known", row=name)
        for t in terms:
            if t.role not in ("metal1", "metal2"):
                raise invalid(f"pin {t.pin} of {t.device or 'a dummy'} is on {t.role}: the router "
                              "connects metal-1 and metal-2 pins only (e.g. no MIM capacitors)",
                              device=t.device, pin=t.pin, role=t.role)
            if t.device is None:
                if rail_net is None:
                    raise invalid(f"dummy in row {name} without a rail net", row=name)
                t.net = rail_net
                continue
            terminal = PIN_TERMINAL.get(t.pin)
            if terminal is None:
                raise invalid(f"pin {t.pin} of {t.device} has no terminal", device=t.device)
            net = (by_id[t.device].get("terminals") or {}).get(terminal)
            if net is None:
                raise invalid(f"device {t.device} has no terminal {terminal}", device=t.device)
            t.net = net
        infos.append(RowInfo(name, cell, terms, kind, rail_net))
    missing = sorted(set(by_id) - placed_devices)
    if missing:
        raise invalid("devices of the circuit are not placed in any row", devices=missing[:50])

    top = session.new_cell(cell_name)
    li_m1 = tech.role_index(layout, "metal1")
    li_m2 = tech.role_index(layout, "metal2")
    li_v1 = tech.role_index(layout, "via1")
    li_h = tech.role_index(layout, d.h_role)
    li_vh = tech.role_index(layout, d.h_via)
    nwell_name = tech.roles.get("nwell")

    # ---- wide metal (rails, supply trunks, wide parts of the rows) keeps its spacing ------
    widths = {d.h_role: 2 * d.hh, "metal2": 2 * (d.ht + tech.snap_up(d.px / 2))}
    if any(info.kind in ("nmos", "pmos") for info in infos):
        widths["metal1"] = max(widths.get("metal1", 0), 2 * rail_half_height(tech, d))
    for info in infos:
        for key in abut.extents(tech, layout, info.cell, cache).boxes:
            name, sep, over = key.partition(">")
            role = tech.layers[name].role if sep and name in tech.layers else None
            if role:
                widths[role] = max(widths.get(role, 0), int(over) + 1)
    d = replace(d, c_out=wide_clearance(tech, d, widths))

    # ---- rows: rails, via zones, assembly extents (row coordinates) ---------------------
    zone = 2 * d.c_out + 2 * d.hstack
    for ri, info in enumerate(infos):
        bb = info.cell.bbox()
        row_ext = abut.extents(tech, layout, info.cell, cache)
        parts = [row_ext]
        info.via_y = bb.bottom - d.c_out - d.hstack
        info.bottom = bb.bottom - d.c_out - 2 * d.hstack
        if info.kind in ("nmos", "pmos"):
            rkind = "substrate" if info.kind == "nmos" else "well"
            rcell = session.new_cell(session.unique_name(f"{cell_name}_rail{ri}"))
            rail = draw_rail(tech, layout, rcell, rkind, bb.left, bb.right, 0, d)
            rext = abut.extents(tech, layout, rcell)
            filled = frozenset({nwell_name}) if rkind == "well" and nwell_name else frozenset()
            gap = abut.required_gap(tech, rext, row_ext, "y", zone, bridge=True, filled=filled)
            dy = bb.bottom - gap - rext.bbox.top
            info.rail_cell, info.rail, info.rail_dy = rcell, rail, dy
            moved = rext.moved(kdb.Trans(0, dy))
            parts.append(moved)
            if rkind == "well" and nwell_name:
                nbox = tech.region(layout, info.cell, nwell_name).bbox()
                band = rail.band.moved(kdb.Vector(0, dy))
                nb = band.enlarged(rail.nwell_enc, rail.nwell_enc)
                info.nwell_box = nb if nbox.empty() else nbox + nb
                parts.append(abut.Extents(info.nwell_box, {nwell_name: info.nwell_box}))
            info.bottom = min(info.bottom, moved.bbox.bottom)
        info.ext = merge_extents(parts)
        info.bottom = min(info.bottom, info.ext.bbox.bottom)
        info.top = info.ext.bbox.top

    # ---- partner nets of matched pairs (their tracks get equal spans) ------------------------
    module_devices: dict[str, list[str]] = {}
    for info in infos:
        for t in info.terms:
            if t.module is not None and t.device is not None:
                devs = module_devices.setdefault(t.module, [])
                if t.device not in devs:
                    devs.append(t.device)
    partners: list[tuple[str, str]] = []
    for devs in module_devices.values():
        if len(devs) != 2 or not balance_partners:
            continue
        ta = by_id[devs[0]].get("terminals") or {}
        tb = by_id[devs[1]].get("terminals") or {}
        for term in ("d", "g", "s"):
            if ta.get(term) and tb.get(term) and ta[term] != tb[term]:
                partners.append((ta[term], tb[term]))

    # ---- stubs -----------------------------------------------------------------------------
    n_channels = len(infos) + 1
    term_count: dict[str, int] = {}
    for info in infos:
        for t in info.terms:
            if t.device is not None:
                term_count[t.net] = term_count.get(t.net, 0) + 1
    single_pin: dict[str, Term] = {}

    def make_stubs() -> list[list[Stub]]:
        out: list[list[Stub]] = [[] for _ in range(n_channels)]
        for ri, info in enumerate(infos):
            for t in info.terms:
                rail_ok = (info.rail is not None and t.net == info.rail_net and t.role == "metal1"
                           and not t.up)
                if t.device is not None and term_count.get(t.net, 0) == 1 and not rail_ok and not any(
                        i.rail_net == t.net for i in infos):
                    single_pin[t.net] = t
                    continue
                if t.pin == "TIE" and any(x.pin == "TIE_S" and x.block == t.block for x in info.terms):
                    continue  # the dummy drops onto the rail through its source bus
                half = d.hs1 if t.role == "metal1" else d.hs2
                box = t.box.moved(kdb.Vector(info.dx, 0))
                lo = tech.snap_up(box.left + half)
                hi = tech.snap_down(box.right - half)
                cx = tech.snap(box.center().x)
                if lo > hi:
                    lo = hi = cx
                kind = "rail" if rail_ok else ("up" if t.up else "down")
                ch = ri + 1 if kind == "up" else ri
                out[ch].append(Stub(t.net, t, ri, kind, lo, hi, min(max(cx, lo), hi)))
        return out

    # ---- which nets need tracks and trunks -------------------------------------------------
    places: dict[str, set[tuple[str, int]]] = {}
    for ch, lst in enumerate(make_stubs()):
        for s in lst:
            if s.kind != "rail":
                places.setdefault(s.net, set()).add(("ch", ch))
    for ri, info in enumerate(infos):
        if info.rail is not None and info.rail_net is not None:
            places.setdefault(info.rail_net, set()).add(("rail", ri))
    trunk_nets = sorted((n for n, p in places.items() if len(p) >= 2),
                        key=lambda n: (net_types.get(n) not in SUPPLY_TYPES, n))
    half_pitch = tech.snap_up(d.px / 2)
    tries = [0] * len(infos)
    while True:
        stubs = make_stubs()
        x_left = min(i.ext.bbox.left + i.dx for i in infos if i.ext is not None)
        # a stub lies inside its pin (so inside its row), but its via pads may stick out
        x_left -= max(d.hp1, d.hp2, d.hp2h)
        # supply trunks are twice as wide (two pitches); trunks keep one pitch minus a width apart
        # each trunk goes to the column (left or right of the rows) nearer its pins
        x_right = max(i.ext.bbox.right + i.dx for i in infos if i.ext is not None)
        x_right += max(d.hp1, d.hp2, d.hp2h)
        pins_x: dict[str, list[int]] = {}
        for lst in stubs:
            for st in lst:
                if st.kind != "rail":
                    pins_x.setdefault(st.net, []).append(st.pref)
        trunk_x: dict[str, int] = {}
        trunk_hw: dict[str, int] = {}
        cursor_l = x_left - d.c_out
        cursor_r = x_right + d.c_out
        prev_l = prev_r = 0  # half width of the last trunk placed on each side
        for n in trunk_nets:
            hw = d.ht if net_types.get(n) not in SUPPLY_TYPES else d.ht + half_pitch
            trunk_hw[n] = hw
            xs = pins_x.get(n)
            mean = sum(xs) / len(xs) if xs else x_left
            left = mean - x_left <= x_right - mean
            prev = prev_l if left else prev_r
            # trunks keep one pitch minus a width apart, more next to a wide trunk
            gap = 0 if prev == 0 else tech.snap_up(max(
                d.px - 2 * d.ht, tech.space_for_width("metal2", 2 * max(hw, prev))))
            if left:
                trunk_x[n] = cursor_l - gap - hw
                cursor_l, prev_l = trunk_x[n] - hw, hw
            else:
                trunk_x[n] = cursor_r + gap + hw
                cursor_r, prev_r = trunk_x[n] + hw, hw
        tracks: list[dict[str, tuple[int, int, int]]] = []  # per channel: net -> (track, l, r)
        failed = None
        for ch, lst in enumerate(stubs):
            assigned = plan_channel(lst, trunk_x, d, tech, partners)
            if assigned is None:
                failed = ch
                break
            tracks.append(assigned)
        if failed is None:
            break
        # pins from the rows below and above compete for the same x: shift the upper row
        # by half pitches (+1, -1, +2, -2, ...) and try again
        if failed == 0 or failed >= len(infos) or tries[failed] >= 8:
            raise conflict(f"channel {failed}: pins too close together for one routing pitch "
                           f"({um(d.px)} µm); place the cells further apart",
                           channel=failed, pitch_um=um(d.px))
        tries[failed] += 1
        k = tries[failed]
        infos[failed].dx = ((k + 1) // 2) * half_pitch * (1 if k % 2 else -1)

    # ---- vertical positions ---------------------------------------------------------------
    track_y: list[dict[str, int]] = []
    prev_top: int | None = None
    prev_ext: abut.Extents | None = None
    channel_info = []
    via_up_y: list[int | None] = []
    for ch in range(n_channels):
        n_tracks = 1 + max((k for k, _l, _r in tracks[ch].values()), default=-1)
        if prev_top is None:
            y_g = None
            y0 = 0
            content_top = y0 + (n_tracks - 1) * d.py + d.hvt if n_tracks else 0
        else:
            y_g = prev_top + d.c_out + d.hstack
            y0 = y_g + d.hstack + d.c_out + d.hvt
            content_top = y0 + (n_tracks - 1) * d.py + d.hvt if n_tracks else y_g + d.hstack
        via_up_y.append(y_g)
        track_y.append({net: y0 + k * d.py for net, (k, _l, _r) in tracks[ch].items()})
        channel_info.append({"channel": ch, "tracks": n_tracks,
                             "nets": sorted(tracks[ch]), "stubs": len(stubs[ch]),
                             "track_of": {net: k for net, (k, _l, _r) in tracks[ch].items()},
                             "_spans": {net: (left, right) for net, (_k, left, right) in tracks[ch].items()}})
        if ch < len(infos):
            info = infos[ch]
            want_bottom = content_top + d.c_out
            if prev_top is not None and prev_ext is not None and info.ext is not None:
                cur = info.ext
                # the gap the rules need between the two assemblies (placed at dy = 0)
                gap = abut.required_gap(tech, prev_ext, cur.moved(kdb.Trans(0, 0)), "y", 0,
                                        bridge=False)
                want_bottom = max(want_bottom, prev_top + gap - (info.ext.bbox.bottom - info.bottom))
            info.dy = tech.snap_up(want_bottom - info.bottom)
            prev_top = info.top + info.dy
            prev_ext = info.ext.moved(kdb.Trans(0, info.dy)) if info.ext is not None else None

    # ---- draw rows and rails -------------------------------------------------------------
    for info in infos:
        top.insert(kdb.CellInstArray(info.cell.cell_index(), kdb.Trans(info.dx, info.dy)))
        if info.rail_cell is not None:
            top.insert(kdb.CellInstArray(info.rail_cell.cell_index(),
                                         kdb.Trans(info.dx, info.dy + info.rail_dy)))
        if info.nwell_box is not None:
            top.shapes(tech.role_index(layout, "nwell")).insert(info.nwell_box.moved(kdb.Vector(info.dx, info.dy)))

    shapes: dict[int, kdb.Region] = {li: kdb.Region() for li in {li_m1, li_m2, li_v1, li_h, li_vh}}

    def put(li: int, box: kdb.Box) -> None:
        shapes[li].insert(box)

    def via_stack_1(x: int, y: int) -> None:
        put(li_m1, kdb.Box(x - d.hp1, y - d.hp1, x + d.hp1, y + d.hp1))
        lo, hi = d.cut(x, d.v1)
        lo_y, hi_y = d.cut(y, d.v1)
        put(li_v1, kdb.Box(lo, lo_y, hi, hi_y))
        put(li_m2, kdb.Box(x - d.hp2, y - d.hp2, x + d.hp2, y + d.hp2))

    def via_track(x: int, y: int) -> None:
        lo, hi = d.cut(x, d.vh)
        lo_y, hi_y = d.cut(y, d.vh)
        put(li_vh, kdb.Box(lo, lo_y, hi, hi_y))
        put(li_m2, kdb.Box(x - d.hp2h, y - d.hp2h, x + d.hp2h, y + d.hp2h))

    wire: dict[str, int] = {}
    net_shapes: dict[str, tuple[str, kdb.Box]] = {}
    for ch, lst in enumerate(stubs):
        for s in lst:
            info = infos[s.row]
            box = s.term.box.moved(kdb.Vector(info.dx, info.dy))
            x = s.x
            if s.kind == "rail":
                assert info.rail is not None
                rail_metal = info.rail.metal.moved(kdb.Vector(info.dx, info.dy + info.rail_dy))
                put(li_m1, kdb.Box(x - d.hs1, rail_metal.center().y, x + d.hs1, box.top))
                wire[s.net] = wire.get(s.net, 0) + box.top - rail_metal.center().y
                continue
            ty = track_y[ch].get(s.net)
            if ty is None:  # lone stub of a net with no track here (cannot happen; be safe)
                continue
            if s.kind == "down":
                vy = info.via_y + info.dy
                if s.term.role == "metal1":
                    put(li_m1, kdb.Box(x - d.hs1, vy, x + d.hs1, box.top))
                    via_stack_1(x, vy)
                    put(li_m2, kdb.Box(x - d.hs2, ty, x + d.hs2, vy))
                else:
                    put(li_m2, kdb.Box(x - d.hs2, ty, x + d.hs2, box.top))
                wire[s.net] = wire.get(s.net, 0) + box.top - ty
            else:
                vy = via_up_y[ch]
                assert vy is not None
                if s.term.role == "metal1":
                    put(li_m1, kdb.Box(x - d.hs1, box.bottom, x + d.hs1, vy))
                    via_stack_1(x, vy)
                    put(li_m2, kdb.Box(x - d.hs2, vy, x + d.hs2, ty))
                else:
                    put(li_m2, kdb.Box(x - d.hs2, box.bottom, x + d.hs2, ty))
                wire[s.net] = wire.get(s.net, 0) + ty - box.bottom
    for ch, lst in enumerate(stubs):
        by_net: dict[str, list[int]] = {}
        for s in lst:
            if s.kind != "rail" and s.net in track_y[ch]:
                by_net.setdefault(s.net, []).append(s.x)
        # one track via per cluster of same-net stubs closer than a pitch (stubs from below
        # and above may come that close); a metal-2 bar at the track joins the cluster
        for net, xs in by_net.items():
            xs.sort()
            y = track_y[ch][net]
            clusters: list[list[int]] = []
            for x in xs:
                if clusters and x - clusters[-1][-1] < d.px:
                    clusters[-1].append(x)
                else:
                    clusters.append([x])
            for cl in clusters:
                via_track(cl[0], y)
                if len(cl) > 1:
                    put(li_m2, kdb.Box(cl[0] - d.hp2h, y - d.hp2h, cl[-1] + d.hp2h, y + d.hp2h))
    for ch in range(n_channels):
        for net, (_k, left, right) in tracks[ch].items():
            y = track_y[ch][net]
            # past its end vias by the along margin, and long enough for the minimum area
            ext = max(d.he, tech.snap_up((d.track_area / (2 * d.hh) - (right - left)) / 2))
            tb = kdb.Box(left - ext, y - d.hh, right + ext, y + d.hh)
            put(li_h, tb)
            wire[net] = wire.get(net, 0) + right - left
            net_shapes.setdefault(net, (d.h_role, tb))
    for net, x in trunk_x.items():
        ys = []
        for ch in range(n_channels):
            if net in track_y[ch]:
                y = track_y[ch][net]
                ys.append(y)
                if d.h_role == "metal1":
                    lo, hi = d.cut(x, d.vh)
                    lo_y, hi_y = d.cut(y, d.vh)
                    put(li_vh, kdb.Box(lo, lo_y, hi, hi_y))
                else:
                    via_track(x, y)
        for info in infos:
            if info.rail is None or info.rail_net != net:
                continue
            rm = info.rail.metal.moved(kdb.Vector(info.dx, info.dy + info.rail_dy))
            y = rm.center().y
            ys.append(y)
            if x < rm.left:
                put(li_m1, kdb.Box(x - d.hp1, rm.bottom, rm.left, rm.top))
            else:
                put(li_m1, kdb.Box(rm.right, rm.bottom, x + d.hp1, rm.top))
            lo, hi = d.cut(x, d.v1)
            lo_y, hi_y = d.cut(y, d.v1)
            put(li_v1, kdb.Box(lo, lo_y, hi, hi_y))
        hw = trunk_hw[net]
        tb = kdb.Box(x - hw, min(ys) - d.ht, x + hw, max(ys) + d.ht)
        put(li_m2, tb)
        wire[net] = wire.get(net, 0) + max(ys) - min(ys)
    for li, region in shapes.items():
        region.merge()
        top.shapes(li).insert(region)

    # ---- labels ---------------------------------------------------------------------------
    for info in infos:
        if info.rail is not None and info.rail_net is not None and info.rail_net not in net_shapes:
            net_shapes[info.rail_net] = ("metal1", info.rail.metal.moved(
                kdb.Vector(info.dx, info.dy + info.rail_dy)))
    for info in infos:
        for t in info.terms:
            if t.net and t.net not in net_shapes and t.device is not None:
                net_shapes[t.net] = (t.role, t.box.moved(kdb.Vector(info.dx, info.dy)))
    for net, (role, box) in sorted(net_shapes.items()):
        lrole = label_role(tech, role)
        c = box.center()
        top.shapes(tech.role_index(layout, lrole)).insert(kdb.Text(net, kdb.Trans(c.x, c.y)))

    res = Result(top, clearance=d.c_out)
    stub_xs: dict[str, list[tuple[int, int, int]]] = {}  # net -> (channel, x, row axis)
    for ch, lst in enumerate(stubs):
        for s in lst:
            axis = infos[s.row].cell.bbox().center().x
            stub_xs.setdefault(s.net, []).append((ch, s.x, axis))
    for net in sorted(set(term_count) | set(places)):
        pts = stub_xs.get(net, [])
        res.nets[net] = {"wire_um": um(wire.get(net, 0)), "trunk": net in trunk_x,
                         "trunk_x_um": um(trunk_x[net]) if net in trunk_x else None,
                         "trunk_half_width_um": um(trunk_hw[net]) if net in trunk_x else None,
                         "stubs": len(pts),
                         "single_pin": net in single_pin,
                         "label": None if net not in net_shapes else {
                             "layer": tech.require(label_role(tech, net_shapes[net][0])).name,
                             "at_um": [um(net_shapes[net][1].center().x),
                                       um(net_shapes[net][1].center().y)]}}
    for ci in channel_info:  # absolute track geometry, known once the rows are stacked
        spans = ci.pop("_spans")
        ci["tracks_um"] = {net: {"y": um(track_y[ci["channel"]][net]), "x": [um(lr[0]), um(lr[1])],
                                 "half_width": um(d.hh)}
                           for net, lr in sorted(spans.items())}
    res.channels = channel_info
    res.trunks = len(trunk_x)
    res.partners = [list(p) for p in partners]
    # matching of the wiring: in a module every unit should escape each pin at the same
    # offset in its own frame (from the left of a plain unit, from the right of a mirrored
    # one), so every unit sees the same wires
    for lst in stubs:
        for s in lst:
            if s.term.module is None or s.term.device is None:
                continue
            entry = res.modules.setdefault(s.term.module, {"offsets": {}, "stubs": 0})
            entry["stubs"] += 1
            x = s.x - infos[s.row].dx
            offset = s.term.block.right - x if s.term.mirrored else x - s.term.block.left
            entry["offsets"].setdefault(s.term.pin, []).append(offset)
    for entry in res.modules.values():
        offs = entry.pop("offsets")
        entry["escape_offset_spread_um"] = {p: um(max(v) - min(v)) for p, v in sorted(offs.items())}
        entry["uniform_escapes"] = all(max(v) == min(v) for v in offs.values())
    return res


def record(session: Session, res: Result, rows: list[str], d: Dims) -> CellRecord:
    rec = CellRecord(name=res.cell.name, kind="placement")
    for name in rows:
        child = session.cells.get(name)
        if child is not None:
            rec.device_area_nm2 += child.device_area_nm2
    rec.params = {"routed": True, "rows": rows, "track_layer": d.h_role,
                  "pitch_um": um(d.px), "track_pitch_um": um(d.py)}
    session.cells[res.cell.name] = rec
    return rec


def result_dict(session: Session, res: Result, d: Dims) -> dict[str, Any]:
    bbox = res.cell.bbox()
    return {
        "cell_name": res.cell.name,
        "bbox_um": box_um(bbox),
        "width_um": um(bbox.width()),
        "height_um": um(bbox.height()),
        "track_layer": d.h_role,
        "pitch_um": um(d.px),
        "track_pitch_um": um(d.py),
        "clearance_um": um(res.clearance or d.c_out),
        "channels": res.channels,
        "trunks": res.trunks,
        "modules": res.modules,
        "partner_nets": res.partners,
        "nets": res.nets,
        "wire_um": round(sum(n["wire_um"] for n in res.nets.values()), 3),
    }
