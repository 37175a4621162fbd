"""The OpenAI-compatible simulator: a scenario's script served over HTTP (`scenario_host`)."""

from sim.server.simulator import scenario_host

__all__ = ["scenario_host"]
