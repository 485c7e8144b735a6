"""The manual model flags (``--hidden-size``, ``--num-experts``, ...): one MoE layer group described on the
command line instead of MODEL, for architectures no adapter reads; and the rule that MODEL and these flags are
never given together (exit 2).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from moe_oracle.errors import BadInputError

#: ``--flag`` -> ``manual_from_flags`` keyword: describe one MoE layer group without a config.
MANUAL_FLAGS = {
    "--hidden-size": "hidden_size",
    "--moe-intermediate-size": "moe_intermediate_size",
    "--num-experts": "num_experts",
    "--top-k": "top_k",
    "--weight-format": "weight_format",
    "--num-shared-experts": "num_shared_experts",
    "--shared-expert-width": "shared_expert_width",
    "--weight-block": "weight_block",
    "--num-layers": "num_layers",
    "--scoring": "scoring",
    "--activation": "activation",
}
#: ``--x/--no-x`` switches of the manual description (unset: the manual default, stated as an assumption).
MANUAL_SWITCHES = {
    "--correction-bias": ("correction_bias", "--no-correction-bias"),
    "--renormalize": ("renormalize", "--no-renormalize"),
    "--router-weight-on-input": ("router_weight_on_input", "--router-weight-on-output"),
    "--expert-bias": ("expert_bias", "--no-expert-bias"),
    "--shared-expert-gate": ("shared_expert_gate", "--no-shared-expert-gate"),
}
_MANUAL_REQUIRED = ("--hidden-size", "--moe-intermediate-size", "--num-experts", "--top-k", "--weight-format")


def manual_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """The manual description flags (instead of MODEL), for architectures no adapter reads."""
    helps = {
        "--hidden-size": "Manual model: hidden size H (instead of MODEL).",
        "--moe-intermediate-size": "Manual model: expert width I.",
        "--num-experts": "Manual model: routed experts.",
        "--top-k": "Manual model: experts per token.",
        "--weight-format": "Manual model: routed-expert weights (bf16, fp8_block, fp8_channel, mxfp4, mxfp8, nvfp4; "
        "int4, int8 for integer weight-only checkpoints: compressed-tensors, AWQ, GPTQ).",
        "--num-shared-experts": "Manual model: shared experts [0].",
        "--shared-expert-width": "Manual model: total width of the shared experts [num-shared-experts x I].",
        "--weight-block": "Manual model: scale block ROWSxCOLS [the format's default].",
        "--num-layers": "Manual model: MoE layers [1].",
        "--scoring": "Manual model: router scores softmax, sigmoid or sqrtsoftplus [sigmoid, stated as assumed].",
        "--activation": "Manual model: swiglu, swiglu-clamp:LIMIT, swigluoai[:ALPHA,LIMIT], gelu or relu2 [swiglu].",
    }
    switch_helps = {
        "--correction-bias": "Manual model: the router has a score-correction bias [yes, stated as assumed].",
        "--renormalize": "Manual model: top-k weights renormalized to sum 1 [yes, stated as assumed].",
        "--router-weight-on-input": "Manual model: the routing weight scales the expert input (Llama-4) or its "
        "output [output, stated as assumed].",
        "--expert-bias": "Manual model: the routed experts have bias vectors (gpt-oss) [no, stated as assumed].",
        "--shared-expert-gate": "Manual model: a per-token sigmoid gate scales the shared expert (Qwen) [no].",
    }
    for flag in reversed(MANUAL_SWITCHES):
        key, off = MANUAL_SWITCHES[flag]
        f = click.option(f"{flag}/{off}", "manual_" + key, default=None, help=switch_helps[flag])(f)
    for flag in reversed(MANUAL_FLAGS):
        f = click.option(flag, "manual_" + MANUAL_FLAGS[flag], default=None, metavar="V", help=helps[flag])(f)
    return f


def manual_command_fix(model: str, exc: Any, command: str) -> str:
    """The user's own command with MODEL replaced by the manual flags the nearest family reads
    (``exc.manual_words``), and for ``plan``/``serve`` ``--checkpoint MODEL``: pasted, it runs."""
    from moe_oracle.cli.app import invoked_args
    from moe_oracle.shell import shell_join

    args = invoked_args()
    if model not in args:  # run from the API, not the command line: the flags alone
        return str(exc.fix)
    at = args.index(model)
    words = list(exc.manual_words) + (["--checkpoint", model] if command in ("plan", "serve") else [])
    new = ["moe-oracle", *args[:at], *words, *args[at + 1 :]]
    return f"describe it by hand as the nearest family reads it (check against the model card): {shell_join(new)}"


def description_from(model: str | None, kw: dict[str, Any], command: str) -> Any:
    """The model description: MODEL, or the manual flags (pops them); both or neither is exit 2."""
    values = {flag: kw.pop("manual_" + key) for flag, key in MANUAL_FLAGS.items()}
    values.update({flag: kw.pop("manual_" + key) for flag, (key, _) in MANUAL_SWITCHES.items()})
    given = {flag: v for flag, v in values.items() if v is not None}
    if not given:
        if model is None:
            raise BadInputError(
                f"{command} needs MODEL (or the manual flags {' '.join(_MANUAL_REQUIRED)})",
                fix=f"e.g. moe-oracle {command} deepseek-ai/DeepSeek-V4-Flash ...",
            )
        from moe_oracle.errors import UnsupportedArchitectureError
        from moe_oracle.model.resolve import resolve_model

        try:
            return resolve_model(model)
        except UnsupportedArchitectureError as exc:
            if exc.manual_words:  # the user's own command, MODEL replaced by the manual flags (+ --checkpoint)
                raise UnsupportedArchitectureError(exc.message, fix=manual_command_fix(model, exc, command)) from None
            raise
    if model is not None:
        raise BadInputError(
            f"MODEL {model!r} and the manual flags ({', '.join(given)}) both describe the model",
            fix="give MODEL or the manual flags, not both",
        )
    missing = [flag for flag in _MANUAL_REQUIRED if flag not in given]
    if missing:
        raise BadInputError(
            f"a manual model needs {', '.join(missing)} too (given: {', '.join(given)})",
            fix="e.g. --hidden-size 4096 --moe-intermediate-size 2048 --num-experts 256 --top-k 8 "
            "--weight-format mxfp4",
        )
    from moe_oracle.model.manual import manual_from_flags

    names = {**MANUAL_FLAGS, **{flag: key for flag, (key, _) in MANUAL_SWITCHES.items()}}
    extra = {names[flag]: v for flag, v in given.items() if flag not in _MANUAL_REQUIRED}
    return manual_from_flags(*(given[flag] for flag in _MANUAL_REQUIRED), **extra)


def no_manual_flags(kw: dict[str, Any], description: Any) -> None:
    """A model already described takes no manual flag (pops them; exit 2 for one given)."""
    names = {**MANUAL_FLAGS, **{flag: key for flag, (key, _) in MANUAL_SWITCHES.items()}}
    given = [flag for flag, key in names.items() if kw.pop("manual_" + key, None) is not None]
    if given:
        raise BadInputError(
            f"model {description.model!r} is already described, and the manual flags ({', '.join(given)}) describe "
            "it again",
            fix="give the description or the manual flags, not both",
        )
