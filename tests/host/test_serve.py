"""`sim serve` as a real process on an ephemeral 127.0.0.1 port, with `sim run` and a plain client against it.

Every process is bounded by a timeout and stopped by the test.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.commands import in_a_process, in_process
from tests.host.processes import served

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="uses POSIX signals")


def sim_run(base_url: str, workspace: Path, prompt: str) -> subprocess.CompletedProcess[str]:
    env = {"OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "sk-served", "OPENAI_MODEL": "sim-model"}
    return in_a_process("run", "--prompt", prompt, "--approve", "always", "--workspace", workspace, env=env)


def test_sim_run_against_sim_serve_follows_the_scenario(tmp_path: Path) -> None:
    with served(SCENARIOS / "echo-42.yaml", "--once") as (server, base_url):
        done = sim_run(base_url, tmp_path, "Run `echo 42` and tell me the result.")
        assert done.returncode == 0, done.stderr
        assert '  call call_1: shell {"command":"echo 42"}' in done.stdout
        assert "  result call_1: 42" in done.stdout
        assert done.stdout.rstrip().endswith("The command printed 42.")
        assert server.wait(timeout=20) == 0
        assert server.stderr is not None
        said = server.stderr.read()
        assert "served 2 requests (chat 2); 2 replies sent" in said
    logged = [line for line in said.splitlines() if " chat " in line]  # a line per request, as answered
    assert re.fullmatch(r"\d\d:\d\d:\d\d chat +#1 +200 reply 1 of 2: calls shell", logged[0]), logged
    assert re.fullmatch(r".* #2 +200 reply 2 of 2: text 'The command printed 42\.'", logged[1]), logged


def test_the_access_log_is_json_lines_or_nothing(tmp_path: Path) -> None:
    with served(SCENARIOS / "rate-limited.yaml", "--once", "--json", "--grace", "0") as (server, base_url):
        sim_run(base_url, tmp_path, "Run `date`.")
        assert server.wait(timeout=20) == 0 and server.stderr is not None
        lines = [json.loads(line) for line in server.stderr.read().splitlines() if line.startswith("{")]
    assert [(line["api"], line["number"], line["status"]) for line in lines] == [
        ("chat", 1, 200),
        ("chat", 2, 429),
    ]
    assert lines[1]["said"] == "reply 2 of 2: error 429: Rate limit reached for requests"
    with served(SCENARIOS / "rate-limited.yaml", "--once", "--quiet", "--grace", "0") as (server, base_url):
        sim_run(base_url, tmp_path, "Run `date`.")
        assert server.wait(timeout=20) == 0 and server.stderr is not None
        assert " chat " not in server.stderr.read()


def test_scripted_error_reaches_sim_run_as_a_typed_error(tmp_path: Path) -> None:
    with served(SCENARIOS / "rate-limited.yaml") as (_, base_url):
        done = sim_run(base_url, tmp_path, "Run `date`.")
    assert done.returncode == 1
    assert (
        done.stderr.strip().splitlines()[-1] == "error: api_error: HTTP 429: Rate limit reached for requests"
    )


def test_plain_client_and_models_endpoint(tmp_path: Path) -> None:
    with served(SCENARIOS / "slow-stream.yaml") as (_, base_url):
        with urllib.request.urlopen(f"{base_url}/models", timeout=10) as response:
            assert json.load(response)["data"][0]["id"] == "sim-model"
        body = json.dumps(
            {"model": "sim-model", "messages": [{"role": "user", "content": "hi"}], "stream": True}
        )
        request = urllib.request.Request(
            f"{base_url}/chat/completions", data=body.encode(), headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            text = response.read().decode()
    assert text.rstrip().endswith("data: [DONE]")
    pieces = [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: {")]
    assert (
        "".join(p["choices"][0]["delta"].get("content") or "" for p in pieces if p["choices"])
        == "Slowly, but surely."
    )


def test_once_with_replies_left_exits_1_on_interrupt() -> None:
    with served(SCENARIOS / "echo-42.yaml", "--once") as (server, _):
        server.send_signal(signal.SIGINT)
        assert server.wait(timeout=20) == 1
        assert server.stderr is not None
        assert "has 2 unused of 2 scripted replies" in server.stderr.read()


def test_interrupt_without_once_exits_0() -> None:
    with served(SCENARIOS / "echo-42.yaml") as (server, _):
        server.send_signal(signal.SIGINT)
        assert server.wait(timeout=20) == 0


def test_port_in_use_is_a_usage_error() -> None:
    with served(SCENARIOS / "echo-42.yaml") as (_, base_url):
        port = base_url.rsplit(":", 1)[1].split("/")[0]
        done = in_process("serve", SCENARIOS / "echo-42.yaml", "--port", port)
    assert done.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr


def test_accepted_connections_have_nagle_off() -> None:
    """Without TCP_NODELAY every reply written in two parts waits for a delayed ACK (about 40 ms)."""
    import asyncio
    import socket

    from sim.host.serve import listen

    async def accept_one() -> int:
        sock = listen("127.0.0.1", 0)
        seen: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            accepted = writer.get_extra_info("socket")
            seen.set_result(accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        server = await asyncio.start_server(handle, sock=sock)
        async with server:
            _, writer = await asyncio.open_connection(*sock.getsockname()[:2])
            value = await asyncio.wait_for(seen, 10)
            writer.close()
        return value

    assert asyncio.run(accept_one()) != 0


def test_once_stops_when_the_last_reply_is_a_scripted_error(tmp_path: Path) -> None:
    with served(SCENARIOS / "rate-limited.yaml", "--once") as (server, base_url):
        done = sim_run(base_url, tmp_path, "Run `date`.")
        assert done.returncode == 1
        assert server.wait(timeout=20) == 0
        assert server.stderr is not None
        assert "served 2 requests (chat 2); 2 replies sent" in server.stderr.read()


def test_a_scenario_without_a_prompt_is_served_but_not_played(tmp_path: Path) -> None:
    scenario = tmp_path / "serve-only.yaml"
    scenario.write_text("name: serve-only\nreplies:\n  - content: Hello from the script.\n")
    with served(scenario, "--once") as (server, base_url):
        done = sim_run(base_url, tmp_path, "The client brings its own prompt.")
        assert done.returncode == 0, done.stderr
        assert done.stdout.rstrip().endswith("Hello from the script.")
        assert server.wait(timeout=20) == 0
    played = in_process("play", scenario)
    assert played.returncode == 1
    assert played.stdout.splitlines()[1] == (
        f"  ! {scenario}: missing required key 'prompt' (a scenario without one can only be served by"
        " `sim serve`)"
    )


@pytest.mark.parametrize("port", ["99999", "-1"])
def test_a_port_out_of_range_is_a_one_line_usage_error(port: str) -> None:
    done = in_process("serve", SCENARIOS / "echo-42.yaml", "--port", port)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [f"error: --port must be from 0 to 65535, not {port}"]


def _stalled_clients(base_url: str) -> list[socket.socket]:
    """Two raw clients on 127.0.0.1 that hold `sim serve` up: one sent its headers and half its body, the
    other asked for a long streamed reply and reads none of it."""
    port = int(base_url.rsplit(":", 1)[1].split("/")[0])
    half = socket.create_connection(("127.0.0.1", port))
    half.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                 b"content-length: 1000\r\n\r\n{\"model\": \"m\",")  # fmt: skip
    body = json.dumps({"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]})
    unread = socket.create_connection(("127.0.0.1", port))
    unread.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
    unread.sendall(f"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                   f"content-length: {len(body)}\r\n\r\n{body}".encode())  # fmt: skip
    return [half, unread]


def test_ctrl_c_stops_within_seconds_while_clients_stall(tmp_path: Path) -> None:
    """A client that half-sent its body and one that does not read a long stream hold connections open;
    Ctrl-C, pressed twice in a row as an impatient user does, ends `sim serve` in seconds, no traceback."""
    interrupts = 2
    script = tmp_path / "long.yaml"
    words = " ".join(f"word{n}" for n in range(20_000))
    script.write_text(f"prompt: p\nlatency: {{between_chunks: 0.001}}\nreplies:\n  - content: {words}\n")
    with served(script) as (server, base_url):
        clients = _stalled_clients(base_url)
        time.sleep(1.5)  # both requests reached the server, the stream is under way
        started = time.monotonic()
        for _ in range(interrupts):
            server.send_signal(signal.SIGINT)
            time.sleep(0.2)
        code = server.wait(timeout=30)
        took = time.monotonic() - started
        said = server.stderr.read() if server.stderr else ""
    for client in clients:
        client.close()
    assert took < 10, took
    assert code in (0, 1) and "Traceback" not in said and "CancelledError" not in said, said


RETRYING_CLIENT = """
import sys, time, openai
client = openai.OpenAI(max_retries=2)
started = time.monotonic()
try:
    client.chat.completions.create(model="m", messages=[{"role": "user", "content": "p"}])
    client.chat.completions.create(model="m", messages=[{"role": "user", "content": "again"}])
except openai.APIError as error:
    print(type(error).__name__, getattr(error, "code", None), round(time.monotonic() - started, 1))
"""


def retrying_client(base_url: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "sk-test"}
    command = [sys.executable, "-c", RETRYING_CLIENT]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, env=environment, check=False)


def test_once_exits_on_the_first_failure_and_frees_its_port(tmp_path: Path) -> None:
    scenario = tmp_path / "strict.yaml"
    scenario.write_text(
        "replies:\n  - content: hi\n    expect_request: {message_count: 9}\n  - content: more\n"
    )
    with served(scenario, "--once", "--grace", "0.2") as (server, base_url):
        done = retrying_client(base_url)
        assert done.stdout.split()[:2] == ["BadRequestError", "sim_expectation_failed"], (
            done.stdout + done.stderr
        )
        assert server.wait(timeout=20) == 1  # on its own: nobody pressed Ctrl-C
        assert server.stderr is not None and "expect_request.message_count" in server.stderr.read()
        port = int(base_url.rsplit(":", 1)[1].split("/")[0])
    again = socket.socket()
    again.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    again.bind(("127.0.0.1", port))  # the next start finds the port free
    again.close()


def test_a_retry_after_the_last_scripted_error_gets_a_clear_answer_at_once(tmp_path: Path) -> None:
    scenario = tmp_path / "ends-on-500.yaml"
    scenario.write_text(
        "replies:\n  - content: hi\n  - error: {status: 500, message: Boom., retry_after: 0.01}\n"
    )
    with served(scenario, "--once") as (server, base_url):
        done = retrying_client(base_url)
        name, code, seconds = done.stdout.split()
        assert (name, code) == ("BadRequestError", "sim_scenario_finished"), done.stdout + done.stderr
        assert float(seconds) < 2  # not a connection error after the client's backoff
        assert server.wait(timeout=20) == 1  # a retry the scenario did not expect
        assert server.stderr is not None and "a retry it did not expect?" in server.stderr.read()


def test_once_and_cycle_together_are_a_usage_error() -> None:
    done = in_process("serve", SCENARIOS / "echo-42.yaml", "--once", "--cycle")
    assert done.returncode == 2 and "--once and --cycle" in done.stderr


SECONDS = {"--grace": "0 to 600", "--upstream-timeout": "0.1 to 600"}


@pytest.mark.parametrize(
    ("option", "value"),
    [
        *[("--grace", value) for value in ("inf", "1e308", "nan", "-1", "-inf", "600.5")],
        *[("--upstream-timeout", value) for value in ("inf", "1e308", "nan", "0", "-1")],
        ("--store-limit", "0"),
    ],
)
def test_a_bound_passed_is_a_one_line_usage_error_before_anything_listens(
    option: str, value: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Seconds are bounded as a scenario's latencies are (finite, at most 600): `--grace inf` never ended."""
    from typer.testing import CliRunner

    from sim.cli import app, serving

    def listening(host: str, port: int) -> None:
        raise AssertionError(f"listened with {option} {value}")

    monkeypatch.setattr(serving, "_listening", listening)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-bounds-0123456789")
    if option == "--upstream-timeout":
        command = ["proxy", str(tmp_path / "c.yaml"), "--upstream", "http://127.0.0.1:9/v1"]
    else:
        command = ["serve", str(SCENARIOS / "echo-42.yaml"), "--once"]
    done = CliRunner().invoke(app, [*command, f"{option}={value}", "--port", "0"])
    assert done.exit_code == 2, (done.output, done.exception)
    said = (f"must be from {SECONDS[option]} seconds, not {float(value)}" if option in SECONDS
            else f"must be at least 1 MiB, not {value}")  # fmt: skip
    assert done.stderr.splitlines() == [f"error: {option} {said}"]
