"""A weather agent written directly on the OpenAI SDK, over Chat Completions or the Responses API.

Run against any endpoint:  python examples/frameworks/raw_sdk_weather.py [--responses] [--stream]
(it reads OPENAI_BASE_URL and OPENAI_API_KEY, as the SDK does).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from openai import OpenAI
from openai.types.chat import ChatCompletionMessage
from openai.types.responses import Response

MODEL = "gpt-4o"
PARAMETERS = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
DESCRIPTION = "The weather in a city."
CHAT_TOOLS: Any = [
    {
        "type": "function",
        "function": {"name": "get_weather", "description": DESCRIPTION, "parameters": PARAMETERS},
    }
]
RESPONSES_TOOLS: Any = [
    {"type": "function", "name": "get_weather", "description": DESCRIPTION, "parameters": PARAMETERS}
]


def get_weather(arguments: str) -> str:
    """The one tool; arguments it cannot read are a result the model reads, not an exception."""
    try:
        city = json.loads(arguments)["city"]
    except (ValueError, TypeError, KeyError):
        return "error: arguments must be a JSON object with a city"
    return f"{city}: sunny"


def run_chat(client: OpenAI, prompt: str, stream: bool = False, max_turns: int = 6) -> str | None:
    """Chat Completions: ask, run the calls, send the results back, until the model answers."""
    messages: list[Any] = [{"role": "user", "content": prompt}]
    for _ in range(max_turns):
        message: ChatCompletionMessage
        if stream:
            with client.chat.completions.stream(model=MODEL, messages=messages, tools=CHAT_TOOLS) as events:
                message = events.get_final_completion().choices[0].message
        else:
            completion = client.chat.completions.create(model=MODEL, messages=messages, tools=CHAT_TOOLS)
            message = completion.choices[0].message
        messages.append(message.model_dump(exclude_none=True, exclude={"parsed"}))
        if not message.tool_calls:
            return message.content
        for call in message.tool_calls:
            result = (
                get_weather(call.function.arguments) if call.type == "function" else "error: not a function"
            )
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    return None


def run_responses(client: OpenAI, prompt: str, stream: bool = False, max_turns: int = 6) -> str | None:
    """The Responses API, stateless: the whole input each time, the output items appended to it."""
    items: list[Any] = [{"role": "user", "content": prompt}]
    for _ in range(max_turns):
        response: Response
        if stream:
            with client.responses.stream(model=MODEL, input=items, tools=RESPONSES_TOOLS) as events:
                response = events.get_final_response()
        else:
            response = client.responses.create(model=MODEL, input=items, tools=RESPONSES_TOOLS)
        items += [
            item.model_dump(exclude_none=True, exclude={"parsed_arguments"}) for item in response.output
        ]
        calls = [item for item in response.output if item.type == "function_call"]
        if not calls:
            return response.output_text
        for call in calls:
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": call.call_id,
                    "output": get_weather(call.arguments),
                }
            )
    return None


def main() -> None:
    """Ask for the weather in Paris and print the answer."""
    run = run_responses if "--responses" in sys.argv else run_chat
    with OpenAI(max_retries=0) as client:
        print(run(client, "What is the weather in Paris?", stream="--stream" in sys.argv))


if __name__ == "__main__":
    main()
