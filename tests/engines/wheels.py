"""Locate the engine wheels the static checks read (``pip download vllm==0.33.0 --no-deps``)."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import pytest

SEARCH = (
    os.environ.get("MOE_ORACLE_WHEELS", ""),
    str(Path.home() / ".cache" / "moe-oracle" / "wheels"),
    "/tmp/wheels",
)


def find_wheel(dist: str, version: str) -> Path | None:
    for folder in SEARCH:
        if folder and Path(folder).is_dir():
            hits = sorted(Path(folder).glob(f"{dist}-{version}-*.whl"))
            if hits:
                return hits[0]
    return None


class Wheel:
    """Read text files straight out of a wheel (no extraction, no import)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.zip = zipfile.ZipFile(path)
        self.names = set(self.zip.namelist())

    def text(self, name: str) -> str:
        return self.zip.read(name).decode("utf-8")

    def glob(self, prefix: str, suffix: str = ".py") -> list[str]:
        return sorted(n for n in self.names if n.startswith(prefix) and n.endswith(suffix))


def wheel_or_skip(dist: str, version: str) -> Wheel:
    path = find_wheel(dist, version)
    if path is None:
        pytest.skip(
            f"{dist}=={version} wheel not found in {[s for s in SEARCH if s]} "
            f"(pip download {dist}=={version} --no-deps -d ~/.cache/moe-oracle/wheels)"
        )
    return Wheel(path)
