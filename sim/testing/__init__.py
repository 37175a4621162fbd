"""Testing helpers: the pytest plugin, fuzzing strategies and campaigns, and `fuzz_test` for your suite."""

from __future__ import annotations

from typing import Any

__all__ = ["fuzz_test"]


def __getattr__(name: str) -> Any:
    # imported on first use: the pytest plugin lives in this package and must load fast
    if name == "fuzz_test":
        from sim.testing.pytest_fuzz import fuzz_test

        return fuzz_test
    raise AttributeError(name)
