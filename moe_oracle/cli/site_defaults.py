"""The site defaults file: a cluster's device, engine, software profile and advisory file, set once.

``$MOE_ORACLE_DEFAULTS`` names the file; without it ``$XDG_CONFIG_HOME/moe-oracle/defaults.toml``
(``~/.config/moe-oracle/defaults.toml``) is read when it exists. It holds up to four ``key = "value"`` lines
(a TOML subset; quotes optional, ``#`` comments)::

    device = "h200"                 # --device
    engine = "vllm"                 # --engine (select, plan, serve, compare)
    software = "vllm-0.33.0"        # --software
    advisories = "/etc/moe-oracle/advisories.json"   # --advisories (relative paths: from the file's folder)

Each is the default of the flag of the same name in every command that has it; a flag on the command line
wins. A bad file is one line (exit 2) naming the file, the key, the value, the rule and the fix: an unknown key,
a value of the wrong type, a device or engine not in the catalogue, a missing advisory file. ``MOE_ORACLE_DEFAULTS=``
(empty) turns the file off.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from moe_oracle.errors import BadInputError

ENV = "MOE_ORACLE_DEFAULTS"
KEYS = ("device", "engine", "software", "advisories")
#: The commands whose flags the file sets (each takes only the keys it has a flag for).
COMMANDS = ("select", "plan", "serve", "compare", "matrix")


def defaults_path() -> Path | None:
    """The site defaults file in force, or None (``$MOE_ORACLE_DEFAULTS`` empty, or no file at the XDG place)."""
    named = os.environ.get(ENV)
    if named is not None:
        return Path(named).expanduser() if named.strip() else None
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join("~", ".config")
    path = Path(base).expanduser() / "moe-oracle" / "defaults.toml"
    return path if path.is_file() else None


def _bad(path: Path, what: str, fix: str) -> BadInputError:
    return BadInputError(f"site defaults file {path} ({ENV}): {what}", fix=fix)


_LINE = re.compile(r'^\s*([A-Za-z_][A-Za-z0-9_-]*)\s*=\s*(?:"([^"\\]*)"|([^"#\s][^#]*?))\s*(?:#.*)?$')


def _parse(path: Path, text: str) -> dict[str, Any]:
    """``key = "value"`` lines (the TOML subset the file uses; quotes optional), ``#`` comments, blank lines."""
    data: dict[str, Any] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _LINE.match(line)
        if match is None:
            raise _bad(
                path, f'line {number} is not key = "value": {line.strip()[:80]!r}', 'write lines like: device = "h200"'
            )
        key, quoted, bare = match.groups()
        if key in data:
            raise _bad(path, f"line {number}: {key} is set twice", "keep one line per key")
        data[key] = quoted if quoted is not None else bare
    return data


def load_defaults(path: Path) -> dict[str, str]:
    """The file's keys, checked (exit 2 with the file, key and value for any problem)."""
    from moe_oracle.jsonfile import path_problem
    from moe_oracle.rules import Engine
    from moe_oracle.spec.device import DEVICES

    problem = path_problem(path)
    if problem is not None or not path.is_file():
        raise _bad(path, problem or "is not a file", f"create it, or unset {ENV} (empty: no site defaults)")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise _bad(path, f"cannot be read ({exc.strerror})", "make it readable") from None
    if len(raw) > 64 * 1024:
        raise _bad(path, f"is {len(raw)} bytes (at most 65536)", "keep only the four keys")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _bad(path, "is not UTF-8 text", "write it as UTF-8") from None
    data = _parse(path, text)
    unknown = [k for k in data if k not in KEYS]
    if unknown:
        raise _bad(path, f"unknown key {unknown[0]!r}", f"use only {', '.join(KEYS)}")
    out: dict[str, str] = {}
    for key, value in data.items():
        if not isinstance(value, str) or not value.strip():
            raise _bad(path, f"{key} = {value!r} is not a non-empty string", f'e.g. {key} = "..."')
        out[key] = value.strip()
    device = out.get("device")
    if device is not None and device.lower() not in {*DEVICES, "local"}:
        raise _bad(path, f"device = {device!r} is not a known device", f"one of {', '.join(sorted(DEVICES))}, local")
    engine = out.get("engine")
    if engine is not None and engine not in {e.value for e in Engine}:
        raise _bad(path, f"engine = {engine!r} is not an engine", f"one of {', '.join(e.value for e in Engine)}")
    advisories = out.get("advisories")
    if advisories is not None:
        target = Path(advisories).expanduser()
        target = target if target.is_absolute() else path.parent / target
        if not target.is_file():
            raise _bad(path, f"advisories = {advisories!r}: no such file ({target})", "point it at an advisory file")
        out["advisories"] = str(target)
    return out


def default_map() -> dict[str, dict[str, str]]:
    """Click's ``default_map`` from the site defaults file (empty without one)."""
    path = defaults_path()
    if path is None:
        return {}
    values = load_defaults(path)
    return {command: dict(values) for command in COMMANDS}
