"""The suite's own pytest settings."""

from __future__ import annotations

import os

import pytest

pytest_plugins = ["pytester", "tests.filesystems", "tests.node"]


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: one worker more than the machine has cores. Many tests wait on what they start (servers,
    subprocesses, frameworks' agents), and a worker waiting leaves its core idle; a third worker on a
    2-core machine keeps both busy (the suite took 5:40 with two workers, 4:22 with three)."""
    return (os.cpu_count() or 1) + 1
