"""Characters that must not reach a terminal raw: C0 controls (ESC, BEL, CR, ...) but newline and tab, DEL, the C1
controls and the bidirectional overrides (U+202E, ...). A model directory named with them would otherwise move the
cursor, ring, recolour or reorder what the operator reads, so that what is shown differs from what is there.

:func:`escape_for_terminal` shows each as a Python-style escape (``\\x1b``, ``\\u202e``); the CLI's standard
streams apply it when they are terminals (:mod:`moe_oracle.cli.streams`). A command printed for pasting spells such
a character with ANSI-C quoting (``$'\\x1b'``, :func:`moe_oracle.shell.shell_quote`), so that it stays correct when
pasted and has nothing left to escape.
"""

from __future__ import annotations

import re

#: Every character escaped on a terminal (see the module).
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_for_terminal(text: str) -> str:
    """``text`` with every :data:`UNSAFE` character written as its escape (newlines and tabs kept)."""
    return UNSAFE.sub(_escape, text)


def ansi_c_quote(word: str) -> str:
    """``word`` as one ANSI-C quoted shell word (``$'...'``: bash, zsh, ksh, busybox sh) with the unsafe characters
    as escapes, so that it prints without them and pastes back to exactly ``word``."""
    body = word.replace("\\", "\\\\").replace("'", "\\'")
    return (
        "$'" + UNSAFE.sub(lambda m: _escape(m) if ord(m.group(0)) < 0x80 else f"\\u{ord(m.group(0)):04x}", body) + "'"
    )


def wrap_line(line: str, width: int) -> list[str]:
    """``line`` wrapped at spaces to ``width`` columns, its indent kept and two more on the lines it wraps to
    (``- `` items and ``  [CODE]`` reasons alike); no word is cut, so a path or identifier longer than the width
    stays whole on its own line."""
    import textwrap

    if len(line) <= width:
        return [line]
    indent = len(line) - len(line.lstrip(" "))
    lead = " " * indent
    return textwrap.wrap(
        line[indent:],
        width=width,
        initial_indent=lead,
        subsequent_indent=lead + "  ",
        break_long_words=False,
        break_on_hyphens=False,
    ) or [line]
