"""FP32 reference MoE and the error metrics used against it.

The reference is "FP32 math on the dequantized input and weights, with no intermediate
quantization" (docs/performance.md, the ``FP32 ref``): per routed (token, slot) pair
``y += w * W2 @ act(W13 @ x)`` in fp32, ids ``-1`` skipped. ``hidden_states`` is used as given
(pass the dequantized staged input to isolate the kernel's own error, or the BF16 input to include
the activation quantization, as ``moe-oracle accuracy`` does).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from moe_oracle.errors import BadInputError
from moe_oracle.model.types import Activation, ActivationKind, MoELayerGroup
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


def activate(h: torch.Tensor, activation: Activation) -> torch.Tensor:
    """The expert activation of ``[M, 2I]`` gate-then-up columns: SwiGLU (:func:`swiglu`) or gated GELU (tanh).

    Kinds no reference implements here (ReLU², SiTU) raise one line: their experts are not gated the same way.
    """
    if activation.kind is ActivationKind.SWIGLU:
        return swiglu(h, activation)
    if activation.kind is ActivationKind.GELU:
        i = h.shape[-1] // 2
        return torch.nn.functional.gelu(h[..., :i], approximate="tanh") * h[..., i:]
    raise BadInputError(f"the FP32 reference has no {activation.kind.value} activation (SwiGLU and gated GELU only)")


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
        act = activate(x[rows] @ w13_e.t(), activation)
        out = (act @ w2_e.t()) * w[rows, slots].unsqueeze(1)
        y.index_add_(0, rows, out)
    return y


def shared_expert_reference(
    hidden_states: torch.Tensor,
    w13: torch.Tensor,
    w2: torch.Tensor,
    activation: Activation,
    gate_weight: torch.Tensor | None = None,
) -> torch.Tensor:
    """FP32 shared-expert output ``[T, H]``: ``act(x @ w13^T) @ w2^T``, scaled per token by
    ``sigmoid(x @ gate_weight^T)`` when the group's shared expert is gated (Qwen2-MoE / Qwen3-Next / Qwen3.5:
    ``shared_expert_gate`` is a ``[1, H]`` linear). ``w13``: ``[2S, H]`` (gate rows first), ``w2``: ``[H, S]``."""
    x = hidden_states.float()
    out = activate(x @ w13.float().t(), activation) @ w2.float().t()
    if gate_weight is not None:
        out = out * torch.sigmoid(x @ gate_weight.float().reshape(1, -1).t())
    return out


def reference_moe_block(
    group: MoELayerGroup,
    hidden_states: torch.Tensor,
    topk_ids: torch.Tensor,
    topk_weights: torch.Tensor,
    weights: CheckpointExperts | tuple[torch.Tensor, torch.Tensor] | ExpertWeights,
    shared: tuple[torch.Tensor, torch.Tensor] | None = None,
    shared_gate: torch.Tensor | None = None,
) -> torch.Tensor:
    """FP32 output of a whole MoE block ``[T, H]``: the routed experts plus the shared expert(s), gated when the
    group says so (``shared_gate`` is then required; it is refused for an ungated group).

    A mega-MoE layer computes the routed part only; an engine adds the shared part outside the kernel,
    which is what this reference composes.
    """
    y = reference_moe(hidden_states, topk_ids, topk_weights, weights, group.activation)
    if group.num_shared_experts == 0:
        if shared is not None:
            raise BadInputError(f"layer group '{group.name}' has no shared experts, but shared weights were given")
        return y
    if shared is None:
        raise BadInputError(f"layer group '{group.name}' has {group.num_shared_experts} shared expert(s): pass them")
    if group.shared_expert_gate != (shared_gate is not None):
        need = "needs its shared_expert_gate weight" if group.shared_expert_gate else "has no shared-expert gate"
        raise BadInputError(f"layer group '{group.name}' {need}")
    return y + shared_expert_reference(hidden_states, shared[0], shared[1], group.activation, shared_gate)


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
