"""Testing helpers: fuzzing strategies and campaigns, and `fuzz_test` for your suite (the pytest plugin that
plays scenario files and cassettes as tests is `sim.pytest_plugin`)."""

from __future__ import annotations

from typing import Any

__all__ = ["fuzz_test"]


def __getattr__(name: str) -> Any:
    # imported on first use: importing the package must stay fast (pytest loads the plugin beside it)
    if name == "fuzz_test":
        from sim.fuzz.pytest_fuzz import fuzz_test

        return fuzz_test
    raise AttributeError(name)
