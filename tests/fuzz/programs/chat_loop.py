"""A tool loop over Chat Completions, as a program would write it: its own `OpenAI()` client, built from
the environment (OPENAI_BASE_URL, OPENAI_API_KEY), asking for a JSON answer it then reads.

`python chat_loop.py` is careful; `python chat_loop.py BUG` has one bug:

- `forgets-a-result`: answers only the first call of a reply that makes several;
- `crashes-on-null`: logs each reply's text, and a reply with calls has `content: null`;
- `never-stops`: a reply without calls is asked again, forever.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from openai import OpenAI

PARAMETERS = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TOOLS: Any = [{"type": "function", "function": {"name": "get_weather", "parameters": PARAMETERS}}]
BUGS = ("forgets-a-result", "crashes-on-null", "never-stops")


def weather(arguments: str) -> str:
    """The tool, careful: arguments it cannot read are a result, not an exception."""
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return "error: arguments are not JSON"
    if not isinstance(parsed, dict) or not isinstance(parsed.get("city"), str):
        return "error: arguments must be an object with a city"
    return f"{parsed['city']}: sunny"


def main(bug: str | None) -> int:
    client = OpenAI(max_retries=0)  # an error reply ends the run at once (the test suite stays quick)
    messages: list[Any] = [
        {"role": "system", "content": "Answer in JSON."},
        {"role": "user", "content": "What is the weather in Paris?"},
    ]
    turn = 0
    while bug == "never-stops" or turn < 8:
        turn += 1
        choice = client.chat.completions.create(
            model="m", messages=messages, tools=TOOLS, response_format={"type": "json_object"}
        ).choices[0]
        message = choice.message
        if bug == "crashes-on-null":
            print("the model says:", message.content.strip())  # type: ignore[union-attr]  # the bug
        if choice.finish_reason in ("length", "content_filter"):
            print("the answer was cut short")
            return 0
        if message.refusal:
            print("refused:", message.refusal)
            return 0
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            if bug == "never-stops":
                continue
            print("answer:", json.loads(message.content or "{}"))
            return 0
        calls = message.tool_calls[:1] if bug == "forgets-a-result" else message.tool_calls
        for call in calls:
            result = weather(call.function.arguments) if call.type == "function" else "error: not a function"
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else None))
