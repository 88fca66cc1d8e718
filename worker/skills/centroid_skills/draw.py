"""Small drawing helpers shared by the generators (devices, rings, rails): a painter that
draws by layer role, boxes grown to a width or an area, rows of cuts."""

from __future__ import annotations

import klayout.db as kdb

from centroid_skills.rules import DrawRules
from centroid_skills.session import Pin, Session
from centroid_skills.tech import Technology


class Painter:
    """Draws boxes on layers by role into one cell."""

    def __init__(self, session: Session, cell: kdb.Cell) -> None:
        self.session = session
        self.tech = session.need_tech()
        self.cell = cell

    def box(self, role: str, box: kdb.Box) -> kdb.Box:
        li = self.tech.role_index(self.session.layout, role)
        self.cell.shapes(li).insert(box)
        return box

    def pin(self, name: str, role: str, box: kdb.Box) -> Pin:
        return Pin(name, self.tech.require(role).name, role, box)


def implant_role(tech: Technology, mos_type: str) -> str | None:
    role = "nplus" if mos_type == "nmos" else "pplus"
    return role if tech.has(role) else None


def grow_to_width(box: kdb.Box, min_w: int, tech: Technology) -> kdb.Box:
    """Enlarge a box symmetrically (on grid) so both sides are at least min_w."""
    dx = max(0, min_w - box.width())
    dy = max(0, min_w - box.height())
    if dx == 0 and dy == 0:
        return box
    lx = tech.snap_up(dx / 2)
    ly = tech.snap_up(dy / 2)
    return kdb.Box(box.left - lx, box.bottom - ly, box.right + lx, box.top + ly)


def grow_to_area(box: kdb.Box, area: int, tech: Technology) -> kdb.Box:
    """Enlarge a box symmetrically (on grid) along its longer side until its area is at
    least ``area`` nm² (an island of a layer with a minimum-area rule)."""
    if area <= 0 or box.area() >= area or box.empty():
        return box
    if box.width() >= box.height():
        grow = tech.snap_up((area / box.height() - box.width()) / 2)
        return kdb.Box(box.left - grow, box.bottom, box.right + grow, box.top)
    grow = tech.snap_up((area / box.width() - box.height()) / 2)
    return kdb.Box(box.left, box.bottom - grow, box.right, box.top + grow)


def contact_column(tech: Technology, r: DrawRules, span: int, margin: int) -> tuple[int, int]:
    """(count, offset) of a centred row of cuts in ``span`` keeping ``margin`` to both ends."""
    pitch = r.cont + r.cs
    n = max(0, (span - 2 * margin + r.cs) // pitch)
    while n >= 1:
        length = n * r.cont + (n - 1) * r.cs
        off = tech.snap_down((span - length) / 2)
        if off >= margin and span - off - length >= margin:
            return n, off
        n -= 1
    return 0, 0
