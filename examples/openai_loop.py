"""A tool-calling loop written directly on the OpenAI SDK, the kind `sim fuzz --target` tests.

Fuzz it from the repository root:  sim fuzz --target examples.openai_loop:run_agent
(Its one tool only pretends to run commands: the point is the loop.)
"""

from __future__ import annotations

import json
from typing import Any

from openai import OpenAI

TOOLS: Any = [
    {
        "type": "function",
        "function": {
            "name": "shell",
            "description": "Run a shell command (this example only pretends to).",
            "parameters": {
                "type": "object",
                "properties": {"command": {"type": "string"}},
                "required": ["command"],
            },
        },
    }
]


def run_tool(name: str, arguments: str) -> str:
    """A tool's result; mistakes are results the model reads, not exceptions."""
    if name != "shell":
        return f"error: unknown tool {name}"
    try:
        command = json.loads(arguments)["command"]
    except (ValueError, TypeError, KeyError):
        return "error: arguments must be a JSON object with a command"
    return f"(pretended to run {command})"


def run_agent(client: OpenAI, prompt: str, max_turns: int = 10) -> str | None:
    """Ask, run the tools the model calls, repeat until it answers."""
    messages: list[Any] = [
        {"role": "system", "content": "You are a helpful agent."},
        {"role": "user", "content": prompt},
    ]
    for _ in range(max_turns):
        completion = client.chat.completions.create(model="sim-model", messages=messages, tools=TOOLS)
        message = completion.choices[0].message
        calls = message.tool_calls or []
        if len({call.id for call in calls}) != len(calls):
            # a follow-up cannot pair results with duplicate ids; the API would reject it
            raise RuntimeError("the model sent duplicate tool call ids")
        messages.append(message.model_dump(exclude_none=True))
        if not calls:
            return message.content
        for call in calls:
            content = run_tool(call.function.name, call.function.arguments)  # type: ignore[union-attr]
            messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
    return None
