from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from sim import (
    AssistantMessage,
    MessageContractError,
    ModelAPIError,
    ModelReply,
    ModelRequest,
    ScenarioError,
    ScriptedApprover,
    ScriptedCommand,
    ScriptedCommandRunner,
    ScriptedModel,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from sim.core.approval import ApprovalRequest
from sim.core.messages import HistoryView
from sim.tools.shell import ShellArguments


def request(*messages: object) -> ModelRequest:
    return ModelRequest(messages=[SystemMessage(content="s"), *messages])  # type: ignore[list-item]


class TestScriptedModel:
    def test_replays_in_order_and_records_requests(self) -> None:
        model = ScriptedModel([ModelReply.final("one"), ModelReply.final("two")])
        first = request(UserMessage(content="a"))
        assert asyncio.run(model.complete(first)).message.content == "one"
        assert model.remaining == 1
        assert asyncio.run(model.complete(request(UserMessage(content="b")))).message.content == "two"
        assert model.requests[0] is first
        model.assert_complete()

    def test_raises_scripted_exceptions(self) -> None:
        model = ScriptedModel([ModelAPIError("Rate limited", status=429)])
        with pytest.raises(ModelAPIError, match="Rate limited"):
            asyncio.run(model.complete(request(UserMessage(content="a"))))

    def test_request_without_a_reply(self) -> None:
        model = ScriptedModel([ModelReply.final("one")])
        asyncio.run(model.complete(request(UserMessage(content="a"))))
        with pytest.raises(ScenarioError) as caught:
            asyncio.run(model.complete(request(UserMessage(content="a"))))
        assert str(caught.value) == "ScriptedModel got request 2 but its script has 1 replies"

    def test_unused_replies(self) -> None:
        model = ScriptedModel([ModelReply.final("one"), ModelReply.final("two")])
        asyncio.run(model.complete(request(UserMessage(content="a"))))
        with pytest.raises(ScenarioError) as caught:
            model.assert_complete()
        assert str(caught.value) == "ScriptedModel has 1 unused of 2 scripted replies"

    def test_rejects_requests_the_real_api_would_reject(self) -> None:
        model = ScriptedModel([ModelReply.final("x")] * 3)
        call = ToolCall(id="c1", name="t", arguments="{}")
        with pytest.raises(MessageContractError, match="missing tool results"):
            asyncio.run(model.complete(request(AssistantMessage(tool_calls=(call,)))))
        with pytest.raises(MessageContractError, match="orphan tool result id: c9"):
            asyncio.run(
                model.complete(request(UserMessage(content="u"), ToolMessage(tool_call_id="c9", content="")))
            )
        asyncio.run(model.complete(request(UserMessage(content="fine"))))

    def test_checks_only_new_messages_of_a_growing_history_and_still_catches_errors(self) -> None:
        model = ScriptedModel([ModelReply.final("x")] * 3)
        system = SystemMessage(content="s")
        history: list = [UserMessage(content="u")]
        asyncio.run(model.complete(ModelRequest(HistoryView(system, history, 1))))
        history.append(AssistantMessage(tool_calls=(ToolCall(id="c1", name="t", arguments="{}"),)))
        history.append(ToolMessage(tool_call_id="c1", content="r"))
        asyncio.run(model.complete(ModelRequest(HistoryView(system, history, 3))))
        history.append(ToolMessage(tool_call_id="c1", content="again"))
        with pytest.raises(MessageContractError, match="unexpected tool result id: c1"):
            asyncio.run(model.complete(ModelRequest(HistoryView(system, history, 4))))


class TestScriptedCommandRunner:
    def run(self, runner: ScriptedCommandRunner, command: str, max_chars: int = 100) -> object:
        return asyncio.run(runner.run(command, cwd=Path("."), timeout=1, max_chars=max_chars))

    def test_answers_each_entry_once_in_any_order(self) -> None:
        runner = ScriptedCommandRunner(
            [ScriptedCommand("b", "B", exit_code=2), ScriptedCommand("a", "A1"), ScriptedCommand("a", "A2")]
        )
        assert [self.run(runner, c).output for c in ["a", "b", "a"]] == ["A1", "B", "A2"]  # type: ignore[attr-defined]
        assert runner.calls == ["a", "b", "a"]
        runner.assert_complete()

    def test_unscripted_command_names_the_command(self) -> None:
        runner = ScriptedCommandRunner([ScriptedCommand("a")])
        self.run(runner, "a")
        with pytest.raises(ScenarioError, match=r"^unscripted command: 'a'$"):
            self.run(runner, "a")

    def test_unused_entries(self) -> None:
        runner = ScriptedCommandRunner([ScriptedCommand("ls"), ScriptedCommand("pwd")])
        self.run(runner, "ls")
        with pytest.raises(ScenarioError, match=r"^scripted commands never run: 'pwd'$"):
            runner.assert_complete()

    def test_applies_the_output_budget_and_timeouts(self) -> None:
        runner = ScriptedCommandRunner(
            [ScriptedCommand("big", "x" * 50), ScriptedCommand("slow", "p", timed_out=True)]
        )
        big = self.run(runner, "big", max_chars=10)
        assert (big.output, big.truncated) == ("x" * 10, True)  # type: ignore[attr-defined]
        slow = self.run(runner, "slow")
        assert (slow.timed_out, slow.exit_code) == (True, None)  # type: ignore[attr-defined]


class TestScriptedApprover:
    def ask(self, approver: ScriptedApprover) -> object:
        call = ToolCall(id="c1", name="shell", arguments="{}")
        return asyncio.run(approver.approve(ApprovalRequest(call, "execute", ShellArguments(command="ls"))))

    def test_answers_in_order(self) -> None:
        approver = ScriptedApprover([True, False])
        assert self.ask(approver).allowed is True  # type: ignore[attr-defined]
        denied = self.ask(approver)
        assert denied.allowed is False and denied.reason  # type: ignore[attr-defined]
        approver.assert_complete()

    def test_running_out_and_leftovers(self) -> None:
        approver = ScriptedApprover([True, True])
        self.ask(approver)
        with pytest.raises(ScenarioError, match="never used"):
            approver.assert_complete()
        self.ask(approver)
        with pytest.raises(ScenarioError, match=r"approval request 3 .* has no scripted answer"):
            self.ask(approver)
