"""Derived resources of the fused mega-MoE paths, computed with the kernels' own formulas.

Every function here is pure integer arithmetic (no torch, no kernel library). Each public
``derive_*`` function returns :class:`Derived` values that carry the number, its inputs, the
formula as text and the source it was ported from, so a plan can show how it got there.

DeepGEMM symmetric buffer
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

AITER MegaMoEV2 / MoRI heap
    ``max_tok_per_rank`` is ``next_power_of_2(max_num_batched_tokens)`` (vLLM 0.33
    ``models/deepseek_v4/amd/mega_moe.py``; aiter ``mega_moe_v2.py`` rejects other values for
    a8w4). The MoRI symmetric heap is not computable from public sizing code for the aiter
    build vLLM 0.33 pins, so it is *estimated* from the one published measurement (InferenceX
    DSv4 MI355X EP8 script: 7.73 GiB of MegaMoE symmetric buffers at 16384 batched tokens,
    x1.25 headroom), scaled linearly in the terms that size the dominant dispatch pool
    (EP ranks x tokens per rank x top-k x hidden), and never below vLLM's own 8 GiB default.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from moe_oracle.spec.units import format_size, next_power_of_two, parse_size

GiB = 1 << 30
MiB = 1 << 20

DG_PR323_COMMIT = "8ddf7f96cb3300011f69458e88c7651a1e305a8c"
DG_PR323 = f"deepseek-ai/DeepGEMM@{DG_PR323_COMMIT[:8]} (refs/pull/323/head)"
DG_VLLM = "vllm-0.33.0 wheel, vllm/third_party/deep_gemm (DeepGEMM 2.8.1) include/deep_gemm/layout/mega_moe.cuh"


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def align(a: int, b: int) -> int:
    """``math::align``: round ``a`` up to a multiple of ``b``."""
    return ceil_div(a, b) * b


def fmt_bytes(n: int) -> str:
    """``1.53 GiB (1,646,264,320 bytes)``."""
    if n >= GiB:
        human = f"{n / GiB:.2f} GiB"
    elif n >= MiB:
        human = f"{n / MiB:.1f} MiB"
    else:
        human = f"{n / 1024:.1f} KiB"
    return f"{human} ({n:,} bytes)"


@dataclass(frozen=True)
class Derived:
    """One derived quantity: value, how it was computed, and from what."""

    key: str
    label: str
    value: int
    unit: str
    formula: str
    inputs: dict[str, Any]
    source: str
    assumption: str | None = None
    terms: tuple[tuple[str, int], ...] = ()
    env: str | None = None

    @property
    def display(self) -> str:
        if self.unit == "bytes":
            return fmt_bytes(self.value)
        return f"{self.value:,} {self.unit}"

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "key": self.key,
            "label": self.label,
            "value": self.value,
            "unit": self.unit,
            "display": self.display,
            "formula": self.formula,
            "inputs": dict(self.inputs),
            "source": self.source,
        }
        if self.assumption:
            doc["assumption"] = self.assumption
        if self.terms:
            doc["terms"] = {name: value for name, value in self.terms}
        if self.env:
            doc["env"] = self.env
        return doc


# ---------------------------------------------------------------------------------------------
# DeepGEMM layouts
# ---------------------------------------------------------------------------------------------


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


def _sum_terms(terms: list[tuple[str, int]]) -> int:
    return sum(v for _, v in terms)


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
    ranks: int, experts: int, tokens: int, topk: int, hidden: int, inter: int
) -> list[tuple[str, int]]:
    """Byte terms of ``get_symm_buffer_size_for_sm90_mega_moe`` (SM90Workspace, full pool, 8ddf7f96)."""
    if experts % ranks:
        raise ValueError(f"num_experts={experts} % num_ranks={ranks} != 0")
    lin = PR323
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


# ---------------------------------------------------------------------------------------------
# Derivations shown in plans
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Shape:
    """The MoE shape one symmetric buffer serves (layers with equal shapes share one)."""

    experts: int
    topk: int
    hidden: int
    inter: int
    shared_experts: int = 0
    groups: tuple[str, ...] = field(default=())

    def label(self) -> str:
        names = ", ".join(self.groups) if self.groups else "?"
        return f"E{self.experts} top{self.topk} H{self.hidden} I{self.inter} (layer groups {names})"


def derive_deepgemm(
    *,
    flavour: str,
    shape: Shape,
    ranks: int,
    tokens_per_rank: int,
    tokens_origin: str,
    fuse_shared: bool = False,
    env: dict[str, str] | None = None,
) -> list[Derived]:
    """Token cap, ring and symmetric-buffer bytes per rank for one DeepGEMM mega-MoE buffer.

    ``flavour``: ``vllm-sm100`` (DeepGEMM 2.8.1 vendored by vLLM 0.33), ``sm100`` (8ddf7f96
    ring workspace, fp8xfp4) or ``sm90`` (8ddf7f96 SM90 full-pool workspace).
    """
    env = env or {}
    lineage = VLLM_281 if flavour == "vllm-sm100" else PR323
    lcm = lineage.lcm_block_m
    tokens = align(tokens_per_rank, lcm)
    out: list[Derived] = []
    align_assumption = (
        "DeepGEMM 2.8.1's get_token_alignment_for_mega_moe is compiled into _C; assumed to return "
        "kLCMCandidateBlockM (1920) as in 8ddf7f96"
        if lineage is VLLM_281
        else None
    )
    out.append(
        Derived(
            key="deepgemm_num_max_tokens_per_rank",
            label="DeepGEMM num_max_tokens_per_rank (symmetric buffer rows)",
            value=tokens,
            unit="tokens",
            formula=f"align(tokens_per_rank, token_alignment) = align({tokens_per_rank}, {lcm}) = {tokens}",
            inputs={
                "tokens_per_rank": f"{tokens_per_rank} ({tokens_origin})",
                "token_alignment": f"{lcm} (kLCMCandidateBlockM = lcm{lineage.candidate_block_ms})",
            },
            source=f"{lineage.source}: get_symm_buffer_for_mega_moe aligns num_max_tokens_per_rank",
            assumption=align_assumption,
        )
    )
    epr = shape.experts // ranks
    inputs: dict[str, Any] = {
        "num_ranks (EP)": ranks,
        "num_experts": shape.experts,
        "experts_per_rank": epr,
        "num_max_tokens_per_rank": tokens,
        "num_topk": shape.topk,
        "hidden": shape.hidden,
        "intermediate_hidden": shape.inter,
    }
    pool = pool_tokens(lineage, ranks, tokens, shape.topk, epr)
    if flavour == "sm90":
        terms = sm90_buffer_terms_pr323(ranks, shape.experts, tokens, shape.topk, shape.hidden, shape.inter)
        out.append(
            Derived(
                key="deepgemm_pool_tokens",
                label="DeepGEMM token pool (received token-expert pairs, worst case)",
                value=pool,
                unit="tokens",
                formula=(
                    f"align(ranks*tokens*min(topk, experts_per_rank) + experts_per_rank*({lineage.max_block_m}-1), "
                    f"{lcm}) = align({ranks}*{tokens}*{min(shape.topk, epr)} + {epr}*{lineage.max_block_m - 1}, "
                    f"{lcm}) = {pool}"
                ),
                inputs={k: inputs[k] for k in ("num_ranks (EP)", "num_max_tokens_per_rank", "num_topk")}
                | {"experts_per_rank": epr},
                source=f"{lineage.source}: layout/mega_moe.cuh get_num_max_pool_tokens (SM90Workspace)",
            )
        )
        formula = (
            "SM90Workspace(32 + E*16 + epr*8 + align(pool/8,2)*4 + (pool/8)*8 + epr*ranks*ranks*T*4 + pool*12, "
            "aligned 16) + T*(H + H/32 + 12*topk) + pool*(H + 4 + I) + sf_pool*(H/32 + I/16) + topk*T*2H"
        )
        source = f"{lineage.source}: csrc/apis/sm90_mega.hpp get_symm_buffer_size_for_sm90_mega_moe"
        assumption = None
    else:
        ring, rule = ring_tokens(lineage, ranks, shape.experts, tokens, shape.topk)
        out.append(
            Derived(
                key="deepgemm_ring_tokens",
                label="DeepGEMM ring tokens (L1/L2 activation ring)",
                value=ring,
                unit="tokens",
                formula=rule + f" -> {ring}",
                inputs={"num_ranks (EP)": ranks, "num_max_tokens_per_rank": tokens, "num_topk": shape.topk}
                | {"experts_per_rank": epr, "full_pool": pool},
                source=f"{DG_PR323}: deep_gemm/mega/__init__.py get_symm_buffer_for_mega_moe, "
                "csrc/apis/mega.hpp get_ring_limit_for_mega_moe",
                assumption=(
                    "DeepGEMM 2.8.1 chooses the ring inside _C (not in the wheel's sources); assumed to follow the "
                    "8ddf7f96 rule with 2.8.1's BLOCK_M constants"
                    if lineage is VLLM_281
                    else None
                ),
            )
        )
        if flavour == "vllm-sm100":
            nse = shape.shared_experts if fuse_shared else 0
            terms = sm100_buffer_terms_v281(
                ranks, shape.experts, tokens, shape.topk, shape.hidden, shape.inter, ring, num_shared_experts=nse
            )
            inputs["num_shared_experts (fused)"] = nse
            inputs["sizeof(MegaMoESignals)"] = mega_moe_signals_bytes_v281()
            formula = (
                "Workspace(sizeof(MegaMoESignals) + E*T*4 + pool*12, aligned 16) + T*(H + H/32 + 12*topk) "
                "+ shared(sf_T*(H/32) + T*S + sf_T*S/32) + ring*(H + 4 + I) + sf_ring*(H + I)/32 "
                "+ (topk + shared)*T*2H   [S = I*num_shared, sf_T = ceil(T/8)*128]"
            )
            source = f"{lineage.source}: MegaMoEBuffer, Workspace, MegaMoESignals"
            assumption = "ring size and token alignment as assumed above (host code compiled into _C)"
        else:
            fp4_acts = env.get("DG_USE_FP4_ACTS", "0") not in ("", "0")
            fp8_combine = env.get("DG_USE_FP8_COMBINE", "0") not in ("", "0")
            terms = sm100_buffer_terms_pr323(
                ranks,
                shape.experts,
                tokens,
                shape.topk,
                shape.hidden,
                shape.inter,
                ring,
                fp4_acts=fp4_acts,
                fp8_combine=fp8_combine,
            )
            inputs["DG_USE_FP4_ACTS"] = int(fp4_acts)
            inputs["DG_USE_FP8_COMBINE"] = int(fp8_combine)
            formula = (
                "Workspace(32 + E*16 + epr*8 + 16*(ring/8) + epr*ranks*ranks*T*4 + pool*12, aligned 16) "
                "+ T*(H + H/32 + 12*topk) + ring*(H + 4 + I) + sf_ring*(H + I)/32 + topk*T*2H   [fp8xfp4]"
            )
            source = f"{DG_PR323}: csrc/apis/mega.hpp get_symm_buffer_size_for_mega_moe"
            assumption = None
        inputs["num_ring_tokens"] = ring
        inputs["num_sf_ring_tokens"] = sf_ring_tokens(lineage, ring)
    total = _sum_terms(terms)
    out.append(
        Derived(
            key="deepgemm_symm_buffer_bytes",
            label=f"DeepGEMM symmetric buffer per rank, {shape.label()}",
            value=total,
            unit="bytes",
            formula=formula,
            inputs=inputs,
            source=source,
            assumption=assumption,
            terms=tuple(terms),
        )
    )
    return out


#: InferenceX dsv4_agentic_mi355x_dep8_megamoe_gluon_eplb.sh (users.md §1.6): measured MegaMoE
#: symmetric buffers at 16384 batched tokens on 8 x MI355X (EP8), and the headroom it applies.
HEAP_REFERENCE_BYTES = Fraction(773, 100) * GiB
HEAP_REFERENCE = {"ep": 8, "max_tok_per_rank": 16384, "topk": 6, "hidden": 4096}
HEAP_HEADROOM = Fraction(5, 4)
#: vLLM 0.33 sets MORI_SHMEM_HEAP_SIZE to 8G for MegaMoEV2 ("needs > 4 GB; MoRI default is 2 GB").
HEAP_FLOOR_BYTES = 8 * GiB
#: aiter FIXED_SLOT_MAX_MTPR (kernels.md §2): vLLM builds an extra small-capacity runtime below it.
FIXED_SLOT_MAX_MTPR = 255
FIXED_SLOT_MAX_EXPERTS_PER_RANK = 64


def derive_aiter_mtpr(tokens_per_rank: int, tokens_origin: str, *, engine: str) -> Derived:
    mtpr = next_power_of_two(tokens_per_rank)
    env = "SGLANG_AMD_FLYDSL_MEGA_MOE_MTPR" if engine == "sglang" else None
    where = (
        "sglang 0.5.23 layers/moe/mega_moe_flydsl.py _mtpr (must be a power of two)"
        if engine == "sglang"
        else "vllm 0.33.0 models/deepseek_v4/amd/mega_moe.py: max_num_tokens = next_power_of_2(max_num_batched_tokens)"
    )
    return Derived(
        key="aiter_max_tok_per_rank",
        label="AITER MegaMoEV2 max_tok_per_rank (power of two)",
        value=mtpr,
        unit="tokens",
        formula=f"next_power_of_2({tokens_per_rank}) = {mtpr}",
        inputs={"tokens_per_rank": f"{tokens_per_rank} ({tokens_origin})"},
        source=where + "; aiter mega_moe_v2.py: a8w4 needs a power-of-two max_tok_per_rank",
        env=env,
    )


def aiter_capacities(mtpr: int, experts_per_rank: int, *, engine: str) -> list[int]:
    """Runtime capacities vLLM 0.33 builds (a fixed-slot one below FIXED_SLOT_MAX_MTPR, then mtpr)."""
    caps = [mtpr]
    small = next_power_of_two(FIXED_SLOT_MAX_MTPR + 1) // 2  # prev_power_of_2(255) = 128
    if engine == "vllm" and small < mtpr and experts_per_rank <= FIXED_SLOT_MAX_EXPERTS_PER_RANK:
        caps.insert(0, small)
    return caps


def derive_mori_heap(*, runtimes: list[tuple[Shape, list[int]]], ep: int) -> Derived:
    """``MORI_SHMEM_HEAP_SIZE`` for every MegaMoEV2 runtime of a process (one per shape and capacity).

    The InferenceX measurement scaled to each runtime, summed, x1.25, rounded up to whole GiB,
    and at least vLLM's 8 GiB default.
    """
    ref = HEAP_REFERENCE
    ref_product = ref["ep"] * ref["max_tok_per_rank"] * ref["topk"] * ref["hidden"]
    need = Fraction(0)
    parts = []
    for shape, capacities in runtimes:
        for c in capacities:
            need += HEAP_REFERENCE_BYTES * Fraction(ep * c * shape.topk * shape.hidden, ref_product)
            parts.append(f"{ep}*{c}*{shape.topk}*{shape.hidden}")
    with_headroom = need * HEAP_HEADROOM
    gib = ceil_div(with_headroom.numerator, with_headroom.denominator * GiB)
    value = max(gib * GiB, HEAP_FLOOR_BYTES)
    formula = (
        "max(8 GiB, ceil_GiB(1.25 * 7.73 GiB * sum over runtimes(ep*max_tok_per_rank*topk*H) / (8*16384*6*4096))) = "
        f"max(8 GiB, ceil_GiB(1.25 * 7.73 GiB * ({' + '.join(parts)}) / {ref_product})) "
        f"= max(8 GiB, ceil_GiB({float(with_headroom) / GiB:.2f} GiB)) = {value // GiB}G"
    )
    return Derived(
        key="mori_shmem_heap_bytes",
        label="MoRI symmetric heap (MORI_SHMEM_HEAP_SIZE)",
        value=value,
        unit="bytes",
        formula=formula,
        inputs={
            "ep": ep,
            "runtimes (shape: max_tok_per_rank capacities)": "; ".join(f"{s.label()}: {caps}" for s, caps in runtimes),
            "reference": "7.73 GiB at EP8, 16384 tokens/rank (InferenceX DSv4 MI355X dep8 megamoe script)",
            "headroom": "x1.25 (as the InferenceX script)",
            "floor": "8 GiB (vLLM 0.33 all2all.py default for MegaMoEV2)",
        },
        source="users.md §1.6 (InferenceX dsv4_agentic_mi355x_dep8_megamoe_gluon_eplb.sh); vllm-0.33.md §3.2; "
        "kernels.md §4 (MORI_SHMEM_HEAP_SIZE must be set before shmem init; the heap does not grow)",
        assumption=(
            "estimate, not a port: aiter's heap sizing for the build vLLM 0.33 pins is not public in a stable form; "
            "the measurement is scaled linearly in the dispatch-pool terms (ep x tokens x top-k x hidden) and the "
            "reference is taken as the smaller DSv4 shape (H=4096), so larger shapes never get less than measured"
        ),
        env="MORI_SHMEM_HEAP_SIZE",
    )


def derive_sglang_token_cap(
    *, chunked_prefill_size: int, tp_size: int, attn_dp_size: int, alignment: int | None
) -> Derived:
    """``SGLANG_OPT_DEEPGEMM_MEGA_MOE_NUM_MAX_TOKENS_PER_RANK`` covering the chunked-prefill budget."""
    if attn_dp_size > 1:
        token_alignment = max(tp_size // attn_dp_size, 1)
        local = chunked_prefill_size // attn_dp_size
        part = f"chunked_prefill_size // attn_dp_size = {chunked_prefill_size} // {attn_dp_size} = {local}"
    else:
        token_alignment = max(tp_size, 1)
        local = chunked_prefill_size
        part = f"chunked_prefill_size = {local}"
    required = align(local, token_alignment)
    value = align(required, alignment) if alignment else required
    extra = f", rounded up to DeepGEMM's token alignment {alignment}" if alignment else ""
    return Derived(
        key="sglang_mega_moe_num_max_tokens_per_rank",
        label="SGLang MegaMoE per-rank token cap",
        value=value,
        unit="tokens",
        formula=(f"ceil_align({part}, token_alignment={token_alignment}) = {required}{extra} -> {value}"),
        inputs={
            "chunked_prefill_size": chunked_prefill_size,
            "tp_size": tp_size,
            "attn_dp_size": attn_dp_size,
        },
        source="sglang 0.5.23 arg_groups/mega_moe_hook.py validate_mega_moe_token_budget (required_per_rank); "
        "above the cap layers/moe/mega_moe.py falls back to fused MoE where the model has one (DeepSeek V4 and "
        "NVFP4 experts have none, so SGLang checks the cap at start)",
        env="SGLANG_OPT_DEEPGEMM_MEGA_MOE_NUM_MAX_TOKENS_PER_RANK",
    )


def choose_mori_heap(computed: int, user_value: str | None) -> tuple[str, str | None]:
    """The ``MORI_SHMEM_HEAP_SIZE`` a plan emits, and a note when it keeps the user's value.

    The user's value wins when it is readable and covers the computed size; otherwise the
    computed size (rounded up to whole units) is emitted.
    """
    user_bytes = parse_size(user_value) if user_value else None
    if user_value and user_bytes is not None and user_bytes >= computed:
        return (
            user_value,
            f"MORI_SHMEM_HEAP_SIZE={user_value} from your environment is kept (computed: {format_size(computed)}).",
        )
    return format_size(computed), None
