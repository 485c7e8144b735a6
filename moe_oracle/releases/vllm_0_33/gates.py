"""What vLLM 0.33.0 adds to the kernels' rules (https://github.com/vllm-project/vllm/tree/v0.33.0).

Two routes reach a fused kernel in vLLM 0.33:

* ``engine``: vLLM's own code. It wires ``deep_gemm_mega_moe`` and ``aiter_mega_moe`` only inside
  the DeepSeek V4 model files, always with the MXFP4 weight row, and never chooses them under
  ``--moe-backend auto``;
* ``moe-oracle``: moe-oracle's runtime inside vLLM, through the plug-in's out-of-tree
  ``RoutedExperts`` (:mod:`moe_oracle.engines.vllm.layer`). Every variant with a runtime class, for
  every model whose MoE vLLM builds with ``FusedMoEFactory`` (DeepSeek V4 on NVIDIA, GLM-4.x/5.x,
  DeepSeek-V3-style), with vLLM's own quant method creating the checkpoint-layout weights.
"""

from __future__ import annotations

from moe_oracle.model.types import MoELayerGroup, Scoring, WeightFormat
from moe_oracle.releases._rules import no_eplb, pp_one, tp_one
from moe_oracle.releases.types import plugin_serves_in
from moe_oracle.releases.vllm_0_33.model_classes import TABLE, plugin_serves, plugin_why_not
from moe_oracle.releases.vllm_0_33.version import SOURCE as VLLM_SRC
from moe_oracle.releases.vllm_0_33.version import SOURCE_TREE as VLLM_TREE
from moe_oracle.releases.vllm_0_33.version import VERSION
from moe_oracle.rules import Check, Engine, ReasonCode, Scenario
from moe_oracle.rules import checks as c
from moe_oracle.rules.engine import MOE_ORACLE_ROUTE, EngineProfile, EngineSupport
from moe_oracle.spec.device import DeviceSpec

DSV4_ARCHITECTURES = (
    "DeepseekV4ForCausalLM",
    "DeepseekV41ForCausalLM",
    "DeepseekV4ForConditionalGeneration",
    "DeepSeekV4MTPModel",
)
MORI_BACKENDS = ("mori_high_throughput", "mori_low_latency")

#: vLLM 0.33.0's DeepSeek V4 ROCm model file, whose load-time checks the AITER mega path's gates repeat.
_AMD_MODEL = f"{VLLM_SRC}/models/deepseek_v4/amd/model.py"

_DSV4 = f"{VLLM_TREE}/models/deepseek_v4 (no GLM model file reads kernel_config.moe_backend)"


def _is_dsv4(sc: Scenario) -> bool:
    return sc.architecture in DSV4_ARCHITECTURES


def _dsv4_only(backend: str) -> Check:
    """The model file builds vLLM's native mega experts (``model_classes.py`` VLLM, per class)."""
    return c.scenario_predicate(
        ReasonCode.MODEL_CLASS_UNSUPPORTED,
        lambda sc: TABLE.calls_mega(sc.architecture),
        rule="the model's MoE block builds vLLM's native mega experts (NATIVE_MEGA_MOE_BACKENDS)",
        message=lambda sc: (
            f"vLLM {VERSION} wires {backend} only in the DeepSeek V4 model files; "
            f"{TABLE.why_no_mega(sc.architecture)}, and fails with \"moe_backend='{backend}' is not "
            'supported" during model init'
        ),
        remediation="Use --engine sglang, or serve this model with vLLM's default --moe-backend auto.",
        sources=(_DSV4,),
    )


def _ep_enabled(backend: str) -> Check:
    return c.scenario_predicate(
        ReasonCode.EP_REQUIRED,
        lambda sc: sc.deployment.parallel.ep > 1 or sc.deployment.parallel.moe_group_size == 1,
        rule="expert parallel enabled (--enable-expert-parallel)",
        message=lambda sc: (
            f"{backend} requires expert parallel; tp*dp={sc.deployment.parallel.moe_group_size} ranks run without it"
        ),
        remediation="Add --enable-expert-parallel (--ep equal to tp*dp).",
        sources=(
            f"{VLLM_SRC}/model_executor/layers/fused_moe/deep_gemm_mega_moe.py"
            ": '... requires expert parallel. Enable it with --enable-expert-parallel'",
        ),
    )


def _fp4_experts(backend: str) -> Check:
    return c.group_predicate(
        ReasonCode.QUANT_UNSUPPORTED,
        lambda g: g.weight_format is WeightFormat.MXFP4,
        rule="expert_dtype == fp4 (MXFP4 routed experts)",
        message=lambda g: (
            f"vLLM's {backend} path always loads MXFP4 experts (expert_dtype fp4) and ignores "
            f"moe_quant_algo; these layers are {g.weight_quant.label()}"
        ),
        remediation="Drop --moe-backend for this checkpoint; vLLM's FusedMoE oracle serves it.",
        sources=(f"{VLLM_SRC}/models/deepseek_v4/nvidia/model.py (native mega validations: expert_dtype fp4)",),
    )


_DEEP_GEMM = EngineSupport(
    engine="vllm",
    version=VERSION,
    backend="deep_gemm_mega_moe",
    variants=("sm100_fp8xfp4",),
    unsupported="vLLM 0.33's native mega path raises 'DeepGEMM MegaMoE requires SM100 GPUs' off SM 10.x and "
    "uses only the MEGA_MOE_MXFP4 row (the MXFP8, NVFP4 and BF16 rows have no caller)",
    remediation="Use --engine sglang (SGLang 0.5.23 runs SM90 FP8 mega-MoE), or vLLM's default backend.",
    checks=(
        _dsv4_only("deep_gemm_mega_moe"),
        _ep_enabled("deep_gemm_mega_moe"),
        _fp4_experts("deep_gemm_mega_moe"),
        c.group_predicate(
            ReasonCode.ROUTING_UNSUPPORTED,
            lambda g: g.routing.scoring is Scoring.SQRTSOFTPLUS and g.routing.renormalize,
            rule="scoring_func == sqrtsoftplus and norm_topk_prob",
            message=lambda g: (
                f"routing {g.routing.scoring.value} (renormalize={g.routing.renormalize}); "
                "vLLM's DSv4 mega path requires sqrtsoftplus with renormalization"
            ),
            remediation="Leave --moe-backend unset (vLLM's default auto path serves this model).",
            sources=(f"{VLLM_SRC}/models/deepseek_v4/nvidia/model.py",),
        ),
        c.scenario_predicate(
            ReasonCode.ALL2ALL_UNSUPPORTED,
            lambda sc: sc.deployment.parallel.all2all_backend != "passthrough",
            rule="all2all_backend != passthrough",
            message=lambda sc: (
                "--all2all-backend passthrough is reserved for FlashInfer MoE-EP backends and "
                "raises ValueError with deep_gemm_mega_moe"
            ),
            remediation="Leave --all2all-backend unset.",
            sources=(f"{VLLM_SRC}/model_executor/layers/fused_moe/config.py bind_passthrough_all2all_backend",),
        ),
    ),
    sources=(f"{VLLM_SRC}/model_executor/layers/fused_moe/deep_gemm_mega_moe.py, {VLLM_TREE}/models/deepseek_v4",),
)

_FI_EP = "https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/model_executor/layers/fused_moe/flashinfer_moe_ep.py"
_FI_EP_EXPERTS = "https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/model_executor/layers/fused_moe/experts/flashinfer_moe_ep.py"
_KERNEL_CFG = "https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/config/kernel.py"
#: vLLM 0.33.0's FLASHINFER_MOE_EP_ARCHITECTURES (config/kernel.py:185-191): not DeepseekV4ForConditionalGeneration.
FI_EP_ARCHITECTURES = ("DeepseekV4ForCausalLM", "DeepSeekV4MTPModel", "DeepseekV41ForCausalLM")

#: ``--moe-backend flashinfer_moe_ep_mega_deep_gemm``: FlashInfer's MoE-EP layer (flashinfer-python 0.7.2.post1,
#: pinned by the wheel's METADATA; flashinfer/moe_ep/__init__.py:132 DeepGemmMegaMoeConfig) running DeepGEMM's
#: SM100 FP8 x FP4 mega kernel on the MXFP4 checkpoint as stored (flashinfer_moe_ep.py:226-235), with the
#: deep_gemm vLLM imports (flashinfer_moe_ep.py:275-281: vllm.utils.deep_gemm, site-packages first). It goes
#: through vLLM's fused-MoE path (config/kernel.py:168-170), so it is the second native route of the variant:
#: vLLM's own deep_gemm_mega_moe stays the first.
_FLASHINFER_MOE_EP_DG = EngineSupport(
    engine="vllm",
    version=VERSION,
    backend="deep_gemm_mega_moe",
    variants=("sm100_fp8xfp4",),
    unsupported="FlashInfer MoE-EP's DeepGEMM backend accepts only MXFP4 weights (flashinfer_moe_ep.py:97-100, "
    "134-138) with the DeepGEMM SM100 FP8 x FP4 megakernel",
    remediation="Use --moe-backend deep_gemm_mega_moe (vLLM's own DeepGEMM mega path), or vLLM's default backend.",
    flag="flashinfer_moe_ep_mega_deep_gemm",
    checks=(
        c.scenario_predicate(
            ReasonCode.MODEL_CLASS_UNSUPPORTED,
            lambda sc: sc.architecture in FI_EP_ARCHITECTURES,
            rule="architecture in FLASHINFER_MOE_EP_ARCHITECTURES",
            message=lambda sc: (
                f"vLLM {VERSION} accepts moe_backend='flashinfer_moe_ep_mega_deep_gemm' only for "
                f"{', '.join(FI_EP_ARCHITECTURES)}; the model is {sc.architecture or sc.model_type}"
            ),
            remediation="Use --moe-backend deep_gemm_mega_moe, or leave --moe-backend unset.",
            sources=(f"{_KERNEL_CFG}#L185-L191", f"{_KERNEL_CFG}#L234-L242"),
        ),
        c.scenario_predicate(
            ReasonCode.EP_REQUIRED,
            lambda sc: sc.deployment.parallel.ep > 1,
            rule="expert parallel enabled (moe_parallel_config.use_ep)",
            message=lambda sc: (
                f"flashinfer_moe_ep_mega_deep_gemm requires expert parallel; ep={sc.deployment.parallel.ep}"
            ),
            remediation="Add --enable-expert-parallel (--ep equal to tp*dp).",
            sources=(f"{_FI_EP_EXPERTS}#L109-L113",),
        ),
        _fp4_experts("flashinfer_moe_ep_mega_deep_gemm"),
        c.group_predicate(
            ReasonCode.ROUTING_UNSUPPORTED,
            lambda g: g.routing.scoring is Scoring.SQRTSOFTPLUS and g.routing.renormalize,
            rule="routing_method == DeepseekV4",
            message=lambda g: (
                f"routing {g.routing.scoring.value} (renormalize={g.routing.renormalize}); FlashInfer MoE-EP's "
                "DeepGEMM backend supports only the DeepSeek V4 routing method"
            ),
            remediation="Leave --moe-backend unset.",
            sources=(f"{_FI_EP}#L149-L153",),
        ),
        c.group_predicate(
            ReasonCode.ACTIVATION_UNSUPPORTED,
            lambda g: not g.expert_bias,
            rule="no expert bias (moe.has_bias false)",
            message=lambda g: "the experts carry biases, which FlashInfer MoE-EP does not support",
            remediation="Leave --moe-backend unset.",
            sources=(f"{_FI_EP}#L145-L146",),
        ),
        c.scenario_predicate(
            ReasonCode.ALL2ALL_UNSUPPORTED,
            lambda sc: sc.deployment.parallel.all2all_backend in (None, "allgather_reducescatter", "passthrough"),
            rule="all2all_backend unset (bound to passthrough: the backend dispatches and combines itself)",
            message=lambda sc: (
                f"--all2all-backend {sc.deployment.parallel.all2all_backend}: vLLM raises 'dispatches and combines "
                "itself and cannot be paired with all2all_backend=...'"
            ),
            remediation="Leave --all2all-backend unset.",
            sources=(f"{_KERNEL_CFG}#L194-L228",),
        ),
        no_eplb(
            "no EPLB",
            ": FlashInfer MoE-EP's DeepGEMM backend refuses it",
            (f"{_FI_EP}#L160-L161",),
        ),
    ),
    sources=(_FI_EP, _FI_EP_EXPERTS, f"{_KERNEL_CFG}#L150-L170"),
)


_AITER = EngineSupport(
    engine="vllm",
    version=VERSION,
    backend="aiter_mega_moe",
    variants=("gfx950_a8w4",),
    unsupported="vLLM 0.33 hard-codes quant='a8w4' for MegaMoEV2",
    remediation="Use --moe-backend aiter_mega_moe:gfx950_a8w4 (one node, --ep <= 8).",
    checks=(
        _dsv4_only("aiter_mega_moe"),
        _ep_enabled("aiter_mega_moe"),
        _fp4_experts("aiter_mega_moe"),
        tp_one(
            "tp == 1",
            "AITER MegaMoE requires data parallel attention with expert parallel MoE and TP=1",
            "Use --data-parallel-size N --enable-expert-parallel with --tensor-parallel-size 1.",
            (f"{_AMD_MODEL}#L563-L566 (tensor and pipeline parallel size 1)",),
        ),
        pp_one(
            "AITER MegaMoE requires PP=1",
            (f"{_AMD_MODEL}#L563-L566 (tensor and pipeline parallel size 1)",),
        ),
        c.scenario_predicate(
            ReasonCode.ALL2ALL_UNSUPPORTED,
            lambda sc: sc.deployment.parallel.all2all_backend in (None, *MORI_BACKENDS),
            rule="all2all_backend in {mori_high_throughput, mori_low_latency} (the plan sets it when unset)",
            message=lambda sc: (
                f"--all2all-backend {sc.deployment.parallel.all2all_backend}: AITER MegaMoE runs on MoRI shmem"
            ),
            remediation="Use --all2all-backend mori_high_throughput.",
            sources=(f"{_AMD_MODEL}#L571-L577 (all2all backend MoRI)",),
        ),
        no_eplb(
            "no EPLB",
            "; AITER MegaMoE does not support it",
            (f"{_AMD_MODEL}#L579-L580 (no EPLB)",),
        ),
        c.scenario_predicate(
            ReasonCode.ENGINE_UNSUPPORTED,
            lambda sc: all(
                sc.deployment.env.get(k, "1") != "0" for k in ("VLLM_ROCM_USE_AITER", "VLLM_ROCM_USE_AITER_MOE")
            ),
            rule="VLLM_ROCM_USE_AITER=1 and VLLM_ROCM_USE_AITER_MOE=1 (the plan sets them)",
            message=lambda sc: "VLLM_ROCM_USE_AITER or VLLM_ROCM_USE_AITER_MOE is set to 0",
            remediation="Set VLLM_ROCM_USE_AITER=1 and VLLM_ROCM_USE_AITER_MOE=1.",
            sources=(f"{_AMD_MODEL}#L553-L557 (VLLM_ROCM_USE_AITER and VLLM_ROCM_USE_AITER_MOE)",),
        ),
    ),
    sources=(f"{VLLM_SRC}/models/deepseek_v4/amd/mega_moe.py",),
)


_PLUGIN = "moe-oracle's vLLM plug-in (engines/vllm/layer.py: out-of-tree RoutedExperts)"
_OOT = f"{VLLM_SRC}/plugins/__init__.py item 4 (PluggableLayer.register_oot), vLLM 0.33 model_executor/custom_op.py"


def served_architecture(architecture: str) -> bool:
    """Does vLLM 0.33 build this architecture's MoE as the ``RoutedExperts`` the plug-in replaces (on NVIDIA)?"""
    return plugin_serves(architecture)


def _fused_moe_model(sc: Scenario) -> bool:
    """vLLM builds the model's MoE as the plain ``RoutedExperts`` the plug-in replaces (DeepSeek V4 on ROCm passes
    its own ``routed_experts_cls``, ``models/deepseek_v4/amd/model.py:749-772``)."""
    return plugin_serves(sc.architecture) and not (_is_dsv4(sc) and sc.deployment.device.vendor.value == "amd")


def _vllm_reads_format(g: MoELayerGroup) -> bool:
    """vLLM 0.33 has a MoE quant method whose parameters moe-oracle reads (engines/vllm/bridge.py)."""
    fmt = g.weight_format
    return fmt in (WeightFormat.FP8_BLOCK, WeightFormat.NVFP4, WeightFormat.BF16, WeightFormat.MXFP4)


_MOE_ORACLE = EngineSupport(
    engine="vllm",
    version=VERSION,
    backend="*",
    variants=("*",),
    unsupported="the variant declares no runtime class",
    remediation="Choose a --moe-backend NAME:VARIANT that has a runtime class (moe-oracle list backends).",
    route=MOE_ORACLE_ROUTE,
    checks=(
        c.scenario_predicate(
            ReasonCode.MODEL_CLASS_UNSUPPORTED,
            _fused_moe_model,
            rule="the model's MoE is vLLM's RoutedExperts (FusedMoEFactory), which the plug-in replaces",
            message=lambda sc: (
                f"vLLM {VERSION} on {sc.deployment.device.vendor.value.upper()}: "
                + (
                    "DeepSeek V4 passes its own routed_experts_cls on ROCm (models/deepseek_v4/amd/model.py:749-772), "
                    "not the RoutedExperts the moe-oracle plug-in replaces"
                    if _is_dsv4(sc)
                    else plugin_why_not(sc.architecture or sc.model_type)
                )
            ),
            remediation="Leave --moe-backend unset (vLLM's own MoE serves it), or plan it with --engine sglang.",
            fix=lambda sc: (
                "Leave --moe-backend unset (vLLM's own MoE serves it)"
                + (
                    ", or plan it with --engine sglang (moe-oracle's plug-in serves this model class there)."
                    if plugin_serves_in(Engine.SGLANG, sc.architecture or sc.model_type)
                    else "."
                )
            ),
            sources=(
                _OOT,
                f"{VLLM_TREE}/model_executor/models"
                f", {VLLM_SRC}/model_executor/models/glm4_moe.py, {VLLM_TREE}/models/deepseek_v4",
                "moe_oracle/releases/vllm_0_33/model_classes.py VLLM",
            ),
        ),
        c.scenario_predicate(
            ReasonCode.EP_REQUIRED,
            lambda sc: sc.deployment.parallel.ep > 1 or sc.deployment.parallel.moe_group_size == 1,
            rule="expert parallel enabled (--enable-expert-parallel)",
            message=lambda sc: (
                f"tp*dp={sc.deployment.parallel.moe_group_size} ranks without expert parallel: vLLM shards "
                "every expert, and the fused kernels keep experts whole"
            ),
            remediation="Add --enable-expert-parallel (--ep equal to tp*dp).",
            sources=(f"{VLLM_SRC}/model_executor/layers/fused_moe/deep_gemm_mega_moe.py",),
        ),
        tp_one(
            "tp == 1 (data-parallel attention: each rank dispatches its own tokens)",
            "through the plug-in the fused kernel dispatches each rank's tokens itself, and TP ranks hold the "
            "same tokens",
            "Use --tensor-parallel-size 1 --data-parallel-size N --enable-expert-parallel.",
            (_PLUGIN,),
        ),
        pp_one("the plug-in is validated with one pipeline stage", (_PLUGIN,)),
        no_eplb(
            "no EPLB (logical expert ids, linear placement)",
            ": vLLM then routes to physical (redundant) expert slots, which moe-oracle's runtime does not map",
            (
                _PLUGIN,
                f"{VLLM_SRC}/model_executor/layers/fused_moe/deep_gemm_mega_moe.py (EPLB hooks)",
            ),
        ),
        c.group_predicate(
            ReasonCode.QUANT_UNSUPPORTED,
            _vllm_reads_format,
            rule="vLLM creates the experts with a quant method the plug-in reads (MXFP4, FP8 block, NVFP4, BF16)",
            message=lambda g: f"{g.weight_quant.label()} experts: no vLLM 0.33 quant method layout the plug-in reads",
            remediation="Leave --moe-backend unset (vLLM's own MoE serves it).",
            sources=(_PLUGIN,),
        ),
    ),
    sources=(_OOT,),
)

PROFILE = EngineProfile(
    engine="vllm",
    version=VERSION,
    supports=(_DEEP_GEMM, _FLASHINFER_MOE_EP_DG, _AITER, _MOE_ORACLE),
    moe_backend_flag="--moe-backend",
)

#: vLLM's MoE oracle's name for each weight format (what ``--moe-backend auto`` says it picks for).
_ORACLE_FORMAT = {
    "mxfp4": "MXFP4",
    "nvfp4": "NvFP4",
    "fp8_block": "FP8",
    "fp8_channel": "FP8",
    "mxfp8": "MXFP8",
    "bf16": "unquantized",
    "int4": "INT4 (WNA16)",
    "int8": "INT8 (WNA16)",
}


def fallback(group: MoELayerGroup, device: DeviceSpec) -> str:
    """What vLLM serves ``group`` with when no fused mega-MoE backend is chosen."""
    return (
        f"vLLM FusedMoE with --moe-backend auto: the {_ORACLE_FORMAT[group.weight_format.value]} MoE oracle picks a "
        f"non-fused kernel for {group.weight_quant.label()} experts on {device.name}, its all2all backend as "
        "--all2all-backend sets it"
    )
