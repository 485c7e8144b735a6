"""Non-fused expert parallelism over ``torch.distributed``: the baseline and reference for EP runs.

Each rank routes its own tokens; every (token, slot) pair is sent to the rank owning its expert
with one ``all_to_all_single`` (rows, then expert ids), computed there by ``expert_fn`` on the local
experts, sent back with the reverse all-to-all, and combined with the top-k weights in FP32. This is
what a fused mega-MoE kernel does inside one launch; run as a reference (``expert_fn`` from
dequantized weights) it checks a fused EP run rank by rank, and timed it is the non-fused baseline.

Experts are placed contiguously: rank ``r`` owns ``[r * E/ep, (r + 1) * E/ep)``. ``-1`` ids are
skipped. Token counts may differ between ranks (zero included). The split sizes travel to the host
(``.tolist()``), so this path is not CUDA-graph capturable; the fused kernels are.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

ExpertFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def _exchange(tensor: torch.Tensor, send: list[int], recv: list[int], group: Any) -> torch.Tensor:
    import torch.distributed as dist

    out = tensor.new_empty((sum(recv), *tensor.shape[1:]))
    dist.all_to_all_single(out, tensor.contiguous(), output_split_sizes=recv, input_split_sizes=send, group=group)
    return out


def ep_moe(
    hidden_states: torch.Tensor,
    topk_ids: torch.Tensor,
    topk_weights: torch.Tensor,
    expert_fn: ExpertFn,
    *,
    num_experts: int,
    group: Any = None,
) -> torch.Tensor:
    """FP32 ``[T, H]`` routed output for this rank's tokens.

    ``expert_fn(rows [M, H] fp32, local_ids [M] int64) -> [M, H] fp32`` computes each row with the
    local expert ``local_ids[i]`` (unweighted); the top-k weights are applied here, at the combine.
    """
    import torch.distributed as dist

    world = dist.get_world_size(group)
    rank = dist.get_rank(group)
    if num_experts % world:
        raise ValueError(f"{num_experts} experts do not divide over {world} ranks")
    per_rank = num_experts // world
    t, k = topk_ids.shape
    h = hidden_states.shape[1]
    device = hidden_states.device
    ids = topk_ids.reshape(-1).to(torch.int64)
    valid = ids >= 0
    token = torch.arange(t, device=device).repeat_interleave(k)[valid]
    weight = topk_weights.reshape(-1).float()[valid]
    ids = ids[valid]
    dest = ids // per_rank
    order = torch.argsort(dest, stable=True)
    token, weight, ids, dest = token[order], weight[order], ids[order], dest[order]

    send_counts = torch.bincount(dest, minlength=world).to(torch.int64)
    recv_counts = torch.empty_like(send_counts)
    dist.all_to_all_single(recv_counts, send_counts, group=group)
    send, recv = send_counts.tolist(), recv_counts.tolist()

    rows = _exchange(hidden_states.float()[token], send, recv, group)
    local_ids = _exchange(ids, send, recv, group) - rank * per_rank
    out = expert_fn(rows, local_ids) if rows.shape[0] else rows.new_zeros((0, h))
    back = _exchange(out.float(), recv, send, group)

    y = torch.zeros(t, h, dtype=torch.float32, device=device)
    y.index_add_(0, token, back * weight.unsqueeze(1))
    return y


def reference_expert_fn(w13: torch.Tensor, w2: torch.Tensor, activation: Any) -> ExpertFn:
    """An ``expert_fn`` from this rank's dequantized FP32 experts ``w13 [E_local, 2I, H]``, ``w2 [E_local, H, I]``."""
    from moe_oracle.runtime.reference import swiglu

    def run(rows: torch.Tensor, local_ids: torch.Tensor) -> torch.Tensor:
        out = torch.zeros_like(rows)
        for e in torch.unique(local_ids).tolist():
            sel = torch.nonzero(local_ids == e, as_tuple=True)[0]
            out[sel] = swiglu(rows[sel] @ w13[e].t(), activation) @ w2[e].t()
        return out

    return run
