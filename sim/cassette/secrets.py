"""What counts as a secret in an HTTP exchange: headers never written, text that looks like a credential,
the live key wherever it stands, and the placeholders other projects leave where a secret was."""

from __future__ import annotations

import re
from collections.abc import Iterable

from sim.core.errors import ConfigurationError

SECRET_HEADERS: frozenset[str] = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "api-key",
        "x-api-key",
        "openai-organization",
        "openai-project",
        "cookie",
        "set-cookie",
    }
)
"""Header names (lower case) whose values are credentials or identify the account; never written."""

STALE_HEADERS: frozenset[str] = frozenset({"content-length", "content-encoding", "transfer-encoding"})
"""Headers that no longer describe a body once it is stored decompressed and pretty-printed."""

REDACTED = "<redacted>"

MIN_KEY_CHARS = 8
"""The shortest key sim records with: the key is removed wherever it stands, and a shorter one would be cut
out of ordinary words and numbers (`sim`, `1234`); eight random characters never turn up by chance."""

# A credential starts where no letter or digit stands before it: after a quote, a space or a line break
# of decoded text alike (`\b` fails after JSON's `\n`, whose `n` is a word character), or right after a
# percent-encoded character (`key%3Dsk-...`, `Bearer%20sk-...`: a URL's query). The literal comes first and
# the look-behind checks what stands before it: a pattern that opens with a look-behind is tried at every
# position, while one that opens with a literal is searched for at C speed (80 times faster on a 1 MiB body).
_TOKEN_CHARS = r"A-Za-z0-9_\-"


def _starting(literal: str, before: str) -> str:
    """`literal` (escaped), matched only where none of `before` (a character class's inside) stands just
    before it, or a percent-encoded character does."""
    return rf"{literal}(?:(?<![{before}]{literal})|(?<=%[0-9A-Fa-f]{{2}}{literal}))"


CREDENTIAL_PATTERNS: dict[str, re.Pattern[str]] = {
    "API key": re.compile(_starting("sk-", "A-Za-z0-9") + r"[A-Za-z0-9_\-]{16,}"),
    "bearer token": re.compile(_starting("Bearer", "A-Za-z0-9") + r"\s+[A-Za-z0-9_\-.=]{12,}"),
    "organization id": re.compile(_starting("org-", "A-Za-z0-9") + r"[A-Za-z0-9]{12,}"),
    "project id": re.compile(_starting("proj_", "A-Za-z0-9") + r"[A-Za-z0-9]{12,}"),
}
"""Text that looks like a credential or an account id, by kind (match it in decoded text)."""


def require_scrubbable(name: str, key: str) -> None:
    """`ConfigurationError` (never showing the key) when `key` is too short to be scrubbed safely, or holds
    a `<` or `>` (what stands around `<redacted>` could spell it again)."""
    if len(key) < MIN_KEY_CHARS:
        raise ConfigurationError(
            f"{name} has {len(key)} characters: sim records only with keys of at least {MIN_KEY_CHARS},"
            " since a shorter one cannot be told apart from ordinary text (a local endpoint takes any"
            " longer placeholder)"
        )
    if "<" in key or ">" in key:
        raise ConfigurationError(
            f"{name} holds a < or a >: sim writes {REDACTED} where the key stood, and the text around it"
            " could spell such a key again"
        )


def _known(secret: str) -> str:
    """One known secret's alternative: the literal wherever it stands, whatever surrounds it (`tokenKEY`,
    `KEY0`); one shorter than a key may be (only an account id can be) only as a whole token."""
    literal = re.escape(secret)
    if len(secret) >= MIN_KEY_CHARS:
        return literal
    return _starting(literal, _TOKEN_CHARS) + f"(?![{_TOKEN_CHARS}])"


def known_secrets_pattern(secrets: Iterable[str]) -> re.Pattern[str] | None:
    """A pattern matching each of `secrets` wherever it stands (one shorter than `MIN_KEY_CHARS` only as a
    whole token), the longest first."""
    kept = sorted({secret for secret in secrets if secret}, key=len, reverse=True)
    if not kept:
        return None
    return re.compile("|".join(_known(secret) for secret in kept))


def scrub_text(text: str, known: re.Pattern[str] | None) -> str:
    """`text` (decoded) with the known secrets and anything that looks like a credential replaced."""
    if known is not None:
        text = known.sub(REDACTED, text)
    for pattern in CREDENTIAL_PATTERNS.values():
        text = pattern.sub(REDACTED, text)
    return text


def credentials_in(text: str) -> list[str]:
    """The kinds of credential that appear in `text` (decoded)."""
    return [kind for kind, pattern in CREDENTIAL_PATTERNS.items() if pattern.search(text)]


_PLACEHOLDER_WORDS = frozenset(
    {"dummy", "fake", "test", "testing", "placeholder", "example", "redacted", "filtered", "scrubbed",
     "masked", "hidden", "removed", "none", "null", "secret", "key", "token", "mock", "sample"}
)  # fmt: skip
_WORDS = re.compile(r"[A-Za-z]+|\d+")
_STARS = re.compile(r"^\**$")
_XS = re.compile(r"^x{3,}$", re.IGNORECASE)


def is_placeholder(value: str) -> bool:
    """Whether a header value is a stand-in (`<filtered>`, `***`, `AUTHORIZATION-XXX`, `Bearer dummy`...),
    not a secret; a value shaped like a real credential or account id never is."""
    text = value.strip()
    text = re.sub(r"^(bearer|basic)\s+", "", text, flags=re.IGNORECASE)
    if credentials_in(text):
        return False
    if _STARS.match(text) or (text.startswith("<") and text.endswith(">")):
        return True
    words = _WORDS.findall(text)
    if any(_XS.match(word) for word in words):
        return True
    # Made of plain words (`test_openai_api_key`, `REDACTED`, `fake-key`): no random part, so no secret.
    lowered = [word.lower() for word in words if not word.isdigit()]
    return bool(lowered) and any(word in _PLACEHOLDER_WORDS for word in lowered) and _looks_worded(text)


def _looks_worded(text: str) -> bool:
    """Whether `text` is made of short dictionary-like words rather than a long random run."""
    return all(len(run) <= 16 for run in re.findall(r"[A-Za-z0-9]+", text))
