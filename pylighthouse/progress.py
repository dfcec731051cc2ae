"""Progress for long command-line runs: one line on stderr, only on a terminal.

A phase that ends within ``delay`` seconds (one by default) prints nothing; a
longer one shows what it is doing and for how long, rewritten in place once
a second, and erased when done. Nothing is printed when stderr is not a
terminal (piped, redirected, under a test), so logs and pipes stay clean.
"""
import sys
import threading
import time
from contextlib import contextmanager
from typing import IO, Iterator, Optional

__all__ = ["Progress"]


class Progress:
    """Report phases of a run on ``stream`` (default: ``sys.stderr``).

    ``enabled`` defaults to whether the stream is a terminal. Phases are
    reported from a background thread; the caller's work is not slowed
    beyond a thread start per phase.
    """

    def __init__(self, stream: Optional[IO[str]] = None, *, enabled: Optional[bool] = None,
                 delay: float = 1.0, interval: float = 1.0):
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            isatty = getattr(self.stream, "isatty", None)
            try:
                enabled = bool(isatty and isatty())
            except (OSError, ValueError):
                enabled = False
        self.enabled = enabled
        self.delay = delay
        self.interval = interval

    @contextmanager
    def phase(self, text: str) -> Iterator[None]:
        """Show ``text`` and the time spent so far while the block runs."""
        if not self.enabled:
            yield
            return
        done = threading.Event()
        shown = []
        started = time.monotonic()

        def report() -> None:
            if done.wait(self.delay):
                return
            while True:
                line = f"pylighthouse: {text}... {time.monotonic() - started:.0f} s"
                self._write("\r" + line)
                shown.append(len(line))
                if done.wait(self.interval):
                    return

        thread = threading.Thread(target=report, daemon=True)
        thread.start()
        try:
            yield
        finally:
            done.set()
            thread.join()
            if shown:
                self._write("\r" + " " * max(shown) + "\r")

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):
            self.enabled = False  # a closed terminal: stop reporting, not the run
