"""The loop's model clients: the OpenAI SDK adapters, each over its API's wire module (`sim.wire`), chosen by
`connect_model`; `AnswererModel`, which asks an answerer directly; the settings of a live endpoint."""
