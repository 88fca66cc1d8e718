"""Test helpers: rule sets (fixture + examples/pdk/*.json), an in-process client."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from centroid_skills.server import Server

SKILLS_DIR = Path(__file__).resolve().parents[1]
REPO_ROOT = SKILLS_DIR.parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def rule_set_paths() -> list[Path]:
    paths = sorted(FIXTURES.glob("*.json"))
    paths += sorted((REPO_ROOT / "examples" / "pdk").glob("*.json"))
    return paths


def load_rule_set(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


RULE_SET_PATHS = rule_set_paths()
RULE_SET_IDS = [p.stem for p in RULE_SET_PATHS]


class Client:
    """In-process caller of the server (same dispatch path as stdio, without the pipe)."""

    def __init__(self) -> None:
        self.server = Server()
        self._id = 0

    def call(self, name: str, **arguments: Any) -> dict[str, Any]:
        result = self.raw(name, arguments)
        assert result["ok"], f"{name} failed: {result['error']}"
        return result["data"]

    def raw(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        self._id += 1
        response = self.server.handle_message(
            {"jsonrpc": "2.0", "id": self._id, "method": "tools/call",
             "params": {"name": name, "arguments": arguments}})
        assert response is not None and "result" in response, response
        # the result must survive JSON (what the worker sees)
        return json.loads(json.dumps(response["result"], allow_nan=False))


