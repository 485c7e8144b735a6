"""Glue kernels of the non-fused grouped-GEMM MoE (Triton): route, quantize + scatter, SwiGLU + requantize, combine.

The non-fused path runs one MoE layer as a fixed sequence of launches around two grouped GEMMs
(DeepGEMM ``m_grouped_fp8_gemm_nt_contiguous``), with no host synchronization, so the whole
sequence can be captured in a CUDA graph:

1. :func:`count_routes` -- per (token, slot) with a local expert, ``slot_pos`` = its index among the
   rows of that expert (atomic counter; the order between tokens is arbitrary, the values are not:
   every GEMM row is computed independently);
2. :func:`expert_layout` -- per expert ``starts`` (each expert's rows begin at a multiple of
   ``align``, the GEMM's M alignment) and ``ends = starts + count`` (DeepGEMM's psum layout);
3. :func:`quantize_scatter` -- FP8 E4M3 with one FP32 scale per 128 channels (``amax * fp32(1/448)``,
   amax floored at 1e-4, as the fused staging kernel and :func:`moe_oracle.numerics.quantize_fp8`),
   written to each of the token's expert rows; scales MN-major (``sf[g * rows + row]``), which
   DeepGEMM's SM90 GEMM takes without a transpose; also ``row_of_slot`` (for the combine) and
   ``m_indices`` (expert of each row, ``-1`` on padding rows: DeepGEMM's m_indices layout);
4. :func:`swiglu_quantize` -- ``act = g * sigmoid(alpha g) * (u + beta)`` with the layer's clamp,
   requantized as in 3 (rows whose ``m_indices`` is ``-1`` are skipped);
5. :func:`combine` -- ``y[t] = sum_j w[t, j] * out[row_of_slot[t, j]]`` in FP32, written as BF16.

Buffers are preallocated by the caller (``backends/cuda_sm90/nonfused/layer.py``); no
function here allocates.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from moe_oracle.kernels.fp8_triton import quantize_groups

GROUP = 128


@triton.jit
def _count_kernel(
    ids_ptr, counts_ptr, slot_pos_ptr, num_tokens, stride_ids, first_expert, num_local,
    TOPK: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = i < num_tokens * TOPK
    t = i // TOPK
    j = i % TOPK
    e = tl.load(ids_ptr + t.to(tl.int64) * stride_ids + j, mask=ok, other=-1).to(tl.int32)
    local = e - first_expert
    valid = ok & (e >= 0) & (local >= 0) & (local < num_local)
    pos = tl.atomic_add(counts_ptr + local, tl.full((BLOCK,), 1, tl.int32), mask=valid)
    tl.store(slot_pos_ptr + i, tl.where(valid, pos, -1), mask=ok)


@triton.jit
def _layout_kernel(counts_ptr, starts_ptr, ends_ptr, num_local, ALIGN: tl.constexpr, BLOCK_E: tl.constexpr):
    e = tl.arange(0, BLOCK_E)
    ok = e < num_local
    c = tl.load(counts_ptr + e, mask=ok, other=0)
    aligned = (c + ALIGN - 1) // ALIGN * ALIGN
    starts = tl.cumsum(aligned, axis=0) - aligned
    tl.store(starts_ptr + e, starts, mask=ok)
    tl.store(ends_ptr + e, starts + c, mask=ok)


@triton.jit
def _quant_group(x, GPP: tl.constexpr):
    """``x`` fp32 ``[GPP * 128]`` -> (E4M3 ``[GPP * 128]``, fp32 scales ``[GPP]``)."""
    q, scale, _exp = quantize_groups(tl.reshape(x, (GPP, 128)), False)
    return tl.reshape(q, (GPP * 128,)), scale


@triton.jit
def _quant_scatter_kernel(
    x_ptr, ids_ptr, slot_pos_ptr, starts_ptr, a_ptr, sf_ptr, row_of_slot_ptr, m_indices_ptr,
    hidden, stride_x, stride_ids, rows, first_expert,
    TOPK: tl.constexpr, TOPK_P2: tl.constexpr, GPP: tl.constexpr,
):  # fmt: skip
    t = tl.program_id(0)
    pid_k = tl.program_id(1)
    cols = pid_k * GPP * 128 + tl.arange(0, GPP * 128)
    col_ok = cols < hidden
    x = tl.load(x_ptr + t.to(tl.int64) * stride_x + cols, mask=col_ok, other=0.0).to(tl.float32)
    q, scale = _quant_group(x, GPP)
    kk = tl.arange(0, TOPK_P2)
    kmask = kk < TOPK
    pos = tl.load(slot_pos_ptr + t * TOPK + kk, mask=kmask, other=-1)
    valid = kmask & (pos >= 0)
    local = tl.load(ids_ptr + t.to(tl.int64) * stride_ids + kk, mask=valid, other=0).to(tl.int32) - first_expert
    dest = tl.where(valid, tl.load(starts_ptr + local, mask=valid, other=0) + pos, -1)
    dest64 = dest.to(tl.int64)
    tl.store(
        a_ptr + dest64[:, None] * hidden + cols[None, :],
        tl.broadcast_to(q[None, :], (TOPK_P2, GPP * 128)),
        mask=valid[:, None] & col_ok[None, :],
    )
    g = pid_k * GPP + tl.arange(0, GPP)
    tl.store(
        sf_ptr + g[None, :].to(tl.int64) * rows + dest64[:, None],
        tl.broadcast_to(scale[None, :], (TOPK_P2, GPP)),
        mask=valid[:, None] & (g[None, :] * 128 < hidden),
    )
    if pid_k == 0:
        tl.store(row_of_slot_ptr + t * TOPK + kk, dest, mask=kmask)
        tl.store(m_indices_ptr + dest64, local, mask=valid)


@triton.jit
def _swiglu_quant_kernel(
    h_ptr, m_indices_ptr, a_ptr, sf_ptr, inter, rows, clamp, alpha, beta,
    HAS_CLAMP: tl.constexpr, GPP: tl.constexpr,
):  # fmt: skip
    r = tl.program_id(0)
    pid_k = tl.program_id(1)
    if tl.load(m_indices_ptr + r) < 0:
        return
    cols = pid_k * GPP * 128 + tl.arange(0, GPP * 128)
    ok = cols < inter
    base = h_ptr + r.to(tl.int64) * 2 * inter
    gate = tl.load(base + cols, mask=ok, other=0.0).to(tl.float32)
    up = tl.load(base + inter + cols, mask=ok, other=0.0).to(tl.float32)
    if HAS_CLAMP:
        gate = tl.minimum(gate, clamp)
        up = tl.minimum(tl.maximum(up, -clamp), clamp)
    act = gate * tl.sigmoid(gate * alpha) * (up + beta)
    q, scale = _quant_group(act, GPP)
    tl.store(a_ptr + r.to(tl.int64) * inter + cols, q, mask=ok)
    g = pid_k * GPP + tl.arange(0, GPP)
    tl.store(sf_ptr + g.to(tl.int64) * rows + r, scale, mask=g * 128 < inter)


@triton.jit
def _combine_kernel(
    out_ptr, row_of_slot_ptr, w_ptr, y_ptr, hidden, stride_w, stride_y,
    TOPK: tl.constexpr, BLOCK_H: tl.constexpr,
):  # fmt: skip
    t = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    ok = cols < hidden
    acc = tl.zeros((BLOCK_H,), tl.float32)
    for j in tl.static_range(TOPK):
        row = tl.load(row_of_slot_ptr + t * TOPK + j)
        wj = tl.load(w_ptr + t.to(tl.int64) * stride_w + j).to(tl.float32)
        live = ok & (cols * 0 + row >= 0)  # a vector mask: Triton 3.9's interpreter refuses a scalar in it
        v = tl.load(out_ptr + row.to(tl.int64) * hidden + cols, mask=live, other=0.0).to(tl.float32)
        acc += tl.where(row >= 0, wj, 0.0) * v
    tl.store(y_ptr + t.to(tl.int64) * stride_y + cols, acc.to(tl.bfloat16), mask=ok)


def count_routes(
    topk_ids: torch.Tensor, counts: torch.Tensor, slot_pos: torch.Tensor, *, first_expert: int = 0
) -> None:
    """Add each (token, slot)'s local expert to ``counts`` (int32, zeroed by the caller) and write its
    rank among that expert's rows to ``slot_pos`` (int32 ``[T * k]``; ``-1`` for ``-1``/foreign ids)."""
    t, k = topk_ids.shape
    if t == 0:
        return
    block = 1024
    _count_kernel[(triton.cdiv(t * k, block),)](
        topk_ids, counts, slot_pos, t, topk_ids.stride(0), first_expert, counts.numel(), TOPK=k, BLOCK=block
    )


def expert_layout(counts: torch.Tensor, starts: torch.Tensor, ends: torch.Tensor, *, align: int) -> None:
    """``starts[e]`` = sum of the earlier experts' counts rounded up to ``align``; ``ends = starts + counts``."""
    n = counts.numel()
    _layout_kernel[(1,)](counts, starts, ends, n, ALIGN=align, BLOCK_E=triton.next_power_of_2(n))


def quantize_scatter(
    x: torch.Tensor,
    topk_ids: torch.Tensor,
    slot_pos: torch.Tensor,
    starts: torch.Tensor,
    a: torch.Tensor,
    sf: torch.Tensor,
    row_of_slot: torch.Tensor,
    m_indices: torch.Tensor,
    *,
    rows: int,
    first_expert: int = 0,
) -> None:
    """Quantize ``x [T, H]`` per 128 channels into rows ``starts[e] + slot_pos`` of ``a [rows, H]`` (E4M3),
    scales into ``sf`` (flat fp32, element ``g * rows + row``); fill ``row_of_slot`` and ``m_indices``."""
    t, h = x.shape
    k = topk_ids.shape[1]
    if h % 512:
        raise ValueError(f"hidden size {h} must be a multiple of 512")
    if t == 0:
        return
    gpp = 4
    _quant_scatter_kernel[(t, triton.cdiv(h, 128 * gpp))](
        x, topk_ids, slot_pos, starts, a, sf, row_of_slot, m_indices,
        h, x.stride(0), topk_ids.stride(0), rows, first_expert,
        TOPK=k, TOPK_P2=triton.next_power_of_2(k), GPP=gpp, num_warps=4,
    )  # fmt: skip


def swiglu_quantize(
    h: torch.Tensor,
    m_indices: torch.Tensor,
    a: torch.Tensor,
    sf: torch.Tensor,
    *,
    rows: int,
    clamp: float | None,
    alpha: float = 1.0,
    beta: float = 0.0,
    groups_per_program: int | None = None,
) -> None:
    """``h [rows, 2I]`` (gate columns first) -> SwiGLU -> E4M3 ``a [rows, I]`` and flat MN-major ``sf``.

    ``groups_per_program``: 128-column groups each program quantizes (a power of two; the output does not depend
    on it). By default 4 where they divide ``I / 128``, else the next power of two up to 8 with the columns past
    ``I`` masked: one program per row for I = 768 instead of six one-group programs, which made the padding rows'
    early exits and the launch the larger part of Qwen3-30B's non-fused time (docs/performance.md §12).
    """
    inter = h.shape[1] // 2
    if inter % 128:
        raise ValueError(f"intermediate size {inter} must be a multiple of 128")
    if rows == 0:
        return
    groups = inter // 128
    gpp = groups_per_program or (4 if groups % 4 == 0 else min(8, triton.next_power_of_2(groups)))
    if gpp & (gpp - 1):
        raise ValueError(f"groups_per_program {gpp} must be a power of two")
    _swiglu_quant_kernel[(rows, triton.cdiv(inter, 128 * gpp))](
        h, m_indices, a, sf, inter, rows, 0.0 if clamp is None else float(clamp), float(alpha), float(beta),
        HAS_CLAMP=clamp is not None, GPP=gpp, num_warps=4,
    )  # fmt: skip


def combine(out: torch.Tensor, row_of_slot: torch.Tensor, topk_weights: torch.Tensor, y: torch.Tensor) -> None:
    """``y[t] = sum_j topk_weights[t, j] * out[row_of_slot[t * k + j]]`` (FP32 sum, BF16 result)."""
    t, k = topk_weights.shape
    h = out.shape[1]
    if t == 0:
        return
    block_h = 1024
    _combine_kernel[(t, triton.cdiv(h, block_h))](
        out, row_of_slot, topk_weights, y, h, topk_weights.stride(0), y.stride(0), TOPK=k, BLOCK_H=block_h, num_warps=4
    )
