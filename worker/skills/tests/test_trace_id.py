"""The job's trace id reaches the skill server: ``session/reset`` takes it and every
log line the server writes until the next reset carries ``trace_id=<id>``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from helpers import SKILLS_DIR

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"


def exchange(requests: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str]:
    """Runs a real server over the requests; its responses and its stderr."""
    env = dict(os.environ, PYTHONPATH=str(SKILLS_DIR))
    lines = "".join(json.dumps(request) + "\n" for request in requests)
    done = subprocess.run([sys.executable, "-m", "centroid_skills"], input=lines.encode(),
                          capture_output=True, env=env, timeout=120, check=True)
    responses = [json.loads(line) for line in done.stdout.decode().splitlines()]
    return responses, done.stderr.decode()


def call(request_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def test_a_reset_with_a_trace_id_marks_the_servers_log_lines() -> None:
    other = "0af7651916cd43dd8448eb211c80319c"
    responses, stderr = exchange([
        call(1, "session/reset", {"trace_id": TRACE_ID}),
        call(2, "tools/call", {"name": "debug.noop", "arguments": {}}),
        call(3, "session/reset", {"trace_id": other}),
    ])
    assert responses[0]["result"] == {"ok": True}, responses[0]
    assert responses[1]["result"]["ok"] is True, responses[1]
    assert responses[2]["result"] == {"ok": True}, responses[2]
    resets = [line for line in stderr.splitlines() if "session reset" in line]
    assert len(resets) == 2, stderr
    assert f"trace_id={TRACE_ID}" in resets[0], resets
    assert f"trace_id={other}" in resets[1], resets


def test_a_malformed_trace_id_is_invalid_params_and_the_server_goes_on() -> None:
    responses, _ = exchange([
        call(1, "session/reset", {"trace_id": "not-hex"}),
        call(2, "session/reset", {"trace_id": 42}),
        call(3, "session/reset", {"trace_id": TRACE_ID}),
    ])
    for response in responses[:2]:
        assert response["error"]["code"] == -32602, response
        assert "trace_id" in response["error"]["message"], response
    assert responses[2]["result"] == {"ok": True}
