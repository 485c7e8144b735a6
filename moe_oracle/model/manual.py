"""Manual model descriptions: describe any DeepSeek-style MoE without an adapter.

Two ways in, validated with the same one-line :class:`ModelConfigError` messages as configs:

* a JSON file shaped like the ``moe-oracle model --json`` output
  (:func:`load_manual_description` / :func:`manual_from_dict`); ``weight_format`` is a string
  (``bf16``, ``fp8_block``, ``fp8_channel``, ``mxfp4``, ``mxfp8``, ``nvfp4``,
  ``int4``, ``int8``) and
  ``weight_block`` / ``weight_scale_format`` / ``weight_global_scale`` default to the format's
  usual layout (FP8 blocks 128x128 with float32 scales, MX groups of 32 with ue8m0 scales,
  NVFP4 groups of 16 with e4m3 scales and a global scale, INT4 groups of 128 and per-channel INT8
  with bf16 scales);
* keyword values, as CLI flags deliver them (:func:`manual_from_flags`).

Defaults when a field is left out: role ``routed``, no shared experts, plain SwiGLU, and
DeepSeek-V3-style routing (sigmoid scores, noaux_tc correction bias, renormalised, one expert
group, scaling factor 1.0). One group is read by :mod:`.manual_group`, for both ways in.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from moe_oracle.errors import ModelConfigError
from moe_oracle.jsonfile import path_problem
from moe_oracle.model.adapters._grouping import order_groups
from moe_oracle.model.adapters._view import json_type
from moe_oracle.model.description_json import TOP_LEVEL_KEYS
from moe_oracle.model.loader import read_json_file
from moe_oracle.model.manual_group import FIX, Ctx, assumed, read_group, validation_error
from moe_oracle.model.types import (
    MAX_LAYERS,
    ModelDescription,
    MoELayerGroup,
)

#: The model name of a manual description that gives none (it names no checkpoint).
MANUAL_MODEL_NAME = "manual"


def _text(ctx: Ctx, data: dict, key: str, default: str) -> str:
    value = data.get(key, default)
    if value is None:
        return default
    if not isinstance(value, str):
        raise ctx.error(key, value, f"a JSON {json_type(value)}, expected a string")
    return value


def manual_from_dict(data: object, *, where: str = "manual description") -> ModelDescription:
    """Build a description from a dict shaped like ``moe-oracle model --json`` output."""
    ctx = Ctx(where, flags=False)
    if not isinstance(data, dict):
        raise ModelConfigError(f"{where}: the top level is a JSON {json_type(data)}; expected an object", fix=FIX)
    unknown = sorted(set(data) - set(TOP_LEVEL_KEYS) - {"num_hidden_layers"})
    if unknown:
        raise ctx.error(unknown[0], data[unknown[0]], "unknown key; expected " + ", ".join(TOP_LEVEL_KEYS))
    groups_data = data.get("layer_groups")
    if not isinstance(groups_data, list) or not groups_data:
        raise ctx.error("layer_groups", groups_data, "expected a non-empty array of layer groups")
    if len(groups_data) > 256:
        raise ctx.error("layer_groups", f"<{len(groups_data)} groups>", "at most 256 groups are accepted")
    groups: list[MoELayerGroup] = []
    used: set[str] = set()
    assumptions = _given_assumptions(ctx, data.get("assumptions"))
    for index, group_data in enumerate(groups_data):
        group = read_group(ctx, group_data, index, used)
        used.add(group.name)
        groups.append(group)
        assumptions += assumed(ctx, group_data, f"layer_groups[{index}]")
    layers_total = data.get("num_hidden_layers")
    if layers_total is not None:
        ctx.int(layers_total, "num_hidden_layers", 1, MAX_LAYERS)
    try:
        return ModelDescription(
            model=_text(ctx, data, "model", MANUAL_MODEL_NAME),
            architecture=_text(ctx, data, "architecture", "manual"),
            model_type=_text(ctx, data, "model_type", ""),
            family=_text(ctx, data, "family", "manual"),
            layer_groups=order_groups(groups),
            num_hidden_layers=layers_total,
            source=f"manual {where}",
            assumptions=tuple(dict.fromkeys(assumptions)),
        )
    except ValidationError as exc:
        raise validation_error(ctx, exc, "layer_groups") from None


def _given_assumptions(ctx: Ctx, value: object) -> list[str]:
    """The ``assumptions`` a description JSON carries (``moe-oracle model --json`` output read back)."""
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > 64 or not all(isinstance(v, str) and len(v) <= 500 for v in value):
        raise ctx.error("assumptions", value, "expected an array of at most 64 strings")
    return list(value)


def load_manual_description(path: str | Path) -> ModelDescription:
    """Read a manual description JSON file (bounded, UTF-8, strict JSON) and validate it."""
    file = Path(path).expanduser()
    if path_problem(file) is not None or not file.is_file():
        raise ModelConfigError(f"manual description {file} does not exist or is not a file", fix=FIX)
    return manual_from_dict(read_json_file(file), where=str(file))


def activation_from_spec(text: object, *, where: str = "manual flags") -> dict[str, Any]:
    """``--activation`` value -> the manual JSON ``activation`` object.

    ``swiglu``; ``swiglu-clamp:L`` (DeepSeek V4 style pre-activation clamp); ``swigluoai:ALPHA,LIMIT``
    (gpt-oss: ``alpha`` sharpness, beta 1, clamp ``LIMIT``; ``swigluoai`` alone = 1.702,7); ``gelu`` (gated
    GELU); ``relu2`` (squared ReLU, not gated). Errors name ``--activation``.
    """
    ctx = Ctx(where, flags=True)
    if not isinstance(text, str) or not text.strip():
        raise ctx.error("activation", text, _ACTIVATION_FORMS)
    kind, _, args = text.strip().lower().partition(":")
    parts = [p.strip() for p in args.split(",")] if args else []
    if kind in ("swiglu", "gelu", "relu2", "situ") and not parts:
        return {"kind": kind}
    if kind == "swiglu-clamp" and len(parts) == 1:
        return {"kind": "swiglu", "clamp": ctx.number(parts[0], "activation", hi=1e6)}
    if kind == "swigluoai" and len(parts) in (0, 2):
        alpha, limit = (parts or ["1.702", "7"])[:2]
        return {
            "kind": "swiglu",
            "alpha": ctx.number(alpha, "activation", hi=1e3),
            "beta": 1.0,
            "clamp": ctx.number(limit, "activation", hi=1e6),
        }
    raise ctx.error("activation", text, _ACTIVATION_FORMS)


_ACTIVATION_FORMS = "expected swiglu, swiglu-clamp:LIMIT, swigluoai[:ALPHA,LIMIT], gelu or relu2"


def manual_from_flags(
    hidden_size: object,
    moe_intermediate_size: object,
    num_experts: object,
    top_k: object,
    weight_format: object,
    *,
    num_shared_experts: object = 0,
    weight_block: object = None,
    weight_scale_format: object = None,
    weight_global_scale: object = None,
    shared_expert_format: object = None,
    shared_expert_width: object = None,
    shared_expert_gate: object = None,
    scoring: object = None,
    correction_bias: object = None,
    renormalize: object = None,
    router_weight_on_input: object = None,
    num_groups: object = 1,
    topk_groups: object = 1,
    routed_scaling_factor: object = 1.0,
    activation: object = None,
    swiglu_clamp: object = None,
    expert_bias: object = None,
    num_layers: object = 1,
    model: str = MANUAL_MODEL_NAME,
) -> ModelDescription:
    """Build a one-group description from CLI flag values (ints, or their decimal strings).

    ``weight_block`` may be ``[rows, cols]`` or ``"128x128"``; ``activation`` is an
    :func:`activation_from_spec` string (``swiglu_clamp`` is the older spelling of ``swiglu-clamp:L``);
    the group covers layers ``0 .. num_layers-1``. Routing, activation and expert-bias values left at
    ``None`` take the manual defaults, and the description's ``assumptions`` say so. Errors name the flag.
    """
    ctx = Ctx("manual flags", flags=True)
    count = ctx.int(num_layers, "num_layers", 1, MAX_LAYERS)
    if activation is not None and swiglu_clamp is not None:
        raise ctx.error("activation", activation, "give --activation or --swiglu-clamp, not both")
    act = activation_from_spec(activation) if activation is not None else None
    if swiglu_clamp is not None:
        act = {"kind": "swiglu", "clamp": swiglu_clamp}
    routing = {
        key: value
        for key, value in (
            ("scoring", scoring),
            ("correction_bias", correction_bias),
            ("renormalize", renormalize),
            ("weight_on_input", router_weight_on_input),
            ("num_groups", num_groups),
            ("topk_groups", topk_groups),
            ("routed_scaling_factor", routed_scaling_factor),
        )
        if value is not None
    }
    group: dict[str, Any] = {
        "name": "moe",
        "role": "routed",
        "layers": list(range(count)),
        "hidden_size": hidden_size,
        "moe_intermediate_size": moe_intermediate_size,
        "num_experts": num_experts,
        "top_k": top_k,
        "num_shared_experts": num_shared_experts,
        "weight_format": weight_format,
        "weight_block": weight_block,
        "weight_scale_format": weight_scale_format,
        "weight_global_scale": weight_global_scale,
        "shared_expert_format": shared_expert_format,
        "shared_expert_width": shared_expert_width,
        "routing": routing,
    }
    for key, value in (("activation", act), ("expert_bias", expert_bias), ("shared_expert_gate", shared_expert_gate)):
        if value is not None:
            group[key] = value
    built = read_group(ctx, group, 0, set())
    if not isinstance(model, str) or not model:
        raise ctx.error("model", model, "expected a non-empty string")
    return ModelDescription(
        model=model,
        architecture="manual",
        model_type="",
        family="manual",
        layer_groups=(built,),
        num_hidden_layers=None,
        source="manual flags",
        assumptions=tuple(assumed(ctx, group, "layer_groups[0]")),
    )


__all__ = [
    "activation_from_spec",
    "load_manual_description",
    "manual_from_dict",
    "manual_from_flags",
]
