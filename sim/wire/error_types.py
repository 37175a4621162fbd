"""The error `type` the API gives each HTTP status (and, where one status carries several, each `code`): the
one table every error sim answers with takes its `type` from, when nothing more exact was said.

Sources (docs/errors.md lists them): real recordings (400 `invalid_request_error`; 401 `invalid_request_error`
with code `invalid_api_key`), and live error bodies quoted in public bug reports (403 `request_forbidden` for
`unsupported_country_region_territory`, else `invalid_request_error` with `model_not_found`; 404
`invalid_request_error` `model_not_found`; 429 `requests` or `tokens` with `rate_limit_exceeded`, and
`insufficient_quota`; 500 and 503 `server_error`).
"""

from __future__ import annotations

INVALID_REQUEST = "invalid_request_error"
"""The type of every refusal of a request's content (400, 401, 403, 404, 409, 422 ...)."""

SERVER_ERROR = "server_error"
"""The type of the API's own failures (5xx)."""

RATE_LIMITED_REQUESTS = "requests"
"""A 429 for a budget of requests per minute (or day)."""

RATE_LIMITED_TOKENS = "tokens"
"""A 429 for a budget of tokens per minute (or day)."""

INSUFFICIENT_QUOTA = "insufficient_quota"
"""A 429 for a quota spent (its `code` says the same)."""

_BY_CODE: dict[str, str] = {
    "insufficient_quota": INSUFFICIENT_QUOTA,
    "unsupported_country_region_territory": "request_forbidden",
}
"""Codes whose type is not their status's: the code decides."""

RATE_LIMITED = 429


def error_type(status: int, code: str | None = None, message: str | None = None) -> str:
    """The `type` the API gives an error of `status` with `code`: a 429 says which budget was spent (its
    message names tokens per minute for `tokens`), a 5xx is `server_error`, anything else a refusal of the
    request (`invalid_request_error`)."""
    if code is not None and (by_code := _BY_CODE.get(code)) is not None:
        return by_code
    if status == RATE_LIMITED:
        said = (message or "").lower()
        return RATE_LIMITED_TOKENS if "tokens per" in said or "(tpm)" in said else RATE_LIMITED_REQUESTS
    if status >= 500:
        return SERVER_ERROR
    return INVALID_REQUEST
