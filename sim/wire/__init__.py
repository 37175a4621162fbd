"""Each OpenAI API sim speaks, known in one package: Chat Completions (`sim.wire.chat`) and the Responses API
(`sim.wire.responses`), with what both share beside them. Here: which APIs there are (`Api`),
light enough for every start of the command line; the registry (`sim.wire.registry`) says which one a path
is and what generic code asks an API."""

from __future__ import annotations

from enum import StrEnum

from sim.core.errors import ConfigurationError


class Api(StrEnum):
    """Which OpenAI API a client speaks."""

    chat = "chat"
    responses = "responses"

    @classmethod
    def named(cls, name: str) -> Api:
        """The API called `name`; `ConfigurationError` naming the choices otherwise."""
        try:
            return cls(name.strip().lower())
        except ValueError:
            raise ConfigurationError(f"OPENAI_API must be chat or responses, not {name!r}") from None


STORE_LIMIT_BYTES = 256 * 1024 * 1024
"""How much conversation text a Responses API host keeps by default (`sim serve --store-limit`): here, not in
the store's module, so that the command line's help knows it without loading the store."""
