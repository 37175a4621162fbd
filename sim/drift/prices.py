"""What a drift run cost: tokens priced by model, from a small table of list prices (US dollars per million
tokens, input and output) that a user's own table (`--prices FILE`, YAML or JSON) extends or overrides."""

from __future__ import annotations

from collections.abc import Mapping

from sim.core.model import Usage

PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-5": (1.25, 10.00),
    "gpt-5-mini": (0.25, 2.00),
    "gpt-5-nano": (0.05, 0.40),
}
"""List prices as published when this table was written; check yours and pass `--prices` where they differ."""


def price_of(model: str | None, prices: Mapping[str, tuple[float, float]]) -> tuple[float, float] | None:
    """The price of `model`: its own entry, or that of the longest name it starts with (a dated snapshot
    such as `gpt-4o-2024-08-06` costs what `gpt-4o` does); None when the table has none."""
    if model is None:
        return None
    if model in prices:
        return prices[model]
    names = [name for name in prices if model.startswith(name + "-")]
    return prices[max(names, key=len)] if names else None


def cost(usage: Usage, model: str | None, prices: Mapping[str, tuple[float, float]]) -> float | None:
    """What `usage` of `model` cost in dollars, or None when its price is not known."""
    price = price_of(model, prices)
    if price is None:
        return None
    return (usage.prompt_tokens * price[0] + usage.completion_tokens * price[1]) / 1_000_000
