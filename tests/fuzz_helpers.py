"""Mutations of real JSON documents shared by the fuzz tests (configs, decision records)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from hypothesis import strategies as st


def json_paths(value: Any, list_items: int, prefix: tuple = ()) -> Iterator[tuple]:
    """Every path into nested dicts/lists (the root excluded), the first ``list_items`` of each list."""
    if isinstance(value, dict):
        for key, child in value.items():
            yield (*prefix, key)
            yield from json_paths(child, list_items, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value[:list_items]):
            yield (*prefix, index)
            yield from json_paths(child, list_items, (*prefix, index))


def mutate(draw: Any, doc: Any, paths: list[tuple], *, scale: Any, values: Any) -> None:
    """1-3 mutations of ``doc`` in place at drawn paths: delete, null, scale a number by ``scale``, or replace
    by ``values``; a path an earlier mutation removed is skipped."""
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(paths))
        parent = doc
        try:
            for key in path[:-1]:
                parent = parent[key]
            current = parent[path[-1]]
        except (KeyError, IndexError, TypeError):
            continue
        op = draw(st.sampled_from(["delete", "replace", "scale", "null"]))
        if op == "delete":
            del parent[path[-1]]
        elif op == "null":
            parent[path[-1]] = None
        elif op == "scale" and isinstance(current, (int, float)) and not isinstance(current, bool):
            parent[path[-1]] = current * draw(scale)
        else:
            parent[path[-1]] = draw(values)
