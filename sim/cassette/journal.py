"""The recording journal: each finished exchange appended, scrubbed, as one fsynced JSON line beside the
cassette, and turned into the cassette atomically at the end, so that memory stays bounded by the exchange
in flight and a crash loses at most that exchange (`sim recover JOURNAL` makes a cassette of what is left).

The journal is `CASSETTE.journal`. Its first line names the cassette; each other line is

    {"seq": 7, "interaction": {"request": {...}, "response": {...}}}

in the cassette's layout (bodies readable and scrubbed, as `writer.interaction_data` makes them), where a
binary body is `{"binary": BASE64}` and a request body that extends an earlier one's conversation is
`{"extends": SEQ, "at": ..., "add": ...}` (as in a compact cassette, by sequence number). `seq` is the order
the requests arrived in, which the cassette keeps; lines come in the order the exchanges finished.
"""

from __future__ import annotations

import base64
import json
import os
import sys
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

from sim.cassette.compact import Compactor, Rebuilder
from sim.cassette.scrubbing import Scrubber
from sim.cassette.writer import Exchange, cassette_pieces, interaction_data, write_pieces, written_rest
from sim.core.errors import CassetteError

SUFFIX = ".journal"
_FORMAT = 1


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
    """An open journal, appended to from any thread; `finish` writes the cassette and removes it."""

    def __init__(self, cassette: Path, secrets: tuple[str, ...]) -> None:
        """Start the journal of a recording into `cassette`; `CassetteError` when one is already there (a
        recording that did not finish: it is never overwritten)."""
        self.cassette = cassette
        self.path = journal_path(cassette)
        self._secrets = secrets
        self._scrubber = Scrubber(secrets)
        self._compactor = Compactor()
        self._lock = threading.Lock()
        self.count = 0
        """Exchanges written so far."""
        self.problems: list[str] = []
        """Why exchanges were not written (one that cannot be written, or would hold a secret)."""
        if self.path.exists():
            raise CassetteError(
                f"{self.path}: a recording that did not finish left this journal; make a cassette of it"
                f" with `sim recover {self.path}`, or delete it"
            )
        self._file: IO[str] | None = None

    def _open(self) -> IO[str]:
        """The journal file, made when the first exchange finishes (a run that records nothing leaves
        nothing behind)."""
        if self._file is None:
            try:
                self._file = open(self.path, "x", encoding="utf-8")  # noqa: SIM115 (kept open)
            except OSError as error:
                raise CassetteError(f"{self.path}: cannot write: {error}") from None
            self._write_line({"sim_journal": _FORMAT, "cassette": self.cassette.name})
        return self._file

    def _write_line(self, value: Mapping[str, Any]) -> None:
        file = self._open()
        file.write(json.dumps(value, ensure_ascii=False, separators=(",", ":")) + "\n")
        file.flush()
        os.fsync(file.fileno())

    def append(self, seq: int, exchange: Exchange) -> bool:
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
                if extension is not None and extension.base < seq:
                    request = {**request, "body": extension.data()}
            request = {**request, "body": _encoded(request["body"])}
            response = {**response, "body": {"string": _encoded(response["body"]["string"])}}
            line = {"seq": seq, "interaction": {"request": request, "response": response}}
            if self._scrubber.holds_secret(json.dumps(line, ensure_ascii=False)):
                self.problems.append(f"exchange {seq}: not written: it would still hold a secret")
                return False
            try:
                self._write_line(line)
            except (OSError, CassetteError) as error:
                self.problems.append(f"exchange {seq}: not written: {error}")
                return False
            self.count += 1
            return True

    def close(self) -> None:
        """Stop appending; the journal stays on disk."""
        with self._lock:
            if self._file is not None:
                self._file.close()

    def finish(self, *, sim: Mapping[str, Any] | None = None, compact: bool = False) -> int:
        """Close the journal, write the cassette from it atomically (with the `sim:` block, if any), and
        remove it; how many exchanges the cassette holds. The journal is removed, and nothing written,
        when no exchange finished; on an error it stays."""
        self.close()
        if self.problems:
            raise CassetteError(
                f"{self.cassette}: not written: {'; '.join(self.problems)} (the other exchanges are in"
                f" {self.path})"
            )
        if not self.count:
            self.path.unlink(missing_ok=True)
            return 0
        block = None if sim is None else self._scrubber.value(dict(sim))
        recovered = write_recovered(
            self.path, self.cassette, sim=block, compact=compact, secrets=self._secrets
        )
        count = recovered.count
        self.path.unlink(missing_ok=True)
        return count


class Recovered:
    """What reading a journal found: the exchanges it holds, and whether its last line was cut short."""

    def __init__(self, count: int, torn: bool) -> None:
        self.count = count
        self.torn = torn


class _Reader:
    """A journal on disk, read by line offsets: each interaction read when it is written out."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.torn = False
        self.offsets: dict[int, int] = {}
        try:
            self._file = open(path, "rb")  # noqa: SIM115 (closed by `close`)
        except OSError as error:
            raise CassetteError(f"{path}: cannot read: {error}") from None
        self._index()
        self._rebuilder = Rebuilder(self._raw_body, limit=sys.maxsize)  # our own recording, asked for in full

    def _index(self) -> None:
        first = self._file.readline()
        try:
            header = json.loads(first)
        except ValueError:
            header = None
        if not isinstance(header, dict) or header.get("sim_journal") != _FORMAT:
            raise CassetteError(f"{self.path}:1: not a sim recording journal")
        offset, number = len(first), 1
        for line in self._file:
            number += 1
            if not line.endswith(b"\n"):  # the exchange being written when the recording stopped
                self.torn = True
                break
            try:
                seq = json.loads(line)["seq"]
            except (ValueError, KeyError, TypeError):
                raise CassetteError(f"{self.path}:{number}: not a journal line") from None
            if not isinstance(seq, int) or seq in self.offsets:
                raise CassetteError(f"{self.path}:{number}: a missing or repeated `seq`")
            self.offsets[seq] = offset
            offset += len(line)

    def interaction(self, seq: int) -> dict[str, Any]:
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


def write_recovered(
    journal: Path,
    cassette: Path,
    *,
    sim: Mapping[str, Any] | None = None,
    compact: bool = False,
    secrets: tuple[str, ...] = (),
) -> Recovered:
    """Write the cassette a journal holds, atomically, an exchange at a time (`compact`: bodies that extend
    earlier ones stay references); a last line cut short is left out."""
    reader = _Reader(journal)
    try:
        block = dict(sim) if sim is not None else None
        if compact:
            block = {**(block or {}), "compact": True}
        pieces = cassette_pieces(_interactions(reader, compact), written_rest(block))
        write_pieces(cassette, pieces, refuse=Scrubber(secrets).holds_secret)
        return Recovered(len(reader.offsets), reader.torn)
    finally:
        reader.close()
