"""openai-agents' hosted tools (`WebSearchTool`, `FileSearchTool`, `CodeInterpreterTool`, `HostedMCPTool`)
against a scenario that scripts what they return: the agent offers them as the API takes them, reads the
hosted items, sends them back on its next turn, and ends with the scripted answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agents import (
    Agent,
    CodeInterpreterTool,
    FileSearchTool,
    HostedMCPTool,
    Runner,
    WebSearchTool,
    function_tool,
    set_tracing_disabled,
)
from agents.models.openai_responses import OpenAIResponsesModel
from openai import AsyncOpenAI

from sim.core.messages import AssistantMessage, HostedItem
from tests.host.in_process import simulator, talk
from tests.wire.test_hosted_tools import MCP_APPROVAL

set_tracing_disabled(True)  # tracing would send each run to OpenAI's servers


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"{city}: sunny"


HOSTED: dict[str, tuple[Any, str]] = {
    "web search": (
        WebSearchTool(),
        "{type: web_search_call, action: {type: search, query: weather in Paris}}",
    ),
    "file search": (
        FileSearchTool(vector_store_ids=["vs_1"], include_search_results=True),
        "{type: file_search_call, queries: [paris], results: [{file_id: file-1, text: sunny, score: 0.9}]}",
    ),
    "code interpreter": (
        CodeInterpreterTool(tool_config={"type": "code_interpreter", "container": {"type": "auto"}}),
        "{type: code_interpreter_call, code: 'print(42)', outputs: [{type: logs, logs: '42'}]}",
    ),
    "hosted mcp": (
        HostedMCPTool(
            tool_config={
                "type": "mcp",
                "server_label": "wiki",
                "server_url": "https://mcp.example.com",
                "require_approval": "never",
            }
        ),
        "{type: mcp_list_tools, server_label: wiki, tools: [{name: ask}]}, "
        "{type: mcp_call, server_label: wiki, name: ask, arguments: {q: paris}, output: sunny}",
    ),
}


@pytest.mark.parametrize("name", sorted(HOSTED))
def test_an_agent_with_a_hosted_tool_runs_against_the_script(tmp_path: Path, name: str) -> None:
    tool, items = HOSTED[name]
    script = f"""
    prompt: p
    replies:
      - hosted: [{items}]
        tool_calls: [{{name: get_weather, arguments: {{city: Paris}}}}]
      - content: Sunny in Paris.
    """
    sim = simulator(tmp_path, script)

    async def run(client: AsyncOpenAI) -> Any:
        model = OpenAIResponsesModel(model="gpt-4o", openai_client=client)
        agent = Agent(name="weather", instructions="Use your tools.", tools=[tool, get_weather], model=model)
        return await Runner.run(agent, "What is the weather in Paris?")

    result = talk(sim, run)
    assert result.final_output == "Sunny in Paris."
    assert sim.answerer.problems == []
    first, second = sim.answerer.requests
    assert first.tools[0].name == "get_weather"  # the hosted tool is the server's: the loop never calls it
    sent_back = [part.kind for m in second.messages if isinstance(m, AssistantMessage) for part in m.items
                 if isinstance(part, HostedItem)]  # fmt: skip
    assert sent_back and all(
        kind.startswith(("web_search", "file_search", "code_", "mcp_")) for kind in sent_back
    )


def test_an_agent_approves_an_mcp_call_the_script_asks_approval_for(tmp_path: Path) -> None:
    sim = simulator(tmp_path, MCP_APPROVAL)
    asked: list[str] = []

    def approve(request: Any) -> Any:
        asked.append(request.data.name)
        return {"approve": True}

    tool = HostedMCPTool(
        tool_config={"type": "mcp", "server_label": "wiki", "server_url": "https://mcp.example.com",
                     "require_approval": "always"},
        on_approval_request=approve,
    )  # fmt: skip

    async def run(client: AsyncOpenAI) -> Any:
        model = OpenAIResponsesModel(model="gpt-4o", openai_client=client)
        return await Runner.run(Agent(name="wiki", tools=[tool], model=model), "Ask the wiki.")

    result = talk(sim, run)
    assert result.final_output == "Sunny, says the wiki."
    assert asked == ["ask"]
    assert sim.answerer.problems == []
