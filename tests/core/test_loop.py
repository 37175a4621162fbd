from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from sim import (
    DEFAULT_SYSTEM_PROMPT,
    AgentError,
    AgentLimitError,
    AgentRunError,
    AgentRunner,
    AllowAllApprover,
    ApprovalDecision,
    ApprovalRequest,
    AssistantMessage,
    ConfigurationError,
    DenyAllApprover,
    IncompleteModelReplyError,
    MessageContractError,
    ModelAPIError,
    ModelReplied,
    ModelReply,
    RunEnded,
    RunEvent,
    ScenarioError,
    ScriptedApprover,
    ScriptedModel,
    SystemMessage,
    ToolCall,
    ToolCallApproved,
    ToolCallFinished,
    ToolCallPrepared,
    ToolContext,
    ToolDefinition,
    ToolMessage,
    ToolRegistry,
    ToolResult,
    TurnStarted,
    UserMessage,
    shell_tool,
    validate_pairing,
)
from tests.scripts import call, reply, shell_call


class Note(BaseModel):
    text: str


def note_tool(seen: list[str], name: str = "note") -> ToolDefinition:
    def handler(args: Note, ctx: ToolContext) -> ToolResult:
        seen.append(args.text)
        return ToolResult.ok(f"noted {args.text}")

    return ToolDefinition(name, "Writes a note.", Note, "write", handler)


def runner_for(
    script: list[ModelReply | Exception], *tools: ToolDefinition, approver: Any = None, **options: Any
) -> tuple[AgentRunner, ScriptedModel]:
    model = ScriptedModel(script)
    runner = AgentRunner(model, ToolRegistry(list(tools)), approver or AllowAllApprover(), **options)
    return runner, model


def roles(request_messages: Any) -> list[str]:
    return [message.role for message in request_messages]


class TestConfiguration:
    @pytest.mark.parametrize("value", [0, -1, True, 1.5, "3"])
    def test_max_turns_must_be_a_positive_integer(self, value: Any) -> None:
        with pytest.raises(ConfigurationError, match=r"^max_turns must be a positive integer$"):
            runner_for([], max_turns=value)

    def test_system_prompt_must_not_be_empty(self) -> None:
        with pytest.raises(ConfigurationError):
            runner_for([], system_prompt="  ")

    def test_defaults(self) -> None:
        runner, _ = runner_for([])
        assert runner.max_turns == 20
        assert DEFAULT_SYSTEM_PROMPT == (
            "You are a coding agent. Use tools when needed, inspect their results, and answer accurately."
        )
        assert runner.system == SystemMessage(content=DEFAULT_SYSTEM_PROMPT)


class TestHappyPath:
    def test_echo_42_through_a_real_shell(self, tmp_path: Path) -> None:
        runner, model = runner_for(
            [reply(shell_call("call_1", "echo 42")), ModelReply.final("The command printed 42.")],
            shell_tool(),
            workspace=tmp_path,
        )
        result = runner.run_sync("Run `echo 42` and tell me the result.")

        assert result.final_text == "The command printed 42."
        assert result.turns == 2
        assert len(model.requests) == 2
        first, second = model.requests
        assert roles(first.messages) == ["system", "user"]
        assert roles(second.messages) == ["system", "user", "assistant", "tool"]
        assert second.messages[-1] == ToolMessage(tool_call_id="call_1", content="42")
        assert [spec.name for spec in first.tools] == ["shell"]
        model.assert_complete()

    def test_system_prompt_is_sent_first_and_not_stored(self) -> None:
        runner, model = runner_for([ModelReply.final("a")], system_prompt="Be brief.")
        result = runner.run_sync("hi")
        assert model.requests[0].messages[0] == SystemMessage(content="Be brief.")
        assert all(message.role != "system" for message in result.history)
        assert result.history == (UserMessage(content="hi"), AssistantMessage(content="a"))

    def test_history_persists_across_runs(self) -> None:
        runner, model = runner_for([ModelReply.final("one"), ModelReply.final("two")])
        runner.run_sync("first")
        result = runner.run_sync("second")
        assert result.turns == 1
        assert roles(model.requests[1].messages) == ["system", "user", "assistant", "user"]
        assert [m.content for m in result.history] == ["first", "one", "second", "two"]

    def test_empty_text_is_a_final_answer(self) -> None:
        runner, _ = runner_for([ModelReply.final("")])
        assert runner.run_sync("hi").final_text == ""

    def test_tool_calls_decide_the_follow_up_not_the_finish_reason(self) -> None:
        seen: list[str] = []
        calls_with_stop = ModelReply(
            message=AssistantMessage(tool_calls=(call("c1", "note", {"text": "x"}),)), finish_reason="stop"
        )
        runner, _ = runner_for([calls_with_stop, ModelReply.final("done")], note_tool(seen))
        assert runner.run_sync("go").final_text == "done"
        assert seen == ["x"]
        text_with_tool_calls_reason = ModelReply(
            message=AssistantMessage(content="final"), finish_reason="tool_calls"
        )
        runner, _ = runner_for([text_with_tool_calls_reason])
        assert runner.run_sync("go").final_text == "final"


class TestStops:
    def test_length_raises_before_storing_the_reply(self) -> None:
        cut = ModelReply(message=AssistantMessage(content="partial"), finish_reason="length")
        runner, _ = runner_for([cut])
        with pytest.raises(IncompleteModelReplyError) as caught:
            runner.run_sync("hi")
        assert str(caught.value) == "Model output reached the token limit"
        assert caught.value.history == (UserMessage(content="hi"),)
        assert caught.value.turns == 1
        assert runner.history == (UserMessage(content="hi"),)

    def test_content_filter(self) -> None:
        blocked = ModelReply(message=AssistantMessage(content=None), finish_reason="content_filter")
        runner, _ = runner_for([blocked])
        with pytest.raises(AgentRunError) as caught:
            runner.run_sync("hi")
        assert type(caught.value) is AgentRunError
        assert str(caught.value) == "Model response was blocked by the content filter"
        assert caught.value.history == (UserMessage(content="hi"),)

    def test_null_content_without_calls_is_stored_then_raises(self) -> None:
        runner, _ = runner_for([ModelReply.final(None)])
        with pytest.raises(AgentRunError) as caught:
            runner.run_sync("hi")
        assert str(caught.value) == "Model stopped without final text or tool calls"
        assert caught.value.history[-1] == AssistantMessage(content=None)
        assert caught.value.turns == 1

    @pytest.mark.parametrize("limit", [1, 3])
    def test_limit_after_exactly_n_requests_with_history_paired(self, limit: int) -> None:
        seen: list[str] = []
        script: list[ModelReply | Exception] = [
            reply(call(f"c{i}", "note", {"text": str(i)})) for i in range(limit)
        ]
        runner, model = runner_for(script, note_tool(seen), max_turns=limit)
        with pytest.raises(AgentLimitError) as caught:
            runner.run_sync("loop")
        assert str(caught.value) == f"Agent exceeded max_turns={limit}"
        assert len(model.requests) == limit
        assert caught.value.turns == limit
        validate_pairing(caught.value.history)
        assert caught.value.history[-1] == ToolMessage(
            tool_call_id=f"c{limit - 1}", content=f"noted {limit - 1}"
        )
        model.assert_complete()

    def test_model_api_error_carries_the_history(self) -> None:
        seen: list[str] = []
        runner, _ = runner_for(
            [reply(call("c1", "note", {"text": "a"})), ModelAPIError("Rate limited", status=429)],
            note_tool(seen),
        )
        with pytest.raises(ModelAPIError) as caught:
            runner.run_sync("go")
        assert caught.value.status == 429
        assert caught.value.turns == 2
        assert roles(caught.value.history) == ["user", "assistant", "tool"]

    def test_unexpected_model_exception_is_wrapped_with_the_history(self) -> None:
        runner, _ = runner_for([ValueError("boom")])
        with pytest.raises(AgentRunError) as caught:
            runner.run_sync("go")
        assert str(caught.value) == "Run failed: ValueError: boom"
        assert isinstance(caught.value.__cause__, ValueError)
        assert caught.value.history == (UserMessage(content="go"),)
        assert caught.value.turns == 1

    def test_duplicate_call_ids_are_rejected_before_any_tool_runs(self) -> None:
        seen: list[str] = []
        duplicated = reply(call("same", "note", {"text": "a"}), call("same", "note", {"text": "b"}))
        runner, _ = runner_for([duplicated], note_tool(seen))
        with pytest.raises(MessageContractError, match="must be unique") as caught:
            runner.run_sync("go")
        assert seen == []
        assert caught.value.history == (UserMessage(content="go"),)


class TestToolCalls:
    def test_every_call_gets_exactly_one_result_in_order_failures_included(self) -> None:
        seen: list[str] = []
        batch = reply(
            call("c1", "note", {"text": "a"}),
            call("c2", "missing", {}),
            call("c3", "note", "{"),
            call("c4", "note", "[]"),
            call("c5", "note", {"text": 1}),
            call("c6", "note", {"text": "b"}),
        )
        runner, model = runner_for([batch, ModelReply.final("ok")], note_tool(seen))
        runner.run_sync("go")
        tool_messages = [m for m in model.requests[1].messages if isinstance(m, ToolMessage)]
        assert [m.tool_call_id for m in tool_messages] == ["c1", "c2", "c3", "c4", "c5", "c6"]
        contents = [m.content for m in tool_messages]
        assert contents[0] == "noted a"
        assert contents[1] == "Error [unknown_tool]: Unknown tool: missing"
        assert contents[2] == "Error [invalid_json]: Tool arguments must be valid JSON"
        assert contents[3] == "Error [invalid_arguments]: Tool arguments must be a JSON object"
        assert contents[4].startswith("Error [invalid_arguments]: Tool arguments failed schema validation")
        assert contents[5] == "noted b"
        assert seen == ["a", "b"]

    @pytest.mark.parametrize(
        "bad_call",
        [
            call("c", "missing", {"text": "x"}),
            call("c", "note", "not json"),
            call("c", "note", "null"),
            call("c", "note", {"text": ["x"]}),
        ],
        ids=["unknown tool", "bad json", "non-object", "schema violation"],
    )
    def test_validation_happens_before_approval_and_handler(self, bad_call: ToolCall) -> None:
        seen: list[str] = []
        approver = ScriptedApprover([])  # strict: any approval request raises
        runner, _ = runner_for([reply(bad_call), ModelReply.final("ok")], note_tool(seen), approver=approver)
        runner.run_sync("go")
        assert approver.requests == []
        assert seen == []

    def test_denied_call_never_runs_and_reads_the_reason(self) -> None:
        seen: list[str] = []
        runner, model = runner_for(
            [reply(call("c1", "note", {"text": "a"})), ModelReply.final("ok")],
            note_tool(seen),
            approver=DenyAllApprover("Not on Fridays"),
        )
        runner.run_sync("go")
        assert seen == []
        assert model.requests[1].messages[-1].content == "Error [permission_denied]: Not on Fridays"

    @pytest.mark.parametrize("how", ["raises", "blank reason", "not a decision"])
    def test_failing_approver_fails_closed(self, how: str) -> None:
        class Broken:
            async def approve(self, request: ApprovalRequest) -> Any:
                if how == "raises":
                    raise RuntimeError("approver crashed")
                if how == "blank reason":
                    return ApprovalDecision(False, "   ")
                return "yes"

        seen: list[str] = []
        runner, model = runner_for(
            [reply(call("c1", "note", {"text": "a"})), ModelReply.final("ok")],
            note_tool(seen),
            approver=Broken(),
        )
        runner.run_sync("go")
        assert seen == []
        assert (
            model.requests[1].messages[-1].content == "Error [permission_denied]: Tool approval failed closed"
        )

    def test_approver_sees_the_validated_call(self) -> None:
        approver = ScriptedApprover([True])
        runner, _ = runner_for(
            [reply(call("c1", "note", {"text": "a"})), ModelReply.final("ok")],
            note_tool([]),
            approver=approver,
        )
        runner.run_sync("go")
        (request,) = approver.requests
        assert request.call.id == "c1"
        assert request.effect == "write"
        assert request.arguments == {"text": "a"}
        assert "note" in request.reason

    def test_strict_fake_running_out_stops_the_run_instead_of_denying(self) -> None:
        runner, _ = runner_for(
            [reply(call("c1", "note", {"text": "a"})), ModelReply.final("ok")],
            note_tool([]),
            approver=ScriptedApprover([]),
        )
        with pytest.raises(ScenarioError, match="no scripted answer") as caught:
            runner.run_sync("go")
        assert caught.value.turns == 1
        assert roles(caught.value.history) == ["user", "assistant"]

    def test_each_turn_uses_a_frozen_snapshot(self) -> None:
        registry = ToolRegistry()
        seen: list[str] = []

        def install(args: Note, ctx: ToolContext) -> ToolResult:
            registry.register(note_tool(seen, name=args.text))
            return ToolResult.ok("installed")

        registry.register(ToolDefinition("install", "Installs a tool.", Note, "write", install))
        model = ScriptedModel(
            [
                reply(call("c1", "install", {"text": "late"}), call("c2", "late", {"text": "too soon"})),
                reply(call("c3", "late", {"text": "now"})),
                ModelReply.final("ok"),
            ]
        )
        AgentRunner(model, registry, AllowAllApprover()).run_sync("go")
        first, second, _ = model.requests
        assert [s.name for s in first.tools] == ["install"]
        assert [s.name for s in second.tools] == ["install", "late"]
        assert second.messages[-1].content == "Error [unknown_tool]: Unknown tool: late"
        assert seen == ["now"]

    def test_a_turns_calls_run_against_the_snapshot_its_model_saw(self) -> None:
        """The schema the model sees and the tools its calls run on are one frozen set, even when the
        registry changes while the request is in flight."""
        registry = ToolRegistry()
        ran: list[str] = []

        def tool(name: str, label: str) -> ToolDefinition:
            def handler(args: Note, ctx: ToolContext) -> ToolResult:
                ran.append(f"{label}:{args.text}")
                return ToolResult.ok(label)

            return ToolDefinition(name, f"The {label} tool.", Note, "write", handler)

        registry.register(tool("note", "old note"))
        registry.register(tool("gone", "gone"))
        script = ScriptedModel(
            [
                reply(call("c1", "note", {"text": "a"}), call("c2", "gone", {"text": "b"}),
                      call("c3", "late", {"text": "c"})),
                reply(call("c4", "note", {"text": "d"}), call("c5", "gone", {"text": "e"})),
                ModelReply.final("ok"),
            ]
        )  # fmt: skip

        class Mutating:
            """A model client that changes the registry while its first request is in flight."""

            async def complete(self, request: Any) -> ModelReply:
                if not script.requests:
                    registry.register(tool("late", "late"))
                    registry.replace(tool("note", "new note"))
                    registry.remove("gone")
                return await script.complete(request)

        AgentRunner(Mutating(), registry, AllowAllApprover()).run_sync("go")
        first, second, _ = script.requests
        assert [s.name for s in first.tools] == ["note", "gone"]
        assert [s.name for s in second.tools] == ["note", "late"]
        assert ran == ["old note:a", "gone:b", "new note:d"]
        results = [m.content for m in second.messages if isinstance(m, ToolMessage)]
        assert results == ["old note", "gone", "Error [unknown_tool]: Unknown tool: late"]
        assert script.requests[2].messages[-1].content == "Error [unknown_tool]: Unknown tool: gone"

    def test_replacing_or_removing_an_unknown_tool_is_refused(self) -> None:
        registry = ToolRegistry()
        with pytest.raises(ConfigurationError, match="tool not registered: note"):
            registry.replace(note_tool([]))
        with pytest.raises(ConfigurationError, match="tool not registered: note"):
            registry.remove("note")


class TestEvents:
    def test_observer_sees_the_run_as_it_happens(self) -> None:
        events: list[RunEvent] = []
        runner, _ = runner_for(
            [reply(call("c1", "note", {"text": "a"}), call("c2", "nope", {})), ModelReply.final("ok")],
            note_tool([]),
            observer=events.append,
        )
        runner.run_sync("go")
        kinds = [type(event).__name__ for event in events]
        assert kinds == [
            "TurnStarted",
            "ModelReplied",
            "ToolCallPrepared",
            "ToolCallApproved",
            "ToolCallFinished",
            "ToolCallPrepared",
            "ToolCallFinished",
            "TurnStarted",
            "ModelReplied",
            "RunEnded",
        ]
        assert isinstance(events[0], TurnStarted) and events[0].turn == 1
        assert isinstance(events[1], ModelReplied)
        assert isinstance(events[2], ToolCallPrepared) and events[2].error is None
        assert isinstance(events[3], ToolCallApproved) and events[3].decision.allowed
        assert isinstance(events[4], ToolCallFinished) and events[4].result.content == "noted a"
        assert isinstance(events[5], ToolCallPrepared) and events[5].error is not None
        assert isinstance(events[-1], RunEnded) and events[-1].result is not None
        assert events[-1].result.final_text == "ok"

    def test_a_run_observer_sees_that_run_first_beside_the_runner_observer(self) -> None:
        seen: list[tuple[str, str]] = []
        runner, _ = runner_for(
            [ModelReply.final("one"), ModelReply.final("two")],
            observer=lambda event: seen.append(("runner", type(event).__name__)),
        )
        ending = asyncio.run(
            runner.run_to_end("go", observer=lambda event: seen.append(("run", type(event).__name__)))
        )
        assert ending.final_text == "one"
        assert seen == [
            ("run", "TurnStarted"), ("runner", "TurnStarted"), ("run", "ModelReplied"),
            ("runner", "ModelReplied"), ("run", "RunEnded"), ("runner", "RunEnded"),
        ]  # fmt: skip
        seen.clear()
        runner.run_sync("again")  # the run's observer was for that run only
        assert seen == [("runner", "TurnStarted"), ("runner", "ModelReplied"), ("runner", "RunEnded")]

    def test_a_run_observer_alone_sees_the_run(self) -> None:
        events: list[RunEvent] = []
        runner, _ = runner_for([ModelReply.final("ok")])
        asyncio.run(runner.run("go", observer=events.append))
        assert [type(event).__name__ for event in events] == ["TurnStarted", "ModelReplied", "RunEnded"]

    def test_run_ended_reports_the_error(self) -> None:
        events: list[RunEvent] = []
        runner, _ = runner_for([ModelReply.final(None)], observer=events.append)
        with pytest.raises(AgentError) as caught:
            runner.run_sync("go")
        assert isinstance(events[-1], RunEnded)
        assert events[-1].error is caught.value


def test_run_is_a_coroutine_usable_inside_an_event_loop() -> None:
    runner, _ = runner_for([ModelReply.final("async ok")])

    async def main() -> str:
        return (await runner.run("hi")).final_text

    assert asyncio.run(main()) == "async ok"


def test_run_to_end_returns_the_error_instead_of_raising() -> None:
    runner, _ = runner_for([ModelReply.final("done")])
    ending = asyncio.run(runner.run_to_end("go"))
    assert (ending.outcome, ending.final_text, ending.turns, ending.error) == ("completed", "done", 1, None)
    assert ending.history == (UserMessage(content="go"), AssistantMessage(content="done"))
    runner, _ = runner_for([ModelReply.final(None)])
    ending = asyncio.run(runner.run_to_end("go"))
    assert ending.result is None
    assert (ending.outcome, ending.final_text, ending.turns) == ("no_final_text", None, 1)
    assert isinstance(ending.error, AgentRunError)
    assert ending.history == (UserMessage(content="go"), AssistantMessage(content=None))
