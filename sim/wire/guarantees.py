"""What the API guarantees a reply, checked on a reply a script (or a drawer) means to send: each check
says how the reply would break one guarantee the request sets (its `tool_choice`, a strict schema, a custom
tool's grammar), or None. A reply that breaks one is something the live API could never have sent."""

from __future__ import annotations

from collections.abc import Callable

from sim.core.messages import HostedItem
from sim.core.model import ModelReply
from sim.wire.chat.legacy import legacy_contradiction
from sim.wire.custom_tools import custom_call_problem
from sim.wire.hosted import unforced, unoffered
from sim.wire.requests import Asked
from sim.wire.text_format import REPLY, format_problem, strict_arguments_problem
from sim.wire.tool_choice import contradicts_tool_choice

Check = Callable[[Asked, ModelReply], str | None]
"""One guarantee: how `reply` breaks it for `asked`, in words for people, or None."""


def _tool_choice(asked: Asked, reply: ModelReply) -> str | None:
    return contradicts_tool_choice(asked.body, reply)


def _custom_input(asked: Asked, reply: ModelReply) -> str | None:
    """A custom tool's input matches its grammar; a function is called with arguments, a custom tool with
    input (unless the reply is cut at the token limit: its last call may be cut short)."""
    return custom_call_problem(asked.terms.custom, reply)


def _text_format(asked: Asked, reply: ModelReply) -> str | None:
    """A completed text matches the request's strict response format (or is a JSON object in `json_object`
    mode)."""
    return format_problem(asked.terms, reply)


PARALLEL_STRICT = (
    "Structured Outputs is not compatible with parallel function calls. When a parallel function call is"
    " generated, it may not match supplied schemas. Set parallel_tool_calls: false to disable parallel"
    " function calling."
)
"""What OpenAI says of strict functions called in parallel (its Structured Outputs announcement,
openai.com/index/introducing-structured-outputs-in-the-api, "Limitations and restrictions"; the
function-calling guide's parallel section says as much): the guarantee holds for one call at a time."""


def _strict_arguments(asked: Asked, reply: ModelReply) -> str | None:
    """A strict function's arguments match its schema (unless the reply is cut at the token limit, or
    holds several calls where `parallel_tool_calls` is not false: `PARALLEL_STRICT`)."""
    if asked.terms.parallel and len(reply.message.tool_calls) > 1:
        return None
    return strict_arguments_problem(asked.terms, reply)


def _hosted_offered(asked: Asked, reply: ModelReply) -> str | None:
    """A hosted tool's items come only from a hosted tool the request offers (an MCP server by its label),
    and a hosted tool `tool_choice` forces is used."""
    items = [part for part in reply.message.items if isinstance(part, HostedItem)]
    forced, choice = asked.terms.hosted_choice, asked.body.get("tool_choice")
    label = choice.get("server_label") if isinstance(choice, dict) else None
    return unforced(forced, items, label) or (unoffered(asked.terms.hosted, items) if items else None)


def _one_legacy_call(asked: Asked, reply: ModelReply) -> str | None:
    """A request that offers Chat's deprecated `functions` is answered as its `function_call` allows, with
    one call at most."""
    return legacy_contradiction(asked.terms, reply)


CHECKS: tuple[Check, ...] = (_tool_choice, _custom_input, _text_format, _strict_arguments, _hosted_offered,
                             _one_legacy_call)  # fmt: skip
"""Every guarantee, in the order they are judged."""


def broken_guarantee(
    asked: Asked, reply: ModelReply, *, name: str = "the scripted reply", refusal: bool = False
) -> str | None:
    """How `reply` breaks the first guarantee of `asked` it breaks, or None when the API could send it;
    `name` is what the words call the reply (`replies[2]`), and a `refusal` carries no text to judge."""
    if refusal:
        reply = reply.model_copy(update={"message": reply.message.model_copy(update={"content": None})})
    for check in CHECKS:
        if (broken := check(asked, reply)) is not None:
            return broken.replace(REPLY, name, 1)
    return None
