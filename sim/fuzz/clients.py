"""The SDK clients a fuzzed target is given: the official `OpenAI` and `AsyncOpenAI`, retrying what the SDK
retries as often as it does, with its backoff between retries a hundredth as long, so that a drawn dropped
connection costs a campaign milliseconds where live it costs the program half a second or more."""

from __future__ import annotations

from typing import Any

import openai

BACKOFF_SCALE = 0.01
"""How much of the SDK's own wait between retries a fuzzed client waits (a server's `retry-after` too)."""


class QuickOpenAI(openai.OpenAI):
    """`openai.OpenAI`, waiting `BACKOFF_SCALE` of the SDK's backoff between retries."""

    def _calculate_retry_timeout(self, *args: Any, **kwargs: Any) -> float:
        return float(super()._calculate_retry_timeout(*args, **kwargs)) * BACKOFF_SCALE


class QuickAsyncOpenAI(openai.AsyncOpenAI):
    """`openai.AsyncOpenAI`, waiting `BACKOFF_SCALE` of the SDK's backoff between retries."""

    def _calculate_retry_timeout(self, *args: Any, **kwargs: Any) -> float:
        return float(super()._calculate_retry_timeout(*args, **kwargs)) * BACKOFF_SCALE
