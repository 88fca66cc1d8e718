"""Drive the real stdio server as a child process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import jsonschema
import pytest
from helpers import FIXTURES, SKILLS_DIR


class Child:
    def __init__(self) -> None:
        env = dict(os.environ, PYTHONPATH=str(SKILLS_DIR))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "centroid_skills"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        self.next_id = 0

    def send_line(self, line: str) -> dict[str, Any]:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()
        out = self.proc.stdout.readline()
        assert out, "server closed stdout"
        return json.loads(out)

    def request(self, method: str, params: Any = None) -> dict[str, Any]:
        self.next_id += 1
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            msg["params"] = params
        response = self.send_line(json.dumps(msg))
        assert response["id"] == self.next_id
        return response

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> int:
        assert self.proc.stdin
        self.proc.stdin.close()
        return self.proc.wait(timeout=20)


@pytest.fixture(scope="module")
def child():
    c = Child()
    yield c
    if c.alive():
        c.close()


def test_initialize(child: Child) -> None:
    r = child.request("initialize", {"protocolVersion": "2024-11-05", "capabilities": {}})
    res = r["result"]
    assert res["protocolVersion"] == "2024-11-05"
    assert res["serverInfo"]["name"] and res["serverInfo"]["version"]
    assert res["klayoutVersion"].startswith("0.")
    assert res["capabilities"] == {"tools": {}}
    assert child.alive()


def test_tools_list_schemas_valid(child: Child) -> None:
    tools = child.request("tools/list")["result"]["tools"]
    names = [t["name"] for t in tools]
    assert len(names) == len(set(names))
    for required in ("debug.noop", "debug.sleep", "tech.load"):
        assert required in names
    for tool in tools:
        assert tool["description"]
        jsonschema.Draft202012Validator.check_schema(tool["inputSchema"])
        assert tool["inputSchema"]["type"] == "object"


def test_call_success_and_errors_keep_process_alive(child: Child) -> None:
    r = child.request("tools/call", {"name": "debug.noop", "arguments": {}})["result"]
    assert r == {"ok": True, "error": None, "data": {}, "duration_ms": r["duration_ms"]}
    assert isinstance(r["duration_ms"], int)

    r = child.request("tools/call", {"name": "debug.sleep", "arguments": {"seconds": 0.01}})["result"]
    assert r["ok"] and r["data"]["slept_s"] >= 0.01

    rules = json.loads((FIXTURES / "toy180.json").read_text())
    r = child.request("tools/call", {"name": "tech.load", "arguments": {"rules": rules}})["result"]
    assert r["ok"], r
    assert r["data"]["roles"]["active"]["layer"] == "Activ"

    # bad params -> INVALID_PARAM result, with the JSON path
    r = child.request("tools/call", {"name": "debug.sleep", "arguments": {"seconds": "soon"}})["result"]
    assert r["ok"] is False and r["error"]["code"] == "INVALID_PARAM"
    assert r["error"]["details"]["path"] == "$.seconds"
    assert child.alive()

    # unknown method -> -32601
    r = child.request("no/such/method")
    assert r["error"]["code"] == -32601
    assert child.alive()

    # garbage line -> -32700
    r = child.send_line("this is {not json")
    assert r["error"]["code"] == -32700 and r["id"] is None
    assert child.alive()

    # tools/call without name -> -32602
    r = child.request("tools/call", {"arguments": {}})
    assert r["error"]["code"] == -32602
    assert child.alive()

    # invalid request -> -32600
    r = child.send_line(json.dumps({"id": 99, "method": 5}))
    assert r["error"]["code"] == -32600
    r = child.send_line("[1, 2]")
    assert r["error"]["code"] == -32600

    # unknown skill -> a result with NOT_FOUND
    r = child.request("tools/call", {"name": "no.such.skill", "arguments": {}})["result"]
    assert r["ok"] is False and r["error"]["code"] == "NOT_FOUND"

    # session/reset
    assert child.request("session/reset")["result"] == {"ok": True}
    r = child.request("tools/call", {"name": "debug.noop", "arguments": {}})["result"]
    assert r["ok"]
    assert child.alive()


def test_end_of_stdin_exits_zero() -> None:
    c = Child()
    assert c.request("tools/call", {"name": "debug.noop", "arguments": {}})["result"]["ok"]
    assert c.close() == 0
