"""A weather agent on openai-agents, over the Responses API (its default) or Chat Completions (`--chat`).

Run against any endpoint:  python examples/frameworks/agents_weather.py [--chat]
Fuzz it:                   sim fuzz --target examples.frameworks.agents_weather:run
"""

from __future__ import annotations

import asyncio
import sys

from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.models.openai_chatcompletions import OpenAIChatCompletionsModel
from agents.models.openai_responses import OpenAIResponsesModel
from openai import AsyncOpenAI

set_tracing_disabled(True)  # tracing would send each run to OpenAI's servers


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"{city}: sunny"


def weather_agent(client: AsyncOpenAI, chat: bool = False) -> Agent:
    """The agent, talking through `client`."""
    model = (
        OpenAIChatCompletionsModel(model="gpt-4o", openai_client=client)
        if chat
        else OpenAIResponsesModel(model="gpt-4o", openai_client=client)
    )
    return Agent(
        name="weather", instructions="Answer with the tool's help.", tools=[get_weather], model=model
    )


async def run(client: AsyncOpenAI, prompt: str) -> str:
    """One run over the Responses API (a `sim fuzz --target`)."""
    return str((await Runner.run(weather_agent(client), prompt)).final_output)


async def run_chat(client: AsyncOpenAI, prompt: str) -> str:
    """One run over Chat Completions (a `sim fuzz --target`)."""
    return str((await Runner.run(weather_agent(client, chat=True), prompt)).final_output)


async def _main(chat: bool) -> None:
    async with AsyncOpenAI(max_retries=0) as client:
        print(await (run_chat if chat else run)(client, "What is the weather in Paris?"))


if __name__ == "__main__":
    asyncio.run(_main("--chat" in sys.argv))
