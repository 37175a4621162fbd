"""The recording journal: each finished exchange appended, scrubbed, as one fsynced JSON line beside the
cassette, and turned into the cassette atomically at the end, so that memory stays bounded by the exchange
in flight and a crash loses at most that exchange (`sim recover JOURNAL` makes a cassette of what is left).

The journal is `CASSETTE.journal`. Its first line names the cassette; each other line is

    {"seq": 7, "interaction": {"request": {...}, "response": {...}}}

in the cassette's layout (bodies readable and scrubbed, as `writer.interaction_data` makes them), where a
binary body is `{"binary": BASE64}` and a request body that extends an earlier one's conversation is
`{"extends": SEQ, "at": ..., "add": ...}` (as in a compact cassette, by sequence number). `seq` is the order
the requests arrived in, which the cassette keeps; lines come in the order the exchanges finished.

A recording holds its journal, and so its cassette's path, from its start to its end (an exclusive `flock`
on the journal, made as a file of its own, never through a link): a second recording into the same cassette
is refused at once, and `sim recover` will not read a journal still being written. A line is appended whole
or not at all: one that cannot be written in full (a full disk) is cut off again,
so the next exchange starts a line of its own. Reading keeps every whole line and skips, saying so, what is
not one (a line cut short and run on, one longer than `LINE_LIMIT`, never read whole).
"""

from __future__ import annotations

import base64
import errno
import fcntl
import json
import os
import stat
import sys
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from sim.cassette.compact import Compactor, Rebuilder
from sim.cassette.scrubbing import Scrubber
from sim.cassette.writer import HttpExchange, cassette_pieces, interaction_data, write_pieces, written_rest
from sim.core.errors import CassetteError
from sim.core.json_text import loads

SUFFIX = ".journal"
_FORMAT = 1
LINE_LIMIT = 256 * 2**20
"""The longest journal line read (one exchange, its bodies readable: far beyond the 64 MiB a body may
decompress into); a longer one is skipped unread."""
_SKIP_CHUNK = 64 * 2**10


def journal_path(cassette: Path) -> Path:
    """Where the journal of a recording into `cassette` is kept."""
    return cassette.with_name(cassette.name + SUFFIX)


def _encoded(body: Any) -> Any:
    return {"binary": base64.b64encode(body).decode("ascii")} if isinstance(body, bytes) else body


def _decoded(body: Any) -> Any:
    if isinstance(body, Mapping) and set(body) == {"binary"}:
        return base64.b64decode(str(body["binary"]), validate=True)
    return body


class Journal:
    """An open journal, appended to from any thread; `finish` writes the cassette and removes it. It holds
    the cassette's path for the recording's lifetime."""

    def __init__(self, cassette: Path, secrets: tuple[str, ...], *, keep: bool = False) -> None:
        """Start the journal of a recording into `cassette`, holding its path; `CassetteError` when another
        recording holds it, when a journal with exchanges is there (a recording that did not finish: it is
        never overwritten), when a link stands where the journal goes, and (`keep`) when the cassette
        exists."""
        self.cassette = cassette
        self.path = journal_path(cassette)
        self._secrets = secrets
        self._scrubber = Scrubber(secrets)
        self._compactor = Compactor()
        self._lock = threading.Lock()
        self._lost: set[int] = set()
        """Exchanges that were not written: a later one extending them is written in full."""
        self.count = 0
        """Exchanges written so far."""
        self.problems: list[str] = []
        """Why exchanges were not written (one that cannot be written, or would hold a secret)."""
        try:
            cassette.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise CassetteError(f"{cassette.parent}: cannot make the folder: {error.strerror}") from None
        self._fd: int | None = _held(self.path, cassette)
        try:
            if keep and cassette.exists():  # asked only now, so that no other recording writes it meanwhile
                raise CassetteError(f"cassette exists: {cassette} (use --force to overwrite it)")
            _append(self._fd, _line({"sim_journal": _FORMAT, "cassette": self.cassette.name}))
        except OSError as error:
            self._give_up()
            raise CassetteError(f"{self.path}: cannot write: {error.strerror or error}") from None
        except CassetteError:
            self._give_up()
            raise

    def _give_up(self) -> None:
        """Remove the journal (it holds no exchange) and let its path go."""
        self.path.unlink(missing_ok=True)
        self.close()

    def _open(self) -> int:
        """The journal's descriptor, while the recording is on."""
        if self._fd is None:
            raise CassetteError(f"{self.path}: the recording has ended")
        return self._fd

    def append(self, seq: int, exchange: HttpExchange) -> bool:
        """Write one finished exchange (`seq`: its request's place in arrival order), scrubbed, and fsync;
        False (and why in `problems`) when it cannot be written: nothing of it is."""
        try:
            interaction = interaction_data(exchange, self._scrubber)
        except (ValueError, OSError) as error:
            self.problems.append(f"exchange {seq}: cannot be written: {error}")
            return False
        request, response = interaction["request"], interaction["response"]
        with self._lock:
            body = request["body"]
            if isinstance(body, str):
                path = urlsplit(str(request["uri"])).path
                extension = self._compactor.add(seq, str(request["method"]), path, body)
                # (an exchange that was not written is extended by none: it is not there to rebuild from)
                if extension is not None and extension.base < seq and extension.base not in self._lost:
                    request = {**request, "body": extension.data()}
            request = {**request, "body": _encoded(request["body"])}
            response = {**response, "body": {"string": _encoded(response["body"]["string"])}}
            self._lost.add(seq)
            try:
                line = _line({"seq": seq, "interaction": {"request": request, "response": response}})
            except ValueError as error:  # text no UTF-8 encoder takes (a lone surrogate)
                self.problems.append(f"exchange {seq}: cannot be written: {error}")
                return False
            if self._scrubber.holds_secret(line.decode("utf-8")):
                self.problems.append(f"exchange {seq}: not written: it would still hold a secret")
                return False
            try:
                _append(self._open(), line)
            except CassetteError as error:
                self.problems.append(f"exchange {seq}: not written: {error}")
                return False
            except OSError as error:
                self.problems.append(f"exchange {seq}: not written: {self.path}: {error.strerror or error}")
                return False
            self._lost.discard(seq)
            self.count += 1
            return True

    def close(self) -> None:
        """Stop appending and let the cassette's path go; the journal stays on disk."""
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def finish(self, *, sim: Mapping[str, Any] | None = None, compact: bool = False) -> int:
        """Close the journal, write the cassette from it atomically (with the `sim:` block, if any), and
        remove it; how many exchanges the cassette holds. The journal is removed, and nothing written,
        when no exchange finished; on an error it stays. The path is let go only then."""
        with self._lock:
            held, self._fd = self._fd, None  # no more appends; the lock stays until the end
        try:
            if not self.count:
                self.path.unlink(missing_ok=True)
                if self.problems:
                    raise CassetteError(f"{self.cassette}: not written: {_summary(self.problems)}")
                return 0
            if self.problems:
                raise CassetteError(
                    f"{self.cassette}: not written: {_summary(self.problems)}; the {self.count} others are"
                    f" in {self.path}: `sim recover {self.path}` makes a cassette of them"
                )
            block = None if sim is None else self._scrubber.value(dict(sim))
            recovered = write_recovered(
                self.path, self.cassette, sim=block, compact=compact, secrets=self._secrets, held=True
            )
            self.path.unlink(missing_ok=True)
            return recovered.count
        finally:
            if held is not None:
                os.close(held)


def _held(path: Path, cassette: Path) -> int:
    """The journal at `path` opened for appending and locked: made anew, or one left empty by a recording
    that ended before any exchange finished; `CassetteError` for anything else there."""
    for _ in range(3):  # another recording may remove its journal between our looking and our locking
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
        except OSError as error:
            if error.errno == errno.ELOOP:
                raise CassetteError(
                    f"{path}: a symbolic link stands where the journal of {cassette.name} goes; a recording"
                    " writes its journal only as a file of its own (remove the link)"
                ) from None
            raise CassetteError(f"{path}: cannot write: {error.strerror or error}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise CassetteError(
                f"{cassette}: another recording is writing into it (its journal {path} is held); record"
                " elsewhere, or wait for it to end"
            ) from None
        if not _same_inode(fd, path):  # removed or replaced meanwhile: look again
            os.close(fd)
            continue
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # a FIFO would never answer a read
            os.close(fd)
            raise CassetteError(f"{path}: not a file where the journal of {cassette.name} goes (remove it)")
        if os.read(fd, _HEADER_SIZE).count(b"\n") > 1 or os.fstat(fd).st_size >= _HEADER_SIZE:
            os.close(fd)
            raise CassetteError(
                f"{path}: a recording that did not finish left this journal; make a cassette of it"
                f" with `sim recover {path}`, or delete it"
            )
        os.ftruncate(fd, 0)  # made now, or left with no exchange in it: ours
        return fd
    raise CassetteError(f"{path}: keeps being replaced by another program; record elsewhere")


_HEADER_SIZE = 4096
"""More than a journal's first line: a journal this long or longer holds an exchange."""


def _same_inode(fd: int, path: Path) -> bool:
    try:
        here, there = os.fstat(fd), os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def in_use(journal: Path) -> bool:
    """Whether a recording is still writing `journal` (it holds its lock)."""
    try:
        fd = os.open(journal, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def _summary(problems: list[str]) -> str:
    """The first problem, and how many more there were."""
    more = len(problems) - 1
    return problems[0] + (f" (and {more} more exchange{'s' if more > 1 else ''} not written)" if more else "")


def _line(value: Mapping[str, Any]) -> bytes:
    """One journal line; `ValueError` for text that is not UTF-8 (a lone surrogate)."""
    return (json.dumps(value, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def _append(fd: int, line: bytes) -> None:
    """Append `line` to the file open (`O_APPEND`) on `fd` and fsync, all or nothing: on an error (a full
    disk) the file is cut back to where it ended, so no torn line is left for the next one to run on."""
    end = os.lseek(fd, 0, os.SEEK_END)
    try:
        view = memoryview(line)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except OSError:
        os.ftruncate(fd, end)
        raise


class Recovered:
    """What reading a journal found: the exchanges it holds, whether its last line was cut short, and the
    lines skipped (`line N: why`) because they held no whole exchange."""

    def __init__(self, count: int, torn: bool, skipped: list[str]) -> None:
        self.count = count
        self.torn = torn
        self.skipped = skipped


class _Reader:
    """A journal on disk, read by line offsets: each interaction read when it is written out."""

    def __init__(self, path: Path, line_limit: int = LINE_LIMIT) -> None:
        self.path = path
        self.torn = False
        self.offsets: dict[int, int] = {}
        self.skipped: list[str] = []
        self._limit = line_limit
        try:
            self._file = open(path, "rb")  # noqa: SIM115 (closed by `close`)
        except OSError as error:
            raise CassetteError(f"{path}: cannot read: {error}") from None
        self._index()
        self._rebuilder = Rebuilder(self._raw_body, limit=sys.maxsize)  # our own recording, asked for in full

    def _line(self) -> tuple[bytes | None, int, bool]:
        """The next line (None when it is longer than the limit: skipped unread), its length, and whether
        it ends (a last line cut short does not)."""
        line = self._file.readline(self._limit)
        if len(line) < self._limit or line.endswith(b"\n"):
            return line, len(line), line.endswith(b"\n")
        size, ends = len(line), False
        del line
        while not ends and (chunk := self._file.readline(_SKIP_CHUNK)):
            size, ends = size + len(chunk), chunk.endswith(b"\n")
        return None, size, ends

    def _index(self) -> None:
        first, offset, _ = self._line()
        try:
            header = loads(first or b"")
        except ValueError:
            header = None
        if not isinstance(header, dict) or header.get("sim_journal") != _FORMAT:
            raise CassetteError(f"{self.path}:1: not a sim recording journal")
        bases: dict[int, int | None] = {}
        number = 1
        while True:
            line, size, ends = self._line()
            if not size:
                break
            number, start, offset = number + 1, offset, offset + size
            if not ends:  # the exchange being written when the recording stopped
                self.torn = True
                break
            try:
                if line is None:
                    raise ValueError(f"longer than {self._limit:,} bytes")
                seq, base = _checked(loads(line))
                if seq in bases:
                    raise ValueError(f"exchange {seq} again")
                if base is not None and base not in bases:
                    raise ValueError(f"it extends exchange {base}, which the journal does not hold")
            except (ValueError, KeyError, TypeError, AttributeError) as error:
                self.skipped.append(f"line {number}: {error}")
                continue
            bases[seq] = base
            self.offsets[seq] = start

    def interaction(self, seq: int) -> dict[str, Any]:
        """The interaction of exchange `seq`, as its line holds it."""
        self._file.seek(self.offsets[seq])
        value = json.loads(self._file.readline())["interaction"]
        if not isinstance(value, dict):
            raise ValueError("`interaction` must be a mapping")
        return value

    def body(self, seq: int) -> str:
        """The full text of a request body, rebuilt from the bodies it extends."""
        return self._rebuilder.text(seq)

    def _raw_body(self, seq: int) -> Any:
        if seq not in self.offsets:
            raise ValueError(f"`extends` must name an earlier exchange, not {seq!r}")
        return _decoded(self.interaction(seq)["request"]["body"])

    def close(self) -> None:
        self._file.close()


def _checked(line: Any) -> tuple[int, int | None]:
    """A journal line's `seq` and the `seq` its request body extends, if any; `ValueError` (or a
    `KeyError`, `TypeError`) when it is not a whole exchange."""
    seq, interaction = line["seq"], line["interaction"]
    if not isinstance(seq, int) or isinstance(seq, bool):
        raise ValueError(f"`seq` must be a number, not {seq!r}")
    request, response = interaction["request"], interaction["response"]
    body = _decoded(request["body"])
    _decoded(response["body"]["string"])
    if not isinstance(body, Mapping) or "extends" not in body:
        return seq, None
    base = body["extends"]
    if not isinstance(base, int) or isinstance(base, bool) or not 0 <= base < seq:
        raise ValueError(f"`extends` must name an earlier exchange, not {base!r}")
    return seq, base


def _interactions(reader: _Reader, compact: bool) -> Iterator[dict[str, Any]]:
    order = sorted(reader.offsets)
    position = {seq: number for number, seq in enumerate(order)}
    for seq in order:
        try:
            interaction = reader.interaction(seq)
            request, response = interaction["request"], interaction["response"]
            body = _decoded(request["body"])
            if isinstance(body, Mapping) and "extends" in body:
                body = {**body, "extends": position[int(body["extends"])]} if compact else reader.body(seq)
            string = _decoded(response["body"]["string"])
        except (ValueError, KeyError, TypeError) as error:
            raise CassetteError(f"{reader.path}: exchange {seq}: cannot be read: {error}") from None
        yield {
            "request": {**request, "body": body},
            "response": {**response, "body": {**response["body"], "string": string}},
        }


def same_file(path: Path, other: Path) -> bool:
    """Whether two existing paths are one file (through links of either kind, or resolved alike)."""
    try:
        return path.resolve() == other.resolve() or os.path.samefile(path, other)
    except OSError:
        return False


def write_recovered(
    journal: Path,
    cassette: Path,
    *,
    sim: Mapping[str, Any] | None = None,
    compact: bool = False,
    secrets: tuple[str, ...] = (),
    line_limit: int = LINE_LIMIT,
    held: bool = False,
) -> Recovered:
    """Write the cassette a journal holds, atomically and fsynced, an exchange at a time (`compact`: bodies
    that extend earlier ones stay references); a last line cut short, and lines that hold no whole exchange,
    are left out. `CassetteError`, the journal untouched, when there is nothing to write or it cannot be
    written (a full disk), or a recording still writes it (unless it is the caller's own: `held`)."""
    if not held and in_use(journal):
        raise CassetteError(f"{journal}: a recording is still writing it; recover it once it has ended")
    if cassette.exists() and same_file(cassette, journal):
        raise CassetteError(f"{cassette}: is the journal itself; write the cassette elsewhere")
    reader = _Reader(journal, line_limit)
    try:
        if not reader.offsets:
            count = len(reader.skipped)
            skipped = f" ({count} line{'s' * (count > 1)} skipped: {reader.skipped[0]})" if count else ""
            raise CassetteError(f"{journal}: no whole exchange in it{skipped}")
        block = dict(sim) if sim is not None else None
        if compact:
            block = {**(block or {}), "compact": True}
        pieces = cassette_pieces(_interactions(reader, compact), written_rest(block))
        try:
            write_pieces(cassette, pieces, refuse=Scrubber(secrets).holds_secret)
        except OSError as error:
            raise CassetteError(
                f"{cassette}: cannot write: {error.strerror or error}; the exchanges stay in {journal}:"
                f" `sim recover {journal}` makes the cassette once it can be written"
            ) from None
        return Recovered(len(reader.offsets), reader.torn, reader.skipped)
    finally:
        reader.close()
