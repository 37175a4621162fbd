"""The `sim:` block's reply limit: written as `max_tokens`, and still read from files that say
`max_completion_tokens` (as sim wrote it for both APIs before the field had its name)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from sim.cassette.reader import read_cassette
from sim.cassette.replay import recorded_session
from sim.cassette.session import RecordedSession

BUNDLED = Path(__file__).parents[2] / "cassettes"
BLOCK = {
    "prompt": "p", "system_prompt": "s", "model": "m", "max_turns": 2, "outcome": "completed", "turns": 1
}  # fmt: skip


@pytest.mark.parametrize("bundled", ["echo-42.yaml", "responses/echo-42.yaml"])
def test_a_file_written_with_the_old_key_still_loads(tmp_path: Path, bundled: str) -> None:
    data = yaml.safe_load((BUNDLED / bundled).read_text())
    assert "max_completion_tokens" in data["sim"] and "max_tokens" not in data["sim"]
    data["sim"]["max_completion_tokens"] = 64
    path = tmp_path / "old.yaml"
    path.write_text(yaml.safe_dump(data))
    assert recorded_session(read_cassette(path)).max_tokens == 64


def test_the_limit_is_written_as_max_tokens_and_read_back() -> None:
    written = RecordedSession(**BLOCK, max_tokens=512).model_dump(mode="json")
    assert written["max_tokens"] == 512 and "max_completion_tokens" not in written
    assert RecordedSession.model_validate(written).max_tokens == 512


def test_a_block_naming_the_limit_twice_is_refused() -> None:
    with pytest.raises(ValidationError):
        RecordedSession.model_validate({**BLOCK, "max_tokens": 5, "max_completion_tokens": 6})
