"""Rule table of the MoE families beyond DeepSeek / GLM: key spellings plus what each family implies.

One :class:`FamilyRules` per family, keyed by architecture and ``model_type`` in :mod:`.catalog`.
Facts: docs/families.md (§2 per-family semantics in vLLM 0.33, §5 the table,
§6 the key spellings). Adding a family is an entry here, its keys in :mod:`._keys` when new, a fixture
and a test. What a config does not say but the implementation does is stated in ``implied`` with its
source; ``moe-oracle model`` prints it as the description's assumptions.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from moe_oracle.model.adapters import _keys as k
from moe_oracle.model.adapters import deepseek_v3, glm_moe_dsa
from moe_oracle.model.adapters._family_rules import FamilyRules, SharedRule
from moe_oracle.model.types import Scoring

_NO_SHARED = SharedRule(count_keys=())
_QWEN_GATED = SharedRule(count_keys=(), total_width_keys=k.SHARED_TOTAL_QWEN, gate=True)

QWEN3_MOE = FamilyRules(
    family="qwen3_moe",
    architecture="Qwen3MoeForCausalLM",
    naming="hf",
    default_scoring=Scoring.SOFTMAX,
    forced_scoring=Scoring.SOFTMAX,
    bias="never",
    default_renormalize=True,
    experts_keys=k.EXPERTS_QWEN,
    shared=_NO_SHARED,
    schedule="qwen",
    implied=("softmax top-k router, no correction bias (vLLM/SGLang qwen3_moe.py: TopK(renormalize=norm_topk_prob))",),
)

#: Qwen2-MoE, Qwen3-Next, Qwen3.5-MoE: Qwen2MoeSparseMoeBlock, one shared expert scaled per token by
#: sigmoid(shared_expert_gate(x)) (SGLang qwen2_moe.py:634-685; families §6 "shared experts").
QWEN2_MOE = replace(
    QWEN3_MOE,
    family="qwen2_moe",
    architecture="Qwen2MoeForCausalLM",
    shared=_QWEN_GATED,
    shared_module="shared_expert",
    implied=(
        *QWEN3_MOE.implied,
        "the shared expert's output is scaled per token by sigmoid(shared_expert_gate(x)) "
        "(Qwen2MoeSparseMoeBlock; the gate weight is not in config.json)",
    ),
)
QWEN3_NEXT = replace(QWEN2_MOE, family="qwen3_next", architecture="Qwen3NextForCausalLM")
#: Qwen3.5 configs omit norm_topk_prob; the engines default it to True (families §5 table).
QWEN3_5_MOE = replace(
    QWEN2_MOE,
    family="qwen3_5_moe",
    architecture="Qwen3_5MoeForConditionalGeneration",
    implied=(*QWEN2_MOE.implied, "norm_topk_prob absent -> renormalize (engines' default for Qwen3.5)"),
)
QWEN3_VL_MOE = replace(QWEN3_MOE, family="qwen3_vl_moe", architecture="Qwen3VLMoeForConditionalGeneration")

MIXTRAL = FamilyRules(
    family="mixtral",
    architecture="MixtralForCausalLM",
    naming="hf",
    default_scoring=Scoring.SOFTMAX,
    forced_scoring=Scoring.SOFTMAX,
    bias="never",
    forced_renormalize=True,
    experts_keys=k.EXPERTS_LOCAL,
    width_keys=k.WIDTH_DENSE_KEY,
    shared=_NO_SHARED,
    schedule="all",
    moe_module="block_sparse_moe",
    implied=("softmax top-k, renormalized, no bias (vLLM mixtral.py: FusedMoE(renormalize=True))",),
)

#: gpt-oss: softmax over the top-k router logits (= renormalized), swigluoai (alpha 1.702, beta 1, limit 7)
#: on interleaved gate/up rows, biases on both expert projections; the config says only hidden_act=silu
#: and swiglu_limit (families §0, §5; vLLM gpt_oss.py).
GPT_OSS = replace(
    MIXTRAL,
    family="gpt_oss",
    architecture="GptOssForCausalLM",
    topk_keys=k.TOPK_GPT_OSS,
    moe_module="mlp",
    swigluoai=True,
    expert_bias=True,
    implied=(
        "softmax top-k, renormalized (vLLM gpt_oss.py)",
        "swigluoai activation: alpha 1.702, beta 1, clamp swiglu_limit, gate/up interleaved "
        "(vLLM gpt_oss.py; config says hidden_act=silu)",
        "expert projections carry biases (gate_up_proj_bias, down_proj_bias; not in config.json)",
    ),
)

#: Llama-4: sigmoid top-1 score multiplies the expert's input; one ungated shared expert as wide as a routed
#: expert; MoE every interleave_moe_layer_step-th layer (families §5 note *, §6).
LLAMA4 = FamilyRules(
    family="llama4",
    architecture="Llama4ForConditionalGeneration",
    naming="hf",
    default_scoring=Scoring.SIGMOID,
    forced_scoring=Scoring.SIGMOID,
    bias="never",
    forced_renormalize=False,
    experts_keys=k.EXPERTS_LOCAL,
    width_keys=k.WIDTH_DENSE_KEY,
    shared=SharedRule(count_keys=(), implicit=1),
    schedule="llama4",
    weight_on_input=True,
    moe_module="feed_forward",
    shared_module="shared_expert",
    implied=(
        "sigmoid top-1 routing whose weight multiplies the expert input (vLLM llama4.py: "
        "apply_router_weight_on_input=True)",
        "one ungated shared expert of intermediate_size (vLLM llama4.py Llama4MoE.shared_expert)",
    ),
)

#: MiniMax-M2 / M2.5 / M2.7: sigmoid scores + correction bias (use_routing_bias), renormalized, no groups.
MINIMAX_M2 = FamilyRules(
    family="minimax_m2",
    architecture="MiniMaxM2ForCausalLM",
    naming="hf",
    default_scoring=Scoring.SOFTMAX,
    bias="key",
    bias_keys=k.BIAS_MINIMAX,
    forced_renormalize=True,
    experts_keys=k.EXPERTS_LOCAL,
    width_keys=k.WIDTH_DENSE_KEY,
    shared=SharedRule(count_keys=(), total_width_keys=k.SHARED_TOTAL_MINIMAX),
    schedule="all",
    moe_module="block_sparse_moe",
    implied=("top-k weights renormalized (vLLM minimax_m2.py: renormalize=True)",),
)

#: ERNIE-4.5: softmax scores with an always-present correction bias, renormalized (families §5, §6).
ERNIE4_5_MOE = FamilyRules(
    family="ernie4_5_moe",
    architecture="Ernie4_5_MoeForCausalLM",
    naming="hf",
    default_scoring=Scoring.SOFTMAX,
    forced_scoring=Scoring.SOFTMAX,
    bias="always",
    forced_renormalize=True,
    experts_keys=k.EXPERTS_MOE,
    topk_keys=k.TOPK_ERNIE,
    shared=SharedRule(count_keys=k.SHARED_COUNT_ERNIE),
    schedule="ernie",
    implied=("softmax scores plus the e_score_correction_bias, renormalized (vLLM ernie45_moe.py)",),
)

#: Step3: softmax, renormalized only with norm_expert_weight (default False), one shared expert of share_expert_dim.
STEP3 = FamilyRules(
    family="step3",
    architecture="Step3VLForConditionalGeneration",
    naming="hf",
    default_scoring=Scoring.SOFTMAX,
    forced_scoring=Scoring.SOFTMAX,
    bias="never",
    default_renormalize=False,
    renorm_keys=k.RENORM_STEP,
    experts_keys=k.EXPERTS_MOE,
    topk_keys=k.TOPK_STEP,
    shared=SharedRule(count_keys=(), total_width_keys=k.SHARED_TOTAL_STEP),
    schedule="step",
    shared_module="share_expert",
    implied=("softmax top-k; renormalized only when norm_expert_weight is true (vLLM step3_text.py)",),
)

#: Bailing-MoE (Ling): score_function, moe_router_enable_expert_bias, DeepSeek-style dense prefix and groups.
BAILING_MOE = FamilyRules(
    family="bailing_moe",
    architecture="BailingMoeV2ForCausalLM",
    naming="hf",
    default_scoring=Scoring.SOFTMAX,
    scoring_keys=k.SCORING_BAILING,
    bias="key",
    bias_keys=k.BIAS_BAILING,
    default_renormalize=True,
    experts_keys=k.EXPERTS_QWEN,
    shared=SharedRule(count_keys=k.SHARED_COUNT_BAILING, width_keys=k.SHARED_WIDTH_BAILING),
)

#: Gemma-4 MoE: gated GELU (tanh) experts, which no mega-MoE kernel implements (families §0).
GEMMA4 = FamilyRules(
    family="gemma4",
    architecture="Gemma4ForConditionalGeneration",
    naming="hf",
    default_scoring=Scoring.SOFTMAX,
    forced_scoring=Scoring.SOFTMAX,
    bias="never",
    forced_renormalize=True,
    experts_keys=k.EXPERTS_QWEN,
    topk_keys=k.TOPK_GEMMA,
    shared=_NO_SHARED,
    schedule="all",
    activations=("gelu", "gelu_pytorch_tanh", "gelu_new"),
    act_keys=k.ACT_GEMMA,
    implied=(
        "softmax top-k, renormalized (unverified: the activation alone decides the kernels' verdict)",
        "gated GELU experts (hidden_activation)",
    ),
)

#: Kimi-K3: latent MoE (the experts see routed_expert_hidden_size, not hidden_size), SiTU experts, sigmoid scores
#: with the noaux_tc bias, MXFP4 experts
#: (https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/model_executor/layers/fused_moe/deep_gemm_mega_moe.py,
#: https://github.com/vllm-project/vllm/tree/v0.33.0/vllm/model_executor/models: vLLM's own fp8_fp4 mega path, situ).
KIMI_K3 = FamilyRules(
    family="kimi_k3",
    architecture="KimiK3ForConditionalGeneration",
    naming="hf",
    default_scoring=Scoring.SIGMOID,
    scoring_keys=k.SCORING_KIMI_K3,
    bias="noaux_tc",
    default_renormalize=True,
    renorm_keys=k.RENORM_KIMI_K3,
    group_keys=k.GROUPS_KIMI_K3,
    hidden_keys=k.HIDDEN_LATENT,
    experts_keys=k.EXPERTS_KIMI_K3,
    topk_keys=k.TOPK_KIMI_K3,
    shared=SharedRule(count_keys=k.SHARED_COUNT_BAILING),
    activations=("silu", "situ"),
    implied=(
        "latent MoE: the routed experts run at routed_expert_hidden_size (projected from hidden_size around them)",
        "SiTU parameters activation_situ_beta / activation_situ_linear_beta read as alpha / beta of vLLM's "
        "MegaMoEActivation('situ') (mapping read from "
        "https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/model_executor/layers/fused_moe/deep_gemm_mega_moe.py"
        ", not executed)",
    ),
)

#: Nemotron-H MoE (Nemotron-3 Nano/Super/Ultra): squared-ReLU experts, not gated, which no mega-MoE kernel
#: implements (families §0); MoE layers are the E's of hybrid_override_pattern.
NEMOTRON_H = FamilyRules(
    family="nemotron_h",
    architecture="NemotronHForCausalLM",
    naming="hf",
    default_scoring=Scoring.SIGMOID,
    forced_scoring=Scoring.SIGMOID,
    bias="always",
    default_renormalize=True,
    shared=SharedRule(count_keys=k.SHARED_COUNT_DEEPSEEK, width_keys=k.SHARED_WIDTH_NEMOTRON),
    schedule="pattern",
    activations=("relu2",),
    act_keys=k.ACT_NEMOTRON,
    moe_module="mixer",
    implied=(
        "sigmoid scores with a correction bias, DeepSeek-V3 style (unverified: the squared-ReLU activation alone "
        "decides the kernels' verdict)",
        "squared-ReLU experts are not gated: one up projection of width I, no gate half",
    ),
)

#: Mellum: SGLang runs it through Qwen3MoeSparseMoeBlock (families §1.2, sglang models/mellum.py); Qwen3-MoE keys.
MELLUM = replace(QWEN3_MOE, family="mellum", architecture="MellumForCausalLM")
#: InternS2-Preview subclasses Qwen3.5-MoE (vLLM interns2_preview.py: Qwen3_5MoeForConditionalGeneration).
INTERNS2_PREVIEW = replace(
    QWEN3_5_MOE, family="interns2_preview", architecture="InternS2PreviewForConditionalGeneration"
)
#: Qwen3.8-Flash-Next (qwen4_exp): decoder layers subclass Qwen3.5's (families §1.2, sglang models/qwen4_exp.py).
QWEN4_EXP = replace(QWEN3_5_MOE, family="qwen4_exp", architecture="Qwen4ExpForConditionalGeneration")

#: Mistral-Large-3: vLLM mistral_large_3.py MistralLarge3ForCausalLM(DeepseekV3ForCausalLM), DeepseekV2MoE.
MISTRAL_LARGE_3 = replace(deepseek_v3.RULES, family="mistral_large_3", architecture="MistralLarge3ForCausalLM")
#: GLM-5-Next and Hunyuan v4 run as DeepseekV2MoE (families §1.2), whose SwiGLU takes the config's swiglu_limit
#: as a clamp (families §1.2 table; transformers Glm5NextTextConfig / HYV4Config default it to 10.0).
GLM5_NEXT = replace(
    glm_moe_dsa.RULES,
    family="glm5_next",
    architecture="Glm5NextForConditionalGeneration",
    optional_clamp=True,
    implied=("swiglu_limit, when present, clamps the SwiGLU as in DeepSeek V4 (DeepseekV2MoE swiglu_limit)",),
)
#: Hunyuan v4: vLLM's HYV4MoEFused forces sigmoid scores with the expert_bias correction and one group
#: (models/hy_v4/nvidia/moe.py:152-170); SGLang runs it as DeepseekV2MoE over the same DeepSeek keys.
HY_V4 = replace(
    deepseek_v3.RULES,
    family="hy_v4",
    architecture="HYV4ForCausalLM",
    forced_scoring=Scoring.SIGMOID,
    bias="always",
    optional_clamp=True,
    implied=(
        "sigmoid scores with the expert_bias correction whatever scoring_func / topk_method say (vLLM hy_v4 "
        "HYV4MoEFused)",
        *GLM5_NEXT.implied,
    ),
)

#: MiMo-V2-Flash: DeepSeek keys, sigmoid scores and a correction bias always (vLLM mimo_v2.py MiMoV2MoE: scoring_func
#: "sigmoid", e_score_correction_bias created unconditionally, no routed_scaling_factor, no shared experts), MoE
#: layers flagged one per layer by the moe_layer_freq list.
MIMO_V2 = replace(
    deepseek_v3.RULES,
    family="mimo_v2",
    architecture="MiMoV2FlashForCausalLM",
    forced_scoring=Scoring.SIGMOID,
    bias="always",
    scaling_keys=(),
    shared=_NO_SHARED,
    implied=(
        "sigmoid scores with a correction bias whatever scoring_func / topk_method say; routed_scaling_factor "
        "ignored (vLLM mimo_v2.py MiMoV2MoE)",
    ),
)

#: MiniMax-M3: sigmoid + use_routing_bias, renormalized, rsf, n_shared_experts x intermediate_size, MoE layers by the
#: moe_layer_freq list; experts are swigluoai with the config's alpha / beta / limit on stacked gate/up rows
#: (vLLM models/minimax_m3/nvidia/model.py MiniMaxM3MoE: activation "swigluoai_uninterleave").
MINIMAX_M3 = FamilyRules(
    family="minimax_m3",
    architecture="MiniMaxM3SparseForCausalLM",
    naming="hf",
    default_scoring=Scoring.SIGMOID,
    bias="key",
    bias_keys=k.BIAS_MINIMAX,
    forced_renormalize=True,
    experts_keys=k.EXPERTS_LOCAL,
    width_keys=k.WIDTH_DENSE_KEY,
    shared=SharedRule(count_keys=k.SHARED_COUNT_DEEPSEEK),
    activations=("swigluoai",),
    swigluoai_keys=True,
    moe_module="block_sparse_moe",
    implied=(
        "top-k weights renormalized (vLLM minimax_m3 MiniMaxM3MoE: renormalize=True)",
        "swigluoai on stacked gate/up rows; swiglu_beta absent -> 1.0 (vLLM MiniMaxM3Config default)",
    ),
)

#: Hunyuan v3: sigmoid + expert_bias always, groups 1/1, renormalize = route_norm, router_scaling_factor,
#: num_shared_experts x expert width, first_k_dense_replace dense layers (vLLM hy_v3.py HYV3MoEFused).
HY_V3 = FamilyRules(
    family="hy_v3",
    architecture="HYV3ForCausalLM",
    naming="hf",
    default_scoring=Scoring.SIGMOID,
    forced_scoring=Scoring.SIGMOID,
    bias="always",
    renorm_keys=k.RENORM_HY_V3,
    scaling_keys=k.SCALING_HY_V3,
    experts_keys=k.EXPERTS_QWEN,
    width_keys=k.WIDTH_HY_V3,
    shared=SharedRule(count_keys=k.SHARED_COUNT_BAILING),
    implied=(
        "sigmoid scores with the expert_bias correction, one group (vLLM hy_v3.py HYV3MoEFused)",
        "route_norm absent -> renormalize (vLLM reads config.route_norm)",
    ),
)

#: Aria: softmax top-k renormalized (FusedMoEFactory defaults), every layer MoE, moe_num_shared_experts ungated
#: shared experts of intermediate_size (vLLM aria.py AriaTextMoELayer; transformers AriaTextConfig defaults 2).
ARIA = FamilyRules(
    family="aria",
    architecture="AriaForConditionalGeneration",
    naming="hf",
    default_scoring=Scoring.SOFTMAX,
    forced_scoring=Scoring.SOFTMAX,
    bias="never",
    forced_renormalize=True,
    experts_keys=k.EXPERTS_MOE,
    topk_keys=k.TOPK_ARIA,
    width_keys=k.WIDTH_DENSE_KEY,
    shared=SharedRule(count_keys=k.SHARED_COUNT_ERNIE, implicit=2),
    schedule="all",
    implied=("softmax top-k, renormalized (vLLM aria.py: FusedMoEFactory defaults)",),
)

#: Laguna: sigmoid + correction bias always, renormalized, moe_routed_scaling_factor, one ungated shared expert of
#: shared_expert_intermediate_size, mlp_layer_types, router weight on the input when
#: moe_apply_router_weight_on_input (vLLM laguna.py LagunaMoE).
LAGUNA = FamilyRules(
    family="laguna",
    architecture="LagunaForCausalLM",
    naming="hf",
    default_scoring=Scoring.SIGMOID,
    forced_scoring=Scoring.SIGMOID,
    bias="always",
    forced_renormalize=True,
    scaling_keys=k.SCALING_LAGUNA,
    weight_on_input_keys=k.WEIGHT_ON_INPUT_LAGUNA,
    experts_keys=k.EXPERTS_QWEN,
    shared=SharedRule(count_keys=(), total_width_keys=k.SHARED_TOTAL_QWEN),
    shared_module="shared_expert",
    implied=(
        "sigmoid scores with the e_score_correction_bias, renormalized (vLLM laguna.py LagunaMoE)",
        "moe_router_logit_softcapping, if set, caps the router logits before top-k (routing, outside the kernel)",
    ),
)

#: K2-Horizon: Qwen-style schedule (decoder_sparse_step, mlp_only_layers), router_score_func, the gate's linear bias
#: as correction bias when moe_gate_bias, renormalize = norm_topk_prob, router_scaling_factor, num_shared_experts
#: ungated shared experts of moe_intermediate_size (vLLM k2_horizon.py K2HorizonSparseMoeBlock, :451-535, :997-1001).
K2_HORIZON = FamilyRules(
    family="k2_horizon",
    architecture="K2HorizonForCausalLM",
    naming="hf",
    default_scoring=Scoring.SOFTMAX,
    scoring_keys=k.SCORING_K2_HORIZON,
    bias="key",
    bias_keys=k.BIAS_K2_HORIZON,
    scaling_keys=k.SCALING_HY_V3,
    experts_keys=k.EXPERTS_QWEN,
    shared=SharedRule(count_keys=k.SHARED_COUNT_BAILING),
    schedule="qwen",
    implied=("the router's linear bias (moe_gate_bias) is the score-correction bias (vLLM k2_horizon.py)",),
)

#: (rules, architectures, model types) of every family above.
FAMILIES: tuple[tuple[FamilyRules, tuple[str, ...], tuple[str, ...]], ...] = (
    (QWEN3_MOE, ("Qwen3MoeForCausalLM",), ("qwen3_moe",)),
    (QWEN2_MOE, ("Qwen2MoeForCausalLM",), ("qwen2_moe",)),
    (QWEN3_NEXT, ("Qwen3NextForCausalLM",), ("qwen3_next",)),
    (
        QWEN3_5_MOE,
        ("Qwen3_5MoeForConditionalGeneration", "Qwen3_5MoeForCausalLM"),
        ("qwen3_5_moe", "qwen3_5_moe_text"),
    ),
    (QWEN3_VL_MOE, ("Qwen3VLMoeForConditionalGeneration",), ("qwen3_vl_moe", "qwen3_vl_moe_text")),
    (MIXTRAL, ("MixtralForCausalLM",), ("mixtral",)),
    (GPT_OSS, ("GptOssForCausalLM",), ("gpt_oss",)),
    (LLAMA4, ("Llama4ForConditionalGeneration", "Llama4ForCausalLM"), ("llama4", "llama4_text")),
    (MINIMAX_M2, ("MiniMaxM2ForCausalLM",), ("minimax_m2",)),
    (ERNIE4_5_MOE, ("Ernie4_5_MoeForCausalLM",), ("ernie4_5_moe",)),
    (STEP3, ("Step3VLForConditionalGeneration", "Step3TextForCausalLM"), ("step3_vl", "step3_text")),
    (BAILING_MOE, ("BailingMoeV2ForCausalLM", "BailingMoeForCausalLM"), ("bailing_moe", "bailing_moe_v2")),
    (GEMMA4, ("Gemma4ForConditionalGeneration", "Gemma4ForCausalLM"), ("gemma4", "gemma4_text")),
    (KIMI_K3, ("KimiK3ForConditionalGeneration",), ("kimi_k3",)),
    (NEMOTRON_H, ("NemotronHForCausalLM", "NemotronHPuzzleForCausalLM"), ("nemotron_h",)),
    (MELLUM, ("MellumForCausalLM",), ("mellum",)),
    (INTERNS2_PREVIEW, ("InternS2PreviewForConditionalGeneration",), ()),
    (QWEN4_EXP, ("Qwen4ExpForConditionalGeneration", "Qwen4ExpForCausalLM"), ("qwen4_exp", "qwen4_exp_text")),
    (MISTRAL_LARGE_3, ("MistralLarge3ForCausalLM",), ()),
    (GLM5_NEXT, ("Glm5NextForConditionalGeneration", "Glm5NextForCausalLM"), ("glm5_next", "glm5_next_text")),
    (HY_V4, ("HYV4ForCausalLM",), ("hy_v4",)),
    (MIMO_V2, ("MiMoV2FlashForCausalLM", "MiMoV2ForCausalLM"), ("mimo_v2_flash",)),
    (
        MINIMAX_M3,
        ("MiniMaxM3SparseForCausalLM", "MiniMaxM3SparseForConditionalGeneration", "MiniMaxM3ForCausalLM"),
        ("minimax_m3", "minimax_m3_text", "minimax_m3_vl"),
    ),
    (HY_V3, ("HYV3ForCausalLM",), ("hy_v3",)),
    (ARIA, ("AriaForConditionalGeneration",), ("aria", "aria_text")),
    (LAGUNA, ("LagunaForCausalLM",), ("laguna",)),
    (K2_HORIZON, ("K2HorizonForCausalLM",), ()),
)


#: Multimodal wrappers SGLang 0.5.23 runs over DeepseekV2MoE (families §1.2; Kimi-K2.5: kimi_k25.py:693): no rule of
#: their own; the reader follows the wrapped language model (``text_config`` / ``language_config``), as the engines
#: do.
WRAPPED_LANGUAGE_MODELS = (
    "KimiK25ForConditionalGeneration",
    "KimiVLForConditionalGeneration",
    "DeepseekVLV2ForCausalLM",
    "DotsVLMForCausalLM",
    "DeepseekOCRForCausalLM",
)


@dataclass(frozen=True)
class Refusal:
    """A family refused by name: what blocks it, and the fix that exists."""

    family: str
    names: tuple[str, ...]
    message: str
    fix: str


_MANUAL = (
    "describe the model manually (moe-oracle model --hidden-size ... --moe-intermediate-size ... --num-experts ... "
    "--top-k ... --weight-format ...) to judge it"
)

_OWN_MOE = "no mega-MoE kernel serves it in an engine; the engine's own MoE runs it"

#: Families the reader does not describe, each with its blocker (families §1.2, §1.4, §2.1, §2.2, §5, §6).
REFUSED: tuple[Refusal, ...] = (
    Refusal(
        family="longcat_flash",
        names=("LongcatFlashForCausalLM", "LongcatFlashNgramForCausalLM", "longcat_flash"),
        message=(
            "LongCat-Flash (LongcatFlashForCausalLM) routes among n_routed_experts real experts plus zero_expert_num "
            "zero-computation experts (zero_expert_type): a token's top-k may pick an expert that does no GEMM, "
            "which no mega-MoE kernel implements (each runs every selected id as a SwiGLU expert); vLLM 0.33 runs "
            "it through FusedMoE(zero_expert_type=...) and SGLang 0.5.23 has no mega forward for it"
        ),
        fix=_OWN_MOE + "; " + _MANUAL + " (the real experts only)",
    ),
    Refusal(
        family="ernie4_5_vl_moe",
        names=("Ernie4_5_VLMoeForConditionalGeneration", "ernie4_5_vl_moe", "ernie4_5_vl_moe_text"),
        message=(
            "ERNIE-4.5-VL MoE (Ernie4_5_VLMoeForConditionalGeneration) has two expert sets per MoE layer, text and "
            "vision experts (moe_num_experts, moe_intermediate_size and moe_layer_* are two-element lists), each "
            "token routed within its modality's set (vLLM ernie45_vl_moe.py text_experts / vision_experts); the "
            "oracle describes one expert set per layer group, and no engine wires a mega-MoE path for it"
        ),
        fix=_OWN_MOE + "; " + _MANUAL + " (once per expert set)",
    ),
    Refusal(
        family="step3p5",
        names=(
            "Step3p5ForCausalLM",
            "Step3p7ForConditionalGeneration",
            "Step3p7FlashForCausalLM",
            "step3p5",
            "step3p7",
        ),
        message=(
            "Step-3.5 / Step-3.7 (Step3p5ForCausalLM, Step3p7ForConditionalGeneration) run swiglustep experts "
            "(SiLU output clamped at swiglu_limit 7) on the layers swiglu_limits marks and plain SwiGLU on the "
            "others (vLLM step3p5.py FusedMoEBlock), so the activation is a per-layer list the reader does not "
            "describe; no SM90 or AITER mega-MoE kernel implements swiglustep (vLLM's DeepGEMM SM100 build does), "
            "and no engine wires a mega-MoE path for Step-3.5 (docs/families.md)"
        ),
        fix=_OWN_MOE + "; " + _MANUAL + " (the plain-SwiGLU layers)",
    ),
    Refusal(
        family="exaone_moe",
        names=("ExaoneMoeForCausalLM", "ExaoneMoEForCausalLM", "exaone_moe"),
        message=(
            "Exaone-MoE (ExaoneMoeForCausalLM) clamps its SwiGLU per layer (swiglu_limits, one value per layer, "
            "0 = no clamp; vLLM exaone_moe.py), a per-layer activation the reader does not describe; no engine "
            "wires a mega-MoE path for it"
        ),
        fix=_OWN_MOE + "; " + _MANUAL + " with --activation swiglu-clamp:L per layer group",
    ),
    Refusal(
        family="step5",
        names=("Step5ForCausalLM", "step5"),
        message=(
            "Step5 (Step5ForCausalLM) runs in vLLM 0.33 through its own native mega-MoE experts (Step5MegaMoEExperts, "
            "models/step5/nvidia/mega_moe.py: FP8 128x128 blocks requantized to 1x32 UE8M0, NVFP4, BF16; SiLU or "
            "swiglustep per layer), which moe-oracle's RoutedExperts layer does not reach and whose per-layer "
            "activation the reader does not describe"
        ),
        fix="serve it with vLLM's own path: --moe-backend deep_gemm_mega_moe --enable-expert-parallel (SM100)",
    ),
    Refusal(
        family="muse_spark",
        names=("MuseSparkForConditionalGeneration", "muse_spark", "muse_spark_text"),
        message=(
            "MuseSpark (MuseSparkForConditionalGeneration) normalizes each expert's output inside the MoE "
            "(fp4_fp4_mega_moe post_expert_norm_gamma; vLLM 0.33 models/muse_spark/nvidia/mega_moe.py), an "
            "operation no moe-oracle variant or reference models; vLLM builds MuseSpark's experts with its own "
            "MuseSparkMegaMoEExperts, which moe-oracle's RoutedExperts layer does not reach"
        ),
        fix="serve it with vLLM's own path: --moe-backend deep_gemm_mega_moe --enable-expert-parallel (SM100)",
    ),
    Refusal(
        family="dbrx",
        names=("DbrxForCausalLM", "dbrx"),
        message=(
            "DBRX (DbrxForCausalLM) keeps its MoE shape in ffn_config (16 experts, top-4, expert width "
            "ffn_hidden_size 10752 on DBRX-132B), which the reader does not parse; vLLM builds DBRX's experts with "
            "its own RoutedExperts subclass, which moe-oracle's vLLM layer does not reach, and the 10752 width "
            "exceeds the SM90 mega-MoE cap of 4096"
        ),
        fix="no mega-MoE kernel serves DBRX in an engine; the engine's own MoE runs it; " + _MANUAL,
    ),
    Refusal(
        family="hunyuan_v1_moe",
        names=("HunYuanMoEV1ForCausalLM", "hunyuan_v1_moe"),
        message=(
            "Hunyuan v1 MoE (HunYuanMoEV1ForCausalLM) states top-k and shared experts per layer (moe_topk and "
            "num_shared_expert lists), which the reader does not describe; no engine wires a mega-MoE path for it "
            "(SGLang 0.5.23 runs its fused MoE)"
        ),
        fix="the engine's own MoE runs it; " + _MANUAL,
    ),
)
