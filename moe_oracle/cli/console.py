"""The rich console every command prints to (120 columns, no highlighting, no soft wrap)."""

from __future__ import annotations

from typing import Any


def console() -> Any:
    from rich.console import Console

    return Console(width=120, highlight=False, soft_wrap=False)
