"""sim: record, replay and simulate OpenAI tool-calling agent loops."""

from __future__ import annotations

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
