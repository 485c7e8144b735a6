"""Activation staging for the mega-MoE kernels, fused with the top-k repack (Triton).

One launch quantizes ``x [T, H]`` (bf16) into a kernel's input buffers and repacks the routing:

- ``fp8_g128``: E4M3 values and one FP32 scale per 128 channels (``amax / 448``, amax floored at
  1e-4) -- the SM90 DeepGEMM recipe (1, 128);
- ``mxfp8``: E4M3 values and one UE8M0 scale per 32 channels (``amax / 448`` rounded up to a power
  of two), four exponent bytes packed per int32 (first group in the low byte) -- SM100 DeepGEMM
  and AITER activations;

and writes ``topk_idx`` as int64 and ``topk_weights`` as fp32 times ``routed_scaling_factor``,
with rows at or past ``num_valid`` as padding (id -1, weight 0). Results are bit-identical to
:func:`moe_oracle.numerics.quantize_fp8` / :func:`quantize_mxfp8` run on the same GPU (the shared
:func:`moe_oracle.kernels.fp8_triton.quantize_groups`); the tests check it.

Memory traffic per token: ``2H`` bytes read, ``H`` + scale bytes written; the launch is
bandwidth-bound and aims at the device's copy bandwidth.

With ``pdl=True`` the launch is a programmatic dependent launch (PDL): it may start while the kernel
before it drains and waits for it (``griddepcontrol.wait``) before reading anything, as DeepGEMM's own
``mega_moe_pre_dispatch_sm90`` does (``sm90_mega_moe_pre_dispatch.cuh:36-38``): safe behind any kernel.
``trigger=True`` also signals ``griddepcontrol.launch_dependents`` after each thread's stores (where
DeepGEMM's pre-dispatch signals, lines 100-102), so a mega kernel launched as a PDL secondary after it
may start before every program exits; that hand-off is safe only for a kernel that waits on the grid
dependency itself, and the runtime never uses it (``backends/_deep_gemm_layer.py``: the SM90 kernels,
which do not wait, are launched without PDL, advisory MOA-2026-002).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait

from moe_oracle.kernels.fp8_triton import quantize_groups

#: recipe -> (channels per scale group, UE8M0 scales)
RECIPES = {"fp8_g128": (128, False), "mxfp8": (32, True)}


def tile(
    t: int, h: int, recipe: str, block_m: int | None = None, groups_per_prog: int | None = None
) -> tuple[int, int]:
    """``(rows, scale groups)`` per program for ``T`` tokens of ``H`` channels (``ValueError`` for a recipe or
    hidden size the kernel does not tile)."""
    if recipe not in RECIPES:
        raise ValueError(f"unknown staging recipe {recipe!r}")
    group, ue8m0 = RECIPES[recipe]
    # tile: 1024 columns and 8 rows per program from T = 1024 (tuned on the H200 at T = 4096 and 16384,
    # H = 4096 and 7168: within 3% of the best of 72 shapes, 5-9% faster than 512 x 4); small T keeps
    # small tiles so more programs run
    wide = t >= 1024 and h % 1024 == 0
    gpp = groups_per_prog or (1024 if wide else 512) // group
    if h % (group * 4) or (ue8m0 and gpp % 4):
        raise ValueError(f"hidden size {h} must be a multiple of {group * 4} (and MXFP8 packs groups by 4)")
    return block_m or (1 if t < 64 else 8 if t >= 1024 else 4), gpp


@triton.jit
def pad_rows_tile(ids_out_ptr, w_out_ptr, first_row, pad_to, stride_ids_out, stride_w_out,
                  TOPK: tl.constexpr, TOPK_P2: tl.constexpr, PAD_BLOCK: tl.constexpr):  # fmt: skip
    """Rows ``[first_row, first_row + PAD_BLOCK)`` below ``pad_to`` of the top-k buffers: id -1, weight 0."""
    prow = first_row + tl.arange(0, PAD_BLOCK)
    kk = tl.arange(0, TOPK_P2)
    pmask = (prow < pad_to)[:, None] & (kk[None, :] < TOPK)
    tl.store(
        ids_out_ptr + prow[:, None] * stride_ids_out + kk[None, :],
        tl.full((PAD_BLOCK, TOPK_P2), -1, tl.int64),
        mask=pmask,
    )
    tl.store(
        w_out_ptr + prow[:, None] * stride_w_out + kk[None, :],
        tl.zeros((PAD_BLOCK, TOPK_P2), tl.float32),
        mask=pmask,
    )


@triton.jit
def stage_tile(
    x_ptr,
    out_ptr,
    sf_ptr,
    rows,
    row_ok,
    pid_k,
    hidden,
    stride_x,
    stride_out,
    stride_sf,
    stride_sf_col,
    GROUP: tl.constexpr,
    GROUPS_PER_PROG: tl.constexpr,
    BLOCK_M: tl.constexpr,
    UE8M0: tl.constexpr,
):
    """Quantize one tile of activations: ``rows`` x column chunk ``pid_k`` (``GROUPS_PER_PROG`` groups of
    ``GROUP`` channels) of ``x`` into ``out`` (E4M3) and its scales into ``sf`` (the module docstring's
    recipes). Shared by this module's staging kernel and the router's (:mod:`moe_oracle.kernels.router_triton`),
    so both write the same bytes."""
    cols = pid_k * GROUPS_PER_PROG * GROUP + tl.arange(0, GROUPS_PER_PROG * GROUP)
    col_ok = cols < hidden
    mask = row_ok[:, None] & col_ok[None, :]
    x = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    q, scale, exp = quantize_groups(tl.reshape(x, (BLOCK_M, GROUPS_PER_PROG, GROUP)), UE8M0)
    q = tl.reshape(q, (BLOCK_M, GROUPS_PER_PROG * GROUP))
    tl.store(out_ptr + rows[:, None] * stride_out + cols[None, :], q, mask=mask)
    g0 = pid_k * GROUPS_PER_PROG
    if UE8M0:
        packs: tl.constexpr = GROUPS_PER_PROG // 4
        e4 = tl.reshape(exp, (BLOCK_M, packs, 4))
        shifts = tl.arange(0, 4) * 8
        word = tl.sum(e4 << shifts[None, None, :], axis=2)
        pcols = g0 // 4 + tl.arange(0, packs)
        pmask = row_ok[:, None] & (pcols[None, :] * 4 * GROUP < hidden)
        tl.store(sf_ptr + rows[:, None] * stride_sf + pcols[None, :] * stride_sf_col, word, mask=pmask)
    else:
        gcols = g0 + tl.arange(0, GROUPS_PER_PROG)
        gmask = row_ok[:, None] & (gcols[None, :] * GROUP < hidden)
        tl.store(sf_ptr + rows[:, None] * stride_sf + gcols[None, :] * stride_sf_col, scale, mask=gmask)


@triton.jit
def _stage_kernel(
    x_ptr,
    out_ptr,
    sf_ptr,
    ids_in_ptr,
    w_in_ptr,
    ids_out_ptr,
    w_out_ptr,
    num_tokens,
    num_valid,
    pad_to,
    hidden,
    stride_x,
    stride_out,
    stride_sf,
    stride_sf_col,
    stride_ids_in,
    stride_w_in,
    stride_ids_out,
    stride_w_out,
    rsf,
    TOPK: tl.constexpr,
    TOPK_P2: tl.constexpr,
    GROUP: tl.constexpr,
    GROUPS_PER_PROG: tl.constexpr,
    BLOCK_M: tl.constexpr,
    UE8M0: tl.constexpr,
    PAD_BLOCK: tl.constexpr,
    USE_PDL: tl.constexpr,
    TRIGGER: tl.constexpr,
):
    if USE_PDL:
        gdc_wait()  # the producer of x / the routing may still be running: wait before the first load
    pid_m = tl.program_id(0)
    pid_k = tl.program_id(1)
    token_progs = tl.cdiv(num_tokens, BLOCK_M)
    if pid_m >= token_progs:
        # rows [num_tokens, pad_to) of the buffer: no token, id -1, weight 0 (the kernel reads them)
        if pid_k == 0:
            first = num_tokens + (pid_m - token_progs) * PAD_BLOCK
            pad_rows_tile(ids_out_ptr, w_out_ptr, first, pad_to, stride_ids_out, stride_w_out, TOPK, TOPK_P2, PAD_BLOCK)
        if TRIGGER:
            gdc_launch_dependents()
        return
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows < num_tokens
    stage_tile(x_ptr, out_ptr, sf_ptr, rows, row_ok, pid_k, hidden, stride_x, stride_out, stride_sf, stride_sf_col,
               GROUP, GROUPS_PER_PROG, BLOCK_M, UE8M0)  # fmt: skip
    if pid_k == 0:
        kk = tl.arange(0, TOPK_P2)
        kmask = row_ok[:, None] & (kk[None, :] < TOPK)
        ids = tl.load(ids_in_ptr + rows[:, None] * stride_ids_in + kk[None, :], mask=kmask, other=-1).to(tl.int64)
        w = tl.load(w_in_ptr + rows[:, None] * stride_w_in + kk[None, :], mask=kmask, other=0.0).to(tl.float32) * rsf
        pad = (rows >= num_valid)[:, None] | (ids < 0)
        ids = tl.where(pad, -1, ids)
        w = tl.where(pad, 0.0, w)
        tl.store(ids_out_ptr + rows[:, None] * stride_ids_out + kk[None, :], ids, mask=kmask)
        tl.store(w_out_ptr + rows[:, None] * stride_w_out + kk[None, :], w, mask=kmask)
    if TRIGGER:
        gdc_launch_dependents()  # after this thread's stores, as DeepGEMM's pre-dispatch triggers (lines 100-102)


def stage(
    x: torch.Tensor,
    topk_ids: torch.Tensor,
    topk_weights: torch.Tensor,
    out_x: torch.Tensor,
    out_sf: torch.Tensor,
    out_ids: torch.Tensor,
    out_w: torch.Tensor,
    *,
    recipe: str,
    routed_scaling_factor: float = 1.0,
    num_valid: int | None = None,
    pad_to: int | None = None,
    block_m: int | None = None,
    groups_per_prog: int | None = None,
    num_warps: int = 4,
    pdl: bool = False,
    trigger: bool = False,
) -> None:
    """Quantize ``x`` and repack the routing into preallocated buffers (no allocation, no sync).

    ``recipe``: ``"fp8_g128"`` (``out_sf`` fp32 ``[T, H/128]``) or ``"mxfp8"`` (``out_sf`` int32
    ``[T, H/128]``, four UE8M0 bytes each); ``out_sf`` may be a strided view (MN-major buffers).
    ``out_x`` is float8_e4m3fn ``[>=T, H]`` with unit column stride; ``out_ids`` int64 and ``out_w``
    fp32 ``[>=T, k]``. Every tensor may have any row stride (``topk_ids`` is often a slice of a
    wider top-k result) but unit column stride. Rows ``>= num_valid`` (default ``T``) and negative ids are
    padding (id -1, weight 0); with ``pad_to`` (the buffer's capacity) rows ``[T, pad_to)`` of
    ``out_ids``/``out_w`` are written as padding too, as DeepGEMM's SM90 kernel expects (its own
    ``mega_moe_pre_dispatch_sm90`` fills them the same way). ``pdl``: launch as a programmatic
    dependent launch that waits for its predecessor before reading (module docstring).
    """
    t, h = x.shape
    k = topk_ids.shape[1]
    for name, tensor in (
        ("x", x),
        ("out_x", out_x),
        ("topk_ids", topk_ids),
        ("topk_weights", topk_weights),
        ("out_ids", out_ids),
        ("out_w", out_w),
    ):
        if tensor.dim() != 2 or (tensor.shape[0] > 1 and tensor.stride(1) != 1):
            raise ValueError(f"{name} must be 2-D with unit column stride (rows may be strided)")
    bm, gpp = tile(t, h, recipe, block_m, groups_per_prog)
    group, ue8m0 = RECIPES[recipe]
    pad = max(t, pad_to or t)
    if pad == 0:
        return
    pad_block = 256
    grid = (triton.cdiv(t, bm) + triton.cdiv(pad - t, pad_block), triton.cdiv(h, group * gpp))
    _stage_kernel[grid](
        x,
        out_x,
        out_sf,
        topk_ids,
        topk_weights,
        out_ids,
        out_w,
        t,
        t if num_valid is None else num_valid,
        pad,
        h,
        x.stride(0),
        out_x.stride(0),
        out_sf.stride(0),
        out_sf.stride(1),
        topk_ids.stride(0),
        topk_weights.stride(0),
        out_ids.stride(0),
        out_w.stride(0),
        float(routed_scaling_factor),
        TOPK=k,
        TOPK_P2=triton.next_power_of_2(k),
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
