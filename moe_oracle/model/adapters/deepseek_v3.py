"""Generic DeepSeek-V2/V3-style MoE (``DeepseekV3ForCausalLM``, ``DeepseekV32ForCausalLM``,
``DeepseekV2ForCausalLM``; ``model_type`` ``deepseek_v3``, ``deepseek_v32``, ``deepseek_v2``,
``kimi_k2``).

These run as vLLM ``DeepseekV2MoE``: ``scoring_func`` defaults to softmax, the correction bias
exists only with ``topk_method: noaux_tc``, ``n_group`` / ``topk_group`` default to 1,
``routed_scaling_factor`` to 1.0. ``norm_topk_prob`` defaults to true (the transformers
``DeepseekV3Config`` default) except for ``deepseek_v2``, whose config class defaults it to
false. Layer schedule from ``first_k_dense_replace`` + ``moe_layer_freq``; MTP layers after the
last decoder layer; FP8 block checkpoints via ``quant_method: fp8`` + ``weight_block_size``.
"""

from __future__ import annotations

from dataclasses import replace

from moe_oracle.model.adapters._family_rules import FamilyRules
from moe_oracle.model.types import Scoring

ARCHITECTURES = ("DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM", "DeepseekV2ForCausalLM")
MODEL_TYPES = ("deepseek_v3", "deepseek_v32", "kimi_k2", "deepseek_v2")

RULES = FamilyRules(
    family="deepseek_v3",
    architecture="DeepseekV3ForCausalLM",
    naming="hf",
    default_scoring=Scoring.SOFTMAX,
    bias="noaux_tc",
    default_renormalize=True,
)

#: ``deepseek_v2`` (``DeepseekV2ForCausalLM``): ``norm_topk_prob`` defaults to false.
RULES_V2 = replace(RULES, family="deepseek_v2", architecture="DeepseekV2ForCausalLM", default_renormalize=False)
