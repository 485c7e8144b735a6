"""Requirements shared by every DeepGEMM mega-MoE variant (SM90 and SM100).

Facts: https://github.com/deepseek-ai/DeepGEMM/pull/323 and
https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/model_executor/layers/fused_moe/deep_gemm_mega_moe.py (headers
of the
vendored DeepGEMM 2.8.1: ``layout/sym_buffer.cuh`` kNumMaxRanks = 72, ``layout/mega_moe.cuh``
experts <= 2048 and <= 512 per rank, ``kNumTopk <= 32``).
"""

from __future__ import annotations

from moe_oracle.rules import Check
from moe_oracle.rules import checks as c
from moe_oracle.rules.variant import Staging

BACKEND = "deep_gemm_mega_moe"
MAX_RANKS = 72
MAX_EXPERTS = 2048
MAX_EXPERTS_PER_RANK = 512
MAX_TOPK = 32

_LAYOUT = (
    "https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/model_executor/layers/fused_moe/deep_gemm_mega_moe.py "
    "(DeepGEMM include/layout/mega_moe.cuh, sym_buffer.cuh)",
)


def common_checks() -> tuple[Check, ...]:
    """Topology, expert and activation rules every DeepGEMM mega kernel shares."""
    return (
        *c.mega_moe_contract("DeepGEMM's mega-MoE"),
        c.topk_at_most(MAX_TOPK, why="top-k (+ fused shared experts) must fit in one warp", sources=_LAYOUT),
        c.experts_divisible_by_ep(
            ("https://github.com/deepseek-ai/DeepGEMM: E % num_ranks == 0 (csrc/apis/mega.hpp)",)
        ),
        c.experts_at_most(MAX_EXPERTS, MAX_EXPERTS_PER_RANK, _LAYOUT),
        c.ep_only(("https://github.com/deepseek-ai/DeepGEMM: EP-only, full intermediate per expert",)),
        c.ep_in_domain(
            MAX_RANKS,
            scope="DeepGEMM kNumMaxRanks, one NVL72 domain",
            sources=(
                "https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/model_executor/layers/fused_moe/deep_gemm_mega_moe.py"
                " (symmetric-memory rendezvous over the EP group)",
                *_LAYOUT,
            ),
        ),
        c.entry_points(
            "torch",
            all_of=("distributed._symmetric_memory",),
            provided_by="torch >= 2.9 with torch.distributed._symmetric_memory",
            sources=("https://github.com/deepseek-ai/DeepGEMM",),
        ),
        c.library_version(
            "torch",
            ">=2.9",
            why="DeepGEMM mega kernels allocate torch symmetric memory",
            sources=("https://github.com/deepseek-ai/DeepGEMM: PyTorch >= 2.9 (symmetric memory)",),
        ),
    )


def sm100_activation(kinds: tuple[str, ...] = ("swiglu",)) -> Check:
    """vLLM's DeepGEMM fork (2.8.1): swiglu with clamp and alpha/beta; situ on the fp8xfp4/fp8xfp8 rows
    (https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/model_executor/layers/fused_moe/deep_gemm_mega_moe.py
    MegaMoEWeightFormat activations, §5.2 signatures)."""
    return c.activation(
        clamp=True,
        alpha_beta=True,
        kinds=kinds,
        sources=(
            "https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/model_executor/layers/fused_moe/deep_gemm_mega_moe.py"
            " MegaMoEActivation; fp8_fp4_mega_moe(activation_alpha, activation_beta)",
        ),
    )


#: How both SM90 kernels want their inputs: FP8 with FP32 per-128 scales (the Triton fp8_g128 staging), int64
#: ids; top-k rows at or past T are never read (the kernels loop i < num_tokens = y.size(0)), so staging does
#: not rewrite the buffer's whole capacity on every call.
SM90_STAGING = Staging(
    "fp32",
    triton_recipe="fp8_g128",
    pad_rows=False,
    pad_rows_source=(
        "https://github.com/deepseek-ai/DeepGEMM/blob/8ddf7f96cb3300011f69458e88c7651a1e305a8c/"
        "deep_gemm/include/deep_gemm/impls/sm90_fp8_mega_moe.cuh#L498-L506 (and #L2205-L2208), "
        "sm90_fp8_fp4_mega_moe.cuh#L884-L889 (and #L2568-L2571), csrc/apis/sm90_mega.hpp#L331"
    ),
)


def sm90_activation() -> Check:
    """DeepGEMM PR #323 SM90 kernels: swiglu with clamp only (https://github.com/deepseek-ai/DeepGEMM/pull/323 host "
    "asserts)."""
    return c.activation(
        clamp=True,
        alpha_beta=False,
        kinds=("swiglu",),
        sources=("https://github.com/deepseek-ai/DeepGEMM/pull/323: sm90_mega.hpp asserts activation == 'swiglu'",),
    )


#: How far the SM90 variants were run (declared by both, shown wherever they are recommended).
SM90_VALIDATED = (
    "one H200 at world size 1 (EP 1) with a DeepGEMM PR #323 source build (8ddf7f96, "
    "https://github.com/deepseek-ai/DeepGEMM/pull/323): output checked against the FP32 reference and timed "
    "(docs/performance.md); never with EP > 1, never inside vLLM or SGLang on a GPU (the vLLM plug-in ran on "
    "CPU vLLM only)"
)
#: the build :data:`SM90_VALIDATED` ran (a shape only other builds serve is read from source only)
SM90_VALIDATED_BUILDS = ("deepgemm-pr323",)
