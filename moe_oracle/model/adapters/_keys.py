"""The key spellings of every MoE family's ``config.json``: one table, read by the family rules.

Source: docs/families.md (HF config keys a general MoE reader needs).
Each tuple is searched in order, inside the language-model wrapper first (``text_config``,
``llm_config``, ``language_config``), and ``null`` counts as absent. Which spelling a family uses
is part of its rule (:mod:`.families`): ``intermediate_size`` is the expert width in Mixtral,
gpt-oss, Llama-4 and MiniMax-M2 but the *dense* MLP width everywhere else, so no spelling is
guessed across families.
"""

from __future__ import annotations

#: Routed experts per MoE layer.
EXPERTS_DEEPSEEK = ("n_routed_experts",)  # DeepSeek, Kimi-K2, GLM, MiMo-V2
EXPERTS_QWEN = ("num_experts",)  # Qwen2/3-MoE, Qwen3-Next/3.5, Bailing, Gemma-4
EXPERTS_LOCAL = ("num_local_experts",)  # Mixtral, gpt-oss, Llama-4, MiniMax-M2
EXPERTS_MOE = ("moe_num_experts",)  # ERNIE-4.5, Step3, Aria

EXPERTS_KIMI_K3 = ("num_experts",)

#: Experts chosen per token.
TOPK_DEEPSEEK = ("num_experts_per_tok", "n_activated_experts")  # most families; DSv4.1 reference
TOPK_GPT_OSS = ("num_experts_per_tok", "experts_per_token")
TOPK_ERNIE = ("moe_k",)
TOPK_STEP = ("moe_top_k",)
TOPK_GEMMA = ("top_k_experts",)
TOPK_KIMI_K3 = ("num_experts_per_token",)
TOPK_ARIA = ("moe_topk",)

#: Width I of one routed expert.
WIDTH_MOE = ("moe_intermediate_size",)  # Qwen*, DeepSeek/GLM/Kimi, ERNIE, Step, Bailing, Gemma-4
WIDTH_DENSE_KEY = ("intermediate_size",)  # Mixtral, gpt-oss, Llama-4, MiniMax-M2/M3, Aria
WIDTH_HY_V3 = ("expert_hidden_dim", "moe_intermediate_size")  # vLLM hy_v3.py reads expert_hidden_dim

#: Shared experts.
SHARED_COUNT_DEEPSEEK = ("n_shared_experts",)
SHARED_COUNT_ERNIE = ("moe_num_shared_experts",)
SHARED_COUNT_BAILING = ("num_shared_experts",)
SHARED_WIDTH_BAILING = ("moe_shared_expert_intermediate_size",)  # width of one, x count
SHARED_TOTAL_QWEN = ("shared_expert_intermediate_size",)  # 0 or absent: none
SHARED_TOTAL_STEP = ("share_expert_dim",)
SHARED_TOTAL_MINIMAX = ("shared_intermediate_size",)  # 0 on M2 / M2.5

#: Router scoring function, correction bias, renormalisation, scaling.
SCORING = ("scoring_func",)
SCORING_BAILING = ("score_function",)
BIAS_MINIMAX = ("use_routing_bias",)
BIAS_BAILING = ("moe_router_enable_expert_bias",)
RENORM = ("norm_topk_prob",)
RENORM_STEP = ("norm_expert_weight",)
SCALING = ("routed_scaling_factor",)
SCALING_HY_V3 = ("router_scaling_factor",)
SCALING_LAGUNA = ("moe_routed_scaling_factor",)
SCORING_K2_HORIZON = ("router_score_func",)
BIAS_K2_HORIZON = ("moe_gate_bias",)  # the router's linear bias is the correction bias (vLLM k2_horizon.py)
WEIGHT_ON_INPUT_LAGUNA = ("moe_apply_router_weight_on_input",)
RENORM_HY_V3 = ("route_norm",)
SCORING_KIMI_K3 = ("moe_router_activation_func",)
RENORM_KIMI_K3 = ("moe_renormalize",)
GROUPS_KIMI_K3 = ("num_expert_group", "n_group")
HIDDEN_LATENT = ("routed_expert_hidden_size", "hidden_size")  # Kimi-K3 latent MoE

#: Activation keys and the activation kind each ``hidden_act`` value names.
ACT = ("hidden_act",)
ACT_GEMMA = ("hidden_activation", "hidden_act")
ACT_NEMOTRON = ("mlp_hidden_act",)  # Nemotron-H: hidden_act is absent, mamba_hidden_act is the SSM's
SHARED_WIDTH_NEMOTRON = ("moe_shared_expert_intermediate_size",)  # width of one shared expert
ACTIVATIONS: dict[str, str] = {
    "silu": "swiglu",
    "swish": "swiglu",
    "gelu": "gelu",
    "gelu_pytorch_tanh": "gelu",
    "gelu_new": "gelu",
    "relu2": "relu2",
    "situ": "situ",
    "swigluoai": "swiglu",  # MiniMax-M3: alpha / beta / limit from swiglu_alpha / swiglu_beta / swiglu_limit
}
#: Kimi-K3 SiTU parameters, as vLLM's MegaMoEActivation('situ', alpha, beta) takes them (https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/model_executor/layers/fused_moe/deep_gemm_mega_moe.py).
SITU_ALPHA = ("activation_situ_beta",)
SITU_BETA = ("activation_situ_linear_beta",)

#: gpt-oss's swigluoai gate sharpness (vLLM ``swigluoai_and_mul``: alpha 1.702, beta 1, limit 7).
SWIGLUOAI_ALPHA = 1.702
