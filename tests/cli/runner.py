"""Run the real CLI in a subprocess, as a user would."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass


@dataclass
class Result:
    code: int
    out: str
    err: str


def cli(*args: str, env: dict[str, str] | None = None, importtime: bool = False) -> Result:
    cmd = [sys.executable]
    if importtime:
        cmd += ["-X", "importtime"]
    cmd += ["-m", "moe_oracle", *args]
    full_env = {k: v for k, v in os.environ.items() if k not in ("MORI_SHMEM_HEAP_SIZE", "MOE_ORACLE_DEBUG")}
    full_env.update(env or {})
    p = subprocess.run(cmd, capture_output=True, text=True, env=full_env, timeout=120)
    return Result(p.returncode, p.stdout, p.stderr)


def imported_modules(importtime_stderr: str) -> set[str]:
    mods = set()
    for line in importtime_stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            if name and name != "imported package":
                mods.add(name)
    return mods
