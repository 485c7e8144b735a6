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
group, scaling factor 1.0).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from moe_oracle.errors import ModelConfigError
from moe_oracle.jsonfile import path_problem
from moe_oracle.model.adapters._engine import order_groups
from moe_oracle.model.adapters._view import check_int, decimal_int, decimal_number, is_number, json_type, show
from moe_oracle.model.description_json import ACTIVATION_KEYS, GROUP_KEYS, ROUTING_KEYS, TOP_LEVEL_KEYS
from moe_oracle.model.loader import read_json_file
from moe_oracle.model.types import (
    MAX_EXPERTS,
    MAX_HIDDEN_SIZE,
    MAX_INTERMEDIATE_SIZE,
    MAX_LAYERS,
    MAX_TOP_K,
    ROLE_GROUP_NAMES,
    Activation,
    ActivationKind,
    ModelDescription,
    MoELayerGroup,
    QuantSpec,
    Routing,
    ScaleFormat,
    Scoring,
    WeightFormat,
)

#: The model name of a manual description that gives none (it names no checkpoint).
MANUAL_MODEL_NAME = "manual"

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
_FIX = "see the `moe-oracle model --json` output of a preset for the expected shape"


class _Ctx:
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
            fix="correct the flag value" if self.flags else _FIX,
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
    ctx: _Ctx,
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


def _routing(ctx: _Ctx, data: dict, path: str) -> Routing:
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


def _activation(ctx: _Ctx, data: object, path: str) -> Activation:
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


def _group(ctx: _Ctx, data: object, index: int, used_names: set[str]) -> MoELayerGroup:
    path = f"layer_groups[{index}]"
    if not isinstance(data, dict):
        raise ctx.error(path, data, f"a JSON {json_type(data)}, expected an object")
    unknown = sorted(set(data) - set(GROUP_KEYS))
    if unknown:
        raise ctx.error(f"{path}.{unknown[0]}", data[unknown[0]], "unknown key; expected " + ", ".join(GROUP_KEYS))
    for key in ("layers", "hidden_size", "moe_intermediate_size", "num_experts", "top_k", "weight_format"):
        if data.get(key) is None:
            raise ModelConfigError(f"{ctx.where}: {path}.{key} is missing", fix=_FIX)
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
        raise _validation(ctx, exc, path) from None


def _validation(ctx: _Ctx, exc: ValidationError, path: str) -> ModelConfigError:
    errors = exc.errors()
    parts, msg, value = (errors[0]["loc"], errors[0]["msg"], errors[0].get("input")) if errors else ((), str(exc), None)
    loc = ".".join(str(p) for p in parts)
    where = f"{path}.{loc}" if loc else path
    return ModelConfigError(
        f"{ctx.where}: {ctx.name(where)} is invalid: {msg} (value {show(value)})",
        fix=_FIX,
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


def _assumed(ctx: _Ctx, data: dict, path: str) -> list[str]:
    """One line per left-out key of :data:`_ASSUMED`: what the description assumed instead."""
    out = []
    for container, key, meaning in _ASSUMED:
        holder = data.get(container) if container else data
        if isinstance(holder, dict) and holder.get(key) is not None:
            continue
        where = ctx.name(f"{path}.{container}.{key}" if container else f"{path}.{key}")
        out.append(f"{where} not given: {meaning} assumed")
    return out


def _text(ctx: _Ctx, data: dict, key: str, default: str) -> str:
    value = data.get(key, default)
    if value is None:
        return default
    if not isinstance(value, str):
        raise ctx.error(key, value, f"a JSON {json_type(value)}, expected a string")
    return value


def manual_from_dict(data: object, *, where: str = "manual description") -> ModelDescription:
    """Build a description from a dict shaped like ``moe-oracle model --json`` output."""
    ctx = _Ctx(where, flags=False)
    if not isinstance(data, dict):
        raise ModelConfigError(f"{where}: the top level is a JSON {json_type(data)}; expected an object", fix=_FIX)
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
        group = _group(ctx, group_data, index, used)
        used.add(group.name)
        groups.append(group)
        assumptions += _assumed(ctx, group_data, f"layer_groups[{index}]")
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
        raise _validation(ctx, exc, "layer_groups") from None


def _given_assumptions(ctx: _Ctx, value: object) -> list[str]:
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
        raise ModelConfigError(f"manual description {file} does not exist or is not a file", fix=_FIX)
    return manual_from_dict(read_json_file(file), where=str(file))


def activation_from_spec(text: object, *, where: str = "manual flags") -> dict[str, Any]:
    """``--activation`` value -> the manual JSON ``activation`` object.

    ``swiglu``; ``swiglu-clamp:L`` (DeepSeek V4 style pre-activation clamp); ``swigluoai:ALPHA,LIMIT``
    (gpt-oss: ``alpha`` sharpness, beta 1, clamp ``LIMIT``; ``swigluoai`` alone = 1.702,7); ``gelu`` (gated
    GELU); ``relu2`` (squared ReLU, not gated). Errors name ``--activation``.
    """
    ctx = _Ctx(where, flags=True)
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
    ctx = _Ctx("manual flags", flags=True)
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
    built = _group(ctx, group, 0, set())
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
        assumptions=tuple(_assumed(ctx, group, "layer_groups[0]")),
    )


__all__ = [
    "FORMAT_DEFAULTS",
    "activation_from_spec",
    "load_manual_description",
    "manual_from_dict",
    "manual_from_flags",
]
