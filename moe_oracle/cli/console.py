"""The rich console every command prints to: as wide as the terminal, no highlighting, no soft wrap."""

from __future__ import annotations

from typing import Any


def console() -> Any:
    """A rich console as wide as the terminal (see :func:`output_width`), closing quietly under ``| head``."""
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:  # rich's own handler exits with 1
            raise BrokenPipeError

    return _Console(width=output_width(), highlight=False, soft_wrap=False)


def output_width(default: int = 120) -> int:
    """``COLUMNS`` when set, else the terminal's width when stdout is a terminal, else ``default``
    (a pipe or file has no width; 120 keeps documented outputs stable). At least 60."""
    import os
    import shutil
    import sys

    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return max(60, int(columns))
    try:
        if sys.stdout.isatty():
            return max(60, shutil.get_terminal_size((default, 24)).columns)
    except (AttributeError, ValueError, OSError):
        pass
    return default
