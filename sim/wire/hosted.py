"""The Responses API's hosted tools (web and file search, code interpreter, MCP, image generation) as the API
has them: the tools a request may offer (checked as the API checks them), the `include` values it knows,
the items a scenario scripts for them (checked in the spec's shapes), those items as the API writes and
streams them, and as a stateless client sends them back."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from sim.core.errors import ModelReplyError
from sim.core.messages import HostedItem
from sim.wire.logprobs import pieces
from sim.wire.requests import Refused, RefusedError, wrong_type

WEB_SEARCH_TOOLS = frozenset(
    {"web_search", "web_search_preview", "web_search_2025_08_26", "web_search_preview_2025_03_11"}
)
"""The tool types of the hosted web search."""
HOSTED_TOOLS = WEB_SEARCH_TOOLS | {"file_search", "code_interpreter", "mcp", "image_generation"}
"""The hosted tools sim accepts in a request's `tools`."""

ITEM_TOOL = {
    "web_search_call": "web_search",
    "file_search_call": "file_search",
    "code_interpreter_call": "code_interpreter",
    "mcp_list_tools": "mcp",
    "mcp_call": "mcp",
    "mcp_approval_request": "mcp",
    "image_generation_call": "image_generation",
}
"""Each item a hosted tool produces in a reply, and the tool (web search: any of its types)."""
INPUT_ITEMS = frozenset(ITEM_TOOL) | {"mcp_approval_response"}
"""The hosted items a request may carry back (the reply's, and the answer to an approval request)."""
ID_PREFIX = {
    "web_search_call": "ws",
    "file_search_call": "fs",
    "code_interpreter_call": "ci",
    "mcp_list_tools": "mcpl",
    "mcp_call": "mcp",
    "mcp_approval_request": "mcpr",
    "image_generation_call": "ig",
}
"""The prefix of the id the API gives each item (sim's minted ids follow it)."""

INCLUDABLE = (
    "file_search_call.results",
    "web_search_call.results",
    "web_search_call.action.sources",
    "message.input_image.image_url",
    "computer_call_output.output.image_url",
    "code_interpreter_call.outputs",
    "reasoning.encrypted_content",
    "message.output_text.logprobs",
)
"""The values `include` may list, in the order the API's refusal lists them."""
SOURCES = "web_search_call.action.sources"
RESULTS = "file_search_call.results"
OUTPUTS = "code_interpreter_call.outputs"


def _supported(values: Sequence[str]) -> str:
    quoted = [f"'{value}'" for value in values]
    return ", ".join(quoted[:-1]) + f", and {quoted[-1]}" if len(quoted) > 1 else quoted[0]


def refused_include(include: Any) -> Refused | None:
    """The first `include` value the API does not know, refused in its words."""
    for index, value in enumerate(include if isinstance(include, list) else []):
        if value not in INCLUDABLE:
            shown = value if isinstance(value, str) else json.dumps(value)
            message = f"Invalid value: '{shown}'. Supported values are: {_supported(INCLUDABLE)}."
            return Refused(message, f"include[{index}]", "invalid_value")
    return None


def _missing(where: str) -> Refused:
    return Refused(f"Missing required parameter: '{where}'.", where, "missing_required_parameter")


def refused_hosted_tool(where: str, tool: Mapping[str, Any]) -> Refused | None:
    """A hosted tool offered as the API refuses it: a file search without vector stores, a code interpreter
    without a container, an MCP server without a label or without exactly one of a URL and a connector."""
    kind = tool.get("type")
    if kind == "file_search":
        stores = tool.get("vector_store_ids")
        if stores is None:
            return _missing(f"{where}.vector_store_ids")
        if not isinstance(stores, list) or not all(isinstance(store, str) for store in stores):
            return wrong_type(f"{where}.vector_store_ids", "an array of strings", stores)
    elif kind == "code_interpreter":
        container = tool.get("container")
        if container is None:
            return _missing(f"{where}.container")
        if not isinstance(container, str | dict):
            return wrong_type(f"{where}.container", "one of a string or an object", container)
    elif kind == "mcp":
        label = tool.get("server_label")
        if label is None:
            return _missing(f"{where}.server_label")
        if not isinstance(label, str):
            return wrong_type(f"{where}.server_label", "a string", label)
        given = [key for key in ("server_url", "connector_id") if tool.get(key) is not None]
        for key in (*given, "server_description", "authorization"):
            if tool.get(key) is not None and not isinstance(tool[key], str):
                return wrong_type(f"{where}.{key}", "a string", tool[key])
        if tool.get("headers") is not None and not isinstance(tool["headers"], dict):
            return wrong_type(f"{where}.headers", "an object", tool["headers"])
        if not given:
            message = (f"Missing mutually exclusive parameters: '{where}'. Ensure you are providing exactly"
                       " one of: 'server_url' or 'connector_id'.")  # fmt: skip
            return Refused(message, where, "missing_mutually_exclusive_parameters")
        if len(given) > 1:
            message = (f"Mutually exclusive parameters: '{where}'. Ensure you are only providing one of:"
                       " 'server_url' or 'connector_id'.")  # fmt: skip
            return Refused(message, where, "mutually_exclusive_parameters")
        approval = tool.get("require_approval")
        if isinstance(approval, str) and approval not in ("always", "never"):
            message = f"Invalid value: '{approval}'. Supported values are: 'always' and 'never'."
            return Refused(message, f"{where}.require_approval", "invalid_value")
        if approval is not None and not isinstance(approval, str | dict):
            return wrong_type(
                f"{where}.require_approval", "one of an object or 'always' or 'never'", approval
            )
        allowed = tool.get("allowed_tools")
        listed = isinstance(allowed, list) and all(isinstance(name, str) for name in allowed)
        if allowed is not None and not (listed or isinstance(allowed, dict)):
            return wrong_type(f"{where}.allowed_tools", "one of an array of strings or an object", allowed)
    return None


def offered_hosted(tools: Any) -> tuple[Mapping[str, Any], ...]:
    """The hosted tools a request's `tools` offers, as it wrote them."""
    if not isinstance(tools, list):
        return ()
    return tuple(tool for tool in tools if isinstance(tool, Mapping) and tool.get("type") in HOSTED_TOOLS)


def _first_error(error: ValidationError) -> str:
    """Pydantic's first complaint, where it is (without the item's type, which pydantic puts first)."""
    first = error.errors()[0]
    where = [str(part) for part in first["loc"]]
    if where and where[0] in {*ITEM_TOOL, "url_citation", "file_citation"}:
        where = where[1:]
    return f"{'.'.join(where)}: {first['msg']}" if where else str(first["msg"])


def scripted_hosted(entry: Any) -> HostedItem:
    """A scenario's entry as a hosted item, checked in the spec's shape (`ValueError` saying what is
    wrong)."""
    try:
        from sim.wire.hosted_shapes import SCRIPTED  # the models cost their import: only a script needs them

        shaped = SCRIPTED.validate_python(entry)
    except ValidationError as error:
        raise ValueError(_first_error(error)) from None
    fields = shaped.model_dump(mode="json", exclude={"type", "id"}, exclude_none=True)
    return HostedItem(kind=shaped.type, id=shaped.id, fields=json.dumps(fields, ensure_ascii=False))


def hosted_to_wire(item: HostedItem, include: Sequence[str] = ()) -> dict[str, Any]:
    """An item as the API writes it in a reply: its required fields filled (`status` where it has one), what
    the request did not `include` left out (web sources, file results, code outputs)."""
    fields = item.data()
    wire: dict[str, Any] = {"type": item.kind, "id": item.id}
    kind = item.kind
    if kind == "web_search_call":
        said = fields.get("action")
        action = dict(said) if isinstance(said, dict) else {"type": "search", "query": ""}
        if SOURCES not in include:
            action.pop("sources", None)
        wire.update(status=fields.get("status", "completed"), action=action)
    elif kind == "file_search_call":
        wire.update(status=fields.get("status", "completed"), queries=fields.get("queries", []),
                    results=fields.get("results") if RESULTS in include else None)  # fmt: skip
    elif kind == "code_interpreter_call":
        outputs = fields.get("outputs") if OUTPUTS in include else None
        wire.update(status=fields.get("status", "completed"), code=fields.get("code"), outputs=outputs,
                    container_id=fields.get("container_id", "cntr_sim"))  # fmt: skip
    elif kind == "mcp_list_tools":
        wire.update(server_label=fields.get("server_label"), tools=fields.get("tools", []))
        if fields.get("error") is not None:
            wire["error"] = fields["error"]
    elif kind == "mcp_call":
        failed = fields.get("error") is not None
        wire.update(status=fields.get("status", "failed" if failed else "completed"),
                    server_label=fields.get("server_label"), name=fields.get("name"),
                    arguments=fields.get("arguments", "{}"), output=fields.get("output"),
                    error=fields.get("error"),
                    approval_request_id=fields.get("approval_request_id"))  # fmt: skip
    elif kind == "mcp_approval_request":
        wire.update(server_label=fields.get("server_label"), name=fields.get("name"),
                    arguments=fields.get("arguments", "{}"))  # fmt: skip
    elif kind == "image_generation_call":
        wire.update(status=fields.get("status", "completed"), result=fields.get("result"))
    else:  # an item sent back (an approval given): as it came
        wire.update(fields)
    return wire


def hosted_as_sent(item: HostedItem) -> dict[str, Any]:
    """An item as a client sends it back: as it came."""
    return {"type": item.kind, **({"id": item.id} if item.id is not None else {}), **item.data()}


def hosted_from_wire(where: str, item: Mapping[str, Any]) -> HostedItem:
    """A hosted item a request carries back (its reply's, or an approval given); `RefusedError` where it lacks
    what the API requires of it, in its words."""
    kind = str(item.get("type"))
    item_id = item.get("id")
    if kind == "mcp_approval_response":
        if not isinstance(item.get("approval_request_id"), str):
            raise RefusedError(_missing(f"{where}.approval_request_id"))
        if not isinstance(item.get("approve"), bool):
            raise RefusedError(_missing(f"{where}.approve"))
    elif not isinstance(item_id, str) or not item_id:
        raise RefusedError(_missing(f"{where}.id"))
    return _kept(item)


def hosted_item_of(item: Mapping[str, Any]) -> HostedItem:
    """A hosted tool's item of a reply, as the loop keeps it (`ModelReplyError` without its id)."""
    item_id = item.get("id")
    if not isinstance(item_id, str) or not item_id:
        raise ModelReplyError(f"a {item.get('type')} item must have an id")
    return _kept(item)


def _kept(item: Mapping[str, Any]) -> HostedItem:
    """An item as it came: its type, its id (if a string), the rest as JSON text."""
    item_id = item.get("id")
    fields = {key: value for key, value in item.items() if key not in ("type", "id")}
    return HostedItem(
        kind=str(item.get("type")),
        id=item_id if isinstance(item_id, str) else None,
        fields=json.dumps(fields, ensure_ascii=False),
    )


def minted(item: HostedItem, suffix: str, number: int) -> HostedItem:
    """`item` with the id the API would give it, where it has none."""
    if item.id is not None:
        return item
    return item.model_copy(update={"id": f"{ID_PREFIX.get(item.kind, 'item')}_{suffix}_{number}"})


def unoffered(hosted: Sequence[Mapping[str, Any]], items: Sequence[HostedItem]) -> str | None:
    """How a reply's hosted items use a tool the request did not offer (a tool type, an MCP server's label,
    a tool its `allowed_tools` leaves out), or None."""
    types = {str(tool.get("type")) for tool in hosted}
    if types & WEB_SEARCH_TOOLS:
        types.add("web_search")
    servers = {str(tool.get("server_label")): tool for tool in hosted if tool.get("type") == "mcp"}
    for item in items:
        tool = ITEM_TOOL.get(item.kind)
        if tool is None:
            continue
        if tool not in types:
            return f"the scripted reply has a {item.kind} item, but the request offers no {tool} tool"
        if tool != "mcp":
            continue
        fields = item.data()
        label = str(fields.get("server_label"))
        server = servers.get(label)
        if server is None:
            return (f"the scripted reply has a {item.kind} item for MCP server {label!r}, which the request"
                    " does not offer")  # fmt: skip
        allowed = server.get("allowed_tools")
        names = allowed.get("tool_names") if isinstance(allowed, Mapping) else allowed
        name = fields.get("name")
        if item.kind != "mcp_list_tools" and isinstance(names, list) and name not in names:
            return (f"the scripted reply calls {name!r} on MCP server {label!r}, but the request allows only"
                    f" {sorted(map(str, names))}")  # fmt: skip
    return None


def hosted_events(index: int, item: dict[str, Any]) -> list[dict[str, Any]]:
    """A hosted item as the API streams it: added (in progress), its own events, done."""
    kind = item["type"]
    where = {"output_index": index, "item_id": item["id"]}
    added = {"type": "response.output_item.added", "output_index": index}
    done = {"type": "response.output_item.done", "output_index": index, "item": item}

    def said(*names: str) -> list[dict[str, Any]]:
        return [{"type": f"response.{kind}.{name}", **where} for name in names]

    ending = "failed" if item.get("status") == "failed" or item.get("error") is not None else "completed"
    if kind == "web_search_call":
        opened = {**item, "status": "in_progress"}
        return [{**added, "item": opened}, *said("in_progress", "searching", "completed"), done]
    if kind == "file_search_call":
        opened = {**item, "status": "in_progress", "results": None}
        return [{**added, "item": opened}, *said("in_progress", "searching", "completed"), done]
    if kind == "code_interpreter_call":
        code = item.get("code") or ""
        opened = {**item, "status": "in_progress", "code": "", "outputs": None}
        typed = [{"type": "response.code_interpreter_call_code.delta", **where, "delta": piece}
                 for piece in pieces(code)]  # fmt: skip
        return [{**added, "item": opened}, *said("in_progress"), *typed,
                {"type": "response.code_interpreter_call_code.done", **where, "code": code},
                *said("interpreting", "completed"), done]  # fmt: skip
    if kind == "mcp_list_tools":
        opened = {**item, "tools": []}
        opened.pop("error", None)
        return [{**added, "item": opened}, *said("in_progress", ending), done]
    if kind == "mcp_call":
        arguments = item.get("arguments") or ""
        opened = {**item, "status": "in_progress", "arguments": "", "output": None, "error": None}
        typed = [{"type": "response.mcp_call_arguments.delta", **where, "delta": piece}
                 for piece in pieces(arguments)]  # fmt: skip
        return [{**added, "item": opened}, *said("in_progress"), *typed,
                {"type": "response.mcp_call_arguments.done", **where, "arguments": arguments},
                *said(ending), done]  # fmt: skip
    if kind == "image_generation_call":
        opened = {**item, "status": "in_progress", "result": None}
        return [{**added, "item": opened}, *said("in_progress", "generating", "completed"), done]
    return [{**added, "item": item}, done]


def scripted_annotation(entry: Any, text: str) -> str:
    """A scenario's citation checked (in the spec's shape, within `text`), as the JSON text a `TextItem`
    keeps; `ValueError` naming what is wrong."""
    try:
        from sim.wire.hosted_shapes import ANNOTATION

        shaped = ANNOTATION.validate_python(entry)
    except ValidationError as error:
        raise ValueError(_first_error(error)) from None
    if shaped.type == "url_citation" and not shaped.start_index <= shaped.end_index <= len(text):
        raise ValueError(
            f"a url_citation spans [{shaped.start_index}, {shaped.end_index}), outside the text"
            f" ({len(text)} characters)"
        )
    if shaped.type == "file_citation" and shaped.index > len(text):
        raise ValueError(f"a file_citation at {shaped.index} is past the text ({len(text)} characters)")
    return json.dumps(shaped.model_dump(mode="json"), ensure_ascii=False)


def refused_hosted(body: Mapping[str, Any]) -> Refused | None:
    """What the API refuses of a request's `include` values and hosted tools, in its words."""
    if (refused := refused_include(body.get("include"))) is not None:
        return refused
    tools = body.get("tools")
    for index, tool in enumerate(tools if isinstance(tools, list) else []):
        hosted = isinstance(tool, Mapping) and tool.get("type") in HOSTED_TOOLS
        if hosted and (refused := refused_hosted_tool(f"tools[{index}]", tool)) is not None:
            return refused
    return None


def tool_kind(tool: Mapping[str, Any]) -> str:
    """What a hosted tool is, its versions one (`web_search` for every web search type)."""
    kind = str(tool.get("type"))
    return "web_search" if kind in WEB_SEARCH_TOOLS else kind


def undrawable(hosted: Sequence[Mapping[str, Any]]) -> str | None:
    """Why no reply to a request offering `hosted` can be made up: the API lists an MCP server's tools in
    its reply before anything else, and sim cannot know them."""
    for tool in hosted:
        if tool.get("type") == "mcp":
            label = str(tool.get("server_label"))
            return (f"an MCP server's tools (server_label {label!r}): the API lists them in its reply, and"
                    " sim cannot know what the server offers")  # fmt: skip
    return None


UNDRAWN_CALLS = {"image_generation": "an image generation call: sim does not draw images"}
"""The hosted tools whose calls sim cannot make up, and why."""


WEB_ACTIONS = ("search", "open_page", "find_in_page")
"""What a web search call does: a search, then maybe a page of its results opened or searched."""


def drawn_call(
    kind: str, words: str, url: str, text: str | None, then: str = "search"
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A call of hosted tool `kind` (web or file search, code interpreter) made of drawn `words` (a query,
    code's output) and a `url`, in the spec's shapes: the entries a reply scripts, and the citations on its
    `text` (a web search cites its source over the whole text; `then` one of `WEB_ACTIONS`: after its
    search, a web search may open the page it found, or look for the words in it)."""
    if kind == "web_search":
        action = {"type": "search", "query": words, "sources": [{"type": "url", "url": url}]}
        entries = [{"type": "web_search_call", "action": action}]
        if then == "open_page":
            entries.append({"type": "web_search_call", "action": {"type": "open_page", "url": url}})
        elif then == "find_in_page":
            found = {"type": "find_in_page", "url": url, "pattern": words}
            entries.append({"type": "web_search_call", "action": found})
        if not text:
            return entries, []
        return entries, [{"type": "url_citation", "start_index": 0, "end_index": len(text), "url": url,
                          "title": words}]  # fmt: skip
    if kind == "file_search":
        result = {"file_id": "file-sim", "filename": "notes.txt", "score": 0.5, "text": words}
        return [{"type": "file_search_call", "queries": [words], "results": [result]}], []
    if kind == "code_interpreter":
        code = f"print({json.dumps(words)})"
        return [
            {"type": "code_interpreter_call", "code": code, "outputs": [{"type": "logs", "logs": words}]}
        ], []
    return [], []


HOSTED_CHOICES = frozenset(
    {"web_search_preview", "web_search_preview_2025_03_11", "file_search", "code_interpreter",
     "image_generation", "mcp"}
)  # fmt: skip
"""The `tool_choice` types that force a hosted tool (a web search of any type; an MCP server's by its
`server_label`), as the spec lists them."""


def forced_hosted(choice: Any) -> str | None:
    """The hosted tool a `tool_choice` forces (`web_search` for any web search type), or None."""
    if isinstance(choice, Mapping) and choice.get("type") in HOSTED_CHOICES:
        return tool_kind(choice)
    return None


def refused_hosted_choice(choice: Mapping[str, Any], tools: Any) -> Refused | None:
    """A `tool_choice` forcing a hosted tool the request does not offer (an MCP server by its label), in the
    API's words."""
    kind = tool_kind(choice)
    label = choice.get("server_label")
    if kind == "mcp" and not isinstance(label, str):
        return _missing("tool_choice.server_label")
    offered = [tool for tool in offered_hosted(tools) if tool_kind(tool) == kind]
    if kind == "mcp":
        offered = [tool for tool in offered if tool.get("server_label") == label]
    if not offered:
        return Refused(f"Tool choice '{choice.get('type')}' not found in 'tools' parameter.", "tool_choice")
    return None


def unforced(forced: str | None, items: Sequence[HostedItem], label: Any = None) -> str | None:
    """How a reply ignores the hosted tool its request's `tool_choice` forces (an MCP server's: by `label`),
    or None."""
    if forced is None:
        return None
    for item in items:
        if ITEM_TOOL.get(item.kind) == forced and (
            forced != "mcp" or item.data().get("server_label") == label
        ):
            return None
    return f"the request says tool_choice {forced!r}, but the scripted reply has no {forced} item"
