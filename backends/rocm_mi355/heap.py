"""AITER MegaMoEV2 token capacity and the MoRI symmetric heap a launch plan prints.

``max_tok_per_rank`` is ``next_power_of_2(max_num_batched_tokens)`` (vLLM 0.33
``models/deepseek_v4/amd/mega_moe.py``; aiter ``mega_moe_v2.py`` rejects other values for
a8w4). The MoRI symmetric heap is not computable from public sizing code for the aiter
build vLLM 0.33 pins, so it is *estimated* from the one published measurement (InferenceX
DSv4 MI355X EP8 script: 7.73 GiB of MegaMoE symmetric buffers at 16384 batched tokens,
x1.25 headroom), scaled linearly in the terms that size the dominant dispatch pool
(EP ranks x tokens per rank x top-k x hidden), and never below vLLM's own 8 GiB default.
Declared as the AITER variants' ``sizing``; the core reaches it only through that declaration.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

from moe_oracle.fit.derived import Derived, GiB, Shape, ceil_div
from moe_oracle.spec.units import format_size, next_power_of_two, parse_size

#: InferenceX dsv4_agentic_mi355x_dep8_megamoe_gluon_eplb.sh
#: (https://github.com/SemiAnalysisAI/InferenceX/blob/main/benchmarks/single_node/agentic/dsv4_agentic_mi355x_dep8_megamoe_gluon_eplb.sh
#: ): measured MegaMoE
#: symmetric buffers at 16384 batched tokens on 8 x MI355X (EP8), and the headroom it applies.
HEAP_REFERENCE_BYTES = Fraction(773, 100) * GiB
HEAP_REFERENCE = {"ep": 8, "max_tok_per_rank": 16384, "topk": 6, "hidden": 4096}
HEAP_HEADROOM = Fraction(5, 4)
#: vLLM 0.33 sets MORI_SHMEM_HEAP_SIZE to 8G for MegaMoEV2 ("needs > 4 GB; MoRI default is 2 GB").
HEAP_FLOOR_BYTES = 8 * GiB
#: aiter FIXED_SLOT_MAX_MTPR (https://github.com/ROCm/aiter): vLLM builds an extra small-capacity runtime below it.
FIXED_SLOT_MAX_MTPR = 255
FIXED_SLOT_MAX_EXPERTS_PER_RANK = 64


def derive_aiter_mtpr(tokens_per_rank: int, tokens_origin: str, *, engine: str) -> Derived:
    mtpr = next_power_of_two(tokens_per_rank)
    env = "SGLANG_AMD_FLYDSL_MEGA_MOE_MTPR" if engine == "sglang" else None
    where = (
        "sglang 0.5.23 srt/layers/moe/mega_moe_flydsl.py:53-59 _mtpr (must be a power of two)"
        if engine == "sglang"
        else "vllm 0.33.0 models/deepseek_v4/amd/mega_moe.py: max_num_tokens = next_power_of_2(max_num_batched_tokens)"
    )
    return Derived(
        key="aiter_max_tok_per_rank",
        label="AITER MegaMoEV2 max_tok_per_rank (power of two)",
        value=mtpr,
        unit="tokens",
        formula=f"next_power_of_2({tokens_per_rank}) = {mtpr}",
        inputs={"tokens_per_rank": f"{tokens_per_rank} ({tokens_origin})"},
        source=where + "; aiter mega_moe_v2.py: a8w4 needs a power-of-two max_tok_per_rank",
        env=env,
    )


def aiter_capacities(mtpr: int, experts_per_rank: int, *, engine: str) -> list[int]:
    """Runtime capacities vLLM 0.33 builds (a fixed-slot one below FIXED_SLOT_MAX_MTPR, then mtpr)."""
    caps = [mtpr]
    small = next_power_of_two(FIXED_SLOT_MAX_MTPR + 1) // 2  # prev_power_of_2(255) = 128
    if engine == "vllm" and small < mtpr and experts_per_rank <= FIXED_SLOT_MAX_EXPERTS_PER_RANK:
        caps.insert(0, small)
    return caps


def derive_mori_heap(*, runtimes: list[tuple[Shape, list[int]]], ep: int) -> Derived:
    """``MORI_SHMEM_HEAP_SIZE`` for every MegaMoEV2 runtime of a process (one per shape and capacity).

    The InferenceX measurement scaled to each runtime, summed, x1.25, rounded up to whole GiB,
    and at least vLLM's 8 GiB default.
    """
    ref = HEAP_REFERENCE
    ref_product = ref["ep"] * ref["max_tok_per_rank"] * ref["topk"] * ref["hidden"]
    need = Fraction(0)
    parts = []
    for shape, capacities in runtimes:
        for c in capacities:
            need += HEAP_REFERENCE_BYTES * Fraction(ep * c * shape.topk * shape.hidden, ref_product)
            parts.append(f"{ep}*{c}*{shape.topk}*{shape.hidden}")
    with_headroom = need * HEAP_HEADROOM
    gib = ceil_div(with_headroom.numerator, with_headroom.denominator * GiB)
    value = max(gib * GiB, HEAP_FLOOR_BYTES)
    formula = (
        "max(8 GiB, ceil_GiB(1.25 * 7.73 GiB * sum over runtimes(ep*max_tok_per_rank*topk*H) / (8*16384*6*4096))) = "
        f"max(8 GiB, ceil_GiB(1.25 * 7.73 GiB * ({' + '.join(parts)}) / {ref_product})) "
        f"= max(8 GiB, ceil_GiB({float(with_headroom) / GiB:.2f} GiB)) = {value // GiB}G"
    )
    return Derived(
        key="mori_shmem_heap_bytes",
        label="MoRI symmetric heap (MORI_SHMEM_HEAP_SIZE)",
        value=value,
        unit="bytes",
        formula=formula,
        inputs={
            "ep": ep,
            "runtimes (shape: max_tok_per_rank capacities)": "; ".join(f"{s.label()}: {caps}" for s, caps in runtimes),
            "reference": "7.73 GiB at EP8, 16384 tokens/rank (InferenceX DSv4 MI355X dep8 megamoe script)",
            "headroom": "x1.25 (as the InferenceX script)",
            "floor": "8 GiB (vLLM 0.33 all2all.py default for MegaMoEV2)",
        },
        source="https://github.com/SemiAnalysisAI/InferenceX/blob/main/benchmarks/single_node/agentic/dsv4_agentic_mi355x_dep8_megamoe_gluon_eplb.sh"
        "; https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/distributed/device_communicators/all2all.py; "
        "https://github.com/ROCm/mori (MORI_SHMEM_HEAP_SIZE must be set before shmem init; the heap does not grow)",
        assumption=(
            "estimate, not a port: aiter's heap sizing for the build vLLM 0.33 pins is not public in a stable form; "
            "the measurement is scaled linearly in the dispatch-pool terms (ep x tokens x top-k x hidden) and the "
            "reference is taken as the smaller DSv4 shape (H=4096), so larger shapes never get less than measured"
        ),
        env="MORI_SHMEM_HEAP_SIZE",
    )


def choose_mori_heap(computed: int, user_value: str | None) -> tuple[str, str | None]:
    """The ``MORI_SHMEM_HEAP_SIZE`` a plan emits, and a note when it keeps the user's value.

    The user's value wins when it is readable and covers the computed size; otherwise the
    computed size (rounded up to whole units) is emitted.
    """
    user_bytes = parse_size(user_value) if user_value else None
    if user_value and user_bytes is not None and user_bytes >= computed:
        return (
            user_value,
            f"MORI_SHMEM_HEAP_SIZE={user_value} from your environment is kept (computed: {format_size(computed)}).",
        )
    return format_size(computed), None


#: The formulas the plans look up by name (``VariantSpec.sizing`` of every AITER variant).
SIZING: dict[str, Callable[..., Any]] = {
    "derive_aiter_mtpr": derive_aiter_mtpr,
    "aiter_capacities": aiter_capacities,
    "derive_mori_heap": derive_mori_heap,
    "choose_mori_heap": choose_mori_heap,
}
