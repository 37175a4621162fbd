"""The models endpoint (`GET /v1/models`), which clients of either API may ask: where it is, and the list a
server that plays one model answers there."""

from __future__ import annotations

from typing import Any

from sim.wire.requests import CREATED

PATHS: tuple[str, ...] = ("/v1/models", "/models")
"""The paths a server lists its models at (with `GET`)."""


def model_list(model: str) -> dict[str, Any]:
    """The list of models, holding `model` alone, as the API writes it."""
    return {
        "object": "list",
        "data": [{"id": model, "object": "model", "created": CREATED, "owned_by": "sim"}],
    }
