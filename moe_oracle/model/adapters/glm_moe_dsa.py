"""GLM-5 / 5.1 / 5.2 (``GlmMoeDsaForCausalLM``, ``glm_moe_dsa``).

The model is DeepSeek-V3.2 (MLA + DSA indexer); vLLM runs its MoE as ``DeepseekV2MoE``, so
the DeepSeek-V2/V3 defaults apply (softmax when ``scoring_func`` is absent, the correction
bias only with ``topk_method: noaux_tc``, groups default 1 / 1, rsf 1.0). The releases state
sigmoid + noaux_tc, 1 / 1 groups, renormalise, rsf 2.5. MoE layers come from
``mlp_layer_types`` (5.2) or ``first_k_dense_replace`` + ``moe_layer_freq`` (3 dense + 75 MoE);
the MTP layer 78 has a router too. GLM-5-FP8 is FP8 128x128 blocks with float32 scales; the
NVIDIA NVFP4 exports are ModelOpt (``quant_method: modelopt`` and/or ``hf_quant_config.json``).
"""

from __future__ import annotations

from moe_oracle.model.adapters._family_rules import FamilyRules
from moe_oracle.model.types import Scoring

ARCHITECTURES = ("GlmMoeDsaForCausalLM",)
MODEL_TYPES = ("glm_moe_dsa",)

RULES = FamilyRules(
    family="glm_moe_dsa",
    architecture="GlmMoeDsaForCausalLM",
    naming="hf",
    default_scoring=Scoring.SOFTMAX,
    bias="noaux_tc",
    default_renormalize=True,
)
