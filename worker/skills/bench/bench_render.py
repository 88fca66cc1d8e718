"""How ``layout.render`` draws: in the calling thread or on KLayout's drawing worker.

Renders one GDS (800x600 PNG, every hierarchy level, as the skill does) ``--runs``
times each way, alternating, in ``--processes`` processes at once (2 = two worker
slots on two cores), and prints the median, min and max ms per process.

    ../../.venv/bin/python bench/bench_render.py some.gds --runs 30 --processes 2
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import tempfile
import time

import klayout.lay as klay


def render_once(gds: str, png: str, drawing_workers: str | None) -> float:
    started = time.perf_counter()
    view = klay.LayoutView()
    if drawing_workers is not None:
        view.set_config("drawing-workers", drawing_workers)
    view.load_layout(gds, True)
    view.add_missing_layers()
    view.max_hier()
    view.zoom_fit()
    view.save_image(png, 800, 600)
    return (time.perf_counter() - started) * 1000


def measure(gds: str, runs: int) -> dict[str, list[float]]:
    ways: dict[str, str | None] = {"drawing worker (default)": None, "in this thread": "0"}
    times: dict[str, list[float]] = {name: [] for name in ways}
    with tempfile.TemporaryDirectory(prefix="bench_render_") as tmp:
        png = os.path.join(tmp, "out.png")
        for _ in range(runs):
            for name, workers in ways.items():
                times[name].append(render_once(gds, png, workers))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("gds")
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--processes", type=int, default=2)
    args = parser.parse_args()
    with multiprocessing.Pool(args.processes) as pool:
        results = pool.starmap(measure, [(args.gds, args.runs)] * args.processes)
    print("| process | drawing | median ms | min | max |")
    print("|---|---|---:|---:|---:|")
    for index, times in enumerate(results):
        for name, values in times.items():
            print(f"| {index} | {name} | {statistics.median(values):.1f} | {min(values):.1f} "
                  f"| {max(values):.1f} |")


if __name__ == "__main__":
    main()
