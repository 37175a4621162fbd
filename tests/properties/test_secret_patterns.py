"""The credential patterns find exactly what the plain form of their rule finds: a look-behind first, then
the literal (the readable rule, tried at every position), against the fast form that searches for the
literal first. Drawn texts are built from the pieces that decide a match: the literals, characters that
may or may not stand before them, percent escapes and runs of token characters."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from sim.cassette.secrets import CREDENTIAL_PATTERNS, REDACTED, known_secrets_pattern, scrub_text

FIXED = settings(deadline=None, database=None, derandomize=True, max_examples=600)
_START = r"(?:(?<![A-Za-z0-9])|(?<=%[0-9A-Fa-f]{2}))"
PLAIN: dict[str, re.Pattern[str]] = {
    "API key": re.compile(_START + r"sk-[A-Za-z0-9_\-]{16,}"),
    "bearer token": re.compile(_START + r"Bearer\s+[A-Za-z0-9_\-.=]{12,}"),
    "organization id": re.compile(_START + r"org-[A-Za-z0-9]{12,}"),
    "project id": re.compile(_START + r"proj_[A-Za-z0-9]{12,}"),
}
SECRETS = ["sk-live-0123456789abcdef", "org-abcdefghijklmnop", "liveKEY_1234"]
PIECES = st.sampled_from(
    ["sk-", "Bearer", " ", "\t", "org-", "proj_", "%3D", "%2", "%", "x", "7", "_", "-", ".", "=", '"', "\\n",
     "é", "abcdefgh", "0123456789ab", "ABCDEFGHIJKLMNOPQRST", *SECRETS]
)  # fmt: skip
TEXTS = st.lists(PIECES, max_size=12).map("".join)


@FIXED
@given(TEXTS)
def test_each_credential_pattern_matches_where_its_plain_rule_does(text: str) -> None:
    for kind, plain in PLAIN.items():
        assert [m.span() for m in CREDENTIAL_PATTERNS[kind].finditer(text)] == [
            m.span() for m in plain.finditer(text)
        ], kind


@FIXED
@given(TEXTS)
def test_the_known_secrets_are_matched_as_whole_tokens_as_the_plain_rule_says(text: str) -> None:
    alternatives = "|".join(re.escape(secret) for secret in sorted(SECRETS, key=len, reverse=True))
    plain = re.compile(rf"(?:(?<![A-Za-z0-9_\-])|(?<=%[0-9A-Fa-f]{{2}}))(?:{alternatives})(?![A-Za-z0-9_\-])")
    known = known_secrets_pattern(SECRETS)
    assert known is not None
    assert [m.span() for m in known.finditer(text)] == [m.span() for m in plain.finditer(text)]
    scrubbed = scrub_text(text, known)
    assert not any(plain.search(scrubbed.replace(REDACTED, "\x00")) for plain in PLAIN.values())
