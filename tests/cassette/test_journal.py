"""The recording journal: exchanges written as they finish (scrubbed, in any order, from any thread), the
cassette written from it the same as the whole-session writer writes it, and what a crash leaves turned
into a cassette by `sim recover`, or refused in one line when it is damaged."""

from __future__ import annotations

import json
import os
import threading
import tracemalloc
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from typer.testing import Result

from sim.cassette.journal import Journal, journal_path, write_recovered
from sim.cassette.reader import load_data, read_cassette
from sim.cassette.writer import HttpExchange, cassette_pieces, to_yaml, write_cassette, written_rest
from sim.core.errors import CassetteError
from tests.commands import invoke
from tests.corpus import needs_corpus, real_cassettes
from tests.filesystems import fill

KEY = "sk-journal-REAL-key-0123456789abcdef"
SESSION = {"prompt": "p", "turns": 3}
BINARY = b"\x1f\x8b" + bytes((n * 37) % 256 for n in range(300))
"""Not UTF-8 text (an audio body, say), and starting like gzip without being it."""


def exchange(turn: int, *, key_in: str = "", binary: bool = False) -> HttpExchange:
    """Request `turn` of one growing conversation (each body extends the one before)."""
    messages = [{"role": "user", "content": "Count."}]
    for n in range(turn):
        messages += [{"role": "assistant", "content": f"{n} {key_in}"}, {"role": "user", "content": "more"}]
    answer = BINARY if binary else json.dumps({"turn": turn, "said": key_in}).encode()
    return HttpExchange(
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


def recover(*args: str) -> Result:
    """`sim recover ARGS...`, in this process."""
    return invoke("recover", *args)


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
    left = Journal(cassette, ())
    left.append(0, exchange(0))
    left.close()  # as the end of its process would: the path is let go, the journal stays
    with pytest.raises(CassetteError, match=r"sim recover .*c\.yaml\.journal"):
        Journal(cassette, ())


def test_a_recording_holds_its_cassette_from_start_to_end(tmp_path: Path) -> None:
    cassette = tmp_path / "c.yaml"
    first = Journal(cassette, ())
    for seq in range(2):
        with pytest.raises(CassetteError, match=r"c\.yaml: another recording is writing into it"):
            Journal(cassette, ())  # refused at once, and the first one's journal untouched
        assert first.append(seq, exchange(seq))
    done = recover(str(first.path), "-o", str(tmp_path / "other.yaml"))
    assert done.exit_code == 1 and "a recording is still writing it" in done.stderr
    assert first.finish() == 2
    with pytest.raises(CassetteError, match=r"cassette exists: .*c\.yaml \(use --force"):
        Journal(cassette, (), keep=True)  # checked once the path is held: what the first wrote stays
    assert len(read_cassette(cassette).interactions) == 2
    assert [p.name for p in tmp_path.iterdir()] == ["c.yaml"]


def test_a_link_where_the_journal_goes_is_refused_at_start(tmp_path: Path) -> None:
    cassette = tmp_path / "c.yaml"
    (tmp_path / "victim").write_text("kept\n")
    for target in ("nowhere", "victim"):  # dangling, and to a file of someone else's
        journal_path(cassette).unlink(missing_ok=True)
        journal_path(cassette).symlink_to(tmp_path / target)
        with pytest.raises(CassetteError, match=r"c\.yaml\.journal: a symbolic link") as refused:
            Journal(cassette, ())
        assert "\n" not in str(refused.value)
    assert (tmp_path / "victim").read_text() == "kept\n" and not (tmp_path / "nowhere").exists()
    journal_path(cassette).unlink()
    os.mkfifo(journal_path(cassette))  # read, it would never answer
    with pytest.raises(CassetteError, match=r"c\.yaml\.journal: not a file where the journal"):
        Journal(cassette, ())


def test_a_journal_left_before_any_exchange_finished_is_taken_over(tmp_path: Path) -> None:
    cassette = tmp_path / "c.yaml"
    journal_path(cassette).write_text('{"sim_journal":1,"cassette":"c.yaml"}\n')  # killed early
    journal = Journal(cassette, ())
    assert journal.append(0, exchange(0)) and journal.finish() == 1
    assert [p.name for p in tmp_path.iterdir()] == ["c.yaml"]


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
    done = recover(str(journal))
    assert done.exit_code == 0, done.stderr
    assert done.stdout.strip() == f"recovered 3 exchanges into {tmp_path / 'c.yaml'}"
    assert "cut short" in done.stderr and not journal.exists()
    interactions = read_cassette(tmp_path / "c.yaml").interactions
    assert [json.loads(i.request.body or b"")["messages"][-1]["content"] for i in interactions] == [
        "Count.", "more", "more",
    ]  # fmt: skip
    assert interactions[1].response.body == BINARY  # kept as it came


def test_recover_refuses_an_existing_cassette_and_a_journal_with_nothing_whole_in_one_line(
    tmp_path: Path,
) -> None:
    journal = crashed(tmp_path)
    (tmp_path / "c.yaml").write_text("kept\n")
    done = recover(str(journal))
    assert done.exit_code == 2 and "use --force" in done.stderr
    lines = journal.read_text().splitlines()
    line = json.loads(lines[2])
    line["interaction"]["request"]["body"]["extends"] = 7  # a reference to nothing
    journal.write_text("\n".join([*lines[:2], json.dumps(line)]) + "\n")
    done = recover(str(journal), "-o", str(tmp_path / "new.yaml"))
    assert done.exit_code == 0 and done.stderr.count("\n") == 1, done.stderr
    assert (
        "skipped 1 line that holds no whole exchange (3; line 3: `extends` must name an earlier"
        in done.stderr
    )
    assert len(read_cassette(tmp_path / "new.yaml").interactions) == 1
    journal.write_text('{"not": "a journal"}\n')
    with pytest.raises(CassetteError, match=r"c\.yaml\.journal:1: not a sim recording journal"):
        write_recovered(journal, tmp_path / "new.yaml")
    journal.write_text('{"sim_journal":1}\n{"seq":0,"interaction":{}}\n[1, 2]\n')
    with pytest.raises(
        CassetteError, match=r"c\.yaml\.journal: no whole exchange in it \(2 lines skipped: line 2"
    ):
        write_recovered(journal, tmp_path / "new.yaml")
    assert journal.exists()


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


def big_exchange(turn: int, size: int) -> HttpExchange:
    """`exchange(turn)` answered with about `size` bytes of text that does not compress."""
    filler = "".join(f"{(n * 7919) % 10007:05d}" for n in range(size // 5))
    return replace(
        exchange(turn), response_headers={"content-type": ["text/plain"]}, response_body=filler.encode()
    )


def test_a_full_disk_loses_only_the_exchange_that_did_not_fit(small_disk: Path) -> None:
    cassette = small_disk / "c.yaml"
    journal = Journal(cassette, ())
    for seq in range(8):
        assert journal.append(seq, big_exchange(seq, 1000))
    fill(small_disk, leave=4096)
    assert not journal.append(8, big_exchange(8, 12000))  # more than the room left: cut off mid-line
    assert "No space left" in journal.problems[0]
    (small_disk / ".filler").unlink()
    assert journal.append(9, big_exchange(9, 1000))  # the next exchange has a line of its own
    journal.close()
    recovered = write_recovered(journal.path, small_disk / "again.yaml")
    assert (recovered.count, recovered.skipped) == (9, [])
    said = [
        json.loads(i.request.body or b"")["messages"]
        for i in read_cassette(small_disk / "again.yaml").interactions
    ]
    assert [len(messages) // 2 for messages in said] == [*range(8), 9]


def test_a_full_disk_at_the_end_keeps_the_journal_and_says_where_it_is(small_disk: Path) -> None:
    cassette = small_disk / "c.yaml"
    journal = Journal(cassette, ())
    for seq in range(3):
        assert journal.append(seq, big_exchange(seq, 3000))
    fill(small_disk)
    with pytest.raises(CassetteError, match=rf"No space left.*sim recover {journal.path}"):
        journal.finish()
    assert journal.path.exists() and not cassette.exists()
    done = recover(str(journal.path))
    assert done.exit_code == 1 and done.stderr.count("\n") == 1, done.stderr
    assert "No space left" in done.stderr and isinstance(done.exception, SystemExit)  # no traceback
    assert journal.path.exists() and [p.name for p in small_disk.iterdir()] == [".filler", "c.yaml.journal"]
    (small_disk / ".filler").unlink()
    assert write_recovered(journal.path, cassette).count == 3


def damaged(tmp_path: Path, *middle: bytes) -> Path:
    """A journal of two whole exchanges with `middle` lines between them."""
    journal = crashed(tmp_path, turns=2)
    lines = journal.read_bytes().split(b"\n")
    third = json.loads(lines[2])
    third["seq"] = 5
    journal.write_bytes(b"\n".join([lines[0], lines[1], *middle, json.dumps(third).encode()]) + b"\n")
    return journal


def test_recover_keeps_every_whole_exchange_and_says_which_lines_it_skipped(tmp_path: Path) -> None:
    cut = b'{"seq": 7, "interaction": {"request": {"bo'
    nested = b"[" * 200_000 + b"]" * 200_000
    journal = damaged(tmp_path, cut + b'{"seq":8,"interaction":{}}', nested, b'{"seq": 0, "interaction": {}}')
    done = recover(str(journal), "-o", str(tmp_path / "new.yaml"))
    assert done.exit_code == 0, done.stderr
    assert done.stdout.strip() == f"recovered 2 exchanges into {tmp_path / 'new.yaml'}"
    assert done.stderr.count("\n") == 1 and "skipped 3 lines" in done.stderr and "3, 4, 5" in done.stderr
    assert len(read_cassette(tmp_path / "new.yaml").interactions) == 2


def test_a_huge_line_is_skipped_without_being_read_whole(tmp_path: Path) -> None:
    limit = 2**20
    journal = damaged(tmp_path, b'{"seq": 3, "body": "' + b"x" * (6 * limit) + b'"}')
    with journal.open("ab") as file:
        file.write(b'{"seq": 9, "interaction": "' + b"y" * (6 * limit))  # torn and huge
    tracemalloc.start()
    try:
        recovered = write_recovered(journal, tmp_path / "new.yaml", line_limit=limit)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (recovered.count, recovered.torn, len(recovered.skipped)) == (2, True, 1)
    assert "line 3" in recovered.skipped[0] and f"{limit:,}" in recovered.skipped[0]
    assert peak < 3 * limit, peak


def test_recover_never_destroys_its_journal(tmp_path: Path) -> None:
    journal = crashed(tmp_path)
    kept = journal.read_bytes()
    (tmp_path / "link.yaml").symlink_to(journal.name)
    os.link(journal, tmp_path / "hard.yaml")
    (tmp_path / "folder").mkdir()
    for output in (journal, tmp_path / "link.yaml", tmp_path / "hard.yaml", tmp_path / "folder"):
        done = recover(str(journal), "-o", str(output), "--force")
        assert done.exit_code == 2 and done.stderr.count("\n") == 1, (output, done.stderr)
        assert "journal itself" in done.stderr or "is a folder" in done.stderr
        assert journal.read_bytes() == kept and done.stdout == ""
    with pytest.raises(CassetteError, match="the journal itself"):
        write_recovered(journal, tmp_path / "hard.yaml")
    assert journal.read_bytes() == kept


def test_recover_removes_the_journal_only_once_the_cassette_is_on_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    journal = crashed(tmp_path)
    events: list[str] = []
    fsync, unlink = os.fsync, Path.unlink

    def synced(fd: int) -> None:
        fsync(fd)
        events.append(f"fsync {os.readlink(f'/proc/self/fd/{fd}')}")

    def removed(path: Path, missing_ok: bool = False) -> None:
        unlink(path, missing_ok)
        events.append(f"unlink {path}")

    monkeypatch.setattr(os, "fsync", synced)
    monkeypatch.setattr(Path, "unlink", removed)
    assert recover(str(journal)).exit_code == 0
    assert events[-1] == f"unlink {journal}"
    assert f"fsync {tmp_path}" in events  # the folder: the cassette's new name is on disk too
    assert any(event.startswith(f"fsync {tmp_path}/.c.yaml.") for event in events)  # its text
