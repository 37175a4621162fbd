"""A hang turned into a failure: a test that would otherwise never end says where it was stuck."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator


@contextlib.contextmanager
def within(seconds: int, what: str) -> Iterator[None]:
    """Raises `TimeoutError` naming `what` if the block runs past `seconds` (SIGALRM, so the main thread
    only; Python's own regex engine looks for signals while it backtracks, so the alarm stops it too), and
    again each second after: code that takes it for an `OSError` it may swallow (a blocked `open` of a
    FIFO is interrupted with it) and blocks again is interrupted again."""

    def hung(signum: int, frame: object) -> None:
        raise TimeoutError(f"{what}: still running after {seconds} s")

    before = signal.signal(signal.SIGALRM, hung)
    signal.setitimer(signal.ITIMER_REAL, seconds, 1)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)
