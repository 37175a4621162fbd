"""A count said in words (`1 turn`, `2 turns`), with nothing else loaded: the command line says counts
before it loads the messages."""

from __future__ import annotations


def counted(count: int, noun: str, plural: str = "") -> str:
    """`1 turn`, `2 turns`: the count and its noun, plural unless it is one (`plural` where an s is not
    how: `counted(2, "reply", "replies")`)."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


def turns(count: int) -> str:
    """`1 turn`, `2 turns`."""
    return counted(count, "turn")
