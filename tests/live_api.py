"""A stand-in for the live API on 127.0.0.1 (a real socket, the standard library's HTTP server), for tests of
code that must reach a model over the network: each POST is answered with the JSON body `answer` gives, and
its path (query included) and headers are noted."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

Asked = tuple[str, dict[str, str]]
"""A request's path (query included) and its headers, their names in lower case."""


@contextmanager
def live_api(answer: Callable[[], bytes]) -> Iterator[tuple[str, list[Asked]]]:
    """The stand-in, listening until the block ends: its origin (`http://127.0.0.1:PORT`) and the requests
    it was asked, in order."""
    seen: list[Asked] = []

    class Answer(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            seen.append((self.path, {name.lower(): value for name, value in self.headers.items()}))
            self.rfile.read(int(self.headers.get("content-length") or 0))
            body = answer()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            """Quiet."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
