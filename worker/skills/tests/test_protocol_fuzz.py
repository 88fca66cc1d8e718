"""The stdio JSON-RPC loop under malformed input (hypothesis): arbitrary bytes, truncated
requests, ids of every type and size, deep nesting, unknown methods and bad params. Every
line gets the JSON-RPC response the protocol asks for (-32700 parse error, -32600 invalid
request, -32601 unknown method, -32602 invalid params; none for a notification or a blank
line), every response is strict JSON, and the next valid request is served.

The examples run in-process through ``server.serve`` (what ``python -m centroid_skills``
runs on its stdin and stdout); one test sends the worst lines to a real child process.
``CENTROID_FUZZ=long`` runs many more examples (profiles in conftest.py).
"""

from __future__ import annotations

import io
import json
import math
import os
import random
import subprocess
import sys
from typing import Any

from helpers import SKILLS_DIR
from hypothesis import given
from hypothesis import strategies as st

from centroid_skills.server import serve

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602

#: methods that answer with a result whatever their (object) params, without side effects
PLAIN_METHODS = ("ping", "initialize", "tools/list", "initialized", "notifications/initialized")
#: what a response must be: None (no response), "result", or (error code, id)
Expected = None | str | tuple[int, Any]

_ABSENT = object()


def _reject_constant(name: str) -> None:
    raise ValueError(f"not JSON: {name}")


def strict_json(line: bytes) -> Any:
    """A response line: JSON without NaN or Infinity."""
    return json.loads(line, parse_constant=_reject_constant)


def is_valid_id(request_id: Any) -> bool:
    if isinstance(request_id, bool):
        return False
    if isinstance(request_id, float):
        return math.isfinite(request_id)
    return request_id is None or isinstance(request_id, (str, int))


def expected_for(message: Any) -> Expected:
    """What JSON-RPC 2.0 (and docs/contracts.md §2) asks of a decoded line."""
    if not isinstance(message, dict):
        return (INVALID_REQUEST, None)
    request_id = message.get("id")
    if not is_valid_id(request_id):
        return (INVALID_REQUEST, None)
    method = message.get("method")
    if message.get("jsonrpc") != "2.0" or not isinstance(method, str):
        return (INVALID_REQUEST, request_id)
    is_notification = "id" not in message
    params = message.get("params")
    if params is not None and not isinstance(params, (dict, list)):
        return None if is_notification else (INVALID_PARAMS, request_id)
    if method in PLAIN_METHODS:
        return None if is_notification else "result"
    if method == "tools/call":
        arguments = params.get("arguments") if isinstance(params, dict) else None
        if not (isinstance(params, dict) and isinstance(params.get("name"), str) and params["name"]
                and (arguments is None or isinstance(arguments, dict))):
            return None if is_notification else (INVALID_PARAMS, request_id)
        return None if is_notification else "result"  # the skill's result, {ok: false} if unknown
    if method == "session/reset":
        scratch_dir = params.get("scratch_dir") if isinstance(params, dict) else None
        if scratch_dir is not None and (not isinstance(scratch_dir, str) or not os.path.isabs(scratch_dir)):
            return None if is_notification else (INVALID_PARAMS, request_id)
        return None if is_notification else "result"
    return None if is_notification else (METHOD_NOT_FOUND, request_id)


def expected_for_line(line: bytes) -> Expected:
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return (PARSE_ERROR, None)
    if not text.strip():
        return None
    try:
        message = json.loads(text)
    except (ValueError, RecursionError):
        return (PARSE_ERROR, None)
    return expected_for(message)


# -- strategies ------------------------------------------------------------------------------
json_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12)
ids = st.one_of(
    st.integers(), st.text(max_size=20), st.floats(), st.booleans(), st.none(),
    st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.just(10 ** 3999), st.just(-(10 ** 200)),
)
methods = st.one_of(
    st.sampled_from(PLAIN_METHODS), st.just("tools/call"), st.just("session/reset"),
    st.text(max_size=30).filter(lambda m: m not in ("tools/call", "session/reset")),
    json_values.filter(lambda m: not isinstance(m, str)),
)
bad_tools_call_params = st.one_of(
    st.lists(json_values, max_size=3),
    st.fixed_dictionaries({}, optional={"name": json_values.filter(lambda n: not isinstance(n, str) or not n),
                                        "arguments": json_values}),
    st.fixed_dictionaries({"name": st.text(min_size=1, max_size=10)},
                          optional={"arguments": json_values.filter(lambda a: a is not None
                                                                    and not isinstance(a, dict))}),
)
bad_reset_params = st.fixed_dictionaries({"scratch_dir": st.one_of(
    st.text(max_size=20).filter(lambda d: not os.path.isabs(d)),
    json_values.filter(lambda d: d is not None and not isinstance(d, str)))})


@st.composite
def messages(draw: st.DrawFn) -> bytes:
    """A request-like object: every member present or not, of the right type or not."""
    method = draw(methods)
    message: dict[str, Any] = {}
    for key, value in (("jsonrpc", draw(st.sampled_from(["2.0", "2.0", "1.0", 2.0, None, _ABSENT]))),
                       ("id", draw(ids | st.just(_ABSENT))),
                       ("method", draw(st.just(method) | st.just(_ABSENT)))):
        if value is not _ABSENT:
            message[key] = value
    if method == "tools/call":
        message["params"] = draw(bad_tools_call_params)
    elif method == "session/reset":
        message["params"] = draw(bad_reset_params)
    elif draw(st.booleans()):
        message["params"] = draw(json_values)
    return json.dumps(message).encode()  # NaN and Infinity written as such, as a peer might


def truncated(line: bytes) -> st.SearchStrategy[bytes]:
    return st.integers(1, len(line) - 1).map(lambda cut: line[:cut])


nasty_lines = st.one_of(
    st.binary(max_size=300).map(lambda b: b.replace(b"\n", b"")),
    st.text(max_size=200).map(lambda t: t.replace("\n", "").encode("utf-8", "surrogatepass")),
    messages(),
    messages().flatmap(truncated),
    json_values.map(lambda v: json.dumps(v).encode()),
    st.builds(lambda brackets, depth, closed: (brackets[0] * depth + (brackets[1] * depth if closed else "")).encode(),
              st.sampled_from([("[", "]"), ('{"a":', "}")]), st.sampled_from([50, 100, 5000, 100_000]),
              st.booleans()),
    st.integers(4301, 6000).map(lambda digits: b'{"jsonrpc":"2.0","id":' + b"7" * digits + b',"method":"ping"}'),
)


# -- the loop --------------------------------------------------------------------------------
def ping(request_id: int) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": f"ping-{request_id}", "method": "ping"}).encode()


def run_lines(lines: list[bytes]) -> list[bytes]:
    """Each line followed by a valid ping, through serve(); the response lines."""
    stdin = b"".join(line + b"\n" + ping(index) + b"\n" for index, line in enumerate(lines))
    stdout = io.BytesIO()
    assert serve(io.BytesIO(stdin), stdout) == 0
    return stdout.getvalue().split(b"\n")[:-1]


def check_responses(lines: list[bytes], responses: list[bytes]) -> None:
    decoded = [strict_json(response) for response in responses]
    position = 0
    for index, line in enumerate(lines):
        expected = expected_for_line(line)
        if expected is not None:
            response = decoded[position]
            position += 1
            if expected == "result":
                assert "result" in response, (line[:200], response)
            else:
                code, request_id = expected
                assert response["error"]["code"] == code, (line[:200], response)
                assert response["id"] == request_id, (line[:200], response)
        assert decoded[position] == {"jsonrpc": "2.0", "id": f"ping-{index}", "result": {}}, (line[:200], decoded)
        position += 1
    assert position == len(decoded)


@given(st.lists(nasty_lines, min_size=1, max_size=8))
def test_every_line_is_answered_and_the_next_request_served(lines: list[bytes]) -> None:
    check_responses(lines, run_lines(lines))


#: lines that ended the server (uncaught exceptions) or put non-JSON on stdout before
WORST_LINES = [
    b'{"jsonrpc":"2.0","id":' + b"1" * 5000 + b',"method":"ping"}',
    b"[" * 100_000,
    b'{"a":' * 100_000,
    b'{"jsonrpc":"2.0","id":NaN,"method":"ping"}',
    b'{"jsonrpc":"2.0","id":1e999,"method":"ping"}',
    b'{"jsonrpc":"2.0","id":true,"method":"ping"}',
    b"\xff\xfe\x00",
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":' + b"[" * 900 + b"]" * 900 + b"}}",
]


def test_the_worst_lines_through_a_real_child_process() -> None:
    rng = random.Random(15)
    lines = WORST_LINES + [bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200))).replace(b"\n", b"")
                           for _ in range(50)]
    stdin = b"".join(line + b"\n" + ping(index) + b"\n" for index, line in enumerate(lines))
    child = subprocess.run([sys.executable, "-m", "centroid_skills"], input=stdin, capture_output=True,
                           env=dict(os.environ, PYTHONPATH=str(SKILLS_DIR)), timeout=120)
    assert child.returncode == 0, child.stderr[-2000:]
    check_responses(lines, child.stdout.split(b"\n")[:-1])
