"""Reading one manual layer group, for both ways in (:mod:`.manual`): a JSON object shaped like one entry of
``moe-oracle model --json``'s ``layer_groups``, or the CLI flags' values, validated with one-line
:class:`~moe_oracle.errors.ModelConfigError` messages that name the JSON path or the flag (:class:`Ctx`).

Defaults when a field is left out: role ``routed``, no shared experts, plain SwiGLU, and DeepSeek-V3-style routing
(sigmoid scores, noaux_tc correction bias, renormalised, one expert group, scaling factor 1.0); :func:`assumed`
says which of them a group took.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TypeVar

from pydantic import ValidationError

from moe_oracle.errors import ModelConfigError
from moe_oracle.model.adapters._view import check_int, decimal_int, decimal_number, is_number, json_type, show
from moe_oracle.model.description_json import ACTIVATION_KEYS, GROUP_KEYS, ROUTING_KEYS
from moe_oracle.model.types import (
    MAX_EXPERTS,
    MAX_HIDDEN_SIZE,
    MAX_INTERMEDIATE_SIZE,
    MAX_LAYERS,
    MAX_TOP_K,
    ROLE_GROUP_NAMES,
    Activation,
    ActivationKind,
    MoELayerGroup,
    QuantSpec,
    Routing,
    ScaleFormat,
    Scoring,
    WeightFormat,
)

#: Usual (block, scale format, global scale) of each weight format.
FORMAT_DEFAULTS: dict[WeightFormat, tuple[tuple[int, int] | None, ScaleFormat, bool]] = {
    WeightFormat.BF16: (None, ScaleFormat.NONE, False),
    WeightFormat.FP8_BLOCK: ((128, 128), ScaleFormat.FP32, False),
    WeightFormat.FP8_CHANNEL: (None, ScaleFormat.FP32, False),
    WeightFormat.MXFP4: ((1, 32), ScaleFormat.UE8M0, False),
    WeightFormat.MXFP8: ((1, 32), ScaleFormat.UE8M0, False),
    WeightFormat.NVFP4: ((1, 16), ScaleFormat.E4M3, True),
    WeightFormat.INT4: ((1, 128), ScaleFormat.BF16, False),
    WeightFormat.INT8: (None, ScaleFormat.BF16, False),
}

_Choice = TypeVar("_Choice", bound=str)
FIX = "see the `moe-oracle model --json` output of a preset for the expected shape"


class Ctx:
    """Where values come from, for error messages (a JSON file or CLI flags)."""

    def __init__(self, where: str, *, flags: bool) -> None:
        self.where = where
        self.flags = flags

    def name(self, path: str) -> str:
        if not self.flags:
            return path
        leaf = path.rsplit(".", 1)[-1].split("[", 1)[0]
        leaf = {
            "clamp": "swiglu_clamp",
            "layers": "num_layers",
            "weight_on_input": "router_weight_on_input",
            "kind": "activation",
            "alpha": "activation",
            "beta": "activation",
        }.get(leaf, leaf)
        return "--" + leaf.replace("_", "-")

    def error(self, path: str, value: object, expected: str) -> ModelConfigError:
        return ModelConfigError(
            f"{self.where}: {self.name(path)}={show(value)} is invalid: {expected}",
            fix="correct the flag value" if self.flags else FIX,
        )

    def int(self, value: object, path: str, lo: int, hi: int, what: str = "") -> int:
        if self.flags and isinstance(value, str):
            parsed = decimal_int(value)
            if parsed is None:
                raise self.error(path, value, f"expected an integer in {lo}..{hi} (ASCII digits)")
            value = parsed
        return check_int(value, path=self.name(path), lo=lo, hi=hi, what=what, model_id=self.where)

    def number(self, value: object, path: str, *, hi: float) -> float:
        if self.flags and isinstance(value, str):
            parsed = decimal_number(value)
            if parsed is None:
                raise self.error(path, value, "expected a decimal number (ASCII digits)")
            value = parsed
        if not is_number(value) or not math.isfinite(float(value)) or not 0 < float(value) <= hi:
            raise self.error(path, value, f"expected a finite number > 0 and <= {hi:g}")
        return float(value)

    def bool(self, value: object, path: str) -> bool:
        if self.flags and isinstance(value, str) and value.lower() in ("true", "false", "1", "0", "yes", "no"):
            return value.lower() in ("true", "1", "yes")
        if not isinstance(value, bool):
            raise self.error(path, value, f"a JSON {json_type(value)}, expected true or false")
        return value

    def choice(self, value: object, path: str, choices: Sequence[_Choice]) -> _Choice:
        """The entry of ``choices`` that ``value`` names (case-insensitively); a located error otherwise."""
        if isinstance(value, str):
            for choice in choices:
                if choice == value.lower():
                    return choice
        hint = " (say fp8_block for block scales or fp8_channel for per-row scales)" if value == "fp8" else ""
        raise self.error(path, value, "expected one of " + ", ".join(choices) + hint)


def _quant(
    ctx: Ctx,
    fmt_value: object,
    path: str,
    *,
    block: object = None,
    scale: object = None,
    global_scale: object = None,
    block_path: str = "weight_block",
    scale_path: str = "weight_scale_format",
    global_path: str = "weight_global_scale",
) -> QuantSpec:
    fmt = WeightFormat(ctx.choice(fmt_value, path, [f.value for f in WeightFormat]))
    default_block, default_scale, default_global = FORMAT_DEFAULTS[fmt]
    if block is None:
        block_value = default_block
    else:
        if isinstance(block, str) and ctx.flags:
            block = [part for part in block.replace("x", ",").split(",") if part.strip()]
        if not isinstance(block, (list, tuple)) or len(block) != 2:
            raise ctx.error(block_path, block, "expected [rows, cols] or null")
        block_value = (
            ctx.int(block[0], f"{block_path}[0]", 1, 4096),
            ctx.int(block[1], f"{block_path}[1]", 1, 4096),
        )
    scale_value = (
        default_scale if scale is None else ScaleFormat(ctx.choice(scale, scale_path, [s.value for s in ScaleFormat]))
    )
    global_value = default_global if global_scale is None else ctx.bool(global_scale, global_path)
    try:
        return QuantSpec(
            format=fmt,
            block=block_value,
            scale_format=scale_value,
            global_scale=global_value,
            source="manual",
        )
    except ValidationError as exc:
        message = exc.errors()[0].get("msg", str(exc))
        raise ctx.error(path, fmt_value, f"inconsistent weight layout: {message}") from None


def _routing(ctx: Ctx, data: dict, path: str) -> Routing:
    unknown = sorted(set(data) - set(ROUTING_KEYS))
    if unknown:
        raise ctx.error(f"{path}.{unknown[0]}", data[unknown[0]], "unknown key; expected " + ", ".join(ROUTING_KEYS))
    scoring = Scoring(ctx.choice(data.get("scoring", "sigmoid"), f"{path}.scoring", [s.value for s in Scoring]))
    groups = ctx.int(data.get("num_groups", 1), f"{path}.num_groups", 1, MAX_EXPERTS)
    topk_groups = ctx.int(data.get("topk_groups", 1), f"{path}.topk_groups", 1, MAX_EXPERTS)
    if topk_groups > groups:
        raise ctx.error(f"{path}.topk_groups", topk_groups, f"exceeds num_groups={groups}")
    return Routing(
        scoring=scoring,
        hash=ctx.bool(data.get("hash", False), f"{path}.hash"),
        correction_bias=ctx.bool(data.get("correction_bias", True), f"{path}.correction_bias"),
        renormalize=ctx.bool(data.get("renormalize", True), f"{path}.renormalize"),
        num_groups=groups,
        topk_groups=topk_groups,
        routed_scaling_factor=ctx.number(
            data.get("routed_scaling_factor", 1.0), f"{path}.routed_scaling_factor", hi=1e4
        ),
        weight_on_input=ctx.bool(data.get("weight_on_input", False), f"{path}.weight_on_input"),
    )


def _activation(ctx: Ctx, data: object, path: str) -> Activation:
    if data is None:
        return Activation()
    if not isinstance(data, dict):
        raise ctx.error(path, data, f"a JSON {json_type(data)}, expected an object {{kind, clamp, alpha, beta}}")
    unknown = sorted(set(data) - set(ACTIVATION_KEYS))
    if unknown:
        raise ctx.error(f"{path}.{unknown[0]}", data[unknown[0]], "unknown key; expected " + ", ".join(ACTIVATION_KEYS))
    kind = ActivationKind(ctx.choice(data.get("kind", "swiglu"), f"{path}.kind", [a.value for a in ActivationKind]))
    clamp = data.get("clamp")
    beta = data.get("beta", 0.0)
    if beta is None:
        beta = 0.0
    elif not is_number(beta) or not math.isfinite(float(beta)) or abs(float(beta)) > 1e3:
        raise ctx.error(f"{path}.beta", beta, "expected a finite number in -1000..1000")
    return Activation(
        kind=kind,
        clamp=None if clamp is None else ctx.number(clamp, f"{path}.clamp", hi=1e6),
        alpha=ctx.number(data.get("alpha", 1.0) if data.get("alpha") is not None else 1.0, f"{path}.alpha", hi=1e3),
        beta=float(beta),
        interleaved=ctx.bool(data.get("interleaved", False), f"{path}.interleaved"),
    )


def read_group(ctx: Ctx, data: object, index: int, used_names: set[str]) -> MoELayerGroup:
    path = f"layer_groups[{index}]"
    if not isinstance(data, dict):
        raise ctx.error(path, data, f"a JSON {json_type(data)}, expected an object")
    unknown = sorted(set(data) - set(GROUP_KEYS))
    if unknown:
        raise ctx.error(f"{path}.{unknown[0]}", data[unknown[0]], "unknown key; expected " + ", ".join(GROUP_KEYS))
    for key in ("layers", "hidden_size", "moe_intermediate_size", "num_experts", "top_k", "weight_format"):
        if data.get(key) is None:
            raise ModelConfigError(f"{ctx.where}: {path}.{key} is missing", fix=FIX)
    role = ctx.choice(data.get("role", "routed"), f"{path}.role", list(ROLE_GROUP_NAMES))
    name = data.get("name")
    if name is None:
        name = ROLE_GROUP_NAMES[role]
        stem, n = name, 2
        while name in used_names:
            name, n = f"{stem}_{n}", n + 1
    elif not isinstance(name, str) or not 1 <= len(name) <= 64:
        raise ctx.error(f"{path}.name", name, "expected a string of 1..64 characters")
    layers = data["layers"]
    if not isinstance(layers, list) or not layers:
        raise ctx.error(f"{path}.layers", layers, "expected a non-empty array of layer indices")
    layer_ids = tuple(ctx.int(v, f"{path}.layers[{i}]", 0, MAX_LAYERS - 1) for i, v in enumerate(layers))
    if len(set(layer_ids)) != len(layer_ids):
        raise ctx.error(f"{path}.layers", layers, "layer indices repeat")
    hidden = ctx.int(data["hidden_size"], f"{path}.hidden_size", 1, MAX_HIDDEN_SIZE)
    inter = ctx.int(data["moe_intermediate_size"], f"{path}.moe_intermediate_size", 1, MAX_INTERMEDIATE_SIZE)
    experts = ctx.int(data["num_experts"], f"{path}.num_experts", 1, MAX_EXPERTS)
    top_k = ctx.int(data["top_k"], f"{path}.top_k", 1, MAX_TOP_K)
    if top_k > experts:
        raise ctx.error(f"{path}.top_k", top_k, f"exceeds num_experts={experts}")
    shared = ctx.int(data.get("num_shared_experts", 0), f"{path}.num_shared_experts", 0, 64)
    quant = _quant(
        ctx,
        data["weight_format"],
        f"{path}.weight_format",
        block=data.get("weight_block"),
        scale=data.get("weight_scale_format"),
        global_scale=data.get("weight_global_scale"),
        block_path=f"{path}.weight_block",
        scale_path=f"{path}.weight_scale_format",
        global_path=f"{path}.weight_global_scale",
    )
    shared_format = data.get("shared_expert_format")
    shared_quant = None
    if shared_format is not None:
        if shared == 0:
            raise ctx.error(f"{path}.shared_expert_format", shared_format, "num_shared_experts is 0")
        shared_quant = _quant(ctx, shared_format, f"{path}.shared_expert_format")
    shared_width = data.get("shared_expert_width")
    if shared_width is not None:
        if shared == 0:
            raise ctx.error(f"{path}.shared_expert_width", shared_width, "num_shared_experts is 0")
        shared_width = ctx.int(shared_width, f"{path}.shared_expert_width", 1, MAX_INTERMEDIATE_SIZE)
        if shared_width == shared * inter:
            shared_width = None  # the default convention: num_shared_experts x I
    shared_gate = ctx.bool(data.get("shared_expert_gate", False), f"{path}.shared_expert_gate")
    if shared_gate and shared == 0:
        raise ctx.error(f"{path}.shared_expert_gate", shared_gate, "num_shared_experts is 0")
    routing_data = data.get("routing", {})
    if not isinstance(routing_data, dict):
        raise ctx.error(f"{path}.routing", routing_data, f"a JSON {json_type(routing_data)}, expected an object")
    routing = _routing(ctx, routing_data, f"{path}.routing")
    if routing.num_groups > 1 and experts % routing.num_groups:
        raise ctx.error(f"{path}.routing.num_groups", routing.num_groups, f"does not divide num_experts={experts}")
    if role == "hash" and not routing.hash:
        routing = routing.model_copy(update={"hash": True, "correction_bias": False})
    try:
        return MoELayerGroup(
            name=name,
            role=role,
            layers=layer_ids,
            hidden_size=hidden,
            moe_intermediate_size=inter,
            num_experts=experts,
            top_k=top_k,
            num_shared_experts=shared,
            shared_expert_quant=shared_quant,
            weight_quant=quant,
            activation=_activation(ctx, data.get("activation"), f"{path}.activation"),
            routing=routing,
            shared_expert_width=shared_width,
            shared_expert_gate=shared_gate,
            expert_bias=ctx.bool(data.get("expert_bias", False), f"{path}.expert_bias"),
        )
    except ValidationError as exc:
        raise validation_error(ctx, exc, path) from None


def validation_error(ctx: Ctx, exc: ValidationError, path: str) -> ModelConfigError:
    errors = exc.errors()
    parts, msg, value = (errors[0]["loc"], errors[0]["msg"], errors[0].get("input")) if errors else ((), str(exc), None)
    loc = ".".join(str(p) for p in parts)
    where = f"{path}.{loc}" if loc else path
    return ModelConfigError(
        f"{ctx.where}: {ctx.name(where)} is invalid: {msg} (value {show(value)})",
        fix=FIX,
    )


#: What a manual group assumes for each key it leaves out: (container, key, the assumption).
_ASSUMED: tuple[tuple[str | None, str, str], ...] = (
    ("routing", "scoring", "sigmoid router scores"),
    ("routing", "correction_bias", "a score-correction bias (noaux_tc)"),
    ("routing", "renormalize", "top-k weights renormalized"),
    ("routing", "weight_on_input", "the routing weight scales the expert output (not its input)"),
    (None, "activation", "plain SwiGLU experts (no clamp, alpha 1, beta 0)"),
    (None, "expert_bias", "no expert biases"),
)


def assumed(ctx: Ctx, data: dict, path: str) -> list[str]:
    """One line per left-out key of :data:`_ASSUMED`: what the description assumed instead."""
    out = []
    for container, key, meaning in _ASSUMED:
        holder = data.get(container) if container else data
        if isinstance(holder, dict) and holder.get(key) is not None:
            continue
        where = ctx.name(f"{path}.{container}.{key}" if container else f"{path}.{key}")
        out.append(f"{where} not given: {meaning} assumed")
    return out
