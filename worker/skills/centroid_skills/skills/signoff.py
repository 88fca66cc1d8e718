"""``signoff.run`` / ``signoff.decks``: a foundry's KLayout DRC deck on a GDS file.

A deck is Ruby that KLayout executes, so a request never supplies deck text or a deck
path: it names one of the decks the worker's operator installed.  The environment
variable ``CENTROID_SIGNOFF_DECKS`` is a ``:``-separated list of deck files; a deck's
name is its file name without the directory (``/opt/pdk/sky130A_mr.drc`` ->
``sky130A_mr.drc``).

The deck runs as ``KLAYOUT -b -r DECK -rd input=GDS -rd report=REPORT -rd topcell=CELL``
(``KLAYOUT`` = ``$CENTROID_KLAYOUT_BINARY``, else ``klayout`` on ``PATH``) in its own
process group, with its output in ``REPORT.log``; on timeout the whole group is killed.
Decks name their variables differently and have switches of their own, so an optional
*deck profile* next to the deck file (``DECK.json``, written by the operator, data only)
renames the three variables and adds fixed ``-rd`` definitions::

    {"description": "...",
     "variables": {"input": "gdsfile", "report": "outfile", "topcell": "cell"},
     "defines": {"density": "false"}}

The result counts the items of the produced report database (``.lyrdb``) per category
(= the deck's rule id).  A deck that cannot run or whose report cannot be read is an
error -- never "0 violations": ``error.details.reason`` is one of ``deck_not_found``
(NOT_FOUND), ``gds_not_found`` / ``top_cell_not_found`` (NOT_FOUND), ``gds_unreadable``
/ ``top_cell_ambiguous`` / ``bad_report_path`` (INVALID_PARAM), ``klayout_missing`` /
``deck_missing`` / ``deck_config`` (SERVICE_UNAVAILABLE: this worker is not set up for
the deck), ``deck_failed`` (INTERNAL_ERROR: non-zero exit, no report, unreadable report,
or a report on another cell; ``details.failure`` says which) and ``timeout`` (TIMEOUT).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from typing import Any

import klayout.db as kdb
import klayout.rdb as krdb

from centroid_skills.child_process import DeadlinePassed, log_tail, run_in_group
from centroid_skills.errors import (
    INTERNAL_ERROR,
    INVALID_PARAM,
    NOT_FOUND,
    SERVICE_UNAVAILABLE,
    TIMEOUT,
    SkillError,
)
from centroid_skills.registry import FILE_PATH, NAME, obj, skill
from centroid_skills.session import Session

DECKS_ENV = "CENTROID_SIGNOFF_DECKS"
BINARY_ENV = "CENTROID_KLAYOUT_BINARY"
DEFAULT_BINARY = "klayout"
DEFAULT_TIMEOUT_S = 300.0
MAX_TIMEOUT_S = 3600.0
LOG_TAIL_LINES = 30
STANDARD_VARIABLES = ("input", "report", "topcell")
VARIABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
PROFILE_KEYS = ("description", "variables", "defines")

DECK_NAME = {"type": "string", "minLength": 1, "maxLength": 200, "pattern": "^[A-Za-z0-9_.+-]+$",
             "description": "name of a configured deck (its file name, no directory)"}


@dataclass(frozen=True)
class Deck:
    name: str
    path: str
    variables: dict[str, str] = field(default_factory=dict)
    defines: dict[str, str] = field(default_factory=dict)
    profile_path: str | None = None

    def variable(self, standard: str) -> str:
        return self.variables.get(standard, standard)


def _error(code: str, reason: str, message: str, **details: Any) -> SkillError:
    return SkillError(code, message, {"reason": reason, **details})


def configured_deck_paths() -> list[str]:
    """The deck files of ``$CENTROID_SIGNOFF_DECKS`` (empty entries ignored), absolute."""
    raw = os.environ.get(DECKS_ENV, "")
    return [os.path.abspath(entry) for entry in raw.split(":") if entry.strip()]


def profile_path_of(deck_path: str) -> str:
    return deck_path + ".json"


def _load_profile(deck_name: str, deck_path: str) -> Deck:
    """The deck with its optional profile; a malformed profile is a configuration error."""
    path = profile_path_of(deck_path)
    if not os.path.exists(path):
        return Deck(deck_name, deck_path)

    def bad(problem: str) -> SkillError:
        return _error(SERVICE_UNAVAILABLE, "deck_config",
                      f"deck profile {path} is invalid: {problem}", deck=deck_name, profile=path)

    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise bad(str(exc)) from exc
    if not isinstance(data, dict):
        raise bad("expected a JSON object")
    unknown = sorted(set(data) - set(PROFILE_KEYS))
    if unknown:
        raise bad(f"unknown keys {unknown} (allowed: {list(PROFILE_KEYS)})")
    variables = data.get("variables", {})
    defines = data.get("defines", {})
    if not isinstance(variables, dict) or not isinstance(defines, dict):
        raise bad("variables and defines must be objects")
    for standard, renamed in variables.items():
        if standard not in STANDARD_VARIABLES:
            raise bad(f"variables.{standard}: only {list(STANDARD_VARIABLES)} can be renamed")
        if not isinstance(renamed, str) or not VARIABLE_NAME.match(renamed):
            raise bad(f"variables.{standard} must be a variable name")
    passed = {variables.get(s, s) for s in STANDARD_VARIABLES}
    for name, value in defines.items():
        if not VARIABLE_NAME.match(name):
            raise bad(f"defines: {name!r} is not a variable name")
        if not isinstance(value, str):
            raise bad(f"defines.{name} must be a string (KLayout passes -rd values as strings)")
        if name in passed:
            raise bad(f"defines.{name} would override the {name} variable Centroid sets")
    return Deck(deck_name, deck_path, dict(variables), dict(defines), path)


def find_deck(name: str) -> Deck:
    """The configured deck called ``name`` (NOT_FOUND if none is)."""
    paths = configured_deck_paths()
    matches = [p for p in paths if os.path.basename(p) == name]
    if not matches:
        raise _error(NOT_FOUND, "deck_not_found",
                     f"no signoff deck named {name!r} is configured on this worker",
                     deck=name, configured=sorted({os.path.basename(p) for p in paths}))
    if len(set(matches)) > 1:
        raise _error(SERVICE_UNAVAILABLE, "deck_config",
                     f"{DECKS_ENV} lists several files named {name!r}", deck=name, paths=matches)
    path = matches[0]
    if not os.path.isfile(path):
        raise _error(SERVICE_UNAVAILABLE, "deck_missing",
                     f"the configured deck file {path} does not exist", deck=name, path=path)
    return _load_profile(name, path)


def klayout_binary() -> str:
    """The KLayout executable (SERVICE_UNAVAILABLE ``klayout_missing`` when there is none)."""
    configured = os.environ.get(BINARY_ENV, "").strip()
    if configured:
        if os.path.isfile(configured) and os.access(configured, os.X_OK):
            return os.path.abspath(configured)
        raise _error(SERVICE_UNAVAILABLE, "klayout_missing",
                     f"{BINARY_ENV}={configured} is not an executable file", binary=configured)
    found = shutil.which(DEFAULT_BINARY)
    if not found:
        raise _error(SERVICE_UNAVAILABLE, "klayout_missing",
                     "no klayout binary on PATH (install KLayout or set "
                     f"{BINARY_ENV})", binary=DEFAULT_BINARY)
    return found


_VERSION_CACHE: dict[tuple[str, float], str] = {}


def klayout_binary_version(binary: str) -> str:
    """``klayout -b -v`` (e.g. ``0.28.5``), cached per binary file and modification time."""
    try:
        key = (binary, os.stat(binary).st_mtime)
    except OSError:
        return "unknown"
    if key not in _VERSION_CACHE:
        try:
            out = subprocess.run([binary, "-b", "-v"], capture_output=True, text=True, timeout=30,
                                 stdin=subprocess.DEVNULL, check=False).stdout
        except (OSError, subprocess.TimeoutExpired):
            return "unknown"
        match = re.search(r"KLayout\s+(\S+)", out)
        _VERSION_CACHE[key] = match.group(1) if match else (out.strip() or "unknown")
    return _VERSION_CACHE[key]


def resolve_top_cell(gds_path: str, requested: str | None) -> str:
    """The cell the deck checks: the requested one (must exist), else the only top cell."""
    if not os.path.isfile(gds_path):
        raise _error(NOT_FOUND, "gds_not_found", f"no layout file at {gds_path}", path=gds_path)
    layout = kdb.Layout()
    try:
        layout.read(gds_path)
    except RuntimeError as exc:
        raise _error(INVALID_PARAM, "gds_unreadable", f"cannot read {gds_path}: {exc}",
                     path=gds_path) from exc
    if requested is not None:
        if not layout.has_cell(requested):
            raise _error(NOT_FOUND, "top_cell_not_found", f"{gds_path} has no cell {requested!r}",
                         path=gds_path, top_cell=requested)
        return requested
    tops = [layout.cell(i).name for i in layout.each_top_cell()]
    if len(tops) != 1:
        raise _error(INVALID_PARAM, "top_cell_ambiguous",
                     f"{gds_path} has {len(tops)} top cells: give top_cell",
                     path=gds_path, top_cells=sorted(tops)[:50])
    return tops[0]


def deck_command(binary: str, deck: Deck, gds_path: str, report_path: str,
                 top_cell: str) -> list[str]:
    """The argument vector (no shell): values are passed to KLayout as strings."""
    argv = [binary, "-b", "-r", deck.path]
    values = {"input": gds_path, "report": report_path, "topcell": top_cell}
    for standard in STANDARD_VARIABLES:
        argv += ["-rd", f"{deck.variable(standard)}={values[standard]}"]
    for name, value in deck.defines.items():
        argv += ["-rd", f"{name}={value}"]
    return argv


# --- the subprocess ---------------------------------------------------------------------------

def run_deck(argv: list[str], log_path: str, cwd: str, timeout_s: float) -> int:
    """Run ``argv`` in a new process group, output to ``log_path``; kill the group after
    ``timeout_s`` (TIMEOUT).  Returns the exit status (negative: killed by a signal)."""
    try:
        return run_in_group(argv, log_path, cwd, timeout_s)
    except OSError as exc:
        raise _error(SERVICE_UNAVAILABLE, "klayout_missing", f"cannot start {argv[0]}: {exc}",
                     binary=argv[0]) from exc
    except DeadlinePassed:
        raise _error(TIMEOUT, "timeout",
                     f"the deck did not finish within {timeout_s:g} s (killed)",
                     timeout_s=timeout_s, log_path=log_path,
                     log_tail=log_tail(log_path, LOG_TAIL_LINES)) from None


# --- the report -------------------------------------------------------------------------------

def _category_key(category: Any) -> str:
    names = []
    while category is not None:
        names.append(category.name())
        category = category.parent()
    return "/".join(reversed(names))


def read_report(report_path: str) -> dict[str, Any]:
    """Items per category of a KLayout report database; RuntimeError if unreadable."""
    db = krdb.ReportDatabase("")
    db.load(report_path)
    by_id: dict[int, str] = {}
    categories = 0

    def walk(category: Any) -> None:
        nonlocal categories
        categories += 1
        by_id[category.rdb_id()] = _category_key(category)
        for sub in category.each_sub_category():
            walk(sub)

    for top in db.each_category():
        walk(top)
    by_rule: dict[str, int] = {}
    for item in db.each_item():
        key = by_id.get(item.category_id(), f"category#{item.category_id()}")
        by_rule[key] = by_rule.get(key, 0) + 1
    return {"by_rule": dict(sorted(by_rule.items())), "violations": sum(by_rule.values()),
            "rules_reported": categories, "top_cell": db.top_cell_name or None}


# --- skills -----------------------------------------------------------------------------------

@skill(
    "signoff.decks",
    f"List the signoff DRC decks this worker's operator configured (${DECKS_ENV}).",
    obj({}),
)
def decks(session: Session, args: dict[str, Any]) -> dict[str, Any]:
    out = []
    for path in configured_deck_paths():
        profile = profile_path_of(path)
        out.append({"name": os.path.basename(path), "path": path, "exists": os.path.isfile(path),
                    "profile": profile if os.path.exists(profile) else None})
    return {"decks": out}


@skill(
    "signoff.run",
    "Run a configured foundry KLayout DRC deck (chosen by name) on a GDS file in batch mode; "
    "returns the violations per rule id of the deck's report (.lyrdb at report_path). "
    "A deck that fails to run is an error, never 0 violations.",
    obj({"deck": DECK_NAME,
         "gds_path": FILE_PATH,
         "report_path": {**FILE_PATH, "description": "where the .lyrdb goes (REPORT.log next to it)"},
         "top_cell": NAME,
         "timeout_s": {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_TIMEOUT_S,
                       "default": DEFAULT_TIMEOUT_S}},
        ["deck", "gds_path", "report_path"]),
)
def run(session: Session, args: dict[str, Any]) -> dict[str, Any]:
    deck = find_deck(args["deck"])
    binary = klayout_binary()
    gds_path = os.path.abspath(args["gds_path"])
    report_path = os.path.abspath(args["report_path"])
    if report_path == gds_path:
        raise _error(INVALID_PARAM, "bad_report_path", "report_path must not be the layout file",
                     report_path=report_path)
    top_cell = resolve_top_cell(gds_path, args.get("top_cell"))
    timeout_s = float(args.get("timeout_s", DEFAULT_TIMEOUT_S))

    report_dir = os.path.dirname(report_path)
    try:
        os.makedirs(report_dir, exist_ok=True)
        if os.path.isdir(report_path):
            raise _error(INVALID_PARAM, "bad_report_path", f"{report_path} is a directory",
                         report_path=report_path)
        with contextlib.suppress(FileNotFoundError):
            os.remove(report_path)  # a stale report must not pass for this run's
    except OSError as exc:
        raise _error(INVALID_PARAM, "bad_report_path", f"cannot write {report_path}: {exc}",
                     report_path=report_path) from exc
    log_path = report_path + ".log"
    argv = deck_command(binary, deck, gds_path, report_path, top_cell)
    version = klayout_binary_version(binary)

    started = time.perf_counter()
    status = run_deck(argv, log_path, report_dir, timeout_s)
    duration_ms = round((time.perf_counter() - started) * 1000.0, 1)

    def failed(failure: str, message: str, **extra: Any) -> SkillError:
        return _error(INTERNAL_ERROR, "deck_failed", message, failure=failure, deck=deck.name,
                      exit_status=status, log_path=log_path, log_tail=log_tail(log_path, LOG_TAIL_LINES),
                      klayout_version=version, **extra)

    if status != 0:
        raise failed("exit_status", f"deck {deck.name} failed (exit status {status})")
    if not os.path.isfile(report_path):
        raise failed("no_report", f"deck {deck.name} wrote no report at {report_path} "
                                  "(does its profile name the report variable?)")
    try:
        report = read_report(report_path)
    except RuntimeError as exc:
        raise failed("report_unreadable", f"cannot read the report of deck {deck.name}: {exc}") from exc
    if report["top_cell"] is not None and report["top_cell"] != top_cell:
        raise failed("wrong_top_cell",
                     f"deck {deck.name} checked cell {report['top_cell']!r}, not {top_cell!r} "
                     "(does its profile name the top-cell variable?)")
    return {"ran": True, "deck": deck.name, "violations": report["violations"],
            "by_rule": report["by_rule"], "rules_reported": report["rules_reported"],
            "top_cell": top_cell, "report_path": report_path, "log_path": log_path,
            "duration_ms": duration_ms, "klayout_version": version}
