"""The record modes a test's cassette is used in (`--sim-record`, `sim_vcr`), known without loading vcrpy:
the pytest plugin offers them at every pytest start."""

from __future__ import annotations

RECORD_MODES = ("none", "once", "new_episodes", "all")
"""vcrpy's record modes, as it means them: `none` replays only; `once` records a cassette that does not
exist yet and only replays one that does; `new_episodes` replays what is recorded and records what is
not; `all` records every request again. A cassette a recording mode writes holds exactly what the run
sent: what it did not use is dropped (a live id changes on every recording, so a request kept from an
earlier one would never be sent again, and the replay would fail, part of it unplayed)."""
