"""The SDK adapter for an API, on a new client: the one place where `--api chat|responses` (or `OPENAI_API`)
becomes a model the loop can call."""

from __future__ import annotations

from collections.abc import Mapping

import httpx2

from sim.core.errors import ConfigurationError
from sim.core.model import ModelClient
from sim.wire import Api


def connect_model(
    api: Api,
    *,
    base_url: str,
    api_key: str,
    model: str,
    stream: bool = False,
    max_tokens: int | None = None,
    chain: bool = False,
    http_client: httpx2.AsyncClient | None = None,
    headers: Mapping[str, str] | None = None,
    query: Mapping[str, str] | None = None,
) -> ModelClient:
    """The adapter for `api` on a new SDK client; `max_tokens` is Chat's `max_completion_tokens` or the
    Responses API's `max_output_tokens`, and `chain` (previous_response_id) is for the Responses API only;
    `headers` and `query` go with every request (Azure OpenAI's `api-key` and `api-version`)."""
    # the SDK is imported here, not above: it takes half a second, and readers of recorded traffic, the
    # simulator and `sim serve` never need it
    from sim.adapters.openai_chat import OpenAIChatModel
    from sim.adapters.openai_responses import OpenAIResponsesModel

    if api is Api.responses:
        return OpenAIResponsesModel.connect(
            base_url=base_url,
            api_key=api_key,
            model=model,
            stream=stream,
            max_output_tokens=max_tokens,
            chain=chain,
            http_client=http_client,
            headers=headers,
            query=query,
        )
    if chain:
        raise ConfigurationError("--chain is for the Responses API (--api responses)")
    return OpenAIChatModel.connect(
        base_url=base_url,
        api_key=api_key,
        model=model,
        stream=stream,
        max_completion_tokens=max_tokens,
        http_client=http_client,
        headers=headers,
        query=query,
    )
