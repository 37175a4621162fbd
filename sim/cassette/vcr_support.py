"""vcrpy, set up the sim way: secrets filtered, readable atomic files, and requests matched by their
canonical JSON body with a matcher that says where a request differs."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import vcr
from vcr.errors import CannotOverwriteExistingCassetteException
from vcr.persisters.filesystem import CassetteNotFoundError
from vcr.record_mode import RecordMode
from vcr.serialize import deserialize
from vcr.serializers import yamlserializer

from sim.cassette.compact import COMPACT_MARK, expand_data
from sim.cassette.matching import canonical, describe_difference
from sim.cassette.reader import load_data
from sim.cassette.record_modes import RECORD_MODES
from sim.cassette.secrets import MIN_KEY_CHARS, SECRET_HEADERS
from sim.cassette.writer import exchanges_from_vcr, to_yaml, write_cassette


def canonical_body(live: Any, recorded: Any) -> None:
    """vcrpy matcher: the JSON bodies are equal once keys are sorted; raises with the first difference."""
    if canonical(live.body) != canonical(recorded.body):
        raise AssertionError(describe_difference(_bytes(recorded.body), _bytes(live.body) or b""))


def _bytes(body: bytes | str | None) -> bytes | None:
    return body.encode() if isinstance(body, str) else body


class SimPersister:
    """Loads vcrpy cassettes; saves them as sim does: readable bodies, no secrets, all or nothing.
    `fresh` (recording all again) reads no cassette, so that only what the run sends is saved."""

    def __init__(self, secrets: tuple[str, ...] = (), fresh: bool = False) -> None:
        self.secrets = secrets
        self.fresh = fresh

    def load_cassette(self, cassette_path: str, serializer: Any) -> Any:
        """vcrpy's requests and responses from the file."""
        path = Path(cassette_path)
        if self.fresh or not path.is_file():
            raise CassetteNotFoundError()
        text = path.read_text(encoding="utf-8")
        if COMPACT_MARK.search(text):  # vcrpy reads only the plain form: expand it first
            text = to_yaml(expand_data(load_data(path)))
        return deserialize(text, yamlserializer)

    def save_cassette(self, cassette_path: str, cassette_dict: Mapping[str, Any], serializer: Any) -> None:
        """Write the interactions readably and atomically, scrubbed of secrets."""
        write_cassette(Path(cassette_path), exchanges_from_vcr(cassette_dict), sim=None, secrets=self.secrets)


def sim_vcr(record_mode: str = "none", secrets: tuple[str, ...] | None = None) -> vcr.VCR:
    """A `VCR` for tests in one of `RECORD_MODES` (`none`, the default, never touches the network); what a
    recording writes is what the run sent, no more. The live key (OPENAI_API_KEY) is scrubbed from it."""
    if record_mode not in RECORD_MODES:
        raise ValueError(f"record mode must be one of {', '.join(RECORD_MODES)}, not {record_mode!r}")
    known = secrets if secrets is not None else (os.environ.get("OPENAI_API_KEY", ""),)
    # a key too short to scrub safely cannot be a real one (and would be found inside ordinary text)
    known = tuple(secret for secret in known if len(secret) >= MIN_KEY_CHARS)
    recorder = vcr.VCR(
        record_mode=record_mode,
        decode_compressed_response=True,
        record_on_exception=False,
        filter_headers=sorted(SECRET_HEADERS),
        match_on=("method", "path", "canonical_body"),
        drop_unused_requests=record_mode == "new_episodes",
    )
    recorder.register_matcher("canonical_body", canonical_body)
    recorder.register_persister(SimPersister(known, fresh=record_mode == "all"))
    return recorder


def missing_recording(error: CannotOverwriteExistingCassetteException) -> str:
    """sim's own words for vcrpy's "can't play back this request": which request had no recording, how
    the nearest recorded one differs (its first differing JSON path), and the `--sim-record` to use."""
    cassette, request = error.cassette, error.failed_request
    played = sum(1 for count in cassette.play_counts.values() if count)
    what = f"{request.method} {urlsplit(request.uri).path}"
    if error.reason == "cassette_not_found":
        lines = [f"cassette {cassette._path} does not exist: request {played + 1} ({what}) has no recording"]
    elif error.reason == "already_played":
        lines = [f"cassette {cassette._path}: request {played + 1} ({what}) was recorded, but fewer times"
                 " than the test now sends it"]  # fmt: skip
    else:
        lines = [f"cassette {cassette._path} has no recording of request {played + 1} ({what})"]
        differences = [message for _, _, failed in error.similar_requests for name, message in failed
                       if name == "canonical_body"]  # fmt: skip
        if differences:
            lines.append(f"  the nearest recorded request differs at {differences[0]}")
        elif error.similar_requests:
            lines.append(f"  no recorded request goes to {what}")
    lines.append(_what_to_run(RecordMode(cassette.record_mode).value, error.reason))
    return "\n".join(lines)


def _what_to_run(mode: str, reason: str | None) -> str:
    """What the mode a request went unrecorded in does, and which `--sim-record` records it instead."""
    if reason == "cassette_not_found":
        return f"  --sim-record={mode} only replays: run pytest with --sim-record=once to record the cassette"
    does = {"none": "only replays", "once": "records only a cassette that does not exist yet"}.get(mode)
    return (
        f"  --sim-record={mode} {does or 'did not record it'}: run pytest with --sim-record=new_episodes to"
        " record what is missing (what is not used is dropped), or --sim-record=all (or delete the file) to"
        " record the test's whole cassette again"
    )


def missing_recording_in(error: BaseException | None) -> CannotOverwriteExistingCassetteException | None:
    """vcrpy's missing-recording error, wherever it stands in `error`'s chain (an SDK wraps it)."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, CannotOverwriteExistingCassetteException):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None
