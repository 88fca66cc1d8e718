"""Layout files: export a cell (with its hierarchy) to GDS or OASIS, read one back, and render
a cell to PNG headless."""

from __future__ import annotations

import base64
import os
import tempfile
from typing import Any

import klayout.db as kdb

from centroid_skills.errors import INVALID_PARAM, SkillError
from centroid_skills.registry import FILE_PATH, NAME, obj, skill
from centroid_skills.session import Session, box_um

FORMATS = {"gds": "GDS2", "gds2": "GDS2", "oas": "OASIS", "oasis": "OASIS"}


def _format_for(path: str, fmt: str | None) -> str:
    if fmt:
        return FORMATS[fmt.lower()]
    ext = os.path.splitext(path)[1].lower().lstrip(".")
    if ext in FORMATS:
        return FORMATS[ext]
    raise SkillError(INVALID_PARAM, f"cannot tell the format of {path}: give format gds|oasis",
                     {"path": path})


def write_cell(session: Session, cell: kdb.Cell, path: str, fmt: str) -> int:
    opts = kdb.SaveLayoutOptions()
    opts.format = fmt
    opts.select_cell(cell.cell_index())
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    session.layout.write(path, opts)
    return os.path.getsize(path)


@skill(
    "layout.export",
    "Write a cell and its hierarchy to GDS or OASIS (format from the extension or given); "
    "optionally return the file as base64.",
    obj({"cell": NAME, "path": FILE_PATH,
         "format": {"enum": ["gds", "gds2", "oasis", "oas"]},
         "return_base64": {"type": "boolean", "default": False}},
        ["cell"]),
)
def export(session: Session, args: dict[str, Any]) -> dict[str, Any]:
    cell = session.any_cell(args["cell"])
    path = args.get("path")
    if not path:
        ext = "oas" if (args.get("format") or "gds").startswith("oas") else "gds"
        path = os.path.join(session.temporary_dir("centroid_export_"), f"{cell.name}.{ext}")
    fmt = _format_for(path, args.get("format"))
    size = write_cell(session, cell, path, fmt)
    out: dict[str, Any] = {"cell": cell.name, "path": path, "format": fmt, "bytes": size,
                           "bbox_um": box_um(cell.bbox())}
    if args.get("return_base64"):
        with open(path, "rb") as fh:
            out["base64"] = base64.b64encode(fh.read()).decode("ascii")
    return out


@skill(
    "layout.render",
    "Render a cell (all hierarchy levels) to a PNG file, headless.",
    obj({"cell": NAME, "path": FILE_PATH,
         "width": {"type": "integer", "minimum": 16, "maximum": 8192, "default": 800},
         "height": {"type": "integer", "minimum": 16, "maximum": 8192, "default": 600}},
        ["cell", "path"]),
)
def render(session: Session, args: dict[str, Any]) -> dict[str, Any]:
    import klayout.lay as klay

    cell = session.any_cell(args["cell"])
    path = args["path"]
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="centroid_render_", dir=session.scratch_dir) as tmp:
        gds = os.path.join(tmp, "render.gds")
        write_cell(session, cell, gds, "GDS2")
        view = klay.LayoutView()
        # draw in this thread: a headless view has no event loop for a drawing
        # worker to hand the picture back to, only the hand-over to pay for
        view.set_config("drawing-workers", "0")
        view.load_layout(gds, True)
        cv = view.active_cellview()
        cv.cell_name = cell.name
        view.add_missing_layers()
        view.max_hier()
        view.zoom_fit()
        view.save_image(path, int(args.get("width", 800)), int(args.get("height", 600)))
        view.destroy() if hasattr(view, "destroy") else None
    return {"cell": cell.name, "path": path, "bytes": os.path.getsize(path)}


@skill(
    "layout.read",
    "Read a GDS or OASIS file into the session's layout (e.g. a kept candidate's layout, "
    "to render it); its cells keep their names. Refused when a cell of the file is "
    "already in the layout.",
    obj({"path": FILE_PATH}, ["path"]),
)
def read(session: Session, args: dict[str, Any]) -> dict[str, Any]:
    path = args["path"]
    if not os.path.isfile(path):
        raise SkillError(INVALID_PARAM, f"no such file: {path}", {"path": path})
    incoming = kdb.Layout()
    try:
        incoming.read(path)
    except RuntimeError as error:
        raise SkillError(INVALID_PARAM, f"{path} is not a readable GDS or OASIS file: {error}",
                         {"path": path}) from error
    names = [cell.name for cell in incoming.each_cell()]
    taken = sorted(name for name in names if session.layout.cell(name) is not None)
    if taken:
        raise SkillError(INVALID_PARAM, "the layout has cells of these names already",
                         {"path": path, "cells": taken[:50]})
    session.layout.read(path)
    tops = sorted(cell.name for cell in incoming.top_cells())
    return {"path": path, "cells": len(names), "top_cells": tops,
            "bbox_um": [box_um(session.layout.cell(top).bbox()) for top in tops]}
