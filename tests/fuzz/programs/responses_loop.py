"""A careful tool loop over the Responses API, as a program would write it: its own `OpenAI()` client,
built from the environment (OPENAI_BASE_URL, OPENAI_API_KEY), each request chained to the latest response
(`previous_response_id`); it stops at an incomplete response and answers every call."""

from __future__ import annotations

import json
import sys
from typing import Any

from openai import OpenAI

PARAMETERS = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TOOLS: Any = [{"type": "function", "name": "get_weather", "parameters": PARAMETERS}]


def weather(arguments: str) -> str:
    """The tool, careful: arguments it cannot read are a result, not an exception."""
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return "error: arguments are not JSON"
    if not isinstance(parsed, dict) or not isinstance(parsed.get("city"), str):
        return "error: arguments must be an object with a city"
    return f"{parsed['city']}: sunny"


def main() -> int:
    client = OpenAI(max_retries=0)  # an error reply ends the run at once (the test suite stays quick)
    response = client.responses.create(model="m", input="What is the weather in Paris?", tools=TOOLS)
    for _ in range(8):
        if response.status == "incomplete":
            print("the answer was cut short")
            return 0
        calls = [item for item in response.output if item.type == "function_call"]
        if not calls:
            print("answer:", response.output_text)
            return 0
        outputs: Any = [
            {"type": "function_call_output", "call_id": call.call_id, "output": weather(call.arguments)}
            for call in calls
        ]
        response = client.responses.create(
            model="m", previous_response_id=response.id, input=outputs, tools=TOOLS
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
