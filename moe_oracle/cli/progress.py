"""A progress indicator on stderr for commands that can take more than a couple of seconds.

Shown only when stderr is a terminal (never in pipes, files, CI logs or ``--json`` consumers), and
only once the work has run for :data:`DELAY_S`: quick runs print nothing. The line is erased when
the work ends, so the command's own output is unchanged.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

DELAY_S = 1.0
FRAMES = "|/-\\"


class Progress:
    """What the indicator shows; ``update`` changes the text from inside the block (``variant 3/8: ...``)."""

    def __init__(self, label: str) -> None:
        self.label = label

    def update(self, label: str) -> None:
        self.label = label


@contextmanager
def progress(label: str, stream: TextIO | Any | None = None, *, delay: float = DELAY_S) -> Iterator[Progress]:
    """``with progress("accuracy: 5 variants") as shown:`` shows ``| accuracy: 5 variants (3 s)`` until the
    block ends; ``shown.update(...)`` changes the text."""
    out = sys.stderr if stream is None else stream
    state = Progress(label)
    try:
        tty = bool(out.isatty())
    except (AttributeError, ValueError, OSError):
        tty = False
    if not tty:
        yield state
        return
    write_control = getattr(out, "write_control", out.write)  # streams.TerminalText: not escaped
    done = threading.Event()
    shown = threading.Event()
    start = time.monotonic()

    def spin() -> None:
        if done.wait(delay):
            return
        frame = 0
        while not done.is_set():
            try:
                write_control("\r\x1b[K")  # moe-oracle's own erase; the label (a model name) is escaped
                out.write(f"{FRAMES[frame % len(FRAMES)]} {state.label} ({time.monotonic() - start:.0f} s)")
                out.flush()
            except (OSError, ValueError):
                return
            shown.set()
            frame += 1
            done.wait(0.2)

    thread = threading.Thread(target=spin, name="moe-oracle-progress", daemon=True)
    thread.start()
    try:
        yield state
    finally:
        done.set()
        thread.join(timeout=1.0)
        if shown.is_set():
            try:
                write_control("\r\x1b[K")
                out.flush()
            except (OSError, ValueError):
                pass
