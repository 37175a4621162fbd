"""A weather agent on pydantic-ai, over the Responses API.

Run against any endpoint:  python examples/frameworks/pydantic_ai_weather.py
Fuzz it:                   sim fuzz --target examples.frameworks.pydantic_ai_weather:run
"""

from __future__ import annotations

import asyncio

from openai import AsyncOpenAI
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIResponsesModel
from pydantic_ai.providers.openai import OpenAIProvider


def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"{city}: sunny"


def weather_agent(client: AsyncOpenAI) -> Agent[None, str]:
    """The agent, talking through `client`."""
    model = OpenAIResponsesModel("gpt-4o", provider=OpenAIProvider(openai_client=client))
    return Agent(model, instructions="Answer with the tool's help.", tools=[get_weather])


async def run(client: AsyncOpenAI, prompt: str) -> str:
    """One run (a `sim fuzz --target`)."""
    return (await weather_agent(client).run(prompt)).output


async def _main() -> None:
    async with AsyncOpenAI(max_retries=0) as client:
        print(await run(client, "What is the weather in Paris?"))


if __name__ == "__main__":
    asyncio.run(_main())
