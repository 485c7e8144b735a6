"""The DeepGEMM symmetric buffer SGLang 0.5.23 allocates, sized with its pinned sgl-deep-gemm 0.2.3.post2.

SGLang's ``layers/moe/mega_moe.py`` ``_mega_moe_buffer`` (lines 256-273) asks
``deep_gemm.get_symm_buffer_for_mega_moe`` for ``num_max_tokens_per_rank =
SGLANG_OPT_DEEPGEMM_MEGA_MOE_NUM_MAX_TOKENS_PER_RANK``, ``num_topk = top-k + num_fused_shared_experts``
and ``num_shared_experts = n_shared_experts`` when DeepGEMM's in-kernel shared expert is on
(``should_fuse_mega_moe_shared_experts``, lines 196-207: SM100 fp8xfp4 with FP8 block shared
experts and ``SGLANG_OPT_DEEPGEMM_MEGA_MOE_FUSE_SHARED_EXPERTS``, default on). The sgl-deep-gemm
layouts are in ``_sgl_deep_gemm_layout``.
"""

from __future__ import annotations

from typing import Any

from moe_oracle_backends._deep_gemm_layout import (
    pool_tokens,
    ring_tokens,
    sf_ring_tokens,
    sm90_buffer_terms_pr323,
    symm_buffer_bytes,
)
from moe_oracle_backends._sgl_deep_gemm_layout import (
    SGL_0232,
    SGL_0232_WHEEL,
    signals_bytes_0232,
    sm100_buffer_terms_0232,
)

from moe_oracle.fit.derived import Derived, Shape, align

BUILD = "sgl-deep-gemm 0.2.3.post2"
UNVERIFIED_RING = (
    "the SM100 ring size is chosen inside _C.so (no source in the wheel); taken to follow the 8ddf7f96 rule with "
    "this build's BLOCK_M constants"
)


def derive_sglang_deepgemm(
    *,
    arch: str,
    shape: Shape,
    ranks: int,
    tokens_per_rank: int,
    tokens_origin: str,
    mma_type: str = "fp8xfp4",
    num_shared_experts: int = 0,
) -> list[Derived]:
    """Buffer rows, pool/ring and bytes per rank of the buffer SGLang 0.5.23 asks sgl-deep-gemm 0.2.3.post2 for.

    ``arch``: ``sm90`` (``get_symm_buffer_for_sm90_mega_moe``, full pool) or ``sm100`` (``SymmBuffer``,
    ring workspace). ``num_shared_experts``: DeepGEMM's in-kernel shared expert (SM100 fp8xfp4). SGLang's
    other fusion (the shared expert as an extra routed top-k slot) is off on CUDA with EP > 1 for the
    DeepSeek family (``models/deepseek_v2.py:3385``; DeepSeek V4 only with ``--enforce-shared-experts-fusion``,
    ``models/deepseek_v4.py:4883``), so the top-k here is the model's.
    """
    lin = SGL_0232
    lcm = lin.lcm_block_m
    tokens = align(tokens_per_rank, lcm)
    topk, experts = shape.topk, shape.experts
    epr = experts // ranks
    out = [
        Derived(
            key="deepgemm_num_max_tokens_per_rank",
            label="DeepGEMM num_max_tokens_per_rank (symmetric buffer rows)",
            value=tokens,
            unit="tokens",
            formula=f"align(tokens_per_rank, token_alignment) = align({tokens_per_rank}, {lcm}) = {tokens}",
            inputs={
                "tokens_per_rank": f"{tokens_per_rank} ({tokens_origin})",
                "token_alignment": f"{lcm} (_C.get_token_alignment_for_mega_moe() = kLCMCandidateBlockM = "
                f"lcm{lin.candidate_block_ms})",
                "build": f"{BUILD} (as SGLang 0.5.23 pins it)",
            },
            source=f"{SGL_0232_WHEEL}: deep_gemm/__init__.py:373 and deep_gemm/mega/__init__.py:52 align "
            "num_max_tokens_per_rank; layout/mega_moe.cuh:17 kLCMCandidateBlockM",
        )
    ]
    inputs: dict[str, Any] = {
        "build": BUILD,
        "num_ranks (EP)": ranks,
        "num_experts": experts,
        "experts_per_rank": epr,
        "num_max_tokens_per_rank": tokens,
        "num_topk": topk,
        "hidden": shape.hidden,
        "intermediate_hidden": shape.inter,
    }
    pool = pool_tokens(lin, ranks, tokens, topk, epr)
    if arch == "sm90":
        terms = sm90_buffer_terms_pr323(ranks, experts, tokens, topk, shape.hidden, shape.inter, lineage=lin)
        out.append(
            Derived(
                key="deepgemm_pool_tokens",
                label="DeepGEMM token pool (received token-expert pairs, worst case)",
                value=pool,
                unit="tokens",
                formula=(
                    f"align(ranks*tokens*min(topk, experts_per_rank) + experts_per_rank*({lin.max_block_m}-1), "
                    f"{lcm}) = align({ranks}*{tokens}*{min(topk, epr)} + {epr}*{lin.max_block_m - 1}, {lcm}) = {pool}"
                ),
                inputs={"num_ranks (EP)": ranks, "num_max_tokens_per_rank": tokens, "num_topk": topk}
                | {"experts_per_rank": epr},
                source=f"{lin.source}:20-28 get_num_max_pool_tokens (SM90Workspace)",
            )
        )
        formula = (
            "SM90Workspace(32 + E*16 + epr*8 + align(pool/8,2)*4 + (pool/8)*8 + epr*ranks*ranks*T*4 + pool*12, "
            "aligned 16) + T*(H + H/32 + 12*topk) + pool*(H + 4 + I) + sf_pool*(H/32 + I/16) + topk*T*2H"
        )
        source = f"{lin.source}:282-322 SM90Workspace; _C get_symm_buffer_size_for_sm90_mega_moe"
        assumption = None
    else:
        ring, rule = ring_tokens(lin, ranks, experts, tokens, topk)
        out.append(
            Derived(
                key="deepgemm_ring_tokens",
                label="DeepGEMM ring tokens (L1/L2 activation ring)",
                value=ring,
                unit="tokens",
                formula=rule + f" -> {ring}",
                inputs={"num_ranks (EP)": ranks, "num_max_tokens_per_rank": tokens, "num_topk": topk}
                | {"experts_per_rank": epr, "full_pool": pool},
                source=f"{BUILD}: ring choice in _C get_symm_buffer_size_for_mega_moe",
                assumption=UNVERIFIED_RING,
            )
        )
        terms = sm100_buffer_terms_0232(
            ranks,
            experts,
            tokens,
            topk,
            shape.hidden,
            shape.inter,
            ring,
            mma_type=mma_type,
            num_shared_experts=num_shared_experts,
        )
        inputs |= {
            "mma_type": mma_type,
            "num_shared_experts (in-kernel)": num_shared_experts,
            "sizeof(MegaMoESignals)": signals_bytes_0232(),
            "num_ring_tokens": ring,
            "num_sf_ring_tokens": sf_ring_tokens(lin, ring),
        }
        formula = (
            "Workspace(sizeof(MegaMoESignals) + E*T*4 + pool*12 + T*topk*4, aligned 16) + T*(act(H) + sf(H) + 12*topk) "
            "+ shared(sf_T*sf(H) + T*act(S) + sf_T*sf(S)) + ring*(act(H) + 4 + act(I) + 4) + sf_ring*(sf(H) + sf(I)) "
            "+ (topk + shared)*T*2H + T*4   [S = I*num_shared, sf_T = ceil(T/8)*128]"
        )
        source = f"{lin.source}:481-619 MegaMoEBuffer, 94-153 Workspace, 54-89 MegaMoESignals"
        assumption = UNVERIFIED_RING
    out.append(symm_buffer_bytes(shape, terms, formula=formula, inputs=inputs, source=source, assumption=assumption))
    return out
