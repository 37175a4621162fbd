"""An in-process OpenAI endpoint for adapter tests (either API).

Faked at the outermost boundary only: the real SDK builds, sends and parses every request; an httpx2
MockTransport stands where the network would be, answering with the responses given, in order.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx2

from sim.adapters.openai_chat import OpenAIChatModel
from sim.adapters.openai_responses import OpenAIResponsesModel
from sim.cassette.reader import RecordedInteraction

Answer = httpx2.Response | Callable[[httpx2.Request], httpx2.Response] | Exception


def completion(
    content: str | None = "ok",
    *,
    tool_calls: list[dict[str, Any]] | None = None,
    finish_reason: str = "stop",
    **message: Any,
) -> dict[str, Any]:
    """A `chat.completion` body shaped like the real API's."""
    body_message: dict[str, Any] = {"role": "assistant", "content": content, **message}
    if tool_calls is not None:
        body_message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-test",
        "choices": [{"index": 0, "message": body_message, "finish_reason": finish_reason, "logprobs": None}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
    }


def function_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    """One tool call as the API sends it."""
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def sse(*chunks: dict[str, Any]) -> httpx2.Response:
    """A streamed reply: each chunk as a `data:` event, then `[DONE]`."""
    text = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks) + "data: [DONE]\n\n"
    return httpx2.Response(200, content=text.encode(), headers={"content-type": "text/event-stream"})


def recorded(interaction: RecordedInteraction) -> httpx2.Response:
    """A recorded interaction's response as the network gave it: its status, its body and its content type."""
    response = interaction.response
    content_type = "text/event-stream" if response.is_event_stream else "application/json"
    return httpx2.Response(response.status, content=response.body, headers={"content-type": content_type})


class Endpoint:
    """Answers each request with the next answer and keeps every request as sent."""

    def __init__(self, *answers: Answer) -> None:
        self.answers = list(answers)
        self.requests: list[httpx2.Request] = []

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        if not self.answers:
            raise AssertionError(f"unexpected request {len(self.requests)}")
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer(request) if callable(answer) else answer

    def client(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(transport=httpx2.MockTransport(self.handle))

    def model(self, **options: Any) -> OpenAIChatModel:
        return OpenAIChatModel.connect(
            base_url="http://endpoint.test/v1",
            api_key="sk-test-key-0123456789",
            model="gpt-test",
            http_client=self.client(),
            **options,
        )

    def responses_model(self, *, model: str = "gpt-test", **options: Any) -> OpenAIResponsesModel:
        return OpenAIResponsesModel.connect(
            base_url="http://endpoint.test/v1",
            api_key="sk-test-key-0123456789",
            model=model,
            http_client=self.client(),
            **options,
        )

    def bodies(self) -> list[Any]:
        return [json.loads(request.content) for request in self.requests]
