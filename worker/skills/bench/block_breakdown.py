"""Where a routed block's bounding box goes (issue 26): the OTA block of ``bench_blocks.py``
(SKY130 rules of ``examples/ota5_spice``) and a bank of its instances, each printed as rows
(cell and assembly sizes, what lies below each row's cells: rail and via zone), channels
(tracks, nets), the gaps between the rows' assemblies and the trunk columns either side,
read from the router's own plan and stack (its ``stack_rows`` and ``plan_channels`` wrapped
for the run); then DRC and LVS of the bank.

    cd worker/skills && PYTHONPATH=. ../../.venv/bin/python bench/block_breakdown.py [otas] [per_row]
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from bench_blocks import draw_bank, flat_devices  # noqa: E402
from helpers import REPO_ROOT, Client, load_rule_set  # noqa: E402

import centroid_skills.routing.router as router  # noqa: E402

SEEN: dict[str, Any] = {}  # the last routing call's dims, rows, tracks, stack and plan
_stack_rows = router.stack_rows
_plan_channels = router.plan_channels


def _seen_stack(*args: Any) -> Any:
    stack = _stack_rows(*args)
    SEEN.update(d=args[1], infos=args[2], tracks=args[3], stack=stack)
    return stack


def _seen_plan(*args: Any, **kwargs: Any) -> Any:
    SEEN["plan"] = _plan_channels(*args, **kwargs)
    return SEEN["plan"]


router.stack_rows = _seen_stack
router.plan_channels = _seen_plan


def um(nm: int) -> float:
    return nm / 1000


def breakdown(client: Client, cell: str, label: str) -> None:
    bb = client.server.session.layout.cell(cell).bbox()
    d, infos, stack, plan = SEEN["d"], SEEN["infos"], SEEN["stack"], SEEN["plan"]
    m = client.call("layout.metrics", cell=cell)
    print(f"== {label}: bbox {um(bb.width()):.2f} x {um(bb.height()):.2f} um = "
          f"{um(bb.width()) * um(bb.height()):.1f} um2, devices {m['device_area_um2']:.1f} um2, "
          f"utilisation {100 * m['utilisation']:.1f} %")
    print(f"   pitch {um(d.px)} track pitch {um(d.py)} clearance {um(d.c_out)}")
    for i, info in enumerate(infos):
        cb = info.cell.bbox()
        rail = info.rail_cell.bbox().height() if info.rail_cell is not None else 0
        print(f"   row {i} {info.kind}: cells {um(cb.width()):.2f} x {um(cb.height()):.2f}, assembly "
              f"{um(info.top - info.bottom):.2f} high ({um(cb.bottom - info.bottom):.2f} below the "
              f"cells: rail {um(rail):.2f} + via zone)")
    for ch, n in enumerate(stack.n_tracks):
        print(f"   channel {ch}: {n} tracks, nets {sorted(SEEN['tracks'][ch])}")
    prev = bb.bottom
    for i, info in enumerate(infos):
        print(f"   below row {i}'s assembly: {um(info.bottom + info.dy - prev):.2f}")
        prev = info.top + info.dy
    print(f"   above the top row: {um(bb.top - prev):.2f}")
    left = min(i.ext.bbox.left + i.dx for i in infos if i.ext is not None)
    right = max(i.ext.bbox.right + i.dx for i in infos if i.ext is not None)
    trunks = ", ".join(f"{n} {um(x):.2f}" for n, x in sorted(plan.trunk_x.items(), key=lambda t: t[1]))
    print(f"   rows {um(left):.2f} .. {um(right):.2f}; columns left {um(left - bb.left):.2f}, right "
          f"{um(bb.right - right):.2f}; trunks: {trunks or '-'}; verticals: {len(plan.verticals)}")


def main() -> None:
    otas = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    per_row = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    client = Client()
    client.call("tech.load", rules=load_rule_set(REPO_ROOT / "examples" / "ota5_spice" / "drc_rules.json"))
    draw_bank(client, otas, per_row, lambda: breakdown(client, "BLK_OTA", "OTA block"))
    breakdown(client, "TOP", f"bank of {otas} ({per_row} a row)")
    drc = client.call("drc.run", cell="TOP")
    lvs = client.call("lvs.run", cell="TOP", devices=flat_devices(otas))
    print(f"bank: DRC {drc['total']}, LVS match {lvs['match']}")


if __name__ == "__main__":
    main()
