from __future__ import annotations

import pytest
from pydantic import ValidationError

from sim import (
    AssistantMessage,
    MessageContractError,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
    validate_pairing,
)
from sim.core.messages import CHAT_MESSAGES, HistoryView, PairingChecker


def calls(*ids: str) -> AssistantMessage:
    return AssistantMessage(tool_calls=tuple(ToolCall(id=i, name="shell", arguments="{}") for i in ids))


def result(call_id: str) -> ToolMessage:
    return ToolMessage(tool_call_id=call_id, content="ok")


class TestMessageKinds:
    def test_four_roles_round_trip_through_the_union(self) -> None:
        messages = [
            SystemMessage(content="s"),
            UserMessage(content="u"),
            AssistantMessage(content=None, tool_calls=(ToolCall(id="a", name="t", arguments=""),)),
            ToolMessage(tool_call_id="a", content=""),
        ]
        dumped = CHAT_MESSAGES.dump_python(messages)
        assert [m["role"] for m in dumped] == ["system", "user", "assistant", "tool"]
        assert CHAT_MESSAGES.validate_python(dumped) == messages

    def test_assistant_content_may_be_null_and_tool_calls_empty(self) -> None:
        message = AssistantMessage()
        assert message.content is None
        assert message.tool_calls == ()

    def test_empty_content_and_arguments_are_allowed(self) -> None:
        assert ToolCall(id="a", name="t", arguments="").arguments == ""
        assert ToolMessage(tool_call_id="a", content="").content == ""
        assert AssistantMessage(content="").content == ""

    @pytest.mark.parametrize(
        "build",
        [
            lambda: ToolCall(id="", name="t", arguments="{}"),
            lambda: ToolCall(id="a", name="", arguments="{}"),
            lambda: ToolMessage(tool_call_id="", content="x"),
        ],
        ids=["call id", "tool name", "tool_call_id"],
    )
    def test_ids_and_names_must_be_non_empty(self, build: object) -> None:
        with pytest.raises(ValidationError):
            build()  # type: ignore[operator]

    def test_messages_are_immutable(self) -> None:
        message = UserMessage(content="hi")
        with pytest.raises(ValidationError):
            message.content = "changed"  # type: ignore[misc]
        assistant = calls("a")
        assert isinstance(assistant.tool_calls, tuple)


class TestValidatePairing:
    def test_results_may_come_in_any_order(self) -> None:
        validate_pairing([UserMessage(content="u"), calls("a", "b"), result("b"), result("a")])

    def test_conversation_without_tools_is_paired(self) -> None:
        validate_pairing([UserMessage(content="u"), AssistantMessage(content="x")])

    def test_duplicate_call_ids(self) -> None:
        with pytest.raises(MessageContractError, match=r"^assistant tool call ids must be unique$"):
            validate_pairing([calls("a", "a")])

    def test_missing_results_are_listed_sorted(self) -> None:
        with pytest.raises(MessageContractError) as caught:
            validate_pairing([calls("b", "c", "a"), result("c")])
        assert str(caught.value) == 'missing tool results for ids: ["a","b"]'

    def test_results_must_come_before_the_next_assistant_message(self) -> None:
        with pytest.raises(MessageContractError, match=r'^missing tool results for ids: \["a"\]$'):
            validate_pairing([calls("a"), AssistantMessage(content="x"), result("a")])

    def test_second_result_for_the_same_id_is_unexpected(self) -> None:
        with pytest.raises(MessageContractError, match=r"^unexpected tool result id: a$"):
            validate_pairing([calls("a", "b"), result("a"), result("a")])

    def test_result_without_any_call_is_an_orphan(self) -> None:
        with pytest.raises(MessageContractError, match=r"^orphan tool result id: x$"):
            validate_pairing([UserMessage(content="u"), result("x")])
        with pytest.raises(MessageContractError, match=r"^orphan tool result id: b$"):
            validate_pairing([calls("a"), result("a"), UserMessage(content="u"), result("b")])

    def test_result_for_an_id_the_last_assistant_did_not_call(self) -> None:
        with pytest.raises(MessageContractError, match=r"^orphan tool result id: z$"):
            validate_pairing([calls("a"), result("z")])

    def test_checker_is_incremental(self) -> None:
        checker = PairingChecker()
        checker.check(calls("a"))
        with pytest.raises(MessageContractError):
            checker.require_complete()
        checker.check(result("a"))
        checker.require_complete()


class TestHistoryView:
    def test_prepends_the_system_message_without_copying(self) -> None:
        system = SystemMessage(content="s")
        history: list = [UserMessage(content="u")]
        view = HistoryView(system, history, 1)
        history.append(AssistantMessage(content="later"))
        assert list(view) == [system, UserMessage(content="u")]
        assert len(view) == 2
        assert view[-1] == UserMessage(content="u")
        assert view[1:] == [UserMessage(content="u")]
        with pytest.raises(IndexError):
            view[2]

    def test_new_since_gives_only_the_appended_messages(self) -> None:
        system = SystemMessage(content="s")
        history: list = [UserMessage(content="u")]
        first = HistoryView(system, history, 1)
        history.append(AssistantMessage(content="a"))
        second = HistoryView(system, history, 2)
        assert second.new_since(first) == [AssistantMessage(content="a")]
        assert second.new_since([system, UserMessage(content="u")]) is None
        assert second.new_since(HistoryView(system, list(history), 1)) is None
