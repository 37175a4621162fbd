"""What counts as a secret in an HTTP exchange: headers never written, text that looks like a credential."""

from __future__ import annotations

import re

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

CREDENTIAL_PATTERNS: dict[str, re.Pattern[str]] = {
    "API key": re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}"),
    "bearer token": re.compile(r"\bBearer\s+[A-Za-z0-9_\-.=]{12,}"),
    "organization id": re.compile(r"\borg-[A-Za-z0-9]{12,}"),
    "project id": re.compile(r"\bproj_[A-Za-z0-9]{12,}"),
}
"""Text that looks like a credential or an account id, by kind."""


def scrub(text: str, secrets: tuple[str, ...]) -> str:
    """`text` with every known secret and anything that looks like a credential replaced."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, REDACTED)
    for pattern in CREDENTIAL_PATTERNS.values():
        text = pattern.sub(REDACTED, text)
    return text


def credentials_in(text: str) -> list[str]:
    """The kinds of credential that appear in `text`."""
    return [kind for kind, pattern in CREDENTIAL_PATTERNS.items() if pattern.search(text)]


_PLACEHOLDER = re.compile(r"^(bearer\s+)?(<[^>]*>|\*+|x+|dummy|redacted|filtered|none|null|)$", re.IGNORECASE)


def is_placeholder(value: str) -> bool:
    """Whether a header value is a stand-in (`<filtered>`, `***`, `Bearer <KEY>`...), not a secret."""
    return bool(_PLACEHOLDER.match(value.strip()))
