"""One routing channel: where each pin's stub enters it (one pitch apart, as close
to the pin as possible) and which track each net takes (left-edge packing under the
vertical constraints between stubs from below and from above)."""

from __future__ import annotations

from dataclasses import dataclass

from centroid_skills.routing.dims import Dims, track_reach
from centroid_skills.routing.terminals import Term
from centroid_skills.routing.track_packing import merged, metal1_bars, pack_tracks
from centroid_skills.tech import Technology


@dataclass
class Stub:
    net: str
    term: Term
    row: int
    kind: str  # up | down | rail
    lo: int
    hi: int
    pref: int
    x: int = 0
    through: bool = False  # fixed at ``pref``, kept a pitch from the stubs of both sides


def assign_x(stubs: list[Stub], pitch: int, tech: Technology, search: bool = False) -> bool:
    """Give every stub an x in [lo, hi], one pitch apart.  First by preference, then
    earliest-deadline-first, then (``search``, and a port fixed under its vertical among
    them) by :func:`_searched_x`.  Returns False when impossible."""
    order = sorted(stubs, key=lambda s: (s.pref, s.lo, s.hi))
    last = None
    ok = True
    for s in order:
        x = max(s.lo, min(s.pref, s.hi))
        if last is not None and x < last + pitch:
            x = tech.snap_up(last + pitch)
        if x > s.hi:
            ok = False
            break
        s.x = x
        last = x
    if ok:
        return True
    order = sorted(stubs, key=lambda s: (s.hi, s.lo))
    last = None
    for s in order:
        x = s.lo if last is None else max(s.lo, tech.snap_up(last + pitch))
        if x > s.hi:  # a port fixed under its vertical may leave room before it
            return search and any(t.through for t in stubs) and _searched_x(stubs, pitch, tech)
        s.x = x
        last = x
    return True


#: orders tried by :func:`_searched_x` before a channel's stubs count as not spaceable
SEARCH_NODES = 4000


def _searched_x(stubs: list[Stub], pitch: int, tech: Technology) -> bool:
    """Every stub an x in [lo, hi], one pitch apart, by a depth-first search over the order of
    the stubs left to right (earliest deadline first at each step, each stub at its
    preferred x, else its lowest): the deadline order alone puts a stub of a wide range
    after a fixed one (a port under its vertical) to its right even where a pitch is free
    before it.  At most :data:`SEARCH_NODES` steps; returns whether an order was found (the
    stubs' x set)."""
    nodes = 0
    placed: dict[int, int] = {}  # id(stub) -> x

    def fits(x: int, rest: list[Stub]) -> bool:
        nxt = tech.snap_up(x + pitch)
        return all(max(t.lo, nxt) <= t.hi for t in rest)

    def search(last: int | None, rest: list[Stub]) -> bool:
        nonlocal nodes
        if not rest:
            return True
        for s in sorted(rest, key=lambda s: (s.hi, s.lo)):
            low = s.lo if last is None else max(s.lo, tech.snap_up(last + pitch))
            others = [t for t in rest if t is not s]
            for x in sorted({max(low, min(s.pref, s.hi)), low}, reverse=True):
                nodes += 1
                if nodes > SEARCH_NODES:
                    return False
                if x > s.hi or not fits(x, others):
                    continue
                placed[id(s)] = x
                if search(x, others):
                    return True
        return False

    if not search(None, list(stubs)):
        return False
    for s in stubs:
        s.x = placed[id(s)]
    return True


def clear_x(x: int, others: list[int], gap: int) -> int:
    """The first x from ``x`` rightwards at least ``gap`` from every one of ``others``."""
    while True:
        near = [o for o in others if abs(x - o) < gap]
        if not near:
            return x
        x = max(near) + gap


def coming_down_x(stubs: list[Stub], d: Dims, tech: Technology) -> list[tuple[int, str]]:
    """Where the stubs coming down into a channel (and its rail stubs) will stand, as the
    channel spaces them: (x, net)."""
    coming = [s for s in stubs if s.kind != "up" and not s.through]
    spaced = assign_x(coming, d.px, tech)
    return [(s.x if spaced else s.pref, s.net) for s in coming]


Band = tuple[str, int, bool]  # a vertical in a channel: net, x, whether it leaves upward


def band_constraints(bands: list[Band], entries: list[tuple[int, int, str]], d: Dims,
                     tech: Technology) -> dict[str, set[str]]:
    """Precedence (``before[b]``: nets whose track lies below b's) from the verticals of a
    channel (:mod:`.verticals`): a vertical leaving upward needs its net's track above every
    other track whose drawn extent comes within the track spacing of its band, one arriving
    from below needs it below them."""
    before: dict[str, set[str]] = {}
    joined = {b[0] for b in bands}
    for vnet, x, up in bands:
        lo, hi = x - d.hh, x + d.hh
        for left, right, net in entries:
            if net == vnet:
                continue
            reach = track_reach(tech, d, left, right, net in joined)
            if left - reach - hi >= d.sh or lo - (right + reach) >= d.sh:
                continue
            if up:
                before.setdefault(vnet, set()).add(net)
            else:
                before.setdefault(net, set()).add(vnet)
    return before


def _stub_constraints(ups: list[Stub], downs: list[Stub], d: Dims) -> dict[str, set[str]]:
    """Precedence from stubs of both sides closer than a pitch: the one coming up from below
    ends on a track below the one coming down (their metal-2 bars would overlap)."""
    before: dict[str, set[str]] = {}
    for u in ups:
        for w in downs:
            if w.kind == "rail" or u.net == w.net or abs(u.x - w.x) >= d.px:
                continue
            before.setdefault(w.net, set()).add(u.net)
    return before


def _clear_ports(ups: list[Stub], downs: list[Stub], d: Dims, tech: Technology) -> bool:
    """Moves each free port stub (a block's port, not fixed under a vertical or a rail)
    standing within a pitch of another net's stub coming down to the nearest x of its range
    a pitch from every such stub and every other stub coming up, so it adds no precedence
    between the two sides; returns whether any moved."""
    moved = False
    for s in ups:
        if not s.term.port or s.through:
            continue
        taken = [w.x for w in downs if w.kind != "rail" and w.net != s.net]
        if all(abs(s.x - t) >= d.px for t in taken):
            continue
        taken += [u.x for u in ups if u is not s]
        options = [s.lo, s.hi] + [x for t in taken for x in (tech.snap_up(t + d.px), tech.snap_down(t - d.px))]
        fits = [x for x in options
                if s.lo <= x <= s.hi and all(abs(x - t) >= d.px for t in taken)]
        if fits:
            s.pref = min(fits, key=lambda x: (abs(x - s.x), x))
            moved = True
    return moved


def _entries(lst: list[Stub], trunk_x: dict[str, int], bands: list[Band],
             pairs: list[tuple[str, str]]) -> list[tuple[int, int, str]]:
    """The span (left, right, net) of every net needing a track in a channel: its stubs, its
    verticals and its trunk; partner ``pairs`` on the same side get the union of theirs."""
    xs_all = [s.x for s in lst]

    def same_side(a: str, b: str) -> bool:
        """Both without a trunk, or both trunks in the same column."""
        if (a in trunk_x) != (b in trunk_x):
            return False
        if a not in trunk_x:
            return True
        return (trunk_x[a] < min(xs_all)) == (trunk_x[b] < min(xs_all))

    spans: dict[str, list[int]] = {}
    for s in lst:
        if s.kind != "rail":
            spans.setdefault(s.net, []).append(s.x)
    for net, x, _up in bands:
        spans.setdefault(net, []).extend((x, x))  # a vertical alone still needs its track
    span: dict[str, tuple[int, int]] = {}
    for net, xs in spans.items():
        if len(xs) < 2 and net not in trunk_x:
            continue
        left, right = min(xs), max(xs)
        if net in trunk_x:
            left, right = min(left, trunk_x[net]), max(right, trunk_x[net])
        span[net] = (left, right)
    for a, b in pairs:
        if a in span and b in span and same_side(a, b):
            both = (min(span[a][0], span[b][0]), max(span[a][1], span[b][1]))
            span[a] = span[b] = both
    return [(lr[0], lr[1], net) for net, lr in span.items()]


def _cycle(before: dict[str, set[str]]) -> list[str]:
    """The nets of one cycle of the precedence ``before`` (empty when there is none)."""
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(n: str) -> list[str]:
        state[n] = 1
        path.append(n)
        for p in sorted(before.get(n, ())):
            if state.get(p) == 1:
                return path[path.index(p):]
            if p not in state:
                found = visit(p)
                if found:
                    return found
        state[n] = 2
        path.pop()
        return []

    for n in sorted(before):
        if n not in state:
            found = visit(n)
            if found:
                return found
    return []


def order_cycle(lst: list[Stub], trunk_x: dict[str, int], d: Dims, tech: Technology,
                bands: list[Band]) -> list[str]:
    """Why a channel has no plan: the nets of one cycle of its track-order constraints
    (stubs of both sides, verticals; partners unbalanced), or [] when none is found."""
    ups = [s for s in lst if s.kind == "up"]
    downs = [s for s in lst if s.kind != "up" or s.through]
    if not (assign_x(ups, d.px, tech) and assign_x(downs, d.px, tech)):
        return []
    entries = _entries(lst, trunk_x, bands, [])
    return _cycle(merged(_stub_constraints(ups, downs, d), band_constraints(bands, entries, d, tech)))


def plan_channel(lst: list[Stub], trunk_x: dict[str, int], d: Dims, tech: Technology,
                 partners: list[tuple[str, str]] | None = None, bands: list[Band] | None = None,
                 search: bool = False, low: set[str] | None = None
                 ) -> dict[str, tuple[int, int, int]] | None:
    """x of every stub and the track of every net in one channel (:func:`_planned`); where
    no plan is found and ``search`` is on, once more with the stubs' order searched
    (:func:`_searched_x`).  ``low`` (where the rule set has a second track layer,
    ``d.low_role``): filled with the nets whose track is on metal 1."""
    low = low if d.low_role is not None else None
    found = _planned(lst, trunk_x, d, tech, partners, bands, False, low)
    if found is None and search:
        return _planned(lst, trunk_x, d, tech, partners, bands, True, low)
    return found


def _planned(lst: list[Stub], trunk_x: dict[str, int], d: Dims, tech: Technology,
             partners: list[tuple[str, str]] | None, bands: list[Band] | None, search: bool,
             low: set[str] | None = None) -> dict[str, tuple[int, int, int]] | None:
    """x of every stub and the track of every net in one channel.

    Stubs coming from below (up) and from above (down, rail) are spaced among
    themselves; an up-stub of net A closer than one pitch to a down-stub of net B then
    needs A's track below B's (vertical constraint).  A ``through`` stub (a port standing
    under its vertical, :func:`.verticals.pin_ports`) is spaced against both sides.  When the constraints form a cycle
    (or a side cannot be spaced), every stub of the channel gets its own pitch.
    ``partners``: net pairs of matched devices (same terminal of the two devices of a
    pair); both tracks get the union of their spans, so partner nets carry the same
    track length (not two partners with verticals here whose balanced spans would leave
    the tracks no order: they keep their own spans).  ``bands``: the verticals in the channel; a net's span reaches each of its
    verticals, whose bands no other track of the track layer may cross
    (:func:`band_constraints`).  ``low``: filled with the nets whose track is on metal 1
    (:func:`.track_packing.pack_tracks`; not a partner net: both sides of a matched pair
    keep the track layer, as on one layer)."""
    bands = bands or []
    joined = {b[0] for b in bands}
    if not lst and not bands:
        return {}
    ups = [s for s in lst if s.kind == "up"]
    downs = [s for s in lst if s.kind != "up" or s.through]

    def entries_for(pairs: list[tuple[str, str]]) -> list[tuple[int, int, str]]:
        return _entries(lst, trunk_x, bands, pairs)

    # two partners each with a vertical here: their balanced spans may each cross the
    # other's vertical (no order of their tracks); then those two keep their own spans
    loose = [p for p in partners or () if not set(p) & joined]
    matched = frozenset(n for p in partners or () for n in p)  # both sides on one layer
    choices = [list(partners or ())] + ([loose] if len(loose) < len(partners or ()) else [])
    if assign_x(ups, d.px, tech, search) and assign_x(downs, d.px, tech, search):
        for _attempt in range(2):  # then with the ports moved clear of the stubs above
            before = _stub_constraints(ups, downs, d)
            for pairs in choices:
                entries = entries_for(pairs)
                res = pack_tracks(entries, before, band_constraints(bands, entries, d, tech),
                                  d, tech, joined, low, metal1_bars(lst), matched)
                if res is not None:
                    return res
            if not _clear_ports(ups, downs, d, tech) or not assign_x(ups, d.px, tech, search):
                break
    if not assign_x(lst, d.px, tech, search):
        return None
    for pairs in choices:
        entries = entries_for(pairs)
        res = pack_tracks(entries, {}, band_constraints(bands, entries, d, tech), d, tech,
                          joined, low, metal1_bars(lst), matched)
        if res is not None:
            return res
    return None
