"""The plan one routing call draws (issue 26): the channel plan with the fewest trunk
columns (:func:`.channel_plan.plan_channels`), and, for a top cell (no ports) that joins
nets by verticals, also the plan with trunks only; whichever routed cell has the smaller
bbox is kept (a tie keeps the first).  Verticals save trunk columns but stack tracks in
the channels they cross (a channel they pass through may need many more levels), so the
columns they save may cost more height than they save width.  A block (with ports) keeps
the first plan: its parent routes over it, and its verticals leave its sides free."""

from __future__ import annotations

from collections.abc import Sequence

import klayout.db as kdb

from centroid_skills.errors import SkillError
from centroid_skills.routing.channel_plan import ChannelPlan, plan_channels
from centroid_skills.routing.dims import Dims
from centroid_skills.routing.drawing import Drawn, draw_routed
from centroid_skills.routing.rows import RowInfo
from centroid_skills.routing.stacking import Stack, stack_rows
from centroid_skills.routing.verticals import Gaps
from centroid_skills.tech import Technology


def stacked(tech: Technology, d: Dims, infos: list[RowInfo], plan: ChannelPlan) -> Stack:
    """The rows and channels of ``plan`` stacked (the rows' ``dy`` set): metal-1 pins going
    up take their via-1 in a via row above their row where the tracks are metal 1
    themselves, else right under their track via (their metal-1 bar crosses the lower
    tracks)."""
    m1_up = [any(s.kind == "up" and s.term.role == "metal1" for s in lst) for lst in plan.stubs]
    via_rows = m1_up if d.h_role == "metal1" else [False] * len(m1_up)
    return stack_rows(tech, d, infos, plan.tracks, via_rows, m1_up, plan.low)


def _area(box: kdb.Box) -> int:
    return box.width() * box.height()


def trunks_only(tech: Technology, d: Dims, infos: list[RowInfo], net_types: dict[str, str],
                partners: list[tuple[str, str]], short: set[str]) -> ChannelPlan | None:
    """The plan of a top cell with no room for verticals over any row: every net in two
    places joined by a trunk column (None when no plan is found)."""
    try:
        return plan_channels(tech, d, infos, net_types, partners, (), [[] for _ in infos], short)
    except SkillError:
        return None


def planned_route(tech: Technology, layout: kdb.Layout, top: kdb.Cell, d: Dims,
                  infos: list[RowInfo], net_types: dict[str, str],
                  partners: list[tuple[str, str]], ports: Sequence[str], gaps: Sequence[Gaps],
                  short: set[str]) -> tuple[ChannelPlan, Stack, Drawn]:
    """Plans, stacks and draws one routing call into ``top``; returns the plan drawn, its
    stack and what drawing it left.  A top cell (no ``ports``) whose plan has verticals is
    also planned with no room for verticals (trunks only) and drawn into a scratch cell;
    when that cell's bbox is smaller, its shapes and instances replace ``top``'s.  The
    rows' shifts and offsets (``dx``, ``dy``) are those of the plan kept."""
    plan = plan_channels(tech, d, infos, net_types, partners, ports, gaps, short)
    stack = stacked(tech, d, infos, plan)
    drawn = draw_routed(tech, layout, top, d, infos, plan, stack, bool(ports))
    if ports or not plan.verticals:
        return plan, stack, drawn
    shifts = [info.dx for info in infos]
    trunks = trunks_only(tech, d, infos, net_types, partners, short)
    if trunks is not None:
        trunk_stack = stacked(tech, d, infos, trunks)
        scratch = layout.create_cell(f"{top.name}$TRUNKS")
        trunk_drawn = draw_routed(tech, layout, scratch, d, infos, trunks, trunk_stack, False)
        smaller = _area(scratch.bbox()) < _area(top.bbox())
        if smaller:
            top.clear()
            top.move_instances(scratch)
            top.move_shapes(scratch)
        layout.delete_cell(scratch.cell_index())
        if smaller:
            return trunks, trunk_stack, trunk_drawn
    for info, dx in zip(infos, shifts, strict=True):
        info.dx = dx
    return plan, stacked(tech, d, infos, plan), drawn
