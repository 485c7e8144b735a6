"""Capability declaration of ``flashinfer_megamoe`` (FlashInfer 0.7.2 ``flashinfer.moe_ep``, CuTeDSL MegaMoE).

Engine-native: SGLang 0.5.23 runs it behind ``--moe-a2a-backend flashinfer_megamoe``
(``srt/layers/moe/flashinfer_megamoe.py``); moe-oracle declares its limits and ranks it, but has no runtime
class, weight layout or staging for it (``runtime=None``): ``--engine none`` and ``build_layer`` refuse it, and
so does every engine that does not wire it (``moe_oracle/releases/sglang_0_5_23/gates.py`` declares the SGLang route).
"""

from __future__ import annotations

from moe_oracle_backends.cuda_sm100._common import ARCHS

from moe_oracle.model.types import QuantSpec, ScaleFormat, WeightFormat
from moe_oracle.rules import Check, Engine, ReasonCode, VariantSpec
from moe_oracle.rules import checks as c
from moe_oracle.rules.recipe import ActQuant, Recipe

BACKEND = "flashinfer_megamoe"
_FI = "flashinfer-python 0.7.2 flashinfer/moe_ep/backends/mega/kernel/sm100"
#: Where FlashInfer 0.7.2's MegaMoE maps its EP peers (read in the wheel: pip download --no-deps
#: flashinfer-python==0.7.2): a load/store address per peer, so every EP rank must be in one NVLink domain.
_PEERS = (
    "flashinfer-python 0.7.2 flashinfer/moe_ep/kernel_src/sm100/cutedsl_megamoe/shim/comm.py:129-160 "
    "(_compute_peer_offsets: nvshmem.core.get_peer_buffer per peer, 'the nvshmem_ptr address mapping'); "
    "src/src/bootstrap.py:331-341 (peer_offsets_list from nvshmem.core.get_peer_tensor for every rank); "
    "src/src/sym_buffer.py (SymBuffer: the per-rank offset table the kernels load peers' memory through)"
)
_SGL = "sglang 0.5.23 srt/layers/moe/flashinfer_megamoe.py"
_HOOK = "sglang 0.5.23 srt/arg_groups/moe_hook.py:335-339 (is_sm100_supported: SM100 family only)"
_NOT_HERE = "leave --moe-backend unset (SGLang's default MoE), or serve another variant."


def _mxfp8(q: QuantSpec) -> bool:
    return q.format is WeightFormat.MXFP8 and q.block == (1, 32) and q.scale_format is ScaleFormat.UE8M0


def _nvfp4(q: QuantSpec) -> bool:
    return q.format is WeightFormat.NVFP4 and q.block == (1, 16)


#: Engine-native: only SGLang wires it; moe-oracle's own runtime (--engine none) has no class for it.
ENGINE_NATIVE = c.scenario_predicate(
    ReasonCode.ENGINE_UNSUPPORTED,
    lambda sc: sc.engine is Engine.SGLANG,
    rule="served by SGLang 0.5.23 (--moe-a2a-backend flashinfer_megamoe); moe-oracle has no runtime class for it",
    message=lambda sc: (
        f"flashinfer_megamoe is engine-native: only SGLang runs it, and --engine {sc.engine.value} cannot "
        "(moe-oracle cannot build its layer)"
    ),
    remediation="Plan with --engine sglang, or choose a variant with a runtime class.",
    sources=("sglang 0.5.23 srt/arg_groups/choices.py:140-166 (--moe-a2a-backend flashinfer_megamoe)",),
)


def _checks(kernel: str, inter: int, inter_why: str, inter_source: str, kinds: tuple[str, ...]) -> tuple[Check, ...]:
    return (
        ENGINE_NATIVE,
        c.arch_in(
            ARCHS,
            kernel=f"FlashInfer MegaMoE {kernel}",
            remediation="On SM90 use --moe-backend deep_gemm_mega_moe:sm90_fp8xfp8; on gfx950 aiter_mega_moe.",
            sources=(_HOOK,),
        ),
        c.multiple_of(
            "hidden_size",
            64,
            why="FlashInfer MegaMoE staging: hidden_size must be a multiple of 64",
            remediation="No FlashInfer MegaMoE kernel for this hidden size; " + _NOT_HERE,
            sources=(f"{_FI}/{kernel}/staging.py (hidden % 64 != 0 -> ValueError)",),
        ),
        c.multiple_of(
            "moe_intermediate_size",
            inter,
            why=inter_why,
            remediation="No FlashInfer MegaMoE kernel for this intermediate size; " + _NOT_HERE,
            sources=(inter_source,),
        ),
        c.scenario_predicate(
            ReasonCode.KERNEL_MISSING,
            lambda sc: sc.software.library("flashinfer") is not None,  # library() is None unless present
            rule="flashinfer (flashinfer-python >= 0.7.2, flashinfer.moe_ep) is present",
            message=lambda sc: f"software profile '{sc.software.name}' has no flashinfer (flashinfer.moe_ep)",
            remediation="Install SGLang 0.5.23 with its pinned flashinfer-python 0.7.2 (--software sglang-0.5.23).",
            sources=("sglang 0.5.23 METADATA: Requires-Dist flashinfer_python[cu13]==0.7.2", "flashinfer/moe_ep"),
        ),
        *c.mega_moe_contract("FlashInfer's MegaMoE"),
        c.experts_divisible_by_ep((f"{_SGL}:182-190 (_layer_ep_world_rank: experts split evenly over EP ranks)",)),
        c.ep_only(("sglang 0.5.23 srt/arg_groups/overrides.py:1578-1590 (flashinfer_megamoe spans EP over TP)",)),
        c.scenario_predicate(
            ReasonCode.EP_EXCEEDS_DOMAIN,
            lambda sc: sc.ep <= sc.deployment.topology.effective_domain,
            rule="ep <= the NVLink domain (every EP rank's symmetric heap mapped by load/store address)",
            message=lambda sc: (
                f"ep={sc.ep} crosses the {sc.deployment.topology.effective_domain}-GPU NVLink domain: FlashInfer's "
                "MegaMoE reads and writes every EP peer's symmetric heap through nvshmem_ptr addresses, which exist "
                "only for peers inside one NVLink domain"
            ),
            remediation="Run replicas of at most one NVLink domain of EP ranks each (moe-oracle plan splits the "
            "layout into them), or another --moe-a2a-backend across domains.",
            sources=(_PEERS,),
        ),
        c.activation(clamp=True, kinds=kinds, sources=(f"{_SGL}:343, 350-362, 431 (swiglu clamp; NVFP4: situ)",)),
    )


MXFP8 = VariantSpec(
    backend=BACKEND,
    variant="sm100_mxfp8xmxfp8",
    target="cuda_sm100",
    summary="Blackwell MXFP8 x MXFP8 FlashInfer MegaMoE (SGLang only)",
    weights="mxfp8 g32 ue8m0",
    activations="MXFP8 (UE8M0 per 32)",
    kernel="flashinfer.moe_ep mxfp8_mxfp8_bf16_cutedsl",
    recipe=Recipe(ActQuant.MXFP8, ActQuant.MXFP8),
    checks=(
        c.weight_format(
            _mxfp8,
            wants="mxfp8 g32 ue8m0",
            remediation="Serve an MXFP8 checkpoint (SGLang --quantization mxfp8), or the variant matching the "
            "expert format.",
            sources=("sglang 0.5.23 srt/arg_groups/moe_hook.py:264-280 (quantization mxfp8)",),
        ),
        *_checks(
            "mxfp8_mxfp8_bf16_cutedsl",
            32,
            "FlashInfer MXFP8 MegaMoE: FC1 width 2 x intermediate divisible by 2 x 32",
            f"{_FI}/common/mxfp8_weight_utils.py:35 (interleave_gate_up, Mxfp8BlockSize 32)",
            ("swiglu",),
        ),
    ),
    sources=(_SGL + ":418-437, 598-650", "sglang 0.5.23 srt/layers/quantization/fp8.py:2122-2127"),
    priority=50,
)

NVFP4 = VariantSpec(
    backend=BACKEND,
    variant="sm100_nvfp4xnvfp4",
    target="cuda_sm100",
    summary="Blackwell NVFP4 x NVFP4 FlashInfer MegaMoE (SGLang only)",
    weights="nvfp4 g16 e4m3 + global scale",
    activations="NVFP4 (E4M3 per 16, FP32 global scale)",
    kernel="flashinfer.moe_ep nvfp4_nvfp4_bf16_cutedsl",
    recipe=Recipe(ActQuant.NVFP4, ActQuant.NVFP4),
    checks=(
        c.weight_format(
            _nvfp4,
            wants="nvfp4 g16 e4m3",
            remediation="Serve a ModelOpt NVFP4 checkpoint (SGLang --quantization modelopt_fp4), or the variant "
            "matching the expert format.",
            sources=("sglang 0.5.23 srt/arg_groups/moe_hook.py:264-280 (quantization modelopt_fp4)",),
        ),
        *_checks(
            "nvfp4_nvfp4_bf16_cutedsl",
            16,
            "FlashInfer NVFP4 MegaMoE: intermediate_size divisible by 16",
            f"{_FI}/nvfp4_nvfp4_bf16_cutedsl/weights.py:76-82 (_interleave_gate_up_16)",
            ("swiglu", "situ"),
        ),
    ),
    sources=(_SGL + ":365-416, 495-596", "sglang 0.5.23 srt/layers/quantization/modelopt_quant.py:2499-2505"),
    priority=50,
)

VARIANTS = (MXFP8, NVFP4)
