"""`centroid mcp` driven by the official MCP Python SDK client (``mcp`` on PyPI).

The server is the ``target/debug/centroid`` binary of this checkout (``make test`` builds
it before pytest runs; without it these tests fail, saying how to build it).  Every test
opens one MCP session over stdio — one KLayout process, one layout session, its files in
``--workdir`` — and talks to it only through the SDK's ``ClientSession``.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client

SKILLS_DIR = Path(__file__).resolve().parents[1]
REPO_ROOT = SKILLS_DIR.parents[1]
BINARY = REPO_ROOT / "target" / "debug" / "centroid"
OTA5_RULES = REPO_ROOT / "examples" / "ota5" / "drc_rules.json"
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
#: deadline of one whole session (KLayout starts in ~1 s; a device takes well under that)
SESSION_TIMEOUT_S = 120

Body = Callable[[ClientSession], Awaitable[Any]]


def binary() -> Path:
    """The server binary; a missing one fails the test (never a skip)."""
    if not BINARY.is_file():
        pytest.fail(f"{BINARY} is missing: build it with `cargo build -p centroid-cli` "
                    "(make test-python builds it before pytest runs)", pytrace=False)
    return BINARY


def run_session(workdir: Path, body: Body) -> Any:
    """Starts `centroid mcp --workdir WORKDIR`, initializes, runs ``body`` on the session."""
    server = StdioServerParameters(
        command=str(binary()),
        args=["mcp", "--workdir", str(workdir), "--python", sys.executable,
              "--skills-dir", str(SKILLS_DIR)],
        cwd=str(workdir.parent),
    )
    log = workdir.parent / f"{workdir.name}.stderr.log"

    async def session() -> Any:
        with anyio.fail_after(SESSION_TIMEOUT_S), log.open("w") as errlog:
            async with stdio_client(server, errlog=errlog) as (read, write), \
                    ClientSession(read, write) as client:
                result = await client.initialize()
                assert result.protocol_version == "2025-06-18", result
                assert result.server_info.name == "centroid"
                assert result.capabilities.tools is not None
                return await body(client)

    try:
        return anyio.run(session)
    except BaseException:
        sys.stderr.write(f"--- centroid mcp stderr ---\n{log.read_text() if log.exists() else ''}\n")
        raise


def ota5_rules() -> dict[str, Any]:
    rules: dict[str, Any] = json.loads(OTA5_RULES.read_text())
    return rules


def text_of(result: Any) -> str:
    assert result.content and result.content[0].type == "text", result
    text: str = result.content[0].text
    return text


def test_tools_are_listed_with_valid_names_and_object_schemas(tmp_path: Path) -> None:
    async def body(client: ClientSession) -> Any:
        await client.send_ping()
        return (await client.list_tools()).tools

    tools = run_session(tmp_path / "session", body)
    names = [tool.name for tool in tools]
    assert len(names) == len(set(names)), names
    assert {"tech_load", "layout_create_device", "drc_run", "layout_export"} <= set(names)
    for tool in tools:
        assert TOOL_NAME.match(tool.name), tool.name
        assert tool.description, tool.name
        assert isinstance(tool.input_schema, dict) and tool.input_schema["type"] == "object", tool
        # the title is the skill's own name, and maps back to the tool name
        assert tool.title and tool.title.replace(".", "_") == tool.name, tool


def test_a_rule_set_then_a_device_share_one_layout_session(tmp_path: Path) -> None:
    workdir = tmp_path / "session"

    async def body(client: ClientSession) -> Any:
        loaded = await client.call_tool("tech_load", {"rules": ota5_rules()})
        assert not loaded.is_error, text_of(loaded)
        assert loaded.structured_content is not None
        assert loaded.structured_content["missing_roles"] == [], loaded.structured_content
        device = await client.call_tool(
            "layout_create_device",
            {"type": "nmos", "w": 2e-6, "l": 0.5e-6, "nf": 2, "device_id": "M1"})
        cells = await client.call_tool("layout_list_cells", {})
        exported = await client.call_tool("layout_export", {"cell": "M1", "path": "m1.gds"})
        return loaded, device, cells, exported

    loaded, device, cells, exported = run_session(workdir, body)
    assert not device.is_error, text_of(device)
    data = device.structured_content
    assert data is not None and data["cell_name"] == "M1", data
    assert json.loads(text_of(device)) == data
    x0, y0, x1, y1 = data["bbox_um"]
    assert (x1 - x0) * (y1 - y0) > 0, data["bbox_um"]
    assert {"S", "D", "G"} <= set(data["pins"]), data["pins"]
    assert not cells.is_error and "M1" in json.dumps(cells.structured_content)
    assert not exported.is_error, text_of(exported)
    assert (workdir / "m1.gds").is_file() and (workdir / "m1.gds").stat().st_size > 0


def test_a_failing_skill_is_a_tool_error_and_the_session_goes_on(tmp_path: Path) -> None:
    async def body(client: ClientSession) -> Any:
        await client.call_tool("tech_load", {"rules": ota5_rules()})
        negative = await client.call_tool(
            "layout_create_device", {"type": "nmos", "w": -1e-6, "l": 0.5e-6})
        outside = await client.call_tool(
            "layout_export", {"cell": "nothing", "path": "/etc/centroid-mcp-test.gds"})
        after = await client.call_tool(
            "layout_create_device", {"type": "pmos", "w": 1e-6, "l": 0.5e-6})
        return negative, outside, after

    negative, outside, after = run_session(tmp_path / "session", body)
    assert negative.is_error
    assert text_of(negative).startswith("INVALID_PARAM: "), text_of(negative)
    error = negative.structured_content["error"]
    assert error["code"] == "INVALID_PARAM" and error["retryable"] is False, error
    assert "w" in error["details"]["path"], error
    assert outside.is_error and text_of(outside).startswith("INVALID_PARAM: ")
    assert outside.structured_content["error"]["details"]["reason"] == "path_outside_scratch"
    assert not Path("/etc/centroid-mcp-test.gds").exists()
    assert not after.is_error, text_of(after)


def test_an_unknown_tool_is_a_protocol_error(tmp_path: Path) -> None:
    async def body(client: ClientSession) -> Any:
        errors = []
        for name in ("no_such_tool", "layout.create_device"):
            with pytest.raises(MCPError) as raised:
                await client.call_tool(name, {})
            errors.append(raised.value)
        still = await client.call_tool("tech_info", {})
        return errors, still

    errors, still = run_session(tmp_path / "session", body)
    for error, name in zip(errors, ("no_such_tool", "layout.create_device"), strict=True):
        assert error.code == -32602, error
        assert name in str(error), error
    # no technology loaded yet: a tool error, not a protocol one
    assert still.is_error, text_of(still)
