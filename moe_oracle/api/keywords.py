"""Keyword arguments of the public API, read from the CLI's own option table.

``moe_oracle.select(model, device="h200", dp=8, ep=8, engine="vllm")`` takes exactly the options of
``moe-oracle select``, named by their long flag with underscores (``--max-num-batched-tokens`` is
``max_num_batched_tokens``, ``--tensor-parallel-size`` is ``tensor_parallel_size``, ``--no-convert`` is
``no_convert``), with the same defaults and the same validation: the table is the click command's own
parameter list (:mod:`moe_oracle.cli.options`), so a flag added there is a keyword here, and nothing is
written twice. The values are parsed into a click context marked as the command line would mark them
(given or default), so "a layout flag was given" and "``--max-num-batched-tokens`` was typed" mean the same
for a keyword.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import click
from click.core import ParameterSource

from moe_oracle.errors import BadInputError, excerpt

#: Options of a command that shape its printing, not its question: no keyword of the API.
PRINTING = frozenset({"as_json", "all_reasons", "replay", "examples_dir", "check", "dry_run"})


@dataclass(frozen=True)
class Keyword:
    """One keyword of the API: the click parameter it fills and the flag it spells."""

    name: str
    param: click.Option
    flag: str


def keyword_name(param: click.Option) -> str:
    """The keyword of an option: its first long flag without the dashes, with underscores (``--eplb/--no-eplb``
    is ``eplb``; ``--attn-dp-size/--dp-size`` is ``attn_dp_size``)."""
    flag = next(o for o in param.opts if o.startswith("--"))
    return flag[2:].replace("-", "_")


def keywords(command: click.Command) -> dict[str, Keyword]:
    """The keywords ``command`` takes (its options, less :data:`PRINTING`), by keyword name."""
    out: dict[str, Keyword] = {}
    for param in command.params:
        if isinstance(param, click.Option) and param.name not in PRINTING:
            name = keyword_name(param)
            out[name] = Keyword(name, param, next(o for o in param.opts if o.startswith("--")))
    return out


def _raw(kw: Keyword, value: Any) -> Any:
    """A Python value in the form click parses: ``env`` may be a mapping; a multiple option a single string."""
    if kw.param.multiple:
        if isinstance(value, Mapping):
            return tuple(f"{k}={v}" for k, v in value.items())
        if isinstance(value, str):
            return (value,)
        return tuple(value)
    return value


@contextmanager
def parsed(
    command: click.Command, call: str, given: Mapping[str, Any], *, skip: frozenset[str] = frozenset()
) -> Iterator[dict[str, Any]]:
    """The parsed options of ``command`` for the keywords ``given`` (everything else its default), inside a click
    context that knows which were given; exit 2 (:class:`BadInputError`) naming the keyword for an unknown one
    or a value the option refuses. ``skip``: keywords the caller handles itself."""
    table = keywords(command)
    unknown = sorted(set(given) - set(table) - skip)
    if unknown:
        raise BadInputError(
            f"{call}() got unknown keyword(s) {', '.join(unknown)}",
            fix=f"use the options of moe-oracle {command.name} with underscores: {', '.join(sorted(table))}",
        )
    ctx = click.Context(command, info_name=command.name)
    values: dict[str, Any] = {}
    with ctx:
        for name, kw in table.items():
            param = kw.param
            assert param.name is not None
            try:
                if name in given and given[name] is not None:
                    values[param.name] = param.process_value(ctx, _raw(kw, given[name]))
                    ctx.set_parameter_source(param.name, ParameterSource.COMMANDLINE)
                else:
                    values[param.name] = param.process_value(ctx, param.get_default(ctx))
                    ctx.set_parameter_source(param.name, ParameterSource.DEFAULT)
            except click.BadParameter as exc:
                raise BadInputError(f"{call}({name}={excerpt(given.get(name))}): {exc.message}", fix=_fix(kw)) from None
        try:
            yield values
        except click.BadParameter as exc:  # a value refused after parsing (``env``'s KEY=VALUE)
            hint = (exc.param_hint or "") if isinstance(exc.param_hint, str) else ""
            name = hint.lstrip("-").replace("-", "_").strip("'\"") or "?"
            raise BadInputError(f"{call}({name}=...): {exc.message}", fix=_fix(table.get(name))) from None
        except click.ClickException as exc:
            raise BadInputError(f"{call}(): {exc.format_message()}") from None


def _fix(kw: Keyword | None) -> str:
    if kw is None:
        return "see moe-oracle select --help"
    return f"give {kw.name} as {kw.flag} takes it ({(kw.param.help or '').strip() or kw.param.type.name})"
