"""One runtime interface for every backend variant: prepare expert weights, run a MoE layer.

Importing this package does not import torch; the modules that compute do (``build_layer``,
``route``, ``EmulatedMegaMoE``, ... are resolved lazily on first access).
"""

from __future__ import annotations

from typing import Any

from moe_oracle.rules.recipe import ActQuant, Recipe

_LAZY = {
    "build_layer": "moe_oracle.runtime.build",
    "build_layer_for_decision": "moe_oracle.runtime.build",
    "layer_config_for": "moe_oracle.runtime.build",
    "resolve_variant": "moe_oracle.runtime.build",
    "CheckpointExperts": "moe_oracle.runtime.interface",
    "LayerConfig": "moe_oracle.runtime.interface",
    "MegaMoELayer": "moe_oracle.runtime.interface",
    "EmulatedMegaMoE": "moe_oracle.runtime.emulation",
    "route": "moe_oracle.runtime.routing",
    "RoutingPath": "moe_oracle.runtime.routing_path",
    "reference_moe": "moe_oracle.runtime.reference",
    "reference_moe_block": "moe_oracle.runtime.reference",
    "shared_expert_reference": "moe_oracle.runtime.reference",
    "calc_diff": "moe_oracle.runtime.reference",
    "rel_l2": "moe_oracle.runtime.reference",
    "BackendUnavailableError": "moe_oracle.runtime.errors",
}

__all__ = ["ActQuant", "Recipe", *_LAZY]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'moe_oracle.runtime' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
