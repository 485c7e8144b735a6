"""The router's top-k fused with the SM90 activation staging: one Triton launch from logits to a staged buffer.

``route_and_stage`` takes the router logits ``[T, E]`` and the hidden states ``[T, H]`` and writes, in one
launch, what :func:`moe_oracle.runtime.routing.route` followed by :func:`moe_oracle.kernels.staging_triton.stage`
write: the E4M3 activations and their scales (the shared :func:`~moe_oracle.kernels.staging_triton.stage_tile`,
so the bytes are the staging kernel's) and ``topk_idx`` int64 / ``topk_weights`` fp32 of the routing. The
chain logits -> top-k -> staged buffer -> mega kernel is then two launches, one fewer than an engine's top-k
+ DeepGEMM's ``mega_moe_pre_dispatch_sm90`` + kernel. ``route_topk`` is the same routing alone (ids in the
dtype of ``out_ids``, int32 for DeepGEMM's pre-dispatch): a one-launch top-k like the engines' fused ones.

Program ``(m, 0)`` routes rows ``[m * BLOCK_M, (m + 1) * BLOCK_M)``; programs ``(m, c >= 1)`` stage column chunk
``c - 1`` of the same rows (routing and staging read different inputs, so they run side by side). Routing,
bit for bit the reference's arithmetic (:mod:`moe_oracle.runtime.routing`):

1. scores in fp64, rounded once to fp32: sigmoid ``1 / (1 + exp(-x))``; sqrtsoftplus ``sqrt(x > 20 ? x :
   log1p(exp(x)))`` (log1p as ``log(u) * e / (u - 1)``, ``u = 1 + e``: within a few fp64 ulps); softmax
   ``exp(x - max) / sum``;
2. ``sel = s + bias`` in fp32 (``+ 0.0`` turns a -0 into +0, which compare equal anyway);
3. with groups: group score = sum of the two largest ``sel`` (sigmoid, sqrtsoftplus) or the largest
   (softmax); keep ``topk_groups`` groups, ties to the lower group; others' experts become -inf;
4. top-k by repeated arg-max over a 64-bit key (order-preserving bits of ``sel``, then the complement of
   the index, so ties go to the lower index as the reference's stable sort does);
5. weights = unbiased ``s`` at the chosen experts; with renormalisation divided (IEEE) by their sum,
   accumulated in fp64 in selection order and rounded once; times ``routed_scaling_factor`` in fp32.

Memory traffic per token: ``4E`` bytes of logits and ``2H`` of activations read, ``H`` + scales + ``12k`` written.
Limits (else :class:`ValueError`; the runtime falls back, :mod:`moe_oracle.runtime.routing_path`): E at most
1024, a power of two when grouped; k at most 16 and at most E; the SM90 recipe ``fp8_g128``.
"""

from __future__ import annotations

from typing import Any

import torch
import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait

from moe_oracle.kernels.staging_triton import RECIPES, pad_rows_tile, stage_tile, tile
from moe_oracle.model.types import Routing, Scoring

#: scoring -> the kernel's SCORING constant
SCORING_CODE = {Scoring.SOFTMAX: 0, Scoring.SIGMOID: 1, Scoring.SQRTSOFTPLUS: 2}
MAX_EXPERTS = 1024
MAX_TOP_K = 16
#: softplus(x) = x above this (torch's default threshold, beta 1)
SOFTPLUS_THRESHOLD = tl.constexpr(20.0)
_INT64_MIN = tl.constexpr(-(2**63))


@triton.jit
def _ordered(v):
    """fp32 -> int32 whose signed order is the float order (-0 below +0: callers pass no -0)."""
    bits = v.to(tl.int32, bitcast=True)
    return tl.where(bits < 0, bits ^ 0x7FFFFFFF, bits)


@triton.jit
def _low(key):
    """The low 32 bits of an int64 key (``>>`` is arithmetic, so this holds for negative keys too)."""
    return key - (key >> 32) * 4294967296


@triton.jit
def _scores(logit, e_ok, SCORING: tl.constexpr):
    """fp32 scores of fp32 logits ``[R, E_P2]``, computed in fp64 and rounded once."""
    x = logit.to(tl.float64)
    if SCORING == 0:
        m = tl.max(tl.where(e_ok, x, float("-inf")), axis=1)
        ex = tl.where(e_ok, tl.exp(x - m[:, None]), 0.0)
        s = ex / tl.sum(ex, axis=1)[:, None]
    elif SCORING == 1:
        s = 1.0 / (1.0 + tl.exp(-x))
    else:
        e = tl.exp(x)
        u = 1.0 + e
        log1p = tl.where(u == 1.0, e, tl.log(u) * (e / (u - 1.0)))
        s = tl.sqrt(tl.where(x > SOFTPLUS_THRESHOLD, x, log1p))
    return s.to(tl.float32)


@triton.jit
def _keep_groups(sel, BLOCK_M: tl.constexpr, NUM_GROUPS: tl.constexpr, GROUP_SIZE: tl.constexpr,
                 TOPK_GROUPS: tl.constexpr, TOP2: tl.constexpr):  # fmt: skip
    """``sel [R, E]`` with the experts outside the ``TOPK_GROUPS`` best groups set to -inf."""
    g = tl.reshape(sel, (BLOCK_M, NUM_GROUPS, GROUP_SIZE))
    m1 = tl.max(g, axis=2)
    if TOP2 and GROUP_SIZE > 1:
        gi = tl.arange(0, GROUP_SIZE)
        first = tl.min(tl.where(g == m1[:, :, None], gi[None, None, :], GROUP_SIZE), axis=2)
        m2 = tl.max(tl.where(gi[None, None, :] == first[:, :, None], float("-inf"), g), axis=2)
        gscore = m1 + m2
    else:
        gscore = m1
    gidx = tl.arange(0, NUM_GROUPS)
    key = _ordered(gscore + 0.0).to(tl.int64) * 4294967296 + (NUM_GROUPS - 1 - gidx)[None, :]
    keep = tl.zeros((BLOCK_M, NUM_GROUPS), tl.int1)
    for _ in tl.static_range(TOPK_GROUPS):
        best = tl.max(key, axis=1)
        pick = gidx[None, :] == (NUM_GROUPS - 1 - _low(best))[:, None]
        keep = keep | pick
        key = tl.where(pick, _INT64_MIN, key)
    masked = tl.where(keep[:, :, None], g, float("-inf"))
    return tl.reshape(masked, (BLOCK_M, NUM_GROUPS * GROUP_SIZE))


@triton.jit
def _route_rows(logits_ptr, bias_ptr, ids_out_ptr, w_out_ptr, rows, row_ok, num_experts, stride_logits,
                stride_ids_out, stride_w_out, rsf, TOPK: tl.constexpr, TOPK_P2: tl.constexpr, E_P2: tl.constexpr,
                SCORING: tl.constexpr, HAS_BIAS: tl.constexpr, NUM_GROUPS: tl.constexpr, TOPK_GROUPS: tl.constexpr,
                TOP2: tl.constexpr, RENORM: tl.constexpr, BLOCK_M: tl.constexpr):  # fmt: skip
    """Route ``rows`` and store their ids (in ``ids_out_ptr``'s dtype) and fp32 weights (module docstring)."""
    e = tl.arange(0, E_P2)
    e_ok = e < num_experts
    lmask = row_ok[:, None] & e_ok[None, :]
    logit = tl.load(logits_ptr + rows[:, None] * stride_logits + e[None, :], mask=lmask, other=0.0).to(tl.float32)
    s = _scores(logit, e_ok[None, :], SCORING)
    sel = s
    if HAS_BIAS:
        sel = s + tl.load(bias_ptr + e, mask=e_ok, other=0.0).to(tl.float32)[None, :]
    sel = tl.where(e_ok[None, :], sel + 0.0, float("-inf"))
    if NUM_GROUPS > 1:
        sel = _keep_groups(sel, BLOCK_M, NUM_GROUPS, E_P2 // NUM_GROUPS, TOPK_GROUPS, TOP2)
    key = _ordered(sel).to(tl.int64) * 4294967296 + (E_P2 - 1 - e)[None, :]
    key = tl.where(e_ok[None, :], key, _INT64_MIN)
    kk = tl.arange(0, TOPK_P2)
    ids = tl.zeros((BLOCK_M, TOPK_P2), tl.int32)
    w = tl.zeros((BLOCK_M, TOPK_P2), tl.float32)
    acc = tl.zeros((BLOCK_M,), tl.float64)
    for j in tl.static_range(TOPK):
        best = tl.max(key, axis=1)
        idx = (E_P2 - 1 - _low(best)).to(tl.int32)
        pick = e[None, :] == idx[:, None]
        sj = tl.sum(tl.where(pick, s, 0.0), axis=1)  # one non-zero term: exact
        key = tl.where(pick, _INT64_MIN, key)
        ids = tl.where(kk[None, :] == j, idx[:, None], ids)
        w = tl.where(kk[None, :] == j, sj[:, None], w)
        acc = acc + sj.to(tl.float64)
    if RENORM:
        w = tl.div_rn(w, tl.broadcast_to(acc.to(tl.float32)[:, None], (BLOCK_M, TOPK_P2)))
    w = w * rsf
    kmask = row_ok[:, None] & (kk[None, :] < TOPK)
    out_ids = ids.to(ids_out_ptr.dtype.element_ty)
    tl.store(ids_out_ptr + rows[:, None] * stride_ids_out + kk[None, :], out_ids, mask=kmask)
    tl.store(w_out_ptr + rows[:, None] * stride_w_out + kk[None, :], w, mask=kmask)


@triton.jit
def _router_kernel(logits_ptr, bias_ptr, x_ptr, out_ptr, sf_ptr, ids_out_ptr, w_out_ptr, num_tokens, pad_to,
                   num_experts, hidden, stride_logits, stride_x, stride_out, stride_sf, stride_sf_col,
                   stride_ids_out, stride_w_out, rsf, TOPK: tl.constexpr, TOPK_P2: tl.constexpr,
                   E_P2: tl.constexpr, SCORING: tl.constexpr, HAS_BIAS: tl.constexpr, NUM_GROUPS: tl.constexpr,
                   TOPK_GROUPS: tl.constexpr, TOP2: tl.constexpr, RENORM: tl.constexpr, STAGE: tl.constexpr,
                   GROUP: tl.constexpr, GROUPS_PER_PROG: tl.constexpr, BLOCK_M: tl.constexpr,
                   UE8M0: tl.constexpr, PAD_BLOCK: tl.constexpr, USE_PDL: tl.constexpr,
                   TRIGGER: tl.constexpr):  # fmt: skip
    if USE_PDL:
        gdc_wait()  # the router GEMM / the producer of x may still be running: wait before the first load
    pid_m = tl.program_id(0)
    pid_k = tl.program_id(1)
    token_progs = tl.cdiv(num_tokens, BLOCK_M)
    if pid_m >= token_progs:
        if pid_k == 0:  # rows [num_tokens, pad_to) of the buffer: id -1, weight 0
            first = num_tokens + (pid_m - token_progs) * PAD_BLOCK
            pad_rows_tile(ids_out_ptr, w_out_ptr, first, pad_to, stride_ids_out, stride_w_out, TOPK, TOPK_P2, PAD_BLOCK)
    else:
        rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        row_ok = rows < num_tokens
        if pid_k == 0:
            _route_rows(logits_ptr, bias_ptr, ids_out_ptr, w_out_ptr, rows, row_ok, num_experts, stride_logits,
                        stride_ids_out, stride_w_out, rsf, TOPK, TOPK_P2, E_P2, SCORING, HAS_BIAS, NUM_GROUPS,
                        TOPK_GROUPS, TOP2, RENORM, BLOCK_M)  # fmt: skip
        elif STAGE:
            stage_tile(x_ptr, out_ptr, sf_ptr, rows, row_ok, pid_k - 1, hidden, stride_x, stride_out, stride_sf,
                       stride_sf_col, GROUP, GROUPS_PER_PROG, BLOCK_M, UE8M0)  # fmt: skip
    if TRIGGER:
        gdc_launch_dependents()


def unsupported(routing: Routing, num_experts: int, top_k: int) -> str | None:
    """Why the kernel cannot route this group (None when it can); the runtime falls back on a reason."""
    if routing.hash:
        return "hash-routed layer (experts from a token-id table)"
    if num_experts > MAX_EXPERTS:
        return f"{num_experts} experts exceed the kernel's {MAX_EXPERTS}"
    if top_k > MAX_TOP_K or top_k > num_experts:
        return f"top-{top_k} exceeds the kernel's {MAX_TOP_K} (or the {num_experts} experts)"
    grouped = routing.num_groups > 1
    if grouped and (num_experts & (num_experts - 1) or num_experts % routing.num_groups):
        return f"grouped routing needs a power-of-two expert count divisible by the groups, got {num_experts}"
    return None


def _check_2d(**tensors: torch.Tensor) -> None:
    for name, tensor in tensors.items():
        if tensor.dim() != 2 or (tensor.shape[0] > 1 and tensor.stride(1) != 1):
            raise ValueError(f"{name} must be 2-D with unit column stride (rows may be strided)")


def _launch(routing: Routing, top_k: int, logits: torch.Tensor, bias: torch.Tensor | None, stage: Any,
            out_ids: torch.Tensor, out_w: torch.Tensor, pad_to: int | None, block_m: int | None,
            num_warps: int, pdl: bool, trigger: bool) -> None:  # fmt: skip
    t, e = logits.shape
    why = unsupported(routing, e, top_k)
    if why is not None:
        raise ValueError(why)
    _check_2d(logits=logits, out_ids=out_ids, out_w=out_w)
    if routing.correction_bias and bias is None:
        raise ValueError("this routing has an e_score_correction_bias: pass bias [E]")
    if stage is None:
        x = out_x = out_sf = logits  # unused pointers: no staging programs
        bm, gpp, (group, ue8m0), chunks = block_m or (1 if t < 64 else 4), 4, RECIPES["fp8_g128"], 0
        h = sx = so = ss = ssc = 0
    else:
        x, out_x, out_sf, recipe, groups_per_prog = stage
        h = x.shape[1]
        bm, gpp = tile(t, h, recipe, block_m, groups_per_prog)
        group, ue8m0 = RECIPES[recipe]
        chunks = triton.cdiv(h, group * gpp)
        sx, so, ss, ssc = x.stride(0), out_x.stride(0), out_sf.stride(0), out_sf.stride(1)
    pad = max(t, pad_to or t)
    if pad == 0:
        return
    pad_block = 256
    grid = (triton.cdiv(t, bm) + triton.cdiv(pad - t, pad_block), 1 + chunks)
    _router_kernel[grid](
        logits,
        logits if bias is None else bias,
        x,
        out_x,
        out_sf,
        out_ids,
        out_w,
        t,
        pad,
        e,
        h,
        logits.stride(0),
        sx,
        so,
        ss,
        ssc,
        out_ids.stride(0),
        out_w.stride(0),
        float(routing.routed_scaling_factor),
        TOPK=top_k,
        TOPK_P2=triton.next_power_of_2(top_k),
        E_P2=triton.next_power_of_2(e),
        SCORING=SCORING_CODE[routing.scoring],
        HAS_BIAS=bias is not None,
        NUM_GROUPS=routing.num_groups,
        TOPK_GROUPS=routing.topk_groups,
        TOP2=routing.scoring is not Scoring.SOFTMAX,
        RENORM=routing.renormalize,
        STAGE=stage is not None,
        GROUP=group,
        GROUPS_PER_PROG=gpp,
        BLOCK_M=bm,
        UE8M0=ue8m0,
        PAD_BLOCK=pad_block,
        USE_PDL=pdl,
        TRIGGER=trigger,
        num_warps=num_warps,
        launch_pdl=pdl,
    )


def route_and_stage(
    routing: Routing,
    top_k: int,
    logits: torch.Tensor,
    x: torch.Tensor,
    out_x: torch.Tensor,
    out_sf: torch.Tensor,
    out_ids: torch.Tensor,
    out_w: torch.Tensor,
    *,
    bias: torch.Tensor | None = None,
    recipe: str = "fp8_g128",
    pad_to: int | None = None,
    block_m: int | None = None,
    groups_per_prog: int | None = None,
    num_warps: int = 4,
    pdl: bool = False,
    trigger: bool = False,
) -> None:
    """Route ``logits [T, E]`` (any float dtype, taken as fp32) and stage ``x [T, H]`` bf16 in one launch.

    Writes ``out_x`` E4M3 ``[>=T, H]`` and ``out_sf`` (fp32 ``[T, H/128]`` for ``fp8_g128``; any strides), and
    ``out_ids`` int64 / ``out_w`` fp32 ``[>=T, k]``: bit for bit ``route(group, logits, bias)`` then
    ``stage(x, ids, w, ...)``. ``bias``: the ``e_score_correction_bias [E]`` (fp32; required when ``routing``
    has one, added to the selection scores when given). ``pad_to``: rows ``[T, pad_to)`` of the top-k
    buffers become padding (id -1, weight 0). ``pdl``/``trigger``: as :func:`~moe_oracle.kernels.staging_triton.stage`.
    No allocation, no host sync (CUDA-graph capturable).
    """
    _check_2d(x=x, out_x=out_x)
    if x.shape[0] != logits.shape[0]:
        raise ValueError(f"logits have {logits.shape[0]} rows, x {x.shape[0]}")
    stage = (x, out_x, out_sf, recipe, groups_per_prog)
    _launch(routing, top_k, logits, bias, stage, out_ids, out_w, pad_to, block_m, num_warps, pdl, trigger)


def route_topk(
    routing: Routing,
    top_k: int,
    logits: torch.Tensor,
    out_ids: torch.Tensor,
    out_w: torch.Tensor,
    *,
    bias: torch.Tensor | None = None,
    block_m: int | None = None,
    num_warps: int = 4,
) -> None:
    """The routing alone, one launch: ``out_ids [T, k]`` (int32 or int64) and ``out_w`` fp32, equal to ``route``."""
    _launch(routing, top_k, logits, bias, None, out_ids, out_w, None, block_m, num_warps, False, False)
