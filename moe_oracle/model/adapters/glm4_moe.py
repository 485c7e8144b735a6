"""GLM-4.5 / 4.6 / 4.7 (``Glm4MoeForCausalLM``, ``glm4_moe``) and GLM-4.7-Flash (``glm4_moe_lite``).

The configs carry no ``scoring_func`` / ``topk_method``: the implementation always scores with
a sigmoid and always has the correction bias (vLLM ``glm4_moe.py``), so the config is not
consulted for either. Grouping comes from ``n_group`` / ``topk_group`` (1 / 1 on every
release), ``norm_topk_prob`` renormalises, ``routed_scaling_factor`` is 2.5 (Air 1.0,
4.7-Flash 1.8). A dense prefix of ``first_k_dense_replace`` layers (3; Air 1), one MTP layer
after the last decoder layer, plain SiLU SwiGLU without a clamp.
"""

from __future__ import annotations

from moe_oracle.model.adapters._family_rules import FamilyRules
from moe_oracle.model.types import Scoring

ARCHITECTURES = ("Glm4MoeForCausalLM", "Glm4MoeLiteForCausalLM")
MODEL_TYPES = ("glm4_moe", "glm4_moe_lite")

RULES = FamilyRules(
    family="glm4_moe",
    architecture="Glm4MoeForCausalLM",
    naming="hf",
    default_scoring=Scoring.SIGMOID,
    forced_scoring=Scoring.SIGMOID,
    bias="always",
    default_renormalize=True,
)
