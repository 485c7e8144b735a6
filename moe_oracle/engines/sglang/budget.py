"""SGLang 0.5.23's MegaMoE token budget: the per-rank cap its start-up check wants."""

from __future__ import annotations

from moe_oracle.plan.derived import Derived, align


def derive_sglang_token_cap(
    *, chunked_prefill_size: int, tp_size: int, attn_dp_size: int, alignment: int | None
) -> Derived:
    """``SGLANG_OPT_DEEPGEMM_MEGA_MOE_NUM_MAX_TOKENS_PER_RANK`` covering the chunked-prefill budget."""
    if attn_dp_size > 1:
        token_alignment = max(tp_size // attn_dp_size, 1)
        local = chunked_prefill_size // attn_dp_size
        part = f"chunked_prefill_size // attn_dp_size = {chunked_prefill_size} // {attn_dp_size} = {local}"
    else:
        token_alignment = max(tp_size, 1)
        local = chunked_prefill_size
        part = f"chunked_prefill_size = {local}"
    required = align(local, token_alignment)
    value = align(required, alignment) if alignment else required
    extra = f", rounded up to DeepGEMM's token alignment {alignment}" if alignment else ""
    return Derived(
        key="sglang_mega_moe_num_max_tokens_per_rank",
        label="SGLang MegaMoE per-rank token cap",
        value=value,
        unit="tokens",
        formula=(f"ceil_align({part}, token_alignment={token_alignment}) = {required}{extra} -> {value}"),
        inputs={
            "chunked_prefill_size": chunked_prefill_size,
            "tp_size": tp_size,
            "attn_dp_size": attn_dp_size,
        },
        source="sglang 0.5.23 arg_groups/mega_moe_hook.py validate_mega_moe_token_budget (required_per_rank); "
        "above the cap layers/moe/mega_moe.py falls back to fused MoE where the model has one (DeepSeek V4 and "
        "NVFP4 experts have none, so SGLang checks the cap at start)",
        env="SGLANG_OPT_DEEPGEMM_MEGA_MOE_NUM_MAX_TOKENS_PER_RANK",
    )
