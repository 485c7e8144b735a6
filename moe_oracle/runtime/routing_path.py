"""Which path ``MegaMoELayer.forward_logits`` takes from router logits to the kernel, and why.

``FUSED``: one Triton launch routes and stages (:mod:`moe_oracle.kernels.router_triton`), then the mega
kernel; bit for bit what the fallback computes. Every other value is a fallback, ``route()`` then the
layer's ``forward`` (its own staging), with the reason it names.
"""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

    from moe_oracle.model.types import MoELayerGroup
    from moe_oracle.runtime.staging import StagingSpec

#: staging recipes the fused router writes (the SM90 DeepGEMM recipe, measured on the H200)
FUSED_RECIPES = ("fp8_g128",)


class RoutingPath(str, Enum):
    FUSED = "fused"
    #: the layer has no fused router (emulation twin, non-DeepGEMM backends)
    FALLBACK_BACKEND = "fallback_backend"
    #: hash-routed layer: experts come from a token-id table, not from the logits
    FALLBACK_HASH = "fallback_hash"
    #: tensors not on a CUDA device, or Triton not installed
    FALLBACK_CPU = "fallback_cpu"
    #: the variant's staging is not one the fused router writes (``FUSED_RECIPES``)
    FALLBACK_STAGING = "fallback_staging"
    #: experts, top-k, groups or hidden size outside the kernel's limits
    FALLBACK_SHAPE = "fallback_shape"


def _router_module() -> Any:
    try:
        from moe_oracle.kernels import router_triton
    except Exception:  # no Triton (CPU builds): the fallback serves
        return None
    return router_triton


def fused_routing_path(
    group: MoELayerGroup,
    staging: StagingSpec,
    hidden_states: torch.Tensor,
    logits: torch.Tensor,
    bias: torch.Tensor | None = None,
) -> RoutingPath:
    """The path for these inputs on a layer that stages with ``staging`` (``FUSED`` or the fallback's reason)."""
    if group.routing.hash:
        return RoutingPath.FALLBACK_HASH
    if not (hidden_states.is_cuda and logits.is_cuda and (bias is None or bias.is_cuda)):
        return RoutingPath.FALLBACK_CPU
    if staging.triton_recipe not in FUSED_RECIPES:
        return RoutingPath.FALLBACK_STAGING
    mod = _router_module()
    if mod is None:
        return RoutingPath.FALLBACK_CPU
    if (
        mod.unsupported(group.routing, group.num_experts, group.top_k) is not None
        or not staging.uses_triton(hidden_states)
        or logits.dim() != 2
        or logits.shape != (hidden_states.shape[0], group.num_experts)
        or (logits.shape[0] > 1 and logits.stride(1) != 1)
        or (bias is not None and (bias.dim() != 1 or bias.shape[0] != group.num_experts))
    ):
        return RoutingPath.FALLBACK_SHAPE
    return RoutingPath.FUSED
