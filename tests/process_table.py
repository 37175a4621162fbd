"""What Linux's process table (/proc) says of the processes a test started: whether one still runs, and
which processes are its children."""

from __future__ import annotations

from pathlib import Path


def alive(pid: int) -> bool:
    """Whether process `pid` runs (a zombie nobody reaped yet, or one being torn down, is over)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def children(pid: int) -> list[int]:
    """The processes whose parent is `pid`."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(stat.parent.name))
        except (OSError, IndexError, ValueError):
            continue
    return found
