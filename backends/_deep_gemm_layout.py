"""DeepGEMM mega-MoE symmetric-buffer layouts, per library build: pure integer arithmetic.

Ported (reimplemented, not copied) from the public DeepGEMM sources:

* SM100, ring workspace: ``csrc/apis/mega.hpp`` ``get_symm_buffer_size_for_mega_moe`` and
  ``get_ring_limit_for_mega_moe``, ``csrc/jit_kernels/heuristics/mega_moe.hpp``
  ``get_num_wave_pool_tokens``, ``deep_gemm/include/deep_gemm/layout/mega_moe.cuh``
  (``Workspace``, ``get_num_max_pool_tokens``, ``get_num_sf_ring_tokens``, ``Data``,
  ``Buffer``) and the ring choice in ``deep_gemm/mega/__init__.py``
  ``get_symm_buffer_for_mega_moe``, all at deepseek-ai/DeepGEMM
  ``refs/pull/323/head`` = 8ddf7f96cb3300011f69458e88c7651a1e305a8c.
* SM90: ``csrc/apis/sm90_mega.hpp`` ``get_symm_buffer_size_for_sm90_mega_moe`` and
  ``SM90Workspace`` in the same ``layout/mega_moe.cuh``, token alignment from
  ``sgl_deep_gemm/__init__.py`` ``get_symm_buffer_for_sm90_mega_moe`` (same commit).
* vLLM 0.33.0's vendored DeepGEMM 2.8.1: ``MegaMoEBuffer``, ``Workspace`` and
  ``MegaMoESignals`` in ``vllm/third_party/deep_gemm/include/deep_gemm/layout/mega_moe.cuh``
  (wheel vllm-0.33.0, commit g4ba787ec9). Its host code (ring choice, token alignment) is
  compiled into ``_C_extension.abi3.so`` and not in the wheel as source; the ring and the
  alignment are assumed to follow the 8ddf7f96 rules with 2.8.1's constants, and every
  value derived from them says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from moe_oracle.fit.derived import Derived, Shape, align, ceil_div

DG_PR323_COMMIT = "8ddf7f96cb3300011f69458e88c7651a1e305a8c"
DG_PR323 = f"deepseek-ai/DeepGEMM@{DG_PR323_COMMIT[:8]} (refs/pull/323/head)"
DG_VLLM = "vllm-0.33.0 wheel, vllm/third_party/deep_gemm (DeepGEMM 2.8.1) include/deep_gemm/layout/mega_moe.cuh"


@dataclass(frozen=True)
class DeepGemmLineage:
    """The constants one DeepGEMM build's ``layout/mega_moe.cuh`` fixes."""

    name: str
    candidate_block_ms: tuple[int, ...]
    source: str

    @property
    def min_block_m(self) -> int:
        return min(self.candidate_block_ms)

    @property
    def max_block_m(self) -> int:
        return max(self.candidate_block_ms)

    @property
    def lcm_block_m(self) -> int:
        """``kLCMCandidateBlockM``, also the token alignment (``get_token_alignment_for_mega_moe``)."""
        from math import lcm

        return lcm(*self.candidate_block_ms)


#: deepseek-ai/DeepGEMM PR #323 (SM100 ring workspace and SM90 kernels): kCandidateBlockM.
PR323 = DeepGemmLineage("pr323", (8, 16, 32, 64, 96, 128, 192), DG_PR323)
#: DeepGEMM 2.8.1 as vendored by vLLM 0.33.0: kCandidateBlockM adds 240 (LCM 1920).
VLLM_281 = DeepGemmLineage("vllm-2.8.1", (8, 16, 32, 64, 96, 128, 192, 240), DG_VLLM)


def pool_tokens(lineage: DeepGemmLineage, ranks: int, tokens: int, topk: int, experts_per_rank: int) -> int:
    """``get_num_max_pool_tokens``: worst-case received token-expert pairs plus per-expert padding."""
    recv = ranks * tokens
    per_token = min(topk, experts_per_rank)
    return align(recv * per_token + experts_per_rank * (lineage.max_block_m - 1), lineage.lcm_block_m)


def sf_ring_tokens(lineage: DeepGemmLineage, ring_tokens: int) -> int:
    """Max over candidate BLOCK_M of ``get_num_sf_ring_tokens(ring, block_m)``."""
    return max((ring_tokens // bm) * align(bm, 128) for bm in lineage.candidate_block_ms)


def wave_pool_tokens(ranks: int, topk: int, tokens: int, experts_per_wave: int, block_m: int) -> int:
    """``get_num_wave_pool_tokens`` (heuristics/mega_moe.hpp)."""
    if tokens % block_m:
        raise ValueError(f"num_max_tokens_per_rank={tokens} is not a multiple of {block_m}")
    from_all = tokens * ranks
    if experts_per_wave == 1:
        return from_all
    return min(from_all * experts_per_wave, align(from_all * topk + experts_per_wave * (block_m - 1), block_m))


def ring_limits(lineage: DeepGemmLineage, tokens: int, experts_per_rank: int, topk: int, ranks: int) -> tuple[int, int]:
    """``get_ring_limit_for_mega_moe``: (one expert per wave, every local expert in one wave)."""
    lcm = lineage.lcm_block_m
    return (
        wave_pool_tokens(ranks, topk, tokens, 1, lcm),
        wave_pool_tokens(ranks, topk, tokens, experts_per_rank, lcm),
    )


#: ``get_symm_buffer_for_mega_moe``: at or above this many tokens per rank the call is assumed
#: to be prefill and the ring gets the full pool.
PREFILL_RING_THRESHOLD = 6144


def ring_tokens(lineage: DeepGemmLineage, ranks: int, experts: int, tokens: int, topk: int) -> tuple[int, str]:
    """The ring size ``get_symm_buffer_for_mega_moe`` picks, and which rule picked it."""
    epr = experts // ranks
    lo, hi = ring_limits(lineage, tokens, epr, topk, ranks)
    lcm = lineage.lcm_block_m
    if tokens >= PREFILL_RING_THRESHOLD:
        ring = align(ranks * tokens * min(topk, epr) + epr * (lineage.max_block_m - 1), lcm)
        rule = (
            f"tokens >= {PREFILL_RING_THRESHOLD}: full pool = align(ranks*tokens*min(topk, experts_per_rank) + "
            f"experts_per_rank*({lineage.max_block_m}-1), {lcm})"
        )
    else:
        # sized for EP72 x 4K-token decode (432 experts, top-6): the budget DeepGEMM reserves
        ring = ring_limits(lineage, align(4096, lcm), 432 // 72, 6, 72)[1]
        rule = f"tokens < {PREFILL_RING_THRESHOLD}: EP72/4K-decode budget ring_limit(align(4096,{lcm}), 6, 6, 72).max"
    clamped = min(max(ring, lo), hi)
    if clamped != ring:
        rule += f", clamped to [{lo}, {hi}]"
    return clamped, rule


def sum_terms(terms: list[tuple[str, int]]) -> int:
    return sum(v for _, v in terms)


def symm_buffer_bytes(
    shape: Shape,
    terms: list[tuple[str, int]],
    *,
    formula: str,
    inputs: dict[str, Any],
    source: str,
    assumption: str | None,
) -> Derived:
    """The symmetric buffer's bytes per rank as one derived quantity, with its byte terms (every build)."""
    return Derived(
        key="deepgemm_symm_buffer_bytes",
        label=f"DeepGEMM symmetric buffer per rank, {shape.label()}",
        value=sum_terms(terms),
        unit="bytes",
        formula=formula,
        inputs=inputs,
        source=source,
        assumption=assumption,
        terms=tuple(terms),
    )


def sm100_buffer_terms_pr323(
    ranks: int,
    experts: int,
    tokens: int,
    topk: int,
    hidden: int,
    inter: int,
    ring: int,
    *,
    mma_type: str = "fp8xfp4",
    fp4_acts: bool = False,
    fp8_combine: bool = False,
) -> list[tuple[str, int]]:
    """Byte terms of ``get_symm_buffer_size_for_mega_moe`` (SM100 ring workspace, 8ddf7f96)."""
    if experts % ranks:
        raise ValueError(f"num_experts={experts} % num_ranks={ranks} != 0")
    lin = PR323
    with_sf = mma_type == "fp8xfp4"
    elem = 2 if mma_type == "bf16xbf16" else 1
    epr = experts // ranks
    pool = pool_tokens(lin, ranks, tokens, topk, epr)
    ring_blocks = ring // lin.min_block_m
    ws = 32 + experts * 8 * 2 + epr * 8 + 4 * ring_blocks * 4 + epr * ranks * (ranks * tokens) * 4 + pool * 12
    ws = align(ws, 16)
    fp4_acts = fp4_acts and with_sf
    fp8_combine = fp8_combine and with_sf
    in_bytes = hidden // 2 if fp4_acts else hidden * elem
    comb_bytes = hidden if fp8_combine else hidden * 2
    comb_sf = hidden // 128 if fp8_combine else 0
    in_sf = hidden // 32 if with_sf else 0
    mid_sf = inter // 32 if with_sf else 0
    sf_ring = sf_ring_tokens(lin, ring)
    return [
        ("workspace", ws),
        ("x", tokens * in_bytes),
        ("x_sf", tokens * in_sf),
        ("topk_idx", tokens * topk * 8),
        ("topk_weights", tokens * topk * 4),
        ("l1_acts (ring)", ring * in_bytes),
        ("l1_acts_sf (sf ring)", sf_ring * in_sf),
        ("l1_topk_weights (ring)", ring * 4),
        ("l2_acts (ring)", ring * inter * elem),
        ("l2_acts_sf (sf ring)", sf_ring * mid_sf),
        ("combine", topk * tokens * comb_bytes),
        ("combine_sf", topk * tokens * comb_sf),
    ]


def sm90_buffer_terms_pr323(
    ranks: int, experts: int, tokens: int, topk: int, hidden: int, inter: int, *, lineage: DeepGemmLineage = PR323
) -> list[tuple[str, int]]:
    """Byte terms of ``get_symm_buffer_size_for_sm90_mega_moe`` (SM90Workspace, full pool, 8ddf7f96).

    ``lineage`` gives the BLOCK_M constants (sgl-deep-gemm 0.2.3.post2 keeps this layout with
    240 added to the candidates)."""
    if experts % ranks:
        raise ValueError(f"num_experts={experts} % num_ranks={ranks} != 0")
    lin = lineage
    epr = experts // ranks
    pool = pool_tokens(lin, ranks, tokens, topk, epr)
    pool_blocks = pool // lin.min_block_m
    ws = (
        32
        + experts * 8 * 2
        + epr * 8
        + align(pool_blocks, 2) * 4
        + pool_blocks * 8
        + epr * ranks * (ranks * tokens) * 4
        + pool * 12
    )
    ws = align(ws, 16)
    sf_pool = sf_ring_tokens(lin, pool)
    return [
        ("workspace", ws),
        ("x", tokens * hidden),
        ("x_sf", tokens * (hidden // 32)),
        ("topk_idx", tokens * topk * 8),
        ("topk_weights", tokens * topk * 4),
        ("l1_acts (pool)", pool * hidden),
        ("l1_acts_sf (padded sf pool)", sf_pool * (hidden // 32)),
        ("l1_topk_weights (pool)", pool * 4),
        ("l2_acts (pool)", pool * inter),
        ("l2_acts_sf (padded sf pool, fp32 per 64)", sf_pool * (inter * 4 // 64)),
        ("combine (bf16)", topk * tokens * hidden * 2),
    ]


def mega_moe_signals_bytes_v281(num_max_ranks: int = 72, locality_domains: int = 2) -> int:
    """``sizeof(MegaMoESignals)`` of DeepGEMM 2.8.1 (struct laid out with its ``alignas(128)``)."""

    def at(offset: int, alignment: int) -> int:
        return align(offset, alignment)

    off = 4 * 4 + 4 + 2 * 4  # grid_sync_count[4], nvl_barrier_counter, nvl_barrier_signals[2]
    off += 4 * locality_domains * 4  # l1/l2/shared_l1/shared_l2 task counts
    off = at(off, 128) + num_max_ranks * 8  # combine_ready_grid_idx
    off = at(off, 128) + num_max_ranks * 8  # peer_grid_idx
    off = at(off, 128) + 2048 * 8  # expert_send_count[kNumMaxExperts]
    off += 2048 * 8  # expert_recv_count
    off += 512 * 8  # expert_recv_count_sum[kNumMaxExpertsPerRank]
    ring = 1 << 20  # kNumMaxRingBlocks
    off += ring * 4  # l1_full_count
    off += ring * 4  # l1_empty_count
    off = at(off, 8) + ring * 8  # l2_full_mask
    off += ring * 4  # l2_empty_count
    off += (1 << 15) * 4  # shared_l2_full_count[kNumMaxSharedL2Blocks]
    return at(off, 128)


def sm100_buffer_terms_v281(
    ranks: int,
    experts: int,
    tokens: int,
    topk: int,
    hidden: int,
    inter: int,
    ring: int,
    *,
    num_shared_experts: int = 0,
) -> list[tuple[str, int]]:
    """Byte terms of DeepGEMM 2.8.1 ``MegaMoEBuffer`` for ``mma_type='fp8xfp4'`` (vLLM 0.33.0)."""
    if experts % ranks:
        raise ValueError(f"num_experts={experts} % num_ranks={ranks} != 0")
    lin = VLLM_281
    epr = experts // ranks
    pool = pool_tokens(lin, ranks, tokens, topk, epr)
    ws = align(mega_moe_signals_bytes_v281() + experts * tokens * 4 + pool * 12, 16)
    shared = num_shared_experts > 0
    shared_inter = inter * num_shared_experts
    shared_sf_tokens = ceil_div(tokens, lin.min_block_m) * 128 if shared else 0
    sf_ring = sf_ring_tokens(lin, ring)
    return [
        ("workspace (signals + source indices + combine metadata)", ws),
        ("x", tokens * hidden),
        ("x_sf", tokens * (hidden // 32)),
        ("topk_idx", tokens * topk * 8),
        ("topk_weights", tokens * topk * 4),
        ("shared_l1_acts_sf", shared_sf_tokens * (hidden // 32)),
        ("shared_l2_acts", (tokens if shared else 0) * shared_inter),
        ("shared_l2_acts_sf", shared_sf_tokens * (shared_inter // 32)),
        ("l1_acts (ring)", ring * hidden),
        ("l1_acts_sf (sf ring)", sf_ring * (hidden // 32)),
        ("l1_topk_weights (ring)", ring * 4),
        ("l2_acts (ring)", ring * inter),
        ("l2_acts_sf (sf ring)", sf_ring * (inter // 32)),
        ("combine (bf16, top-k + shared slot)", (topk + (1 if shared else 0)) * tokens * hidden * 2),
    ]
