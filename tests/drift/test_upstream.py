"""`sim drift` and its upstream: the live key glued to other text never shown or written (the table, `--json`,
`--report`, `--rerecord`), streamed replies included; the upstream URL parsed as `sim proxy` parses it (no
user or password, its query kept and joined after the endpoint, credential values in it never recorded). The
live model is `sim serve` playing a scenario, in process (the command's transport swapped for an ASGI one)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import pytest
import yaml

from sim.cli import drifting
from sim.scenario.schema import Scenario
from tests.drift.live import drift, live_model_afresh
from tests.live_api import live_api

ROOT = Path(__file__).resolve().parents[2]
ECHO = ROOT / "scenarios" / "echo-42.yaml"
HEX_KEY = "5d8e2b7a9c1f04e6b3a8d7c2f1e09b4a"
"""Shaped like an Azure OpenAI key: nothing but drift's knowing it tells it from ordinary text."""
GLUED = ["token{}", "xx{}yy", "_{}_", "{}-", "{}0"]
"""The key glued to other text, each way issue 34 found it written whole."""
QUERY_SECRET = "query-secret-7Hq2Lm9Xw4"
PASSWORD = "hunter2-PASSWORD"
MESSAGE = {"role": "assistant", "content": "drifted"}
REPLY = {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "sim-model",
         "choices": [{"index": 0, "message": MESSAGE, "finish_reason": "stop"}],
         "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}  # fmt: skip


def streamed_recording(folder: Path) -> Path:
    """cassettes/echo-42.yaml with its first request asking for a stream, so the live reply is streamed."""
    data = yaml.safe_load((ROOT / "cassettes" / "echo-42.yaml").read_text())
    request = data["interactions"][0]["request"]
    request["body"] = json.dumps({**json.loads(request["body"]), "stream": True})
    path = folder / "streamed.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize("streamed", [False, True])
def test_the_key_glued_to_other_text_is_never_shown_or_written(
    streamed: bool, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A live model that says the key back glued each way: the table, the JSON, the HTML report and the
    re-recorded cassette hold none of it (a streamed reply splits it across its chunks)."""
    said = " ".join(glue.format(HEX_KEY) for glue in GLUED)
    echoing = yaml.safe_load(ECHO.read_text())
    echoing["replies"][0] = {"content": said}
    scenario = Scenario.model_validate(echoing)
    live_model_afresh(monkeypatch, scenario)
    monkeypatch.setenv("OPENAI_API_KEY", HEX_KEY)
    recording = streamed_recording(tmp_path) if streamed else ROOT / "cassettes" / "echo-42.yaml"
    report, fresh = tmp_path / "drift.html", tmp_path / "fresh"
    shown = drift(recording, "--report", report, "--rerecord", fresh)
    as_json = drift(recording, "--json")
    assert shown.exit_code == 1 and as_json.exit_code == 1, shown.output
    (rerecorded,) = fresh.iterdir()
    body = yaml.safe_load(rerecorded.read_text())["interactions"][0]["response"]["body"]["string"]
    assert ("data: " in body) is streamed
    remains = " ".join(glue.format("<redacted>") for glue in GLUED)
    live = json.loads(as_json.output)["files"][0]["conversations"][0]["turns"][0]["live"]
    assert remains in rerecorded.read_text()  # the whole reply, its pieces joined, scrubbed as one text
    assert remains[:40] in live and remains[:40] in shown.output  # shortened after it was scrubbed
    for text in (shown.output, as_json.output, report.read_text(), rerecorded.read_text()):
        assert HEX_KEY[:12] not in text  # nor the start of a key that a shortened reply cut


def test_an_error_that_says_the_key_back_is_shown_without_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """An upstream's 401 that spells the key out glued to its words, past where the message is shortened."""
    message = "The request was refused. " * 3 + f"Incorrect API key provided: key={HEX_KEY}."
    assert message.index(HEX_KEY) < 120 < message.index(HEX_KEY) + len(HEX_KEY)  # the cut falls in the key
    refusing = httpx2.MockTransport(lambda _: httpx2.Response(401, json={"error": {"message": message}}))
    monkeypatch.setattr(drifting, "transport_factory", lambda: refusing)
    monkeypatch.setenv("OPENAI_API_KEY", HEX_KEY)
    for options in ([], ["--json"]):
        done = drift(ROOT / "cassettes" / "echo-42.yaml", *options)
        assert done.exit_code == 1 and "Incorrect API key provided: key=<redacted>" in done.output, (
            done.output
        )
        assert HEX_KEY[:8] not in done.output


@pytest.mark.parametrize(
    "userinfo", [f"user:{PASSWORD}@", f":{PASSWORD}@", f"{PASSWORD}@", f"u%40x:{PASSWORD}%3A@"]
)
def test_a_user_or_password_in_the_upstream_is_refused_before_anything_is_sent(
    userinfo: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It would have gone as `Basic` auth in place of the key, and into every recorded `uri`."""
    monkeypatch.setenv("OPENAI_API_KEY", HEX_KEY)
    with live_api(lambda: json.dumps(REPLY).encode()) as (origin, seen):
        done = drift(
            ROOT / "cassettes" / "echo-42.yaml", upstream=origin.replace("//", f"//{userinfo}") + "/v1"
        )
    assert done.exit_code == 2 and "--upstream must not carry a user or password" in done.output, done.output
    assert PASSWORD not in done.output and len(done.output.strip().splitlines()) == 1
    assert seen == []


def test_an_upstream_that_is_no_url_is_one_line_without_showing_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", HEX_KEY)
    done = drift(
        ROOT / "cassettes" / "echo-42.yaml", upstream=f"http://127.0.0.1:99999/v1?key={QUERY_SECRET}"
    )
    assert done.exit_code == 2 and "--upstream is not a URL" in done.output, done.output
    assert QUERY_SECRET not in done.output and len(done.output.strip().splitlines()) == 1


def test_the_upstreams_query_is_sent_after_the_endpoint_and_its_credentials_never_written(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Azure OpenAI's `?api-version=`, and a `?key=` some gateways take: the requests go to
    `/v1/chat/completions?api-version=...&key=...` with the key as a Bearer token; the re-recorded `uri`s,
    the table, the JSON and the report hold the key parameter masked."""
    monkeypatch.setenv("OPENAI_API_KEY", HEX_KEY)
    report, fresh = tmp_path / "drift.html", tmp_path / "fresh"
    with live_api(lambda: json.dumps(REPLY).encode()) as (origin, seen):
        upstream = f"{origin}/v1/?api-version=2024-10-21&key={QUERY_SECRET}"
        shown = drift(
            ROOT / "cassettes" / "echo-42.yaml", "--report", report, "--rerecord", fresh, upstream=upstream
        )
        as_json = drift(ROOT / "cassettes" / "echo-42.yaml", "--json", upstream=upstream)
    assert shown.exit_code == 1 and as_json.exit_code == 1, shown.output
    assert [path for path, _ in seen] == [
        f"/v1/chat/completions?api-version=2024-10-21&key={QUERY_SECRET}"
    ] * 2
    for _, headers in seen:
        assert headers["authorization"] == f"Bearer {HEX_KEY}"
    (rerecorded,) = fresh.iterdir()
    uris = [i["request"]["uri"] for i in yaml.safe_load(rerecorded.read_text())["interactions"]]
    assert uris == [f"{origin}/v1/chat/completions?api-version=2024-10-21&key=***"]
    for text in (shown.output, as_json.output, report.read_text(), rerecorded.read_text()):
        assert QUERY_SECRET not in text and HEX_KEY not in text


def test_an_azure_upstream_gets_the_key_as_api_key_alone_and_its_query_after_the_endpoint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As `sim proxy` sends it (the in-process transport stands where Azure OpenAI would be)."""
    seen: list[httpx2.Request] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(200, json=REPLY)

    monkeypatch.setattr(drifting, "transport_factory", lambda: httpx2.MockTransport(answer))
    monkeypatch.setenv("OPENAI_API_KEY", HEX_KEY)
    upstream = "https://res.openai.azure.com/openai/v1?api-version=preview"
    assert drift(ROOT / "cassettes" / "echo-42.yaml", upstream=upstream).exit_code == 1
    (request,) = seen
    assert str(request.url) == "https://res.openai.azure.com/openai/v1/chat/completions?api-version=preview"
    assert request.headers["api-key"] == HEX_KEY and "authorization" not in request.headers
