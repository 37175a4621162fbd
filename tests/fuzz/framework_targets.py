"""Agents on the frameworks our users build on, asking for structured output (`output_type`), for
`sim fuzz --target` to judge: careful ones that let the API enforce the format (a strict JSON schema), and
a broken twin of each that trusts text the API never promised to be JSON. Each takes `(client, prompt)`."""

from __future__ import annotations

import json

from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.models.openai_chatcompletions import OpenAIChatCompletionsModel
from agents.models.openai_responses import OpenAIResponsesModel
from openai import AsyncOpenAI
from pydantic import BaseModel
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai import NativeOutput
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.models.openai import OpenAIResponsesModel as PydanticResponsesModel
from pydantic_ai.providers.openai import OpenAIProvider

set_tracing_disabled(True)  # tracing would send each run to OpenAI's servers

AGENTS_ALLOW = ("ModelBehaviorError", "ModelRefusalError")
"""What openai-agents documents it raises on a reply the API can send (a cut, a filter, a refusal)."""
PYDANTIC_AI_ALLOW = ("UnexpectedModelBehavior", "ContentFilterError")
"""What pydantic-ai documents it raises on such a reply."""


class Forecast(BaseModel):
    """The structured answer every agent here asks for."""

    city: str
    sunny: bool


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"{city}: sunny"


def _weather(city: str) -> str:
    """The weather in a city."""
    return f"{city}: sunny"


def _agent(client: AsyncOpenAI, output_type: type, *, chat: bool) -> Agent:
    model = (
        OpenAIChatCompletionsModel(model="gpt-4o", openai_client=client)
        if chat
        else OpenAIResponsesModel(model="gpt-4o", openai_client=client)
    )
    return Agent(name="forecast", instructions="Answer with the tool's help.", tools=[get_weather],
                 model=model, output_type=output_type)  # fmt: skip


async def agents_forecast(client: AsyncOpenAI, prompt: str) -> str:
    """openai-agents over the Responses API, `output_type` a model: sent as a strict `text.format`."""
    output = (await Runner.run(_agent(client, Forecast, chat=False), prompt)).final_output
    return f"{output.city}: {output.sunny}"


async def agents_forecast_chat(client: AsyncOpenAI, prompt: str) -> str:
    """The same over Chat Completions: a strict `response_format`."""
    output = (await Runner.run(_agent(client, Forecast, chat=True), prompt)).final_output
    return f"{output.city}: {output.sunny}"


async def agents_trusts_prompted_json(client: AsyncOpenAI, prompt: str) -> str:
    """Broken: asks for plain text, says "answer in JSON" in its prompt, and parses the text as JSON (the
    API never promised that it is)."""
    output = (await Runner.run(_agent(client, str, chat=False), prompt + " Answer in JSON.")).final_output
    forecast = json.loads(output)
    return f"{forecast['city']}: {forecast['sunny']}"


def _pydantic_agent(client: AsyncOpenAI, *, chat: bool) -> PydanticAgent[None, Forecast]:
    provider = OpenAIProvider(openai_client=client)
    model = (
        OpenAIChatModel("gpt-4o", provider=provider)
        if chat
        else PydanticResponsesModel("gpt-4o", provider=provider)
    )
    return PydanticAgent(model, instructions="Answer with the tool's help.", tools=[_weather],
                         output_type=NativeOutput(Forecast, strict=True))  # fmt: skip


async def pydantic_ai_forecast(client: AsyncOpenAI, prompt: str) -> str:
    """pydantic-ai over Chat Completions, `output_type=NativeOutput(..., strict=True)`: a strict
    `response_format`."""
    output = (await _pydantic_agent(client, chat=True).run(prompt)).output
    return f"{output.city}: {output.sunny}"


async def pydantic_ai_forecast_responses(client: AsyncOpenAI, prompt: str) -> str:
    """The same over the Responses API: a strict `text.format`."""
    output = (await _pydantic_agent(client, chat=False).run(prompt)).output
    return f"{output.city}: {output.sunny}"


async def pydantic_ai_trusts_prompted_json(client: AsyncOpenAI, prompt: str) -> str:
    """Broken: plain text output, parsed as JSON because the prompt asked for JSON."""
    provider = OpenAIProvider(openai_client=client)
    agent = PydanticAgent(OpenAIChatModel("gpt-4o", provider=provider), tools=[_weather])
    forecast = json.loads((await agent.run(prompt + " Answer in JSON.")).output)
    return f"{forecast['city']}: {forecast['sunny']}"
