"""Per model class: which MoE block each engine builds, and whether that block calls a mega path.

An engine accepts its mega flag for every model (SGLang 0.5.23 has no architecture allow-list for
``--moe-a2a-backend megamoe``, ``arg_groups/mega_moe_hook.py:27-48``), but only some model files'
MoE blocks call the fused kernel; the others run the engine's regular MoE with the flag's side
effects (EP forced to span TP, SM90 expert weights re-laid-out in place). Which classes call it is
a fact of each engine version, kept here as data with the source line of every row:

* :data:`SGLANG` (SGLang 0.5.23, paths under ``sglang/srt/``): ``mega`` is whether the block calls
  ``layers/moe/mega_moe.py`` (``forward_mega_moe`` / ``run_mega_routed_experts``); ``rocm`` whether
  that call also diverts to AITER MegaMoEV2 (only ``DeepseekV2MoE``'s does, ``mega_moe.py:172-178``).
* :data:`VLLM` (vLLM 0.33.0, paths under ``vllm/``): ``mega`` is whether the model file builds
  vLLM's native mega experts (``NATIVE_MEGA_MOE_BACKENDS``); ``oot`` whether its MoE is the plain
  ``RoutedExperts`` built by ``FusedMoEFactory`` (the class moe-oracle's plug-in replaces by exact
  name, ``model_executor/custom_op.py:46-99``), and ``blocker`` what the plug-in cannot serve there.

Architectures neither table lists are unknown to moe-oracle: the decision does not claim a mega path
for them. Sources: docs/families.md, §1.4, §2.2, each line re-read in the
wheels (``tests/engines/test_engine_vocabulary.py`` checks every cited line names the block).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelClass:
    """One engine version's MoE block for a set of architectures.

    ``source`` is ``file:line`` of the mega call (``mega``) or of the block that has none;
    ``entry`` the line(s) where the architectures reach the block.
    """

    architectures: tuple[str, ...]
    block: str
    mega: bool
    source: str
    entry: str
    rocm: bool = False
    oot: bool = False
    blocker: str = ""
    note: str = ""


_DSV2_MEGA = "models/deepseek_v2.py:1061-1069 (DeepseekV2MoE.forward: should_use_mega_moe -> forward_mega_moe)"
_QWEN2_MEGA = "models/qwen2_moe.py:407-410, 810-811 (Qwen2MoeSparseMoeBlock: _use_mega_moe -> _forward_mega_moe)"
_QWEN3_MEGA = "models/qwen3_moe.py:306-318 (Qwen3MoeSparseMoeBlock: _use_mega_moe -> _forward_mega_moe)"

#: SGLang 0.5.23 (``sglang/srt/``).
SGLANG: tuple[ModelClass, ...] = (
    ModelClass(
        ("DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM"),
        "DeepseekV2MoE",
        True,
        _DSV2_MEGA,
        "models/deepseek_v2.py:3595",
        rocm=True,
        note="DeepSeek-V2/V3/R1/V3.1/V3.2, Kimi-K2; above the token cap it falls back to fused MoE",
    ),
    ModelClass(("DeepseekV4ForCausalLM",), "DeepseekV2MoE", True, _DSV2_MEGA, "models/deepseek_v4.py:3155", rocm=True),
    ModelClass(
        ("GlmMoeDsaForCausalLM",), "DeepseekV2MoE", True, _DSV2_MEGA, "models/glm4_moe.py:1284 (subclass)", rocm=True
    ),
    ModelClass(
        ("KimiK25ForConditionalGeneration",), "DeepseekV2MoE", True, _DSV2_MEGA, "models/kimi_k25.py:693", rocm=True
    ),
    ModelClass(
        ("MistralLarge3ForCausalLM",), "DeepseekV2MoE", True, _DSV2_MEGA, "models/mistral_large_3.py:12", rocm=True
    ),
    ModelClass(
        ("Glm5NextForConditionalGeneration",), "DeepseekV2MoE", True, _DSV2_MEGA, "models/glm5_next.py:102", rocm=True
    ),
    ModelClass(("HYV4ForCausalLM",), "DeepseekV2MoE", True, _DSV2_MEGA, "models/hunyuan_v4.py:625", rocm=True),
    ModelClass(("Qwen2MoeForCausalLM",), "Qwen2MoeSparseMoeBlock", True, _QWEN2_MEGA, "models/qwen2_moe.py:1026"),
    ModelClass(("Qwen3NextForCausalLM",), "Qwen2MoeSparseMoeBlock", True, _QWEN2_MEGA, "models/qwen3_next.py:549"),
    ModelClass(
        ("Qwen3_5MoeForCausalLM", "Qwen3_5MoeForConditionalGeneration"),
        "Qwen2MoeSparseMoeBlock",
        True,
        _QWEN2_MEGA,
        "models/qwen3_5.py:1148",
    ),
    ModelClass(
        ("InternS2PreviewForConditionalGeneration",),
        "Qwen2MoeSparseMoeBlock",
        True,
        _QWEN2_MEGA,
        "models/interns2preview.py:9 (Qwen3.5 subclass)",
    ),
    ModelClass(
        ("Qwen4ExpForConditionalGeneration",),
        "Qwen2MoeSparseMoeBlock",
        True,
        _QWEN2_MEGA,
        "models/qwen4_exp.py:1737 (decoder layers subclass Qwen3.5's)",
    ),
    ModelClass(("Qwen3MoeForCausalLM",), "Qwen3MoeSparseMoeBlock", True, _QWEN3_MEGA, "models/qwen3_moe.py:1298"),
    ModelClass(
        ("Qwen3VLMoeForConditionalGeneration",),
        "Qwen3MoeSparseMoeBlock",
        True,
        _QWEN3_MEGA,
        "models/qwen3_vl_moe.py:44 (Qwen3MoeLLMModel(Qwen3MoeModel))",
    ),
    ModelClass(("MellumForCausalLM",), "Qwen3MoeSparseMoeBlock", True, _QWEN3_MEGA, "models/mellum.py:413"),
    ModelClass(
        ("Glm4MoeForCausalLM",),
        "Glm4MoeSparseMoeBlock",
        False,
        "models/glm4_moe.py:402",
        "models/glm4_moe.py:1433",
        note="GLM-4.5/4.6/4.7, GLM-4.5-Air",
    ),
    ModelClass(
        ("Glm4MoeLiteForCausalLM",),
        "Glm4MoeLiteSparseMoeBlock",
        False,
        "models/glm4_moe_lite.py:173",
        "models/glm4_moe_lite.py:1084",
        note="GLM-4.7-Flash",
    ),
    ModelClass(("MixtralForCausalLM",), "MixtralMoE", False, "models/mixtral.py:60", "models/mixtral.py:482"),
    ModelClass(
        ("Llama4ForCausalLM", "Llama4ForConditionalGeneration"),
        "Llama4MoE",
        False,
        "models/llama4.py:75",
        "models/llama4.py:600, models/mllama4.py:494-496, 1026 (the checkpoints' Llama4ForConditionalGeneration "
        "builds Llama4ForCausalLM as its language model)",
        blocker="apply_router_weight_on_input=True (models/llama4.py:127: the router weight scales the input, not "
        "the output)",
    ),
    ModelClass(
        ("GptOssForCausalLM",),
        "GptOssSparseMoeBlock",
        False,
        "models/gpt_oss.py:207",
        "models/gpt_oss.py:1446",
        note="with megamoe, Mxfp4MoEMethod still builds mega weights and check_mega_moe_shapes refuses H=2880 "
        "(layers/quantization/mxfp4.py:694-713)",
    ),
    ModelClass(
        ("MiniMaxM2ForCausalLM",),
        "MiniMaxM2MoE",
        False,
        "models/minimax_m2.py:508",
        "models/minimax_m2.py:1249",
    ),
    ModelClass(
        ("Step3VLForConditionalGeneration",),
        "Step3TextMoEMLP",
        False,
        "models/step3_vl.py:114",
        "models/step3_vl.py:1034",
    ),
    ModelClass(("Ernie4_5_MoeForCausalLM",), "Ernie4Moe", False, "models/ernie4.py:71", "models/ernie4.py:434"),
    ModelClass(
        ("BailingMoEForCausalLM", "BailingMoeForCausalLM", "BailingMoeV2ForCausalLM"),
        "BailingMoESparseMoeBlock",
        False,
        "models/bailing_moe.py:181",
        "models/bailing_moe.py:1120",
    ),
    ModelClass(
        ("HunYuanMoEV1ForCausalLM",),
        "HunYuanSparseMoeBlock",
        False,
        "models/hunyuan.py:117",
        "models/hunyuan.py:804",
    ),
    ModelClass(("HYV3ForCausalLM",), "HYV3MoEFused", False, "models/hunyuan_v3.py:88", "models/hunyuan_v3.py:626"),
    ModelClass(
        ("LongcatFlashForCausalLM",),
        "LongcatFlashMoE",
        False,
        "models/longcat_flash.py:239",
        "models/longcat_flash.py:1122",
    ),
    ModelClass(("Step3p5ForCausalLM",), "Step3p5MoEMLP", False, "models/step3p5.py:112", "models/step3p5.py:952"),
    ModelClass(
        ("MiniMaxM3SparseForCausalLM",),
        "MiniMaxM3MoE",
        True,
        "models/minimax_m3.py:523 (MiniMaxM3MoE.forward: is_megamoe -> forward_mega_moe)",
        "models/minimax_m3.py:2274",
        note="no fallback: forward_mega_moe raises when the mega weights were not built (minimax_m3.py:537-540), and "
        "MiniMaxM3SparseForCausalLM is not in MEGA_MOE_NO_FALLBACK_ARCHS, so no token cap is checked at start",
    ),
    ModelClass(
        ("KimiK3ForConditionalGeneration",),
        "KimiK3MoE",
        True,
        "models/kimi_k3.py:565 (KimiK3MoE: _use_mega_moe -> run_mega_routed_experts)",
        "models/kimi_k3.py:3876",
        note="every batch goes through the mega path (its non-mega fallback is a StandardDispatcher without a2a, "
        "kimi_k3.py:556-564); latent MoE with SiTU only",
    ),
    ModelClass(
        ("MiMoV2ForCausalLM", "MiMoV2FlashForCausalLM"),
        "MiMoV2MoE",
        False,
        "models/mimo_v2.py:412",
        "models/mimo_v2.py:1800",
    ),
    ModelClass(("LagunaForCausalLM",), "LagunaMoE", False, "models/laguna.py:132", "models/laguna.py:847"),
)

_FACTORY = "FusedMoEFactory with the default RoutedExperts"
_VNATIVE = "models/deepseek_v4/nvidia/model.py:227, 337-341 (use_native_mega_moe -> _init_mega_moe_experts)"

#: vLLM 0.33.0 (``vllm/``).
VLLM: tuple[ModelClass, ...] = (
    ModelClass(
        ("DeepseekV4ForCausalLM", "DeepseekV41ForCausalLM", "DeepseekV4ForConditionalGeneration"),
        "DeepseekV4MoE",
        True,
        _VNATIVE,
        "models/deepseek_v4/nvidia/model.py:424 (FusedMoEFactory, without a native mega --moe-backend)",
        rocm=True,
        oot=True,
        note="on ROCm the model passes its own routed_experts_cls (models/deepseek_v4/amd/model.py:749-772), "
        "which the plug-in does not replace",
    ),
    ModelClass(
        ("DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM", "KimiK25ForConditionalGeneration"),
        "DeepseekV2MoE",
        False,
        f"model_executor/models/deepseek_v2.py:374 ({_FACTORY})",
        "model_executor/models/registry.py:94 (DeepseekV3ForCausalLM); kimi_k25.py:376-380 (DeepseekV2 text model)",
        oot=True,
    ),
    ModelClass(
        ("DeepseekV32ForCausalLM", "GlmMoeDsaForCausalLM"),
        "DeepseekV2MoE",
        False,
        f"model_executor/models/deepseek_v2.py:374 ({_FACTORY})",
        "models/deepseek_v32/nvidia/model.py:98",
        oot=True,
    ),
    ModelClass(
        ("Glm5NextForCausalLM", "Glm5NextForConditionalGeneration"),
        "Glm5NextMoE",
        False,
        f"models/glm5next/common/model.py:299 ({_FACTORY})",
        "model_executor/models/registry.py:127",
        oot=True,
    ),
    ModelClass(
        ("Glm4MoeForCausalLM",),
        "Glm4MoE",
        False,
        f"model_executor/models/glm4_moe.py:183 ({_FACTORY})",
        "model_executor/models/registry.py:124",
        oot=True,
    ),
    ModelClass(
        ("Glm4MoeLiteForCausalLM",),
        "Glm4MoeLite",
        False,
        f"model_executor/models/glm4_moe.py:183 ({_FACTORY})",
        "model_executor/models/glm4_moe_lite.py:92",
        oot=True,
    ),
    ModelClass(
        ("Qwen2MoeForCausalLM",),
        "Qwen2MoeSparseMoeBlock",
        False,
        f"model_executor/models/qwen2_moe.py:170 ({_FACTORY})",
        "model_executor/models/registry.py:201",
        oot=True,
    ),
    ModelClass(
        ("Qwen3MoeForCausalLM", "Qwen3VLMoeForConditionalGeneration"),
        "Qwen3MoeSparseMoeBlock",
        False,
        f"model_executor/models/qwen3_moe.py:203 ({_FACTORY})",
        "model_executor/models/registry.py:203, 613",
        oot=True,
    ),
    ModelClass(
        ("Qwen3NextForCausalLM", "Qwen3_5MoeForCausalLM", "Qwen3_5MoeForConditionalGeneration"),
        "Qwen3NextSparseMoeBlock",
        False,
        f"model_executor/models/qwen3_next.py:223 ({_FACTORY})",
        "model_executor/models/qwen3_5.py:173",
        oot=True,
    ),
    ModelClass(
        ("MixtralForCausalLM",),
        "MixtralMoE",
        False,
        f"model_executor/models/mixtral.py:118 ({_FACTORY})",
        "model_executor/models/registry.py:181",
        oot=True,
    ),
    ModelClass(
        ("MiniMaxM2ForCausalLM",),
        "MiniMaxM2MoE",
        False,
        f"model_executor/models/minimax_m2.py:96 ({_FACTORY})",
        "model_executor/models/registry.py:168",
        oot=True,
    ),
    ModelClass(
        ("Step3TextForCausalLM",),
        "FusedMoEBlock",
        False,
        f"model_executor/models/step3_text.py:72 ({_FACTORY})",
        "model_executor/models/registry.py:209",
        oot=True,
    ),
    ModelClass(
        ("Ernie4_5_MoeForCausalLM",),
        "Ernie4_5_MoeMoE",
        False,
        f"model_executor/models/ernie45_moe.py:184 ({_FACTORY})",
        "model_executor/models/registry.py:103",
        oot=True,
    ),
    ModelClass(
        ("BailingMoeForCausalLM", "BailingMoeV2ForCausalLM"),
        "BailingMoE",
        False,
        f"model_executor/models/bailing_moe.py:296 ({_FACTORY})",
        "model_executor/models/registry.py:79-80",
        oot=True,
    ),
    ModelClass(
        ("Llama4ForCausalLM", "Llama4ForConditionalGeneration"),
        "Llama4MoE",
        False,
        f"model_executor/models/llama4.py:132 ({_FACTORY})",
        "model_executor/models/registry.py:156, 502",
        oot=True,
        blocker="apply_router_weight_on_input=True (the router weight scales the input, not the output)",
    ),
    ModelClass(
        ("Step3p5ForCausalLM",),
        "FusedMoEBlock",
        False,
        f"model_executor/models/step3p5.py:388 ({_FACTORY})",
        "model_executor/models/registry.py:210",
        oot=True,
        blocker="activation swiglustep on some layers (clamp after SiLU)",
    ),
    ModelClass(
        ("Gemma4ForCausalLM", "Gemma4ForConditionalGeneration"),
        "Gemma4 MoE layer",
        False,
        f"model_executor/models/gemma4.py:646 ({_FACTORY})",
        "model_executor/models/registry.py:117, 427",
        oot=True,
        blocker="activation gelu_tanh (no mega kernel computes it)",
    ),
    ModelClass(
        ("NemotronHForCausalLM", "NemotronHPuzzleForCausalLM"),
        "NemotronHMoE",
        False,
        f"model_executor/models/nemotron_h.py:229 ({_FACTORY})",
        "model_executor/models/registry.py:186-187",
        oot=True,
        blocker="non-gated relu2_no_mul experts (no mega kernel computes them)",
    ),
    ModelClass(
        ("MistralLarge3ForCausalLM",),
        "DeepseekV2MoE",
        False,
        f"model_executor/models/deepseek_v2.py:374 ({_FACTORY})",
        "model_executor/models/mistral_large_3.py:12 (MistralLarge3ForCausalLM(DeepseekV3ForCausalLM))",
        oot=True,
    ),
    ModelClass(
        ("InternS2PreviewForConditionalGeneration",),
        "Qwen3NextSparseMoeBlock",
        False,
        f"model_executor/models/qwen3_next.py:223 ({_FACTORY})",
        "model_executor/models/interns2_preview.py:32 (a Qwen3_5MoeForConditionalGeneration subclass)",
        oot=True,
    ),
    ModelClass(
        ("Qwen4ExpForCausalLM", "Qwen4ExpForConditionalGeneration"),
        "Qwen4ExpSparseMoeBlock",
        False,
        f"model_executor/models/qwen3_next.py:223 ({_FACTORY}, inherited)",
        "models/qwen4_exp/nvidia/model.py:171 (Qwen4ExpSparseMoeBlock(Qwen3NextSparseMoeBlock))",
        oot=True,
    ),
    ModelClass(
        ("HYV4ForCausalLM",),
        "HYV4MoEFused",
        False,
        f"models/hy_v4/nvidia/moe.py:152 ({_FACTORY})",
        "model_executor/models/registry.py:139",
        oot=True,
    ),
    ModelClass(
        ("HYV3ForCausalLM",),
        "HYV3MoEFused",
        False,
        f"model_executor/models/hy_v3.py:182 ({_FACTORY})",
        "model_executor/models/registry.py:138",
        oot=True,
    ),
    ModelClass(
        ("MiMoV2FlashForCausalLM", "MiMoV2ForCausalLM"),
        "MiMoV2MoE",
        False,
        f"model_executor/models/mimo_v2.py:173 ({_FACTORY})",
        "model_executor/models/registry.py:183",
        oot=True,
    ),
    ModelClass(
        ("MiniMaxM3SparseForCausalLM", "MiniMaxM3SparseForConditionalGeneration"),
        "MiniMaxM3MoE",
        False,
        f"models/minimax_m3/nvidia/model.py:251 ({_FACTORY}, activation swigluoai_uninterleave)",
        "model_executor/models/registry.py:169",
        oot=True,
    ),
    ModelClass(
        ("LagunaForCausalLM",),
        "LagunaMoE",
        False,
        f"model_executor/models/laguna.py:214 ({_FACTORY})",
        "model_executor/models/registry.py:154",
        oot=True,
    ),
    ModelClass(
        ("AriaForConditionalGeneration",),
        "AriaTextMoELayer",
        False,
        f"model_executor/models/aria.py:218 ({_FACTORY})",
        "model_executor/models/registry.py:355",
        oot=True,
    ),
    ModelClass(
        ("K2HorizonForCausalLM",),
        "K2HorizonSparseMoeBlock",
        False,
        f"model_executor/models/k2_horizon.py:520 ({_FACTORY})",
        "model_executor/models/registry.py:147",
        oot=True,
    ),
    ModelClass(
        ("MellumForCausalLM",),
        "TransformersRoutedExperts",
        False,
        "model_executor/models/transformers/moe.py:348 (routed_experts_cls=TransformersRoutedExperts, a subclass)",
        "model_executor/models/registry.py:759 (Transformers backend)",
        blocker="its own RoutedExperts subclass, which the plug-in's replacement by exact class name does not reach",
    ),
    ModelClass(
        ("GptOssForCausalLM",),
        "GptOssRoutedExperts",
        False,
        "model_executor/models/gpt_oss.py:402 (routed_experts_cls=GptOssRoutedExperts, a subclass)",
        "model_executor/models/registry.py:128",
        blocker="its own RoutedExperts subclass, which the plug-in's replacement by exact class name does not reach",
    ),
    ModelClass(
        ("DbrxForCausalLM",),
        "DbrxExperts",
        False,
        "model_executor/models/dbrx.py:175 (routed_experts_cls=DbrxExperts, a subclass)",
        "model_executor/models/registry.py:90",
        blocker="its own RoutedExperts subclass, which the plug-in's replacement by exact class name does not reach",
    ),
)

TABLES: dict[str, tuple[ModelClass, ...]] = {"sglang": SGLANG, "vllm": VLLM}

_NO_SGLANG_CLASS = "SGLang 0.5.23 has no model class for {arch} (no srt/models file lists it in EntryClass)"
_NO_VLLM_CLASS = "vLLM 0.33.0 has no model class for {arch} (model_executor/models/registry.py lists none)"


def _unjudged(engine: str, entry: str, block: str) -> str:
    return (
        f"{engine} has a model class for {{arch}} ({entry}; MoE block {block}), but moe-oracle has not judged that "
        "block yet, so no mega path is claimed"
    )


#: Architectures moe-oracle's model reader reads (``model/adapters/catalog.py``) that a table above does not list,
#: per engine, with what is known of them: the engine release has no model class for them, or it has one whose MoE
#: block is not judged yet. Neither claims a mega path; the decision gives this sentence as the reason
#: (``tests/model/test_family_facts.py`` keeps the reader, these tables and this list in agreement).
UNLISTED: dict[str, dict[str, str]] = {
    "sglang": {
        "AriaForConditionalGeneration": _NO_SGLANG_CLASS,
        "DeepseekV41ForCausalLM": _NO_SGLANG_CLASS,
        "Glm5NextForCausalLM": _NO_SGLANG_CLASS + " (it lists Glm5NextForConditionalGeneration)",
        "MiniMaxM3ForCausalLM": _NO_SGLANG_CLASS,
        "Qwen4ExpForCausalLM": _NO_SGLANG_CLASS + " (only the MTP draft Qwen4ExpForCausalLMMTP, qwen4_exp_mtp.py:231)",
        "Step3TextForCausalLM": _NO_SGLANG_CLASS + " (it serves Step-3 as Step3VLForConditionalGeneration)",
        "Gemma4ForCausalLM": _unjudged("SGLang 0.5.23", "models/gemma4_causal.py:1507", "Gemma4MoE, line 218"),
        "Gemma4ForConditionalGeneration": _unjudged(
            "SGLang 0.5.23", "models/gemma4_mm.py:1171", "Gemma4MoE, gemma4_causal.py:218"
        ),
        "K2HorizonForCausalLM": _unjudged("SGLang 0.5.23", "models/xllm.py:1868", "XllmSparseMoeBlock, line 901"),
        "NemotronHForCausalLM": _unjudged("SGLang 0.5.23", "models/nemotron_h.py:1361", "NemotronHMoE, line 239"),
        "NemotronHPuzzleForCausalLM": _unjudged("SGLang 0.5.23", "models/nemotron_h.py:1361", "NemotronHMoE, line 239"),
        "MiniMaxM3SparseForConditionalGeneration": _unjudged(
            "SGLang 0.5.23", "models/minimax_m3_vl.py:479", "MiniMaxM3Model's, models/minimax_m3.py"
        ),
    },
    "vllm": {
        "MiniMaxM3ForCausalLM": _NO_VLLM_CLASS,
        "KimiK3ForConditionalGeneration": _unjudged(
            "vLLM 0.33.0", "model_executor/models/registry.py:488", "the kimi_k3 model file's"
        ),
        "Step3VLForConditionalGeneration": _unjudged(
            "vLLM 0.33.0", "model_executor/models/registry.py:630", "Step3TextForCausalLM's, step3_text.py"
        ),
    },
}


def _not_listed(engine: str, architecture: str, title: str | None = None) -> str:
    """Why ``engine``'s table has no row for ``architecture``: the :data:`UNLISTED` sentence, else that the
    architecture is unknown to moe-oracle."""
    known = UNLISTED.get(engine, {}).get(architecture)
    if known is not None:
        return known.format(arch=architecture)
    return f"{architecture or 'this architecture'} is not in moe-oracle's table of {title or engine} model classes"


#: SGLang 0.5.23: the MoE blocks whose routed experts are built as ``FusedMoE``
#: (``layers/moe/fused_moe_triton/layer.py:308``), directly or through ``get_moe_impl_class``
#: (``layers/moe/ep_moe/layer.py:352-365``: ``FusedMoE`` unless an all-to-all backend such as DeepEP is
#: set), with the line that builds it: the class moe-oracle's SGLang plug-in replaces through SGLang's
#: ``HookRegistry`` (``engines/sglang/plugin.py``). ``GptOssSparseMoeBlock`` is left out: its experts
#: carry biases, which no fused kernel takes; so is ``MiniMaxM3MoE`` (``models/minimax_m3.py:422``): under
#: megamoe its forward needs SGLang's own mega weights (``minimax_m3.py:537-540``).
SGLANG_FUSED_MOE: dict[str, str] = {
    "DeepseekV2MoE": "models/deepseek_v2.py:753",
    "Glm4MoeSparseMoeBlock": "models/glm4_moe.py:436",
    "Glm4MoeLiteSparseMoeBlock": "models/glm4_moe_lite.py:209",
    "Qwen2MoeSparseMoeBlock": "models/qwen2_moe.py:318",
    "Qwen3MoeSparseMoeBlock": "models/qwen3_moe.py:265",
    "MixtralMoE": "models/mixtral.py:100",
    "Llama4MoE": "models/llama4.py:120",
    "MiniMaxM2MoE": "models/minimax_m2.py:536",
    "Ernie4Moe": "models/ernie4.py:104",
    "BailingMoESparseMoeBlock": "models/bailing_moe.py:312",
    "Step3p5MoEMLP": "models/step3p5.py:152",
    "LongcatFlashMoE": "models/longcat_flash.py:300",
    "HYV3MoEFused": "models/hunyuan_v3.py:145",
    "Step3TextMoEMLP": "models/step3_vl.py:139",
    "MiMoV2MoE": "models/mimo_v2.py:451",
    "LagunaMoE": "models/laguna.py:154",
}


def sglang_plugin_serves(architecture: str) -> bool:
    """Whether SGLang 0.5.23 builds ``architecture``'s routed experts as the ``FusedMoE`` the plug-in replaces."""
    row = model_class("sglang", architecture)
    return row is not None and row.block in SGLANG_FUSED_MOE and not row.blocker


def sglang_plugin_why_not(architecture: str) -> str:
    """Why the SGLang plug-in cannot serve ``architecture``'s MoE (empty when it can)."""
    row = model_class("sglang", architecture)
    if row is None:
        return _not_listed("sglang", architecture)
    if row.block not in SGLANG_FUSED_MOE:
        return f"{row.block} ({row.source}) does not build its experts as the FusedMoE the plug-in replaces"
    if row.blocker:
        return f"{row.block} is the FusedMoE the plug-in replaces, but {row.blocker}"
    return ""


def sglang_plugin_architectures() -> tuple[str, ...]:
    """Every architecture :func:`sglang_plugin_serves`."""
    return tuple(a for row in SGLANG if row.block in SGLANG_FUSED_MOE and not row.blocker for a in row.architectures)


def model_class(engine: str, architecture: str) -> ModelClass | None:
    """The row of ``engine``'s table (``sglang`` or ``vllm``) that lists ``architecture``, or None."""
    return next((row for row in TABLES.get(engine, ()) if architecture in row.architectures), None)


def calls_mega(engine: str, architecture: str, *, rocm: bool = False) -> bool:
    """Whether ``engine``'s MoE block for ``architecture`` calls its mega path (on ROCm: its AITER diversion)."""
    row = model_class(engine, architecture)
    return row is not None and row.mega and (row.rocm or not rocm)


def plugin_serves(architecture: str) -> bool:
    """Whether vLLM 0.33 builds ``architecture``'s MoE as the plain ``RoutedExperts`` the plug-in replaces and
    nothing in the block stops moe-oracle's runtime from serving it (NVIDIA; DeepSeek V4 on ROCm is not)."""
    row = model_class("vllm", architecture)
    return row is not None and row.oot and not row.blocker


def plugin_why_not(architecture: str) -> str:
    """Why the plug-in cannot serve ``architecture``'s MoE in vLLM 0.33 (empty when it can)."""
    row = model_class("vllm", architecture)
    if row is None:
        return _not_listed("vllm", architecture, "vLLM")
    if not row.oot:
        return f"{row.block}: {row.blocker} ({row.source})"
    if row.blocker:
        return f"{row.block} is the RoutedExperts the plug-in replaces, but {row.blocker} ({row.source})"
    return ""


def plugin_architectures() -> tuple[str, ...]:
    """Every architecture :func:`plugin_serves` (the plug-in's hook wraps these)."""
    return tuple(a for row in VLLM if row.oot and not row.blocker for a in row.architectures)


def why_no_mega(engine: str, architecture: str, *, rocm: bool = False) -> str:
    """One sentence: why ``engine``'s block for ``architecture`` does not take the mega path (empty when it does)."""
    if calls_mega(engine, architecture, rocm=rocm):
        return ""
    row = model_class(engine, architecture)
    if row is None:
        return _not_listed(engine, architecture)
    if row.mega and rocm:
        return f"{row.block} calls the mega path only on CUDA ({row.source}); on ROCm it has no AITER diversion"
    if engine == "sglang":
        return f"{row.block} ({row.source}) never calls layers/moe/mega_moe.py"
    return f"{row.block} ({row.source}) never builds the native mega experts"
