"""Reading a user's file safely: only a regular file (a symlink to one is fine), opened without blocking on a
FIFO, its size checked on the opened file and the reading capped (a file that grows while it is read is
refused at the cap, never read on to its end)."""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

__all__ = ["FileRefused", "opened", "read_bytes", "read_text", "refusal"]

_MIB = 1024 * 1024
_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)
_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)


class FileRefused(ValueError):
    """A file sim does not read, said in one line: `PATH: not a regular file (a FIFO)`, or larger than
    what such a file may hold."""


def _not_regular(path: Path, mode: int) -> FileRefused:
    kind = next((name for test, name in _KINDS if test(mode)), "of another kind")
    return FileRefused(f"{path}: not a regular file ({kind})")


def refusal(path: Path) -> FileRefused | None:
    """Why the file at `path` would not be read (it is no regular file), found without opening it; None
    when it is one, or when there is nothing there (the caller says so its own way)."""
    try:
        mode = path.stat().st_mode
    except (OSError, ValueError):
        return None
    return None if stat.S_ISREG(mode) else _not_regular(path, mode)


def _too_large(path: Path, size: int, limit: int, what: str) -> FileRefused:
    return FileRefused(f"{path}: {size / _MIB:.1f} MiB is more than {what} may hold ({limit // _MIB} MiB)")


@contextlib.contextmanager
def opened(path: Path) -> Iterator[BinaryIO]:
    """The regular file at `path`, open for reading in binary; `FileRefused` when it is no regular file
    (a FIFO, a device, a folder: refused from its status before it is opened, and again from the opened
    file's own, so a file swapped in between is refused too); `OSError` when it cannot be opened."""
    if (refused := refusal(path)) is not None:  # a device is never opened: opening one may act
        raise refused
    handle = os.open(path, _FLAGS)  # a FIFO would block an ordinary open until someone writes to it
    try:
        mode = os.fstat(handle).st_mode
        if not stat.S_ISREG(mode):
            raise _not_regular(path, mode)
        file = os.fdopen(handle, "rb")
    except BaseException:
        os.close(handle)
        raise
    with file:
        yield file


def read_bytes(path: Path, limit: int, what: str) -> bytes:
    """The bytes of the regular file at `path`; `FileRefused` when it is no regular file or holds more than
    `limit` bytes (`what` names such a file in the message: "a cassette"), `OSError` when it cannot be
    read."""
    with opened(path) as file:
        if (size := os.fstat(file.fileno()).st_size) > limit:
            raise _too_large(path, size, limit, what)
        data = file.read(limit + 1)
    if len(data) > limit:  # it grew while it was read
        raise _too_large(path, len(data), limit, what)
    return data


def read_text(path: Path, limit: int, what: str) -> str:
    """`read_bytes` decoded as UTF-8, line ends made `\\n` as Python's text files make them;
    `UnicodeDecodeError` when it is not UTF-8."""
    text = read_bytes(path, limit, what).decode("utf-8")
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text
