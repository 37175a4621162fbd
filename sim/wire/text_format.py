"""The format a request asks its reply's text to take (Structured Outputs), read the same way for both APIs:
Chat's `response_format` (`{type: json_schema, json_schema: {name, schema, strict, description}}`) and the
Responses API's flat `text.format` (`{type: json_schema, name, schema, strict}`), each also `text` or
`json_object`; refused in the API's words where it refuses one, echoed as the Responses API echoes it, and
a text judged against it (the first JSON path where it fails), one validator per schema.

A strict format's schema is judged by the strict subset (`sim.core.strict_schema`), as a strict function's
parameters are. `json_object` mode needs the word "json" in the conversation's messages (Chat: any message;
Responses: the input messages, not `instructions`)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal, cast

from jsonschema.exceptions import best_match
from referencing.exceptions import Unresolvable

from sim.core.model import ModelReply, OutputFormat
from sim.core.strict_schema import strict_problem
from sim.wire.json_schema import UnjudgedPattern, validator_of
from sim.wire.requests import Refused
from sim.wire.tool_choice import ReplyTerms

FormatKind = Literal["text", "json_object", "json_schema"]
_KINDS: tuple[FormatKind, ...] = ("text", "json_object", "json_schema")
_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_JSON_WORD = re.compile("json", re.IGNORECASE)
VERBOSITIES = ("low", "medium", "high")
"""The values the Responses API takes for `text.verbosity` (the spec's `Verbosity`)."""


@dataclass(frozen=True, slots=True)
class TextFormat:
    """What a request asks its text to be: plain `text`, any JSON object, or JSON matching `schema` (held
    to it when `strict`)."""

    kind: FormatKind = "text"
    name: str | None = None
    schema: Mapping[str, Any] | None = None
    strict: bool = False
    description: str | None = None

    @property
    def enforced(self) -> Mapping[str, Any] | None:
        """The schema every completed text matches: a strict format's, else None."""
        return self.schema if self.kind == "json_schema" and self.strict else None

    @property
    def wanted(self) -> Mapping[str, Any] | None:
        """The schema a format asks for without holding the model to it (`strict` not true)."""
        return self.schema if self.kind == "json_schema" and not self.strict else None


PLAIN = TextFormat()


def _kind_name(value: Any) -> str:
    return {str: "string", bool: "boolean", int: "integer", float: "number", list: "array",
            dict: "object"}.get(type(value), "null" if value is None else type(value).__name__)  # fmt: skip


def _said_kind(value: Any) -> str:
    """A value's JSON kind as the API's type errors say it: `a string`, `an object`, `a decimal`, `null`."""
    return {str: "a string", bool: "a boolean", int: "an integer", float: "a decimal", list: "an array",
            dict: "an object"}.get(type(value), "null" if value is None else "a value")  # fmt: skip


def _invalid_type(param: str, value: Any, expected: str) -> Refused:
    message = f"Invalid type for '{param}': expected {expected}, but got {_said_kind(value)} instead."
    return Refused(message, param, "invalid_type")


def _missing(param: str) -> Refused:
    return Refused(f"Missing required parameter: '{param}'.", param, "missing_required_parameter")


def _read(format_: Any, schema_of: Mapping[str, Any], at: str, schema_at: str) -> TextFormat | Refused:
    """A format whose `type` sits in `format_` at `at` and whose name, schema and strictness sit in
    `schema_of` at `schema_at` (the same mapping for the Responses API, `json_schema` for Chat)."""
    if not isinstance(format_, Mapping):
        return _invalid_type(at, format_, "an object")
    kind = format_.get("type")
    if kind is None:
        return _missing(f"{at}.type")
    if kind not in _KINDS:
        message = f"Invalid value: '{kind}'. Supported values are: 'text', 'json_object', and 'json_schema'."
        return Refused(message, f"{at}.type", "invalid_value")
    if kind != "json_schema":
        return TextFormat(cast(FormatKind, kind))
    name = schema_of.get("name")
    if name is None:
        return _missing(f"{schema_at}.name")
    if not isinstance(name, str):
        return _invalid_type(f"{schema_at}.name", name, "a string")
    if not _NAME.match(name):
        message = (f"Invalid '{schema_at}.name': string does not match pattern. Expected a string that"
                   " matches the pattern '^[a-zA-Z0-9_-]+$'.")  # fmt: skip
        return Refused(message, f"{schema_at}.name", "invalid_value")
    schema, strict = schema_of.get("schema"), schema_of.get("strict")
    description = schema_of.get("description")
    if schema is not None and not isinstance(schema, Mapping):
        return _invalid_type(f"{schema_at}.schema", schema, "an object")
    if strict is not None and not isinstance(strict, bool):
        return _invalid_type(f"{schema_at}.strict", strict, "a boolean")
    if description is not None and not isinstance(description, str):
        return _invalid_type(f"{schema_at}.description", description, "a string")
    return TextFormat("json_schema", name, schema, strict is True, description)


def _strict_problem(read: TextFormat) -> str | None:
    """Why the API refuses a strict format's schema (the strict subset, as for strict functions)."""
    if not read.strict or read.schema is None:
        return None
    return strict_problem(read.schema)


def chat_format(body: Mapping[str, Any]) -> TextFormat | Refused:
    """Chat's `response_format`, or the API's refusal of it (malformed; a strict schema it cannot take)."""
    format_ = body.get("response_format")
    if format_ is None:
        return PLAIN
    inner = format_.get("json_schema") if isinstance(format_, Mapping) else None
    if isinstance(format_, Mapping) and format_.get("type") == "json_schema" and not isinstance(inner, dict):
        if inner is None:
            return _missing("response_format.json_schema")
        return _invalid_type("response_format.json_schema", inner, "an object")
    read = _read(format_, inner or {}, "response_format", "response_format.json_schema")
    if isinstance(read, TextFormat) and (problem := _strict_problem(read)) is not None:
        return Refused(f"Invalid schema for response_format '{read.name}': {problem}", "response_format")
    return read


def responses_format(body: Mapping[str, Any]) -> TextFormat | Refused:
    """The Responses API's `text.format`, or the API's refusal of it."""
    text = body.get("text")
    if text is None:
        return PLAIN
    if not isinstance(text, Mapping):
        return _invalid_type("text", text, "an object")
    verbosity = text.get("verbosity")
    if verbosity is not None and not isinstance(verbosity, str):
        return _invalid_type("text.verbosity", verbosity, "a string")
    if verbosity is not None and verbosity not in VERBOSITIES:
        message = f"Invalid value: '{verbosity}'. Supported values are: 'low', 'medium', and 'high'."
        return Refused(message, "text.verbosity", "invalid_value")
    format_ = text.get("format")
    if format_ is None:
        return PLAIN
    read = _read(format_, format_ if isinstance(format_, Mapping) else {}, "text.format", "text.format")
    if isinstance(read, TextFormat) and read.kind == "json_schema" and read.schema is None:
        return _missing("text.format.schema")
    if isinstance(read, TextFormat) and (problem := _strict_problem(read)) is not None:
        message = f"Invalid schema for response_format '{read.name}': {problem}"
        return Refused(message, "text.format.schema", "invalid_json_schema")
    return read


def _texts(content: Any) -> Iterator[str]:
    """The text a message's content holds: a string, or the `text` of each part."""
    if isinstance(content, str):
        yield content
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                yield part["text"]


def refused_chat_json_object(body: Mapping[str, Any], format_: TextFormat) -> Refused | None:
    """`json_object` mode without the word "json" in any message, refused as Chat refuses it."""
    if format_.kind != "json_object":
        return None
    messages = body.get("messages")
    for message in messages if isinstance(messages, list) else []:
        if isinstance(message, Mapping) and any(map(_JSON_WORD.search, _texts(message.get("content")))):
            return None
    message = (
        "'messages' must contain the word 'json' in some form, to use 'response_format' of type"
        " 'json_object'."
    )
    return Refused(message, "messages")


def refused_responses_json_object(body: Mapping[str, Any], format_: TextFormat) -> Refused | None:
    """`json_object` mode without the word "json" in the input messages (`instructions` do not count),
    refused as the Responses API refuses it. A request chained to a stored response is not judged: its
    earlier input may say it."""
    if format_.kind != "json_object" or body.get("previous_response_id") is not None:
        return None
    items = body.get("input")
    if isinstance(items, str):
        if _JSON_WORD.search(items):
            return None
    else:
        for item in items if isinstance(items, list) else []:
            is_message = isinstance(item, Mapping) and item.get("type", "message") == "message"
            if is_message and any(map(_JSON_WORD.search, _texts(item.get("content")))):
                return None
    message = (
        "Response input messages must contain the word 'json' in some form to use 'text.format' of type"
        " 'json_object'."
    )
    return Refused(message, "input")


def echoed_text(text: Any) -> dict[str, Any]:
    """A request's `text` as a `response` echoes it: its format with the API's defaults filled in (`strict`
    false for a schema; a `description` only when given: the spec has no null one), `verbosity` medium
    when left out; nothing else (the spec's `ResponseTextParam` has no other field)."""
    said = text if isinstance(text, Mapping) else {}
    format_ = said.get("format")
    echoed: dict[str, Any] = {"type": "text"}
    if isinstance(format_, Mapping) and format_.get("type") == "json_schema":
        echoed = {"type": "json_schema", "name": format_.get("name"), "schema": format_.get("schema"),
                  "strict": format_.get("strict") is True}  # fmt: skip
        if format_.get("description") is not None:
            echoed["description"] = format_["description"]
    elif isinstance(format_, Mapping) and format_.get("type") == "json_object":
        echoed = {"type": "json_object"}
    return {"format": echoed, "verbosity": said.get("verbosity") or "medium"}


def json_path(path: Iterator[Any] | Any) -> str:
    """A value's place as a JSON path: `$.steps[0].answer` (keys that are not identifiers quoted)."""
    text = "$"
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        elif isinstance(part, str) and part.isidentifier():
            text += f".{part}"
        else:
            text += f"[{json.dumps(str(part))}]"
    return text


def schema_failure(schema: Mapping[str, Any], value: Any) -> str | None:
    """Where and how `value` fails `schema` (`$.steps[0].answer: 5 is not of type 'string'`); None when it
    matches, or when it cannot be judged (a schema its draft refuses, a pattern that runs away)."""
    try:
        validator = validator_of(json.dumps(schema, sort_keys=True))
        error = None if validator is None else best_match(validator.iter_errors(value))
    except (TypeError, ValueError, RecursionError, Unresolvable, UnjudgedPattern):
        return None  # too deep, references that lead nowhere, a pattern that runs away: not judged
    if error is None:
        return None
    return f"{json_path(error.absolute_path)}: {_short(error.message)}"


def _short(message: str, most: int = 200) -> str:
    return message if len(message) <= most else message[: most - 3] + "..."


def text_failure(schema: Mapping[str, Any] | None, text: str, *, json_object: bool = False) -> str | None:
    """Where and how `text` fails to be JSON matching `schema` (or, with `json_object`, any JSON object);
    None when it is."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as error:
        return f"$: not JSON ({_short(str(error), 80)})"
    if json_object and not isinstance(value, dict):
        return f"$: not a JSON object (a JSON {_kind_name(value)})"
    return None if schema is None else schema_failure(schema, value)


def refused_chat_format(body: Mapping[str, Any]) -> Refused | None:
    """What Chat refuses in a request's `response_format` (and `json_object` mode without "json")."""
    read = chat_format(body)
    return read if isinstance(read, Refused) else refused_chat_json_object(body, read)


def refused_responses_format(body: Mapping[str, Any]) -> Refused | None:
    """What the Responses API refuses in a request's `text.format` (and `json_object` mode without "json")."""
    read = responses_format(body)
    return read if isinstance(read, Refused) else refused_responses_json_object(body, read)


def with_format(terms: ReplyTerms, format_: TextFormat | Refused) -> ReplyTerms:
    """`terms` with what the request's text format guarantees (nothing for a refused one)."""
    if isinstance(format_, Refused) or format_.kind == "text":
        return terms
    return replace(terms, text_schema=format_.enforced, json_object=format_.kind == "json_object",
                   text_wanted=format_.wanted)  # fmt: skip


REPLY = "{reply}"
"""Where a problem's words name the reply (`replies[2]`), filled in by whoever knows its name."""


def format_problem(terms: ReplyTerms, reply: ModelReply) -> str | None:
    """How a completed text (finish `stop`, no calls) breaks the request's strict format or `json_object`
    mode, naming the first failing JSON path; a text cut at the token limit is not judged (nor a refusal,
    which carries no text)."""
    text = reply.message.content
    if reply.finish_reason != "stop" or text is None or reply.message.tool_calls:
        return None
    if terms.text_schema is None and not terms.json_object:
        return None
    failure = text_failure(terms.text_schema, text, json_object=terms.json_object)
    if failure is None:
        return None
    said = "strict response format" if terms.text_schema is not None else "response format json_object"
    return f"the request's {said} holds every completed text to it, but {REPLY}'s text fails at {failure}"


def strict_arguments_problem(terms: ReplyTerms, reply: ModelReply) -> str | None:
    """How a call's arguments break its strict function's schema (the first failing JSON path); a reply cut
    at the token limit is not judged (its last call may be cut short)."""
    if reply.finish_reason == "length" or not terms.strict:
        return None
    for call in reply.message.tool_calls:
        schema = terms.strict.get(call.name)
        if schema is None:
            continue
        failure = text_failure(schema, call.arguments, json_object=True)
        if failure is not None:
            return (f"'{call.name}' is a strict function, whose arguments always match its schema, but"
                    f" {REPLY}'s arguments to it fail at {failure}")  # fmt: skip
    return None


def chat_format_fields(output: OutputFormat | None) -> dict[str, Any]:
    """The `response_format` a Chat client sends for the format a run asks of its text (none for none)."""
    if output is None:
        return {}
    said = {"name": output.name, "schema": dict(output.schema), "strict": output.strict}
    return {"response_format": {"type": "json_schema", "json_schema": said}}


def responses_format_fields(output: OutputFormat | None) -> dict[str, Any]:
    """The `text` a Responses client sends for the format a run asks of its text (none for none)."""
    if output is None:
        return {}
    said = {
        "type": "json_schema",
        "name": output.name,
        "schema": dict(output.schema),
        "strict": output.strict,
    }
    return {"text": {"format": said}}
