"""vcrpy, set up the sim way: secrets filtered, readable atomic files, and requests matched by their
canonical JSON body with a matcher that says where a request differs."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import vcr
from vcr.persisters.filesystem import CassetteNotFoundError
from vcr.serialize import deserialize
from vcr.serializers import yamlserializer

from sim.cassette.matching import canonical, describe_difference
from sim.cassette.secrets import MIN_KEY_CHARS, SECRET_HEADERS
from sim.cassette.writer import exchanges_from_vcr, write_cassette

RECORD_MODES = ("none", "once", "all")


def canonical_body(live: Any, recorded: Any) -> None:
    """vcrpy matcher: the JSON bodies are equal once keys are sorted; raises with the first difference."""
    if canonical(live.body) != canonical(recorded.body):
        raise AssertionError(describe_difference(_bytes(recorded.body), _bytes(live.body) or b""))


def _bytes(body: bytes | str | None) -> bytes | None:
    return body.encode() if isinstance(body, str) else body


class SimPersister:
    """Loads vcrpy cassettes; saves them as sim does: readable bodies, no secrets, all or nothing."""

    def __init__(self, secrets: tuple[str, ...] = ()) -> None:
        self.secrets = secrets

    def load_cassette(self, cassette_path: str, serializer: Any) -> Any:
        """vcrpy's requests and responses from the file."""
        path = Path(cassette_path)
        if not path.is_file():
            raise CassetteNotFoundError()
        return deserialize(path.read_text(encoding="utf-8"), yamlserializer)

    def save_cassette(self, cassette_path: str, cassette_dict: Mapping[str, Any], serializer: Any) -> None:
        """Write the interactions readably and atomically, scrubbed of secrets."""
        write_cassette(Path(cassette_path), exchanges_from_vcr(cassette_dict), sim=None, secrets=self.secrets)


def sim_vcr(record_mode: str = "none", secrets: tuple[str, ...] | None = None) -> vcr.VCR:
    """A `VCR` for tests: `none` replays only (never touches the network), `once` records what is missing,
    `all` records everything again. The live key (OPENAI_API_KEY) is scrubbed from what is written."""
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
    )
    recorder.register_matcher("canonical_body", canonical_body)
    recorder.register_persister(SimPersister(known))
    return recorder
