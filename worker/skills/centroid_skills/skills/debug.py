"""Skills for the worker's supervision tests and overhead benchmarks."""

from __future__ import annotations

import time
from typing import Any

from centroid_skills.registry import obj, skill
from centroid_skills.session import Session


@skill("debug.noop", "Return {} at once (protocol overhead benchmark).", obj({}))
def noop(session: Session, args: dict[str, Any]) -> dict[str, Any]:
    return {}


@skill("debug.sleep", "Sleep for `seconds` (supervision/timeout tests), then return {slept_s}.",
       obj({"seconds": {"type": "number", "minimum": 0, "maximum": 3600}}, ["seconds"]))
def sleep(session: Session, args: dict[str, Any]) -> dict[str, Any]:
    started = time.perf_counter()
    time.sleep(float(args["seconds"]))
    return {"slept_s": round(time.perf_counter() - started, 6)}


class DebugFailure(RuntimeError):
    """What ``debug.fail`` raises: an unexpected exception, as a skill bug would."""


@skill("debug.fail", "Raise an unexpected exception (INTERNAL_ERROR with a traceback on stderr): "
       "for the worker's error-path tests.",
       obj({"message": {"type": "string", "maxLength": 200}}))
def fail(session: Session, args: dict[str, Any]) -> dict[str, Any]:
    raise DebugFailure(args.get("message") or "debug.fail was called")
