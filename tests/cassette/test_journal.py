"""The recording journal: exchanges written as they finish (scrubbed, in any order, from any thread), the
cassette written from it the same as the whole-session writer writes it, and what a crash leaves turned
into a cassette by `sim recover`, or refused in one line when it is damaged."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path

import pytest
import yaml

from sim.cassette.journal import Journal, write_recovered
from sim.cassette.reader import load_data, read_cassette
from sim.cassette.writer import Exchange, cassette_pieces, to_yaml, write_cassette, written_rest
from sim.core.errors import CassetteError
from tests.corpus import needs_corpus, real_cassettes
from tests.server.processes import SIM

KEY = "sk-journal-REAL-key-0123456789abcdef"
SESSION = {"prompt": "p", "turns": 3}
BINARY = b"\x1f\x8b" + bytes((n * 37) % 256 for n in range(300))
"""Not UTF-8 text (an audio body, say), and starting like gzip without being it."""


def exchange(turn: int, *, key_in: str = "", binary: bool = False) -> Exchange:
    """Request `turn` of one growing conversation (each body extends the one before)."""
    messages = [{"role": "user", "content": "Count."}]
    for n in range(turn):
        messages += [{"role": "assistant", "content": f"{n} {key_in}"}, {"role": "user", "content": "more"}]
    answer = BINARY if binary else json.dumps({"turn": turn, "said": key_in}).encode()
    return Exchange(
        method="POST",
        uri=f"https://api.example.com/v1/chat/completions?key={KEY}"
        if key_in
        else "http://h/v1/chat/completions",
        request_headers={"authorization": [f"Bearer {KEY}"], "x-trace": [key_in or "t"]},
        request_body=json.dumps({"model": "m", "messages": messages}).encode(),
        status=200,
        reason="OK",
        response_headers={"content-type": ["audio/mpeg" if binary else "application/json"]},
        response_body=answer,
    )


@pytest.mark.parametrize("compact", [False, True], ids=["plain", "compact"])
def test_the_cassette_from_a_journal_is_the_one_the_whole_session_writer_writes(
    tmp_path: Path, compact: bool
) -> None:
    exchanges = [exchange(turn, binary=turn == 2) for turn in range(5)]
    whole = tmp_path / "whole.yaml"
    write_cassette(whole, exchanges, sim=SESSION, secrets=(KEY,), compact=compact)
    journaled = tmp_path / "journaled.yaml"
    journal = Journal(journaled, (KEY,))
    for seq, each in enumerate(exchanges):
        assert journal.append(seq, each)
    assert journal.finish(sim=SESSION, compact=compact) == 5
    assert journaled.read_text() == whole.read_text()
    assert not journal.path.exists()


def test_exchanges_finishing_out_of_order_keep_the_order_their_requests_arrived_in(tmp_path: Path) -> None:
    cassette = tmp_path / "c.yaml"
    journal = Journal(cassette, (KEY,))
    for seq in (3, 0, 2, 1, 4):
        journal.append(seq, exchange(seq))
    journal.finish(compact=True)
    turns = [json.loads(i.response.body)["turn"] for i in read_cassette(cassette).interactions]
    assert turns == [0, 1, 2, 3, 4]
    plain = tmp_path / "plain.yaml"
    write_cassette(plain, [exchange(seq) for seq in range(5)], sim=None, secrets=())
    bodies = [i.request.body for i in read_cassette(cassette).interactions]
    assert bodies == [i.request.body for i in read_cassette(plain).interactions]


def test_appends_from_many_threads_are_all_written_whole(tmp_path: Path) -> None:
    cassette = tmp_path / "c.yaml"
    journal = Journal(cassette, (KEY,))
    threads = [threading.Thread(target=journal.append, args=(n, exchange(n % 7))) for n in range(40)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert journal.finish() == 40
    assert len(read_cassette(cassette).interactions) == 40


def test_no_secret_reaches_the_journal_or_the_cassette(tmp_path: Path) -> None:
    cassette = tmp_path / "c.yaml"
    journal = Journal(cassette, (KEY,))
    journal.append(0, exchange(0, key_in=KEY))
    journal.append(1, exchange(2, key_in=KEY))
    text = journal.path.read_text()  # what a crash now would leave
    assert KEY not in text and KEY[3:] not in text
    journal.finish(sim={"note": f"said {KEY}"})
    assert KEY not in cassette.read_text()


def test_a_recording_that_finished_nothing_leaves_nothing(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "c.yaml", (KEY,))
    assert journal.finish() == 0
    assert list(tmp_path.iterdir()) == []


def test_a_leftover_journal_is_never_overwritten(tmp_path: Path) -> None:
    cassette = tmp_path / "c.yaml"
    Journal(cassette, ()).append(0, exchange(0))  # a recording that crashed
    with pytest.raises(CassetteError, match=r"sim recover .*c\.yaml\.journal"):
        Journal(cassette, ())


def crashed(tmp_path: Path, turns: int = 3) -> Path:
    """The journal a recording left when it was killed while writing its last line."""
    cassette = tmp_path / "c.yaml"
    journal = Journal(cassette, ())
    for seq in range(turns):
        journal.append(seq, exchange(seq, binary=seq == 1))
    journal.close()
    with journal.path.open("a") as file:
        file.write('{"seq": 9, "interaction": {"req')  # cut short
    return journal.path


def test_recover_makes_a_cassette_of_the_whole_lines_and_says_the_last_was_cut(tmp_path: Path) -> None:
    journal = crashed(tmp_path)
    done = subprocess.run([*SIM, "recover", str(journal)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"recovered 3 exchanges into {tmp_path / 'c.yaml'}"
    assert "cut short" in done.stderr and not journal.exists()
    interactions = read_cassette(tmp_path / "c.yaml").interactions
    assert [json.loads(i.request.body or b"")["messages"][-1]["content"] for i in interactions] == [
        "Count.", "more", "more",
    ]  # fmt: skip
    assert interactions[1].response.body == BINARY  # kept as it came


def test_recover_refuses_an_existing_cassette_and_a_damaged_journal_in_one_line(tmp_path: Path) -> None:
    journal = crashed(tmp_path)
    (tmp_path / "c.yaml").write_text("kept\n")
    done = subprocess.run([*SIM, "recover", str(journal)], capture_output=True, text=True, check=False)
    assert done.returncode == 2 and "use --force" in done.stderr
    lines = journal.read_text().splitlines()
    line = json.loads(lines[2])
    line["interaction"]["request"]["body"]["extends"] = 7  # a reference to nothing
    journal.write_text("\n".join([*lines[:2], json.dumps(line)]) + "\n")
    done = subprocess.run(
        [*SIM, "recover", str(journal), "-o", str(tmp_path / "new.yaml")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "exchange 1" in done.stderr
    assert "must name an earlier" in done.stderr
    assert not (tmp_path / "new.yaml").exists() and journal.exists()
    journal.write_text('{"not": "a journal"}\n')
    with pytest.raises(CassetteError, match=r"c\.yaml\.journal:1: not a sim recording journal"):
        write_recovered(journal, tmp_path / "new.yaml")
    journal.write_text('{"sim_journal":1}\n{"seq":0,"interaction":{}}\n[1, 2]\n')
    with pytest.raises(CassetteError, match=r"c\.yaml\.journal:3: not a journal line"):
        write_recovered(journal, tmp_path / "new.yaml")


def test_the_cassette_is_written_a_piece_at_a_time_as_the_whole_would_be() -> None:
    texts = ["plain", "two\nlines", "kept blank lines\n\n", "", "ends\n"]
    interactions = [{"request": {"body": t}, "response": {"body": {"string": t}}} for t in texts]
    for sim in (None, {"note": "x\n\n"}):
        for count in (0, 1, len(interactions)):
            data = {"interactions": interactions[:count], **({"sim": sim} if sim else {}), "version": 1}
            pieces = "".join(cassette_pieces(interactions[:count], written_rest(sim)))
            assert pieces.removesuffix("...\n") == to_yaml(data).removesuffix("...\n")
            assert yaml.safe_load(pieces) == data


@needs_corpus
@pytest.mark.parametrize("path", real_cassettes()[:40], ids=lambda p: p.name)
def test_real_cassettes_are_written_a_piece_at_a_time_as_the_whole_would_be(path: Path) -> None:
    data = load_data(path)
    expected = to_yaml({"interactions": data["interactions"], "version": 1})
    pieces = "".join(cassette_pieces(data["interactions"], written_rest(None)))
    assert pieces == expected.removesuffix("...\n")  # the end-of-document mark is optional
