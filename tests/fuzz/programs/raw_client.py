"""A program with no SDK (as one in any language would be): it reads OPENAI_BASE_URL and OPENAI_API_KEY,
sends one Chat Completions request with the standard library, then does what its mode says:

- `answers`: exits 0;
- `noisy-crash`: writes a marker to standard output, then 10 MB and terminal escape sequences to standard
  error, and exits 1;
- `exits-3`: exits 3 (the exit code it documents for "the model gave up");
- `segfaults`: kills itself with SIGSEGV;
- `hangs PIDFILE`: starts a child, writes both process ids to PIDFILE, and sleeps forever;
- `escapes PIDFILE`: starts a child in a session of its own that writes to standard error without end,
  writes its process id to PIDFILE, and exits 1 half a second later;
- `tells-environment FILE`: writes the `OPENAI_` and `AZURE_` variables it was given to FILE (JSON), exits 0;
- `never-calls`: exits 0 without a request; `fails-at-once`: exits 1 without one.

An error answer (or none) ends it with exit code 1 and a line on standard error, as a careful program does.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request

MARKER = "PROGRAM-STDOUT-MARKER"
"""What `noisy-crash` writes to standard output: it must never reach sim's own output."""
ESCAPES = "\x1b]0;pwned\x07\x1b[2J\x1b[31mred\r\x1b[1A"
"""Terminal escape sequences (a window title, clear screen, colour, cursor up) `noisy-crash` writes."""


def ask() -> bool:
    """One request; whether it was answered with a completion."""
    body = {"model": "m", "messages": [{"role": "user", "content": "Say hello."}]}
    request = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"] + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={
            "Authorization": f"Bearer {os.environ['OPENAI_API_KEY']}",
            "Content-Type": "application/json",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            json.loads(response.read())
    except Exception as error:  # an error answer, a body that is not JSON, a dropped connection
        print(f"the request failed: {type(error).__name__}", file=sys.stderr)
        return False
    return True


def main(mode: str, *arguments: str) -> int:
    if mode == "never-calls":
        return 0
    if mode == "fails-at-once":
        print("error: no configuration file", file=sys.stderr)
        return 1
    if not ask():
        return 1
    if mode == "noisy-crash":
        print(MARKER, flush=True)
        line = "x" * 1023 + "\n"
        sys.stderr.write(line * 10_240)  # 10 MB
        sys.stderr.write(f"{ESCAPES}\nfatal: the end{ESCAPES}\n")
        return 1
    if mode == "exits-3":
        return 3
    if mode == "segfaults":
        os.kill(os.getpid(), signal.SIGSEGV)
    if mode == "tells-environment":
        told = {name: value for name, value in os.environ.items() if name.startswith(("OPENAI_", "AZURE_"))}
        with open(arguments[0], "w") as file:
            json.dump(told, file)
    if mode == "escapes":
        writes = "import sys\nwhile True: sys.stderr.write('escaped ' * 1000)"
        child = subprocess.Popen([sys.executable, "-c", writes], start_new_session=True)
        with open(arguments[0], "a") as pids:
            pids.write(f"{child.pid}\n")
        time.sleep(0.5)  # the child is writing by now
        return 1
    if mode == "hangs":
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        with open(arguments[0], "a") as pids:
            pids.write(f"{os.getpid()} {child.pid}\n")
        time.sleep(600)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
