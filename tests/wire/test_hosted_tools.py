"""Hosted tools over the Responses API, as the API has them: requests offering them accepted (malformed ones
refused in the API's words), `include` values checked, `item_reference` resolved, scripted hosted items
served in the spec's shapes (JSON and streamed with their own events, each judged by the official spec),
sent back by stateless clients and kept in chains, and a script that uses a tool the request did not offer
refused as a script mismatch."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import pytest
import yaml
from openai import AsyncOpenAI

from sim.core.errors import ScenarioError
from sim.core.messages import AssistantMessage, HostedItem
from tests.host.in_process import post, simulator, talk
from tests.spec import untolerated

PATH = "/v1/responses"
WEB = {"type": "web_search"}
MCP = {"type": "mcp", "server_label": "wiki", "server_url": "https://mcp.example.com/sse",
       "require_approval": "never"}  # fmt: skip
FILES = {"type": "file_search", "vector_store_ids": ["vs_1"]}
CODE = {"type": "code_interpreter", "container": {"type": "auto"}}
IMAGES = {"type": "image_generation"}
ALL_TOOLS = [WEB, MCP, FILES, CODE, IMAGES]
INCLUDE = ["web_search_call.action.sources", "file_search_call.results", "code_interpreter_call.outputs"]

EVERY_ITEM = """
prompt: p
replies:
  - reasoning: Look it up.
    hosted:
      - type: web_search_call
        action: {type: search, query: weather in Paris, sources: [{type: url, url: "https://example.com/w"}]}
      - {type: web_search_call, action: {type: open_page, url: "https://example.com/w"}}
      - {type: web_search_call, action: {type: find_in_page, url: "https://example.com/w", pattern: sun}}
      - {type: file_search_call, queries: [paris], results: [{file_id: file-1, filename: a.txt, score: 0.5,
         text: sunny}]}
      - {type: code_interpreter_call, code: "print(6 * 7)", outputs: [{type: logs, logs: "42"},
         {type: image, url: "https://example.com/plot.png"}]}
      - {type: mcp_list_tools, server_label: wiki, tools: [{name: ask, input_schema: {type: object},
         description: Ask the wiki.}]}
      - {type: mcp_call, server_label: wiki, name: ask, arguments: {q: paris}, output: Sunny.}
      - {type: mcp_call, server_label: wiki, name: ask, arguments: "{}", error: The server is down.}
      - {type: image_generation_call, result: aGVsbG8=}
      - {type: mcp_list_tools, server_label: wiki, error: The server did not answer.}
    content: It is sunny in Paris.
    annotations:
      - {type: url_citation, start_index: 0, end_index: 8, url: "https://example.com/w", title: Weather}
      - {type: file_citation, file_id: file-1, filename: a.txt, index: 21}
"""


def _body(**more: Any) -> dict[str, Any]:
    return {"model": "m", "input": "p", "tools": ALL_TOOLS, **more}


def _events(response: httpx2.Response) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in response.text.split("\n") if line.startswith("data: ")]


@pytest.mark.parametrize("tool", [WEB, {"type": "web_search_preview"}, MCP, FILES, CODE, IMAGES,
                                  {"type": "mcp", "server_label": "gmail", "connector_id": "connector_gmail"},
                                  {"type": "code_interpreter", "container": "cntr_abc"}],
                         ids=["web_search", "web_search_preview", "mcp", "file_search", "code_interpreter",
                              "image_generation", "mcp connector",
                              "code_interpreter container id"])  # fmt: skip
def test_a_request_offering_a_hosted_tool_is_answered_as_usual(tmp_path: Path, tool: dict[str, Any]) -> None:
    sim = simulator(tmp_path, "replies: [{content: Sunny.}]")
    (response,) = post(sim, {"model": "m", "input": "p", "tools": [tool]}, path=PATH)
    assert response.status_code == 200, response.text
    assert response.json()["output"][0]["content"][0]["text"] == "Sunny."
    assert response.json()["tools"] == [tool]
    assert untolerated("Response", response.json()) == []


@pytest.mark.parametrize(
    ("tool", "param", "code", "message"),
    [
        ({"type": "file_search"}, "tools[0].vector_store_ids", "missing_required_parameter",
         "Missing required parameter: 'tools[0].vector_store_ids'."),
        ({"type": "file_search", "vector_store_ids": "vs_1"}, "tools[0].vector_store_ids", "invalid_type",
         "Invalid type for 'tools[0].vector_store_ids': expected an array of strings, but got a string"
         " instead."),
        ({"type": "code_interpreter"}, "tools[0].container", "missing_required_parameter",
         "Missing required parameter: 'tools[0].container'."),
        ({"type": "mcp", "server_url": "https://x"}, "tools[0].server_label", "missing_required_parameter",
         "Missing required parameter: 'tools[0].server_label'."),
        ({"type": "mcp", "server_label": "x"}, "tools[0]", "missing_mutually_exclusive_parameters",
         "Missing mutually exclusive parameters: 'tools[0]'. Ensure you are providing exactly one of:"
         " 'server_url' or 'connector_id'."),
        ({"type": "mcp", "server_label": "x", "server_url": "https://x", "connector_id": "connector_gmail"},
         "tools[0]", "mutually_exclusive_parameters",
         "Mutually exclusive parameters: 'tools[0]'. Ensure you are only providing one of: 'server_url' or"
         " 'connector_id'."),
        ({"type": "mcp", "server_label": "x", "server_url": "https://x", "require_approval": "sometimes"},
         "tools[0].require_approval", "invalid_value",
         "Invalid value: 'sometimes'. Supported values are: 'always' and 'never'."),
    ],
    ids=["no vector stores", "vector stores a string", "no container", "mcp without label", "mcp without url",
         "mcp with both", "mcp approval unknown"],
)  # fmt: skip
def test_a_malformed_hosted_tool_is_refused_in_the_apis_words(
    tmp_path: Path, tool: dict[str, Any], param: str, code: str, message: str
) -> None:
    sim = simulator(tmp_path, "replies: [{content: Sunny.}]")
    (response,) = post(sim, {"model": "m", "input": "p", "tools": [tool]}, path=PATH)
    assert response.status_code == 400
    assert response.json()["error"] == {"message": message, "type": "invalid_request_error", "param": param,
                                        "code": code}  # fmt: skip


def test_an_unknown_include_value_is_refused_and_the_known_ones_accepted(tmp_path: Path) -> None:
    sim = simulator(tmp_path, "replies: [{content: a}, {content: b}]")
    known, unknown = post(
        sim,
        {"model": "m", "input": "p", "include": [*INCLUDE, "reasoning.encrypted_content"]},
        {"model": "m", "input": "p", "include": ["reasoning.encrypted_content", "usage"]},
        path=PATH,
    )
    assert known.status_code == 200
    assert unknown.status_code == 400
    assert unknown.json()["error"] == {
        "message": "Invalid value: 'usage'. Supported values are: 'file_search_call.results',"
        " 'web_search_call.results', 'web_search_call.action.sources', 'message.input_image.image_url',"
        " 'computer_call_output.output.image_url', 'code_interpreter_call.outputs',"
        " 'reasoning.encrypted_content', and 'message.output_text.logprobs'.",
        "type": "invalid_request_error",
        "param": "include[1]",
        "code": "invalid_value",
    }


def test_every_scripted_hosted_item_is_served_in_the_specs_shapes(tmp_path: Path) -> None:
    (response,) = post(simulator(tmp_path, EVERY_ITEM), _body(include=INCLUDE), path=PATH)
    assert response.status_code == 200, response.text
    served = response.json()
    assert untolerated("Response", served) == []
    output = served["output"]
    assert [item["type"] for item in output] == [
        "reasoning", "web_search_call", "web_search_call", "web_search_call", "file_search_call",
        "code_interpreter_call", "mcp_list_tools", "mcp_call", "mcp_call", "image_generation_call",
        "mcp_list_tools", "message",
    ]  # fmt: skip
    assert [item["id"] for item in output[1:4]] == ["ws_sim000001_2", "ws_sim000001_3", "ws_sim000001_4"]
    assert output[1]["action"]["sources"] == [{"type": "url", "url": "https://example.com/w"}]
    assert output[5]["outputs"][0] == {"type": "logs", "logs": "42"}
    assert output[7]["status"] == "completed" and output[7]["arguments"] == '{"q":"paris"}'
    assert output[8]["status"] == "failed" and output[8]["error"] == "The server is down."
    annotations = output[-1]["content"][0]["annotations"]
    assert annotations[0] == {"type": "url_citation", "start_index": 0, "end_index": 8,
                              "url": "https://example.com/w", "title": "Weather"}  # fmt: skip


def test_what_the_request_does_not_include_is_left_out(tmp_path: Path) -> None:
    (response,) = post(simulator(tmp_path, EVERY_ITEM), _body(), path=PATH)
    output = response.json()["output"]
    assert "sources" not in output[1]["action"]
    assert output[4]["results"] is None and output[5]["outputs"] is None
    assert untolerated("Response", response.json()) == []


def test_hosted_items_stream_with_their_own_events_each_as_the_spec_has_it(tmp_path: Path) -> None:
    (response,) = post(simulator(tmp_path, EVERY_ITEM), _body(include=INCLUDE, stream=True), path=PATH)
    events = _events(response)
    for event in events:
        assert untolerated("ResponseStreamEvent", event) == [], event
    kinds = [event["type"] for event in events]
    for expected in (
        "response.web_search_call.in_progress", "response.web_search_call.searching",
        "response.web_search_call.completed", "response.file_search_call.in_progress",
        "response.file_search_call.searching", "response.file_search_call.completed",
        "response.code_interpreter_call.in_progress", "response.code_interpreter_call_code.delta",
        "response.code_interpreter_call_code.done", "response.code_interpreter_call.interpreting",
        "response.code_interpreter_call.completed", "response.mcp_list_tools.in_progress",
        "response.mcp_list_tools.completed", "response.mcp_list_tools.failed",
        "response.mcp_call.in_progress",
        "response.mcp_call_arguments.delta", "response.mcp_call_arguments.done",
        "response.mcp_call.completed",
        "response.mcp_call.failed", "response.image_generation_call.in_progress",
        "response.image_generation_call.generating", "response.image_generation_call.completed",
        "response.output_text.annotation.added",
    ):  # fmt: skip
        assert expected in kinds, expected
    assert [event["sequence_number"] for event in events] == list(range(len(events)))
    annotated = [event for event in events if event["type"] == "response.output_text.annotation.added"]
    assert [event["annotation_index"] for event in annotated] == [0, 1]
    code = "".join(e["delta"] for e in events if e["type"] == "response.code_interpreter_call_code.delta")
    assert code == "print(6 * 7)"


def test_the_sdks_stream_rebuilds_the_response_the_json_reply_is(tmp_path: Path) -> None:
    async def streamed(client: AsyncOpenAI) -> dict[str, Any]:
        async with client.responses.stream(**_body(include=INCLUDE)) as stream:
            async for _ in stream:
                pass
            return (await stream.get_final_response()).model_dump(mode="json")

    async def whole(client: AsyncOpenAI) -> dict[str, Any]:
        replied = await client.responses.create(**_body(include=INCLUDE))
        dumped: dict[str, Any] = replied.model_dump(mode="json")
        return dumped

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    built = talk(simulator(tmp_path / "a", EVERY_ITEM), streamed)
    replied = talk(simulator(tmp_path / "b", EVERY_ITEM), whole)
    assert _unparsed(built["output"]) == _unparsed(replied["output"])
    assert built["status"] == replied["status"] == "completed"


def _unparsed(value: Any) -> Any:
    """`value` without the `parsed` fields the SDK's stream helper adds to text parts (None without a
    format)."""
    if isinstance(value, dict):
        return {key: _unparsed(item) for key, item in value.items() if key != "parsed"}
    if isinstance(value, list):
        return [_unparsed(item) for item in value]
    return value


MCP_APPROVAL = """
prompt: p
replies:
  - hosted:
      - {type: mcp_list_tools, server_label: wiki, tools: [{name: ask}]}
      - {id: mcpr_1, type: mcp_approval_request, server_label: wiki, name: ask, arguments: {q: paris}}
  - hosted:
      - {type: mcp_call, server_label: wiki, name: ask, arguments: {q: paris}, output: Sunny.,
         approval_request_id: mcpr_1}
    content: Sunny, says the wiki.
"""


def test_an_mcp_approval_asked_given_and_used_statelessly_and_in_a_chain(tmp_path: Path) -> None:
    tools: Any = [{**MCP, "require_approval": "always"}]
    for chained in (False, True):
        sim = simulator(tmp_path, MCP_APPROVAL)

        async def conversation(client: AsyncOpenAI) -> Any:
            first = await client.responses.create(model="m", input="p", tools=tools)
            request = next(item for item in first.output if item.type == "mcp_approval_request")
            answer: Any = {
                "type": "mcp_approval_response",
                "approval_request_id": request.id,
                "approve": True,
            }
            if chained:  # noqa: B023
                return await client.responses.create(
                    model="m",
                    previous_response_id=first.id,
                    input=[answer],
                    tools=tools,
                )
            sent: list[Any] = [
                {"role": "user", "content": "p"},
                *(i.model_dump(exclude_none=True) for i in first.output),
            ]
            return await client.responses.create(model="m", input=[*sent, answer], tools=tools)

        second = talk(sim, conversation)
        assert second.output_text == "Sunny, says the wiki."
        assert second.output[0].type == "mcp_call" and second.output[0].approval_request_id == "mcpr_1"
        assert sim.answerer.problems == []
        (history := sim.answerer.requests[-1].messages)
        kinds = [part.kind for m in history if isinstance(m, AssistantMessage) for part in m.items
                 if isinstance(part, HostedItem)]  # fmt: skip
        assert kinds == ["mcp_list_tools", "mcp_approval_request", "mcp_approval_response"]


def test_an_item_reference_is_resolved_from_the_store_and_an_unknown_one_refused(tmp_path: Path) -> None:
    script = """
    replies:
      - {hosted: [{type: web_search_call, action: {type: search, query: q}}],
         tool_calls: [{name: lookup, arguments: {city: Paris}}]}
      - {content: Sunny.}
      - {content: never}
    """
    sim = simulator(tmp_path, script)
    tools = [WEB, {"type": "function", "name": "lookup", "parameters": {"type": "object"}}]
    (first,) = post(sim, {"model": "m", "input": "p", "tools": tools}, path=PATH)
    search, call = first.json()["output"]
    references = [{"type": "item_reference", "id": search["id"]}, {"id": call["id"]}]
    answer = {"type": "function_call_output", "call_id": call["call_id"], "output": "sunny"}
    second, unknown = post(
        sim,
        {"model": "m", "input": ["p", *references, answer][1:], "tools": tools},
        {"model": "m", "input": [{"type": "item_reference", "id": "ws_nowhere"}], "tools": tools},
        path=PATH,
    )
    assert second.status_code == 200, second.text
    assert second.json()["output"][0]["content"][0]["text"] == "Sunny."
    history = sim.answerer.requests[-1].messages
    (turn,) = [m for m in history if isinstance(m, AssistantMessage)]
    assert [part.kind for part in turn.items if isinstance(part, HostedItem)] == ["web_search_call"]
    assert turn.tool_calls[0].id == call["call_id"]
    assert unknown.status_code == 404
    assert unknown.json()["error"]["message"] == "Item with id 'ws_nowhere' not found."


@pytest.mark.parametrize(
    ("tools", "says"),
    [
        ([FILES], "has a web_search_call item, but the request offers no web_search tool"),
        ([{**MCP, "server_label": "other"}, WEB], "for MCP server 'wiki', which the request does not offer"),
        (
            [{**MCP, "allowed_tools": ["search"]}, WEB],
            "calls 'ask' on MCP server 'wiki', but the request allows",
        ),
        ([{**MCP, "allowed_tools": {"tool_names": ["search"]}}, WEB], "calls 'ask' on MCP server 'wiki'"),
    ],
    ids=["tool not offered", "other mcp server", "allowed tools", "allowed tools filter"],
)
def test_a_hosted_item_of_a_tool_not_offered_is_a_script_mismatch(
    tmp_path: Path, tools: list[Any], says: str
) -> None:
    script = """
    replies:
      - hosted:
          - {type: web_search_call, action: {type: search, query: q}}
          - {type: mcp_call, server_label: wiki, name: ask}
        content: Sunny.
    """
    sim = simulator(tmp_path, script)
    (response,) = post(sim, {"model": "m", "input": "p", "tools": tools}, path=PATH)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "sim_script_mismatch"
    assert says in response.json()["error"]["message"]


def test_a_chat_request_never_gets_hosted_items(tmp_path: Path) -> None:
    sim = simulator(tmp_path, "replies: [{hosted: [{type: web_search_call, action: {type: search,"
                              " query: q}}],"
                              " content: Sunny.}]")  # fmt: skip
    body = {"model": "m", "messages": [{"role": "user", "content": "p"}]}
    (response,) = post(sim, body, path="/v1/chat/completions")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "sim_script_mismatch"


@pytest.mark.parametrize(
    ("reply", "says"),
    [
        ("{hosted: [{type: web_search_call}]}", "hosted[0]: action"),
        ("{hosted: [{type: web_search_call, action: {type: find, url: u, pattern: p}}]}", "hosted[0]"),
        ("{hosted: [{type: image_generation_call, result: 'not base64!'}]}", "must be base64"),
        ("{hosted: [{type: file_search_call, queries: [q], results: [{score: 2}]}]}", "hosted[0]"),
        ("{hosted: [{type: computer_call}]}", "hosted[0]"),
        ("{hosted: [{type: mcp_call, server_label: s, name: n, surprise: 1}]}", "surprise"),
        ("{content: short, annotations: [{type: url_citation, start_index: 0, end_index: 9, url: u}]}",
         "outside the text"),
        ("{hosted: [{type: web_search_call, action: {type: search, query: q}}],"
         " error: {status: 500, message: m}}",
         "cannot also have hosted items"),
    ],
    ids=["no action", "find is find_in_page", "not base64", "score above 1", "not a hosted item",
         "unknown field",
         "citation past the text", "with an error"],
)  # fmt: skip
def test_a_malformed_scripted_item_is_refused_when_the_scenario_loads(
    tmp_path: Path, reply: str, says: str
) -> None:
    with pytest.raises(ScenarioError) as caught:
        simulator(tmp_path, f"replies: [{reply}]")
    assert says in str(caught.value)
    assert "\n" not in str(caught.value)  # one line, saying where


def test_a_hosted_item_id_reused_across_replies_is_refused_when_the_scenario_loads(tmp_path: Path) -> None:
    script = """
    replies:
      - {hosted: [{id: ws_1, type: web_search_call, action: {type: search, query: a}}], content: a}
      - {hosted: [{id: ws_1, type: web_search_call, action: {type: search, query: b}}], content: b}
    """
    with pytest.raises(ScenarioError) as caught:
        simulator(tmp_path, script)
    assert "reuses the hosted item id 'ws_1'" in str(caught.value)


# Hostile: huge and nested items, untrusted text, labels and ids reused, items sent back malformed.


def test_a_huge_scripted_item_is_served_whole_and_streamed_in_pieces(tmp_path: Path) -> None:
    sources = ", ".join(f'{{type: url, url: "https://example.com/{n}"}}' for n in range(2000))
    output = "x" * 1_000_000
    script = f"""
    replies:
      - hosted:
          - {{type: web_search_call, action: {{type: search, query: q, sources: [{sources}]}}}}
          - {{type: mcp_call, server_label: wiki, name: ask, output: {output}}}
        content: done
    """
    sim = simulator(tmp_path, script, cycle=True)
    whole, streamed = post(sim, _body(include=INCLUDE), _body(include=INCLUDE, stream=True), path=PATH)
    output_items = whole.json()["output"]
    assert len(output_items[0]["action"]["sources"]) == 2000
    assert output_items[1]["output"] == output
    assert untolerated("Response", whole.json()) == []
    events = _events(streamed)
    done = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    assert [{**item, "id": None} for item in done] == [{**item, "id": None} for item in output_items]


@pytest.mark.parametrize(("depth", "kept"), [(100, True), (200, False)])
def test_deeply_nested_scripted_fields_are_kept_as_written_within_the_loaders_bound(
    tmp_path: Path, depth: int, kept: bool
) -> None:
    nested: Any = {"type": "string"}
    for _ in range(depth // 2):
        nested = {"type": "object", "properties": {"inner": nested}}
    tools = [{"name": "deep", "input_schema": nested}]
    script = {"replies": [{"hosted": [{"type": "mcp_list_tools", "server_label": "wiki", "tools": tools}]}]}
    if not kept:
        with pytest.raises(ScenarioError, match="nested deeper than"):
            simulator(tmp_path, json.dumps(script))
        return
    (response,) = post(simulator(tmp_path, json.dumps(script)), _body(), path=PATH)
    assert response.status_code == 200
    assert response.json()["output"][0]["tools"][0]["input_schema"] == nested


UNTRUSTED = "\x1b[31mred\x1b[0m </script><script>alert(1)</script> {{ jinja }} ${shell} \u202etxt \U0001f600"


def test_untrusted_text_in_scripted_items_is_served_exactly(tmp_path: Path) -> None:
    text = UNTRUSTED
    hosted = [
        {"type": "web_search_call", "action": {"type": "search", "query": text}},
        {"type": "code_interpreter_call", "code": text, "outputs": [{"type": "logs", "logs": text}]},
        {"type": "mcp_call", "server_label": "wiki", "name": "ask", "arguments": text, "error": text},
    ]
    cited = [{"type": "url_citation", "start_index": 0, "end_index": 3, "url": text, "title": text}]
    script = yaml.safe_dump({"replies": [{"hosted": hosted, "content": text, "annotations": cited}]})
    sim = simulator(tmp_path, script, cycle=True)
    whole, streamed = post(sim, _body(include=INCLUDE), _body(include=INCLUDE, stream=True), path=PATH)
    search, code, call, message = whole.json()["output"]
    assert search["action"]["query"] == code["code"] == code["outputs"][0]["logs"] == UNTRUSTED
    assert call["arguments"] == call["error"] == UNTRUSTED
    assert message["content"][0]["annotations"][0]["title"] == UNTRUSTED
    deltas = "".join(
        e["delta"] for e in _events(streamed) if e["type"] == "response.code_interpreter_call_code.delta"
    )
    assert deltas == UNTRUSTED


def test_an_mcp_server_label_reused_across_turns_is_judged_by_each_request(tmp_path: Path) -> None:
    script = """
    replies:
      - hosted: [{type: mcp_list_tools, server_label: wiki, tools: [{name: ask}]}]
        content: listed
      - hosted: [{type: mcp_call, server_label: wiki, name: ask, output: one}]
        content: first call
      - hosted: [{type: mcp_call, server_label: wiki, name: ask, output: two}]
        content: second call
    """
    sim = simulator(tmp_path, script)
    elsewhere = {**MCP, "server_url": "https://elsewhere.example.com"}  # the same label, another server
    listed, called, unoffered = post(
        sim,
        {"model": "m", "input": "p", "tools": [MCP]},
        {"model": "m", "input": "p", "tools": [elsewhere]},
        {"model": "m", "input": "p", "tools": [{**MCP, "server_label": "docs"}]},
        path=PATH,
    )
    assert listed.status_code == called.status_code == 200
    assert [item["id"] for item in listed.json()["output"]] != [
        item["id"] for item in called.json()["output"]
    ]
    assert unoffered.status_code == 400
    assert unoffered.json()["error"]["code"] == "sim_script_mismatch"


@pytest.mark.parametrize(
    ("item", "param"),
    [
        ({"type": "web_search_call", "status": "completed", "action": {"type": "search", "query": "q"}},
         "input[1].id"),
        ({"type": "mcp_approval_response", "approve": True}, "input[1].approval_request_id"),
        ({"type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": "yes"},
         "input[1].approve"),
    ],
    ids=["hosted item without id", "approval without request", "approval not a boolean"],
)  # fmt: skip
def test_a_malformed_hosted_item_sent_back_is_refused_in_the_apis_words(
    tmp_path: Path, item: dict[str, Any], param: str
) -> None:
    sim = simulator(tmp_path, "replies: [{content: never}]")
    (response,) = post(sim, {"model": "m", "input": [{"role": "user", "content": "p"}, item]}, path=PATH)
    assert response.status_code == 400
    assert response.json()["error"]["param"] == param
    assert response.json()["error"]["message"] == f"Missing required parameter: '{param}'."


@pytest.mark.parametrize(("depth", "status"), [(120, 200), (5000, 400)])
def test_a_hosted_item_sent_back_deeply_nested_is_kept_or_refused_never_a_crash(
    tmp_path: Path, depth: int, status: int
) -> None:
    action = '{"deeper":' * depth + '"q"' + "}" * depth
    item = f'{{"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {action}}}'
    body = f'{{"model": "m", "input": [{{"role": "user", "content": "p"}}, {item}]}}'.encode()
    sim = simulator(tmp_path, "replies: [{content: ok}]")
    (response,) = post(sim, body, path=PATH, raise_app_exceptions=False)
    assert response.status_code == status, response.text[:300]


FORCED = """
replies:
  - {hosted: [{type: web_search_call, action: {type: search, query: q}}], content: Sunny.}
"""


@pytest.mark.parametrize(
    ("choice", "tools", "status", "says"),
    [
        ({"type": "web_search_preview"}, [WEB], 200, None),
        ({"type": "web_search_preview_2025_03_11"}, [{"type": "web_search_preview"}], 200, None),
        ({"type": "image_generation"}, [WEB], 400,
         "Tool choice 'image_generation' not found in 'tools' parameter."),
        ({"type": "mcp", "server_label": "docs"}, [WEB, MCP], 400,
         "Tool choice 'mcp' not found in 'tools' parameter."),
        ({"type": "mcp"}, [WEB, MCP], 400, "Missing required parameter: 'tool_choice.server_label'."),
        ({"type": "file_search"}, [WEB, FILES], 400,
         "the request says tool_choice 'file_search', but the scripted reply has no file_search item"),
    ],
    ids=["web search forced", "a dated web search", "not offered", "mcp label not offered",
         "mcp without label",
         "forced tool unused"],
)  # fmt: skip
def test_a_tool_choice_forcing_a_hosted_tool(
    tmp_path: Path, choice: dict[str, Any], tools: list[Any], status: int, says: str | None
) -> None:
    sim = simulator(tmp_path, FORCED)
    (response,) = post(sim, {"model": "m", "input": "p", "tools": tools, "tool_choice": choice}, path=PATH)
    assert response.status_code == status, response.text
    if says is not None:
        assert says in response.json()["error"]["message"]
    else:
        assert response.json()["tool_choice"] == choice
        assert untolerated("Response", response.json()) == []


def test_the_access_log_says_which_hosted_items_a_reply_served(tmp_path: Path) -> None:
    from sim.scenario.outline import summary
    from sim.scenario.schema import ScriptedReplySpec

    search = {"type": "web_search_call", "action": {"type": "search", "query": "q"}}
    reply = ScriptedReplySpec.model_validate({"hosted": [search], "content": "Sunny."})
    assert summary(reply) == "hosted web_search_call; text 'Sunny.'"


def test_sims_own_client_keeps_hosted_items_and_sends_them_back_as_they_came(tmp_path: Path) -> None:
    from sim.wire.responses.client import reply_from_wire
    from sim.wire.responses.items import message_to_items

    (response,) = post(simulator(tmp_path, EVERY_ITEM), _body(include=INCLUDE), path=PATH)
    output = response.json()["output"]
    message = reply_from_wire(response.json()).message
    assert message.content == "It is sunny in Paris."
    sent = message_to_items(message)
    hosted = [item for item in output if item["type"] not in ("reasoning", "message")]
    assert [item for item in sent if item.get("type") not in ("reasoning", "message", None)] == hosted
    assert sent[-1]["content"][0]["annotations"] == output[-1]["content"][0]["annotations"]


def test_an_item_reference_to_a_response_not_stored_is_refused_as_the_api_says(tmp_path: Path) -> None:
    sim = simulator(tmp_path, "replies: [{content: Sunny.}, {content: never}]")
    (first,) = post(sim, {"model": "m", "input": "p", "store": False}, path=PATH)
    (message,) = first.json()["output"]
    (second,) = post(
        sim, {"model": "m", "input": [{"type": "item_reference", "id": message["id"]}]}, path=PATH
    )
    assert second.status_code == 404
    assert second.json()["error"]["message"] == (
        f"Item with id '{message['id']}' not found. Items are not persisted when `store` is set to false. Try"
        " again with `store` set to true, or remove this item from your input."
    )


def test_an_approval_request_streams_as_the_spec_has_it(tmp_path: Path) -> None:
    body = {"model": "m", "input": "p", "tools": [{**MCP, "require_approval": "always"}], "stream": True}
    (response,) = post(simulator(tmp_path, MCP_APPROVAL), body, path=PATH)
    events = _events(response)
    for event in events:
        assert untolerated("ResponseStreamEvent", event) == [], event
    done = [event["item"] for event in events if event["type"] == "response.output_item.done"]
    assert [item["type"] for item in done] == ["mcp_list_tools", "mcp_approval_request"]
    assert done[1] == {"type": "mcp_approval_request", "id": "mcpr_1", "server_label": "wiki", "name": "ask",
                       "arguments": '{"q":"paris"}'}  # fmt: skip


def test_huge_hosted_items_count_against_the_bounded_store(tmp_path: Path) -> None:
    script = f"""
    replies:
      - {{hosted: [{{type: mcp_call, server_label: wiki, name: ask, output: {"x" * 200_000}}}], content: a}}
      - {{content: b}}
    """
    sim = simulator(tmp_path, script, store_limit=100_000)
    first, chained = post(
        sim,
        {"model": "m", "input": "p", "tools": [MCP]},
        {"model": "m", "input": "more", "tools": [MCP], "previous_response_id": "resp_sim000001"},
        path=PATH,
    )
    assert first.status_code == 200
    assert chained.status_code == 400
    assert chained.json()["error"]["code"] == "previous_response_not_found"


_SERVER = {"type": "mcp", "server_label": "wiki"}


@pytest.mark.parametrize(
    ("tool", "param", "message"),
    [({**_SERVER, "server_url": 5}, "tools[0].server_url",
      "Invalid type for 'tools[0].server_url': expected a string, but got an integer instead."),
     ({**_SERVER, "server_url": ["https://x"]}, "tools[0].server_url",
      "Invalid type for 'tools[0].server_url': expected a string, but got an array instead."),
     ({**_SERVER, "connector_id": 5}, "tools[0].connector_id",
      "Invalid type for 'tools[0].connector_id': expected a string, but got an integer instead."),
     ({**_SERVER, "server_url": "https://x", "headers": "x"}, "tools[0].headers",
      "Invalid type for 'tools[0].headers': expected an object, but got a string instead."),
     ({**_SERVER, "server_url": "https://x", "allowed_tools": [1]}, "tools[0].allowed_tools",
      "Invalid type for 'tools[0].allowed_tools': expected one of an array of strings or an object, but got"
      " an array instead.")],
    ids=["url a number", "url a list", "connector a number", "headers a string", "allowed tools numbers"],
)  # fmt: skip
def test_an_mcp_server_with_fields_of_the_wrong_type_is_refused(
    tmp_path: Path, tool: dict[str, Any], param: str, message: str
) -> None:
    """Each was served 200, echoing a tool the spec has no shape for."""
    sim = simulator(tmp_path, "replies: [{content: Sunny.}]")
    (response,) = post(sim, {"model": "m", "input": "p", "tools": [tool]}, path=PATH)
    assert response.status_code == 400, response.text
    assert response.json()["error"] == {"message": message, "type": "invalid_request_error", "param": param,
                                        "code": "invalid_type"}  # fmt: skip
