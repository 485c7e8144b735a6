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
    f = question_options(f)
    f = deployment_options(f)
    return manual_options(f)


def request_from(model: str | None, kw: dict[str, Any]) -> Any:
    """A :class:`PlanRequest` from parsed options (pops what it uses): the question ``select`` is asked with the
    same flags (:func:`~moe_oracle.cli.options.asked_from`), to be served as MODEL."""
    from moe_oracle.launch.build import PlanRequest
    from moe_oracle.rules import Engine

    engine = kw.pop("engine")
    if engine is None:
        raise BadInputError("plan needs --engine", fix="add --engine vllm or --engine sglang.")
    return PlanRequest.of(model, asked_from(model, kw, "plan", Engine(engine)))


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
def plan(model: str | None, **kw: Any) -> None:
    """Print a complete serve command and environment for MODEL on an engine (vLLM or SGLang).

    The decision is the one `moe-oracle select` makes with the same flags and the same defaults (software:
    the engine's release profile; layout: proposed when no --tp/--dp/--ep/--pp is given); the fingerprint
    is the same. MODEL names the checkpoint the engine loads; a manual description (the manual flags) names
    none and is refused.

    Every derived quantity (symmetric buffer bytes per rank, per-rank token cap, MoRI heap,
    power-of-two rounding) is shown with its inputs, formula and source. When the requested
    expert parallelism crosses an NVLink/XGMI domain, replicas that each stay inside one
    domain are proposed together with the refused layout's reasons.
    """
    examples_dir = kw.pop("examples_dir")
    check = kw.pop("check")
    as_json = kw.pop("as_json")
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

    all_reasons = kw.pop("all_reasons", False)
    plan_obj = build_plan(request_from(model, kw))
    emit(plan_obj, as_json, all_reasons=all_reasons)


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
    from moe_oracle.launch.render import render_text

    click.echo(render_text(plan_obj, all_reasons=all_reasons), nl=False)
