"""What a user's ``testbench.sp`` may contain, and its ``.meas`` names.

ngspice decks can run programs (``.control … shell …``, ``.exec``), read files
(``.include``/``.lib``, XSPICE ``A`` devices such as ``filesource``) and write them
(``.control … write``). A testbench is data from a request, so these are refused with
INVALID_PARAM ``details.reason = "testbench_refused"``, the file and the line:

* ``.control`` / ``.endc`` blocks and any line starting with ``shell`` or ``.exec``;
* ``.include`` / ``.inc`` / ``.lib FILE SECTION`` of a file outside the process's model
  directories (``.lib SECTION`` … ``.endl`` sections themselves are fine);
* XSPICE code-model instances (lines starting with ``A``).

Everything else (sources, elements, ``X`` instances, ``.param``, ``.option``, analyses,
``.meas``/``.measure``, ``.save``, ``.end``) passes; ngspice judges its syntax.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from centroid_skills.errors import INVALID_PARAM, SkillError

REFUSED_REASON = "testbench_refused"


@dataclass(frozen=True)
class LogicalLine:
    number: int  # the first physical line (1-based)
    text: str  # continuation lines joined, comments dropped


def logical_lines(text: str) -> list[LogicalLine]:
    """SPICE logical lines: ``+`` continues the previous line; ``*`` lines and ``;``/``$``
    comments after white space are dropped. The first line is a title only to ngspice's
    top file, not to an included one, so it is read like any other line."""
    out: list[LogicalLine] = []
    for index, raw in enumerate(text.splitlines(), start=1):
        line = re.split(r"\s[;$]", raw, maxsplit=1)[0].rstrip()
        stripped = line.strip()
        if not stripped or stripped.startswith("*"):
            continue
        if stripped.startswith("+") and out:
            last = out[-1]
            out[-1] = LogicalLine(last.number, last.text + " " + stripped[1:].strip())
            continue
        out.append(LogicalLine(index, stripped))
    return out


def _inside(path: str, roots: tuple[str, ...]) -> bool:
    real = os.path.realpath(path)
    for root in roots:
        base = os.path.realpath(root)
        if real == base or real.startswith(base.rstrip(os.sep) + os.sep):
            return True
    return False


def _refuse(path: str, line: LogicalLine, what: str) -> SkillError:
    return SkillError(INVALID_PARAM, f"{os.path.basename(path)}:{line.number}: {what}",
                      {"reason": REFUSED_REASON, "file": path, "line": line.number,
                       "text": line.text[:200]})


def check_testbench(path: str, text: str, model_dirs: tuple[str, ...]) -> list[LogicalLine]:
    """The testbench's logical lines, or INVALID_PARAM ``testbench_refused``."""
    lines = logical_lines(text)
    here = os.path.dirname(os.path.abspath(path))
    for line in lines:
        words = line.text.split()
        head = words[0].lower()
        if head in (".control", ".endc") or head.startswith(".exec") or head == "shell":
            raise _refuse(path, line, f"{head} is not allowed in a testbench (ngspice control "
                          "language can run programs and write files)")
        if head[0] == "a":
            raise _refuse(path, line, "XSPICE code-model instances (A…) are not allowed in a testbench")
        if head in (".include", ".inc", ".lib") and (head != ".lib" or len(words) >= 3):
            target = words[1].strip("'\"") if len(words) > 1 else ""
            full = target if os.path.isabs(target) else os.path.join(here, target)
            if not target or not _inside(full, model_dirs):
                raise _refuse(path, line, f"{head} {target!r} is outside the process's model "
                              f"directories ({', '.join(model_dirs) or 'none'})")
    return lines


def measure_names(lines: list[LogicalLine]) -> dict[str, LogicalLine]:
    """``.meas``/``.measure`` names (lower case, as ngspice prints them) -> their line."""
    out: dict[str, LogicalLine] = {}
    for line in lines:
        words = line.text.split()
        if words[0].lower() in (".meas", ".measure") and len(words) >= 3:
            out[words[2].lower()] = line
    return out


def find_line(lines: list[LogicalLine], fragment: str) -> LogicalLine | None:
    """The first line whose text contains ``fragment`` (case and spacing ignored)."""
    want = " ".join(fragment.lower().split())
    if not want:
        return None
    for line in lines:
        if want in " ".join(line.text.lower().split()):
            return line
    return None
