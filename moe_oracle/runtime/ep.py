"""Non-fused expert parallelism over ``torch.distributed``: the baseline and reference for EP runs.

Each rank routes its own tokens; every (token, slot) pair is sent to the rank owning its expert
with one ``all_to_all_single`` (rows, then expert ids), computed there by ``expert_fn`` on the local
experts, sent back with the reverse all-to-all, and combined with the top-k weights in FP32. This is
what a fused mega-MoE kernel does inside one launch; run as a reference (``expert_fn`` from
dequantized weights) it checks a fused EP run rank by rank, and timed it is the non-fused baseline.

Experts are placed contiguously: rank ``r`` owns ``[r * E/ep, (r + 1) * E/ep)``. ``-1`` ids are
skipped. Token counts may differ between ranks (zero included).

Two exchanges:

* :func:`ep_moe` sends exactly the routed rows; the split sizes travel to the host (``.tolist()``),
  so it is not CUDA-graph capturable (the prefill shape of an engine's non-fused EP);
* :func:`ep_moe_fixed` sends every destination a fixed ``capacity`` of rows (padding marked by id
  ``-1``), so nothing depends on the data on the host and the whole layer can be captured in a
  CUDA graph (the decode shape: DeepEP's low-latency mode keeps fixed buffers the same way).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from torch.distributed import ProcessGroup

ExpertFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def _exchange(tensor: torch.Tensor, send: list[int], recv: list[int], group: ProcessGroup | None) -> torch.Tensor:
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
    group: ProcessGroup | None = None,
    transport: torch.dtype = torch.float32,
) -> torch.Tensor:
    """FP32 ``[T, H]`` routed output for this rank's tokens.

    ``expert_fn(rows [M, H], local_ids [M] int64) -> [M, H]`` computes each row with the local expert
    ``local_ids[i]`` (unweighted); the top-k weights are applied here, at the combine, in FP32. Rows and
    expert outputs travel as ``transport``: FP32 for a reference, BF16 for a baseline moving what an
    engine moves.
    """
    import torch.distributed as dist

    world, rank, per_rank = _placement(num_experts, group)
    t = topk_ids.shape[0]
    h = hidden_states.shape[1]
    device = hidden_states.device
    token, weight, ids, dest = _slots(topk_ids, topk_weights, per_rank, world)
    valid = ids >= 0
    token, weight, ids, dest = token[valid], weight[valid], ids[valid], dest[valid]
    order = torch.argsort(dest, stable=True)
    token, weight, ids, dest = token[order], weight[order], ids[order], dest[order]

    send_counts = torch.bincount(dest, minlength=world).to(torch.int64)
    recv_counts = torch.empty_like(send_counts)
    dist.all_to_all_single(recv_counts, send_counts, group=group)
    send, recv = send_counts.tolist(), recv_counts.tolist()

    rows = _exchange(hidden_states.to(transport)[token], send, recv, group)
    local_ids = _exchange(ids, send, recv, group) - rank * per_rank
    out = expert_fn(rows, local_ids) if rows.shape[0] else rows.new_zeros((0, h))
    back = _exchange(out.to(transport), recv, send, group)

    y = torch.zeros(t, h, dtype=torch.float32, device=device)
    y.index_add_(0, token, back.float() * weight.unsqueeze(1))
    return y


def _placement(num_experts: int, group: ProcessGroup | None) -> tuple[int, int, int]:
    """(world size, this rank, experts per rank) of the contiguous expert placement."""
    import torch.distributed as dist

    world = dist.get_world_size(group)
    if num_experts % world:
        raise ValueError(f"{num_experts} experts do not divide over {world} ranks")
    return world, dist.get_rank(group), num_experts // world


def _slots(topk_ids: torch.Tensor, topk_weights: torch.Tensor, per_rank: int, world: int):
    """Every (token, slot) of ``topk_ids [T, k]`` as (token, weight, expert id, destination rank), ``-1`` kept."""
    t, k = topk_ids.shape
    ids = topk_ids.reshape(-1).to(torch.int64)
    token = torch.arange(t, device=ids.device).repeat_interleave(k)
    dest = torch.where(ids >= 0, ids // per_rank, world)  # rank ``world``: no destination
    return token, topk_weights.reshape(-1).float(), ids, dest


def ep_moe_fixed(
    hidden_states: torch.Tensor,
    topk_ids: torch.Tensor,
    topk_weights: torch.Tensor,
    expert_fn: ExpertFn,
    *,
    num_experts: int,
    group: ProcessGroup | None = None,
    transport: torch.dtype = torch.bfloat16,
) -> torch.Tensor:
    """:func:`ep_moe` with a fixed exchange: CUDA-graph capturable, no host synchronization.

    Each rank sends every rank ``capacity = T * k`` rows (all of its slots could go to one rank), the
    slots bound for it first and id ``-1`` after; ``expert_fn`` gets ``world * capacity`` rows and must
    return zeros (or anything: they are never read) for ``-1`` ids. ``T`` must be the same on every rank
    (the exchange sizes are ``T * k``): pad the smaller batches, as a decode step does. Costs bytes for
    the capacity: meant for decode batches, not prefill chunks.
    """
    import torch.distributed as dist

    world, rank, per_rank = _placement(num_experts, group)
    t, k = topk_ids.shape
    h = hidden_states.shape[1]
    cap = t * k
    token, weight, ids, dest = _slots(topk_ids, topk_weights, per_rank, world)
    # position of each slot among the slots bound for the same rank (running count per destination)
    onehot = torch.nn.functional.one_hot(dest, world + 1)
    pos = (onehot.cumsum(0) * onehot).sum(1) - 1
    flat = dest * cap + pos  # into [world + 1, cap]; row ``world`` collects the -1 slots
    send = hidden_states.new_zeros(((world + 1) * cap, h), dtype=transport)
    send[flat] = hidden_states.to(transport)[token]
    send_ids = torch.full(((world + 1) * cap,), -1, dtype=torch.int64, device=ids.device)
    send_ids[flat] = ids
    recv = torch.empty((world * cap, h), dtype=transport, device=send.device)
    recv_ids = torch.empty((world * cap,), dtype=torch.int64, device=ids.device)
    dist.all_to_all_single(recv, send[: world * cap], group=group)
    dist.all_to_all_single(recv_ids, send_ids[: world * cap], group=group)
    local_ids = torch.where(recv_ids >= 0, recv_ids - rank * per_rank, -1)
    out = expert_fn(recv, local_ids).to(transport)
    back = torch.empty_like(recv)
    dist.all_to_all_single(back, out, group=group)
    mine = (flat < world * cap).unsqueeze(1)
    rows = torch.where(mine, back[flat.clamp(max=world * cap - 1)].float() * weight.unsqueeze(1), 0.0)
    y = torch.zeros(t, h, dtype=torch.float32, device=hidden_states.device)
    y.index_add_(0, token, rows)
    return y


def reference_expert_fn(w13: torch.Tensor, w2: torch.Tensor, activation: Any) -> ExpertFn:
    """An ``expert_fn`` from this rank's dequantized FP32 experts ``w13 [E_local, 2I, H]``, ``w2 [E_local, H, I]``
    (rows with id ``-1`` come back as zeros)."""
    from moe_oracle.runtime.reference import swiglu

    def run(rows: torch.Tensor, local_ids: torch.Tensor) -> torch.Tensor:
        out = torch.zeros_like(rows)
        for e in torch.unique(local_ids[local_ids >= 0]).tolist():
            sel = torch.nonzero(local_ids == e, as_tuple=True)[0]
            out[sel] = swiglu(rows[sel] @ w13[e].t(), activation) @ w2[e].t()
        return out

    return run
