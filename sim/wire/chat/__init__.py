"""Chat Completions (`POST /v1/chat/completions`), everything about it, one module per idea: `client.py`
(requests encoded incrementally, replies and streams decoded and checked: what the SDK adapters use);
`reading.py` (request bodies read back into core messages and tools, as the API checks them);
`protocol.py` (the server side, `ChatProtocol`: a request parsed once or refused, a reply written as JSON or
chunks); `growing.py` (for a client in process, a growing conversation's requests parsed for what each adds,
`GrowingConversation`, and what it wrote taken as it would be read back); `recorded.py` (recorded bodies read
for generic code, the stream's text pieces, and drift's carry-forward). Here: the API's paths and where its
conversation sits, which `sim.wire.registry.CODECS` names with the rest of its one `Codec`."""

ENDPOINT = "/chat/completions"
"""The path a client posts to, after the base URL."""
PATHS: tuple[str, ...] = ("/v1/chat/completions", ENDPOINT)
"""The paths a server answers."""
CONVERSATION = "messages"
"""The key of a request body's conversation list."""
