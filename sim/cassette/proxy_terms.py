"""The terms the recording proxy runs on, known without loading it (the command line builds its help from
these, and imports the proxy only when `sim proxy` runs)."""

from __future__ import annotations

UPSTREAM_TIMEOUT = 120.0
"""Seconds the proxy waits for the upstream between bytes (`--upstream-timeout`)."""
STOP_GRACE = 10.0
"""Seconds a stop (Ctrl-C, SIGTERM, the end of the command) gives the answers in flight to finish and be
recorded (`sim proxy --grace`); a second Ctrl-C stops at once."""
