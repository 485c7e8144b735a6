"""The command class and value types every ``moe-oracle`` subcommand is built with.

Two rules hold for every option of every command, by construction rather than one flag at a time:

* a value-taking option never swallows the next flag: ``--all2all-backend --dry-run`` is exit 2 (the
  value was forgotten), not an all2all backend named ``--dry-run`` and a dry run that starts the engine.
  A value that really begins with a dash is written attached: ``--all2all-backend=-x``;
* a float option takes finite numbers only: click's ``FloatRange`` lets ``nan`` through (every
  comparison with NaN is false), so ``--memory-fraction nan`` would reach the fit.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

import click

from moe_oracle.errors import BadInputError, excerpt

#: A word the engines' and click's parsers read as an option: ``--x``, ``--x=v``, ``-x``, ``-tp`` (not ``-1``,
#: ``-0.5`` or ``-``); ``--`` ends the options. One word with a space in it (``--vs '--engine vllm'``) is a value.
_FLAG_WORD = re.compile(r"--|--?[A-Za-z][^\s=]*(=.*)?", re.DOTALL)


def looks_like_flag(word: str) -> bool:
    """True when ``word`` reads as an option (or the ``--`` that ends them), not as a value (``-inf`` and
    ``-nan`` are numbers, for the number types to judge)."""
    if not _FLAG_WORD.fullmatch(word):
        return False
    try:
        float(word)
    except ValueError:
        return True
    return False


def _value_options(command: click.Command) -> dict[str, click.Option]:
    """Each spelling of ``command``'s value-taking options (not switches, not counters) -> the option."""
    out: dict[str, click.Option] = {}
    for param in command.params:
        if isinstance(param, click.Option) and not param.is_flag and not param.count:
            for name in param.opts:
                out[name] = param
    return out


def _own_options(command: click.Command) -> set[str]:
    """Every spelling of every option of ``command`` (switches and their ``--no-`` forms included)."""
    return {name for p in command.params if isinstance(p, click.Option) for name in (*p.opts, *p.secondary_opts)}


def refuse_flag_as_value(command: click.Command, args: Sequence[str]) -> None:
    """Exit 2 when a value-taking option of ``command`` is followed by a flag instead of its value.

    An option whose values are flags by contract (``compare --vs '--engine vllm'``, marked
    :class:`FlagsValue`) takes any word except one of ``command``'s own options (``--vs --json``)."""
    takes_value = _value_options(command)
    own = _own_options(command)
    index = 0
    while index < len(args):
        word = args[index]
        if word == "--":
            return  # the rest belongs to the engine (serve) or to every column (compare)
        option = takes_value.get(word)
        if option is None or index + 1 >= len(args):
            index += 1
            continue
        value = args[index + 1]
        flags_valued = isinstance(option.type, FlagsValue)
        if looks_like_flag(value) and (not flags_valued or value.split("=", 1)[0] in own or value == "--"):
            name = option.metavar or "VALUE"
            raise BadInputError(
                f"{word} takes a value ({name}), but the next word {excerpt(value)} is a flag: the value was "
                "left out, and the flag would have been swallowed as it",
                fix=f"give {word} its value before the next flag ({word} {name} {excerpt(value)[1:-1]} ...), or "
                f"drop {word}; a value that really begins with '-' is written attached: {word}=-...",
            )
        index += 2


class OracleCommand(click.Command):
    """A click command that applies :func:`refuse_flag_as_value` before click parses the arguments."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        refuse_flag_as_value(self, args)
        return super().parse_args(ctx, args)


def command(name: str, **kwargs: Any) -> Any:
    """``click.command(name, cls=OracleCommand, ...)``: the decorator every subcommand is declared with."""
    return click.command(name, cls=OracleCommand, **kwargs)


class FlagsValue(click.ParamType):
    """A string whose words are flags (``compare --vs '--engine vllm'``): a flag-looking value is allowed."""

    name = "flags"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        return value


class FiniteFloat(click.FloatRange):
    """:class:`click.FloatRange` that refuses ``nan`` and the infinities (exit 2, the value and the range)."""

    name = "finite float"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            flag = param.opts[0] if param is not None and param.opts else "the value"
            raise BadInputError(
                f"{flag} {excerpt(value)} is not a finite number (NaN and infinities compare false with every "
                "bound, so no range can hold them)",
                fix=f"give {flag} a finite number{self._describe_range_fix()}",
            )
        return number

    def _describe_range_fix(self) -> str:
        if self.min is None and self.max is None:
            return ""
        return f" in {self._describe_range()}"
