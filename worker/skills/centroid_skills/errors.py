"""Skill errors: a failing skill returns ``{ok: false, error: {code, message, details}}``."""

from __future__ import annotations

from typing import Any

INVALID_PARAM = "INVALID_PARAM"
NOT_FOUND = "NOT_FOUND"
CONFLICT = "CONFLICT"
DRC_VIOLATION = "DRC_VIOLATION"
TIMEOUT = "TIMEOUT"
SERVICE_UNAVAILABLE = "SERVICE_UNAVAILABLE"
RESOURCE_EXHAUSTED = "RESOURCE_EXHAUSTED"
INTERNAL_ERROR = "INTERNAL_ERROR"

ERROR_CODES = (
    INVALID_PARAM,
    NOT_FOUND,
    CONFLICT,
    DRC_VIOLATION,
    TIMEOUT,
    SERVICE_UNAVAILABLE,
    RESOURCE_EXHAUSTED,
    INTERNAL_ERROR,
)


class SkillError(Exception):
    """An error a skill reports as a result (never as a JSON-RPC protocol error)."""

    def __init__(self, code: str, message: str, details: dict[str, Any] | None = None) -> None:
        if code not in ERROR_CODES:
            raise ValueError(f"unknown error code {code!r}")
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "details": self.details}


def invalid(message: str, **details: Any) -> SkillError:
    return SkillError(INVALID_PARAM, message, details or None)


def conflict(message: str, **details: Any) -> SkillError:
    return SkillError(CONFLICT, message, details or None)
