"""Grouping a cassette's chat completions into conversations: requests that take turns, unreadable ones."""

from __future__ import annotations

import asyncio
import gc
import json
import traceback
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from sim.cassette import reader
from sim.cassette.conversations import HttpFailure, conversations
from sim.cassette.convert import runs, scenario_data
from sim.cassette.reader import read_cassette
from sim.cli import app
from sim.core.messages import SharedPrefix, UserMessage
from sim.player import play_file
from sim.scenario import load_scenario
from tests.cassette.test_compact import BUNDLED, compacted
from tests.corpus import needs_corpus, real_cassettes

TOOL = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}


def calling(call_id: str, city: str) -> dict[str, Any]:
    arguments = json.dumps({"city": city})
    call = {"id": call_id, "type": "function", "function": {"name": "lookup", "arguments": arguments}}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def interaction(messages: list[dict[str, Any]], reply: dict[str, Any]) -> dict[str, Any]:
    finish = "tool_calls" if reply.get("tool_calls") else "stop"
    body = {"choices": [{"index": 0, "message": reply, "finish_reason": finish}]}
    request_body = json.dumps({"model": "m", "messages": messages, "tools": [TOOL]})
    return {
        "request": {"method": "POST", "uri": "https://api.openai.com/v1/chat/completions", "headers": {},
                    "body": request_body},
        "response": {"status": {"code": 200, "message": "OK"}, "headers": {},
                     "body": {"string": json.dumps(body)}},
    }  # fmt: skip


def conversation(city: str) -> list[dict[str, Any]]:
    """Two requests: a question answered with a call, then the result answered with text."""
    first = [{"role": "user", "content": f"Weather in {city}?"}]
    call = calling("call_1", city)
    second = [*first, call, {"role": "tool", "tool_call_id": "call_1", "content": f"{city}: sunny"}]
    return [
        interaction(first, call),
        interaction(second, {"role": "assistant", "content": f"Sunny in {city}."}),
    ]


def write(tmp_path: Path, interactions: list[dict[str, Any]]) -> Path:
    path = tmp_path / "cassette.yaml"
    path.write_text(yaml.safe_dump({"interactions": interactions, "version": 1}))
    return path


def test_conversations_that_take_turns_stay_whole(tmp_path: Path) -> None:
    a1, a2 = conversation("Paris")
    b1, b2 = conversation("Oslo")
    path = write(tmp_path, [a1, b1, a2, b2])
    found = conversations(read_cassette(path))
    assert [[e.interaction.index for e in c.exchanges] for c in found] == [[0, 2], [1, 3]]
    result = CliRunner().invoke(app, ["convert", str(path), "-o", str(tmp_path / "out.yaml")])
    assert result.exit_code == 0, result.output
    for name, city in (("out.yaml", "Paris"), ("out-2.yaml", "Oslo")):
        scenario = load_scenario(tmp_path / name)
        assert scenario.prompt == f"Weather in {city}?"
        assert len(scenario.replies) == 2
        assert scenario.results == {"call_1": f"{city}: sunny"}
        assert asyncio.run(play_file(tmp_path / name)).problems == ()


def test_identical_first_requests_are_told_apart_by_the_reply_each_continues(tmp_path: Path) -> None:
    a1, a2 = conversation("Paris")
    b1 = interaction(json.loads(a1["request"]["body"])["messages"], calling("call_9", "Lyon"))
    b2_messages = [*json.loads(a1["request"]["body"])["messages"], calling("call_9", "Lyon"),
                   {"role": "tool", "tool_call_id": "call_9", "content": "Lyon: rain"}]  # fmt: skip
    b2 = interaction(b2_messages, {"role": "assistant", "content": "Rain in Lyon."})
    found = conversations(read_cassette(write(tmp_path, [a1, b1, a2, b2])))
    assert [[e.interaction.index for e in c.exchanges] for c in found] == [[0, 2], [1, 3]]


def test_an_unreadable_request_does_not_merge_the_next_conversation(tmp_path: Path) -> None:
    # a role no API takes (`function` was the example until sim read legacy function messages)
    legacy = [{"role": "user", "content": "hi"}, {"role": "narrator", "name": "f", "content": "x"}]
    a1, a2 = conversation("Paris")
    path = write(tmp_path, [interaction(legacy, {"role": "assistant", "content": "ok"}), a1, a2])
    found = conversations(read_cassette(path))
    assert [[e.interaction.index for e in c.exchanges] for c in found] == [[0], [1, 2]]
    assert found[0].exchanges[0].request_problem == "messages[1].role: unsupported role 'narrator'"
    result = CliRunner().invoke(app, ["convert", str(path), "-o", str(tmp_path / "out.yaml")])
    assert result.exit_code == 0, result.output
    assert "skipped interaction 0: its request cannot be read" in result.output
    assert load_scenario(tmp_path / "out.yaml").prompt == "Weather in Paris?"
    assert not (tmp_path / "out-2.yaml").exists()
    assert asyncio.run(play_file(tmp_path / "out.yaml")).problems == ()


def test_a_streamed_reply_holding_line_separators_is_read_whole(tmp_path: Path) -> None:
    """U+2028 and U+0085 are text inside a chunk, not line breaks: the stream splits on \\n, \\r only."""
    said = "first\u2028second\u0085third"
    chunks = [
        {
            "choices": [
                {"index": 0, "delta": {"role": "assistant", "content": said[:8]}, "finish_reason": None}
            ]
        },
        {"choices": [{"index": 0, "delta": {"content": said[8:]}, "finish_reason": "stop"}]},
    ]
    stream = "".join(f"data: {json.dumps(c, ensure_ascii=False)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    streamed = {
        "request": {"method": "POST", "uri": "https://api.openai.com/v1/chat/completions", "headers": {},
                    "body": json.dumps({"messages": [{"role": "user", "content": "hi"}], "stream": True})},
        "response": {"status": {"code": 200, "message": "OK"},
                     "headers": {"content-type": ["text/event-stream"]}, "body": {"string": stream}},
    }  # fmt: skip
    path = write(tmp_path, [streamed])
    (found,) = conversations(read_cassette(path))
    reply = found.exchanges[0].reply
    assert not isinstance(reply, HttpFailure) and reply.message.content == said
    assert CliRunner().invoke(app, ["check", str(path)]).exit_code == 0
    assert CliRunner().invoke(app, ["convert", str(path), "-o", str(tmp_path / "s.yaml")]).exit_code == 0
    assert load_scenario(tmp_path / "s.yaml").replies[0].content == said


def test_a_handoff_that_changes_instructions_and_tools_continues_the_conversation(tmp_path: Path) -> None:
    """An agent hands off to another: the next request has new instructions and tools, the same dialogue."""
    other = {"type": "function", "function": {"name": "book", "parameters": {"type": "object"}}}
    first = [{"role": "system", "content": "You triage."}, {"role": "user", "content": "Book Paris."}]
    handoff = calling("call_1", "Paris")
    second = [{"role": "system", "content": "You book trips."}, *first[1:], handoff,
              {"role": "tool", "tool_call_id": "call_1", "content": "Paris: sunny"}]  # fmt: skip
    later = interaction(second, {"role": "assistant", "content": "Booked."})
    later["request"]["body"] = json.dumps({"model": "m", "messages": second, "tools": [other]})
    path = write(tmp_path, [interaction(first, handoff), later])
    (found,) = conversations(read_cassette(path))
    assert [m.role for m in found.exchanges[1].new_messages] == ["system", "assistant", "tool"]
    result = CliRunner().invoke(app, ["convert", str(path), "-o", str(tmp_path / "handoff.yaml")])
    assert result.exit_code == 0, result.output
    scenario = load_scenario(tmp_path / "handoff.yaml")
    assert [tool.name for tool in scenario.tools] == ["lookup", "book"]  # type: ignore[union-attr]
    assert asyncio.run(play_file(tmp_path / "handoff.yaml")).problems == ()


def responses_interaction(items: list[dict[str, Any]], output: list[dict[str, Any]]) -> dict[str, Any]:
    body = {"id": f"resp_{len(items)}", "object": "response", "status": "completed", "output": output}
    request_body = json.dumps(
        {"model": "m", "input": items, "tools": [{"type": "function", "name": "lookup"}]}
    )
    return {
        "request": {"method": "POST", "uri": "https://api.openai.com/v1/responses", "headers": {},
                    "body": request_body},
        "response": {"status": {"code": 200, "message": "OK"}, "headers": {},
                     "body": {"string": json.dumps(body)}},
    }  # fmt: skip


def interleaved_cassettes(tmp_path: Path) -> dict[str, Path]:
    """A reply calling two tools, sent back as call A, output A, call B, output B (as the API accepts)."""
    user = {"role": "user", "content": "Weather in Paris and Rome?"}
    a = {"type": "function_call", "call_id": "call_a", "name": "lookup", "arguments": '{"city":"Paris"}'}
    b = {"type": "function_call", "call_id": "call_b", "name": "lookup", "arguments": '{"city":"Rome"}'}
    outputs = [
        {"type": "function_call_output", "call_id": c, "output": f"{c}: sunny"} for c in ("call_a", "call_b")
    ]
    text = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "Both sunny."}],
    }
    responses = [
        responses_interaction([user], [a, b]),
        responses_interaction([user, a, outputs[0], b, outputs[1]], [text]),
    ]
    call_a, call_b = calling("call_a", "Paris"), calling("call_b", "Rome")
    both = {**call_a, "tool_calls": [*call_a["tool_calls"], *call_b["tool_calls"]]}
    results = [{"role": "tool", "tool_call_id": c, "content": f"{c}: sunny"} for c in ("call_a", "call_b")]
    chat_user = {"role": "user", "content": user["content"]}
    chat = [
        interaction([chat_user], both),
        interaction(
            [chat_user, call_a, results[0], call_b, results[1]],
            {"role": "assistant", "content": "Both sunny."},
        ),
    ]
    paths = {}
    for name, interactions in (("responses", responses), ("chat", chat)):
        paths[name] = tmp_path / f"{name}.yaml"
        paths[name].write_text(yaml.safe_dump({"interactions": interactions, "version": 1}))
    return paths


def test_calls_sent_back_each_followed_by_its_output_are_one_assistant_turn(tmp_path: Path) -> None:
    for api, path in interleaved_cassettes(tmp_path).items():
        (found,) = conversations(read_cassette(path))
        second = found.exchanges[1].new_messages
        assert [m.role for m in second] == ["assistant", "tool", "tool"], api
        assert [c.id for c in second[0].tool_calls] == ["call_a", "call_b"]  # type: ignore[union-attr]
        target = tmp_path / f"{api}-scenario.yaml"
        converted = CliRunner().invoke(app, ["convert", str(path), "-o", str(target)])
        assert converted.exit_code == 0, converted.output
        written = target.read_text()
        assert "result not recorded" not in written and "call_b: sunny" in written
        assert asyncio.run(play_file(target)).problems == (), api


def test_among_many_branches_a_request_joins_the_one_whose_reply_it_carries(tmp_path: Path) -> None:
    """200 conversations ask the same question and each gets its own call; a result sent for the call of
    branch 117 joins branch 117 (one whose dialogue it repeats and whose reply it carries), and one that
    repeats only the question starts nothing new but joins the newest branch it continues."""
    question = [{"role": "user", "content": "Weather?"}]
    branches = [interaction(question, calling(f"call_{n}", f"city {n}")) for n in range(200)]
    result = [*question, calling("call_117", "city 117"),
              {"role": "tool", "tool_call_id": "call_117", "content": "sunny"}]  # fmt: skip
    answered = interaction(result, {"role": "assistant", "content": "Sunny."})
    again = interaction(
        [*question, {"role": "user", "content": "Anyone?"}], {"role": "assistant", "content": "No"}
    )
    found = conversations(read_cassette(write(tmp_path, [*branches, answered, again])))
    assert len(found) == 200
    assert [e.interaction.index for e in found[117].exchanges] == [117, 200]
    assert [e.interaction.index for e in found[199].exchanges] == [199, 201]
    assert found[117].exchanges[1].new_messages[-1].role == "tool"


def _read(path: Path) -> list[list[tuple[Any, ...]]]:
    return [
        [(e.interaction.index, list(e.messages), e.new_messages, e.tools, e.streamed, e.reply,
          e.request_problem, e.continues, e.renamed_calls) for e in found.exchanges]
        for found in conversations(read_cassette(path))
    ]  # fmt: skip


def _read_whole(path: Path, monkeypatch: pytest.MonkeyPatch) -> list[list[tuple[Any, ...]]]:
    """`_read`, each plain request parsed whole (as before plain bodies were read from what they add)."""
    with monkeypatch.context() as patched:
        patched.setattr(reader.PlainGrowth, "find", lambda self: None)
        return _read(path)


def test_a_plain_request_that_repeats_the_one_before_is_read_from_what_it_adds(tmp_path: Path) -> None:
    a1, a2 = conversation("Paris")
    path = write(tmp_path, [a1, a2])
    first, second = read_cassette(path).interactions
    appended = second.request.appended
    assert appended is not None and appended.base is first.request
    assert appended.items == json.loads(a2["request"]["body"])["messages"][1:]
    assert first.request.appended is None


def test_only_an_addition_to_the_conversation_list_is_read_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A body whose text only grows inside the last message (its content parts), or in another list, is
    not taken for appended messages: it is read whole, and reads as it would have."""
    parts = [{"type": "text", "text": "Weather in Paris?"}]
    grown = [*parts, {"type": "text", "text": "And Oslo?"}]
    answer = {"role": "assistant", "content": "Sunny."}
    bodies = [
        interaction([{"role": "user", "content": parts}], answer),
        interaction([{"role": "user", "content": grown}], answer),
    ]
    tools = json.loads(bodies[1]["request"]["body"])
    tools["tools"] = [TOOL, {**TOOL, "function": {**TOOL["function"], "name": "other"}}]
    bodies.append({**bodies[1], "request": {**bodies[1]["request"], "body": json.dumps(tools)}})
    path = write(tmp_path, bodies)
    assert [i.request.appended for i in read_cassette(path).interactions] == [None, None, None]
    assert _read(path) == _read_whole(path, monkeypatch)
    last = conversations(read_cassette(path))[-1].exchanges[-1]
    assert [tool.name for tool in last.tools] == ["lookup", "other"]


def test_a_hostile_addition_is_refused_as_a_whole_body_would_be(tmp_path: Path) -> None:
    """Items nested deeper than sim reads (yet not so deep that Python's parser would refuse them),
    appended to a plain body: the request is refused in one line, as a whole body is."""
    first, _ = conversation("Paris")
    text = first["request"]["body"]
    end = text.index('], "tools"')
    hostile = text[:end] + ", " + "[" * 200 + "]" * 200 + text[end:]
    path = write(tmp_path, [first, {**first, "request": {**first["request"], "body": hostile}}])
    assert read_cassette(path).interactions[1].request.appended is None
    exchanges = [e for c in conversations(read_cassette(path)) for e in c.exchanges]
    assert exchanges[1].request_problem == "request body is not a JSON object"


@pytest.mark.parametrize("form", ["plain", "compact"])
def test_bundled_cassettes_read_the_same_from_what_each_request_adds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, form: str
) -> None:
    for original in BUNDLED:
        path = original if form == "plain" else compacted(original, tmp_path)
        assert _read(path) == _read_whole(path, monkeypatch), original.name


@needs_corpus
@pytest.mark.parametrize("folder", ["", "responses"])
def test_real_cassettes_read_the_same_from_what_each_request_adds(
    monkeypatch: pytest.MonkeyPatch, folder: str
) -> None:
    appended = 0
    for path in real_cassettes(folder):
        assert _read(path) == _read_whole(path, monkeypatch), path.name
        appended += sum(i.request.appended is not None for i in read_cassette(path).interactions)
    assert appended > 0  # the corpus's sessions do repeat the request before


def compact_chain(count: int) -> str:
    """A compact cassette of `count` requests, each the one before with one more user message (no reply
    carried), written as `sim compact` writes an appended item."""
    base = '{\n  "model":"m",\n  "messages":[\n    ' + json.dumps({"role": "user", "content": "hi 0"})
    base += "\n  ]\n}"
    at = len(base) - len("\n  ]\n}")
    answer = json.dumps({"choices": [{"index": 0, "finish_reason": "stop",
                                      "message": {"role": "assistant", "content": "ok"}}]})  # fmt: skip

    def one(body: object) -> dict[str, Any]:
        return {"request": {"method": "POST", "uri": "https://api.openai.com/v1/chat/completions",
                            "headers": {}, "body": body},
                "response": {"status": {"code": 200, "message": "OK"}, "headers": {},
                             "body": {"string": answer}}}  # fmt: skip

    interactions = [one(base)]
    for number in range(1, count):
        add = ",\n    " + json.dumps({"role": "user", "content": f"hi {number}"})
        interactions.append(one({"extends": number - 1, "at": at, "add": add}))
        at += len(add)
    return yaml.safe_dump({"interactions": interactions, "version": 1, "sim": {"compact": True}}, width=10**9)


def _work_per_request(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, count: int) -> float:
    """Messages hashed, compared and walked while a chain of `count` requests is grouped into a conversation
    and converted (each request a run of its own, as it adds a user message), per request."""
    work = [0]
    hashed, compared, walked = UserMessage.__hash__, UserMessage.__eq__, SharedPrefix.__iter__

    def counting_hash(self: UserMessage) -> int:
        work[0] += 1
        return hashed(self)

    def counting_eq(self: UserMessage, other: object) -> bool:
        work[0] += 1
        return compared(self, other)

    def counting_iter(self: SharedPrefix) -> Any:
        for message in walked(self):
            work[0] += 1
            yield message

    path = tmp_path / f"chain{count}.yaml"
    path.write_text(compact_chain(count))
    with monkeypatch.context() as patched:
        patched.setattr(UserMessage, "__hash__", counting_hash)
        patched.setattr(UserMessage, "__eq__", counting_eq)
        patched.setattr(SharedPrefix, "__iter__", counting_iter)
        found = conversations(read_cassette(path))
        scenarios = [scenario_data(run, name="s", source="c") for run in runs(found[0])]
    assert [len(c.exchanges) for c in found] == [count] and len(scenarios) == count
    assert scenarios[-1]["prompt"] == f"hi {count - 1}"
    return work[0] / count


def test_a_long_compact_chain_is_read_in_time_linear_in_its_length(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each request adds a user message and carries no reply (so no request is taken for the reply's
    continuation at once): the work per request stays flat from 50 to 200 requests (it had grown with the
    chain: every request hashed and compared the whole conversation before it)."""
    short, long = (_work_per_request(tmp_path, monkeypatch, count) for count in (50, 200))
    assert long <= 1.5 * short, (short, long)


def test_grouping_leaves_the_collector_paused(tmp_path: Path) -> None:
    """Grouping builds messages and no cycle: a collection then would only walk what was read, again and
    again as a long file is (a tenth of `sim check` at 16,000 interactions)."""
    path = tmp_path / "chain.yaml"
    path.write_text(compact_chain(100))
    cassette = read_cassette(path)
    collections: list[str] = []

    def count(phase: str, info: dict[str, int]) -> None:
        grouping = [frame.name for frame in traceback.extract_stack() if frame.name == "_conversations"]
        collections.extend(grouping)  # a collection while the requests are grouped (not as it starts or ends)

    thresholds = gc.get_threshold()
    gc.set_threshold(1)  # a collection at every allocation the collector sees
    gc.callbacks.append(count)
    try:
        found = conversations(cassette)
    finally:
        gc.callbacks.remove(count)
        gc.set_threshold(*thresholds)
    assert len(found[0].exchanges) == 100 and collections == [] and gc.isenabled()
