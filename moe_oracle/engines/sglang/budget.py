"""SGLang 0.5.23's per-rank MoE token budget: what each rank's prefill chunk is, and what SGLang checks.

``--chunked-prefill-size`` is the chunk of the whole attention-DP group: with attention DP on,
``arg_groups/parallel_hook.py:331`` divides it by ``--attn-dp-size`` once, which is each rank's real
prefill chunk. The megamoe start-up check (``arg_groups/mega_moe_hook.py:161-258``
``validate_mega_moe_token_budget``) reads the already divided value and divides it by
``attn_dp_size`` again (line 213), so it enforces a smaller bound than the rank really sees; it runs
only for the architectures of ``MEGA_MOE_NO_FALLBACK_ARCHS`` and NVFP4 expert checkpoints
(lines 52-75) and not on ROCm (line 165). At run time ``layers/moe/mega_moe.py:172-193``
``should_use_mega_moe`` compares the largest per-rank token count of a step with the cap: above it
the step runs SGLang's fused MoE instead (where the model has one), so the cap moe-oracle sets
covers each rank's real chunk.
"""

from __future__ import annotations

from moe_oracle.fit.derived import Derived, align
from moe_oracle.releases import sglang as release

CAP_ENV = "SGLANG_OPT_DEEPGEMM_MEGA_MOE_NUM_MAX_TOKENS_PER_RANK"

#: ``arg_groups/mega_moe_hook.py:52-64``: MoE blocks with no fused-MoE fallback under megamoe.
NO_FALLBACK_ARCHS = frozenset(
    {
        "DeepseekV4ForCausalLM",
        "InternS2PreviewForConditionalGeneration",
        "MellumForCausalLM",
        "Qwen2MoeForCausalLM",
        "Qwen3MoeForCausalLM",
        "Qwen3NextForCausalLM",
        "Qwen3VLMoeForConditionalGeneration",
        "Qwen3_5MoeForCausalLM",
        "Qwen3_5MoeForConditionalGeneration",
    }
)


def needs_token_budget(architecture: str, nvfp4_experts: bool) -> bool:
    """``mega_moe_needs_token_budget`` (``mega_moe_hook.py:67-75``): no fallback, so SGLang checks at start."""
    return architecture in NO_FALLBACK_ARCHS or nvfp4_experts


def prefill_tokens_per_rank(chunked_prefill_size: int, attn_dp_size: int) -> int:
    """Each rank's prefill chunk after ``parallel_hook.py:331``."""
    return chunked_prefill_size // attn_dp_size if attn_dp_size > 1 else chunked_prefill_size


def startup_check_tokens(chunked_prefill_size: int, tp_size: int, attn_dp_size: int) -> int:
    """``required_per_rank`` of ``validate_mega_moe_token_budget`` (``mega_moe_hook.py:199-239``), for the CLI chunk."""
    if attn_dp_size > 1:
        local = prefill_tokens_per_rank(chunked_prefill_size, attn_dp_size) // attn_dp_size
        return align(local, max(tp_size // attn_dp_size, 1))
    return align(chunked_prefill_size, max(tp_size, 1))


def derive_prefill_tokens(*, chunked_prefill_size: int, attn_dp_size: int) -> Derived:
    per_rank = prefill_tokens_per_rank(chunked_prefill_size, attn_dp_size)
    part = (
        f"chunked_prefill_size // attn_dp_size = {chunked_prefill_size} // {attn_dp_size} = {per_rank}"
        if attn_dp_size > 1
        else f"chunked_prefill_size = {per_rank} (no attention DP: every rank runs the whole chunk)"
    )
    return Derived(
        key="sglang_prefill_tokens_per_rank",
        label="SGLang prefill tokens per rank (one chunk)",
        value=per_rank,
        unit="tokens",
        formula=part,
        inputs={"chunked_prefill_size": chunked_prefill_size, "attn_dp_size": attn_dp_size},
        source=f"{release.SOURCE}/srt/arg_groups/parallel_hook.py#L326-L336 (_handle_data_parallelism divides "
        "chunked_prefill_size by attn_dp_size)",
    )


def derive_sglang_token_cap(
    *,
    chunked_prefill_size: int,
    tp_size: int,
    attn_dp_size: int,
    alignment: int,
    build: str,
    architecture: str,
    nvfp4_experts: bool,
) -> Derived:
    """``SGLANG_OPT_DEEPGEMM_MEGA_MOE_NUM_MAX_TOKENS_PER_RANK``: each rank's real chunk, rounded up to the
    library build's token alignment (the buffer has those rows anyway)."""
    per_rank = prefill_tokens_per_rank(chunked_prefill_size, attn_dp_size)
    token_alignment = max(tp_size // attn_dp_size, 1) if attn_dp_size > 1 else max(tp_size, 1)
    required = align(per_rank, token_alignment)
    value = align(required, alignment)
    checked = startup_check_tokens(chunked_prefill_size, tp_size, attn_dp_size)
    if needs_token_budget(architecture, nvfp4_experts):
        check = (
            f"SGLang's start-up check (mega_moe_hook.py:199-257) enforces >= {checked} for this chunk: it divides "
            f"the per-rank chunk by attn_dp_size again; a step above the cap fails at run time, since "
            f"{architecture if not nvfp4_experts else 'NVFP4 experts'} has no fused-MoE fallback"
        )
    else:
        check = (
            f"SGLang does not check the cap at start for {architecture} (not in MEGA_MOE_NO_FALLBACK_ARCHS, "
            "mega_moe_hook.py:52-75); a step above the cap silently runs SGLang's fused MoE instead "
            "(mega_moe.py:172-193)"
        )
    return Derived(
        key="sglang_mega_moe_num_max_tokens_per_rank",
        label="SGLang MegaMoE per-rank token cap",
        value=value,
        unit="tokens",
        formula=(
            f"ceil_align(per-rank chunk {per_rank}, token_alignment={token_alignment}) = {required}, rounded up to "
            f"{build}'s token alignment {alignment} -> {value}"
        ),
        inputs={
            "chunked_prefill_size": chunked_prefill_size,
            "tp_size": tp_size,
            "attn_dp_size": attn_dp_size,
            "per-rank prefill chunk": per_rank,
            "SGLang start-up check (required_per_rank)": checked,
        },
        source=f"{release.SOURCE}/srt/layers/moe/mega_moe.py#L172-L193 should_use_mega_moe (max tokens per rank <= "
        f"cap, else fused MoE); {release.SOURCE}/srt/arg_groups/mega_moe_hook.py#L161-L258 "
        "validate_mega_moe_token_budget; " + check,
        env=CAP_ENV,
    )
