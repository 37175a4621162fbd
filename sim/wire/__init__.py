"""Each OpenAI API sim speaks, known in one module: Chat Completions (`sim.wire.chat`) and the Responses API
(`sim.wire.responses`), with what both share beside them."""
