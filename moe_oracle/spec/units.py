"""Byte-size strings as libraries read them (``MORI_SHMEM_HEAP_SIZE=40G``)."""

from __future__ import annotations

import re

#: ASCII digits only (at most 20 before the point): a size, not a number that overflows a float.
_SIZE = re.compile(r"^\s*([0-9]{1,20}(?:\.[0-9]{1,20})?)\s*([KMGT]?)(?:I?B)?\s*$", re.IGNORECASE)
_POWER = {"": 0, "K": 1, "M": 2, "G": 3, "T": 4}


def parse_size(text: str) -> int | None:
    """Bytes for ``"6G"``, ``"512M"``, ``"4294967296"`` (binary units); None if unreadable."""
    match = _SIZE.match(text)
    if not match:
        return None
    number, unit = match.groups()
    return int(float(number) * (1024 ** _POWER[unit.upper()]))


def format_size(num_bytes: int) -> str:
    """The shortest exact-or-rounded-up binary size string, e.g. ``8G`` or ``1536M``."""
    for unit, power in (("T", 4), ("G", 3), ("M", 2), ("K", 1)):
        step = 1024**power
        if num_bytes >= step:
            return f"{-(-num_bytes // step)}{unit}"
    return str(num_bytes)


def next_power_of_two(n: int) -> int:
    return 1 if n <= 1 else 1 << (n - 1).bit_length()
