"""Compact layer lists for messages (``0-2,5,7-9``)."""

from __future__ import annotations


def layer_span(layers: tuple[int, ...] | list[int]) -> str:
    """Compact layer list for messages: ``0-2,5,7-9``."""
    parts: list[str] = []
    start = prev = None
    for layer in sorted(layers):
        if start is None or prev is None:
            start = prev = layer
        elif layer == prev + 1:
            prev = layer
        else:
            parts.append(f"{start}" if start == prev else f"{start}-{prev}")
            start = prev = layer
    if start is not None:
        parts.append(f"{start}" if start == prev else f"{start}-{prev}")
    return ",".join(parts)
