"""SGLang 0.5.23's model classes: the MoE block it builds per architecture, and whether that block calls its mega path.

SGLang 0.5.23 accepts ``--moe-a2a-backend megamoe`` for every model (no architecture allow-list,
``arg_groups/mega_moe_hook.py:27-48``), but only some model files' MoE blocks call the fused kernel; the others
run SGLang's regular MoE with the flag's side effects (EP forced to span TP, SM90 expert weights re-laid-out in
place). Paths are under ``sglang/srt/``: ``mega`` is whether the block calls ``layers/moe/mega_moe.py``
(``forward_mega_moe`` / ``run_mega_routed_experts``); ``rocm`` whether that call also diverts to AITER MegaMoEV2
(only ``DeepseekV2MoE``'s does, ``mega_moe.py:172-178``).

Architectures the table does not list are unknown to moe-oracle: the decision does not claim a mega path for
them. Sources: docs/families.md, §1.4, §2.2, each line re-read in the wheel
(``tests/engines/test_engine_vocabulary.py`` checks every cited line names the block).
"""

from __future__ import annotations

from moe_oracle.releases.sglang_0_5_23.version import VERSION
from moe_oracle.releases.types import ModelClass, ModelClassTable

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


#: The table as the gates ask it (``sglang``: the engine name its messages use).
#: SGLang 0.5.23 has no model class for these, or one whose MoE block moe-oracle has not judged yet
#: (``ModelClassTable.unlisted``).
_NO_CLASS = f"SGLang {VERSION} has no model class for {{arch}} (no srt/models file lists it in EntryClass)"


def _unjudged(entry: str, block: str) -> str:
    return (
        f"SGLang {VERSION} has a model class for {{arch}} ({entry}; MoE block {block}), but moe-oracle has not "
        "judged that block yet, so no mega path is claimed"
    )


UNLISTED: dict[str, str] = {
    "AriaForConditionalGeneration": _NO_CLASS,
    "DeepseekV41ForCausalLM": _NO_CLASS,
    "Glm5NextForCausalLM": _NO_CLASS + " (it lists Glm5NextForConditionalGeneration)",
    "MiniMaxM3ForCausalLM": _NO_CLASS,
    "Qwen4ExpForCausalLM": _NO_CLASS + " (only the MTP draft Qwen4ExpForCausalLMMTP, qwen4_exp_mtp.py:231)",
    "Step3TextForCausalLM": _NO_CLASS + " (it serves Step-3 as Step3VLForConditionalGeneration)",
    "Gemma4ForCausalLM": _unjudged("models/gemma4_causal.py:1507", "Gemma4MoE, line 218"),
    "Gemma4ForConditionalGeneration": _unjudged("models/gemma4_mm.py:1171", "Gemma4MoE, gemma4_causal.py:218"),
    "K2HorizonForCausalLM": _unjudged("models/xllm.py:1868", "XllmSparseMoeBlock, line 901"),
    "NemotronHForCausalLM": _unjudged("models/nemotron_h.py:1361", "NemotronHMoE, line 239"),
    "NemotronHPuzzleForCausalLM": _unjudged("models/nemotron_h.py:1361", "NemotronHMoE, line 239"),
    "MiniMaxM3SparseForConditionalGeneration": _unjudged(
        "models/minimax_m3_vl.py:479", "MiniMaxM3Model's, models/minimax_m3.py"
    ),
}


TABLE = ModelClassTable("sglang", SGLANG, "never calls layers/moe/mega_moe.py", UNLISTED)


def sglang_plugin_serves(architecture: str) -> bool:
    """Whether SGLang 0.5.23 builds ``architecture``'s routed experts as the ``FusedMoE`` the plug-in replaces."""
    row = TABLE.find(architecture)
    return row is not None and row.block in SGLANG_FUSED_MOE and not row.blocker


def sglang_plugin_why_not(architecture: str) -> str:
    """Why the SGLang plug-in cannot serve ``architecture``'s MoE (empty when it can)."""
    row = TABLE.find(architecture)
    if row is None:
        return TABLE.not_listed(architecture)
    if row.block not in SGLANG_FUSED_MOE:
        return f"{row.block} ({row.source}) does not build its experts as the FusedMoE the plug-in replaces"
    if row.blocker:
        return f"{row.block} is the FusedMoE the plug-in replaces, but {row.blocker}"
    return ""


def sglang_plugin_architectures() -> tuple[str, ...]:
    """Every architecture :func:`sglang_plugin_serves`."""
    return tuple(a for row in SGLANG if row.block in SGLANG_FUSED_MOE and not row.blocker for a in row.architectures)
