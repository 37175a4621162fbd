"""An upstream's base URL (`sim proxy --upstream`, `sim drift --upstream`), parsed once for both: no user or
password in it, its query kept and sent with every request after the endpoint's path, and the values of
credential parameters in it masked wherever it is shown or recorded."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode, urlsplit

from sim.cassette.secrets import credentials_in
from sim.wire.azure_paths import azure_shaped, key_headers

MASKED = "***"

_CREDENTIAL_WORDS = frozenset(
    {"key", "apikey", "token", "secret", "password", "passwd", "pwd", "sig", "signature", "auth", "code",
     "credential", "credentials", "session", "sessionid"}
)  # fmt: skip
_WORD = re.compile(r"[a-z0-9]+")


def is_credential_parameter(name: str, value: str) -> bool:
    """Whether a query parameter carries a credential: by its name (`key`, `api-key`, `access_token`,
    `sig`, `client_secret`, `openaiKey`...) or by its value (shaped like a key or token)."""
    words = _WORD.findall(name.lower())
    joined = "".join(words)
    named = any(word in _CREDENTIAL_WORDS for word in words) or joined.endswith(("key", "token", "secret"))
    return named or bool(credentials_in(value))


def masked_query(pairs: list[tuple[str, str]]) -> str:
    """A query with the values of credential parameters masked."""
    shown = [(name, MASKED if is_credential_parameter(name, value) else value) for name, value in pairs]
    return urlencode(shown, safe="*")


@dataclass(frozen=True, slots=True)
class UpstreamUrl:
    """The real API's base URL, taken apart: where requests go (`origin`, `base_path`), the query it adds to
    each (Azure OpenAI's `api-version`), and how it is shown (credentials in its query masked)."""

    origin: str
    base_path: str
    query: tuple[tuple[str, str], ...]

    @classmethod
    def parse(cls, url: str) -> UpstreamUrl:
        """`ValueError` (one line, never showing the URL) for anything but an http(s) URL with a host and
        without a user or password in it."""
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError:
            raise ValueError("--upstream is not a URL (its host or port cannot be read)") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("--upstream must be an http(s) URL")
        if parts.username is not None or parts.password is not None:
            raise ValueError(
                "--upstream must not carry a user or password: sim sends the key (OPENAI_API_KEY or"
                " --key-file) as a Bearer token, and a URL is printed and recorded"
            )
        host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
        origin = f"{parts.scheme}://{host}" + (f":{port}" if port else "")
        query = tuple(parse_qsl(parts.query, keep_blank_values=True))
        return cls(origin, parts.path.rstrip("/"), query)

    @property
    def azure(self) -> bool:
        """Whether it is Azure OpenAI, which takes a key in an `api-key` header: one of Azure's hosts, or a
        base path under `/openai` (a gateway in front of it, or a simulator standing in for it)."""
        return azure_shaped(self.origin + self.base_path)

    def credentials(self, headers: Mapping[str, str]) -> dict[str, str]:
        """The credential headers (`authorization: Bearer KEY`, account ids) as this upstream takes them:
        to Azure OpenAI, a key in `api-key` instead of the Bearer token, and a Microsoft Entra token as the
        Bearer token alone (as `AzureOpenAI` sends each: never both, which its dated paths need not take)."""
        sent = dict(headers)
        token = sent.get("authorization", "").removeprefix("Bearer ")
        azure = key_headers(token) if self.azure and token else {}
        if azure:
            del sent["authorization"]
        return {**sent, **azure}

    def target(self, tail: str, query: str = "", *, shown: bool = False) -> str:
        """The URL a request for `tail` (a path below the base, such as `/chat/completions`) goes to, its
        own `query` after the upstream's; with `shown`, credential values masked."""
        pairs = [*self.query, *parse_qsl(query, keep_blank_values=True)]
        joined = masked_query(pairs) if shown else urlencode(pairs)
        return f"{self.origin}{self.base_path}{tail}" + (f"?{joined}" if joined else "")

    def __str__(self) -> str:
        return self.target("", shown=True)
