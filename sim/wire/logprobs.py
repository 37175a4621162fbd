"""Log probabilities of scripted text, for both APIs: the scripted model is certain of every token, so each
token (a piece of text as the simulator streams it) has `logprob: 0.0`."""

from __future__ import annotations

from typing import Any

PIECE_CHARS = 8
"""How many characters of text one streamed piece (one token of the scripted model) holds."""


def pieces(text: str, size: int = PIECE_CHARS) -> list[str]:
    """`text` as the pieces a stream sends it in (and the tokens its log probabilities list)."""
    return [text[start : start + size] for start in range(0, len(text), size)]


def token_logprob(token: str, top: int) -> dict[str, Any]:
    """One token's entry, with the token itself as its only likely alternative when `top` asks for any
    (no other token has any probability: the API writes such entries out only when they are likely)."""
    entry = {"token": token, "logprob": 0.0, "bytes": list(token.encode("utf-8"))}
    alternatives = [dict(entry)] if top > 0 else []
    return {**entry, "top_logprobs": alternatives}


def text_logprobs(text: str, top: int) -> list[dict[str, Any]]:
    """The entries for a whole text, a token a piece."""
    return [token_logprob(piece, top) for piece in pieces(text)]
