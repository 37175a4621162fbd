"""Drive the real agent loop offline: a scripted model asks to run `echo 42` in a real shell.

Run: python examples/offline_echo.py
"""

from __future__ import annotations

import json
import tempfile

from sim import (
    AgentRunner,
    AllowAllApprover,
    AssistantMessage,
    ModelReply,
    RunEvent,
    ScriptedModel,
    ToolCall,
    ToolCallFinished,
    ToolRegistry,
    TurnStarted,
    shell_tool,
)


def show(event: RunEvent) -> None:
    if isinstance(event, TurnStarted):
        print(f"turn {event.turn}: request with {len(event.request.messages)} messages")
    elif isinstance(event, ToolCallFinished):
        print(f"  {event.call.name} {event.call.arguments} -> {event.result.content!r}")


def main() -> None:
    model = ScriptedModel(
        [
            ModelReply(
                message=AssistantMessage(
                    tool_calls=(
                        ToolCall(id="call_1", name="shell", arguments=json.dumps({"command": "echo 42"})),
                    )
                ),
                finish_reason="tool_calls",
            ),
            ModelReply(message=AssistantMessage(content="The command printed 42."), finish_reason="stop"),
        ]
    )
    with tempfile.TemporaryDirectory() as workspace:
        runner = AgentRunner(
            model, ToolRegistry([shell_tool()]), AllowAllApprover(), workspace, observer=show
        )
        result = runner.run_sync("Run `echo 42` and tell me the result.")
    model.assert_complete()
    print(f"final ({result.turns} turns): {result.final_text}")


if __name__ == "__main__":
    main()
