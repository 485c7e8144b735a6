"""The DeepGEMM symmetric-buffer quantities a launch plan prints (token cap, pool, ring, bytes).

Each function returns :class:`~moe_oracle.fit.derived.Derived` values carrying the number, its
inputs, the formula as text and the source it was ported from (the layouts themselves are in
``_deep_gemm_layout``). Declared as the DeepGEMM variants' ``sizing``; the core reaches it only
through that declaration.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from moe_oracle_backends._deep_gemm_layout import (
    DG_PR323,
    PR323,
    VLLM_281,
    mega_moe_signals_bytes_v281,
    pool_tokens,
    ring_tokens,
    sf_ring_tokens,
    sm90_buffer_terms_pr323,
    sm100_buffer_terms_pr323,
    sm100_buffer_terms_v281,
    symm_buffer_bytes,
)
from moe_oracle_backends._sgl_deep_gemm_buffer import derive_sglang_deepgemm
from moe_oracle_backends._sgl_deep_gemm_layout import SGL_0232

from moe_oracle.fit.derived import Derived, Shape, align


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
    out.append(symm_buffer_bytes(shape, terms, formula=formula, inputs=inputs, source=source, assumption=assumption))
    return out


#: The declared builds (``_deep_gemm_builds``) whose buffers these formulas size exactly; any other build (or a
#: profile standing for several) is sized with DeepGEMM PR #323's layout, the one measured on the H200.
SGL_BUILD = "sgl-deep-gemm-0.2.3.post2"
VLLM_VENDORED = "vllm-deepgemm-2.8.1"


def derive_deepgemm_for_build(
    *,
    build: str | None,
    arch: str,
    shape: Shape,
    ranks: int,
    tokens_per_rank: int,
    tokens_origin: str,
    fuse_shared: bool = False,
    mma_type: str = "fp8xfp4",
    env: dict[str, str] | None = None,
) -> list[Derived]:
    """The buffer quantities of the one DeepGEMM build the engine loads (``build``: a declared build name).

    ``arch``: ``sm90`` or ``sm100``. sgl-deep-gemm 0.2.3.post2 is sized with its own layout (1920-token
    alignment on both architectures), vLLM's vendored 2.8.1 with its SM100 layout, everything else with PR #323's
    (384-token alignment). ``fuse_shared``: the shared expert runs inside the kernel (one extra combine slot).
    """
    if build == SGL_BUILD:
        return derive_sglang_deepgemm(
            arch=arch,
            shape=shape,
            ranks=ranks,
            tokens_per_rank=tokens_per_rank,
            tokens_origin=tokens_origin,
            mma_type=mma_type,
            num_shared_experts=shape.shared_experts if fuse_shared else 0,
        )
    flavour = "vllm-sm100" if build == VLLM_VENDORED and arch == "sm100" else arch
    return derive_deepgemm(
        flavour=flavour,
        shape=shape,
        ranks=ranks,
        tokens_per_rank=tokens_per_rank,
        tokens_origin=tokens_origin,
        fuse_shared=fuse_shared,
        env=env,
    )


def build_token_alignment(build: str | None) -> int:
    """The token alignment (``get_token_alignment_for_mega_moe``) of the declared build ``build``."""
    if build == SGL_BUILD:
        return SGL_0232.lcm_block_m
    return (VLLM_281 if build == VLLM_VENDORED else PR323).lcm_block_m


def token_alignment(flavour: str) -> int:
    """``get_token_alignment_for_mega_moe`` of the build ``flavour`` names (as :func:`derive_deepgemm`)."""
    if flavour.startswith("sgl"):
        return SGL_0232.lcm_block_m
    return (VLLM_281 if flavour == "vllm-sm100" else PR323).lcm_block_m


#: The formulas the plans look up by name (``VariantSpec.sizing`` of every DeepGEMM variant).
SIZING: dict[str, Callable[..., Any]] = {
    "derive_deepgemm": derive_deepgemm,
    "deepgemm_token_alignment": token_alignment,
    "derive_sglang_deepgemm": derive_sglang_deepgemm,
    "derive_deepgemm_for_build": derive_deepgemm_for_build,
    "deepgemm_build_alignment": build_token_alignment,
}
