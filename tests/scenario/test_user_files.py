"""Reading a user's file: only a regular file, never blocking on a FIFO, never reading a device, capped."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from sim.scenario import user_files
from sim.scenario.loader import scenario_files
from sim.scenario.user_files import FileRefused, read_bytes, read_text, refusal
from tests.hangs import within

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="FIFOs and /dev/zero are POSIX")

MIB = 1024 * 1024


def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "x.yaml"
    os.mkfifo(path)
    return path


def zeros(tmp_path: Path) -> Path:
    path = tmp_path / "zero.yaml"
    path.symlink_to("/dev/zero")
    return path


def test_a_fifo_is_refused_at_once_saying_what_it_is(tmp_path: Path) -> None:
    path = fifo(tmp_path)
    with within(10, "reading a FIFO"), pytest.raises(FileRefused) as refused:
        read_text(path, MIB, "a cassette")
    assert str(refused.value) == f"{path}: not a regular file (a FIFO)"


def test_a_symlink_to_a_device_is_refused_and_one_to_a_file_is_read(tmp_path: Path) -> None:
    with within(10, "reading /dev/zero"), pytest.raises(FileRefused, match="a character device"):
        read_bytes(zeros(tmp_path), MIB, "a cassette")
    target = tmp_path / "real.yaml"
    target.write_text("prompt: p\n")
    link = tmp_path / "link.yaml"
    link.symlink_to(target)
    assert read_text(link, MIB, "a cassette") == "prompt: p\n"
    assert refusal(link) is None and refusal(tmp_path / "missing.yaml") is None


def test_a_fifo_swapped_in_after_the_check_is_refused_from_the_opened_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race: the path was a regular file when it was looked at, a FIFO when it was opened. The open
    does not block, and the opened file's own status refuses it."""
    monkeypatch.setattr(user_files, "refusal", lambda path: None)
    with within(10, "opening a FIFO"), pytest.raises(FileRefused, match=r"\(a FIFO\)"):
        read_bytes(fifo(tmp_path), MIB, "a cassette")


def test_a_sparse_file_past_the_limit_is_refused_before_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "huge.yaml"
    with path.open("wb") as file:
        file.truncate(3 * 1024 * MIB)  # 3 GiB that take no room on disk
    reads: list[int] = []
    real_read = os.read
    monkeypatch.setattr(os, "read", lambda fd, n: reads.append(n) or real_read(fd, n))
    with within(10, "a 3 GiB file"), pytest.raises(FileRefused) as refused:
        read_bytes(path, 4 * MIB, "a cassette")
    assert str(refused.value) == f"{path}: 3072.0 MiB is more than a cassette may hold (4 MiB)"
    assert reads == []


def test_text_ends_its_lines_as_python_text_files_do(tmp_path: Path) -> None:
    path = tmp_path / "lines.yaml"
    path.write_bytes(b"a: 1\r\nb: 2\rc: \xc3\xa9\n")
    assert read_text(path, MIB, "a scenario file") == path.read_text(encoding="utf-8")


def test_a_folder_walk_leaves_out_what_is_no_regular_file(tmp_path: Path) -> None:
    fifo(tmp_path)
    zeros(tmp_path)
    (tmp_path / "ok.yaml").write_text("prompt: p\n")
    with within(10, "walking a folder"):
        assert scenario_files([tmp_path]) == [tmp_path / "ok.yaml"]
