"""Secrets out of what is written and found in what others wrote: decoded text, streams joined, keys as
tokens, placeholders told apart from credentials."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from sim.cassette.audit import audit
from sim.cassette.reader import read_cassette
from sim.cassette.scrubbing import Scrubber, credentials_in_body
from sim.cassette.secrets import REDACTED, is_placeholder, require_scrubbable
from sim.cassette.writer import HttpExchange, write_cassette
from sim.core.errors import ConfigurationError
from sim.core.messages import AssistantMessage, ToolCall
from sim.core.model import ModelReply
from sim.wire.chat.protocol import chunks_to_wire
from tests.scripts import chat_cassette

KEY = "sk-RECOGNISABLE-key-5f2a9c7e31d4"
ORG = "org-RECOGNISABLEorg9f8e7d6c"
PROJECT = "proj_RECOGNISABLEproj1a2b3c4d"


def sse(text: str, arguments: str | None = None) -> str:
    """A real-shaped Chat Completions stream whose content (and one call's arguments) is `text`."""
    calls = (ToolCall(id="call_1", name="shell", arguments=arguments),) if arguments else ()
    reply = ModelReply(message=AssistantMessage(content=text, tool_calls=calls), finish_reason="stop")
    chunks = chunks_to_wire(reply, completion_id="c", created=1, model="m", usage=None, piece_chars=5)
    return "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks) + "data: [DONE]\n\n"


def joined(stream: str) -> tuple[str, str]:
    content, arguments = [], []
    for line in stream.split("\n"):
        if line.startswith("data: {"):
            for choice in json.loads(line[6:])["choices"]:
                content.append(choice["delta"].get("content") or "")
                for call in choice["delta"].get("tool_calls") or []:
                    arguments.append(call["function"].get("arguments") or "")
    return "".join(content), "".join(arguments)


def test_a_key_split_across_stream_chunks_is_scrubbed_as_a_whole() -> None:
    said = f"Your key is {KEY}, org {ORG}\nproject {PROJECT}."
    stream = sse(said, arguments=json.dumps({"command": f"echo {KEY}"}))
    assert KEY not in stream and KEY in joined(stream)[0]  # no chunk holds it: only the whole text does
    cleaned = Scrubber([KEY]).stream(stream)
    content, arguments = joined(cleaned)
    assert content == f"Your key is {REDACTED}, org {REDACTED}\nproject {REDACTED}."
    assert json.loads(arguments) == {"command": f"echo {REDACTED}"}
    for secret in (KEY, ORG, PROJECT):
        assert secret not in cleaned and secret not in "".join(joined(cleaned))


def test_a_stream_without_secrets_is_kept_byte_for_byte() -> None:
    stream = sse("Nothing to hide here, just text.")
    assert Scrubber([KEY]).stream(stream) == stream


def test_credentials_at_the_start_of_a_line_are_found_in_decoded_text() -> None:
    body = json.dumps({"content": f"ids:\n{ORG}\n{PROJECT}\n{KEY}"})  # JSON writes "\norg-..."
    assert set(credentials_in_body(body)) == {"organization id", "project id", "API key"}
    scrubbed = Scrubber().value(json.loads(body))
    assert scrubbed == {"content": f"ids:\n{REDACTED}\n{REDACTED}\n{REDACTED}"}


def test_a_split_key_in_a_foreign_stream_is_a_serious_finding(tmp_path: Path) -> None:
    cassette = tmp_path / "foreign.yaml"
    asked = {"messages": [{"role": "user", "content": "hi"}], "stream": True}
    chat_cassette(
        cassette, asked, sse(f"take {ORG}"), response_headers={"content-type": ["text/event-stream"]}
    )
    findings = [f.what for f in audit(read_cassette(cassette)) if f.severity == "serious"]
    assert findings == ["organization id in the response"]


GLUED = ["token{}", "xx{}yy", "_{}_", "{}-", "{}0"]
"""The live key glued to other text, each way issue 34 found it written whole."""
HEX_KEY = "3f9a0c7e51d24b86a1e0c9f7d3b2a485"
"""Shaped like an Azure OpenAI key: nothing but the recorder's knowing it tells it from ordinary text."""


def test_a_known_secret_is_removed_wherever_it_stands_in_text_but_never_from_a_number() -> None:
    scrubber = Scrubber(["12345678"])
    value = {"total_tokens": 12345678, "id": "a12345678b", "text": "key 12345678.", "n": "x-12345678"}
    assert scrubber.value(value) == {
        "total_tokens": 12345678,  # a number is no text: the key cannot stand in it
        "id": f"a{REDACTED}b",
        "text": f"key {REDACTED}.",
        "n": f"x-{REDACTED}",
    }


def test_a_secret_shorter_than_a_key_may_be_is_removed_only_as_a_whole_token() -> None:
    """Only an account id can be that short (a short key is refused): inside a longer word it is a word."""
    scrubber = Scrubber(["org-1"])
    assert scrubber.text("org-1, org-12 and xorg-1") == f"{REDACTED}, org-12 and xorg-1"


@pytest.mark.parametrize("key", [KEY, HEX_KEY])
@pytest.mark.parametrize("glue", GLUED)
def test_the_live_key_glued_to_other_text_is_removed_from_every_field(
    tmp_path: Path, glue: str, key: str
) -> None:
    """In the URL, headers, a JSON body, the `sim:` block, and split across the chunks of a stream."""
    glued, remains = glue.format(key), glue.format(REDACTED)
    stream = sse(f"it is {glued}.", arguments=json.dumps({"command": f"echo {glued}"}))
    assert key not in stream  # split across chunks: only the joined text holds it
    exchange = HttpExchange(
        method="POST",
        uri=f"https://api.example.com/v1/chat/completions?note={glued}",
        request_headers={"x-note": [glued]},
        request_body=json.dumps({"messages": [{"role": "user", "content": f"say {glued}"}]}).encode(),
        status=200,
        reason="OK",
        response_headers={"content-type": ["text/event-stream"], "x-echo": [glued]},
        response_body=stream.encode(),
    )
    path = tmp_path / "out.yaml"
    write_cassette(path, [exchange], sim={"note": glued}, secrets=(key,))
    text = path.read_text()
    assert key not in text
    data = yaml.safe_load(text)
    request, response = data["interactions"][0]["request"], data["interactions"][0]["response"]
    assert request["uri"].endswith(f"?note={remains}") and request["headers"]["x-note"] == [remains]
    assert json.loads(request["body"])["messages"][0]["content"] == f"say {remains}"
    assert response["headers"]["x-echo"] == [remains] and data["sim"] == {"note": remains}
    content, arguments = joined(response["body"]["string"])
    assert content == f"it is {remains}." and json.loads(arguments) == {"command": f"echo {remains}"}


@pytest.mark.parametrize("key", ["42", "x", "sim", "1234567"])
def test_keys_too_short_to_scrub_are_refused_without_being_shown(key: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        require_scrubbable("OPENAI_API_KEY", key)
    assert str(caught.value) == (
        f"OPENAI_API_KEY has {len(key)} characters: sim records only with keys of at least 8, since a"
        " shorter one cannot be told apart from ordinary text (a local endpoint takes any longer placeholder)"
    )


def test_the_pytest_markers_recorder_removes_the_glued_key_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The marker's vcrpy persister writes through the same scrubbing writer, with OPENAI_API_KEY."""
    from vcr.request import Request

    from sim.cassette.vcr_support import sim_vcr

    monkeypatch.setenv("OPENAI_API_KEY", HEX_KEY)
    said = " ".join(glue.format(HEX_KEY) for glue in GLUED)
    body = json.dumps({"messages": [{"role": "user", "content": said}]})
    uri = f"https://api.example.com/v1/chat/completions?note={said[:40]}"
    request = Request("POST", uri, body, {"x-note": said})
    response = {"status": {"code": 200, "message": "OK"}, "headers": {"content-type": ["text/event-stream"]},
                "body": {"string": sse(said).encode()}}  # fmt: skip
    path = tmp_path / "marker.yaml"
    sim_vcr("all").persister.save_cassette(str(path), {"requests": [request], "responses": [response]}, None)
    text = path.read_text()
    streamed = yaml.safe_load(text)["interactions"][0]["response"]["body"]["string"]
    assert HEX_KEY not in text and joined(streamed)[0] == " ".join(glue.format(REDACTED) for glue in GLUED)


def test_a_key_holding_a_bracket_of_the_redaction_is_refused_since_the_redaction_could_spell_it() -> None:
    key = "d>abcdefgh-0123"
    glued = "Xd>abcdefgh-0123abcdefgh-0123"  # the key, then what follows it: `<redacted>` ends in `d>`
    assert key in Scrubber([key]).text(glued)  # why it is refused
    for bad in (key, "sk-<0123456789"):
        with pytest.raises(ConfigurationError) as caught:
            require_scrubbable("OPENAI_API_KEY", bad)
        said = str(caught.value)
        assert said.startswith("OPENAI_API_KEY holds a < or a >") and bad not in said


@pytest.mark.parametrize(
    "value",
    ["AUTHORIZATION-XXX", "OPENAI-ORG-XXX", "COOKIE-XXX", "<filtered>", "REDACTED", "***", "Bearer dummy",
     "Bearer test_openai_api_key", "Bearer <OPENAI_API_KEY>", "fake-key", "", "xxxxxxxx"],
)  # fmt: skip
def test_placeholders_are_not_secrets(value: str) -> None:
    assert is_placeholder(value)


@pytest.mark.parametrize(
    "value",
    [f"Bearer {KEY}", ORG, PROJECT, "Bearer sk-test-abcdefghijklmnop1234", "a8f9s7d6f5g4h3j2k1l0qw3rty9u",
     "session=7f3a9c2e81b4d6f0a5e3c1b2d4f6a8c0"],
)  # fmt: skip
def test_values_shaped_like_credentials_are_not_placeholders(value: str) -> None:
    assert not is_placeholder(value)


def test_placeholder_headers_are_notes_and_real_ones_serious(tmp_path: Path) -> None:
    def cassette(headers: dict[str, list[str]]) -> list[tuple[str, str]]:
        path = tmp_path / "c.yaml"
        reply = {"choices": [{"index": 0, "finish_reason": "stop",
                              "message": {"role": "assistant", "content": "hello"}}]}  # fmt: skip
        asked = {"messages": [{"role": "user", "content": "hi"}]}
        chat_cassette(path, asked, reply, request_headers=headers)
        return [(f.severity, f.what) for f in audit(read_cassette(path))]

    crewai = {"authorization": ["AUTHORIZATION-XXX"], "openai-organization": ["OPENAI-ORG-XXX"],
              "cookie": ["COOKIE-XXX"]}  # fmt: skip
    assert all(severity == "info" for severity, _ in cassette(crewai))
    assert ("serious", "request header authorization is recorded") in cassette(
        {"authorization": [f"Bearer {KEY}"]}
    )


def test_the_writer_refuses_nothing_and_writes_no_secret(tmp_path: Path) -> None:
    said = f"line one\n{ORG} and {KEY}"
    exchange = HttpExchange(
        method="POST",
        uri="https://api.example.com/v1/chat/completions",
        request_headers={"authorization": [f"Bearer {KEY}"], "x-note": [f"key {KEY}"]},
        request_body=json.dumps({"messages": [{"role": "user", "content": said}]}).encode(),
        status=200,
        reason="OK",
        response_headers={"content-type": ["text/event-stream"]},
        response_body=sse(said).encode(),
    )
    path = tmp_path / "out.yaml"
    write_cassette(path, [exchange], sim={"note": said}, secrets=(KEY,))
    text = path.read_text()
    for secret in (KEY, ORG, KEY[3:], ORG[4:]):
        assert secret not in text
    recorded = read_cassette(path).interactions[0]
    assert joined(recorded.response.body.decode())[0] == f"line one\n{REDACTED} and {REDACTED}"
    assert [f for f in audit(read_cassette(path)) if f.interaction is not None] == []  # no secret left


def written(tmp_path: Path, body: str, content_type: str = "application/json") -> str:
    """The cassette text written for one exchange whose response body is `body`."""
    headers = {"content-type": [content_type]}
    exchange = HttpExchange(
        method="POST", uri="https://api.example.com/v1/batches", request_headers={}, request_body=None,
        status=200, reason="OK", response_headers=headers, response_body=body.encode(),
    )  # fmt: skip
    path = tmp_path / "out.yaml"
    write_cassette(path, [exchange], sim=None, secrets=(KEY,))
    return path.read_text()


def no_key_anywhere(text: str, tmp_path: Path) -> None:
    """Neither the key nor any of its escaped spellings is written, and `sim check` finds nothing."""
    escaped = "".join(f"\\u{ord(c):04x}" for c in KEY)
    for spelling in (KEY, KEY[3:], escaped, escaped[6:]):
        assert spelling not in text
    path = tmp_path / "check.yaml"
    path.write_text(text)
    assert [f for f in audit(read_cassette(path)) if f.severity == "serious"] == []


def test_json_lines_are_scrubbed_line_by_line_in_decoded_text(tmp_path: Path) -> None:
    """Batch output: one JSON document a line. A key after a JSON `\\n` escape, or `\\u`-escaped, is a key."""
    escaped = "".join(f"\\u{ord(c):04x}" for c in KEY)
    lines = [
        json.dumps({"custom_id": "1", "response": {"body": {"content": f"first line\n{KEY}"}}}),
        '{"custom_id": "2", "response": {"body": {"content": "' + escaped + '"}}}',
        "not json, and " + KEY,
    ]
    body = "\n".join(lines) + "\n"
    assert f"\\n{KEY}" in body  # after a `\n` escape: no whole-token rule on the raw text catches it
    text = written(tmp_path, body, "application/jsonl")
    no_key_anywhere(text, tmp_path)
    found = credentials_in_body(body)
    assert found == ["API key"]  # the audit reads each line decoded too


def test_every_streamed_text_field_is_joined_before_scrubbing(tmp_path: Path) -> None:
    """`reasoning_content` (as some servers stream it) and the legacy `function_call.arguments`."""
    pieces = [KEY[:7], KEY[7:15], KEY[15:]]
    chunks = [
        {"choices": [{"index": 0, "delta": {"reasoning_content": piece}}]} for piece in ["key: ", *pieces]
    ]
    chunks += [{"choices": [{"index": 0, "delta": {"function_call": {"arguments": piece}}}]}
               for piece in ['{"k": "', *pieces, '"}']]  # fmt: skip
    stream = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks) + "data: [DONE]\n\n"
    assert KEY not in stream
    no_key_anywhere(written(tmp_path, stream, "text/event-stream"), tmp_path)
    assert credentials_in_body(stream) == ["API key"]


def test_a_url_encoded_key_is_scrubbed(tmp_path: Path) -> None:
    body = f"redirect to https://example.com/cb?token%3D{KEY}&auth=Bearer%20{KEY}"
    no_key_anywhere(written(tmp_path, body, "text/plain"), tmp_path)


def test_a_key_inside_a_base64_field_is_scrubbed(tmp_path: Path) -> None:
    import base64

    encoded = base64.b64encode(f"the key is {KEY}".encode()).decode()
    text = written(tmp_path, json.dumps({"data": [{"b64_json": encoded}]}))
    assert encoded not in text and KEY not in text
    stored = json.loads(read_cassette_body(tmp_path))
    assert base64.b64decode(stored["data"][0]["b64_json"]).decode() == f"the key is {REDACTED}"


def read_cassette_body(tmp_path: Path) -> str:
    return read_cassette(tmp_path / "out.yaml").interactions[0].response.body.decode()


def test_a_stream_opening_with_long_keep_alives_is_still_a_stream(tmp_path: Path) -> None:
    stream = ": keep-alive\n\n" * 400 + sse(f"key {KEY}")
    assert stream.index("data:") > 4096
    for kind in ("text/event-stream", "application/octet-stream"):  # known by its lines too
        no_key_anywhere(written(tmp_path, stream, kind), tmp_path)
        assert joined(read_cassette_body(tmp_path))[0] == f"key {REDACTED}"  # the pieces were joined


_HOSTED_WITH_KEYS = f"""
prompt: p
replies:
  - hosted:
      - {{type: web_search_call, action: {{type: search, query: "find {KEY}"}}}}
      - {{type: code_interpreter_call, code: "print('{KEY}')", outputs: [{{type: logs, logs: "{KEY}"}}]}}
      - {{type: mcp_call, server_label: wiki, name: ask, arguments: {{q: "{KEY}"}}, output: "{KEY}"}}
    tool_calls: [{{name: note, input: "key {KEY} here"}}]
"""


@pytest.mark.parametrize("stream", [False, True], ids=["json", "streamed"])
def test_keys_in_hosted_items_and_custom_inputs_are_scrubbed(tmp_path: Path, stream: bool) -> None:
    """The new items' text fields (a web search query, code and its logs, an MCP call's arguments and output,
    a custom call's input), whole in JSON and split over their own delta events when streamed."""
    from tests.host.in_process import post, simulator

    sim = simulator(tmp_path, _HOSTED_WITH_KEYS)
    tools = [{"type": "web_search"}, {"type": "code_interpreter", "container": {"type": "auto"}},
             {"type": "mcp", "server_label": "wiki", "server_url": "https://mcp.example.com",
              "require_approval": "never"}, {"type": "custom", "name": "note"}]  # fmt: skip
    body = {"model": "m", "input": "p", "tools": tools, "stream": stream,
            "include": ["code_interpreter_call.outputs"]}  # fmt: skip
    (response,) = post(sim, body, path="/v1/responses")
    assert response.status_code == 200, response.text
    served = response.text
    if stream:
        deltas = [json.loads(line[6:]) for line in served.split("\n") if line.startswith("data: {")]
        kinds = {event["type"] for event in deltas if event["type"].endswith(".delta")}
        assert {"response.custom_tool_call_input.delta", "response.mcp_call_arguments.delta",
                "response.code_interpreter_call_code.delta"} <= kinds  # fmt: skip
        cleaned = Scrubber([KEY]).stream(served)
        after = [json.loads(line[6:]) for line in cleaned.split("\n") if line.startswith("data: {")]
        for kind in kinds:
            assert KEY in "".join(event["delta"] for event in deltas if event["type"] == kind)
            assert KEY not in "".join(event["delta"] for event in after if event["type"] == kind)
    else:
        assert served.count(KEY) >= 6
        cleaned = json.dumps(Scrubber([KEY]).value(response.json()))
    assert KEY not in cleaned and REDACTED in cleaned
    assert credentials_in_body(cleaned) == []
