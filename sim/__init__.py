"""sim: record, replay and simulate OpenAI tool-calling agent loops.

Each public name is loaded from its module when first used, so that what imports the package first and
uses none of them (the `sim` command line, the pytest plugin) starts without the core.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sim.core.approval import (
        AllowAllApprover,
        ApprovalDecision,
        ApprovalRequest,
        Approver,
        DenyAllApprover,
        TerminalApprover,
    )
    from sim.core.commands import CommandOutput, CommandRunner
    from sim.core.errors import (
        AgentError,
        AgentLimitError,
        AgentRunError,
        CassetteError,
        ConfigurationError,
        IncompleteModelReplyError,
        MessageContractError,
        ModelAPIError,
        ScenarioError,
    )
    from sim.core.events import (
        ModelReplied,
        RunEnded,
        RunEvent,
        RunObserver,
        ToolCallApproved,
        ToolCallFinished,
        ToolCallPrepared,
        TurnStarted,
    )
    from sim.core.loop import DEFAULT_SYSTEM_PROMPT, AgentRunner, RunEnding, RunResult
    from sim.core.messages import (
        AssistantMessage,
        ChatMessage,
        Reasoning,
        SystemMessage,
        TextItem,
        ToolCall,
        ToolMessage,
        UserMessage,
        validate_pairing,
    )
    from sim.core.model import FinishReason, ModelClient, ModelReply, ModelRequest, ToolSpec, Usage
    from sim.core.scripted import (
        ScriptedApprover,
        ScriptedCommand,
        ScriptedCommandRunner,
        ScriptedHandlerFailure,
        ScriptedModel,
        ScriptedToolResults,
    )
    from sim.core.tools import ToolContext, ToolDefinition, ToolRegistry, ToolResult, ToolSnapshot
    from sim.tools.shell import shell_tool
    from sim.tools.subprocess_runner import SubprocessRunner

__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "AgentError",
    "AgentLimitError",
    "AgentRunError",
    "AgentRunner",
    "AllowAllApprover",
    "ApprovalDecision",
    "ApprovalRequest",
    "Approver",
    "AssistantMessage",
    "CassetteError",
    "ChatMessage",
    "CommandOutput",
    "CommandRunner",
    "ConfigurationError",
    "DenyAllApprover",
    "FinishReason",
    "IncompleteModelReplyError",
    "MessageContractError",
    "ModelAPIError",
    "ModelClient",
    "ModelReplied",
    "ModelReply",
    "ModelRequest",
    "Reasoning",
    "RunEnded",
    "RunEnding",
    "RunEvent",
    "RunObserver",
    "RunResult",
    "ScenarioError",
    "ScriptedApprover",
    "ScriptedCommand",
    "ScriptedCommandRunner",
    "ScriptedHandlerFailure",
    "ScriptedModel",
    "ScriptedToolResults",
    "SubprocessRunner",
    "SystemMessage",
    "TerminalApprover",
    "TextItem",
    "ToolCall",
    "ToolCallApproved",
    "ToolCallFinished",
    "ToolCallPrepared",
    "ToolContext",
    "ToolDefinition",
    "ToolMessage",
    "ToolRegistry",
    "ToolResult",
    "ToolSnapshot",
    "ToolSpec",
    "TurnStarted",
    "Usage",
    "UserMessage",
    "shell_tool",
    "validate_pairing",
]

_HOMES = (
    "sim.core.approval",
    "sim.core.commands",
    "sim.core.errors",
    "sim.core.events",
    "sim.core.loop",
    "sim.core.messages",
    "sim.core.model",
    "sim.core.scripted",
    "sim.core.tools",
    "sim.tools.shell",
    "sim.tools.subprocess_runner",
)
"""The modules the public names come from."""


def __getattr__(name: str) -> Any:
    """A public name, loaded from its module on first use (then kept here)."""
    if name in __all__:
        for home in _HOMES:
            module = import_module(home)
            if hasattr(module, name):
                value = globals()[name] = getattr(module, name)
                return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
