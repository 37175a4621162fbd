"""Failing runs kept in hypothesis's example databases and run first by the next campaign, on this
machine (a folder) or shared (a real `redis-server` on 127.0.0.1, started here; skipped, saying so, where
the binary is absent); each target's runs under a key of its own."""

from __future__ import annotations

import shutil
import socket
import socketserver
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase, InMemoryExampleDatabase
from openai import OpenAI
from typer.testing import CliRunner

from sim.cli import app
from sim.core.errors import ConfigurationError
from sim.fuzz import databases, fuzz_test
from sim.fuzz.databases import Guarded, Namespaced, example_database
from sim.fuzz.target import fuzz_target
from tests.commands import in_a_process
from tests.fuzz import targets
from tests.host.processes import SIM


def found_in_one_example(database: ExampleDatabase | None, seed: int) -> bool:
    """Whether a campaign of one drawn example, with this seed, finds the seeded bug."""
    campaign = fuzz_target(targets.drops_invalid_json, examples=1, seed=seed, database=database)
    return campaign.failure is not None


def test_a_failure_kept_in_a_folder_is_run_first_by_the_next_campaign(tmp_path: Path) -> None:
    database = DirectoryBasedExampleDatabase(tmp_path / "db")
    assert not found_in_one_example(None, seed=7)  # one example of seed 7 does not find it on its own
    first = fuzz_target(targets.drops_invalid_json, examples=60, seed=0, database=database)
    assert first.failure is not None
    assert found_in_one_example(database, seed=7)  # the kept failure runs first
    assert fuzz_target(targets.careful, examples=5, seed=0, database=database).violations == []


def test_each_target_keeps_its_runs_under_its_own_key() -> None:
    shared = InMemoryExampleDatabase()
    fuzz_target(targets.drops_invalid_json, examples=60, seed=0, database=shared)
    keys = set(shared.data)
    assert keys and all(key.startswith(b"sim fuzz --target drops_invalid_json api\x00")
                        for key in keys)  # fmt: skip
    other = Namespaced(shared, "sim fuzz --target careful api")
    assert not any(list(other.fetch(key.split(b"\x00", 1)[1])) for key in keys)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("needs redis-server (Debian's redis-server package; .ci/run installs it), not here")
    port = _free_port()
    folder = tmp_path_factory.mktemp("redis")
    server = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", str(folder)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_a_failure_kept_in_redis_is_run_first_by_another_machines_campaign(redis_url: str) -> None:
    """Two databases opened on the same server, as two CI workers would."""
    found = fuzz_target(targets.drops_invalid_json, examples=60, seed=0, database=example_database(redis_url))
    assert found.failure is not None
    assert found_in_one_example(example_database(redis_url), seed=7)


def test_the_cli_keeps_and_replays_through_database(tmp_path: Path) -> None:
    target = "tests.fuzz.targets:drops_invalid_json"
    common = [*SIM, "fuzz", "--target", target, "--database", str(tmp_path / "db"), "--save", str(tmp_path)]
    first = subprocess.run([*common, "--examples", "60"], capture_output=True, text=True, timeout=300)
    assert first.returncode == 1, first.stdout + first.stderr
    again = subprocess.run([*common, "--examples", "1", "--seed", "7"], capture_output=True, text=True,
                           timeout=300)  # fmt: skip
    assert again.returncode == 1 and "! pairing:" in again.stdout, again.stdout + again.stderr


def test_a_database_that_cannot_be_used_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigurationError, match="is a file"):
        example_database(tmp_path / "file")
    with pytest.raises(ConfigurationError, match=r"github:OWNER/REPO"):
        example_database("github:nobody")
    with pytest.raises(ConfigurationError, match=r"redis://127\.0\.0\.1:\d+/0: cannot reach it"):
        example_database(f"redis://127.0.0.1:{_free_port()}/0")
    with pytest.raises(ConfigurationError) as refused:
        example_database(f"redis://user:s3cret@127.0.0.1:{_free_port()}/0")
    assert "s3cret" not in str(refused.value)
    done = in_a_process("fuzz", "--target", "tests.fuzz.targets:careful", "--database", tmp_path / "file")
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "is a file" in done.stderr


def test_fuzz_test_keeps_its_failures_where_it_is_told(tmp_path: Path) -> None:
    """A `fuzz_test` in a user's suite, called as pytest calls it: its failure is kept in the database it
    names under the target's own key; a database named by a string is read as `--database` reads it, and
    one that cannot be used is refused at collection."""
    database = InMemoryExampleDatabase()
    with pytest.raises(AssertionError, match="orphan tool result"):
        fuzz_test(sends_an_orphan_result, examples=3, database=database)()
    assert database.data
    assert all(key.startswith(b"fuzz_test sends_an_orphan_result api\x00") for key in database.data)
    assert callable(fuzz_test(targets.careful, database=str(tmp_path / "db")))
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigurationError, match="is a file"):
        fuzz_test(targets.careful, database=str(tmp_path / "file"))


def sends_an_orphan_result(client: OpenAI, prompt: str) -> None:
    """Fails at its first request whatever is drawn (a result for no call), so its failure shrinks at once."""
    orphan = {"role": "tool", "tool_call_id": "call_nobody", "content": "?"}
    client.chat.completions.create(model="m", messages=[{"role": "user", "content": prompt}, orphan])


# A hostile Redis is the outermost boundary sim talks to (a server the user names, which may be anything),
# so these servers are fakes written here: a few lines speaking RESP badly, on 127.0.0.1.
Answer = Callable[[bytes], bytes | None]
"""What a fake server sends back for what it read (None: nothing, and it keeps the connection open)."""


def says_the_password_back(read: bytes) -> bytes:
    return b"-ERR invalid password: " + read.replace(b"\r\n", b" ") + b"\r\n"


def announces_a_huge_reply(read: bytes) -> bytes | None:
    return b"+PONG\r\n" if b"PING" in read else b"$2000000000\r\n"


def answers_ok(read: bytes) -> bytes:
    return b"+OK\r\n"


def answers_err(read: bytes) -> bytes:
    return b"-ERR not today\r\n"


@pytest.fixture
def fake_redis() -> Iterator[Callable[[Answer], int]]:
    """Starts a fake server answering each read with `answer`; its port."""
    servers: list[socketserver.ThreadingTCPServer] = []

    def start(answer: Answer) -> int:
        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                while read := self.request.recv(65536):
                    if (said := answer(read)) is not None:
                        self.request.sendall(said)

        server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        servers.append(server)
        return int(server.server_address[1])

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (says_the_password_back, "invalid password"),
        (announces_a_huge_reply, "TimeoutError"),
        (answers_ok, "does not answer PING as Redis does"),
        (answers_err, "not today"),
    ],
)
def test_a_hostile_redis_is_one_line_within_the_bound_showing_no_password(
    fake_redis: Callable[[Answer], int], answer: Answer, said: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(databases, "SECONDS", 0.5)
    url = f"redis://default:S3cret%21pw@127.0.0.1:{fake_redis(answer)}/0"
    started = time.monotonic()
    done = CliRunner().invoke(app, ["fuzz", "--target", "tests.fuzz.targets:careful", "--database", url])
    assert time.monotonic() - started < 5
    assert done.exit_code == 2 and not isinstance(done.exception, Exception), done.output
    (line,) = done.output.splitlines()
    assert said in line and "redis://default:***@127.0.0.1:" in line, line
    for secret in ("S3cret", "S3cret%21pw", "S3cret!pw"):
        assert secret not in line


def test_a_folder_that_cannot_be_written_is_said_and_the_verdict_stands(
    read_only_dir: Path, tmp_path: Path
) -> None:
    said = f"warning: --database {read_only_dir}: cannot write there (it is read-only), so failing runs are"
    target = "tests.fuzz.targets:asks_after_the_answer"
    found = CliRunner().invoke(app, ["fuzz", "--target", target, "--examples", "60", "--database",
                                     str(read_only_dir), "--save", str(tmp_path)])  # fmt: skip
    assert found.exit_code == 1 and "! request_after_final: " in found.output, found.output
    assert [line for line in found.output.splitlines() if "--database" in line] == [f"{said} not kept"]
    ours = CliRunner().invoke(app, ["fuzz-loop", "--examples", "5", "--database", str(read_only_dir)])
    assert ours.exit_code == 0 and "every invariant held" in ours.output, ours.output
    assert [line for line in ours.output.splitlines() if "--database" in line] == [f"{said} not kept"]


class BreaksMidCampaign(InMemoryExampleDatabase):
    """A shared database whose server goes away once the campaign has begun, saying its password back."""

    def save(self, key: bytes, value: bytes) -> None:
        raise ConnectionError("Error 104 while writing to socket: AUTH default S3cret rejected")


def test_a_database_failing_mid_campaign_is_said_once_and_the_verdict_stands() -> None:
    database = Guarded(BreaksMidCampaign(), "redis://default:***@db:6379", secret="S3cret")
    campaign = fuzz_target(targets.asks_after_the_answer, examples=60, seed=0, database=database)
    assert campaign.failure is not None and "request_after_final" in {
        v.invariant for v in campaign.violations
    }
    assert database.problem == (
        "--database redis://default:***@db:6379 failed (ConnectionError: Error 104 while writing to socket:"
        " AUTH default *** rejected), so it was not used for the rest of the run"
    )
