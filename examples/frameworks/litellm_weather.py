"""A weather agent on litellm, over Chat Completions (`litellm.completion`) or the Responses API
(`litellm.responses`, `--responses`), pointed at any OpenAI-compatible endpoint.

Run against any endpoint:  python examples/frameworks/litellm_weather.py [--responses]
Fuzz it:                   sim fuzz --target examples.frameworks.litellm_weather:run (or :run_responses)
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm would fetch its price list at import

import litellm  # after the setting above
from openai import OpenAI

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
CHAT_TOOL = {"type": "function", "function": {"name": "get_weather", "description": "The weather in a city.",
                                              "parameters": SCHEMA}}  # fmt: skip
RESPONSES_TOOL = {"type": "function", "name": "get_weather", "description": "The weather in a city.",
                  "parameters": SCHEMA}  # fmt: skip


def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"{city}: sunny"


def _where(client: OpenAI) -> dict[str, Any]:
    return {"model": "openai/gpt-4o", "api_base": str(client.base_url).rstrip("/"), "api_key": client.api_key,
            "num_retries": 0}  # fmt: skip


def run(client: OpenAI, prompt: str, max_turns: int = 6) -> str | None:
    """One run over Chat Completions, at `client`'s endpoint (a `sim fuzz --target`)."""
    messages: list[Any] = [{"role": "user", "content": prompt}]
    for _ in range(max_turns):
        reply = litellm.completion(messages=messages, tools=[CHAT_TOOL], **_where(client)).choices[0].message
        messages.append(reply.model_dump(exclude_none=True))
        if not reply.tool_calls:
            return str(reply.content)
        for call in reply.tool_calls:
            result = get_weather(**json.loads(call.function.arguments))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    return None


def run_responses(client: OpenAI, prompt: str, max_turns: int = 6) -> str | None:
    """One run over the Responses API, stateless, at `client`'s endpoint (a `sim fuzz --target`)."""
    items: list[Any] = [{"role": "user", "content": prompt}]
    for _ in range(max_turns):
        response = litellm.responses(input=items, tools=[RESPONSES_TOOL], store=False, **_where(client))
        calls = [item for item in response.output if item.type == "function_call"]
        if not calls:
            return str(response.output_text)
        for call in calls:
            items.append({"type": "function_call", "call_id": call.call_id, "name": call.name,
                          "arguments": call.arguments})  # fmt: skip
            result = get_weather(**json.loads(call.arguments))
            items.append({"type": "function_call_output", "call_id": call.call_id, "output": result})
    return None


if __name__ == "__main__":
    with OpenAI(max_retries=0) as openai_client:
        print(
            (run_responses if "--responses" in sys.argv else run)(
                openai_client, "What is the weather in Paris?"
            )
        )
