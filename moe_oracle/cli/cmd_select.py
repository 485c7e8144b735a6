"""``moe-oracle select``: decide the mega-MoE backend of every layer group."""

from __future__ import annotations

import json
from typing import Any

import click

from moe_oracle.cli.command import command
from moe_oracle.cli.manual_options import MANUAL_FLAGS, manual_options
from moe_oracle.cli.options import asked_from, deployment_options, question_options
from moe_oracle.errors import (
    BadInputError,
    DeploymentDoesNotFitError,
    DeploymentError,
    EngineLayoutError,
    ExitCode,
    OverrideRefusedError,
    excerpt,
)
from moe_oracle.rules import Engine

ENGINES = [e.value for e in Engine]


@command("select")
@click.argument("model", required=False)
@manual_options
@deployment_options
@click.option(
    "--engine", type=click.Choice(ENGINES), default="none", show_default=True, help="Engine whose gates apply."
)
@question_options
@click.option("--json", "as_json", is_flag=True, help="Print the decision record as JSON.")
@click.option(
    "--brief",
    is_flag=True,
    help="With --json: a few-KB record (inputs, choices, fit verdict, fingerprint) for a bug report; --replay "
    "takes it.",
)
@click.option("--replay", type=click.Path(dir_okay=False), default=None, help="Re-decide from a saved --json record.")
def select(model: str | None, **kw: Any) -> None:
    """Choose the fused mega-MoE backend for MODEL (preset id, directory, config.json or manual JSON)."""
    from moe_oracle.decide.record import load_record

    as_json = kw.pop("as_json")
    all_reasons = kw.pop("all_reasons")
    replay = kw.pop("replay")
    brief = kw.pop("brief")
    if brief and not as_json:
        raise BadInputError(
            "--brief shortens the --json record", fix="add --json (select --json --brief > record.json)"
        )
    if replay:
        _replay_alone(model)
        _replay(load_record(replay), as_json, all_reasons)
        return
    manual_given = any(kw.get("manual_" + key) is not None for key in MANUAL_FLAGS.values())
    if model is None and not manual_given:
        raise BadInputError(
            "select needs MODEL (or --replay FILE, or the manual flags --hidden-size ... --weight-format)",
            fix="e.g. moe-oracle select deepseek-ai/DeepSeek-V4-Flash --device b200",
        )
    asked = asked_from(model, kw, "select", Engine(kw.pop("engine")))
    from moe_oracle.answers.door import select_asked

    def show_trail(exc: OverrideRefusedError) -> None:
        if all_reasons:  # the full trail on demand, one reason per line, before the one-line error
            for line in exc.trail:
                click.echo(f"  {line}", err=True)

    from moe_oracle.launch.build import judge_select

    try:
        resolved = _resolved(asked)
    except (DeploymentError, EngineLayoutError) as exc:  # its fixes re-planned as plan re-plans them
        raise judge_select(model, asked, exc) from None
    try:
        selection = select_asked(asked, model, resolved=resolved, on_refusal=show_trail)
    except DeploymentDoesNotFitError as exc:
        if not as_json:  # the decision and its fit, then the one-line refusal
            _print(exc.selection, as_json, all_reasons)  # type: ignore[attr-defined]
        # its fix re-planned as plan re-plans it (launch/fix_judge.py), so both commands print one line
        raise judge_select(model, asked, exc) from None
    _print(selection, as_json, all_reasons, brief=brief)


def _resolved(asked: Any) -> Any:
    """The question resolved, the engine's layout rules checked (exit 2), and the deployment's warnings printed,
    before anything is decided."""
    from moe_oracle.answers.door import check_engine_layout
    from moe_oracle.inputs import deployment_warnings

    resolved = asked.resolve()
    check_engine_layout(asked.engine, resolved.deployment)
    for line in deployment_warnings(resolved.deployment):
        click.echo(f"warning: {line}", err=True)
    return resolved


def _print(selection: Any, as_json: bool, all_reasons: bool, *, brief: bool = False) -> None:
    doc = selection.to_dict()
    if brief:
        from moe_oracle.decide.record import brief_record

        for w in selection.decision.warnings:
            click.echo(f"warning: {w}", err=True)
        click.echo(json.dumps(brief_record(doc), separators=(",", ":")))
        return
    _emit(
        selection.decision,
        doc,
        as_json,
        all_reasons,
        fit=selection.fit,
        layout_why=doc.get("layout_chosen"),
        settings_why=doc.get("settings_chosen"),
    )
    replicas = doc.get("replicas")
    if replicas and not as_json:
        _echo_prose(f"replicas: {replicas['note']}")


def _echo_prose(*lines: str) -> None:
    """Print prose lines wrapped to the terminal's width (``COLUMNS``; unwrapped into a pipe or file)."""
    from moe_oracle.cli.console import terminal_width
    from moe_oracle.terminal_text import wrap_line

    width = terminal_width()
    click.echo("\n".join(out for line in lines for out in (wrap_line(line, width) if width else [line])))


def _replay_alone(model: str | None) -> None:
    """``--replay`` decides from the record's inputs alone: a MODEL or a deciding flag next to it would be ignored."""
    ctx = click.get_current_context()
    given = [f"MODEL {model!r}"] if model is not None else []
    for param in ctx.command.params:
        if param.name in ("replay", "as_json", "all_reasons", "model", "brief") or not isinstance(param, click.Option):
            continue
        if ctx.get_parameter_source(param.name) is click.core.ParameterSource.COMMANDLINE:
            given.append(param.opts[-1] if param.opts else str(param.name))
    if given:
        raise BadInputError(
            f"--replay takes every input from the record, so {', '.join(given)} would be ignored",
            fix="drop them (select --replay FILE [--json] [--all-reasons]), or decide anew without --replay",
        )


def _label(chosen: Any) -> str:
    """``backend:variant`` (``+convert(...)``), or ``no fused backend``, for a record's ``chosen`` value."""
    if not isinstance(chosen, dict):
        return "no fused backend" if chosen is None else str(chosen)
    key = f"{chosen.get('backend')}:{chosen.get('variant')}"
    conv = chosen.get("conversion")
    if isinstance(conv, dict):
        key += f"+convert({conv.get('from')}->{conv.get('to')})"
    return key


def _replay(record: dict[str, Any], as_json: bool, all_reasons: bool) -> None:
    """Decide again from ``record``'s inputs, print the decision, and say whether every field the record
    shows is what its inputs decide (exit 0) or not (exit 5, one line per difference on stderr)."""
    from moe_oracle.answers.door import replay
    from moe_oracle.decide.record import compare_replay, decision_to_json, record_origin, replay_inputs

    notes: list[str] = []
    inputs = replay_inputs(record, notes)
    decision = replay(inputs)
    doc = decision_to_json(decision, software_origin=record_origin(record))
    _emit(decision, doc, as_json, all_reasons)
    for note in notes:
        click.echo(f"replay: {note}", err=True)
    verdict = compare_replay(record, doc)
    if not verdict.identical:
        for line in replay_diff(record, doc, verdict):
            click.echo(line, err=True)
        raise click.exceptions.Exit(int(ExitCode.REPLAY_MISMATCH))
    if verdict.format_changed and notes:
        click.echo(
            f"replay: identical decision with today's catalogue (fingerprint {record.get('fingerprint')} -> "
            f"{doc['fingerprint']}: the inputs now carry today's device figures)",
            err=True,
        )
        return
    if verdict.format_changed:
        click.echo(
            f"replay: identical decision; the record's format is older (fingerprint {record.get('fingerprint')} -> "
            f"{doc['fingerprint']}: fields were added since it was written), the decision is unchanged",
            err=True,
        )
        return
    click.echo(f"replay: identical decision, fingerprint {doc['fingerprint']}", err=True)


def replay_diff(record: dict[str, Any], doc: dict[str, Any], verdict: Any) -> list[str]:
    """The differences between a record and its replay, one readable line per changed item (stderr)."""
    from moe_oracle.decide.record import covers, first_difference

    lines = ["replay: decision differs from the record"]
    old_fp, new_fp = record.get("fingerprint"), doc.get("fingerprint")
    if verdict.edited:
        lines.append(
            f"  fingerprint: the record's {excerpt(old_fp)} does not match its own inputs: the inputs or the "
            "fingerprint were edited after it was written"
        )
    elif old_fp != new_fp:
        why = ""
        if record.get("oracle_version") != doc.get("oracle_version"):
            why = f" (oracle {record.get('oracle_version')} -> {doc.get('oracle_version')})"
        lines.append(f"  fingerprint: {old_fp} -> {new_fp}{why}")
    for key in verdict.fields:
        if key != "layer_groups":
            where, was, now = first_difference(record[key], doc[key], key) or (key, record[key], doc[key])
            lines.append(f"  {where}: the record shows {excerpt(was)}; its inputs decide {excerpt(now)}")
    recorded = record.get("layer_groups")
    old = recorded if isinstance(recorded, list) else []
    old_by_name = {g["name"]: g for g in old if isinstance(g, dict) and isinstance(g.get("name"), str)}
    for group in doc.get("layer_groups", []):
        name = group.get("name")
        before = old_by_name.pop(name, None)
        now = _label(group.get("chosen"))
        if before is None:
            lines.append(f"  layer group {name}: not in the record; now {now}")
            continue
        was = _label(before.get("chosen"))
        if was != now:
            lines.append(f"  layer group {name} (layers {_span(group)}): {was} -> {now}")
        elif not covers(before, group):
            where, was, is_now = first_difference(before, group) or ("?", None, None)
            lines.append(
                f"  layer group {name}: {now}; its {where} differs (the record shows {excerpt(was)}; its inputs "
                f"decide {excerpt(is_now)})"
            )
        else:
            lines.append(f"  layer group {name}: {now} (unchanged)")
    for name in old_by_name:
        lines.append(f"  layer group {excerpt(name)}: in the record only")
    return lines


def _span(group: dict[str, Any]) -> str:
    from moe_oracle.model.spans import layer_span

    layers = group.get("layers")
    return layer_span(layers) if isinstance(layers, list) and layers else "?"


def _emit(
    decision: Any,
    doc: dict[str, Any],
    as_json: bool,
    all_reasons: bool,
    *,
    fit: Any = None,
    layout_why: str | None = None,
    settings_why: str | None = None,
) -> None:
    for w in decision.warnings:
        click.echo(f"warning: {w}", err=True)
    if as_json:
        click.echo(json.dumps(doc, indent=2))
        return
    from moe_oracle.cli.decision_text import render_decision

    why = [line for line in (layout_why, settings_why) if line]
    if why:
        _echo_prose(*why)
    render_decision(decision, doc, all_reasons=all_reasons)
    if fit is not None:
        _echo_prose(*fit.lines())
