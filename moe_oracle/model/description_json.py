"""Render a :class:`ModelDescription` as the ``moe-oracle model --json`` contract or as text.

The JSON shape is a contract other code relies on (and :mod:`moe_oracle.model.manual` reads
back)::

    {"model", "architecture", "model_type", "family", "source",
     "layer_groups": [{"name", "role", "layers", "hidden_size", "moe_intermediate_size",
                       "num_experts", "top_k", "num_shared_experts", "weight_format",
                       "weight_block", "weight_scale_format", "weight_global_scale",
                       "shared_expert_format", "shared_expert_width", "shared_expert_gate",
                       "expert_bias",
                       "activation": {"kind", "clamp", "alpha", "beta", "interleaved"},
                       "routing": {"scoring", "hash", "correction_bias", "renormalize",
                                   "num_groups", "topk_groups", "routed_scaling_factor",
                                   "weight_on_input"}}],
     "assumptions": [...]}

The first group is the main one.
"""

from __future__ import annotations

from typing import Any

from moe_oracle.model.types import ModelDescription, MoELayerGroup

TOP_LEVEL_KEYS = ("model", "architecture", "model_type", "family", "source", "layer_groups", "assumptions")
GROUP_KEYS = (
    "name",
    "role",
    "layers",
    "hidden_size",
    "moe_intermediate_size",
    "num_experts",
    "top_k",
    "num_shared_experts",
    "weight_format",
    "weight_block",
    "weight_scale_format",
    "weight_global_scale",
    "shared_expert_format",
    "shared_expert_width",
    "shared_expert_gate",
    "expert_bias",
    "activation",
    "routing",
)
ACTIVATION_KEYS = ("kind", "clamp", "alpha", "beta", "interleaved")
ROUTING_KEYS = (
    "scoring",
    "hash",
    "correction_bias",
    "renormalize",
    "num_groups",
    "topk_groups",
    "routed_scaling_factor",
    "weight_on_input",
)


def group_to_json(group: MoELayerGroup) -> dict[str, Any]:
    quant = group.weight_quant
    routing = group.routing
    return {
        "name": group.name,
        "role": group.role,
        "layers": list(group.layers),
        "hidden_size": group.hidden_size,
        "moe_intermediate_size": group.moe_intermediate_size,
        "num_experts": group.num_experts,
        "top_k": group.top_k,
        "num_shared_experts": group.num_shared_experts,
        "weight_format": quant.format.value,
        "weight_block": list(quant.block) if quant.block is not None else None,
        "weight_scale_format": quant.scale_format.value,
        "weight_global_scale": quant.global_scale,
        "shared_expert_format": (
            group.shared_expert_quant.format.value if group.shared_expert_quant is not None else None
        ),
        "shared_expert_width": group.shared_intermediate_size if group.num_shared_experts else None,
        "shared_expert_gate": group.shared_expert_gate,
        "expert_bias": group.expert_bias,
        "activation": {
            "kind": group.activation.kind.value,
            "clamp": group.activation.clamp,
            "alpha": group.activation.alpha,
            "beta": group.activation.beta,
            "interleaved": group.activation.interleaved,
        },
        "routing": {
            "scoring": routing.scoring.value,
            "hash": routing.hash,
            "correction_bias": routing.correction_bias,
            "renormalize": routing.renormalize,
            "num_groups": routing.num_groups,
            "topk_groups": routing.topk_groups,
            "routed_scaling_factor": routing.routed_scaling_factor,
            "weight_on_input": routing.weight_on_input,
        },
    }


def description_to_json(desc: ModelDescription) -> dict[str, Any]:
    """The ``moe-oracle model --json`` object for ``desc`` (plain JSON types only)."""
    return {
        "model": desc.model,
        "architecture": desc.architecture,
        "model_type": desc.model_type,
        "family": desc.family,
        "source": desc.source,
        "layer_groups": [group_to_json(g) for g in desc.layer_groups],
        "assumptions": list(desc.assumptions),
    }
