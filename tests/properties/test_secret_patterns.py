"""The credential patterns find exactly what the plain form of their rule finds: a look-behind first, then
the literal (the readable rule, tried at every position), against the fast form that searches for the
literal first. Drawn texts are built from the pieces that decide a match: the literals, characters that
may or may not stand before them, percent escapes and runs of token characters."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from sim.cassette.secrets import (
    CREDENTIAL_PATTERNS,
    MIN_KEY_CHARS,
    REDACTED,
    known_secrets_pattern,
    scrub_text,
)

FIXED = settings(deadline=None, database=None, derandomize=True, max_examples=600)
_START = r"(?:(?<![A-Za-z0-9])|(?<=%[0-9A-Fa-f]{2}))"
PLAIN: dict[str, re.Pattern[str]] = {
    "API key": re.compile(_START + r"sk-[A-Za-z0-9_\-]{16,}"),
    "bearer token": re.compile(_START + r"Bearer\s+[A-Za-z0-9_\-.=]{12,}"),
    "organization id": re.compile(_START + r"org-[A-Za-z0-9]{12,}"),
    "project id": re.compile(_START + r"proj_[A-Za-z0-9]{12,}"),
}
SECRETS = ["sk-live-0123456789abcdef", "org-abcdefghijklmnop", "liveKEY_1234", "0f1e2d3c"]
SHORT = "org-7"
"""An account id shorter than a key may be (`MIN_KEY_CHARS`)."""
PIECES = st.sampled_from(
    ["sk-", "Bearer", " ", "\t", "org-", "proj_", "%3D", "%2", "%", "x", "7", "_", "-", ".", "=", '"', "\\n",
     "é", "abcdefgh", "0123456789ab", "ABCDEFGHIJKLMNOPQRST", *SECRETS, SHORT]
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
def test_a_known_secret_never_survives_scrubbing_whatever_stands_around_it(text: str) -> None:
    """The live key glued to anything (`tokenKEY`, `KEY0`, `_KEY_`) is gone; a text holding no secret and
    nothing shaped like a credential is left as it was; a secret shorter than a key may be (only an account
    id can be) is matched only as a whole token, as the plain rule says."""
    scrubbed = scrub_text(text, known_secrets_pattern(SECRETS))
    assert not [secret for secret in SECRETS if len(secret) >= MIN_KEY_CHARS and secret in scrubbed]
    if not any(secret in text for secret in SECRETS) and not any(p.search(text) for p in PLAIN.values()):
        assert scrubbed == text
    assert not any(plain.search(scrubbed.replace(REDACTED, "\x00")) for plain in PLAIN.values())
    short = known_secrets_pattern([SHORT])
    plain = re.compile(rf"(?:(?<![A-Za-z0-9_\-])|(?<=%[0-9A-Fa-f]{{2}})){re.escape(SHORT)}(?![A-Za-z0-9_\-])")
    assert short is not None
    assert [m.span() for m in short.finditer(text)] == [m.span() for m in plain.finditer(text)]
