"""The edge to the outside: the two wire codecs (Chat Completions, Responses), the OpenAI SDK adapters,
settings."""
