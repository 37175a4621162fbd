"""The API's rate limits as sim simulates them when asked (`--rate-limit requests=N/min,tokens=N/min`): a
bucket per limit that refills continuously over a minute, as the API's headers show it (a limit of 5000
requests resets one request in 12ms), the `x-ratelimit-*` headers it reports, and what a request past the
budget is told. Pure: the clock is injected."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "MAX_PER_MINUTE",
    "SIMULATED",
    "Limiter",
    "RateLimit",
    "RateLimitError",
    "Throttled",
    "duration",
]

MAX_PER_MINUTE = 10**12
"""The largest limit sim takes (more than any organization has; past it the arithmetic is not exact)."""

_MINUTE = 60.0
SIMULATED = "a limit simulated by sim --rate-limit"
"""What the 429's message says where the API names the organization."""
_VISIT = "Visit https://platform.openai.com/account/rate-limits to learn more."
_KINDS = ("requests", "tokens")


class RateLimitError(ValueError):
    """A `--rate-limit` (or a scenario's `rate_limit:`) that cannot be read; its text says why (one line)."""


@dataclass(frozen=True, slots=True)
class RateLimit:
    """Requests and tokens allowed per minute (None: not limited)."""

    requests: int | None = None
    tokens: int | None = None

    @classmethod
    def parse(cls, text: str) -> RateLimit:
        """`requests=N/min,tokens=N/min` (either or both) read, or a `RateLimitError` saying what is wrong."""
        said: dict[str, int] = {}
        for part in text.split(","):
            name, equals, value = part.strip().partition("=")
            name, value = name.strip(), value.strip()
            if not equals or name not in _KINDS:
                raise RateLimitError(
                    f"expected requests=N/min and/or tokens=N/min, separated by a comma, not {text!r}"
                )
            if name in said:
                raise RateLimitError(f"{name} is given twice in {text!r}")
            count, slash, unit = value.partition("/")
            count = count.strip().replace("_", "")
            if not slash or unit.strip() != "min" or not count.isascii() or not count.isdigit():
                raise RateLimitError(
                    f"{name} must be a whole number per minute (like {name}=60/min), not {value!r}"
                )
            number = int(count)
            if not 1 <= number <= MAX_PER_MINUTE:
                raise RateLimitError(f"{name} must be from 1 to {MAX_PER_MINUTE} per minute, not {number}")
            said[name] = number
        return cls(**said)

    def __str__(self) -> str:
        return ",".join(
            f"{kind}={limit}/min" for kind in _KINDS if (limit := getattr(self, kind)) is not None
        )


def duration(seconds: float) -> str:
    """A wait as the API writes it in `x-ratelimit-reset-*` and "Please try again in ...": Go's duration,
    to the millisecond (`0s`, `12ms`, `1.146s`, `20s`, `6m0s`, `1h0m0s`)."""
    millis = max(0, math.ceil(seconds * 1000 - 1e-6))
    if millis == 0:
        return "0s"
    if millis < 1000:
        return f"{millis}ms"
    hours, rest = divmod(millis, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    whole, fraction = divmod(rest, 1000)
    secs = f"{whole}.{fraction:03d}".rstrip("0").rstrip(".") + "s"
    if hours:
        return f"{hours}h{minutes}m{secs}"
    if minutes:
        return f"{minutes}m{secs}"
    return secs


@dataclass(frozen=True, slots=True)
class Throttled:
    """A request past the budget: which limit (`requests` or `tokens`), the limit, what is used, what the
    request asked, and how long until it would fit (None: it never fits, being larger than the limit)."""

    kind: str
    limit: int
    used: int
    requested: int
    wait: float | None

    def message(self, model: str | None) -> str:
        """The 429's message in the API's words; where the API names the organization, sim says the limit
        is its own simulation (it has no organization to name)."""
        who = f"{model or 'the model'} ({SIMULATED})"
        per = "requests per min (RPM)" if self.kind == "requests" else "tokens per min (TPM)"
        if self.wait is None:
            return (
                f"Request too large for {who} on {per}: Limit {self.limit}, Requested {self.requested}."
                f" The input or output tokens must be reduced in order to run successfully. {_VISIT}"
            )
        return (
            f"Rate limit reached for {who} on {per}: Limit {self.limit}, Used {self.used},"
            f" Requested {self.requested}. Please try again in {duration(self.wait)}. {_VISIT}"
        )

    def retry_headers(self) -> dict[str, str]:
        """`retry-after` (whole seconds) and `retry-after-ms`, the waits the SDKs honour (none for a request
        larger than the limit: waiting never makes it fit)."""
        if self.wait is None:
            return {}
        millis = max(1, math.ceil(self.wait * 1000))
        return {"retry-after": str(math.ceil(millis / 1000)), "retry-after-ms": str(millis)}


class _Bucket:
    """One limit: `limit` units, refilled continuously at `limit` per minute."""

    __slots__ = ("at", "available", "kind", "limit", "limit_header", "rate", "remaining_name", "reset_name")

    def __init__(self, kind: str, limit: int, now: float) -> None:
        self.kind = kind
        self.limit = limit
        self.rate = limit / _MINUTE
        self.available = float(limit)
        self.at = now
        self.limit_header = (b"x-ratelimit-limit-" + kind.encode(), str(limit).encode())
        self.remaining_name = b"x-ratelimit-remaining-" + kind.encode()
        self.reset_name = b"x-ratelimit-reset-" + kind.encode()

    def refill(self, now: float) -> None:
        if now > self.at:
            self.available = min(float(self.limit), self.available + (now - self.at) * self.rate)
            self.at = now

    def short_of(self, amount: int) -> Throttled | None:
        if amount <= self.available:
            return None
        used = self.limit - math.floor(self.available)
        wait = None if amount > self.limit else (amount - self.available) / self.rate
        return Throttled(self.kind, self.limit, used, amount, wait)

    @property
    def remaining(self) -> int:
        return max(0, math.floor(self.available))

    @property
    def reset(self) -> float:
        """Seconds until it is full again."""
        return (self.limit - self.available) / self.rate


class Limiter:
    """A `RateLimit` applied to the requests a host answers; safe to share between the tasks of one event
    loop (each call runs without awaiting, so a budget is never spent twice)."""

    def __init__(self, limit: RateLimit, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = limit
        self.clock = clock
        now = clock()
        self.requests = None if limit.requests is None else _Bucket("requests", limit.requests, now)
        self.tokens = None if limit.tokens is None else _Bucket("tokens", limit.tokens, now)
        self.buckets: dict[str, _Bucket] = {
            bucket.kind: bucket for bucket in (self.requests, self.tokens) if bucket is not None
        }

    def take(self, tokens: int) -> Throttled | None:
        """Spend one request and `tokens` tokens, or say which limit it is past, spending nothing (a request
        no wait would fit is told so first, else the requests' limit before the tokens')."""
        now = self.clock()
        requests, budget = self.requests, self.tokens
        tokens = max(0, tokens)
        by_requests = by_tokens = None
        if requests is not None:
            requests.refill(now)
            by_requests = requests.short_of(1)
        if budget is not None:
            budget.refill(now)
            by_tokens = budget.short_of(tokens)
        if by_tokens is not None and (by_tokens.wait is None or by_requests is None):
            return by_tokens
        if by_requests is not None:
            return by_requests
        if requests is not None:
            requests.available -= 1
        if budget is not None:
            budget.available -= tokens
        return None

    def headers(self) -> list[tuple[bytes, bytes]]:
        """The `x-ratelimit-*` headers as they stand (each limit set: its limit, what remains, and how long
        until it is full again)."""
        now = self.clock()
        buckets = self.buckets.values()
        for bucket in buckets:
            bucket.refill(now)
        return [
            *(bucket.limit_header for bucket in buckets),
            *((bucket.remaining_name, str(bucket.remaining).encode()) for bucket in buckets),
            *((bucket.reset_name, duration(bucket.reset).encode()) for bucket in buckets),
        ]
