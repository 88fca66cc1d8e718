"""Shared fixtures: rule sets (fixture + examples/pdk/*.json + scaled variants), a client."""

from __future__ import annotations

from typing import Any

import pytest
from helpers import (
    FIXTURES,
    RULE_SET_IDS,
    RULE_SET_PATHS,
    Client,
    load_rule_set,
    scaled_rule_set,
)


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
