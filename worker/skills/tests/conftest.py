"""Shared fixtures: rule sets (fixture + examples/pdk/*.json + scaled variants), a client;
the Rust planner's plans the selected tests need, drafted in the background."""

from __future__ import annotations

import os
from typing import Any

import pytest
import rust_plans
from helpers import (
    FIXTURES,
    RULE_SET_IDS,
    RULE_SET_PATHS,
    Client,
    load_rule_set,
    scaled_rule_set,
)
from hypothesis import settings

# Property tests (hypothesis): a short run in `make test`, a long one with CENTROID_FUZZ=long.
# No example database: a failure prints its example (and a blob to reproduce it).
settings.register_profile("ci", max_examples=100, deadline=None, database=None, print_blob=True)
settings.register_profile("long", max_examples=20_000, deadline=None, database=None, print_blob=True)
settings.load_profile("long" if os.environ.get("CENTROID_FUZZ") == "long" else "ci")


@pytest.fixture(params=RULE_SET_PATHS, ids=RULE_SET_IDS)
def rule_set(request: pytest.FixtureRequest) -> dict[str, Any]:
    return load_rule_set(request.param)


@pytest.fixture(params=RULE_SET_PATHS, ids=[f"{i}_x1.5" for i in RULE_SET_IDS])
def scaled_rules(request: pytest.FixtureRequest) -> dict[str, Any]:
    return scaled_rule_set(load_rule_set(request.param), 1.5)


@pytest.fixture
def toy_rules() -> dict[str, Any]:
    return load_rule_set(FIXTURES / "toy180.json")


@pytest.fixture
def client() -> Client:
    return Client()


@pytest.fixture
def loaded(client: Client, rule_set: dict[str, Any]) -> Client:
    client.call("tech.load", rules=rule_set)
    return client


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "rust_plans(requests=fn): the test runs plans of the Rust planner; fn(params) -> "
        "the rust_plans.PlanRequest list it needs (drafted in the background before it runs)")


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start drafting, in test order, the plans of every selected test (`centroid plan`
    starts KLayout, ~1 s a call: on a second core while the first runs the tests)."""
    requests: list[rust_plans.PlanRequest] = []
    for item in session.items:
        params = dict(getattr(getattr(item, "callspec", None), "params", {}))
        for mark in item.iter_markers("rust_plans"):
            requests.extend(mark.kwargs["requests"](params))
    rust_plans.prefetch(requests)


def pytest_sessionfinish(session: pytest.Session) -> None:
    rust_plans.stop_prefetch()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    calls, seconds = rust_plans.statistics()
    if calls:
        terminalreporter.write_line(
            f"centroid plan: {calls} calls, {seconds:.1f} s (drafted on a background thread "
            f"while tests ran, or waited for)")
