"""The loop's bounds by default, known without loading the loop (the command line shows them in its help,
which must start at once)."""

from __future__ import annotations

DEFAULT_MAX_TURNS = 20
"""The most model requests a run makes unless told otherwise."""
