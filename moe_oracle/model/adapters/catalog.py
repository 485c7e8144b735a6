"""Which adapter reads which config: by ``architectures[0]``, then by ``model_type``."""

from __future__ import annotations

from moe_oracle.model.adapters import deepseek_v3, deepseek_v4, deepseek_v41, glm4_moe, glm_moe_dsa
from moe_oracle.model.adapters._family_rules import FamilyRules
from moe_oracle.model.adapters.families import FAMILIES, REFUSED, Refusal

ARCHITECTURES: dict[str, FamilyRules] = {
    **dict.fromkeys(deepseek_v4.ARCHITECTURES, deepseek_v4.RULES),
    **dict.fromkeys(deepseek_v41.ARCHITECTURES, deepseek_v41.RULES),
    **dict.fromkeys(glm4_moe.ARCHITECTURES, glm4_moe.RULES),
    **dict.fromkeys(glm_moe_dsa.ARCHITECTURES, glm_moe_dsa.RULES),
    "DeepseekV3ForCausalLM": deepseek_v3.RULES,
    "DeepseekV32ForCausalLM": deepseek_v3.RULES,
    "DeepseekV2ForCausalLM": deepseek_v3.RULES_V2,
    **{arch: rules for rules, archs, _ in FAMILIES for arch in archs},
}

MODEL_TYPES: dict[str, FamilyRules] = {
    **dict.fromkeys(deepseek_v4.MODEL_TYPES, deepseek_v4.RULES),
    **dict.fromkeys(deepseek_v41.MODEL_TYPES, deepseek_v41.RULES),
    **dict.fromkeys(glm4_moe.MODEL_TYPES, glm4_moe.RULES),
    **dict.fromkeys(glm_moe_dsa.MODEL_TYPES, glm_moe_dsa.RULES),
    "deepseek_v3": deepseek_v3.RULES,
    "deepseek_v32": deepseek_v3.RULES,
    "kimi_k2": deepseek_v3.RULES,
    "deepseek_v2": deepseek_v3.RULES_V2,
    **{model_type: rules for rules, _, types in FAMILIES for model_type in types},
}


def supported_architectures() -> list[str]:
    return sorted(ARCHITECTURES)


def supported_model_types() -> list[str]:
    return sorted(MODEL_TYPES)


def find_rules(
    architecture: str | None,
    model_type: str | None,
    text_architecture: str | None = None,
    text_model_type: str | None = None,
) -> FamilyRules | None:
    """The adapter for a config, trying the outer then the ``text_config`` identity."""
    for table, key in (
        (ARCHITECTURES, architecture),
        (MODEL_TYPES, model_type),
        (ARCHITECTURES, text_architecture),
        (MODEL_TYPES, text_model_type),
    ):
        if key is not None and key in table:
            return table[key]
    return None


def identity_conflict(architecture: str | None, model_type: str | None) -> tuple[str, str] | None:
    """The two families a config names when its ``architectures[0]`` and its ``model_type`` are both known and
    belong to different families (the reader would silently follow the architecture); else ``None``."""
    by_arch = ARCHITECTURES.get(architecture) if architecture else None
    by_type = MODEL_TYPES.get(model_type) if model_type else None
    if by_arch is None or by_type is None or by_arch.family == by_type.family:
        return None
    return by_arch.family, by_type.family


def find_refusal(*identities: str | None) -> Refusal | None:
    """The named refusal of a family the reader does not describe (architecture or model_type match)."""
    for refusal in REFUSED:
        if any(key is not None and key in refusal.names for key in identities):
            return refusal
    return None
