"""What an SGLang plan sizes for the fused backends it runs: DeepGEMM mega-MoE's symmetric buffer and token cap
(sgl-deep-gemm 0.2.3.post2's layout), AITER MegaMoEV2's MoRI heap and tokens per rank, and the engine's own
conversions it stands in with; each a derived value with its formula and inputs, for :mod:`.plan`.
"""

from __future__ import annotations

from dataclasses import replace

from moe_oracle.engines.sglang import budget as B
from moe_oracle.fit.derived import Derived, Shape
from moe_oracle.fit.resources import (
    aiter_capacities,
    choose_mori_heap,
    derive_aiter_mtpr,
    derive_mori_heap,
    formula,
)
from moe_oracle.fit.server import PlanContext, distinct_shapes
from moe_oracle.model.types import MoELayerGroup, WeightFormat
from moe_oracle.releases import sglang as release
from moe_oracle.rules.engine import EngineConversion

#: The DeepGEMM build SGLang 0.5.23 pins (``sglang-0.5.23.dist-info/METADATA``: sgl-deep-gemm==0.2.3.post2).
DG_BUILD = "sgl-deep-gemm 0.2.3.post2"
OTHER_BUILDS = (
    "DeepGEMM PR #323 (8ddf7f96) aligns to 384 tokens and has no 240-row BLOCK_M; sgl-deep-gemm 0.2.5 keeps 1920 on "
    "SM100 and adds get_token_alignment_for_sm90_mega_moe (its SM90 layout, layout/sm90_mega_moe.cuh, uses BLOCK_M "
    "64/128); re-plan if SGLang runs with another build"
)
_FALSE = ("0", "false", "no", "off")
#: The declared DeepGEMM builds a SGLang profile may load (``backends/_deep_gemm_builds.py``).
SGL_BUILD = "sgl-deep-gemm-0.2.3.post2"
PR323_BUILD = "deepgemm-pr323"
PR323_INSTALL = (
    "Install a DeepGEMM build with the SM90 FP8xFP4 mega kernel (_C.fp8_fp4_mega_moe_sm90, DeepGEMM PR #323, "
    "8ddf7f96, unreleased: https://github.com/deepseek-ai/DeepGEMM/pull/323) into SGLang's environment, built the way "
    "PR #323's build_sgl_deep_gemm.sh builds it: the deep_gemm module with sgl_deep_gemm/__init__.py as its front "
    "end, in place of sgl-deep-gemm 0.2.3.post2 (which has no SM90 FP4 kernel; SGLang loads one deep_gemm module). "
    "Checked against that front end: every dense and attention kernel SGLang calls exists (fp8_gemm_nt, "
    "m_grouped_fp8_gemm_nt_contiguous, fp8_m_grouped_gemm_nt_masked, the BF16 GEMMs, fp8_einsum, the MQA logits "
    "kernels, transform_sf_into_required_layout, deep_gemm.utils.layout), and so do fp8_mega_moe and "
    "mega_moe_pre_dispatch_sm90 (SGLang's own SM90 FP8 megamoe, layers/moe/mega_moe_sm90.py:29-38); it lacks "
    "nvfp4_mega_moe (SGLang's SM100 NVFP4 megamoe) and get_block_m_for_mega_moe (docs/engines.md lists every symbol)."
)


def groups_of(ctx: PlanContext, shape: Shape) -> list[MoELayerGroup]:
    return [g.group for g in ctx.decision.groups if g.group.name in shape.groups]


def fuses_shared(ctx: PlanContext, shape: Shape, sm100: bool, mma_type: str) -> bool:
    """``should_fuse_mega_moe_shared_experts`` (``layers/moe/mega_moe.py:196-207``)."""
    if not (sm100 and mma_type == "fp8xfp4" and shape.shared_experts):
        return False
    if ctx.user_env.get("SGLANG_OPT_DEEPGEMM_MEGA_MOE_FUSE_SHARED_EXPERTS", "1").strip().lower() in _FALSE:
        return False
    for grp in groups_of(ctx, shape):
        q = grp.shared_expert_quant
        if q is None or q.format is not WeightFormat.FP8_BLOCK or q.block is None or q.block[1] % 32:
            return False
    return True


def deep_gemm_buffers(ctx: PlanContext) -> list[tuple[Shape, str]]:
    """One symmetric buffer per (shape, mma type): SGLang caches them by both (``layers/moe/mega_moe.py:119-160``).

    The mma type is ``_mega_moe_mma_type`` (``mega_moe.py:56-61``) of the variant chosen for each group.
    """
    variant = {g.group.name: g.chosen.spec.variant for g in ctx.decision.groups if g.chosen is not None}
    out: list[tuple[Shape, str]] = []
    for shape in distinct_shapes(ctx.decision):
        by_mma: dict[str, list[str]] = {}
        for name in shape.groups:
            by_mma.setdefault("nvfp4xnvfp4" if variant.get(name) == "sm100_nvfp4" else "fp8xfp4", []).append(name)
        out += [(replace(shape, groups=tuple(names)), mma) for mma, names in by_mma.items()]
    return out


def engine_conversions(ctx: PlanContext) -> list[EngineConversion]:
    found: list[EngineConversion] = []
    for g in ctx.decision.groups:
        conv = g.chosen.conversion if g.chosen is not None else None
        own = release.gates.PROFILE.conversion(conv) if conv is not None else None
        if own is not None and own not in found:
            found.append(own)
    return found


def deep_gemm_derived(
    ctx: PlanContext, chunk: int, tp_size: int, env: dict[str, str], notes: list[str]
) -> list[Derived]:
    dep = ctx.deployment
    par = dep.parallel
    sm100 = dep.device.arch.value != "sm90"
    buffers = deep_gemm_buffers(ctx)
    nvfp4 = any(mma == "nvfp4xnvfp4" for _, mma in buffers)
    build = ctx.decision.software.only_build("deep_gemm") or SGL_BUILD
    title = DG_BUILD if build == SGL_BUILD else build
    alignment = formula("deepgemm_build_alignment")(build)
    cap = B.derive_sglang_token_cap(
        chunked_prefill_size=chunk,
        tp_size=tp_size,
        attn_dp_size=par.dp,
        alignment=alignment,
        build=title,
        architecture=ctx.description.architecture,
        nvfp4_experts=nvfp4,
    )
    derived = [B.derive_prefill_tokens(chunked_prefill_size=chunk, attn_dp_size=par.dp), cap]
    env[B.CAP_ENV] = str(cap.value)
    fused = False
    for shape, mma_type in buffers:
        shared = shape.shared_experts if fuses_shared(ctx, shape, sm100, mma_type) else 0
        fused = fused or shared > 0
        derived += formula("derive_deepgemm_for_build")(
            build=build,
            arch="sm100" if sm100 else "sm90",
            shape=shape,
            ranks=par.ep,
            tokens_per_rank=cap.value,
            tokens_origin=B.CAP_ENV,
            mma_type=mma_type,
            fuse_shared=shared > 0,
        )
    per_rank = B.prefill_tokens_per_rank(chunk, par.dp)
    checked = B.startup_check_tokens(chunk, tp_size, par.dp)
    notes.append(
        f"--chunked-prefill-size {chunk} = {par.max_num_batched_tokens} tokens per attention-DP rank x {par.dp}: "
        f"SGLang divides it by --attn-dp-size (parallel_hook.py:331), so each rank prefills {per_rank} tokens "
        f"per chunk, and {B.CAP_ENV}={cap.value} covers that (rounded up to {title}'s {alignment}-token alignment)."
    )
    if B.needs_token_budget(ctx.description.architecture, nvfp4):
        notes.append(
            f"SGLang's start-up check (mega_moe_hook.py:161-258) enforces only >= {checked} here: it divides the "
            "already per-rank chunk by --attn-dp-size again. The cap set covers the real per-rank chunk, which is "
            "what matters at run time: this model has no fused-MoE fallback under megamoe (mega_moe_hook.py:52-75)."
        )
    else:
        notes.append(
            f"{ctx.description.architecture} is not in SGLang's MEGA_MOE_NO_FALLBACK_ARCHS (mega_moe_hook.py:52-64), "
            "so SGLang does not check the cap at start; a step with more tokens per rank than the cap silently runs "
            "SGLang's fused MoE instead of megamoe (mega_moe.py:172-193)."
        )
    if build == SGL_BUILD:
        notes.append(f"Buffer sizes are {DG_BUILD}'s, the build SGLang {release.VERSION} pins; {OTHER_BUILDS}.")
    else:
        notes.append(f"Buffer sizes are {title}'s, the DeepGEMM build this profile installs in place of {DG_BUILD}.")
    if build == PR323_BUILD:
        notes.append(PR323_INSTALL)
    if sm100 and build == SGL_BUILD:
        notes.append(
            f"Unverified: the SM100 ring and buffer bytes; {DG_BUILD} chooses the ring in compiled host code that "
            "needs a GPU (its SM90 sizes match the wheel's _C on a CPU), so they follow the 8ddf7f96 rule with this "
            "build's constants."
        )
    if fused:
        notes.append(
            "DeepGEMM's in-kernel shared expert is on (SM100 fp8xfp4 with FP8 block shared experts, "
            "SGLANG_OPT_DEEPGEMM_MEGA_MOE_FUSE_SHARED_EXPERTS defaults to 1; mega_moe.py:196-207): the buffer "
            "holds the shared-expert activations and one more combine slot per token."
        )
    for own in engine_conversions(ctx):
        env.update(own.env)
        notes.append(f"{own.switch}: {own.summary}; {own.condition} ({'; '.join(own.sources[:2])}).")
        if own.unverified:
            notes.append(f"Unverified: {own.unverified}.")
    if nvfp4:
        notes.append(
            "NVFP4 experts: SGLang repacks them for DeepGEMM nvfp4_mega_moe at load (modelopt_quant.py:2650-2710, "
            "SymmBuffer mma_type nvfp4xnvfp4) and cannot fall back to fused MoE (modelopt_quant.py:3189-3195)."
        )
    return derived


def aiter_derived(ctx: PlanContext, chunk: int, env: dict[str, str], notes: list[str]) -> list[Derived]:
    par = ctx.deployment.parallel
    per_rank = B.derive_prefill_tokens(chunked_prefill_size=chunk, attn_dp_size=par.dp)
    mtpr = derive_aiter_mtpr(per_rank.value, "per-rank prefill chunk (above)", engine="sglang")
    env["SGLANG_USE_AITER"] = "1"
    env["SGLANG_AMD_USE_FLYDSL_MEGA_MOE"] = "1"
    env["SGLANG_AMD_FLYDSL_MEGA_MOE_MTPR"] = str(mtpr.value)
    heap = derive_mori_heap(
        runtimes=[
            (sh, aiter_capacities(mtpr.value, sh.experts // par.ep, engine="sglang"))
            for sh in distinct_shapes(ctx.decision)
        ],
        ep=par.ep,
    )
    env["MORI_SHMEM_HEAP_SIZE"], kept = choose_mori_heap(heap.value, ctx.user_env.get("MORI_SHMEM_HEAP_SIZE"))
    notes.extend([kept] if kept else [])
    notes.append(
        "SGLANG_AMD_USE_FLYDSL_MEGA_MOE=1 routes --moe-a2a-backend megamoe to aiter MegaMoEV2 a8w4 "
        "(mega_moe.py:50-53, mega_moe_flydsl.py:360); SGLANG_USE_AITER=1 makes SGLang build the packed FP4 "
        "weights for it (fp8.py:149, 1878-1899). A step with more tokens per rank than "
        "SGLANG_AMD_FLYDSL_MEGA_MOE_MTPR runs the fused MoE instead (mega_moe_flydsl.py:238-250); SGLang does "
        "not check the cap at start on ROCm (mega_moe_hook.py:165)."
    )
    notes.append(
        "EP <= 8 (intranode dispatch) and power-of-two MTPR <= 32768 are MegaMoEV2's own limits (aiter); SGLang's "
        "adapter adds none and does not refuse EPLB (it has SGLANG_AITER_MEGA_EPLB_* settings, environ.py:1062-1063)."
    )
    notes.append(
        "Unverified: whether SGLang's MI355X FP4 weight build for MegaMoEV2 also works without SGLANG_USE_AITER "
        "(fp8.py:2216-2236 takes another branch then); only a GPU run shows it, so the plan sets it."
    )
    return [per_rank, mtpr, heap]
