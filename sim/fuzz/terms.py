"""The terms a fuzz campaign is run on, without hypothesis: what its replies may be (the profile) and how
far a target's run may go. The command line builds its help from these and imports the campaign only when
it runs."""

from __future__ import annotations

from enum import StrEnum


class Profile(StrEnum):
    """What a campaign may draw."""

    api = "api"
    """Only what the real API has been seen to send."""
    hostile = "hostile"
    """Everything, duplicate ids and non-object arguments included."""


PROMPT = "Please help me with this."
"""The prompt a `function(client, prompt)` target gets."""
BOUND = 20
"""Requests a run may make before it is called a runaway."""
RUN_SECONDS = 60.0
"""How long a run may take before it is called a runaway."""
MAX_RUN_SECONDS = 3600.0
"""The longest bound a run may be given."""
MAX_WORKERS = 256
"""The most campaigns `--workers` runs at once: each is a process with a simulator of its own (and its
program), so more would exhaust memory and processes long before they used another core."""
