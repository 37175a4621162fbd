"""Built-in tools."""
