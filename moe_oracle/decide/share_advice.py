"""When SGLang's own ``--mem-fraction-static`` formula leaves a tiny share, say so and propose a setting.

SGLang 0.5.23 reserves ``1.5 MiB x --chunked-prefill-size`` plus ``tp-size / 8 GiB`` plus its CUDA-graph term
outside the share (:func:`moe_oracle.decide.memory_share.sglang_reserved_mb`): at large chunks or large TP that
reserve takes most of the GPU (0.368 of a GB200 at a 65,536-token chunk), and the KV cache gets what little is
left. The proposal sizes the reserve by moe-oracle's own estimate of the activations and CUDA graphs at the
per-rank budget (:func:`moe_oracle.decide.memory_share.runtime_reserve_bytes`, the one the vLLM fit uses) and
caps the share at :data:`MAX_PROPOSED_SHARE`; it is an estimate, stated as one, and never adopted silently.
"""

from __future__ import annotations

from moe_oracle.decide.fit import GIB, Fit
from moe_oracle.decide.memory_share import runtime_reserve_bytes
from moe_oracle.rules import Engine
from moe_oracle.spec.deployment import Deployment

#: A share below this is called tiny (the GPU mostly held back from weights and KV cache).
TINY_SHARE = 0.6
#: The largest share the proposal names (SGLang's own formula tops out near 0.9 on large GPUs).
MAX_PROPOSED_SHARE = 0.88


def share_advice(engine: Engine, deployment: Deployment, fit: Fit, *, given: bool, hidden: int) -> str | None:
    """One sentence when SGLang's own share is tiny and a larger one leaves more KV cache, else None (another
    engine, a share the user gave, or nothing to gain)."""
    if engine is not Engine.SGLANG or given or not fit.fits or fit.share.fraction >= TINY_SHARE:
        return None
    tokens = deployment.parallel.tokens_per_rank
    reserve = runtime_reserve_bytes(tokens, hidden)
    proposed = round(min(MAX_PROPOSED_SHARE, 1 - reserve / fit.hbm_bytes), 2)
    kv_then = proposed * fit.hbm_bytes - fit.needed_bytes
    if proposed <= fit.share.fraction or kv_then <= fit.kv_bytes:
        return None
    return (
        f"memory share: SGLang's own formula gives --mem-fraction-static {fit.share.fraction:g} here (it holds "
        f"{1 - fit.share.fraction:.0%} of the GPU back for activations and CUDA graphs), leaving "
        f"{fit.kv_bytes / GIB:.1f} GiB of KV cache per rank; moe-oracle's estimate of that reserve at {tokens:,} "
        f"tokens per rank is {reserve / GIB:.1f} GiB, so --mem-fraction-static {proposed:g} would leave "
        f"{kv_then / GIB:.1f} GiB (an estimate: plan it with --memory-fraction {proposed:g}, and watch SGLang's "
        "start-up log for its measured peak)"
    )
