"""An external program run by a skill (KLayout's DRC engine, ngspice): in its own process
group, its output in a log file, killed as a group at its deadline, and dying with the
skill server (``PR_SET_PDEATHSIG`` on Linux) -- the worker kills the server's group on
cancel, and the child runs in another one.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import subprocess
import sys
from typing import Any

PR_SET_PDEATHSIG = 1
LOG_TAIL_LINES = 40


class DeadlinePassed(Exception):
    """The child ran past its deadline; its process group was killed."""

    def __init__(self, timeout_s: float) -> None:
        super().__init__(f"did not finish within {timeout_s:g} s (killed)")
        self.timeout_s = timeout_s


def _prctl() -> Any | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _prctl()


def child_setup(parent_pid: int) -> Any:
    """Runs in the child before exec (Linux): the child dies with the skill server."""
    if _PRCTL is None:
        return None
    prctl = _PRCTL

    def setup() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent_pid:  # the server died before prctl took effect
            os._exit(1)

    return setup


def log_tail(log_path: str, lines: int = LOG_TAIL_LINES) -> list[str]:
    try:
        with open(log_path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - 16384))
            text = fh.read().decode("utf-8", errors="replace")
    except OSError:
        return []
    return text.splitlines()[-lines:]


def _await_exit(proc: subprocess.Popen[bytes], timeout_s: float) -> bool:
    """Blocks until ``proc`` exits (True) or ``timeout_s`` passes (False), woken by the
    exit itself (a pidfd, Linux ≥ 5.3): ``Popen.wait(timeout)`` polls with sleeps of up
    to 50 ms, which a short child (ngspice on a small circuit: ~0.1 s) pays on every
    run. Without a pidfd, True at once: the caller's ``wait`` does the waiting."""
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is None:
        return True
    try:
        fd = pidfd_open(proc.pid)
    except OSError:
        return True
    try:
        ready, _, _ = select.select([fd], [], [], timeout_s)
    finally:
        os.close(fd)
    return bool(ready)


def run_in_group(argv: list[str], log_path: str, cwd: str, timeout_s: float,
                 env: dict[str, str] | None = None) -> int:
    """Run ``argv`` in a new process group, stdout and stderr to ``log_path``; kill the
    group after ``timeout_s`` (:class:`DeadlinePassed`). Returns the exit status
    (negative: killed by a signal). An OSError means the program could not start.
    ``env``: variables set for the child on top of this process's environment."""
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, cwd=cwd, start_new_session=True,
                                env={**os.environ, **env} if env else None,
                                preexec_fn=child_setup(os.getpid()))
        try:
            if not _await_exit(proc, timeout_s):
                raise subprocess.TimeoutExpired(argv, timeout_s)
            return proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            # the leader is not reaped yet, so its pid (= the group id) is still ours
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise DeadlinePassed(timeout_s) from None
