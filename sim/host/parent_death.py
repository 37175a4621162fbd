"""Child processes that end when the process that started them dies, even by SIGKILL: Linux's
`PR_SET_PDEATHSIG`, set by util-linux's `setpriv` (an exec, under a millisecond) or by a function run in the
forked child before it runs its program (which makes Python fork rather than spawn). Elsewhere, neither is
available and children outlive a killed parent."""

from __future__ import annotations

import ctypes
import functools
import shutil
import signal
import subprocess
import sys

_PR_SET_PDEATHSIG = 1


def _load_prctl() -> ctypes._NamedFuncPointer | None:
    if sys.platform != "linux":
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _load_prctl()


def _die_with_parent() -> None:
    assert _PRCTL is not None
    _PRCTL(_PR_SET_PDEATHSIG, signal.SIGKILL)


die_with_parent = _die_with_parent if _PRCTL is not None else None
"""A `preexec_fn` for `subprocess`/`asyncio` children: killed when the thread that started them ends (so
start them from a thread that lives as long as they should), or None where it cannot be set."""


@functools.cache
def dying_with_parent() -> tuple[str, ...]:
    """The command that runs a program with `PR_SET_PDEATHSIG` set (`setpriv`), if it is there and works."""
    setpriv = shutil.which("setpriv") if sys.platform == "linux" else None
    if setpriv is None:
        return ()
    wrapper = (setpriv, "--pdeathsig", "KILL", "--")
    try:
        tried = subprocess.run([*wrapper, "true"], capture_output=True, timeout=10, check=False)
        works = tried.returncode == 0
    except (OSError, subprocess.SubprocessError):
        works = False
    return wrapper if works else ()
