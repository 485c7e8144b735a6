"""``moe-oracle plan``: a complete, copy-pasteable serve command and environment for an engine.

The decision is ``decide()`` with the engine's semantics; the plan adds the engine's flags,
the environment the chosen backend needs, every derived quantity with its inputs and formula,
and replicas when the requested expert parallelism crosses an NVLink/XGMI domain.
"""

from __future__ import annotations

import json
from typing import Any

import click

from moe_oracle.cli.options import deployment_options, env_from, flags_from, low_precision_option
from moe_oracle.errors import BadInputError, ExitCode

PLAN_ENGINES = ["vllm", "sglang"]


def plan_options(f: Any) -> Any:
    """Options shared by ``plan`` and ``serve`` (deployment flags plus engine, software, backend)."""
    f = click.option(
        "--advisories", type=click.Path(dir_okay=False), default=None, help="Extra known-bad advisory file."
    )(f)
    f = click.option("--allow-fallback", is_flag=True, help="Let a refused --moe-backend fall back, with a warning.")(f)
    f = click.option(
        "--moe-backend",
        "moe_backend",
        default=None,
        help="Explicit backend NAME[:VARIANT]; refused (exit 3) if it cannot run.",
    )(f)
    f = click.option(
        "--software",
        default=None,
        help="Software profile [default: the engine's release, vllm-0.33.0 or sglang-0.5.23; installed for "
        "--device local]; all judges kernels alone.",
    )(f)
    f = click.option("--engine", type=click.Choice(PLAN_ENGINES), default=None, help="Engine to launch (required).")(f)
    f = low_precision_option(f)
    f = deployment_options(f)
    return f


def request_from(model: str | None, kw: dict[str, Any]) -> Any:
    """A :class:`PlanRequest` from parsed options (pops what it uses)."""
    from moe_oracle.inputs import check_engine_software
    from moe_oracle.plan.build import PlanRequest
    from moe_oracle.rules import Engine

    engine = kw.pop("engine")
    if model is None:
        raise BadInputError(
            "plan needs MODEL", fix="e.g. moe-oracle plan deepseek-ai/DeepSeek-V4-Flash --device b200 --engine vllm"
        )
    if engine is None:
        raise BadInputError("plan needs --engine", fix="add --engine vllm or --engine sglang.")
    if kw.get("device") is None:
        raise BadInputError("plan needs --device", fix="e.g. --device b200, --device mi355x or --device local")
    env = env_from(kw.pop("env_items"))
    check_engine_software(engine, kw.get("software"))
    return PlanRequest(
        model=model,
        flags=flags_from(kw),
        engine=Engine(engine),
        software=kw.pop("software"),
        override=kw.pop("moe_backend"),
        allow_fallback=kw.pop("allow_fallback"),
        env=env,
        advisories=kw.pop("advisories"),
        allow_low_precision_activations=kw.pop("allow_low_precision_activations"),
    )


@click.command("plan")
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

    Every derived quantity (symmetric buffer bytes per rank, per-rank token cap, MoRI heap,
    power-of-two rounding) is shown with its inputs, formula and source. When the requested
    expert parallelism crosses an NVLink/XGMI domain, replicas that each stay inside one
    domain are proposed together with the refused layout's reasons.
    """
    examples_dir = kw.pop("examples_dir")
    check = kw.pop("check")
    as_json = kw.pop("as_json")
    if examples_dir is not None:
        from moe_oracle.plan.examples import write_examples

        stale = write_examples(examples_dir, check=check)
        for name in stale:
            click.echo(f"{'stale' if check else 'wrote'}: {name}")
        if check and stale:
            raise click.exceptions.Exit(int(ExitCode.STALE))
        return
    from moe_oracle.plan.build import build_plan

    plan_obj = build_plan(request_from(model, kw))
    emit(plan_obj, as_json)


def emit(plan_obj: Any, as_json: bool) -> None:
    for w in plan_obj.warnings:
        click.echo(f"warning: {w}", err=True)
    if as_json:
        click.echo(json.dumps(plan_obj.to_json(), indent=2))
        return
    from moe_oracle.plan.render import render_text

    click.echo(render_text(plan_obj), nl=False)
