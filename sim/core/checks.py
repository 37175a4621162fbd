"""Checks of constructor arguments; a failed check is a `ConfigurationError` naming the argument."""

from __future__ import annotations

from sim.core.errors import ConfigurationError


def require_positive_int(name: str, value: object) -> int:
    """`value` if it is an int >= 1 (not a bool), else a `ConfigurationError` saying so."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigurationError(f"{name} must be a positive integer")
    return value


def require_text(name: str, value: str) -> str:
    """`value` if it holds more than white space, else a `ConfigurationError` saying so."""
    if not value.strip():
        raise ConfigurationError(f"{name} must not be empty")
    return value
