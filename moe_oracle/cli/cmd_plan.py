"""``moe-oracle plan``: a complete, copy-pasteable serve command and environment for an engine.

The decision is ``decide()`` with the engine's semantics; the plan adds the engine's flags,
the environment the chosen backend needs, every derived quantity with its inputs and formula,
and replicas when the requested expert parallelism crosses an NVLink/XGMI domain.
"""

from __future__ import annotations

import json
from typing import Any

import click

from moe_oracle.cli.command import command
from moe_oracle.cli.manual_options import manual_options
from moe_oracle.cli.options import asked_from, deployment_options, question_options
from moe_oracle.errors import BadInputError, ExitCode

PLAN_ENGINES = ["vllm", "sglang"]


def plan_options(f: Any) -> Any:
    """Options shared by ``plan`` and ``serve``: ``select``'s options (the manual model flags, the deployment
    and every option ``select`` decides with), with ``--engine`` one of the engines a plan launches."""
    f = click.option(
        "--engine", type=click.Choice(PLAN_ENGINES), default=None, help="Engine to launch (required): vllm or sglang."
    )(f)
    f = click.option(
        "--checkpoint",
        default=None,
        metavar="PATH|ID",
        help="The checkpoint the engine loads (a local directory or a Hugging Face id) when MODEL or the manual "
        "flags only describe the model: e.g. an architecture no family reads.",
    )(f)
    f = question_options(f)
    f = deployment_options(f)
    return manual_options(f)


def request_from(model: str | None, kw: dict[str, Any]) -> Any:
    """A :class:`PlanRequest` from parsed options (pops what it uses): the question ``select`` is asked with the
    same flags (:func:`~moe_oracle.cli.options.asked_from`), to be served as MODEL."""
    from moe_oracle.launch.build import PlanRequest
    from moe_oracle.rules import Engine

    engine = kw.pop("engine")
    checkpoint = kw.pop("checkpoint", None)
    if engine is None:
        raise BadInputError("plan needs --engine", fix="add --engine vllm or --engine sglang.")
    return PlanRequest.of(model, asked_from(model, kw, "plan", Engine(engine)), checkpoint)


@command("plan")
@click.argument("model", required=False)
@plan_options
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON (argv, env, derived, replicas, ...).")
@click.option(
    "--examples",
    "examples_dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Write the generated example plans (docs/plans) into this directory instead.",
)
@click.option("--check", is_flag=True, help="With --examples: exit 6 if a file would change (write nothing).")
@click.option(
    "--replay",
    type=click.Path(dir_okay=False),
    default=None,
    help="Plan again from a saved record (select --json [--brief] with --engine vllm|sglang, or plan --json); "
    "exit 5 if the decision changed.",
)
def plan(model: str | None, **kw: Any) -> None:
    """Print a complete serve command and environment for MODEL on an engine (vLLM or SGLang).

    The decision is the one `moe-oracle select` makes with the same flags and the same defaults (software:
    the engine's release profile; layout: proposed when no --tp/--dp/--ep/--pp is given); the fingerprint
    is the same. MODEL names the checkpoint the engine loads; a manual description (the manual flags, or a
    manual JSON without a "model" id) names none: give it with --checkpoint.

    Every derived quantity (symmetric buffer bytes per rank, per-rank token cap, MoRI heap,
    power-of-two rounding) is shown with its inputs, formula and source. When the requested
    expert parallelism crosses an NVLink/XGMI domain, replicas that each stay inside one
    domain are proposed together with the refused layout's reasons.
    """
    examples_dir = kw.pop("examples_dir")
    check = kw.pop("check")
    as_json = kw.pop("as_json")
    replay = kw.pop("replay")
    if replay is not None:
        _plan_replay(model, replay, as_json, kw.pop("all_reasons", False))
        return
    if examples_dir is not None:
        from moe_oracle.cost.local import use_file
        from moe_oracle.launch.examples import write_examples

        use_file("none")  # the example plans are the package's answer, never this machine's calibration

        stale = write_examples(examples_dir, check=check)
        if as_json:  # one document, whatever the outcome (exit 6 included)
            doc = {"examples_dir": examples_dir, "check": check, "stale" if check else "written": list(stale)}
            click.echo(json.dumps(doc, indent=2))
        for name in [] if as_json else stale:
            click.echo(f"{'stale' if check else 'wrote'}: {name}")
        if check and stale:
            raise click.exceptions.Exit(int(ExitCode.STALE))
        return
    from moe_oracle.launch.build import build_plan
    from moe_oracle.launch.prerequisites import with_prerequisites

    all_reasons = kw.pop("all_reasons", False)
    request = request_from(model, kw)
    plan_obj = with_prerequisites(build_plan(request), request)
    emit(plan_obj, as_json, all_reasons=all_reasons)


def _plan_replay(model: str | None, path: str, as_json: bool, all_reasons: bool) -> None:
    """``plan --replay FILE``: every input from the record (MODEL or a deciding flag next to it is refused)."""
    from moe_oracle.cli.plan_replay import request_from_record
    from moe_oracle.decide.record import load_record
    from moe_oracle.launch.build import build_plan
    from moe_oracle.launch.prerequisites import with_prerequisites

    ctx = click.get_current_context()
    given = [f"MODEL {model!r}"] if model is not None else []
    for param in ctx.command.params:
        if param.name in ("replay", "as_json", "all_reasons", "model") or not isinstance(param, click.Option):
            continue
        if ctx.get_parameter_source(param.name) is click.core.ParameterSource.COMMANDLINE:
            given.append(param.opts[-1] if param.opts else str(param.name))
    if given:
        raise BadInputError(
            f"--replay takes every input from the record, so {', '.join(given)} would be ignored",
            fix="drop them (plan --replay FILE [--json]), or plan anew without --replay",
        )
    record = load_record(path)
    request = request_from_record(record)
    plan_obj = with_prerequisites(build_plan(request), request)
    emit(plan_obj, as_json, all_reasons=all_reasons)
    recorded = (
        (record.get("decision") or {}).get("fingerprint") if "inputs" not in record else record.get("fingerprint")
    )
    if recorded != plan_obj.fingerprint:
        click.echo(
            f"replay: decision differs from the record: fingerprint {recorded} -> {plan_obj.fingerprint} (select "
            "--replay FILE shows each difference)",
            err=True,
        )
        raise click.exceptions.Exit(int(ExitCode.REPLAY_MISMATCH))
    click.echo(f"replay: identical decision, fingerprint {plan_obj.fingerprint}", err=True)


def emit(plan_obj: Any, as_json: bool, *, all_reasons: bool = False) -> None:
    import os

    from moe_oracle.launch.plugin_switch import plugin_off_note

    note = plugin_off_note(plan_obj, os.environ)
    if note and note not in plan_obj.warnings:
        plan_obj.warnings.append(note)
    for w in plan_obj.warnings:
        click.echo(f"warning: {w}", err=True)
    if as_json:
        click.echo(json.dumps(plan_obj.to_json(), indent=2))
        return
    from moe_oracle.cli.console import terminal_width
    from moe_oracle.launch.render import render_text

    click.echo(render_text(plan_obj, all_reasons=all_reasons, width=terminal_width()), nl=False)
