"""A weather agent on pydantic-ai, over the Responses API or Chat Completions (`--chat`).

Run against any endpoint:  python examples/frameworks/pydantic_ai_weather.py [--chat]
Fuzz it:                   sim fuzz --target examples.frameworks.pydantic_ai_weather:run (or :run_chat)
"""

from __future__ import annotations

import asyncio
import sys

from openai import AsyncOpenAI
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
from pydantic_ai.providers.openai import OpenAIProvider


def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"{city}: sunny"


def weather_agent(client: AsyncOpenAI, chat: bool = False) -> Agent[None, str]:
    """The agent, talking through `client`."""
    provider = OpenAIProvider(openai_client=client)
    model = (
        OpenAIChatModel("gpt-4o", provider=provider)
        if chat
        else OpenAIResponsesModel("gpt-4o", provider=provider)
    )
    return Agent(model, instructions="Answer with the tool's help.", tools=[get_weather])


async def run(client: AsyncOpenAI, prompt: str) -> str:
    """One run over the Responses API (a `sim fuzz --target`)."""
    return (await weather_agent(client).run(prompt)).output


async def run_chat(client: AsyncOpenAI, prompt: str) -> str:
    """One run over Chat Completions (a `sim fuzz --target`)."""
    return (await weather_agent(client, chat=True).run(prompt)).output


async def _main(chat: bool) -> None:
    async with AsyncOpenAI(max_retries=0) as client:
        print(await (run_chat if chat else run)(client, "What is the weather in Paris?"))


if __name__ == "__main__":
    asyncio.run(_main("--chat" in sys.argv))
