"""Text for pasting into a POSIX shell: every word single-quoted where it needs it.

Every command moe-oracle prints for a person to paste (a plan's commands, ``serve``'s ``would exec`` and
``exec:`` lines, the matrix's reproduce lines) goes through :func:`shell_join`, so that no value (a model
directory named ``m$(touch X)``, an ``--all2all-backend '${HOME}'``, a newline, a quote) can run anything
or change the argv when pasted: ``shlex.split`` of the printed text gives back exactly the argv.

The one exception is a placeholder moe-oracle emits itself (``${HEAD_NODE_IP}``, ``${REPLICA1_HEAD_IP}``: an
address the operator fills in), and only in the argv words the plan marks as carrying one: there the
``${NAME}`` stays expandable, in double quotes, and the rest of the word is single-quoted as usual.

A word with a control or bidirectional character (ESC, BEL, U+202E, ...) is ANSI-C quoted (``$'\x1b'``, bash, zsh,
ksh): printed raw, it would act on the terminal instead of being shown (:mod:`moe_oracle.terminal_text`).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable

from moe_oracle.terminal_text import UNSAFE, ansi_c_quote

#: A placeholder moe-oracle emits: ``${`` + upper-case shell name + ``}``.
PLACEHOLDER = re.compile(r"\$\{([A-Z][A-Z0-9_]*)\}")

#: An environment variable name a POSIX shell accepts in ``NAME=value`` (the prefix of a printed command).
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def shell_quote(word: str, *, placeholders: bool = False) -> str:
    """``word`` as one shell word that expands to exactly ``word``.

    With ``placeholders=True`` (only for a word moe-oracle marked as holding its own placeholder) each
    ``${NAME}`` stays expandable as ``"${NAME}"``; every other character is quoted.
    """
    if not placeholders or not PLACEHOLDER.search(word):
        return _quote(word)
    parts: list[str] = []
    pos = 0
    for match in PLACEHOLDER.finditer(word):
        if match.start() > pos:
            parts.append(_quote(word[pos : match.start()]))
        parts.append(f'"{match.group(0)}"')
        pos = match.end()
    if pos < len(word):
        parts.append(_quote(word[pos:]))
    return "".join(parts)


def _quote(text: str) -> str:
    """Single quotes, or ANSI-C quoting for a control or bidi character (nothing raw reaches a terminal)."""
    return ansi_c_quote(text) if UNSAFE.search(text) else shlex.quote(text)


def shell_join(words: Iterable[str], *, placeholder_words: Iterable[int] = ()) -> str:
    """The words joined with spaces, each :func:`shell_quote`-d (those at ``placeholder_words`` keep their
    placeholders expandable)."""
    marked = set(placeholder_words)
    return " ".join(shell_quote(w, placeholders=i in marked) for i, w in enumerate(words))


def shell_assign(name: str, value: str) -> str:
    """``NAME=value`` for a command's environment prefix; ``name`` must be a shell variable name."""
    if not ENV_NAME.fullmatch(name):
        raise ValueError(f"{name!r} is not a shell variable name")
    return f"{name}={_quote(value)}"


__all__ = ["ENV_NAME", "PLACEHOLDER", "shell_assign", "shell_join", "shell_quote"]
