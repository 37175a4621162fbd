"""Where a stream of either API holds a piece of text, so that a reader can join the pieces (the scrubber
looks for secrets split across chunks)."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

StreamText = tuple[Hashable, dict[str, Any], str]
"""Where one event holds a piece of streamed text: which text it belongs to, the object, and its key."""
