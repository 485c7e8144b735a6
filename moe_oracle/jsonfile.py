"""The one hardened reader of untrusted JSON files: configs, records, advisories, manual descriptions.

:func:`read_json_object` opens only regular files (a FIFO is opened non-blocking and refused, a
link to ``/dev/zero`` is refused by ``fstat`` before a byte is read), bounds the size before
reading, and reports a broken symbolic link or a name too long for the file system as such.
:func:`parse_json_object` parses strictly: UTF-8 (optional BOM), one JSON object at the top,
no ``NaN`` / ``Infinity`` literals, no number that overflows to infinity, integers bounded
(:data:`MAX_INT_DIGITS`), nesting bounded (:data:`MAX_DEPTH`), duplicate keys refused. Every
failure is one line of the caller's error class (an exit-2 :class:`BadInputError` by default).
"""

from __future__ import annotations

import codecs
import errno
import json
import math
import os
import stat
from pathlib import Path
from typing import Any

from moe_oracle.errors import BadInputError

#: Largest file read; a real ``config.json`` is a few kB (GLM-5-FP8's is 36 kB), a record ~100 kB.
MAX_JSON_BYTES = 16 * 1024 * 1024
#: Deepest nesting of arrays and objects accepted (real configs and records stay below 10).
MAX_DEPTH = 64
#: Most digits of an integer literal (a signed 64-bit value has at most 19).
MAX_INT_DIGITS = 19


class _Refused(ValueError):
    """Raised inside the JSON hooks; becomes the caller's one-line error."""


def _reject_constant(name: str) -> Any:
    raise _Refused(f"contains the literal {name}, which is not valid JSON (NaN and Infinity are not allowed)")


def _parse_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        raise _Refused(f"contains an integer with {digits} digits (at most {MAX_INT_DIGITS} are accepted)")
    return int(text)


def _parse_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        shown = text if len(text) <= 24 else text[:21] + "..."
        raise _Refused(f"contains the number {shown}, which overflows to infinity")
    return value


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            shown = key if len(key) <= 40 else key[:37] + "..."
            raise _Refused(f"has the key {shown!r} twice in one object (duplicate keys are ambiguous)")
        out[key] = value
    return out


def _depth(value: Any) -> int:
    """Nesting depth of a parsed JSON value (iterative: no recursion on hostile input)."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        if deepest > MAX_DEPTH:
            return deepest
        stack.extend((child, level + 1) for child in children)
    return deepest


def _text_depth(text: str) -> int:
    """The deepest nesting of ``[``/``{`` in JSON ``text`` (strings skipped), found before parsing, so that a
    hostile document is refused without the parser recursing into it (stops counting past :data:`MAX_DEPTH`)."""
    level = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            level += 1
            if level > deepest:
                deepest = level
                if deepest > MAX_DEPTH:
                    return deepest
        elif ch in "]}":
            level -= 1
    return deepest


#: Largest JSON value read from one environment variable (the plug-ins' pins and shipped plans are < 8 kB).
MAX_ENV_JSON_BYTES = 256 * 1024


def parse_json_env(name: str, raw: str, *, fix: str, error: type[BadInputError] = BadInputError) -> dict:
    """The JSON object in environment variable ``name`` (value ``raw``), parsed as strictly as a file (no NaN, no
    duplicate keys, bounded integers) and bounded in size (:data:`MAX_ENV_JSON_BYTES`) and depth (:data:`MAX_DEPTH`):
    one line of ``error`` naming the variable, a bounded excerpt of its value, the rule and ``fix`` otherwise."""
    from moe_oracle.errors import excerpt

    data = raw.encode("utf-8", "surrogateescape")
    where = f"{name}={excerpt(raw, 40)}"
    if len(data) > MAX_ENV_JSON_BYTES:
        raise error(f"{where} is {len(data)} bytes, over the {MAX_ENV_JSON_BYTES}-byte limit for one variable", fix=fix)
    return parse_json_object(data, where=where, error=error, fix=fix)


def parse_json_object(
    data: bytes, *, where: str, error: type[BadInputError] = BadInputError, fix: str | None = None
) -> dict:
    """One strictly parsed JSON object from ``data``; ``where`` names the source in errors."""
    if len(data) > MAX_JSON_BYTES:
        raise error(f"{where} is {len(data)} bytes, over the {MAX_JSON_BYTES}-byte limit", fix=fix)
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(
            f"{where} is not UTF-8 text (invalid byte 0x{data[exc.start]:02x} at offset {exc.start})",
            fix="save it as UTF-8 JSON",
        ) from None
    if not text.strip():
        raise error(f"{where} is empty; expected a JSON object", fix=fix)
    if _text_depth(text) > MAX_DEPTH:
        raise error(f"{where} is nested too deeply (more than {MAX_DEPTH} levels of arrays and objects)", fix=fix)
    try:
        value = json.loads(
            text,
            parse_constant=_reject_constant,
            parse_int=_parse_int,
            parse_float=_parse_float,
            object_pairs_hook=_no_duplicates,
        )
    except _Refused as exc:
        raise error(f"{where} {exc}", fix=fix or "correct the file") from None
    except json.JSONDecodeError as exc:
        ended = exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated string")
        truncated = " (the file looks truncated)" if ended else ""
        raise error(
            f"{where} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno}){truncated}",
            fix="re-download or repair the file",
        ) from None
    except RecursionError:
        raise error(
            f"{where} is nested too deeply (more than {MAX_DEPTH} levels of arrays and objects)", fix=fix
        ) from None
    except ValueError as exc:
        raise error(f"{where} is not a usable JSON document: {' '.join(str(exc).split())}", fix=fix) from None
    if not isinstance(value, dict):
        kind = "an array" if isinstance(value, list) else f"a {type(value).__name__} value"
        raise error(f"{where} holds {kind} at the top level; expected a JSON object", fix=fix)
    if _depth(value) > MAX_DEPTH:
        raise error(f"{where} is nested too deeply (more than {MAX_DEPTH} levels of arrays and objects)", fix=fix)
    return value


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def path_problem(path: Path) -> str | None:
    """Why ``path`` cannot name a readable file (name too long, broken link, missing), or None."""
    try:
        os.lstat(path)
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            return "has a name too long for the file system"
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            return "does not exist"
        return f"cannot be read: {exc.strerror or exc}"
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ELOOP):
            try:
                target = os.readlink(path)
            except OSError:
                target = "?"
            return f"is a broken symbolic link (to {target})"
        return f"cannot be read: {exc.strerror or exc}"
    return None


def exists_or_dangling(path: Path) -> bool:
    """True when ``path`` exists or is a symbolic link (broken or not): then it must be read, not skipped."""
    try:
        os.lstat(path)
    except OSError as exc:
        return exc.errno not in (errno.ENOENT, errno.ENOTDIR)
    return True


def read_json_object(
    path: str | Path,
    *,
    what: str = "",
    error: type[BadInputError] = BadInputError,
    fix: str | None = None,
) -> dict:
    """Read one bounded, strictly parsed JSON object from a regular file at ``path``.

    ``what`` (e.g. ``"decision record"``) prefixes the path in messages. The file is opened
    non-blocking and checked with ``fstat`` before reading, so a FIFO or a device is refused
    without blocking or reading from it.
    """
    p = Path(path)
    where = f"{what} {p}".strip()
    problem = path_problem(p)
    if problem is not None:
        raise error(f"{where} {problem}", fix=fix)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(p, flags)
    except OSError as exc:
        raise error(f"cannot read {where}: {exc.strerror or exc}", fix=fix) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise error(f"{where} is {_kind(info.st_mode)}, not a regular file", fix=fix or "pass a JSON file")
        if info.st_size > MAX_JSON_BYTES:
            raise error(f"{where} is {info.st_size} bytes, over the {MAX_JSON_BYTES}-byte limit", fix=fix)
        chunks = []
        left = MAX_JSON_BYTES + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as exc:
        raise error(f"cannot read {where}: {exc.strerror or exc}", fix=fix) from None
    finally:
        os.close(fd)
    return parse_json_object(b"".join(chunks), where=where, error=error, fix=fix)
