"""Seeded random mixes of every generator, placed in rows and ringed: all DRC-clean
(on every rule set and on its 1.5x scaled, renamed variant)."""

from __future__ import annotations

import random
from typing import Any

import pytest
from helpers import Client, drc_total


def random_cell(client: Client, rng: random.Random, j: int, k: float) -> str | None:
    kind = rng.choice(["dev", "dev", "cc", "idg", "res", "cap"])
    t = rng.choice(["nmos", "pmos"])
    nf = rng.choice([1, 2, 3, 4])
    w = round(rng.uniform(0.6, 6), 2) * 1e-6 * k
    length = round(rng.uniform(0.3, 2), 2) * 1e-6 * k
    if kind == "dev":
        r = client.raw("layout.create_device", {"type": t, "w": w * nf, "l": length, "nf": nf,
                                                 "m": rng.choice([1, 2])})
    elif kind == "cc":
        m = rng.choice([1, 2, 4])
        arr = rng.choice(["ABBA", "2D", "ABAB"]) if m % 2 == 0 else "ABAB"
        spec = {"type": t, "w": w * nf, "l": length, "nf": nf, "m": m}
        r = client.raw("layout.create_common_centroid_pair", {
            "device_a": {**spec, "device_id": f"A{j}"}, "device_b": {**spec, "device_id": f"B{j}"},
            "arrangement": arr})
        if r["ok"] and rng.random() < 0.6:
            client.call("layout.add_dummies", cell=r["data"]["cell_name"], count=rng.choice([1, 2]))
    elif kind == "idg":
        counts = rng.choice([(1, 2), (1, 2, 4), (2, 2), (3, 1, 1)])
        r = client.raw("layout.create_interdigitated_group", {"devices": [
            {"device_id": f"G{j}_{i}", "type": t, "w": w, "l": length, "units": u}
            for i, u in enumerate(counts)]})
        if r["ok"] and rng.random() < 0.5:
            client.call("layout.add_dummies", cell=r["data"]["cell_name"])
    elif kind == "res":
        r = client.raw("layout.create_device", {"type": "resistor", "w": max(w / 2, 0.6e-6 * k),
                                                 "l": length * 5})
    else:
        r = client.raw("layout.create_device", {"type": "capacitor", "w": w * 2, "l": length * 5 + 2e-6 * k})
    if not r["ok"]:
        assert r["error"]["code"] == "INVALID_PARAM", r["error"]
        return None
    name: str = r["data"]["cell_name"]
    if rng.random() < 0.4:
        name = client.call("layout.add_guard_ring", cell=name, kind=rng.choice(["auto", "substrate"]))["cell_name"]
    return name


def run_random(client: Client, rules: dict[str, Any], seed: int, k: float) -> None:
    rng = random.Random(seed)
    client.call("tech.load", rules=rules)
    cells = []
    for j in range(rng.randint(3, 6)):
        name = random_cell(client, rng, j, k)
        if name is None:
            continue
        assert drc_total(client, name) == (0, []), name
        cells.append(name)
    rng.shuffle(cells)
    n_rows = rng.randint(1, 3)
    rows = [{"cells": cells[i::n_rows]} for i in range(n_rows) if cells[i::n_rows]]
    client.call("layout.place", cell_name="top", rows=rows)
    assert drc_total(client, "top") == (0, []), rows
    ring = client.call("layout.add_guard_ring", cell="top", kind="substrate")
    assert drc_total(client, ring["cell_name"]) == (0, [])


@pytest.mark.parametrize("seed", [11, 12])
def test_random_mix(client: Client, rule_set: dict[str, Any], seed: int) -> None:
    run_random(client, rule_set, seed, 1.0)


def test_random_mix_scaled(client: Client, scaled_rules: dict[str, Any]) -> None:
    run_random(client, scaled_rules, 13, 1.5)
