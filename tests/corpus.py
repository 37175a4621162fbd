"""The real-cassette corpus, read by path from `../shared/real-cassettes` beside the repository.

A user's fresh clone has no `../shared`: tests that need the corpus then skip, saying so, and never fail.
"""

from __future__ import annotations

from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "real-cassettes"
"""Chat Completions cassettes recorded against the live API by other projects; `responses/` beside them."""

needs_corpus = pytest.mark.skipif(
    not CORPUS.is_dir(),
    reason="needs the real-cassette corpus at ../shared/real-cassettes (not beside this clone)",
)


def real_cassettes(folder: str = "") -> list[Path]:
    """The corpus's cassettes (of `folder`, e.g. `responses`), sorted; none when the corpus is absent."""
    return sorted((CORPUS / folder).glob("*.yaml"))
