"""One option set: a flag that two commands take means the same in both (issue 20).

Every subcommand's parser is walked; each option spelled the same in two commands must have the same dest,
default, type, choices and kind (flag, multiple), so a drift between ``select``, ``plan``, ``serve`` and
``matrix`` fails here before a user sees two answers. The few deliberate differences are listed with why.
"""

from __future__ import annotations

from typing import Any

import click
import pytest

from moe_oracle.cli.app import cli as app

#: (command, option) -> why it differs from the other commands' option of that name.
DELIBERATE = {
    ("plan", "--engine"): "plan launches an engine: vllm or sglang, required",
    ("serve", "--engine"): "serve launches an engine: vllm or sglang, required",
    ("matrix", "--engine"): "an axis of the matrix: a comma list of engines",
    ("matrix", "--software"): "an axis of the matrix: a comma list of profiles (default None, as select's)",
    ("probe", "--engine"): "probe checks one engine's environment for moe-oracle's plug-in: vllm or sglang, no 'none'",
    ("tune", "--device"): "tune measures this machine's GPU: local by default (a catalogue device only with --dry-run)",
    ("tune", "--tokens"): "the token counts tune measures: a comma list (accuracy routes one count)",
}

#: The deciding commands and the options ``select`` decides with that each of them must take.
DECIDING = ("select", "plan", "serve")


def _commands() -> dict[str, click.Command]:
    ctx = click.Context(app)
    return {name: app.get_command(ctx, name) for name in app.list_commands(ctx)}


def _signature(opt: click.Option) -> dict[str, Any]:
    kind = opt.type
    return {
        "dest": opt.name,
        "default": opt.default,
        "type": type(kind).__name__,
        "choices": tuple(getattr(kind, "choices", ()) or ()),
        "range": (getattr(kind, "min", None), getattr(kind, "max", None)),
        "flag": opt.is_flag,
        "multiple": opt.multiple,
        "secondary": tuple(opt.secondary_opts),
    }


def _options(command: click.Command) -> dict[str, click.Option]:
    out = {}
    for param in command.params:
        if isinstance(param, click.Option):
            for spelled in param.opts:
                out[spelled] = param
    return out


def test_a_flag_means_the_same_in_every_command():
    by_flag: dict[str, dict[str, dict[str, Any]]] = {}
    for name, command in _commands().items():
        for spelled, opt in _options(command).items():
            if (name, spelled) not in DELIBERATE:
                by_flag.setdefault(spelled, {})[name] = _signature(opt)
    drift = []
    for spelled, per_command in sorted(by_flag.items()):
        reference_command, reference = next(iter(per_command.items()))
        for name, sig in per_command.items():
            if sig != reference:
                diff = {k: (reference[k], sig[k]) for k in sig if sig[k] != reference[k]}
                drift.append(f"{spelled}: {reference_command} vs {name}: {diff}")
    assert not drift, "\n".join(drift)


def test_deliberate_differences_are_real():
    commands = _commands()
    for command, spelled in DELIBERATE:
        assert spelled in _options(commands[command]), (command, spelled)


@pytest.mark.parametrize("command", [c for c in DECIDING if c != "select"])
def test_every_select_option_is_taken_by_the_deciding_commands(command: str):
    commands = _commands()
    # --replay and --brief are select's record in and out (a brief record is what select --replay reads)
    wanted = set(_options(commands["select"])) - {"--replay", "--brief"}
    assert wanted - set(_options(commands[command])) == set()


def test_matrix_takes_select_options_but_its_axes():
    from moe_oracle.cli.options import NOT_MATRIX_OPTIONS

    commands = _commands()
    select = {opt.name for opt in commands["select"].params if isinstance(opt, click.Option)}
    matrix = {opt.name for opt in commands["matrix"].params if isinstance(opt, click.Option)}
    manual = {name for name in select if name and name.startswith("manual_")}
    missing = select - matrix - NOT_MATRIX_OPTIONS - manual - {"replay", "brief", "as_json", "engine"}
    assert missing == set()


def test_compare_columns_parse_with_plan_options():
    """compare has no question flags of its own: every column (and the shared flags after --) is plan's parser."""
    commands = _commands()
    own = set(_options(commands["compare"])) - {"--help"}
    assert own == {"--vs", "--points", "--json"}
