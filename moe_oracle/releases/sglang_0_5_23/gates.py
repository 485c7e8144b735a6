"""What SGLang 0.5.23 adds to the kernels' rules, read from the 0.5.23 wheel (``sglang/srt/...``).

``--moe-a2a-backend megamoe`` forces ``ep_size = tp_size`` (``arg_groups/overrides.py:1578-1618``).
On SM90 it runs DeepGEMM ``fp8_mega_moe`` on FP8 block-128 experts (``layers/quantization/fp8.py:2265-2273``
asserts the experts are not FP4); MXFP4 experts get there only through SGLang's own load-time
conversion, ``SGLANG_DSV4_FP4_DEQUANT=1`` (``fp8.py:2196-2214``, declared below). On SM100 it runs
``fp8xfp4`` (MXFP4 experts) and ``nvfp4xnvfp4`` (ModelOpt NVFP4 experts,
``layers/quantization/modelopt_quant.py:2650-2710``) through ``layers/moe/mega_moe.py:56-61``. On ROCm
``SGLANG_AMD_USE_FLYDSL_MEGA_MOE=1`` routes it to AITER MegaMoEV2 (``layers/moe/mega_moe.py:50-53``,
``layers/moe/mega_moe_flydsl.py``). ``--moe-a2a-backend flashinfer_megamoe`` runs FlashInfer's MegaMoE
(``flashinfer.moe_ep``) on MXFP8 and NVFP4 experts of an allow-listed architecture (``arg_groups/moe_hook.py:237-360``).
"""

from __future__ import annotations

from moe_oracle.model.types import MoELayerGroup, WeightFormat
from moe_oracle.releases._rules import no_eplb, pp_one, tp_one
from moe_oracle.releases.sglang_0_5_23.model_classes import TABLE, sglang_plugin_serves, sglang_plugin_why_not
from moe_oracle.releases.sglang_0_5_23.version import SOURCE as SGLANG_SRC
from moe_oracle.releases.sglang_0_5_23.version import VERSION
from moe_oracle.releases.types import plugin_serves_in
from moe_oracle.rules import Check, Engine, ReasonCode, Scenario
from moe_oracle.rules import checks as c
from moe_oracle.rules.conversion import FP8_TO_NVFP4_TWIN
from moe_oracle.rules.engine import MOE_ORACLE_ROUTE, EngineConversion, EngineProfile, EngineSupport
from moe_oracle.spec.device import DeviceSpec

_SRC = (
    f"{SGLANG_SRC}/srt/layers/moe/mega_moe.py, {SGLANG_SRC}/srt/layers/quantization/fp8.py, "
    f"{SGLANG_SRC.replace('/blob/', '/tree/')}/srt/arg_groups"
)

_EP_SPANS_TP = c.scenario_predicate(
    ReasonCode.EP_SIZE_UNSUPPORTED,
    lambda sc: sc.deployment.parallel.ep == sc.deployment.parallel.moe_group_size,
    rule="ep == tp * dp (megamoe forces ep_size = tp_size)",
    message=lambda sc: (
        f"ep={sc.deployment.parallel.ep} but SGLang's megamoe sets ep_size to tp_size="
        f"{sc.deployment.parallel.moe_group_size}"
    ),
    remediation="Use --ep equal to tp*dp (SGLang --tp N --ep-size N).",
    sources=(f"{SGLANG_SRC}/srt/arg_groups/overrides.py#L1578-L1618 (_A2A_EP_SPANNING_BACKENDS, _a2a_ep_size)",),
)


def _rocm(sc: Scenario) -> bool:
    return sc.deployment.device.vendor.value == "amd"


def _vllm_serves(sc: Scenario) -> bool:
    """moe-oracle's vLLM plug-in serves this model class: only then does a refusal here send the operator to vLLM."""
    return plugin_serves_in(Engine.VLLM, sc.architecture or sc.model_type)


_CLASS_SOURCES = (
    f"{SGLANG_SRC}/srt/arg_groups/mega_moe_hook.py#L27-L48 (no architecture allow-list)",
    f"{SGLANG_SRC}/srt/layers/moe/fused_moe_triton/layer.py#L175-L193 (megamoe without a mega forward: "
    "StandardDispatcher)",
    f"{SGLANG_SRC}/srt/layers/moe/mega_moe_sm90.py#L137-L138 (SM90 weights interleaved for mega in place)",
    "moe_oracle/releases/sglang_0_5_23/model_classes.py SGLANG (per class: file:line of the call or of the block)",
)


def _block_calls_mega(backend: str) -> Check:
    """The model's MoE block calls ``layers/moe/mega_moe.py`` (``model_classes.py``, per class)."""
    return c.scenario_predicate(
        ReasonCode.MODEL_CLASS_UNSUPPORTED,
        lambda sc: not TABLE.why_no_mega(sc.architecture, rocm=_rocm(sc)),
        rule="the model's MoE block calls SGLang's mega path (forward_mega_moe / run_mega_routed_experts)",
        message=lambda sc: (
            f"SGLang {VERSION} accepts --moe-a2a-backend megamoe for {sc.architecture or sc.model_type}, but "
            f"{TABLE.why_no_mega(sc.architecture, rocm=_rocm(sc))}: its regular MoE runs (EP forced to span TP"
            + (", SM90 FP8 expert weights re-laid-out for mega in place" if backend == "deep_gemm_mega_moe" else "")
            + "), not "
            + backend
        ),
        remediation="Leave --moe-a2a-backend unset (SGLang's default MoE serves this model), or use --engine vllm "
        "where moe-oracle's plug-in serves it.",
        fix=lambda sc: (
            "Leave --moe-a2a-backend unset (SGLang's default MoE serves this model)"
            + (
                ", or use --engine vllm (moe-oracle's plug-in serves this model class there)."
                if _vllm_serves(sc)
                else "."
            )
        ),
        sources=_CLASS_SOURCES,
    )


_DEEP_GEMM = EngineSupport(
    engine="sglang",
    version=VERSION,
    backend="deep_gemm_mega_moe",
    variants=("sm90_fp8xfp8", "sm100_fp8xfp4", "sm100_nvfp4"),
    unsupported="SGLang 0.5.23's megamoe runs FP8 block-128 experts on SM90 (fp8_mega_moe; MXFP4 experts after "
    "SGLANG_DSV4_FP4_DEQUANT=1), and mma types fp8xfp4 / mxf4xmxf4 (MXFP4 experts) and nvfp4xnvfp4 (NVFP4 "
    "experts) on SM100 (layers/moe/mega_moe.py:56-61); its sgl-deep-gemm 0.2.3.post2 has no SM90 FP4 kernel",
    remediation="Use the variant matching the checkpoint, or --engine none to judge the kernel alone.",
    checks=(_block_calls_mega("deep_gemm_mega_moe"), _EP_SPANS_TP),
    sources=(
        _SRC,
        "fp8.py:2265-2273 (SM90: build_sm90_mega_moe_experts_weights, asserts not FP4)",
        "modelopt_quant.py:2650-2710 (_build_mega_moe_weights: deep_gemm nvfp4xnvfp4)",
    ),
)

_AITER = EngineSupport(
    engine="sglang",
    version=VERSION,
    backend="aiter_mega_moe",
    variants=("gfx950_a8w4",),
    unsupported="SGLang's FlyDSL mega path builds MegaMoEV2 with quant=SGLANG_AMD_FLYDSL_MEGA_QUANT or 'a8w4' "
    "(layers/moe/mega_moe_flydsl.py:360); moe-oracle plans only the default a8w4",
    remediation="Use --moe-backend aiter_mega_moe:gfx950_a8w4.",
    checks=(_block_calls_mega("aiter_mega_moe"), _EP_SPANS_TP),
    sources=(_SRC, "layers/moe/mega_moe_flydsl.py:187-229 (MegaMoEV2 per capacity; no EPLB or EP-size check)"),
)

#: ``arg_groups/moe_hook.py:237-262``: the architectures SGLang 0.5.23 validates for FlashInfer MegaMoE.
FLASHINFER_MEGAMOE_ARCHS = (
    "BeamForCausalLM",
    "DeepseekV2ForCausalLM",
    "DeepseekV3ForCausalLM",
    "DeepseekV32ForCausalLM",
    "DeepseekV4ForCausalLM",
    "Glm4MoeForCausalLM",
    "GlmMoeDsaForCausalLM",
    "NemotronHForCausalLM",
    "NemotronHPuzzleForCausalLM",
    "Qwen2MoeForCausalLM",
    "Qwen3MoeForCausalLM",
    "KimiK3ForConditionalGeneration",
    "KimiK3LinearForCausalLM",
)
_FI_HOOK = f"{SGLANG_SRC}/srt/arg_groups/moe_hook.py"

_FLASHINFER = EngineSupport(
    engine="sglang",
    version=VERSION,
    backend="flashinfer_megamoe",
    variants=("sm100_mxfp8xmxfp8", "sm100_nvfp4xnvfp4"),
    unsupported="SGLang 0.5.23's --moe-a2a-backend flashinfer_megamoe runs MXFP8 and ModelOpt NVFP4 experts "
    "(moe_hook.py:264-280)",
    remediation="Use the variant matching the checkpoint.",
    checks=(
        c.scenario_predicate(
            ReasonCode.MODEL_CLASS_UNSUPPORTED,
            lambda sc: sc.architecture in FLASHINFER_MEGAMOE_ARCHS,
            rule="the architecture is on SGLang's FlashInfer MegaMoE allow-list",
            message=lambda sc: (
                f"SGLang {VERSION} refuses --moe-a2a-backend flashinfer_megamoe for "
                f"{sc.architecture or sc.model_type}: 'FlashInfer MegaMOE is not validated for model architectures'"
            ),
            remediation="Leave --moe-a2a-backend unset (SGLang's default MoE serves this model).",
            sources=(f"{_FI_HOOK}#L237-L262 (validate_flashinfer_megamoe_model)",),
        ),
        c.scenario_predicate(
            ReasonCode.TP_UNSUPPORTED,
            lambda sc: sc.deployment.parallel.tp == 1 and sc.deployment.parallel.dp > 1,
            rule="attention DP over every rank (SGLang --attn-dp-size equal to --tp-size, > 1)",
            message=lambda sc: (
                f"tp={sc.deployment.parallel.tp}, dp={sc.deployment.parallel.dp}: SGLang asserts 'FlashInfer MegaMOE "
                "is only supported with --attn-dp-size equal to --tp-size' (attention DP enabled)"
            ),
            remediation="Use --tp 1 --dp N with N > 1 (SGLang --tp-size N --attn-dp-size N --ep-size N).",
            sources=(
                f"{_FI_HOOK}#L325-L327",
                f"{SGLANG_SRC}/srt/runtime_context.py#L191-L199 (attn_dp_enabled_of: attn_dp_size > 1)",
            ),
        ),
        c.scenario_predicate(
            ReasonCode.QUANT_UNSUPPORTED,
            lambda sc: not sc.group.weight_quant.source.startswith("hf_quant_config"),
            rule="the checkpoint's config.json declares its quantization (quantization_config), which SGLang reads "
            "when it validates flashinfer_megamoe",
            message=lambda sc: (
                f"{sc.group.weight_quant.label()} experts declared only in hf_quant_config.json "
                f"({sc.group.weight_quant.source}): SGLang {VERSION} validates --moe-a2a-backend flashinfer_megamoe "
                "with quantization=None and refuses it ('Standard FP8 MoE checkpoints are not supported')"
            ),
            remediation="Leave --moe-a2a-backend unset (SGLang's default MoE serves this model).",
            sources=(f"{_FI_HOOK}#L264-L280 (validate_flashinfer_megamoe_model: the resolved quantization)",),
        ),
        _EP_SPANS_TP,
    ),
    sources=(
        _SRC,
        f"{_FI_HOOK}#L237-L360 (handle_a2a_moe: flashinfer_megamoe)",
        f"{SGLANG_SRC}/srt/layers/moe/flashinfer_megamoe.py",
    ),
)

#: Architectures whose FP8 checkpoints SGLang 0.5.23 marks as carrying MXFP4 routed experts
#: (``configs/model_config.py:744-761`` DeepSeek V4 auto-detection, ``:734-742`` MiMo-V2 store_dtype).
FP4_EXPERT_ARCHS = ("DeepseekV4ForCausalLM", "MiMoV2ForCausalLM", "MiMoV2FlashForCausalLM")

DSV4_FP4_DEQUANT = EngineConversion(
    source=WeightFormat.MXFP4,
    target=WeightFormat.FP8_BLOCK,
    env=(("SGLANG_DSV4_FP4_DEQUANT", "1"),),
    summary="SGLang converts the MXFP4 routed experts to FP8 block-128 at load (cast_e2m1fn_to_e4m3fn: "
    "block scale = max group scale / 2^6, values x 2^(group - block exponent)), then runs the SM90 FP8 "
    "megamoe kernel",
    condition="every 128x128 block's MXFP4 group exponents span <= 14 (values k x 2^(5 - span) "
    "stay on E4M3's grid); SGLang does not check it per block",
    checks=(
        c.scenario_predicate(
            ReasonCode.ENGINE_UNSUPPORTED,
            lambda sc: sc.architecture in FP4_EXPERT_ARCHS,
            rule="SGLang marks the checkpoint's routed experts as FP4 (is_fp4_experts)",
            message=lambda sc: (
                f"SGLang 0.5.23 applies SGLANG_DSV4_FP4_DEQUANT only to FP8 checkpoints whose routed experts it "
                f"marks as MXFP4 ({', '.join(FP4_EXPERT_ARCHS)}, or quantization_config.routed_experts_quant_method "
                f"= 'mxfp4'); {sc.architecture} is not among the architectures moe-oracle knows it marks"
            ),
            remediation="Serve an FP8 block-128 checkpoint, or use --engine none with moe-oracle's conversion.",
            sources=(
                f"{SGLANG_SRC}/srt/configs/model_config.py#L726-L761",
                f"{SGLANG_SRC}/srt/model_loader/loader.py#L228",
            ),
        ),
    ),
    checked_at_load=False,
    unverified="SGLang converts MXFP4 to FP8 block-128 without checking exactness per block: a 128x128 block whose "
    "MXFP4 group exponents span more than 14 binades loses its smallest values silently; not checked for this "
    "checkpoint",
    sources=(
        f"{SGLANG_SRC}/srt/environ.py#L1733 SGLANG_DSV4_FP4_DEQUANT",
        f"{SGLANG_SRC}/srt/layers/quantization/fp8.py#L216-L256 cast_e2m1fn_to_e4m3fn ('losslessly')",
        f"{SGLANG_SRC}/srt/layers/quantization/fp8.py#L2196-L2214 (dequant at load), 2265-2273 (SM90 megamoe weights)",
        f"{SGLANG_SRC}/srt/layers/quantization/fp8.py#L425-L429 (needs --moe-runner-backend auto)",
    ),
)

NVFP4_ONLINE = EngineConversion(
    source=WeightFormat.FP8_BLOCK,
    target=WeightFormat.NVFP4,
    env=(),
    argv=("--quantization", "modelopt_fp4"),
    summary="SGLang quantizes the FP8 routed experts to NVFP4 at load (online NVFP4: dequantize each 128x128 "
    "block, requantize to E2M1 with E4M3 group-16 scales and a per-tensor activation scale of 1.0), then runs "
    "the SM100 NVFP4 megamoe kernel on them",
    condition=f"lossy by construction (4-bit weights); {FP8_TO_NVFP4_TWIN}",
    checks=(
        c.scenario_predicate(
            ReasonCode.ARCH_UNSUPPORTED,
            lambda sc: sc.deployment.device.arch.value == "sm100",
            rule="SM100 (SGLang's NVFP4 megamoe runs on Blackwell)",
            message=lambda sc: (
                f"{sc.deployment.device.name} is {sc.deployment.device.arch.value}: SGLang's online "
                "NVFP4 experts reach megamoe only on SM100"
            ),
            remediation="Serve the FP8 checkpoint as stored (sm90_fp8xfp8 on H200).",
            sources=(f"{SGLANG_SRC}/srt/layers/quantization/modelopt_quant.py#L2377-L2386",),
        ),
    ),
    unverified="SGLang's megamoe weight build on online-quantized NVFP4 experts (modelopt_quant.py:2630-2633 fills "
    "the activation scale with 1.0) has not run on a GPU here; check the first outputs against the FP8 model",
    sources=(
        f"{SGLANG_SRC}/srt/configs/model_config.py#L2044-L2046 (--quantization modelopt_fp4 kept for FP8 checkpoints "
        "'so eligible MoE experts are requantized online')",
        f"{SGLANG_SRC}/srt/layers/quantization/modelopt_quant.py#L1594-L1608 (quant_method fp8 -> "
        "make_modelopt_fp4_online_config_from_fp8)",
        f"{SGLANG_SRC}/srt/layers/quantization/nvfp4_online.py",
    ),
)

#: the library entry a software profile lists when moe-oracle's plug-in runs inside the engine
PLUGIN_LIBRARY = "moe_oracle"
_PLUGIN = "moe-oracle's SGLang plug-in (engines/sglang/plugin.py: FusedMoE replaced through HookRegistry)"
_HOOKS = (
    f"{SGLANG_SRC}/srt/plugins/__init__.py#L104-L141 (load_plugins), "
    f"{SGLANG_SRC}/srt/plugins/hook_registry.py (REPLACE)"
)


def _plugin_reads(sc: Scenario) -> bool:
    """SGLang 0.5.23 creates the experts with a quant method whose parameters the plug-in reads
    (``engines/bridge.py`` SGLANG_PARAMS): ``Fp8MoEMethod`` block-128 (FP8, or MXFP4 routed experts of the
    architectures SGLang marks as FP4, ``fp8.py:1604-1720``) and the unquantized method (BF16)."""
    fmt = sc.group.weight_format
    if fmt is WeightFormat.MXFP4:
        return sc.architecture in FP4_EXPERT_ARCHS
    return fmt in (WeightFormat.FP8_BLOCK, WeightFormat.BF16)


_MOE_ORACLE = EngineSupport(
    engine="sglang",
    version=VERSION,
    backend="*",
    variants=("*",),
    unsupported="the variant declares no runtime class",
    remediation="Pin a variant that has a runtime class in MOE_ORACLE_SGLANG_BACKEND (moe-oracle list backends).",
    route=MOE_ORACLE_ROUTE,
    checks=(
        c.scenario_predicate(
            ReasonCode.ENGINE_UNSUPPORTED,
            lambda sc: PLUGIN_LIBRARY in sc.software.libraries,
            rule="moe-oracle's SGLang plug-in is installed (the software lists moe_oracle)",
            message=lambda sc: (
                f"software '{sc.software.name}' has no moe-oracle plug-in: SGLang {VERSION} alone runs this variant "
                "only through --moe-a2a-backend megamoe"
            ),
            remediation="Install moe-oracle next to SGLang (--software sglang-0.5.23+moe-oracle).",
            sources=(_HOOKS,),
        ),
        c.scenario_predicate(
            ReasonCode.MODEL_CLASS_UNSUPPORTED,
            lambda sc: sglang_plugin_serves(sc.architecture) and not _rocm(sc),
            rule="the model's routed experts are SGLang's FusedMoE (NVIDIA), which the plug-in replaces",
            message=lambda sc: (
                f"SGLang {VERSION}: "
                + (
                    "on ROCm SGLang's quant methods create AITER-padded expert parameters "
                    "(layers/quantization/fp8.py get_moe_weight_sizes), which the plug-in does not read"
                    if _rocm(sc) and sglang_plugin_serves(sc.architecture)
                    else sglang_plugin_why_not(sc.architecture or sc.model_type)
                )
            ),
            remediation="Serve this model with SGLang's own MoE backends, or with --engine vllm.",
            fix=lambda sc: (
                "Serve this model with SGLang's own MoE backends"
                + (
                    ", or with --engine vllm (moe-oracle's plug-in serves this model class there)."
                    if _vllm_serves(sc)
                    else "."
                )
            ),
            sources=(_HOOKS, "moe_oracle/releases/sglang_0_5_23/model_classes.py SGLANG_FUSED_MOE"),
        ),
        c.scenario_predicate(
            ReasonCode.EP_SIZE_UNSUPPORTED,
            lambda sc: sc.deployment.parallel.ep == sc.deployment.parallel.moe_group_size,
            rule="ep == tp * dp (SGLang --ep-size equal to --tp-size: each rank holds whole experts)",
            message=lambda sc: (
                f"ep={sc.deployment.parallel.ep} with tp*dp={sc.deployment.parallel.moe_group_size}: SGLang then "
                "shards every expert over the MoE TP group, and the fused kernels keep experts whole"
            ),
            remediation="Use --ep equal to tp*dp (SGLang --tp-size N --ep-size N).",
            sources=(_PLUGIN,),
        ),
        tp_one(
            "tp == 1 (attention data parallel: --attn-dp-size equal to --tp-size)",
            "through the plug-in the fused kernel dispatches each rank's tokens itself, and attention-TP ranks hold "
            "the same tokens",
            "Use --tp 1 --dp N (SGLang --tp-size N --attn-dp-size N --ep-size N).",
            (_PLUGIN,),
        ),
        pp_one("the plug-in is validated with one pipeline stage", (_PLUGIN,), "Drop --pp-size."),
        no_eplb(
            "no EPLB (logical expert ids, linear placement)",
            ": SGLang then routes to physical (redundant) expert slots, which moe-oracle's runtime does not map",
            (_PLUGIN,),
            "Drop --enable-eplb.",
        ),
        c.scenario_predicate(
            ReasonCode.QUANT_UNSUPPORTED,
            _plugin_reads,
            rule="SGLang creates the experts with a quant method the plug-in reads (FP8 block-128, BF16, MXFP4 "
            "routed experts of " + ", ".join(FP4_EXPERT_ARCHS) + ")",
            message=lambda sc: (
                f"{sc.group.weight_quant.label()} experts of {sc.architecture or sc.model_type}: no SGLang {VERSION} "
                "quant method layout the plug-in reads"
            ),
            remediation="Pin this layer group to 'sglang' in MOE_ORACLE_SGLANG_BACKEND (SGLang's own MoE serves it).",
            sources=(_PLUGIN, f"{SGLANG_SRC}/srt/layers/quantization/fp8.py#L1544-L1760 (create_fp8_moe_weight_)"),
        ),
    ),
    sources=(_HOOKS,),
)

PROFILE = EngineProfile(
    engine="sglang",
    version=VERSION,
    supports=(_DEEP_GEMM, _AITER, _FLASHINFER, _MOE_ORACLE),
    moe_backend_flag="--moe-a2a-backend",
    conversions=(DSV4_FP4_DEQUANT, NVFP4_ONLINE),
)


def fallback(group: MoELayerGroup, device: DeviceSpec) -> str:
    """What SGLang serves ``group`` with when no fused mega-MoE backend is chosen."""
    return (
        "SGLang's default MoE path (--moe-a2a-backend none or deepep, --moe-runner-backend auto) for "
        f"{group.weight_quant.label()} experts on {device.name}"
    )
