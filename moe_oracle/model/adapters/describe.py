"""Describe a config with a family's rules: the work shared by every family adapter.

An adapter is a :class:`FamilyRules` (defaults and quirks of one model family, taken from the
reference notes, :mod:`._family_rules`) run through :func:`describe_with_rules`:

1. read the MoE shape (hidden size, expert width, experts, top-k, shared experts);
2. lay out the layers (1 and 2: :mod:`._layers`): the main-model schedule (``mlp_layer_types``, else
   ``first_k_dense_replace`` + ``moe_layer_freq``, else every layer), hash-routed layers, MTP
   layers after the last decoder layer, DeepSeek DSpark draft layers;
3. resolve each layer's routed- and shared-expert weight format (:mod:`._quant`);
4. build routing and activation;
5. group layers (:mod:`._grouping`) by role, then by everything a backend decision depends on, name the groups
   and put the main (most numerous) group first.
"""

from __future__ import annotations

from typing import Any

from moe_oracle.model.adapters import _keys as keys
from moe_oracle.model.adapters._attention import read_attention
from moe_oracle.model.adapters._family_rules import FamilyRules
from moe_oracle.model.adapters._footprint import describe_footprint
from moe_oracle.model.adapters._grouping import group_layers
from moe_oracle.model.adapters._layers import Layer, Shape, extra_layers, main_schedule, read_shape, site
from moe_oracle.model.adapters._quant import QuantResolver
from moe_oracle.model.adapters._view import ConfigView
from moe_oracle.model.types import (
    MAX_EXPERTS,
    MAX_LAYERS,
    Activation,
    ActivationKind,
    ModelDescription,
    Routing,
    Scoring,
)

MAX_SCALING_FACTOR = 1e4
MAX_SWIGLU_LIMIT = 1e6


def _scoring(view: ConfigView, rules: FamilyRules) -> Scoring:
    if rules.forced_scoring is not None:
        return rules.forced_scoring
    value = view.get_choice(
        rules.scoring_keys, [s.value for s in Scoring], default=rules.default_scoring.value, what="router scoring"
    )
    return Scoring(value)


def _routing(view: ConfigView, rules: FamilyRules, shape: Shape) -> tuple[Routing, Routing]:
    """Routing of score layers and of hash layers."""
    scoring = _scoring(view, rules)
    if rules.bias == "always":
        bias = True
    elif rules.bias == "never":
        bias = False
    elif rules.bias == "key":
        bias = view.get_bool(rules.bias_keys, default=False, what="score-correction bias")
    else:
        method = view.get_str("topk_method", default=rules.default_topk_method, what="expert selection")
        bias = method == "noaux_tc"
    if rules.forced_renormalize is not None:
        renormalize = rules.forced_renormalize
    else:
        renormalize = view.get_bool(rules.renorm_keys, default=rules.default_renormalize, what="renormalize")
    groups = view.get_int(rules.group_keys, lo=1, hi=MAX_EXPERTS, default=1, what="expert groups")
    topk_groups = view.get_int("topk_group", lo=1, hi=MAX_EXPERTS, default=1, what="groups chosen per token")
    if topk_groups > groups:
        raise view.error(
            view.lookup("topk_group")[0],  # type: ignore[index]
            topk_groups,
            f"topk_group {topk_groups} exceeds n_group={groups}",
        )
    if groups > 1 and shape.num_experts % groups:
        raise view.error(
            view.lookup(rules.group_keys)[0],  # type: ignore[index]
            groups,
            f"n_routed_experts={shape.num_experts} is not divisible by n_group={groups}",
        )
    scale = view.get_float(rules.scaling_keys, gt=0.0, hi=MAX_SCALING_FACTOR, default=1.0, what="routed scaling factor")
    score = Routing(
        scoring=scoring,
        hash=False,
        correction_bias=bias,
        renormalize=renormalize,
        num_groups=groups,
        topk_groups=topk_groups,
        routed_scaling_factor=scale,
        weight_on_input=rules.weight_on_input
        or (bool(rules.weight_on_input_keys) and view.get_bool(rules.weight_on_input_keys, default=False)),
    )
    hashed = score.model_copy(update={"hash": True, "correction_bias": False})
    return score, hashed


def _activation(view: ConfigView, rules: FamilyRules) -> Activation:
    act = view.lookup(rules.act_keys)
    kind = ActivationKind.SWIGLU
    if act is not None and act[1] != "silu":
        kind_name = keys.ACTIVATIONS.get(act[1]) if isinstance(act[1], str) else None
        if kind_name is None or act[1] not in rules.activations:
            allowed = ", ".join(rules.activations)
            raise view.error(
                act[0],
                act[1],
                f"the oracle describes {rules.family} experts with {allowed} (SwiGLU for silu)",
                fix="describe the model manually (--activation)",
            )
        kind = ActivationKind(kind_name)
    if kind is ActivationKind.SITU:
        alpha = view.get_float(keys.SITU_ALPHA, gt=0.0, hi=1e3, default=1.0, what="SiTU tanh scale")
        beta = view.get_float(keys.SITU_BETA, gt=0.0, hi=1e3, default=1.0, what="SiTU linear scale")
        return Activation(kind=kind, alpha=alpha, beta=beta)
    if rules.swigluoai_keys and kind is ActivationKind.SWIGLU and act is not None and act[1] == "swigluoai":
        alpha = view.get_float("swiglu_alpha", gt=0.0, hi=1e3, default=keys.SWIGLUOAI_ALPHA, what="swigluoai alpha")
        beta = view.get_float("swiglu_beta", gt=-1e3, hi=1e3, default=1.0, what="swigluoai beta (up + beta)")
        limit = view.get_float("swiglu_limit", gt=0.0, hi=MAX_SWIGLU_LIMIT, default=7.0, what="swigluoai clamp")
        return Activation(kind=kind, clamp=limit, alpha=alpha, beta=beta)
    if rules.swigluoai:
        limit = view.get_float(
            "swiglu_limit", gt=0.0, hi=MAX_SWIGLU_LIMIT, default=7.0, what="swigluoai clamp; gpt-oss uses 7.0"
        )
        return Activation(clamp=limit, alpha=keys.SWIGLUOAI_ALPHA, beta=1.0, interleaved=True)
    if rules.optional_clamp and view.has("swiglu_limit"):
        limit = view.get_float("swiglu_limit", gt=0.0, hi=MAX_SWIGLU_LIMIT, what="SwiGLU pre-activation clamp")
        return Activation(kind=kind, clamp=limit)
    if not rules.clamp:
        return Activation(kind=kind)
    limit = view.get_float(
        "swiglu_limit", gt=0.0, hi=MAX_SWIGLU_LIMIT, what="SwiGLU pre-activation clamp; DeepSeek V4 uses 10.0"
    )
    return Activation(kind=kind, clamp=limit)


def describe_with_rules(
    config: dict,
    hf_quant_config: Any,
    rules: FamilyRules,
    *,
    model_id: str,
    source: str,
) -> ModelDescription:
    view = ConfigView.of(config, model_id)
    if rules.check is not None:
        rules.check(view)
    n_layers = view.get_int("num_hidden_layers", lo=1, hi=MAX_LAYERS, what="decoder layers")
    shape = read_shape(view, rules)
    main = main_schedule(view, rules, n_layers)
    layers = [Layer(i, role, shape.num_experts, shape.top_k, site(rules, role, i, n_layers)) for i, role in main]
    layers += extra_layers(view, rules, shape, n_layers)
    score_routing, hash_routing = _routing(view, rules, shape)
    activation = _activation(view, rules)
    resolver = QuantResolver(view, hf_quant_config, expert_dtype_required=rules.expert_dtype_required)

    rows = []
    for layer in layers:
        rows.append(
            {
                "index": layer.index,
                "role": layer.role,
                "hidden_size": shape.hidden_size,
                "moe_intermediate_size": shape.moe_intermediate_size,
                "num_experts": layer.num_experts,
                "top_k": layer.top_k,
                "num_shared_experts": shape.num_shared_experts,
                "weight_quant": resolver.routed(layer.site),
                "shared_expert_quant": resolver.shared(layer.site) if shape.num_shared_experts else None,
                "activation": activation,
                "routing": hash_routing if layer.role == "hash" else score_routing,
                "shared_expert_width": shape.shared_width,
                "shared_expert_gate": shape.shared_gate,
                "expert_bias": rules.expert_bias,
            }
        )

    architecture, model_type = _identity(config, rules)
    desc = ModelDescription(
        model=model_id,
        architecture=architecture,
        model_type=model_type,
        family=rules.family,
        layer_groups=group_layers(rows),
        num_hidden_layers=n_layers,
        source=source,
        assumptions=rules.implied,
    )
    footprint = describe_footprint(config, hf_quant_config, desc, resolver)
    update: dict[str, Any] = {"attention": read_attention(config)}
    if footprint is not None:
        update["footprint"] = footprint
    return desc.model_copy(update=update)


def _identity(config: dict, rules: FamilyRules) -> tuple[str, str]:
    archs = config.get("architectures")
    architecture = archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else ""
    model_type = config.get("model_type")
    return architecture or rules.architecture, model_type if isinstance(model_type, str) else ""
