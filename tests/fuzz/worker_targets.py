"""A loop for `sim fuzz --workers` that notes which process ran it (the careful loop otherwise), so that a
test sees the campaign spread over its workers; where to note it is `SIM_TEST_NOTES`."""

from __future__ import annotations

import os

from openai import OpenAI

from tests.fuzz.targets import careful


def notes_its_process(client: OpenAI, prompt: str) -> str | None:
    """`careful`, after a line with this process's id is added to the file `SIM_TEST_NOTES` names."""
    with open(os.environ["SIM_TEST_NOTES"], "a") as notes:
        notes.write(f"{os.getpid()}\n")
    return careful(client, prompt)
