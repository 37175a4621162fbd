"""A weather agent on langchain-openai, over Chat Completions or the Responses API (`--responses`): the model
with its one tool bound, and the loop that runs the calls.

Run against any endpoint:  python examples/frameworks/langchain_weather.py [--responses]
Fuzz it:                   sim fuzz --target examples.frameworks.langchain_weather:run (or :run_responses)
"""

from __future__ import annotations

import sys

from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from openai import OpenAI


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"{city}: sunny"


def run(client: OpenAI, prompt: str, max_turns: int = 6, responses: bool = False) -> str | None:
    """One run through `client` over Chat Completions (a `sim fuzz --target`)."""
    model = ChatOpenAI(
        model="gpt-4o",
        client=client.chat.completions,
        root_client=client,
        base_url=str(client.base_url),
        api_key=client.api_key,
        max_retries=0,
        use_responses_api=responses,
    ).bind_tools([get_weather])
    messages: list[BaseMessage] = [HumanMessage(prompt)]
    for _ in range(max_turns):
        reply = model.invoke(messages)
        messages.append(reply)
        if not reply.tool_calls:
            return reply.text
        for call in reply.tool_calls:
            messages.append(ToolMessage(get_weather.invoke(call["args"]), tool_call_id=call["id"]))
    return None


def run_responses(client: OpenAI, prompt: str) -> str | None:
    """One run through `client` over the Responses API (a `sim fuzz --target`)."""
    return run(client, prompt, responses=True)


if __name__ == "__main__":
    with OpenAI(max_retries=0) as openai_client:
        print(run(openai_client, "What is the weather in Paris?", responses="--responses" in sys.argv))
