"""``moe-oracle plan``: a complete, copy-pasteable serve command and environment for an engine.

The decision is ``decide()`` with the engine's semantics; the plan adds the engine's flags,
the environment the chosen backend needs, every derived quantity with its inputs and formula,
and replicas when the requested expert parallelism crosses an NVLink/XGMI domain.
"""

from __future__ import annotations

import json
from typing import Any

import click

from moe_oracle.cli.options import (
    conversion_from,
    decode_tokens_from,
    deployment_options,
    env_from,
    flags_from,
    layout_given,
    question_options,
)
from moe_oracle.errors import BadInputError, ExitCode

PLAN_ENGINES = ["vllm", "sglang"]


def plan_options(f: Any) -> Any:
    """Options shared by ``plan`` and ``serve``: the deployment flags and every option ``select`` decides with."""
    f = click.option("--engine", type=click.Choice(PLAN_ENGINES), default=None, help="Engine to launch (required).")(f)
    f = question_options(f)
    f = deployment_options(f)
    return f


def request_from(model: str | None, kw: dict[str, Any]) -> Any:
    """A :class:`PlanRequest` from parsed options (pops what it uses); with no layout flag, the layout the
    oracle proposes for the GPUs given (:func:`moe_oracle.decide.layout.propose_layout`)."""
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
    proposed = layout_given() is False
    conversion = conversion_from(kw)
    decode_tokens = decode_tokens_from(kw)
    flags = flags_from(kw)
    memory_fraction = kw.pop("memory_fraction")
    layout_why = None
    if proposed:
        from moe_oracle.decide.layout import propose_layout
        from moe_oracle.model.resolve import resolve_model

        proposal = propose_layout(resolve_model(model), flags, Engine(engine), memory_fraction=memory_fraction)
        flags, layout_why = proposal.flags, proposal.why
    return PlanRequest(
        model=model,
        flags=flags,
        engine=Engine(engine),
        software=kw.pop("software"),
        override=kw.pop("moe_backend"),
        allow_fallback=kw.pop("allow_fallback"),
        env=env,
        advisories=kw.pop("advisories"),
        conversion=conversion,
        workload=kw.pop("workload"),
        decode_tokens=decode_tokens,
        memory_fraction=memory_fraction,
        layout_why=layout_why,
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

    all_reasons = kw.pop("all_reasons", False)
    plan_obj = build_plan(request_from(model, kw))
    emit(plan_obj, as_json, all_reasons=all_reasons)


def emit(plan_obj: Any, as_json: bool, *, all_reasons: bool = False) -> None:
    for w in plan_obj.warnings:
        click.echo(f"warning: {w}", err=True)
    if as_json:
        click.echo(json.dumps(plan_obj.to_json(), indent=2))
        return
    from moe_oracle.plan.render import render_text

    click.echo(render_text(plan_obj, all_reasons=all_reasons), nl=False)
