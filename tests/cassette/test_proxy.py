"""`sim proxy` recording programs as real subprocesses, with `sim serve SCENARIO` on 127.0.0.1 standing in
for the live API (tests never reach the internet), and `sim serve CASSETTE` playing the recording back to
the same programs with the upstream gone (each framework's agent goes the same way in
`tests/examples/test_framework_guides.py`)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import httpx2
import pytest

from sim.cassette.reader import read_cassette
from sim.cassette.recording_proxy import api_of
from tests.commands import in_a_process
from tests.host.processes import MARKED_KEY, ROOT, SIM, served, served_to, sim_process

WEATHER = ROOT / "examples" / "frameworks" / "weather.yaml"
RAW_SDK = [sys.executable, "examples/frameworks/raw_sdk_weather.py"]
ORG_ID = "org-marked0123456789"

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="uses POSIX signals")


def proxy_environment(**extra: str) -> dict[str, str]:
    """The proxy's own environment: the upstream key (and an organization id) that must never be written."""
    return {**os.environ, "OPENAI_API_KEY": MARKED_KEY, "OPENAI_ORG_ID": ORG_ID, **extra}


def proxied(cassette: Path, upstream: str, *command: str) -> subprocess.CompletedProcess[str]:
    """`sim proxy CASSETTE --upstream URL -- COMMAND...` run to its end."""
    return subprocess.run(
        [*SIM, "proxy", str(cassette), "--upstream", upstream, "--port", "0", "--", *command],
        env=proxy_environment(),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        cwd=ROOT,
    )


def proxying(cassette: Path, upstream: str, *options: str) -> Any:
    """`sim proxy CASSETTE --upstream URL OPTIONS...` started, without a command."""
    return sim_process(
        "proxy",
        str(cassette),
        "--upstream",
        upstream,
        "--port",
        "0",
        *options,
        environment=proxy_environment(),
    )


def assert_no_secret(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert MARKED_KEY not in text and ORG_ID not in text


CASES = {
    "chat": [*RAW_SDK],
    "chat-stream": [*RAW_SDK, "--stream"],
    "responses": [*RAW_SDK, "--responses"],
    "responses-stream": [*RAW_SDK, "--responses", "--stream"],
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_program_recorded_through_the_proxy_is_served_back_with_the_upstream_gone(
    tmp_path: Path, case: str
) -> None:
    cassette = tmp_path / "weather.yaml"
    with served(WEATHER, "--once") as (upstream, upstream_url):
        done = proxied(cassette, upstream_url, *CASES[case])
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "It is sunny in Paris."
        assert upstream.wait(timeout=20) == 0  # the upstream saw the whole script: nothing was lost
    assert "recorded 2 exchanges" in done.stderr
    assert_no_secret(cassette)
    recorded = read_cassette(cassette)
    assert [i.request.path for i in recorded.interactions] in (
        ["/v1/chat/completions"] * 2,
        ["/v1/responses"] * 2,
    )
    again = served_to(cassette, *CASES[case], options=["--once"])  # the program's and the recording's verdict
    assert again.returncode == 0, again.stderr
    assert again.stdout == done.stdout
    assert "2 of 2 interactions played" in again.stderr


def test_a_changed_prompt_gets_a_400_naming_the_json_path(tmp_path: Path) -> None:
    cassette = tmp_path / "weather.yaml"
    with served(WEATHER, "--once") as (_, upstream_url):
        assert proxied(cassette, upstream_url, *RAW_SDK).returncode == 0
    with served(cassette, "--once") as (server, base_url):
        body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "Weather in Rome?"}]}
        request = urllib.request.Request(
            f"{base_url}/chat/completions", json.dumps(body).encode(), {"content-type": "application/json"}
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        assert refused.value.code == 400
        error = json.loads(refused.value.read())["error"]
        assert (error["type"], error["code"]) == ("invalid_request_error", "sim_replay_mismatch")
        assert error["message"].startswith('sim serve: turn 1: messages[0].content: recorded "What is the')
        assert error["message"].endswith('!= now "Weather in Rome?"')
        server.send_signal(signal.SIGINT)
        assert server.wait(timeout=20) == 1
        assert server.stderr is not None
        said = server.stderr.read()
    assert "messages[0].content" in said
    assert "interaction 1 never requested: POST /v1/chat/completions" in said


SLOW = """
name: slow
description: a streamed answer whose chunks come 0.3 s apart
prompt: Tell me slowly.
replies:
  - content: "one two three four five six seven eight"
    latency: {between_chunks: 0.3}
  - content: fast
"""


def test_streamed_chunks_pass_through_the_proxy_as_they_arrive(tmp_path: Path) -> None:
    scenario = tmp_path / "slow.yaml"
    scenario.write_text(SLOW)
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "Tell me slowly."}]}
    with (
        served(scenario) as (_, upstream_url),
        proxying(tmp_path / "c.yaml", upstream_url) as (proxy, proxy_url),
    ):
        started = time.perf_counter()
        with httpx2.stream("POST", f"{proxy_url}/chat/completions", json=body, timeout=30) as response:
            pieces = response.iter_bytes()
            first = next(pieces)
            first_at = time.perf_counter() - started
            rest = b"".join(pieces)
            last_at = time.perf_counter() - started
        proxy.send_signal(signal.SIGINT)
        assert proxy.wait(timeout=20) == 0
    assert first.startswith(b"data: ")
    assert b"[DONE]" in rest
    # the upstream needs several gaps of 0.3 s; the first chunk came long before it sent the last
    assert last_at >= 1.5
    assert first_at < last_at - 1.2
    recorded = read_cassette(tmp_path / "c.yaml").interactions[0].response
    assert recorded.body == first + rest


SLOWER = """
name: slower
description: a streamed answer going on for about 5 s (chunks 0.6 s apart), longer than a stop once waited
prompt: Tell me slowly.
replies:
  - content: "one two three four five six seven eight nine ten eleven twelve"
    latency: {between_chunks: 0.6}
"""


def test_sigterm_mid_stream_lets_the_answer_finish_and_records_it_and_sigkill_writes_nothing(
    tmp_path: Path,
) -> None:
    scenario = tmp_path / "slower.yaml"
    scenario.write_text(SLOWER)
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "Tell me slowly."}]}
    for stop in (signal.SIGTERM, signal.SIGKILL):
        cassette = tmp_path / f"{stop.name}.yaml"
        with (
            served(scenario, "--cycle") as (_, upstream_url),
            proxying(cassette, upstream_url) as (proxy, proxy_url),
        ):
            received = b""
            try:
                with httpx2.stream("POST", f"{proxy_url}/chat/completions", json=body, timeout=30) as reply:
                    for piece in reply.iter_bytes():
                        if not received:
                            proxy.send_signal(stop)  # the first chunk is through: some 5 s of it to come
                        received += piece
            except httpx2.RemoteProtocolError:  # the answer was cut off
                assert stop == signal.SIGKILL, received
            code = proxy.wait(timeout=30)
            said = proxy.stderr.read() if proxy.stderr else ""
        leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(f".{cassette.name}")]
        assert leftovers == []
        if stop == signal.SIGKILL:
            assert not cassette.exists()
            continue
        assert code == 0 and "recorded 1 exchange into" in said, said
        interactions = read_cassette(cassette).interactions  # the whole answer, as the client had it
        assert len(interactions) == 1 and interactions[0].response.body == received
        assert received.rstrip().endswith(b"data: [DONE]") and b"twelve" in received
        assert_no_secret(cassette)


ANSWERS = """
name: answers
description: an answer to whatever is asked (the upstream of tests that ask freely, with --cycle)
prompt: Anything.
replies:
  - content: "An answer."
"""


def answering(tmp_path: Path) -> Path:
    """A scenario that answers any request (`ANSWERS`)."""
    scenario = tmp_path / "answers.yaml"
    scenario.write_text(ANSWERS)
    return scenario


def test_each_exchange_reaches_the_journal_as_it_finishes_and_survives_sigkill(tmp_path: Path) -> None:
    cassette = tmp_path / "c.yaml"
    journal = tmp_path / "c.yaml.journal"
    body = {"model": "m", "messages": [{"role": "user", "content": f"Is {MARKED_KEY} mine?"}]}
    with served(answering(tmp_path), "--cycle") as (_, upstream_url):
        with proxying(cassette, upstream_url) as (proxy, proxy_url):
            for n in range(3):
                asked = {**body, "stream": n == 1}
                assert httpx2.post(f"{proxy_url}/chat/completions", json=asked, timeout=30).status_code == 200
            deadline = time.monotonic() + 10
            while len(journal.read_text().splitlines()) < 4 and time.monotonic() < deadline:
                time.sleep(0.05)  # written by the proxy's writer thread, after the answer went out
            assert len(journal.read_text().splitlines()) == 4  # its first line, then one per exchange
            assert_no_secret(journal)
            second = subprocess.run(
                [*SIM, "proxy", str(cassette), "--upstream", upstream_url, "--port", "0"],
                env=proxy_environment(), capture_output=True, text=True, timeout=60, check=False,
            )  # fmt: skip
            assert second.returncode == 2 and len(second.stderr.strip().splitlines()) == 1, second.stderr
            assert f"{cassette}: another recording is writing into it" in second.stderr
            assert len(journal.read_text().splitlines()) == 4  # the first one's journal untouched
            proxy.kill()  # nothing gets to run at the end
            proxy.wait(timeout=20)
        assert not cassette.exists()
        again = subprocess.run(
            [*SIM, "proxy", str(cassette), "--upstream", upstream_url, "--port", "0"],
            env=proxy_environment(), capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
    assert again.returncode == 2
    assert f"sim recover {journal}" in again.stderr and len(again.stderr.strip().splitlines()) == 1
    done = in_a_process("recover", journal)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"recovered 3 exchanges into {cassette}"
    assert not journal.exists()
    interactions = read_cassette(cassette).interactions
    assert [i.response.is_event_stream for i in interactions] == [False, True, False]
    assert all(i.response.status == 200 for i in interactions)
    assert_no_secret(cassette)


KEY_SPOKEN = f"""
name: spoken key
description: the model spells out the upstream key and the organization id, in a streamed answer
prompt: What is my key?
replies:
  - content: "Your key is {MARKED_KEY} and your org is {ORG_ID}, word by word."
"""


def test_secrets_in_streamed_pieces_and_headers_are_never_written(tmp_path: Path) -> None:
    scenario = tmp_path / "key.yaml"
    scenario.write_text(KEY_SPOKEN)
    cassette = tmp_path / "c.yaml"
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": f"Is {MARKED_KEY} mine?"}]}
    with served(scenario) as (_, upstream_url), proxying(cassette, upstream_url) as (proxy, proxy_url):
        headers = {"authorization": f"Bearer {MARKED_KEY}", "cookie": f"session={MARKED_KEY}"}
        streamed = httpx2.post(f"{proxy_url}/chat/completions", json=body, headers=headers, timeout=30)
        events = [json.loads(line[6:]) for line in streamed.text.splitlines() if line.startswith("data: {")]
        said = "".join(e["choices"][0]["delta"].get("content") or "" for e in events if e["choices"])
        assert MARKED_KEY in said and MARKED_KEY not in streamed.text  # the key came in pieces
        proxy.send_signal(signal.SIGTERM)
        assert proxy.wait(timeout=20) == 0
    assert_no_secret(cassette)
    assert "<redacted>" in cassette.read_text()


def test_concurrent_requests_are_all_recorded_whole(tmp_path: Path) -> None:
    cassette = tmp_path / "c.yaml"
    with (
        served(answering(tmp_path), "--cycle") as (_, upstream_url),
        proxying(cassette, upstream_url) as (proxy, proxy_url),
    ):
        bodies = [
            {
                "model": "m",
                "stream": n % 2 == 0,
                "messages": [{"role": "user", "content": f"question {n}"}],
            }
            for n in range(8)
        ]
        answers: list[int] = []

        def ask(body: dict[str, object]) -> None:
            answers.append(httpx2.post(f"{proxy_url}/chat/completions", json=body, timeout=30).status_code)

        threads = [threading.Thread(target=ask, args=(body,)) for body in bodies]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        proxy.send_signal(signal.SIGINT)
        assert proxy.wait(timeout=20) == 0
    assert answers == [200] * 8
    interactions = read_cassette(cassette).interactions
    questions = sorted(json.loads(i.request.body or b"")["messages"][0]["content"] for i in interactions)
    assert questions == [f"question {n}" for n in range(8)]


def test_the_proxy_refuses_bad_use_in_one_line(tmp_path: Path) -> None:
    import socket

    existing = tmp_path / "exists.yaml"
    existing.write_text("interactions: []\n")
    busy = socket.create_server(("127.0.0.1", 0))
    cases = [
        (["proxy", str(existing), "--upstream", "http://127.0.0.1:9/v1"], proxy_environment(),
         "cassette exists"),
        (["proxy", str(tmp_path / "c.yaml"), "--upstream", "ftp://example/v1"], proxy_environment(),
         "--upstream must be an http(s) URL"),
        (["proxy", str(tmp_path / "c.yaml"), "--upstream", "http://127.0.0.1:9/v1"],
         {**proxy_environment(), "OPENAI_API_KEY": "short"}, "at least 8"),
        (["proxy", str(tmp_path / "c.yaml"), "--upstream", "http://127.0.0.1:9/v1", "--grace", "nan"],
         proxy_environment(), "--grace must be from 0 to 600 seconds, not nan"),
        (["proxy", str(tmp_path / "c.yaml"), "--upstream", "http://127.0.0.1:9/v1", "--port",
          str(busy.getsockname()[1])], proxy_environment(), "cannot listen on"),
    ]  # fmt: skip
    for args, environment, said in cases:
        done = subprocess.run(
            [*SIM, *args],
            env=environment,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            cwd=tmp_path,
        )
        assert done.returncode == 2, done.stderr
        assert said in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    busy.close()
    assert existing.read_text() == "interactions: []\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exists.yaml"]  # no journal left behind


def test_an_unreachable_upstream_is_a_502_and_a_missing_command_exits_127(tmp_path: Path) -> None:
    cassette = tmp_path / "c.yaml"
    with sim_process("proxy", str(cassette), "--upstream", "http://127.0.0.1:9/v1", "--port", "0",
                     environment=proxy_environment()) as (proxy, proxy_url):  # fmt: skip
        refused = httpx2.post(f"{proxy_url}/chat/completions", json={"model": "m"}, timeout=30)
        assert refused.status_code == 502
        assert refused.json()["error"]["type"] == "server_error"
        assert refused.json()["error"]["code"] == "sim_upstream_error"
        proxy.send_signal(signal.SIGINT)
        assert proxy.wait(timeout=20) == 1
        assert proxy.stderr is not None
        assert "not written" in proxy.stderr.read()
    assert not cassette.exists()
    done = proxied(cassette, "http://127.0.0.1:9/v1", "no-such-program-sim-test")
    assert done.returncode == 127
    assert "cannot run no-such-program-sim-test" in done.stderr


def test_the_command_gets_the_proxy_and_a_placeholder_key_and_its_exit_code_is_kept(tmp_path: Path) -> None:
    script = "import os, sys; print(os.environ['OPENAI_BASE_URL'], os.environ['OPENAI_API_KEY']," \
             " os.environ.get('OPENAI_ORG_ID')); sys.exit(3)"  # fmt: skip
    done = proxied(tmp_path / "c.yaml", "http://127.0.0.1:9/v1", sys.executable, "-c", script)
    assert done.returncode == 3
    url, key, org = done.stdout.split()
    assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
    assert key == "sk-sim-proxy-placeholder" and org == "None"
    assert MARKED_KEY not in done.stdout + done.stderr


@pytest.mark.parametrize("source", ["file", "stdin"])
def test_the_key_can_come_from_a_file_or_stdin_and_stay_out_of_the_proxys_environment(
    tmp_path: Path, source: str
) -> None:
    """A program run under the proxy can read its parent's environment (`/proc/$PPID/environ`): with
    `--key-file` the key is not there, and the proxy still records (the upstream needs the key)."""
    key_file = tmp_path / "key"
    key_file.write_text(MARKED_KEY + "\n")
    script = "import os; print(open(f'/proc/{os.getppid()}/environ', 'rb').read().count(b'sk-marked'))"
    environment = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    cassette = tmp_path / "c.yaml"
    done = subprocess.run(
        [*SIM, "proxy", str(cassette), "--upstream", "http://127.0.0.1:9/v1", "--port", "0",
         "--key-file", str(key_file) if source == "file" else "-", "--", sys.executable, "-c", script],
        input=f"{MARKED_KEY}\n" if source == "stdin" else None,
        env=environment, capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0"  # the key is not in the proxy's environment
    assert MARKED_KEY not in done.stdout + done.stderr


def test_an_upstream_that_dies_mid_answer_aborts_the_clients_connection_too(tmp_path: Path) -> None:
    """The upstream (a raw socket on 127.0.0.1 standing in for a real API that dies) sends half a chunked
    stream and closes: the client must see a broken connection, not a complete stream, and nothing is
    recorded as complete."""
    import socket

    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def half_an_answer() -> None:
        connection, _ = listener.accept()
        with connection:
            connection.recv(65536)
            piece = b'data: {"choices":[{"index":0,"delta":{"content":"Hel"}}]}\n\n'
            head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
            connection.sendall(head + f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
            time.sleep(0.2)
        listener.close()

    threading.Thread(target=half_an_answer, daemon=True).start()
    cassette = tmp_path / "cut.yaml"
    with proxying(cassette, f"http://127.0.0.1:{port}/v1") as (proxy, base_url):
        body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
        received: list[bytes] = []

        def read_all() -> None:
            with httpx2.stream("POST", f"{base_url}/chat/completions", json=body, timeout=30) as response:
                received.extend(response.iter_raw())

        with pytest.raises(httpx2.HTTPError):
            read_all()
        assert b"Hel" in b"".join(
            received
        )  # what came was passed on, then the connection broke as upstream's did
        proxy.send_signal(signal.SIGINT)
        assert proxy.wait(timeout=30) == 1
        said = proxy.stderr.read() if proxy.stderr else ""
    assert "upstream broke off" in said and "Traceback" not in said
    assert not cassette.exists()


def test_ctrl_c_stops_the_proxy_within_seconds_while_the_upstream_never_answers(tmp_path: Path) -> None:
    """A stalled upstream (a socket on 127.0.0.1 that accepts and never answers) holds a request open;
    Ctrl-C still ends the proxy once its `--grace` has passed, without a traceback, saying what it cut off,
    and nothing in flight is written."""
    import socket

    listener = socket.create_server(("127.0.0.1", 0))
    stalled: list[socket.socket] = []
    threading.Thread(target=lambda: stalled.append(listener.accept()[0]), daemon=True).start()
    cassette = tmp_path / "stalled.yaml"
    upstream = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    with proxying(cassette, upstream, "--grace", "1") as (proxy, base_url):
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        asking = threading.Thread(
            target=lambda: httpx2.post(f"{base_url}/chat/completions", json=body, timeout=60), daemon=True
        )
        asking.start()
        deadline = time.monotonic() + 20
        while not stalled and time.monotonic() < deadline:
            time.sleep(0.05)
        assert stalled, "the request did not reach the upstream"
        started = time.monotonic()
        proxy.send_signal(signal.SIGINT)
        code = proxy.wait(timeout=30)
        took = time.monotonic() - started
        said = proxy.stderr.read() if proxy.stderr else ""
    listener.close()
    assert took < 10, took
    assert code == 1 and "Traceback" not in said and "CancelledError" not in said, said
    assert "POST /chat/completions: cut off by the stop after 1 s (--grace); not recorded" in said
    assert not cassette.exists()


@pytest.mark.parametrize(
    ("tail", "api"),
    [
        ("/chat/completions", "chat"),
        ("/openai/deployments/d/chat/completions/", "chat"),
        ("/responses", "responses"),
        ("/responses/resp_1/input_items?limit=5", "responses"),
        ("/models", "/models"),
        ("", "/"),
    ],
)
def test_the_access_log_names_the_api_a_forwarded_path_asks(tail: str, api: str) -> None:
    assert api_of(tail) == api
