"""vLLM's MoE parameters -> moe-oracle's runtime: the engine-neutral :mod:`moe_oracle.engines.bridge` under the
names vLLM's plug-in, its tests and ``benchmarks/engine_bridge.py`` have used (vLLM 0.33's parameter layouts)."""

from __future__ import annotations

from moe_oracle.engines.bridge import (
    PARAMS,
    LayerPlan,
    MegaMoEBridge,
    build_plan_layer,
    check_parameters,
    checkpoint_experts,
    vllm_parameter_shapes,
)

__all__ = [
    "PARAMS",
    "LayerPlan",
    "MegaMoEBridge",
    "build_plan_layer",
    "check_parameters",
    "checkpoint_experts",
    "vllm_parameter_shapes",
]
