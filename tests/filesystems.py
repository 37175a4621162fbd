"""Folders that refuse writes: a read-only and a full tmpfs, mounted for one test where the test may mount.

Permission bits do not stop root (CI runs as root), so a folder that cannot be written is a real read-only
mount, and a full disk is a real tmpfs of a few kilobytes. Where mounting is not allowed (not root, no
`mount`, a sandbox without the capability), the fixtures skip, saying so.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


def _mount(target: Path, options: str) -> str | None:
    """Mounts a tmpfs at `target`; the reason it could not, or None."""
    mount = shutil.which("mount")
    if mount is None:
        return "no mount command on this machine"
    done = subprocess.run(
        [mount, "-t", "tmpfs", "-o", options, "tmpfs", str(target)], capture_output=True, text=True
    )
    if done.returncode != 0:
        return f"cannot mount a tmpfs here ({done.stderr.strip() or done.returncode})"
    return None


def _unmount(target: Path) -> None:
    subprocess.run(["umount", "-l", str(target)], capture_output=True)


def mounted(tmp_path: Path, name: str, options: str) -> Iterator[Path]:
    """An empty folder `name` under `tmp_path` with a tmpfs mounted on it for the test, then unmounted."""
    target = tmp_path / name
    target.mkdir()
    reason = _mount(target, options)
    if reason is not None:
        pytest.skip(reason)
    try:
        yield target
    finally:
        _unmount(target)


@pytest.fixture
def read_only_dir(tmp_path: Path) -> Iterator[Path]:
    """An empty folder on a read-only tmpfs: every write into it fails with EROFS, root's included."""
    yield from mounted(tmp_path, "read-only", "ro,size=64k")


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A folder on a 64 KiB tmpfs: fill it to make the next write fail with ENOSPC."""
    yield from mounted(tmp_path, "full-disk", "size=64k")


def fill(folder: Path, leave: int = 0) -> None:
    """Fills the disk under `folder` until fewer than `leave` bytes are free (best effort, in one file)."""
    filler = folder / ".filler"
    with filler.open("wb") as handle:
        chunk = b"\0" * 1024
        try:
            while shutil.disk_usage(folder).free > leave:
                handle.write(chunk)
                handle.flush()
        except OSError:
            pass
