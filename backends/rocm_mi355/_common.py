"""Rules shared by the AITER MegaMoEV2 variants (https://github.com/ROCm/aiter, https://github.com/ROCm/mori; https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/models/deepseek_v4/amd/mega_moe.py)."""

from __future__ import annotations

from moe_oracle.model.types import QuantSpec, ScaleFormat, WeightFormat
from moe_oracle.rules import Check, ReasonCode, Scope
from moe_oracle.rules import checks as c
from moe_oracle.spec.device import Arch
from moe_oracle.spec.units import format_size, next_power_of_two, parse_size

BACKEND = "aiter_mega_moe"
MAX_TOKENS_PER_RANK = 32768
#: vLLM sets MORI_SHMEM_HEAP_SIZE to 8G for MegaMoEV2 ("needs > 4 GB"), 16G with a fused shared expert.
MIN_HEAP_BYTES = 8 << 30
#: AITER MegaMoEV2 at the commit its rules were read from (ROCm/aiter main, 2026-08-22).
AITER_SRC = "https://github.com/ROCm/aiter/blob/e404860/aiter/ops/flydsl/kernels/mega_moe/mega_moe_v2.py"


def mxfp4(q: QuantSpec) -> bool:
    return q.format is WeightFormat.MXFP4 and q.block == (1, 32) and q.scale_format is ScaleFormat.UE8M0


def _heap_ok(sc) -> bool:
    raw = sc.deployment.env.get("MORI_SHMEM_HEAP_SIZE")
    if raw is None:
        return True
    size = parse_size(raw)
    return size is not None and size >= MIN_HEAP_BYTES


def _tokens_cap(sc) -> int:
    return next_power_of_two(sc.tokens_per_rank)


def common_checks() -> tuple[Check, ...]:
    return (
        c.arch_in(
            (Arch.GFX950,),
            kernel="AITER MegaMoEV2 (FlyDSL stage1/stage2)",
            remediation="MegaMoEV2 needs CDNA4 (MI355X); on gfx942 leave --moe-backend unset (non-fused MoE).",
            sources=(
                AITER_SRC,
                "https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/models/deepseek_v4/amd/model.py: on_gfx950()",
            ),
        ),
        c.weight_format(
            mxfp4,
            wants="mxfp4 g32 ue8m0",
            remediation="Use an MXFP4-expert checkpoint (DeepSeek V4 release format).",
            sources=(
                AITER_SRC,
                "https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/models/deepseek_v4/amd/model.py"
                " rule 6 (expert_dtype fp4)",
            ),
        ),
        c.multiple_of(
            "hidden_size",
            32,
            why="MXFP4 packs and scales K in groups of 32",
            remediation="Leave --moe-backend unset (the engine's non-fused MoE serves it).",
            sources=(AITER_SRC,),
        ),
        c.multiple_of(
            "moe_intermediate_size",
            32,
            why="MXFP4 packs and scales K in groups of 32",
            remediation="Leave --moe-backend unset (the engine's non-fused MoE serves it).",
            sources=(AITER_SRC,),
        ),
        *c.mega_moe_contract("AITER MegaMoEV2"),
        c.experts_divisible_by_ep((AITER_SRC + ": experts % world_size == 0",)),
        c.ep_only((AITER_SRC + ": EP-only, full inter_dim per rank",)),
        c.activation(clamp=True, sources=(AITER_SRC + ": MegaMoEV2(swiglu_limit=...), SwiGLU only",)),
        c.scenario_predicate(
            ReasonCode.TOKENS_UNSUPPORTED,
            lambda sc: _tokens_cap(sc) <= MAX_TOKENS_PER_RANK,
            rule=f"next_power_of_2(max_num_batched_tokens) <= {MAX_TOKENS_PER_RANK}",
            message=lambda sc: (
                f"max_num_batched_tokens={sc.tokens_per_rank} rounds up to "
                f"max_tok_per_rank={_tokens_cap(sc)}, above MegaMoEV2's {MAX_TOKENS_PER_RANK} bucket limit"
            ),
            remediation=f"Lower --max-num-batched-tokens to at most {MAX_TOKENS_PER_RANK}.",
            sources=(
                AITER_SRC + ": token buckets 1..32768, power of two",
                "https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/models/deepseek_v4/amd/mega_moe.py",
            ),
            scope=Scope.LAYER,
        ),
        c.scenario_predicate(
            ReasonCode.HEAP_TOO_SMALL,
            _heap_ok,
            rule=f"MORI_SHMEM_HEAP_SIZE unset or >= {format_size(MIN_HEAP_BYTES)}",
            message=lambda sc: (
                f"MORI_SHMEM_HEAP_SIZE={sc.deployment.env.get('MORI_SHMEM_HEAP_SIZE')} is below "
                f"{format_size(MIN_HEAP_BYTES)} (MegaMoEV2 needs more than 4 GB; vLLM defaults to 8G)"
            ),
            remediation="Unset MORI_SHMEM_HEAP_SIZE or raise it to 8G (16G with a fused shared expert).",
            sources=(
                "https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/distributed/device_communicators/all2all.py",
                "https://github.com/ROCm/mori",
            ),
        ),
        c.entry_points(
            "aiter",
            any_of=("MegaMoEV2", "MegaMoE"),
            all_of=("shuffle_weight_a16w4", "shuffle_scale_a16w4"),
            provided_by="amd-aiter >= v0.1.20 from source or a ROCm image (PyPI amd-aiter predates MegaMoEV2)",
            sources=("https://github.com/ROCm/aiter packaging", "https://github.com/deepseek-ai/DeepGEMM"),
        ),
        c.entry_points(
            "mori",
            all_of=("shmem.shmem_torch_process_group_init",),
            provided_by="amd-mori (MoRI symmetric heap)",
            sources=("https://github.com/ROCm/mori",),
        ),
        c.entry_points(
            "flydsl", provided_by="flydsl (pinned by aiter, e.g. 0.3.1)", sources=("https://github.com/ROCm/FlyDSL",)
        ),
    )
