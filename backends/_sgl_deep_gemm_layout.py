"""sgl-deep-gemm 0.2.3.post2 (the build SGLang 0.5.23 pins) symmetric-buffer layouts: integer arithmetic.

Ported (reimplemented, not copied) from the wheel ``sgl_deep_gemm-0.2.3.post2-py3-none-manylinux2014_x86_64``:

* ``deep_gemm/include/deep_gemm/layout/mega_moe.cuh``: ``kCandidateBlockM = {8, ..., 192, 240}``,
  ``kLCMCandidateBlockM = 1920`` (lines 13-17), ``get_num_max_pool_tokens`` (20-28),
  ``get_num_max_shared_sf_tokens`` (37-40), ``MegaMoESignals`` (54-89, scalar task counts),
  ``Workspace::get_num_bytes`` (131-153: signals, source indices, combine metadata and the
  post-expert-norm sums), ``SM90Workspace`` (282-322), ``MegaMoEBuffer`` (481-619: shared-expert
  regions, combine slot per fused shared expert, per-token x scales).
* ``deep_gemm/__init__.py`` ``get_symm_buffer_for_sm90_mega_moe`` (365-379, alignment at 373) and
  ``deep_gemm/mega/__init__.py`` ``SymmBuffer.__init__`` (43-56): ``num_max_tokens_per_rank`` is
  aligned to ``_C.get_token_alignment_for_mega_moe()`` on both architectures.

The host functions (``get_symm_buffer_size_for_mega_moe``, ``..._sm90_...``) and the SM100 ring
choice are compiled into ``_C.so``; the terms below follow the header layouts, and the ring follows
the 8ddf7f96 rule with this build's constants. ``tests/engines/test_real_sglang.py`` compares
every value with ``_C`` where the wheel loads (it does on a CPU-only machine under torch 2.14.1).
"""

from __future__ import annotations

from moe_oracle_backends._deep_gemm_layout import DeepGemmLineage, pool_tokens, sf_ring_tokens

from moe_oracle.fit.derived import align, ceil_div

SGL_0232_WHEEL = "sgl-deep-gemm 0.2.3.post2 wheel (pinned by sglang 0.5.23)"
SGL_0232 = DeepGemmLineage(
    "sgl-deep-gemm-0.2.3.post2",
    (8, 16, 32, 64, 96, 128, 192, 240),
    SGL_0232_WHEEL + " deep_gemm/include/deep_gemm/layout/mega_moe.cuh",
)

#: (bits per activation element, scale-factor granularity along K; 0 = no scale factors)
MMA_KINDS = {"fp8xfp4": (8, 32), "mxf4xmxf4": (4, 32), "nvfp4xnvfp4": (4, 16), "bf16xbf16": (16, 0)}


def signals_bytes_0232(num_max_ranks: int = 72) -> int:
    """``sizeof(MegaMoESignals)`` of 0.2.3.post2 (``alignas(128)`` members, scalar task counts)."""
    off = 4 * 4 + 4 + 2 * 4  # grid_sync_count[4], nvl_barrier_counter, nvl_barrier_signals[2]
    off += 4 * 4  # l1/l2/shared_l1/shared_l2 task counts
    off = align(off, 128) + num_max_ranks * 8  # combine_ready_grid_idx
    off = align(off, 128) + num_max_ranks * 8  # peer_grid_idx
    off = align(off, 128) + 2048 * 8 + 2048 * 8 + 512 * 8  # expert send / recv counts, recv sums
    ring = 1 << 20  # kNumMaxRingBlocks
    off += ring * 4 + ring * 4  # l1_full_count, l1_empty_count
    off = align(off, 8) + ring * 8 + ring * 4  # l2_full_mask, l2_empty_count
    off += (1 << 15) * 4  # shared_l2_full_count
    return align(off, 128)


def sm100_buffer_terms_0232(
    ranks: int,
    experts: int,
    tokens: int,
    topk: int,
    hidden: int,
    inter: int,
    ring: int,
    *,
    mma_type: str = "fp8xfp4",
    num_shared_experts: int = 0,
) -> list[tuple[str, int]]:
    """Byte terms of 0.2.3.post2 ``MegaMoEBuffer`` (``use_fp8_combine`` off, as ``SymmBuffer`` builds it)."""
    if experts % ranks:
        raise ValueError(f"num_experts={experts} % num_ranks={ranks} != 0")
    bits, gran = MMA_KINDS[mma_type]
    lin = SGL_0232
    epr = experts // ranks
    pool = pool_tokens(lin, ranks, tokens, topk, epr)
    ws = align(signals_bytes_0232() + experts * tokens * 4 + pool * 12 + tokens * topk * 4, 16)
    shared = num_shared_experts > 0
    s_inter = inter * num_shared_experts
    s_sf_tokens = ceil_div(tokens, lin.min_block_m) * 128 if (shared and gran) else 0
    sf_ring = sf_ring_tokens(lin, ring) if gran else 0

    def act(n: int) -> int:
        return n * bits // 8

    def sf(n: int) -> int:
        return n // gran if gran else 0

    return [
        ("workspace (signals + source indices + combine metadata + norm sums)", ws),
        ("x", tokens * act(hidden)),
        ("x_sf", tokens * sf(hidden)),
        ("topk_idx", tokens * topk * 8),
        ("topk_weights", tokens * topk * 4),
        ("shared_l1_acts_sf", s_sf_tokens * sf(hidden)),
        ("shared_l2_acts", (tokens if shared else 0) * act(s_inter)),
        ("shared_l2_acts_sf", s_sf_tokens * sf(s_inter)),
        ("l1_acts (ring)", ring * act(hidden)),
        ("l1_acts_sf (sf ring)", sf_ring * sf(hidden)),
        ("l1_topk_weights (ring)", ring * 4),
        ("l2_acts (ring)", ring * act(inter)),
        ("l2_acts_sf (sf ring)", sf_ring * sf(inter)),
        ("combine (bf16, top-k + shared slot)", (topk + (1 if shared else 0)) * tokens * hidden * 2),
        ("x_scales", tokens * 4),
        ("l1_x_scales (ring)", ring * 4),
    ]
