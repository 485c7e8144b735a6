"""Tile geometry of one MoE layer call: the blocks the kernel's own heuristics pick, and the work they imply.

The cost model's terms (:mod:`moe_oracle.cost.calibration`) count work in the units the kernels schedule: M-blocks
of an expert's tokens, (M-block, N-block) tiles, the weight bytes of the busiest SM. Which block sizes a call runs
with is read from DeepGEMM PR #323 (8ddf7f96), ``csrc/jit_kernels/heuristics/sm90_mega_moe.hpp``:

- ``get_block_config_for_mega_moe_sm90`` (FP8) and ``..._sm90_fp4``: BLOCK_M 128 (512 epilogue threads) once the
  expected tokens per expert ``T * ranks * top_k / E`` reach 64, else BLOCK_M 64;
- ``get_mega_moe_config_sm90``: FP8 BLOCK_N 128 with swapAB (``should_use_swap_ab_for_mega_moe_sm90``: BLOCK_M 64
  and T <= 128), 256 at BLOCK_M 128, 256 at BLOCK_M 64 for I >= 3072 and 0.25+ tokens per expert, else 128; the
  FP8xMXFP4 kernel always runs BLOCK_N 128 (``get_mega_moe_config_sm90_fp4``), with swapAB up to 24 tokens per
  expert for I <= 2048 or I >= 3072 (``csrc/apis/sm90_mega.hpp:180-182``, default on);
- ``get_num_experts_per_wave_for_mega_moe_sm90``: every local expert in one wave unless 1 to 4 tokens per expert
  are expected, then the smallest wave whose L1 blocks fill twice the SMs, searched for the fullest last wave
  (``get_num_experts_per_wave_for_mega_moe``, ``csrc/jit_kernels/heuristics/mega_moe.hpp``);
- the FP8xMXFP4 kernel's swapAB blocks (``deep_gemm/include/deep_gemm/impls/sm90_fp8_fp4_mega_moe.cuh``,
  ``run_swap_ab_l1`` / ``run_swap_ab_l2``) run an MMA as wide as the block's tokens rounded up to 8 and then to
  the next instantiated width: 8, 16, (24), 64 in the first GEMM and 8, 16, (24), 32, 64 in the second (24 only
  for I <= 2048 with 16 experts per wave, ``kSwapABFlashN24Dispatch``), so an expert with 17 tokens runs the
  first GEMM 64 wide, not 24 (:data:`FP4_SWAP_L1_WIDTHS`);
- the scheduler (``deep_gemm/include/deep_gemm/scheduler/mega_moe.cuh``) deals each wave's L1 tiles, then its L2
  tiles, round robin over the SMs, and every SM walks every local expert of the wave to find its tiles (a lookup
  over ``ceil(E_local / 32)`` registers per expert).

The non-fused path's grouped GEMMs (``m_grouped_fp8_gemm_nt_contiguous``) run BLOCK_M = the contiguous layout's
M alignment, 128 on SM90, and the BLOCK_N DeepGEMM's own search picks for the rows launched, per GEMM and layout
(:mod:`moe_oracle.cost.grouped_gemm`, a port checked against DeepGEMM's printed configurations: mostly 192 from
T = 16, 64-192 at T = 1; W2 of the psum layout 128 where H / 192 is odd). With the psum layout every SM's scheduler
walks the per-expert end offsets one expert at a time to find its blocks (``get_next_block``,
``deep_gemm/include/deep_gemm/scheduler/gemm.cuh:217-234``: a dependent load of ``grouped_layout[g]`` per step, and
the last call walks to the final expert before it returns false), so each GEMM walks every local expert; what the
tiles do not hide is the walk before an SM's first tile and after its last (:func:`exposed_walk`). Units: tokens
per rank, bytes, tiles, walk steps; nothing here is a time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache

from moe_oracle.cost.grouped_gemm import best_layout, rows_bound

#: SMs of an H200 / H100 SXM (the SM90 parts the calibrations were measured on)
SM90_SMS = 132
#: tokens per expert from which PR #323 switches to BLOCK_M 128 (``auto_split_mn``)
LARGE_M_TOKENS_PER_EXPERT = 64.0
#: the largest T at which the SM90 FP8 kernel runs swapAB
SWAP_AB_MAX_TOKENS = 128
#: the largest expected tokens per expert at which the SM90 FP8xMXFP4 kernel runs swapAB (its "flash"/"pro" shapes)
FP4_SWAP_AB_MAX_TOKENS_PER_EXPERT = 24.0
#: the smallest H at which the SM90 FP8 kernel at BLOCK_M 128 x BLOCK_N 256 runs its split-phase hot path
#: (``split_phase_hot_path``, ``csrc/jit_kernels/impls/sm90_fp8_mega_moe.hpp:181-182``)
SPLIT_PHASE_MIN_HIDDEN = 7168
#: BLOCK_M of DeepGEMM's contiguous grouped GEMM on SM90 (``get_mk_alignment_for_contiguous_layout``)
GROUPED_BLOCK_M = 128
#: the psum layout's scheduler walk (:func:`exposed_walk`), measured on the H200: steps hidden by the kernel's prologue,
#: and the steps one MB of a tile's weights takes to load at one SM's share of the copy bandwidth (4.3 TB/s over 132
#: SMs) when a step takes 69 ns
WALK_HIDDEN_STEPS = 35
WALK_STEPS_PER_TILE_MB = 1.0 / (4.3e6 / SM90_SMS * 0.069e-6)


#: the MMA widths (token rows) the SM90 FP8xMXFP4 kernel instantiates for a swapAB block, first and second GEMM,
#: without and with ``kSwapABFlashN24Dispatch`` (I <= 2048, 16 experts per wave); a block of ``v`` tokens runs the
#: smallest width >= ``v`` rounded up to 8
FP4_SWAP_L1_WIDTHS = ((8, 16, 64), (8, 16, 24, 64))
FP4_SWAP_L2_WIDTHS = ((8, 16, 32, 64), (8, 16, 24, 32, 64))


class Kernel(Enum):
    """Which heuristics pick a path's blocks."""

    SM90_FP8 = "deep_gemm_mega_moe:sm90_fp8xfp8"
    SM90_FP4 = "deep_gemm_mega_moe:sm90_fp8xfp4"
    GROUPED = "nonfused"  # DeepGEMM's contiguous grouped GEMMs of a non-fused path (m_indices layout)
    GROUPED_PSUM = "nonfused:psum"  # the same with ``use_psum_layout`` (its own multicast rule)


class Regime(Enum):
    """The block configuration a call runs with; each has its own cost per tile (pipeline fill, epilogue)."""

    SWAP_AB = "BLOCK_M 64, swapAB"
    SPLIT_N = "BLOCK_M 64"
    LARGE_M = "BLOCK_M 128"


def kernel_for(path: str) -> Kernel | None:
    """The heuristics behind a calibrated path key; None for a path whose blocks are not modelled (SM100, AITER)."""
    if path.startswith("nonfused:"):
        return Kernel.GROUPED_PSUM if path.endswith("_psum") else Kernel.GROUPED
    return next((k for k in (Kernel.SM90_FP8, Kernel.SM90_FP4) if k.value == path), None)


@dataclass(frozen=True)
class Geometry:
    """One call's blocks. ``m_blocks``: expected M-blocks summed over the local experts (an expert with ``n``
    tokens runs ``ceil(n / block_m)``); ``tiles``: expected (M-block, N-block) tiles of both GEMMs the scheduler
    visits (the m_indices layout: every launched block, padding included); ``critical_mb``: weight MB the busiest
    SM streams (whole rounds of tiles over the SMs, per GEMM); ``expert_waves``: rounds of experts the scheduler
    runs one after the other (1: all at once). ``block_n``: of the first GEMM (L1 / W13); ``block_n_l2`` of the
    second (the fused kernels use one BLOCK_N for both). ``mma_rows_l1`` / ``mma_rows_l2``: expected token rows the
    MMAs of each GEMM compute, padding included, summed over the M-blocks (``m_blocks * block_m`` except in the
    FP8xMXFP4 kernel's swapAB blocks, which run as wide as their tokens need: :data:`FP4_SWAP_L1_WIDTHS`).
    ``split_phase``: the SM90 FP8 kernel's split-phase hot path (BLOCK_M 128, BLOCK_N 256, H >=
    :data:`SPLIT_PHASE_MIN_HIDDEN`). ``padding_mb``: MB of A and B tiles the m_indices layout's all-padding blocks
    load (each visited block beyond ``m_blocks``, every K-block of both GEMMs); 0 for the other kernels.
    ``walk_steps``: the psum layout's scheduler walk the tiles do not hide, both GEMMs (:func:`exposed_walk`); 0 for
    the other kernels."""

    kernel: Kernel
    regime: Regime
    block_m: int
    block_n: int
    experts_per_wave: int
    m_blocks: float
    tiles: float
    critical_mb: float
    expert_waves: int
    block_n_l2: int = 0
    mma_rows_l1: float = 0.0
    mma_rows_l2: float = 0.0
    split_phase: bool = False
    padding_mb: float = 0.0
    walk_steps: float = 0.0


def swap_rows(tokens: int, block_m: int, widths: tuple[int, ...]) -> int:
    """Token rows the MMAs of one expert's ``tokens`` compute in swapAB blocks of ``block_m``: each block runs the
    smallest of ``widths`` that holds its tokens rounded up to 8 (``block_m`` if none does)."""
    full, rest = divmod(tokens, block_m)
    last = 0
    if rest:
        need = -(-rest // 8) * 8
        last = next((w for w in widths if w >= need), block_m)
    return full * block_m + last


@lru_cache(maxsize=4096)
def _expected_per_expert(
    num_experts: int, top_k: int, tokens: float, ep: int, block_m: int, widths: tuple[int, ...] | None
) -> float:
    """E[f(n_e)] for one expert, ``n_e`` ~ Binomial(``tokens * ep``, ``top_k / num_experts``): f is
    ``ceil(n / block_m)`` (``widths`` None) or :func:`swap_rows` over ``widths``."""
    n = max(1, round(tokens * ep))
    p = min(1.0, top_k / num_experts)

    def f(x: int) -> float:
        return math.ceil(x / block_m) if widths is None else swap_rows(x, block_m, widths)

    if p >= 1.0:
        return f(n)
    mean, sd = n * p, math.sqrt(n * p * (1.0 - p))
    lo, hi = max(1, int(mean - 10 * sd)), min(n, int(mean + 10 * sd) + 2)
    base = math.lgamma(n + 1)
    lp, lq = math.log(p), math.log1p(-p)
    total = 0.0
    for x in range(lo, hi + 1):
        log_pmf = base - math.lgamma(x + 1) - math.lgamma(n - x + 1) + x * lp + (n - x) * lq
        total += math.exp(log_pmf) * f(x)
    return total


def expected_m_blocks(
    experts_per_rank: int, num_experts: int, top_k: int, tokens: float, ep: int, block_m: int
) -> float:
    """Expected sum over one rank's experts of ``ceil(n_e / block_m)`` when ``tokens * ep`` tokens each pick
    ``top_k`` of ``num_experts`` experts uniformly: ``n_e`` is Binomial(``tokens * ep``, ``top_k / num_experts``)."""
    return experts_per_rank * _expected_per_expert(num_experts, top_k, tokens, ep, block_m, None)


def expected_swap_rows(
    experts_per_rank: int, num_experts: int, top_k: int, tokens: float, ep: int, block_m: int, widths: tuple[int, ...]
) -> float:
    """Expected token rows the swapAB MMAs compute, summed over one rank's experts (:func:`swap_rows`), under the
    same uniform routing as :func:`expected_m_blocks`."""
    return experts_per_rank * _expected_per_expert(num_experts, top_k, tokens, ep, block_m, widths)


#: ``get_num_experts_per_wave_for_mega_moe_sm90_fp4``'s first-match rules for BLOCK_M 64 x BLOCK_N 128:
#: (tokens per expert from, to, from inclusive, the local expert count it needs to divide, experts per wave;
#: 0 = every local expert), for I <= 2048 ("flash") and I >= 3072 ("pro")
FP4_FLASH_WAVES = (
    (0.75, 1.0, True, 16, 16),
    (1.5, 2.0, True, 16, 16),
    (3.0, 6.0, True, 16, 16),
    (6.0, 12.0, True, 32, 32),
    (6.0, 12.0, True, 8, 8),
    (24.0, 32.0, True, 16, 16),
    (12.0, 24.0, True, 32, 32),
    (12.0, 24.0, True, 8, 8),
    (32.0, 64.0, True, 16, 16),
)
FP4_PRO_WAVES = (
    (0.0, 0.25, False, 16, 16),
    (0.25, 0.375, True, 16, 16),
    (0.375, 0.75, True, 16, 16),
    (0.25, 1.0, True, 24, 24),
    (1.0, 1.5, True, 1, 0),
    (1.5, 3.0, True, 16, 16),
    (3.0, 6.0, True, 8, 8),
    (6.0, 12.0, True, 16, 16),
    (6.0, 12.0, True, 8, 8),
    (12.0, 24.0, True, 24, 24),
    (12.0, 24.0, True, 8, 8),
    (24.0, 64.0, True, 8, 8),
)


def _fp4_rule(experts: int, per_expert: float, inter: int) -> int | None:
    rules = FP4_FLASH_WAVES if inter <= 2048 else FP4_PRO_WAVES if inter >= 3072 else ()
    for lo, hi, inclusive, divisor, wave in rules:
        if (per_expert >= lo if inclusive else per_expert > lo) and per_expert < hi:
            if wave == 0:
                return experts
            if experts % divisor == 0:
                return wave
    return None


def _experts_per_wave(
    kernel: Kernel, experts: int, tokens: float, top_k: int, inter: int, block_m: int, block_n: int
) -> int:
    """``get_num_experts_per_wave_for_mega_moe_sm90`` (and ``..._fp4``) with an unbounded ring (the pool holds
    every routed token)."""
    per_expert = tokens * top_k / experts
    if kernel is Kernel.SM90_FP4 and block_m == 64 and block_n == 128:
        ruled = _fp4_rule(experts, per_expert, inter)
        if ruled is not None:
            return ruled
    if per_expert < 1.0 or per_expert > 4.0:
        return experts
    l1_blocks = max(1, (2 * inter) // block_n) * max(1, math.ceil(math.ceil(per_expert) / block_m))
    if (
        kernel is Kernel.SM90_FP8
        and block_m == 64
        and inter >= 3072
        and experts * (2 * inter) // block_n >= 4 * SM90_SMS
    ):
        return experts
    fill = math.ceil(2 * SM90_SMS / l1_blocks)
    if fill >= experts:
        return experts
    if l1_blocks >= SM90_SMS:
        return fill
    best, best_tail = fill, -1.0
    for wave in range(fill, min(experts, 2 * fill) + 1):
        rest = experts % wave
        tail = 1.0 if rest == 0 else rest / wave
        if tail > best_tail:
            best, best_tail = wave, tail
    return best


def geometry(kernel: Kernel, tokens: float, hidden: int, inter: int, num_experts: int, top_k: int, ep: int) -> Geometry:
    """The blocks of one call of ``tokens`` tokens per rank on ``kernel`` (see the module docstring for sources)."""
    local = max(1, num_experts // max(ep, 1))
    per_expert = tokens * max(ep, 1) * top_k / num_experts
    grouped = kernel in (Kernel.GROUPED, Kernel.GROUPED_PSUM)
    psum_kernel = kernel is Kernel.GROUPED_PSUM
    block_n_l2 = visited_rows = 0  # the second GEMM's BLOCK_N where it has its own; rows m_indices launches
    if grouped:
        regime, block_m = Regime.LARGE_M, GROUPED_BLOCK_M
        rows = rows_bound(max(1, round(tokens)), top_k, local)
        block_n = best_layout(rows, 2 * inter, hidden, psum=psum_kernel).block_n
        block_n_l2 = best_layout(rows, hidden, inter, psum=psum_kernel).block_n
        # the m_indices layout launches every row of the bound: its scheduler visits the all-padding blocks too
        # (each a tile's overhead; their MMA is skipped), the psum layout only the blocks that hold tokens
        visited_rows = 0 if psum_kernel else rows
    elif per_expert >= LARGE_M_TOKENS_PER_EXPERT:
        regime, block_m = Regime.LARGE_M, 128
        block_n = 256 if kernel is Kernel.SM90_FP8 else 128
    else:
        block_m = 64
        if kernel is Kernel.SM90_FP8:
            swap = tokens <= SWAP_AB_MAX_TOKENS
        else:  # csrc/apis/sm90_mega.hpp:180-182: "flash" (I <= 2048) and "pro" (I >= 3072) shapes, <= 24 per expert
            swap = (inter <= 2048 or inter >= 3072) and 0 < per_expert <= FP4_SWAP_AB_MAX_TOKENS_PER_EXPERT
        regime = Regime.SWAP_AB if swap else Regime.SPLIT_N
        wide = kernel is Kernel.SM90_FP8 and not swap and inter >= 3072 and per_expert >= 0.25
        block_n = 256 if wide else 128
    block_n_l2 = block_n_l2 or block_n
    wave = local if grouped else _experts_per_wave(kernel, local, tokens, top_k, inter, block_m, block_n)
    m_blocks = expected_m_blocks(local, num_experts, top_k, tokens, max(ep, 1), block_m)
    visited = max(m_blocks, visited_rows / block_m)
    l1_n, l2_n = max(1, math.ceil(2 * inter / block_n)), max(1, math.ceil(hidden / block_n_l2))
    waves = math.ceil(local / wave)  # each wave's L1 tiles, then its L2 tiles, in whole rounds over the SMs
    rounds_l1 = waves * math.ceil(m_blocks / waves * l1_n / SM90_SMS)
    rounds_l2 = waves * math.ceil(m_blocks / waves * l2_n / SM90_SMS)
    critical = (rounds_l1 * block_n * hidden + rounds_l2 * block_n_l2 * inter) / 1e6
    rows_l1 = rows_l2 = m_blocks * block_m
    # sm90_fp8_gemm_1d2d.cuh: the TMA warp loads A and B for every K-block of every block it is dealt (expert 0's
    # weights for an all-padding block, whose m_indices are -1), the math warps wait for each and skip the MMA
    padding = max(0.0, visited - m_blocks)
    padding_mb = padding * (l1_n * (block_m + block_n) * hidden + l2_n * (block_m + block_n_l2) * inter) / 1e6
    if kernel is Kernel.SM90_FP4 and regime is Regime.SWAP_AB:
        n24 = int(inter <= 2048 and wave == 16)  # kSwapABFlashN24Dispatch
        args = (local, num_experts, top_k, tokens, max(ep, 1), block_m)
        rows_l1 = expected_swap_rows(*args, FP4_SWAP_L1_WIDTHS[n24])
        rows_l2 = expected_swap_rows(*args, FP4_SWAP_L2_WIDTHS[n24])
    return Geometry(
        kernel=kernel,
        regime=regime,
        block_m=block_m,
        block_n=block_n,
        experts_per_wave=wave,
        m_blocks=m_blocks,
        tiles=visited * (l1_n + l2_n),
        critical_mb=critical,
        expert_waves=waves,
        block_n_l2=block_n_l2,
        mma_rows_l1=rows_l1,
        mma_rows_l2=rows_l2,
        split_phase=kernel is Kernel.SM90_FP8 and (block_m, block_n) == (128, 256) and hidden >= SPLIT_PHASE_MIN_HIDDEN,
        padding_mb=padding_mb,
        walk_steps=exposed_walk(local, rounds_l1, block_n * hidden / 1e6)
        + exposed_walk(local, rounds_l2, block_n_l2 * inter / 1e6)
        if psum_kernel
        else 0.0,
    )


def exposed_walk(local_experts: int, tiles_per_sm: int, tile_mb: float) -> float:
    """Steps of one psum-layout GEMM's scheduler walk (one per local expert) on the critical path of an SM dealt
    ``tiles_per_sm`` tiles of ``tile_mb`` MB of weights each.

    The walk starts while the kernel's prologue runs (:data:`WALK_HIDDEN_STEPS` of it are hidden there) and is split
    by the SM's tiles into ``tiles + 1`` even segments (its tiles sit evenly through the experts: block ``sm + i x
    SMs``, experts in order). The segment before the first tile and the one after the last are exposed; a segment
    between two tiles is exposed only by what it outlasts the earlier tile's loads (:data:`WALK_STEPS_PER_TILE_MB`
    converts a tile's MB to the steps the same time walks). An SM without a tile walks all of it.

    Measured on the H200 (``benchmarks/results/h200/2026-12-03/probe_experts``): at H 2048, I 512, top-8, T = 1 (one
    tile per SM) psum minus m_indices is 5.0, 12.4, 30.4, 64.6 and 136.8 us at 64, 128, 256, 512 and 1024 experts,
    0.138 us per expert for the two GEMMs (69 ns a step each) less 4.8 us (35 steps); at T = 8 with 1024 experts
    (three and eight tiles per SM in the two GEMMs, each far shorter than a segment) still 127 us, where this counts
    0.72 of the T = 1 walk; at H 4096, I 2048 (two tiles per SM) 2.7 and 54.4 us at 64 and 512 experts."""
    segments = max(1, tiles_per_sm) + 1
    segment = max(0.0, local_experts - WALK_HIDDEN_STEPS) / segments
    between = max(0.0, segment - tile_mb * WALK_STEPS_PER_TILE_MB)
    return 2.0 * segment + (segments - 2) * between
