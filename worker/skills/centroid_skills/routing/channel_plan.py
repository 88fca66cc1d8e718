"""The plan of every channel, before anything is drawn: which pins escape into which
channel (stubs), which nets need a vertical trunk and where its column is, and the track
of every net in every channel, shifting rows sideways where two rows' pins compete for
the same x.  Nets without a rail cross the rows between their channels on the track layer
where the rows leave it free (:mod:`.verticals`); the others get a metal-2 trunk."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import klayout.db as kdb

from centroid_skills.errors import SkillError, conflict
from centroid_skills.routing.channels import Stub, order_cycle, plan_channel
from centroid_skills.routing.dims import Dims
from centroid_skills.routing.ports import (
    column_ports,
    place_rail_ports,
    port_stubs,
    rail_ports,
    tap_over_verticals,
    tap_ports,
    tap_stubs,
)
from centroid_skills.routing.rows import Devices, RowInfo
from centroid_skills.routing.verticals import (
    CANDIDATES,
    Gaps,
    Vertical,
    channel_bands,
    pin_ports,
    place_verticals,
    vertical_nets,
)
from centroid_skills.session import um
from centroid_skills.tech import Technology

SUPPLY_TYPES = ("power", "ground")
#: row shifts tried per channel before a channel counts as too crowded
MAX_SHIFTS = 8
#: replans one routing call may spend moving verticals; past them, a failing channel's nets
#: with verticals take trunks at once
MAX_VERTICAL_MOVES = 64

Tracks = dict[str, tuple[int, int, int]]  # net -> (track index, left x, right x)


@dataclass
class ChannelPlan:
    """Stubs, trunks and tracks of every channel (channel ``r`` lies below row ``r``)."""

    stubs: list[list[Stub]]  # per channel
    tracks: list[Tracks]  # per channel
    trunk_x: dict[str, int]  # net -> trunk centre x
    trunk_hw: dict[str, int]  # net -> trunk half width
    term_count: dict[str, int]  # net -> device pins on it
    single_pin: set[str]  # nets with one pin and no rail: nothing to route
    places: dict[str, set[tuple[str, int]]]  # net -> channels and rails it is in
    column_ports: list[str] = field(default_factory=list)  # ports drawn as their trunk's foot
    verticals: list[Vertical] = field(default_factory=list)  # track-layer wires over rows
    rail_ports: list[str] = field(default_factory=list)  # ports going straight up to rail 0
    taps: list[str] = field(default_factory=list)  # ports reaching row 1's rail by a tap
    low: list[set[str]] = field(default_factory=list)  # per channel: nets on metal-1 tracks


def partner_nets(infos: list[RowInfo], devices: Devices, balance: bool) -> list[tuple[str, str]]:
    """Net pairs of matched pairs (same terminal of the two devices of a two-device module,
    on different nets): their tracks get equal spans.  None when ``balance`` is off."""
    module_devices: dict[str, list[str]] = {}
    for info in infos:
        for t in info.terms:
            if t.module is not None and t.device is not None:
                devs = module_devices.setdefault(t.module, [])
                if t.device not in devs:
                    devs.append(t.device)
    partners: list[tuple[str, str]] = []
    for devs in module_devices.values():
        if len(devs) != 2 or not balance:
            continue
        ta = devices[devs[0]].get("terminals") or {}
        tb = devices[devs[1]].get("terminals") or {}
        for term in ("d", "g", "s"):
            if ta.get(term) and tb.get(term) and ta[term] != tb[term]:
                partners.append((ta[term], tb[term]))
    return partners


def _term_count(infos: list[RowInfo]) -> dict[str, int]:
    """Device pins per net (dummies not counted)."""
    count: dict[str, int] = {}
    for info in infos:
        for t in info.terms:
            if t.device is not None:
                count[t.net] = count.get(t.net, 0) + 1
    return count


def make_stubs(tech: Technology, d: Dims, infos: list[RowInfo], term_count: dict[str, int],
               single_pin: set[str], ports: Sequence[str] = (), port_room: int = 0
               ) -> list[list[Stub]]:
    """Every pin's stub, per channel, at the rows' current shifts: pins in the upper half of
    their device go up (into the channel above the row), the others down; a metal-1 source
    pin on the row's rail net drops onto the rail.  A net's only pin (no rail on that net)
    gets no stub and is added to ``single_pin``; a dummy's gate tie is left out where its
    source bus drops onto the rail.  Each stub may lie anywhere within its pin (less the
    stub's half width), preferably at the pin's centre.  A block's ``ports`` go up into
    channel 0 from below (:mod:`.ports`), standing up to ``port_room`` beyond the rows."""
    out: list[list[Stub]] = [[] for _ in range(len(infos) + 1)]
    for ri, info in enumerate(infos):
        for t in info.terms:
            rail_ok = (info.rail is not None and t.net == info.rail_net and t.role == "metal1"
                       and not t.up)
            if t.device is not None and term_count.get(t.net, 0) == 1 and not rail_ok and not any(
                    i.rail_net == t.net for i in infos):
                single_pin.add(t.net)
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
    out[0] += port_stubs(tech, d, infos, ports, out, port_room)
    return out


def _places(stubs: list[list[Stub]], infos: list[RowInfo]) -> dict[str, set[tuple[str, int]]]:
    """Per net, the channels its stubs enter and the rails on it."""
    places: dict[str, set[tuple[str, int]]] = {}
    for ch, lst in enumerate(stubs):
        for s in lst:
            if s.kind != "rail":
                places.setdefault(s.net, set()).add(("ch", ch))
    for ri, info in enumerate(infos):
        if info.rail is not None and info.rail_net is not None:
            places.setdefault(info.rail_net, set()).add(("rail", ri))
    return places


def _tapped(places: dict[str, set[tuple[str, int]]], taps: dict[str, int]
            ) -> dict[str, set[tuple[str, int]]]:
    """``places`` with each tapped net's rail counted as the channel under its row."""
    out = dict(places)
    for net, row in taps.items():
        out[net] = (places[net] - {("rail", row)}) | {("ch", row)}
    return out


def place_trunks(tech: Technology, d: Dims, infos: list[RowInfo], stubs: list[list[Stub]],
                 trunk_nets: list[str], net_types: dict[str, str], short: set[str] | None = None
                 ) -> tuple[dict[str, int], dict[str, int]]:
    """Centre x and half width of every trunk, in ``trunk_nets`` order: each trunk goes to
    the column left or right of the rows nearer its pins' mean x, the next one outwards;
    supply trunks are a pitch wider, a net given a current as wide as it needs
    (:mod:`.net_currents`), and trunks keep one pitch minus a width apart (more
    next to a wide trunk, a pitch more between two ``short`` nets' trunks: less coupling
    between the sensitive nets, e.g. a differential output's two sides)."""
    half_pitch = tech.snap_up(d.px / 2)
    # a stub lies inside its pin (so inside its row), but its via pads may stick out
    pad = max(d.hp1, d.hp2, d.hp2h)
    x_left = min(i.ext.bbox.left + i.dx for i in infos if i.ext is not None) - pad
    x_right = max(i.ext.bbox.right + i.dx for i in infos if i.ext is not None) + pad
    for st in stubs[0] if stubs else []:
        if st.term.port:  # a block's ports may stand beyond narrow rows
            x_left, x_right = min(x_left, st.lo - pad), max(x_right, st.hi + pad)
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
    last: dict[bool, str] = {}  # the last trunk placed on each side (True: left)
    for n in trunk_nets:
        hw = d.ht if net_types.get(n) not in SUPPLY_TYPES else d.ht + half_pitch
        hw = max(hw, d.half_for(n, "metal2"))  # as wide as its current needs
        trunk_hw[n] = hw
        xs = pins_x.get(n)
        mean = sum(xs) / len(xs) if xs else x_left
        left = mean - x_left <= x_right - mean
        prev = prev_l if left else prev_r
        gap = 0 if prev == 0 else tech.snap_up(max(
            d.px - 2 * d.ht, tech.space_for_width("metal2", 2 * max(hw, prev))))
        if short and n in short and last.get(left) in short:
            gap += d.px
        last[left] = n
        if left:
            trunk_x[n] = cursor_l - gap - hw
            cursor_l, prev_l = trunk_x[n] - hw, hw
        else:
            trunk_x[n] = cursor_r + gap + hw
            cursor_r, prev_r = trunk_x[n] + hw, hw
    return trunk_x, trunk_hw


def _vertical_to_move(stubs: list[Stub], verticals: list[Vertical], ch: int,
                      cycle: Sequence[str] = ()) -> str | None:
    """Of the nets with a vertical in channel ``ch`` (those in ``cycle``, the nets whose
    track order has no solution, when any of them has one), the one to move: a net passing
    through the channel (a vertical arriving from below and one leaving upward, at two x no
    other track may span) first, then the one whose stubs and verticals there spread widest
    (its track crosses most bands); None when no net has a vertical there."""
    xs: dict[str, list[int]] = {}
    sides: dict[str, set[int]] = {}
    for v in verticals:
        if v.ch in (ch, ch - 1):
            xs.setdefault(v.net, []).append(v.x)
            sides.setdefault(v.net, set()).add(v.ch)
    for s in stubs:
        if s.net in xs:
            xs[s.net].append(s.pref)
    if not xs:
        return None
    among = sorted(n for n in xs if n in cycle) or sorted(xs)
    return max(among, key=lambda n: (len(sides[n]) == 2, max(xs[n]) - min(xs[n])))


def plan_channels(tech: Technology, d: Dims, infos: list[RowInfo], net_types: dict[str, str],
                  partners: list[tuple[str, str]], ports: Sequence[str] = (),
                  gaps: Sequence[Gaps] = (), short: set[str] | None = None) -> ChannelPlan:
    """Stubs, trunks, verticals and tracks of every channel: with verticals where ``gaps``
    (per row, :func:`.verticals.row_gaps`) leaves room for them, and if no plan is found
    with them, as before either existed: trunks only, no port straight up to a rail (the
    rows' shifts reset).  Where a port could reach its rail through a tap
    (:func:`.ports.tap_ports`), the plan is made with and without taps and the one with
    fewer (then narrower) trunk columns kept (with taps on a tie): a tap's vertical may
    crowd out other nets' verticals.  Where every such plan has a trunk, both are made once
    more with the stubs' order searched where a channel finds no spacing
    (:func:`.channels.plan_channel`'s ``search``), and kept only with fewer trunks: the
    search finds other plans (other stubs' x) than the channel's own fallbacks, not always
    smaller ones."""
    found: list[tuple[ChannelPlan, list[int], bool]] = []  # plan, row shifts, searched
    tap_net = infos[1].rail_net if len(infos) > 1 and infos[1].rail is not None else None
    for search in (False, True):
        if search and (not found or not all(f[0].trunk_x for f in found)):
            break  # no trunk to save (or nothing planned with verticals at all)
        for taps in (True, False) if tap_net in ports else (False,):
            for info in infos:
                info.dx = 0
            try:
                plan = _plan(tech, d, infos, net_types, partners, ports, list(gaps), short,
                             taps=taps, search=search)
            except SkillError:
                continue
            found.append((plan, [info.dx for info in infos], search))
    if found:
        plan, shifts, _searched = min(found, key=lambda f: (
            len(f[0].trunk_x), f[2], sum(f[0].trunk_hw.values())))
        for info, dx in zip(infos, shifts, strict=True):
            info.dx = dx
        return plan
    for info in infos:
        info.dx = 0
    return _plan(tech, d, infos, net_types, partners, ports, [[] for _ in infos], short,
                 to_rail=False, taps=False)


def _plan(tech: Technology, d: Dims, infos: list[RowInfo], net_types: dict[str, str],
          partners: list[tuple[str, str]], ports: Sequence[str], gaps: list[Gaps],
          short: set[str] | None = None, to_rail: bool = True, taps: bool = True,
          search: bool = False) -> ChannelPlan:
    """Stubs, trunks and tracks of every channel.  Nets in two or more places (channels,
    rails) get a vertical over each row between their channels where every such row has room
    (``gaps``) and the net has no rail, else a trunk, supply nets first in their column.
    When a channel cannot be
    planned (pins of the rows below and above compete for the same x), the row above it
    is shifted by half pitches (+1, -1, +2, -2, ...) and everything planned again; the
    rows' ``dx`` keep the shifts that worked; before shifting, the verticals in the channel
    move (the widest net's first, :data:`MAX_VERTICAL_MOVES` moves in all), and a net whose
    vertical found no place takes a trunk.  Trunks of ``short`` nets come next to the
    supplies' (nearest the rows), a pitch apart.  ``ports``: the nets of a block's port pins
    (each counts as a pin of its net): a port on the bottom row's rail net and nowhere else
    goes straight up to that rail (:func:`.ports.rail_ports`); a port whose net has no stub
    in channel 0 is otherwise the foot of its net's trunk (:func:`.ports.column_ports`), the others (and those of nets joined by
    verticals) stubs into channel 0; when
    channel 0 cannot be planned with them among row 0's stubs, they may stand beside the
    rows (a pitch each on either side)."""
    term_count = _term_count(infos)
    for net in ports:
        term_count[net] = term_count.get(net, 0) + 1
    single_pin: set[str] = set()
    in_columns = column_ports(ports, make_stubs(tech, d, infos, term_count, single_pin), infos)
    places = _places(make_stubs(tech, d, infos, term_count, single_pin,
                                [p for p in ports if p not in in_columns]), infos)
    for net in in_columns:
        places.setdefault(net, set()).add(("port", 0))
    # a port on the rail of one row above row 0: verticals up to a tap on that rail
    tapped = tap_ports(ports, places, infos) if taps else {}
    # a net whose current asks for a wide track takes no vertical (a track's width)
    vnets = {n: r for n, r in vertical_nets(_tapped(places, tapped), gaps).items()
             if d.track_levels(n)[0] == 1}
    tapped = {n: r for n, r in tapped.items() if n in vnets}
    all_ports, column_nets = list(ports), list(in_columns)
    rail_nets = rail_ports(column_nets, places, infos) if to_rail else []
    trunk_nets = sorted((n for n, p in places.items()
                         if len(p) >= 2 and n not in vnets and n not in rail_nets),
                        key=lambda n: (net_types.get(n) not in SUPPLY_TYPES, n not in (short or ()), n))
    half_pitch = tech.snap_up(d.px / 2)
    tries = [0] * len(infos)
    moved: dict[tuple[str, int], int] = {}  # (net, row) -> candidate position of its vertical
    moves_left = MAX_VERTICAL_MOVES  # replans spent on moving verticals (bounds the time)
    port_room = 0
    while True:
        in_columns = [p for p in column_nets if p not in vnets and p not in rail_nets]
        ports = [p for p in all_ports if p not in in_columns]
        pinned = {p for p in column_nets if p in vnets}
        stubs = make_stubs(tech, d, infos, term_count, single_pin, ports, port_room)
        for ch, tap in tap_stubs(tech, d, infos, tapped):
            stubs[ch].append(tap)
        trunk_x, trunk_hw = place_trunks(tech, d, infos, stubs, trunk_nets, net_types, short)
        verticals, no_room = place_verticals(tech, d, infos, stubs, vnets, moved, pinned, gaps)
        pin_ports(stubs, verticals, pinned)
        tap_over_verticals(stubs, verticals)
        missed = place_rail_ports(d, tech, infos, stubs, rail_nets)
        if missed or no_room:  # no room over the rail or a row: a trunk column after all
            rail_nets = [p for p in rail_nets if p not in missed]
            for net in no_room:
                del vnets[net]
                tapped.pop(net, None)
            trunk_nets = sorted([*trunk_nets, *missed, *no_room],
                                key=lambda n: (net_types.get(n) not in SUPPLY_TYPES,
                                               n not in (short or ()), n))
            continue
        tracks: list[Tracks] = []
        low: list[set[str]] = []
        failed = None
        for ch, lst in enumerate(stubs):
            low.append(set())
            assigned = plan_channel(lst, trunk_x, d, tech, partners, channel_bands(verticals, ch),
                                    search, low[-1])
            if assigned is None:
                failed = ch
                break
            tracks.append(assigned)
        if failed is None:
            return ChannelPlan(stubs, tracks, trunk_x, trunk_hw, term_count, single_pin, places,
                               in_columns, verticals, rail_nets, sorted(tapped), low)
        bands = channel_bands(verticals, failed)
        widest = _vertical_to_move(stubs[failed], verticals, failed,
                                   order_cycle(stubs[failed], trunk_x, d, tech, bands))
        if widest is not None:  # its vertical moves on; past its last position, a trunk instead
            moves_left -= 1
            key = next((widest, v.ch) for v in verticals
                       if v.net == widest and v.ch in (failed, failed - 1))
            moved[key] = moved.get(key, 0) + 1
            if moved[key] < CANDIDATES and moves_left > 0:
                continue
            # out of positions, or of moves for the whole plan: trunks for that net, or for
            # every net with a vertical in this channel
            given_up = [widest] if moves_left > 0 else sorted(
                {v.net for v in verticals if v.ch in (failed, failed - 1)})
            for net in given_up:
                del vnets[net]
                tapped.pop(net, None)
            trunk_nets = sorted([*trunk_nets, *given_up],
                                key=lambda n: (net_types.get(n) not in SUPPLY_TYPES, n))
            continue
        if failed == 0 and rail_nets:  # then the ports straight up to the rail: trunks again
            trunk_nets = sorted([*trunk_nets, *rail_nets],
                                key=lambda n: (net_types.get(n) not in SUPPLY_TYPES, n))
            rail_nets = []
            continue
        if failed == 0 and ports and port_room == 0:
            port_room = len(ports) * d.px
            continue
        if failed == 0 or failed >= len(infos) or tries[failed] >= MAX_SHIFTS:
            raise conflict(f"channel {failed}: pins too close together for one routing pitch "
                           f"({um(d.px)} µm); place the cells further apart",
                           channel=failed, pitch_um=um(d.px))
        tries[failed] += 1
        k = tries[failed]
        infos[failed].dx = ((k + 1) // 2) * half_pitch * (1 if k % 2 else -1)
