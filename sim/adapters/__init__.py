"""The edge to the outside: the Chat Completions wire format, the OpenAI SDK adapter, settings."""
