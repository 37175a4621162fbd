"""Azure OpenAI's paths for what sim serves, as the `AzureOpenAI` clients send them: which OpenAI path an
Azure path stands for (`served_as`), whether it must carry `?api-version=`, and one spelling of an API's
path below any base it sits under (`below_base`), so that a recording made at one host answers a client of
the other.

Azure OpenAI serves a deployment's Chat Completions at `/openai/deployments/{name}/chat/completions`, the
Responses API and its stored responses at `/openai/responses...` (`AzureOpenAI` with `azure_endpoint`),
and every path of its v1 API at `/openai/v1/...` (an `OpenAI` client with `base_url=".../openai/v1/"`).
Outside `/openai/v1/` a path without `api-version` is answered 404 by Azure OpenAI, and so by sim. An
`AzureOpenAI` client given sim's `OPENAI_BASE_URL` (`.../v1`) as its base URL sends a deployment's path
below it (`/v1/deployments/{name}/chat/completions?api-version=`): sim serves that too.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

__all__ = [
    "API_KEY_HEADER",
    "API_VERSION",
    "AZURE_API_KEY",
    "AZURE_SERVED",
    "MODULE_CLIENT_TYPE",
    "AzurePath",
    "azure_environment",
    "azure_shaped",
    "below_base",
    "has_api_version",
    "key_headers",
    "module_client_type",
    "served_as",
    "unsupported_version",
    "unversioned",
    "unversioned_error",
]

API_VERSION = "api-version"
"""The query parameter Azure OpenAI's paths outside `/openai/v1/` must carry."""

ROOT = "/openai"
"""Where Azure OpenAI's paths start."""
V1_ROOT = "/openai/v1"
"""Azure OpenAI's v1 API: the OpenAI API's paths below it, `api-version` optional."""
_OPENAI_ROOT = "/v1"
_DEPLOYMENT = re.compile(r"(?:/openai|/v1)/deployments/(?P<deployment>[^/]+)(?P<endpoint>/.+)")
"""A deployment's path: below `/openai`, or below the `/v1` of an `AzureOpenAI` client whose base URL is
`OPENAI_BASE_URL` (the Node SDK's reads it before `AZURE_OPENAI_ENDPOINT`; both SDKs put the deployment
after any base URL that has none)."""
_DEPLOYMENT_ENDPOINTS = frozenset({"/chat/completions"})
"""What sim serves of a deployment's endpoints (not Azure's completions, embeddings, audio or images)."""
_VERSIONED = re.compile(r"/(?:responses(?:/.*)?|models)")
"""What sim serves below `/openai/` outside deployments and v1: the Responses API and the models list."""
_BASES = (V1_ROOT, ROOT, _OPENAI_ROOT)

API_KEY_HEADER = "api-key"
"""The header Azure OpenAI takes a key in (an Entra ID token goes as `authorization: Bearer`)."""
_AZURE_HOSTS = (".openai.azure.com", ".cognitiveservices.azure.com", ".services.ai.azure.com")
_ENTRA_TOKEN = re.compile(r"eyJ[\w-]*\.[\w-]+\.[\w-]*")
"""A Microsoft Entra ID access token: a JWT (three base64url parts, the first a JSON object's `{"`)."""

AZURE_SERVED = (
    "and for Azure OpenAI clients the same under /openai/v1, and with ?api-version= "
    "POST /openai/deployments/{name}/chat/completions (or below /v1), /openai/responses... and GET"
    " /openai/models"
)
"""What a 404 says sim serves of Azure OpenAI's paths."""


@dataclass(frozen=True, slots=True)
class AzurePath:
    """An Azure OpenAI path sim serves: the OpenAI path it stands for, and whether it needs `api-version`."""

    path: str
    """The OpenAI API's path (under `/v1`) that answers it."""
    versioned: bool
    """Whether Azure OpenAI answers it only with an `api-version` in its query."""


def served_as(path: str) -> AzurePath | None:
    """The OpenAI path the Azure OpenAI path `path` (decoded, without its query) stands for; None for a
    path that is not one of Azure's that sim serves."""
    if path.startswith(V1_ROOT + "/"):
        return AzurePath(_OPENAI_ROOT + path.removeprefix(V1_ROOT), versioned=False)
    deployment = _DEPLOYMENT.fullmatch(path)
    if deployment is not None:
        endpoint = deployment["endpoint"]
        return AzurePath(_OPENAI_ROOT + endpoint, True) if endpoint in _DEPLOYMENT_ENDPOINTS else None
    below = path.removeprefix(ROOT)
    if below != path and _VERSIONED.fullmatch(below):
        return AzurePath(_OPENAI_ROOT + below, versioned=True)
    return None


def unversioned(method: str, path: str) -> str:
    """Why an Azure OpenAI path without `api-version` is answered 404."""
    return f"{method} {path} needs ?{API_VERSION}= (Azure OpenAI answers 404 without it)"


_DATED = re.compile(r"\d{4}-\d{2}-\d{2}(?:-preview)?")
"""A dated `api-version` (`2024-10-21`, `2025-04-01-preview`): what Azure OpenAI's paths outside `/openai/v1/`
take, and its v1 API (which names `v1` and `preview`, none given being `v1`) answers 400 `API version not
supported`."""


def unsupported_version(path: str, query: str) -> dict[str, dict[str, str]] | None:
    """The body of Azure OpenAI's 400 to a path of its v1 API given a dated `api-version` (its own shape:
    `code` and `message` only); None for any other path or version."""
    if not path.startswith(V1_ROOT + "/"):
        return None
    given = parse_qs(query, keep_blank_values=True).get(API_VERSION, [])
    if not any(_DATED.fullmatch(value) for value in given):
        return None
    return {"error": {"code": "BadRequest", "message": "API version not supported"}}


def unversioned_error(method: str, path: str) -> dict[str, dict[str, str]]:
    """The body of Azure OpenAI's 404 to a path without `api-version`, in its own shape (`code` the status
    as text, no `type` or `param`): `Resource not found`, and here why."""
    return {"error": {"code": "404", "message": f"Resource not found: {unversioned(method, path)}"}}


def has_api_version(query: str) -> bool:
    """Whether a raw query string gives `api-version` a value."""
    return any(value for value in parse_qs(query, keep_blank_values=True).get(API_VERSION, []))


def below_base(path: str) -> str:
    """`path` below the base a client puts in its base URL, for OpenAI's (`/v1`) and Azure OpenAI's
    (`/openai/v1`, `/openai`, `/openai/deployments/{name}`) alike: `/chat/completions`, `/responses/{id}`;
    any other path as it is (trailing slashes dropped)."""
    trimmed = path.rstrip("/")
    deployment = _DEPLOYMENT.fullmatch(trimmed)
    if deployment is not None:
        return deployment["endpoint"]
    for base in _BASES:
        if trimmed.startswith(base + "/"):
            return trimmed.removeprefix(base)
    return trimmed


def azure_shaped(url: str) -> bool:
    """Whether a base URL is Azure OpenAI's: one of Azure's hosts, or a path under `/openai` (a gateway in
    front of it, such as API Management, or a simulator standing in for it)."""
    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    return (parts.hostname or "").endswith(_AZURE_HOSTS) or path == ROOT or path.startswith(ROOT + "/")


def key_headers(secret: str) -> dict[str, str]:
    """The header Azure OpenAI takes `secret` in beside the Bearer token: a key in `api-key`; none for an
    Entra ID token, which goes as the Bearer token alone (as `AzureOpenAI` sends each)."""
    return {} if _ENTRA_TOKEN.fullmatch(secret) else {API_KEY_HEADER: secret}


AZURE_API_KEY = "AZURE_OPENAI_API_KEY"
"""The variable an `AzureOpenAI()` client reads its key from."""
MODULE_CLIENT_TYPE = "OPENAI_API_TYPE"
"""The variable the Python SDK's module-level client (`openai.chat.completions.create(...)`) is told which
client to be by: without it, it refuses to guess when it finds OPENAI_API_KEY beside AZURE_OPENAI_API_KEY or
AZURE_OPENAI_ENDPOINT (`AmbiguousModuleClientUsageError`)."""


def module_client_type(environment: Mapping[str, str]) -> dict[str, str]:
    """`OPENAI_API_TYPE=openai` unless `environment` names a type: a program sim points at itself is given
    both OpenAI's and Azure OpenAI's variables, which would leave the module-level client refusing to start
    (either answers it: OPENAI_BASE_URL and AZURE_OPENAI_ENDPOINT are the same server)."""
    return {} if environment.get(MODULE_CLIENT_TYPE) else {MODULE_CLIENT_TYPE: "openai"}


def azure_environment(base_url: str) -> dict[str, str]:
    """Where an `AzureOpenAI()` client built from its environment finds the server whose OpenAI base URL is
    `base_url`: `AZURE_OPENAI_ENDPOINT`, the URL before its `/v1` or its `/openai...` (the client adds
    `/openai/...` itself): the origin, or a prefix the server routes by (`http://host/run-7`)."""
    parts = urlsplit(base_url)
    path = parts.path.rstrip("/") + "/"
    path = path[: path.index(ROOT + "/")] if ROOT + "/" in path else path.removesuffix(_OPENAI_ROOT + "/")
    path = path.rstrip("/")
    return {"AZURE_OPENAI_ENDPOINT": f"{parts.scheme}://{parts.netloc}{path}"}
