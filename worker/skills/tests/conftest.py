"""Shared fixtures: rule sets (fixture + examples/pdk/*.json), an in-process client."""

from __future__ import annotations

from typing import Any

import pytest
from helpers import FIXTURES, RULE_SET_IDS, RULE_SET_PATHS, Client, load_rule_set


@pytest.fixture(params=RULE_SET_PATHS, ids=RULE_SET_IDS)
def rule_set(request: pytest.FixtureRequest) -> dict[str, Any]:
    return load_rule_set(request.param)


@pytest.fixture
def toy_rules() -> dict[str, Any]:
    return load_rule_set(FIXTURES / "toy180.json")


@pytest.fixture
def client() -> Client:
    return Client()
