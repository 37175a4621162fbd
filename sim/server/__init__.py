"""The OpenAI-compatible simulator: an ASGI app that answers Chat Completions from a scenario."""

from sim.server.simulator import Simulator

__all__ = ["Simulator"]
