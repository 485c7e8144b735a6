"""DeepSeek V4.1 Flash (``DeepseekV41ForCausalLM``, ``model_type: deepseek_v41``).

The language model's keys sit under ``text_config`` (``model_type: deepseek_v41_text``) and
are read from there first; ``expert_dtype`` moved inside ``quantization_config``. Routing and
activation are DeepSeek V4's (sqrtsoftplus + noaux_tc bias, renormalised, rsf 1.5,
``swiglu_limit`` 10) but there are **no hash layers** (vLLM forces ``num_hash_layers=0``).
Dense linears and the shared expert use FP8 **32x32** blocks with ue8m0 scales; routed experts
are MXFP4. The DSpark draft layers after the 40 decoder layers carry their own expert count and
top-k (``dspark_n_routed_experts`` 128, ``dspark_num_experts_per_tok`` 3); their number is
``len(dspark_target_layer_ids)``.
"""

from __future__ import annotations

from moe_oracle.model.adapters._family_rules import FamilyRules
from moe_oracle.model.types import Scoring

ARCHITECTURES = ("DeepseekV41ForCausalLM",)
MODEL_TYPES = ("deepseek_v41", "deepseek_v41_text")

RULES = FamilyRules(
    family="deepseek_v41",
    architecture="DeepseekV41ForCausalLM",
    naming="deepseek_v4",
    default_scoring=Scoring.SQRTSOFTPLUS,
    bias="noaux_tc",
    default_topk_method="noaux_tc",
    default_renormalize=True,
    clamp=True,
    hash_layers=False,
    forbid_hash_layers=True,
    expert_dtype_required=True,
    dspark=True,
)
