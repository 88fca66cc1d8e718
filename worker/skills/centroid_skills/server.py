"""JSON-RPC 2.0 over stdio, newline-delimited (docs/contracts.md §2).

stdout carries only responses; everything else (logs, KLayout chatter, prints
from skills) goes to stderr.  Bad input never ends the process; end of stdin
ends it with status 0.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import sys
import time
import traceback
from typing import IO, Any

import klayout.db as kdb

from centroid_skills import __version__, registry
from centroid_skills.errors import INTERNAL_ERROR, NOT_FOUND, SkillError
from centroid_skills.session import Session

PROTOCOL_VERSION = "2024-11-05"
SERVER_NAME = "centroid-skills"

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602

log = logging.getLogger("centroid_skills")


def klayout_version() -> str:
    try:
        return str(kdb.Application.instance().version())  # type: ignore[attr-defined]
    except Exception:
        pass
    try:
        import klayout

        return str(klayout.__version__)
    except Exception:
        return "unknown"


def _json_safe(value: Any) -> Any:
    """Replace NaN/inf (not JSON) by None, recursively."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


class Server:
    """Dispatches one decoded request at a time against one :class:`Session`."""

    def __init__(self) -> None:
        self.session = Session()
        registry.load_all()

    # -- protocol level -----------------------------------------------------------------------
    def handle_line(self, line: str) -> dict[str, Any] | None:
        """Handle one input line; returns the response object or None (notification/blank)."""
        if not line.strip():
            return None
        try:
            message = json.loads(line)
        except (ValueError, RecursionError) as exc:
            # ValueError: bad JSON (JSONDecodeError), and also an integer of more than
            # 4300 digits; RecursionError: arrays or objects nested too deep.
            return _error(None, PARSE_ERROR, f"parse error: {_shortened(str(exc))}")
        return self.handle_message(message)

    def handle_message(self, message: Any) -> dict[str, Any] | None:
        if not isinstance(message, dict):
            return _error(None, INVALID_REQUEST, "invalid request: expected a JSON object")
        request_id = message.get("id")
        if request_id is not None and not _is_valid_id(request_id):
            return _error(None, INVALID_REQUEST, "invalid request: id must be a string, a finite number or null")
        method = message.get("method")
        if message.get("jsonrpc") != "2.0" or not isinstance(method, str):
            return _error(request_id, INVALID_REQUEST, "invalid request: need jsonrpc '2.0' and a method")
        params = message.get("params", {})
        if params is None:
            params = {}
        is_notification = "id" not in message
        if not isinstance(params, (dict, list)):
            return None if is_notification else _error(request_id, INVALID_PARAMS, "params must be an object")
        try:
            result = self.dispatch(method, params)
        except _RpcError as exc:
            return None if is_notification else _error(request_id, exc.code, exc.message, exc.data)
        except Exception as exc:  # a bug in the server itself: report, keep running
            log.exception("internal error in %s", method)
            return None if is_notification else _error(
                request_id, -32603, f"internal error: {exc}", {"traceback": traceback.format_exc()})
        if is_notification:
            return None
        return {"jsonrpc": "2.0", "id": request_id, "result": _json_safe(result)}

    def dispatch(self, method: str, params: dict[str, Any] | list[Any]) -> dict[str, Any]:
        if method == "initialize":
            return {
                "protocolVersion": PROTOCOL_VERSION,
                "serverInfo": {"name": SERVER_NAME, "version": __version__},
                "klayoutVersion": klayout_version(),
                "capabilities": {"tools": {}},
            }
        if method in ("notifications/initialized", "initialized"):
            return {}
        if method == "ping":
            return {}
        if method == "tools/list":
            return {"tools": registry.tools_list()}
        if method == "tools/call":
            if not isinstance(params, dict):
                raise _RpcError(INVALID_PARAMS, "tools/call params must be an object")
            name = params.get("name")
            if not isinstance(name, str) or not name:
                raise _RpcError(INVALID_PARAMS, "tools/call needs a string 'name'")
            arguments = params.get("arguments", {})
            if arguments is None:
                arguments = {}
            if not isinstance(arguments, dict):
                raise _RpcError(INVALID_PARAMS, "tools/call 'arguments' must be an object")
            return self.call_tool(name, arguments)
        if method == "session/reset":
            scratch_dir = params.get("scratch_dir") if isinstance(params, dict) else None
            if scratch_dir is not None and (not isinstance(scratch_dir, str) or not os.path.isabs(scratch_dir)):
                raise _RpcError(INVALID_PARAMS, "session/reset 'scratch_dir' must be an absolute path")
            trace_id = params.get("trace_id") if isinstance(params, dict) else None
            if trace_id is not None and (not isinstance(trace_id, str)
                                         or not _TRACE_ID.fullmatch(trace_id)):
                raise _RpcError(INVALID_PARAMS, "session/reset 'trace_id' must be 32 lowercase hex digits")
            self.session.reset(scratch_dir or None)
            _TRACE.trace_id = trace_id or "-"
            if trace_id:
                log.info("session reset")
            return {"ok": True}
        raise _RpcError(METHOD_NOT_FOUND, f"method not found: {method}")

    # -- skill level --------------------------------------------------------------------------
    def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        started = time.perf_counter()
        try:
            skill = registry.get(name)
            if skill is None:
                raise SkillError(NOT_FOUND, f"unknown skill: {name}", {"skill": name})
            skill.validate(arguments)
            if self.session.scratch_dir is not None:
                skill.confine(arguments, self.session.scratch_dir)
            data = skill.handler(self.session, arguments)
            outcome: dict[str, Any] = {"ok": True, "error": None, "data": data if data is not None else {}}
        except SkillError as exc:
            outcome = {"ok": False, "error": exc.to_dict(), "data": None}
        except Exception as exc:
            log.exception("skill %s failed", name)
            outcome = {
                "ok": False,
                "error": {
                    "code": INTERNAL_ERROR,
                    "message": f"{type(exc).__name__}: {exc}",
                    "details": {"traceback": traceback.format_exc(), "skill": name},
                },
                "data": None,
            }
        outcome["duration_ms"] = int(round((time.perf_counter() - started) * 1000))
        return outcome


def _is_valid_id(request_id: Any) -> bool:
    """A JSON-RPC id: a string or a number (not a boolean, not NaN or infinite, which
    JSON cannot carry back)."""
    if isinstance(request_id, bool):
        return False
    if isinstance(request_id, float):
        return math.isfinite(request_id)
    return isinstance(request_id, (str, int))


def _shortened(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"


class _RpcError(Exception):
    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


def _error(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    err: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": err}


def serve(stdin: IO[bytes], stdout: IO[bytes]) -> int:
    server = Server()
    for raw in stdin:
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            response: dict[str, Any] | None = _error(None, PARSE_ERROR, f"parse error: {exc}")
        else:
            try:
                response = server.handle_line(line)
            except Exception as exc:  # a bug in the protocol layer: report, keep serving
                log.exception("internal error handling a request line")
                response = _error(None, -32603, f"internal error: {_shortened(str(exc))}")
        if response is None:
            continue
        try:
            payload = json.dumps(response, allow_nan=False, separators=(",", ":"))
        except (TypeError, ValueError, RecursionError) as exc:
            # The id is valid JSON (checked on the way in); only the result can fail here.
            payload = json.dumps(_error(response.get("id"), -32603, f"unserialisable result: {exc}"),
                                 allow_nan=False)
        stdout.write(payload.encode("utf-8") + b"\n")
        stdout.flush()
    return 0


class _TraceFilter(logging.Filter):
    """Marks every log record with the trace id of the current candidate (set by
    ``session/reset``; ``-`` before the first), so the worker's log and ours match."""

    def __init__(self) -> None:
        super().__init__()
        self.trace_id = "-"

    def filter(self, record: logging.LogRecord) -> bool:
        record.trace_id = self.trace_id
        return True


_TRACE = _TraceFilter()
_TRACE_ID = re.compile(r"[0-9a-f]{32}")


def main() -> int:
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(_TRACE)
    handler.setFormatter(logging.Formatter(
        "%(asctime)s %(levelname)s trace_id=%(trace_id)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.INFO, handlers=[handler])
    stdin = sys.stdin.buffer
    # Anything a skill or KLayout prints (also from C++) must not corrupt the protocol
    # stream: keep a private handle on the real stdout, point fd 1 and sys.stdout at stderr.
    sys.stdout.flush()
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    with os.fdopen(protocol_fd, "wb", buffering=0) as stdout:
        return serve(stdin, stdout)
