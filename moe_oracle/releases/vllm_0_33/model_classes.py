"""vLLM 0.33.0's model classes: which MoE block it builds per architecture, and what the plug-in can serve there.

Paths are under ``vllm/``: ``mega`` is whether the model file builds vLLM's native mega experts
(``NATIVE_MEGA_MOE_BACKENDS``); ``oot`` whether its MoE is the plain ``RoutedExperts`` built by
``FusedMoEFactory`` (the class moe-oracle's plug-in replaces by exact name, ``model_executor/custom_op.py:46-99``),
and ``blocker`` what the plug-in cannot serve there.

Architectures the table does not list are unknown to moe-oracle: the decision does not claim a mega path for
them. Sources: docs/families.md, §1.4, §2.2, each line re-read in the wheel
(``tests/engines/test_engine_vocabulary.py`` checks every cited line names the block).
"""

from __future__ import annotations

from moe_oracle.releases.types import ModelClass, ModelClassTable
from moe_oracle.releases.vllm_0_33.version import VERSION

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


#: The table as the gates ask it (``vllm``: the engine name its messages use).
#: vLLM 0.33.0 has no model class for these, or one whose MoE block moe-oracle has not judged yet
#: (``ModelClassTable.unlisted``).
_NO_CLASS = f"vLLM {VERSION} has no model class for {{arch}} (model_executor/models/registry.py lists none)"


def _unjudged(entry: str, block: str) -> str:
    return (
        f"vLLM {VERSION} has a model class for {{arch}} ({entry}; MoE block {block}), but moe-oracle has not "
        "judged that block yet, so no mega path is claimed"
    )


UNLISTED: dict[str, str] = {
    "MiniMaxM3ForCausalLM": _NO_CLASS,
    "KimiK3ForConditionalGeneration": _unjudged("model_executor/models/registry.py:488", "the kimi_k3 model file's"),
    "Step3VLForConditionalGeneration": _unjudged(
        "model_executor/models/registry.py:630", "Step3TextForCausalLM's, step3_text.py"
    ),
}


TABLE = ModelClassTable("vllm", VLLM, "never builds the native mega experts", UNLISTED)


def plugin_serves(architecture: str) -> bool:
    """Whether vLLM 0.33 builds ``architecture``'s MoE as the plain ``RoutedExperts`` the plug-in replaces and
    nothing in the block stops moe-oracle's runtime from serving it (NVIDIA; DeepSeek V4 on ROCm is not)."""
    row = TABLE.find(architecture)
    return row is not None and row.oot and not row.blocker


def plugin_why_not(architecture: str) -> str:
    """Why the plug-in cannot serve ``architecture``'s MoE in vLLM 0.33 (empty when it can)."""
    row = TABLE.find(architecture)
    if row is None:
        return TABLE.not_listed(architecture, "vLLM")
    if not row.oot:
        return f"{row.block}: {row.blocker} ({row.source})"
    if row.blocker:
        return f"{row.block} is the RoutedExperts the plug-in replaces, but {row.blocker} ({row.source})"
    return ""


def plugin_architectures() -> tuple[str, ...]:
    """Every architecture :func:`plugin_serves` (the plug-in's hook wraps these)."""
    return tuple(a for row in VLLM if row.oot and not row.blocker for a in row.architectures)
