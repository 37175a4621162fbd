"""Settings for a live endpoint: OPENAI_BASE_URL, OPENAI_API_KEY and OPENAI_MODEL, from the env or .env."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from pydantic_settings import BaseSettings, SettingsConfigDict

from sim.core.errors import ConfigurationError
from sim.wire import Api
from sim.wire.azure_paths import API_VERSION, azure_shaped, key_headers
from sim.wire.registry import ENDPOINTS

REQUIRED = ("OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_MODEL")


class _Sources(BaseSettings):
    """Raw values: the process environment wins over `.env`."""

    model_config = SettingsConfigDict(env_file=".env", env_file_encoding="utf-8", extra="ignore")

    openai_base_url: str | None = None
    openai_api_key: str | None = None
    openai_model: str | None = None
    openai_api: str | None = None
    openai_org_id: str | None = None
    openai_project_id: str | None = None


def mask(secret: str) -> str:
    """A secret as it may be shown: its first three characters and its length, never the rest."""
    return f"{secret[:3]}…({len(secret)} chars)" if len(secret) > 6 else "***"


def _require_header_safe(name: str, secret: str) -> None:
    """`ConfigurationError` when `secret` cannot travel in an HTTP header; the message never shows it."""
    if not secret.isascii() or any(not 0x21 <= ord(char) <= 0x7E for char in secret):
        raise ConfigurationError(
            f"{name} holds a space, a control character (a line break?) or a non-ASCII character,"
            " which no HTTP header can carry"
        )


@dataclass(frozen=True, slots=True)
class Settings:
    """What a live run needs; `repr` masks the key."""

    base_url: str
    api_key: str
    model: str
    account_ids: tuple[str, ...] = ()
    """OPENAI_ORG_ID and OPENAI_PROJECT_ID when set (the SDK sends them): secrets too."""
    api: Api = Api.chat
    """OPENAI_API: which API to speak, `chat` (the default) or `responses`."""
    query: tuple[tuple[str, str], ...] = ()
    """The query OPENAI_BASE_URL ends in (only Azure OpenAI's `api-version`), sent with every request."""

    def __repr__(self) -> str:
        shown = f"base_url={self.base_url!r}, api_key={mask(self.api_key)!r}, model={self.model!r}"
        return f"Settings({shown}, api={self.api.value!r})"

    @classmethod
    def load(cls, env_file: Path | str | None = ".env") -> Settings:
        """Read, trim and check the settings; `ConfigurationError` names every missing one, in order."""
        sources = _Sources(_env_file=env_file)
        values = {
            "OPENAI_BASE_URL": (sources.openai_base_url or "").strip(),
            "OPENAI_API_KEY": (sources.openai_api_key or "").strip(),
            "OPENAI_MODEL": (sources.openai_model or "").strip(),
        }
        missing = [name for name in REQUIRED if not values[name]]
        if missing:
            raise ConfigurationError(f"Missing required settings: {', '.join(missing)}")
        base_url, query = _without_query(values["OPENAI_BASE_URL"])
        if any(name != API_VERSION for name, _ in query):
            raise ConfigurationError(
                f"OPENAI_BASE_URL's query may hold only {API_VERSION} (Azure OpenAI's): a URL is printed and"
                " recorded, and the key goes as a header (OPENAI_API_KEY)"
            )
        if "@" in urlsplit(base_url).netloc:  # a user or password, however its port reads
            raise ConfigurationError(
                "OPENAI_BASE_URL must not carry a user or password: the key goes as a Bearer token"
                " (OPENAI_API_KEY), and a URL is printed and recorded"
            )
        if urlsplit(base_url).scheme not in ("http", "https") or not urlsplit(base_url).netloc:
            raise ConfigurationError(f"OPENAI_BASE_URL must be an http(s) URL, not {base_url!r}")
        try:
            urlsplit(base_url).port  # noqa: B018 - reading it checks it
        except ValueError:
            raise ConfigurationError(
                f"OPENAI_BASE_URL has a port out of range (0-65535): {base_url!r}"
            ) from None
        _require_header_safe("OPENAI_API_KEY", values["OPENAI_API_KEY"])
        for endpoint in ENDPOINTS.values():
            if base_url.rstrip("/").endswith(endpoint):
                raise ConfigurationError(
                    f"OPENAI_BASE_URL must not end in {endpoint} (the SDK appends it): "
                    f"use {base_url.rstrip('/').removesuffix(endpoint)!r}"
                )
        ids = tuple(i.strip() for i in (sources.openai_org_id, sources.openai_project_id) if i and i.strip())
        api = Api.named(sources.openai_api) if sources.openai_api and sources.openai_api.strip() else Api.chat
        return cls(base_url, values["OPENAI_API_KEY"], values["OPENAI_MODEL"], ids, api, query)

    @property
    def secrets(self) -> tuple[str, ...]:
        """Everything that must never be written or shown: the key and the account ids."""
        return (self.api_key, *self.account_ids)

    @property
    def headers(self) -> dict[str, str]:
        """The headers sent beside the SDK's own: to Azure OpenAI (its hosts, or a base path under
        `/openai`), a key in `api-key` too, as `AzureOpenAI` sends it (an Entra ID token goes as the Bearer
        token alone)."""
        return key_headers(self.api_key) if azure_shaped(self.base_url) else {}


def _without_query(url: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    """A base URL without its query, and the query's pairs (the SDK would put the path after it)."""
    parts = urlsplit(url)
    pairs = tuple(parse_qsl(parts.query, keep_blank_values=True))
    return urlunsplit(parts._replace(query="", fragment="")), pairs


@dataclass(frozen=True, slots=True)
class UpstreamCredentials:
    """What a proxy sends upstream in place of its clients' credentials: OPENAI_API_KEY and, when set,
    OPENAI_ORG_ID and OPENAI_PROJECT_ID (env or `.env`); `repr` masks them."""

    api_key: str
    organization: str | None = None
    project: str | None = None

    def __repr__(self) -> str:
        return f"UpstreamCredentials(api_key={mask(self.api_key)!r})"

    @classmethod
    def load(cls, env_file: Path | str | None = ".env", *, api_key: str | None = None) -> UpstreamCredentials:
        """Read and check them (`api_key`, when given, in place of OPENAI_API_KEY); `ConfigurationError`
        when the key is missing or unfit for a header."""
        sources = _Sources(_env_file=env_file)
        key = (api_key if api_key is not None else sources.openai_api_key or "").strip()
        if not key:
            raise ConfigurationError("Missing required settings: OPENAI_API_KEY (the upstream's key)")
        _require_header_safe("OPENAI_API_KEY", key)
        organization = (sources.openai_org_id or "").strip() or None
        project = (sources.openai_project_id or "").strip() or None
        for name, value in (("OPENAI_ORG_ID", organization), ("OPENAI_PROJECT_ID", project)):
            if value:
                _require_header_safe(name, value)
        return cls(key, organization, project)

    @property
    def headers(self) -> dict[str, str]:
        """The headers that carry them, as the SDK would send them."""
        headers = {"authorization": f"Bearer {self.api_key}"}
        if self.organization:
            headers["openai-organization"] = self.organization
        if self.project:
            headers["openai-project"] = self.project
        return headers

    @property
    def secrets(self) -> tuple[str, ...]:
        """Everything that must never be written or shown."""
        return tuple(value for value in (self.api_key, self.organization, self.project) if value)
