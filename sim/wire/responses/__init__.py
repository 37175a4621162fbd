"""The Responses API (`POST /v1/responses`), everything about it, one module per idea: `items.py` (its
reasoning, message and function call items to and from the core messages); `client.py` (requests encoded
incrementally, stateless or chained, and replies decoded, checked and assembled from streams: what the SDK
adapter uses); `reading.py` (request bodies read back into core messages and tools, as the API checks them);
`rendering.py` (a reply written as the `response` object and its events); `protocol.py` (the server side,
`ResponsesProtocol`: requests parsed, chained and checked once, replies kept for chains); `lifecycle.py`
(stored responses retrieved, deleted, cancelled, their input items and token counts, background mode);
`recorded.py` (recorded bodies read for generic code, the stream's text pieces, and drift's carry-forward).
Here: the API's paths and where its conversation sits, which `sim.wire.registry.CODECS` names with the rest
of its one `Codec`.

The system prompt is `instructions`; the history is `input` items (`message`, `function_call` with its
`call_id`, `function_call_output`, and `reasoning` items sent back as the model returned them); tools
are flat (`{type: function, name, description, parameters, strict}`).
"""

ENDPOINT = "/responses"
"""The path a client posts to, after the base URL."""
PATHS: tuple[str, ...] = ("/v1/responses", ENDPOINT)
"""The paths a server answers."""
CONVERSATION = "input"
"""The key of a request body's conversation list."""
