"""DeepSeek V4 Flash / Pro (``DeepseekV4ForCausalLM``, ``model_type: deepseek_v4``).

Every decoder layer is MoE; the first ``num_hash_layers`` (or the ``hash_moe`` entries of
``mlp_layer_types``) are hash-routed (static token-id table, no correction bias); the others
score with sqrt(softplus(logit)) plus the noaux_tc correction bias, renormalise and scale by
``routed_scaling_factor`` (Flash 1.5, Pro 2.5). MTP layers follow the last decoder layer; the
-0731 revision's ``dspark_*`` keys describe draft layers instead. Experts use SwiGLU with the
``swiglu_limit`` pre-activation clamp. Routed experts are MXFP4 when ``expert_dtype: "fp4"``
(the outer ``quant_method: fp8`` covers attention and the shared expert only); a config
without ``expert_dtype`` must say the expert format some other way.
"""

from __future__ import annotations

from moe_oracle.model.adapters._family_rules import FamilyRules
from moe_oracle.model.types import Scoring

ARCHITECTURES = ("DeepseekV4ForCausalLM",)
MODEL_TYPES = ("deepseek_v4",)

RULES = FamilyRules(
    family="deepseek_v4",
    architecture="DeepseekV4ForCausalLM",
    naming="deepseek_v4",
    default_scoring=Scoring.SQRTSOFTPLUS,
    bias="noaux_tc",
    default_topk_method="noaux_tc",
    default_renormalize=True,
    clamp=True,
    hash_layers=True,
    expert_dtype_required=True,
    dspark=True,
)
