"""The HTTP side of sim, written once: an ASGI app over any answerer (`sim.host.app`), an in-process httpx
transport over it (`sim.host.transport`), and serving it on a port (`sim.host.serve`). What an answerer is
and may answer is in `sim.host.answers`. Importing this package loads nothing: import the module you use."""
