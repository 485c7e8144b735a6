"""FP32 reference MoE and the error metrics used against it.

The reference is "FP32 math on the dequantized input and weights, with no intermediate
quantization" (h200.md §3, the ``FP32 ref``): per routed (token, slot) pair
``y += w * W2 @ act(W13 @ x)`` in fp32, ids ``-1`` skipped. ``hidden_states`` is used as given
(pass the dequantized staged input to isolate the kernel's own error, or the BF16 input to include
the activation quantization, as ``moe-oracle accuracy`` does).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from moe_oracle.model.types import Activation
from moe_oracle.runtime.interface import CheckpointExperts

ExpertWeights = Callable[[int], tuple[torch.Tensor, torch.Tensor]]


def swiglu(h: torch.Tensor, activation: Activation) -> torch.Tensor:
    """``[M, 2I]`` (gate columns first) -> ``[M, I]``: ``g * sigmoid(alpha g) * (u + beta)``,
    with ``g = min(gate, L)`` and ``u = clamp(up, -L, L)`` when the activation has a clamp ``L``."""
    i = h.shape[-1] // 2
    gate, up = h[..., :i], h[..., i:]
    if activation.clamp is not None:
        lim = float(activation.clamp)
        gate = gate.clamp(max=lim)
        up = up.clamp(min=-lim, max=lim)
    sig_in = gate if activation.alpha == 1.0 else gate * activation.alpha
    out = gate * torch.sigmoid(sig_in)
    if activation.beta != 0.0:
        up = up + activation.beta
    return out * up


def _weight_source(weights: CheckpointExperts | tuple[torch.Tensor, torch.Tensor] | ExpertWeights) -> ExpertWeights:
    if isinstance(weights, CheckpointExperts):
        from moe_oracle.runtime.quantize import dequantize_expert

        return lambda e: dequantize_expert(weights, e)
    if isinstance(weights, tuple):
        w13, w2 = weights
        return lambda e: (w13[e].float(), w2[e].float())
    return weights


def reference_moe(
    hidden_states: torch.Tensor,
    topk_ids: torch.Tensor,
    topk_weights: torch.Tensor,
    weights: CheckpointExperts | tuple[torch.Tensor, torch.Tensor] | ExpertWeights,
    activation: Activation,
    *,
    num_local_experts: int | None = None,
    first_expert: int = 0,
) -> torch.Tensor:
    """FP32 MoE output ``[T, H]`` (not rounded) for this rank's experts.

    ``weights``: checkpoint experts (dequantized expert by expert), fp32 ``(w13 [E,2I,H], w2
    [E,H,I])``, or a function ``e -> (w13_e, w2_e)``. Only experts ``first_expert ..
    first_expert + num_local_experts - 1`` contribute (the rank's slice); ids ``-1`` are skipped.
    """
    source = _weight_source(weights)
    if num_local_experts is None:
        if isinstance(weights, CheckpointExperts):
            num_local_experts = weights.num_experts
            first_expert = weights.first_expert
        elif isinstance(weights, tuple):
            num_local_experts = int(weights[0].shape[0])
        else:
            raise ValueError("num_local_experts is required with a weight function")
    x = hidden_states.float()
    t, h = x.shape
    ids = topk_ids.to(torch.int64)
    w = topk_weights.float()
    y = torch.zeros(t, h, dtype=torch.float32, device=x.device)
    local = ids - first_expert
    valid = (ids >= 0) & (local >= 0) & (local < num_local_experts)
    hit = torch.unique(local[valid]).tolist()
    for e in hit:
        rows, slots = torch.nonzero(valid & (local == e), as_tuple=True)
        w13_e, w2_e = source(int(e))
        w13_e, w2_e = w13_e.to(x.device), w2_e.to(x.device)
        act = swiglu(x[rows] @ w13_e.t(), activation)
        out = (act @ w2_e.t()) * w[rows, slots].unsqueeze(1)
        y.index_add_(0, rows, out)
    return y


def calc_diff(x: torch.Tensor, y: torch.Tensor) -> float:
    """DeepGEMM's ``calc_diff``: ``1 - 2 sum(x y) / sum(x^2 + y^2)`` (in float64); 0 when both are 0."""
    x, y = x.double(), y.double()
    denom = (x * x + y * y).sum()
    if float(denom) == 0.0:
        return 0.0
    return float(1.0 - 2.0 * (x * y).sum() / denom)


def rel_l2(x: torch.Tensor, ref: torch.Tensor) -> float:
    """``||x - ref|| / ||ref||`` in float64 (the AITER test's relL2); 0 when both are 0."""
    x, ref = x.double(), ref.double()
    num = torch.linalg.vector_norm(x - ref)
    den = torch.linalg.vector_norm(ref)
    if float(den) == 0.0:
        return 0.0 if float(num) == 0.0 else float("inf")
    return float(num / den)
