"""Standard output and error as the operator set them up: full, closed, read-only or not UTF-8.

:func:`prepare_streams` runs before any command: a closed descriptor (``>&-``, ``2>&-``) is re-opened on
``/dev/null`` (so that no file the command opens lands on descriptor 1 or 2, and no engine it starts
inherits one), and both streams escape what their encoding cannot hold (``PYTHONIOENCODING=ascii``, a lone
surrogate from a config) as ``\\uXXXX`` instead of raising. :func:`is_output_failure` tells a failed write
to a stream (``> /dev/full``, a read-only target) from the command's own errors, and
:func:`discard_pending_output` keeps the interpreter's final flush from failing again.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from typing import Any

#: System reasons a write to standard output fails with when its target is full, gone or read-only.
OUTPUT_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EBADF, errno.EROFS, errno.EPERM})


def _reopen_if_closed(fd: int) -> bool:
    """Open ``/dev/null`` on descriptor ``fd`` when it is closed; True when it was."""
    try:
        os.fstat(fd)
        return False
    except OSError:
        pass
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        if null != fd:
            os.dup2(null, fd)
            os.close(null)
    except OSError:
        pass
    return True


def prepare_streams() -> bool:
    """Make standard output and error safe to write; True when standard output was closed (``>&-``)."""
    closed_out = _reopen_if_closed(1)
    closed_err = _reopen_if_closed(2)
    if closed_out or sys.stdout is None:
        sys.stdout = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - lives as long as the process
    if closed_err or sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - lives as long as the process
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(ValueError, OSError):
                reconfigure(errors="backslashreplace")
    if _is_terminal(sys.stdout):
        sys.stdout = TerminalText(sys.stdout)
    if _is_terminal(sys.stderr):
        sys.stderr = TerminalText(sys.stderr)
    return closed_out


def _is_terminal(stream: Any) -> bool:
    try:
        return not isinstance(stream, TerminalText) and bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


class TerminalText:
    """A text stream on a terminal that writes control and bidirectional characters as escapes
    (:func:`moe_oracle.terminal_text.escape_for_terminal`); :meth:`write_control` is for moe-oracle's own
    sequences (the progress line's erase). Everything else is the wrapped stream's."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def write(self, text: str) -> int:
        from moe_oracle.terminal_text import escape_for_terminal

        return self._inner.write(escape_for_terminal(text))

    def write_control(self, text: str) -> int:
        return self._inner.write(text)

    @property
    def terminal_raw(self) -> Any:
        """The wrapped stream, for a writer that escapes its own text (the rich console)."""
        return self._inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def is_output_failure(exc: BaseException) -> bool:
    """Whether ``exc`` is a write to a full, closed or read-only standard stream (files the command writes
    go through :mod:`moe_oracle.output` and fail with their own message)."""
    return isinstance(exc, OSError) and not isinstance(exc, BrokenPipeError) and exc.errno in OUTPUT_ERRNOS


def discard_pending_output() -> None:
    """Point descriptor 1 at ``/dev/null`` so that the buffered output the failed target refused is not
    written again (and fails again) when the interpreter exits."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.close(null)
    except (OSError, ValueError):
        pass


def say(text: str, *, err: bool = True) -> bool:
    """Write one line to standard error (or output); False when the stream refused it."""
    stream = sys.stderr if err else sys.stdout
    try:
        stream.write(text + "\n")
        stream.flush()
        return True
    except (OSError, ValueError):
        return False


__all__ = ["OUTPUT_ERRNOS", "discard_pending_output", "is_output_failure", "prepare_streams", "say"]
