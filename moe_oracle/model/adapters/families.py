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
from moe_oracle.model.adapters._engine import FamilyRules, SharedRule
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
    (NEMOTRON_H, ("NemotronHForCausalLM",), ("nemotron_h",)),
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

#: Families the reader does not describe, each with its blocker (families §1.4, §2.1, §5).
REFUSED: tuple[Refusal, ...] = (
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
