from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
import yaml

from sim import CassetteError
from sim.cassette.reader import read_cassette
from tests.corpus import needs_corpus, real_cassettes


def write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "cassette.yaml"
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
    return path


def interaction(request: dict, response: dict) -> dict:
    return {"request": {"method": "POST", "uri": "https://api.openai.com/v1/chat/completions", **request},
            "response": {"status": {"code": 200, "message": "OK"}, "headers": {}, **response}}  # fmt: skip


def test_python_tags_are_read_as_text_and_never_run(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    text = f"""
interactions:
- request:
    body: '{{}}'
    headers:
      ? !!python/object/apply:multidict._multidict.istr
      - Content-Type
      : - application/json
      evil: !!python/object/apply:os.system ["touch {marker}"]
    method: POST
    uri: https://api.openai.com/v1/chat/completions
  response:
    body: {{string: '{{}}'}}
    headers: {{}}
    status: {{code: 200, message: OK}}
"""
    cassette = read_cassette(write(tmp_path, text))
    assert not marker.exists()
    headers = cassette.interactions[0].request.headers
    assert headers["content-type"] == ["application/json"]
    assert headers["evil"] == [f"touch {marker}"]


def test_gzip_binary_bodies_are_decompressed(tmp_path: Path) -> None:
    body = json.dumps({"choices": []}).encode()
    zipped = {"body": {"string": gzip.compress(body)}, "headers": {"Content-Encoding": ["gzip"]}}
    data = {"interactions": [interaction({"body": "{}"}, zipped)]}
    assert read_cassette(write(tmp_path, data)).interactions[0].response.body == body


def test_stale_gzip_header_on_a_decoded_body_is_ignored(tmp_path: Path) -> None:
    data = {
        "interactions": [
            interaction({"body": "{}"}, {"body": {"string": "{}"}, "headers": {"content-encoding": "gzip"}})
        ]
    }
    response = read_cassette(write(tmp_path, data)).interactions[0].response
    assert (response.body, response.headers["content-encoding"]) == (b"{}", ["gzip"])


def test_parsed_body_becomes_the_json_request_body(tmp_path: Path) -> None:
    data = {
        "interactions": [
            interaction({"parsed_body": {"model": "m", "stream": True}}, {"body": {"string": ""}})
        ]
    }
    request = read_cassette(write(tmp_path, data)).interactions[0].request
    assert request.json() == {"model": "m", "stream": True}


def test_scalar_header_values_become_lists(tmp_path: Path) -> None:
    data = {
        "interactions": [interaction({"headers": {"Accept": "application/json"}}, {"body": {"string": ""}})]
    }
    assert read_cassette(write(tmp_path, data)).interactions[0].request.headers == {
        "accept": ["application/json"]
    }


def test_sse_events(tmp_path: Path) -> None:
    stream = 'data: {"choices": [{"delta": {"content": "a"}}]}\n\ndata: {"choices": []}\n\ndata: [DONE]\n\n'
    data = {"interactions": [interaction({}, {"body": {"string": stream}})]}
    response = read_cassette(write(tmp_path, data)).interactions[0].response
    assert response.is_event_stream
    assert response.events() == [{"choices": [{"delta": {"content": "a"}}]}, {"choices": []}]


@pytest.mark.parametrize(
    ("uri", "chat"),
    [
        ("https://api.openai.com/v1/chat/completions", True),
        ("https://x.openai.azure.com/openai/deployments/d/chat/completions?api-version=2024-02-01", True),
        ("http://127.0.0.1:8000/v1/chat/completions/", True),
        ("https://os-api.agno.com/telemetry/runs", False),
        ("https://api.openai.com/v1/embeddings", False),
    ],
)
def test_chat_completion_interactions_are_recognised(tmp_path: Path, uri: str, chat: bool) -> None:
    data = {"interactions": [interaction({"uri": uri}, {"body": {"string": ""}})]}
    assert read_cassette(write(tmp_path, data)).interactions[0].calls("/chat/completions") is chat


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("interactions: [\n", "YAML syntax"),
        ("just: a mapping\n", "not a vcrpy cassette"),
        ("interactions:\n- {}\n", "interaction 0"),
    ],
)
def test_unreadable_cassettes_say_where(tmp_path: Path, text: str, problem: str) -> None:
    with pytest.raises(CassetteError, match=problem) as caught:
        read_cassette(write(tmp_path, text))
    assert str(tmp_path) in str(caught.value)


@needs_corpus
@pytest.mark.parametrize("path", real_cassettes(), ids=lambda p: p.stem.split("__")[0])
def test_every_real_cassette_reads(path: Path) -> None:
    cassette = read_cassette(path)
    assert cassette.interactions
    for recorded in cassette.interactions:
        assert recorded.response.status in (200, 201, 400)
        assert recorded.response.json() is not None or recorded.response.events()


def test_written_files_follow_the_umask_and_leave_no_temporary(tmp_path: Path) -> None:
    import os

    from sim.cassette.writer import write_atomically

    target = tmp_path / "deep" / "out.yaml"
    write_atomically(target, "text\n")
    umask = os.umask(0)
    os.umask(umask)
    assert target.read_text() == "text\n"
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask
    assert [p.name for p in target.parent.iterdir()] == ["out.yaml"]


def test_echoed_results_come_from_the_largest_request_paired_by_turn() -> None:
    from sim.cassette.session import echoed_results

    def body(*turns: str) -> bytes:
        messages: list[dict] = [{"role": "user", "content": "hi"}]
        for number, call_id in enumerate(turns, 1):
            call = {"id": call_id, "type": "function", "function": {"name": "f", "arguments": "{}"}}
            messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
            messages.append({"role": "tool", "tool_call_id": call_id, "content": f"turn {number}"})
        return json.dumps({"messages": messages}).encode()

    assert echoed_results([body(), body("a"), body("a", "b")]) == {("a", 1): "turn 1", ("b", 2): "turn 2"}
    assert echoed_results([body("call_0", "call_0")]) == {("call_0", 1): "turn 1", ("call_0", 2): "turn 2"}
    assert echoed_results([]) == {}
    assert echoed_results([b"not json", None]) == {}


def test_json_numbers_compare_by_value() -> None:
    from sim.cassette.matching import canonical, describe_difference

    assert canonical(b'{"temperature": 0, "n": 1.0}') == canonical(b'{"n": 1, "temperature": 0.0}')
    assert describe_difference(b'{"temperature": 0}', b'{"temperature": 0.0}') == "bodies are equal"
    assert describe_difference(b'{"t": 0}', b'{"t": 0.5}') == "t: recorded 0 != now 0.5"
    assert describe_difference(b'{"t": 1}', b'{"t": true}') == "t: recorded 1 != now true"


def test_the_markers_matcher_tells_two_chains_apart_by_what_they_send_back() -> None:
    """vcrpy plays the first unplayed recording its matchers accept: chain B's follow-up must not be
    accepted as chain A's, whatever the whitespace."""
    from types import SimpleNamespace

    from sim.cassette.vcr_support import canonical_body

    def request(previous: str, indent: int | None = None) -> SimpleNamespace:
        body = {
            "model": "m",
            "previous_response_id": previous,
            "input": [{"role": "user", "content": "go on"}],
        }
        return SimpleNamespace(body=json.dumps(body, indent=indent).encode())

    canonical_body(request("resp_B", indent=2), request("resp_B"))  # the same request, laid out otherwise
    with pytest.raises(AssertionError, match='previous_response_id: recorded "resp_A" != now "resp_B"'):
        canonical_body(request("resp_B", indent=2), request("resp_A"))
