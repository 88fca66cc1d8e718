"""Where the units of a matched array go: one row, or a 2-D common-centroid grid.

Slots of an ``R × C`` grid are paired by point symmetry about the grid's centre
(slot ``(r, c)`` with ``(R-1-r, C-1-c)``); a device that takes both slots of every
pair it gets has its centroid on the array's centre, exactly, whatever the pitches.
Pairs are handed out from the centre outwards (distance measured in the units'
pitches, so the physical distance) in the order of each device's ideal fractional
positions ``(k + 0.5) / pairs``, which spreads (interdigitates) the devices; an odd
unit takes the centre slot (when the grid has one) or, two by two, the pairs next
to the centre — those devices are reported as not centred. A grid with more slots
than units leaves its spare slots at the ends of the first and last rows (a pair of
point-symmetric ends), so no row has a hole.

With one row this is the classic interdigitation: 1:2:4 gives C B C A C B C.
"""

from __future__ import annotations

import math

#: a single row is kept while it is at most this many times wider than tall; a longer
#: array is folded into the squarest grid (a shape ratio, not a process dimension)
LONGEST_ROW_ASPECT = 16.0

Grid = list[list[str | None]]


def grid_shape(units: int, pitch_x: int, pitch_y: int, rows: int | None) -> tuple[int, int]:
    """(rows, columns) of an array of ``units`` units at the given pitches: ``rows`` when
    given, else one row unless that row would be longer than ``LONGEST_ROW_ASPECT``
    times its height, then the squarest grid whose spare slots fit at the row ends
    (an even number of spare slots preferred, so that no spare slot breaks the
    symmetry)."""
    if rows is not None:
        rows = max(1, min(rows, units))
        return rows, math.ceil(units / rows)
    if units * pitch_x <= LONGEST_ROW_ASPECT * pitch_y:
        return 1, units
    best: tuple[tuple[int, float, int], tuple[int, int]] | None = None
    for r in range(1, units + 1):
        c = math.ceil(units / r)
        spare = r * c - units
        if spare // 2 >= c:  # a whole row would be spare
            continue
        score = (spare % 2, abs(math.log((c * pitch_x) / (r * pitch_y))), r)
        if best is None or score < best[0]:
            best = (score, (r, c))
    assert best is not None  # one row always fits
    return best[1]


def _spare_slots(rows: int, cols: int, spare: int) -> set[int]:
    """Row-major slot indices left empty: the first ``spare // 2`` slots and their
    point-symmetric partners at the end, plus one more at the start for an odd count."""
    total = rows * cols
    empty = {s for k in range(spare // 2) for s in (k, total - 1 - k)}
    if spare % 2:
        empty.add(spare // 2)
    return empty


def arrange(counts: dict[str, int], rows: int, cols: int,
            pitch_x: int = 1, pitch_y: int = 1) -> tuple[Grid, list[str]]:
    """The devices' units on an ``rows × cols`` grid (bottom row first; ``None`` where a
    slot is spare) and the devices not exactly centred."""
    total = rows * cols
    units = sum(counts.values())
    empty = _spare_slots(rows, cols, total - units)

    def distance(slot: int) -> tuple[float, int]:
        r, c = divmod(slot, cols)
        dx = (c - (cols - 1) / 2) * pitch_x
        dy = (r - (rows - 1) / 2) * pitch_y
        return (math.hypot(dx, dy), slot)

    centre = (total - 1) // 2 if total % 2 else None
    singles_at = sorted((s for s in range(total) if s not in empty
                         and (s == centre or total - 1 - s in empty)), key=distance)
    pair_slots = sorted((s for s in range(total // 2 + total % 2) if s != centre and s not in empty
                         and total - 1 - s not in empty), key=distance)
    slots: list[str | None] = [None] * total
    singles = [d for d, c in counts.items() if c % 2]
    pairs = {d: c // 2 for d, c in counts.items() if c // 2}
    given = dict.fromkeys(pairs, 0)
    off_centre = set(singles)

    def give_pair(slot: int, partner: int) -> str:
        """The device for two slots: one unlike the neighbours drawn so far, of those
        the one furthest behind its share of the pairs handed out (then the first)."""
        near = {slots[n] for s in (slot, partner) for n in _neighbours(s, rows, cols)}
        device = min((d for d in pairs if given[d] < pairs[d]),
                     key=lambda d: (d in near, (given[d] + 0.5) / pairs[d]))
        given[device] += 1
        slots[slot] = slots[partner] = device
        return device

    spare_singles = []
    for slot in singles_at:
        if singles:
            device = singles.pop(0)
            slots[slot] = device
            if slot == centre:
                off_centre.discard(device)
        else:
            spare_singles.append(slot)
    for first, second in zip(spare_singles[::2], spare_singles[1::2], strict=True):
        off_centre.add(give_pair(first, second))  # single slots left over: one device's pair
    for slot in pair_slots:
        if len(singles) >= 2:  # odd units two by two: next to the centre, one each side
            slots[slot], slots[total - 1 - slot] = singles.pop(0), singles.pop(0)
        else:
            give_pair(slot, total - 1 - slot)
    pairs = {d: n - given[d] for d, n in pairs.items() if n > given[d]}
    if singles or pairs or None in (slots[s] for s in range(total) if s not in empty):
        raise AssertionError("the grid does not hold the units")  # grid_shape sized it
    grid = [slots[r * cols:(r + 1) * cols] for r in range(rows)]
    return grid, sorted(off_centre)


def _neighbours(slot: int, rows: int, cols: int) -> list[int]:
    r, c = divmod(slot, cols)
    return [nr * cols + nc for nr, nc in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1))
            if 0 <= nr < rows and 0 <= nc < cols]
