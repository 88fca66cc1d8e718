"""What the last ``route.nets`` saw, for the bench scripts that explain a routed cell
(``block_breakdown.py``, ``replay_plan.py``): importing this module wraps the router's
``plan_channels`` and ``stack_rows`` so that ``SEEN`` holds the last call's dims (``d``),
rows (``infos``), tracks, channel plan (``plan``) and stack (``stack``)."""

from __future__ import annotations

from typing import Any

import centroid_skills.routing.router as router

SEEN: dict[str, Any] = {}
_plan_channels = router.plan_channels
_stack_rows = router.stack_rows


def _seen_plan(*args: Any, **kwargs: Any) -> Any:
    SEEN["plan"] = _plan_channels(*args, **kwargs)
    return SEEN["plan"]


def _seen_stack(*args: Any) -> Any:
    stack = _stack_rows(*args)
    SEEN.update(d=args[1], infos=args[2], tracks=args[3], stack=stack)
    return stack


router.plan_channels = _seen_plan
router.stack_rows = _seen_stack


def um(nm: int) -> float:
    return nm / 1000
