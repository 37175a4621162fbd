"""Agents on openai-agents that offer a hosted tool, for `sim fuzz --target` to judge: the agent reads the
hosted items the api profile draws (a web search cited in the text, beside function calls) as the live API
sends them. Each takes `(client, prompt)`."""

from __future__ import annotations

from agents import Agent, Runner, WebSearchTool, function_tool, set_tracing_disabled
from agents.models.openai_responses import OpenAIResponsesModel
from openai import AsyncOpenAI

set_tracing_disabled(True)  # tracing would send each run to OpenAI's servers

AGENTS_ALLOW = ("ModelBehaviorError", "ModelRefusalError")
"""What openai-agents documents it raises on a reply the API can send (arguments that are not JSON, a
refusal)."""


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"{city}: sunny"


async def agents_search_the_web(client: AsyncOpenAI, prompt: str) -> str:
    """openai-agents over the Responses API with `WebSearchTool` beside a function tool."""
    model = OpenAIResponsesModel(model="gpt-4o", openai_client=client)
    agent = Agent(
        name="weather", instructions="Use your tools.", tools=[WebSearchTool(), get_weather], model=model
    )
    return str((await Runner.run(agent, prompt)).final_output)
