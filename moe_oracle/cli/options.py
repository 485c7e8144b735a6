"""Options shared by the planning commands, so a flag means the same everywhere."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import click

from moe_oracle.inputs import RELEVANT_ENV, DeploymentFlags

_POS = click.IntRange(min=1)


def deployment_options(f: Callable[..., Any]) -> Callable[..., Any]:
    opts = [
        click.option(
            "--device", default=None, help="Device name (h100, h200, b200, b300, gb200, mi355x, ...) or local."
        ),
        click.option("--gpus-per-node", type=_POS, default=None, help="GPUs per node [device default]."),
        click.option("--nodes", type=_POS, default=1, show_default=True, help="Number of nodes."),
        click.option(
            "--domain-size", type=_POS, default=None, help="NVLink/XGMI domain size in GPUs [device default]."
        ),
        click.option("--tp", type=_POS, default=1, show_default=True, help="Tensor-parallel size (attention)."),
        click.option("--dp", type=_POS, default=1, show_default=True, help="Data-parallel size (attention)."),
        click.option("--ep", type=_POS, default=1, show_default=True, help="Expert-parallel group size (1 = no EP)."),
        click.option("--pp", type=_POS, default=1, show_default=True, help="Pipeline-parallel size."),
        click.option(
            "--max-num-batched-tokens",
            type=_POS,
            default=8192,
            show_default=True,
            help="Token budget per step per DP rank.",
        ),
        click.option("--all2all-backend", default=None, help="Engine all2all backend (e.g. mori_high_throughput)."),
        click.option("--eplb/--no-eplb", default=False, show_default=True, help="Expert-parallel load balancing."),
        click.option(
            "--env",
            "env_items",
            multiple=True,
            metavar="KEY=VALUE",
            help=f"Environment the engine will see (default: this shell's {', '.join(RELEVANT_ENV[:2])}, ...).",
        ),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return f


def flags_from(kw: dict[str, Any]) -> DeploymentFlags:
    return DeploymentFlags(
        device=kw.pop("device"),
        gpus_per_node=kw.pop("gpus_per_node"),
        nodes=kw.pop("nodes"),
        domain_size=kw.pop("domain_size"),
        tp=kw.pop("tp"),
        dp=kw.pop("dp"),
        ep=kw.pop("ep"),
        pp=kw.pop("pp"),
        max_num_batched_tokens=kw.pop("max_num_batched_tokens"),
        all2all_backend=kw.pop("all2all_backend"),
        eplb=kw.pop("eplb"),
    )


def env_from(items: tuple[str, ...]) -> dict[str, str]:
    """Relevant variables from this shell, overridden by explicit ``--env KEY=VALUE``."""
    env = {k: os.environ[k] for k in RELEVANT_ENV if k in os.environ}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="--env")
        env[key] = value
    return env


def low_precision_option(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--allow-low-precision-activations``: let automatic selection pick a lower accuracy class."""
    return click.option(
        "--allow-low-precision-activations",
        is_flag=True,
        help="Let automatic selection choose a variant that quantizes activations to 4 bits (accuracy class a4) "
        "for a checkpoint whose activations are not 4-bit (e.g. aiter a4w4 for MXFP4 experts).",
    )(f)
