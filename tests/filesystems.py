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


@pytest.fixture
def read_only_dir(tmp_path: Path) -> Iterator[Path]:
    """An empty folder on a read-only tmpfs: every write into it fails with EROFS, root's included."""
    target = tmp_path / "read-only"
    target.mkdir()
    reason = _mount(target, "ro,size=64k")
    if reason is not None:
        pytest.skip(reason)
    try:
        yield target
    finally:
        _unmount(target)


def full_disk(tmp_path: Path, size_kib: int = 64) -> Iterator[Path]:
    """A folder on a tmpfs of `size_kib` KiB: writes past it fail with ENOSPC."""
    target = tmp_path / "full-disk"
    target.mkdir()
    reason = _mount(target, f"size={size_kib}k")
    if reason is not None:
        pytest.skip(reason)
    try:
        yield target
    finally:
        _unmount(target)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A folder on a 64 KiB tmpfs: fill it to make the next write fail with ENOSPC."""
    yield from full_disk(tmp_path)


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
