"""What the last ``route.nets`` saw, for the bench scripts that explain a routed cell
(``block_breakdown.py``, ``replay_plan.py``): importing this module wraps the router's
``planned_route`` so that ``SEEN`` holds the last call's dims (``d``), rows (``infos``),
tracks, channel plan (``plan``) and stack (``stack``), those of the plan it kept."""

from __future__ import annotations

from typing import Any

import centroid_skills.routing.router as router

SEEN: dict[str, Any] = {}
_planned_route = router.planned_route


def _seen_route(*args: Any, **kwargs: Any) -> Any:
    plan, stack, drawn = _planned_route(*args, **kwargs)
    SEEN.update(d=args[3], infos=args[4], tracks=plan.tracks, plan=plan, stack=stack)
    return plan, stack, drawn


router.planned_route = _seen_route


def um(nm: int) -> float:
    return nm / 1000
