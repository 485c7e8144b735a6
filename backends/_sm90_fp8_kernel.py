"""What DeepGEMM PR #323's SM90 FP8 x FP8 mega kernel compiles to, and which of its static assertions a shape fails.

The kernel is compiled (JIT) per call shape: the host heuristics pick BLOCK_M / BLOCK_N, the warp counts and the
pipeline depth from the tokens per expert of *that call*, and the kernel's ``DG_STATIC_ASSERT`` s then hold or the
compile stops. This module is a line-by-line transcription of those heuristics and of the assertions that depend on
the shape, so that a limit is known before anything is compiled. Every number cites its line at
``deepseek-ai/DeepGEMM`` ``refs/pull/323/head`` 8ddf7f96:

- ``H``  = ``csrc/jit_kernels/heuristics/sm90_mega_moe.hpp`` (block config 45-62, swapAB 86-99, pipeline 101-141,
  config 521-598); ``SMEM_CAPACITY`` = ``csrc/jit_kernels/heuristics/sm90.hpp:14``;
- ``K``  = ``deep_gemm/include/deep_gemm/impls/sm90_fp8_mega_moe.cuh`` (shared-memory layout 309-345, combine
  stage 2166-2187).

The combine stage stages ``kNumChunkSlots`` (3) chunks per combine warp of each token's BF16 row in the shared memory
that lies before the barriers (``SMEM_BEFORE_BARRIER_SIZE``, K:343-345) and asserts it fits (K:2183, "Hidden is too
large"). At 64+ tokens per expert the host switches to BLOCK_M 128 / BLOCK_N 256 with 16 combine warps (H:50-52), and
the split-MN combine takes 7 chunks when H % 7 == 0, else 4 (K:2176). H 8192 then gets only 2 pipeline stages
(H:135) and 181,248 bytes before the barrier against 196,608 needed: the compile stops (seen on the H200, issue #31).
H 7168 takes 7 chunks and 3 stages: it fits.

:data:`AUDIT` lists every static assertion of the two SM90 kernels with what bounds it; only the ones a shape can
fail (the host fixes the others) are evaluated by :func:`failures`.
"""

from __future__ import annotations

from dataclasses import dataclass

_REF = "DeepGEMM PR #323 8ddf7f96"
HEUR = "csrc/jit_kernels/heuristics/sm90_mega_moe.hpp"
KERNEL = "deep_gemm/include/deep_gemm/impls/sm90_fp8_mega_moe.cuh"
KERNEL_FP4 = "deep_gemm/include/deep_gemm/impls/sm90_fp8_fp4_mega_moe.cuh"

#: SM90ArchSpec::smem_capacity (csrc/jit_kernels/heuristics/sm90.hpp:14)
SMEM_CAPACITY = 232448
_ALIGN = 1024  # kSharedMemoryAlignment (H:107, K:309)
_CHUNK_SLOTS = 3  # kNumChunkSlots (K:2169)
_MAX_REGS_FOR_BUFFER = 128  # kNumMaxRegistersForBuffer (K:2170)


def _align(x: int, a: int) -> int:
    return (x + a - 1) // a * a


@dataclass(frozen=True)
class Fp8KernelConfig:
    """The configuration the host picks for one call (H:521-598) and the kernel's derived sizes (K)."""

    num_tokens: int
    tokens_per_expert: float
    block_m: int
    block_n: int
    epilogue_threads: int
    dispatch_threads: int
    swap_ab: bool
    num_stages: int
    smem_size: int
    smem_before_barrier: int
    combine_chunks: int
    hidden: int

    @property
    def combine_warps(self) -> int:
        return self.epilogue_threads // 32

    @property
    def combine_bytes(self) -> int:
        """Shared memory the combine stage stages: 3 slots x combine warps x BF16 row bytes / chunks (K:2183)."""
        return _CHUNK_SLOTS * self.combine_warps * self.hidden * 2 // self.combine_chunks

    def label(self) -> str:
        return (
            f"BLOCK_M {self.block_m}, BLOCK_N {self.block_n}, {self.combine_warps} combine warps, "
            f"{self.num_stages} stages, {self.combine_chunks} combine chunks"
        )


def tokens_per_expert(num_tokens: int, num_ranks: int, top_k: int, num_experts: int) -> float:
    """``expected_tokens_per_expert`` as the host computes it (H:48-49): T x ranks x top-k / experts."""
    return num_tokens * num_ranks * top_k / num_experts


def config(num_tokens: int, *, hidden: int, inter: int, num_experts: int, top_k: int, num_ranks: int = 1):
    """The :class:`Fp8KernelConfig` of one call of ``num_tokens`` tokens per rank (DG_SM90_FP8_SWAP_AB unset)."""
    tpe = tokens_per_expert(num_tokens, num_ranks, top_k, num_experts)
    # more ranks than experts is refused by EXPERTS_NOT_DIVISIBLE; this check must not divide by zero meanwhile
    per_rank = max(1, num_experts // num_ranks)
    # H:50-61: 64+ tokens per expert -> (128, 512 epilogue threads); else (64, 2 warpgroups)
    block_m, epi = (128, 512) if tpe >= 64.0 else (64, 256)
    split_mn = block_m == 128 and epi == 512
    decode_split_n = block_m == 64 and epi == 256
    # H:534-537
    bn256 = decode_split_n and inter >= 3072 and tpe >= 0.25 and (2 * inter) % 256 == 0 and hidden % 256 == 0
    # H:94-98 (tokens per expert here per local expert)
    swap = decode_split_n and num_tokens <= 128 and num_tokens * top_k / per_rank > 0.0
    block_n = 128 if swap else (256 if split_mn else (256 if bn256 else 128))  # H:541-543
    # H:557-562
    dispatch = 64 if (epi == 512 or epi == 128 or decode_split_n) else 128
    stages, smem = _pipeline(num_experts, hidden, block_m, block_n, dispatch // 32, epi // 32, swap)
    before = _smem_before_barrier(num_experts, hidden, block_m, block_n, dispatch // 32, stages, swap)
    chunks = _combine_chunks(hidden, epi // 32, before, block_m == 128 and block_n == 256 and epi // 128 == 4)
    return Fp8KernelConfig(num_tokens, tpe, block_m, block_n, epi, dispatch, swap, stages, smem, before, chunks, hidden)


def _smem_cd(block_m: int, block_n: int, swap: bool) -> int:
    l1 = block_m * (block_n // 2)
    l2 = block_m * block_n * 2
    swap_l1 = block_m * (block_n // 2) * (4 + 1) if swap else 0
    return _align(max(l1, l2, swap_l1), _ALIGN)


def _pipeline(
    num_experts: int, hidden: int, block_m: int, block_n: int, dispatch_warps: int, epi_warps: int, swap: bool
) -> tuple[int, int]:
    """(num_stages, smem_size) as get_pipeline_config_for_mega_moe_sm90 (H:101-141); stages < 2 is returned as is
    (the host asserts >= 2 at H:137: see :func:`failures`)."""
    block_k = 128
    dispatch = _align(num_experts * 4, _ALIGN) + _align(hidden * dispatch_warps, _ALIGN)
    per_stage = block_m * block_k + block_n * block_k + _align(2 * block_m * 4, 128)
    fixed = dispatch + _smem_cd(block_m, block_n, swap) + (dispatch_warps + 2 * epi_warps) * 8
    stages = (SMEM_CAPACITY - fixed) // (per_stage + 16)
    return stages, fixed + stages * (per_stage + 16)


def _smem_before_barrier(
    num_experts: int, hidden: int, block_m: int, block_n: int, dispatch_warps: int, stages: int, swap: bool
) -> int:
    """SMEM_BEFORE_BARRIER_SIZE (K:312-345): expert counts, send buffers, CD tile, the A/B stages."""
    block_k = 128
    return (
        _align(num_experts * 4, _ALIGN)
        + _align(hidden * dispatch_warps, _ALIGN)
        + _smem_cd(block_m, block_n, swap)
        + stages * (block_m * block_k + block_n * block_k)
    )


def _combine_chunks(hidden: int, combine_warps: int, before: int, split_mn: bool) -> int:
    """kNumChunks (K:2171-2178)."""
    if split_mn:
        return 7 if hidden % 7 == 0 else (4 if hidden >= 1024 else 1)
    fits = _CHUNK_SLOTS * combine_warps * hidden * 2 <= before and hidden <= 32 * _MAX_REGS_FOR_BUFFER
    return 1 if fits else 2


def failures(cfg: Fp8KernelConfig, top_k: int) -> list[str]:
    """The shape-dependent assertions ``cfg`` fails, each as 'rule (file:line)'."""
    out = []
    if cfg.num_stages < 2:
        out.append(f"num_stages >= 2: {cfg.num_stages} fit ({HEUR}:137)")
    chunk_bytes = cfg.hidden * 2 // cfg.combine_chunks
    if cfg.hidden % cfg.combine_chunks:
        out.append(f"hidden % {cfg.combine_chunks} combine chunks == 0 ({KERNEL}:2182)")
    if cfg.combine_bytes > cfg.smem_before_barrier:
        out.append(
            f"'Hidden is too large': 3 slots x {cfg.combine_warps} combine warps x {cfg.hidden * 2} B / "
            f"{cfg.combine_chunks} chunks = {cfg.combine_bytes} B > SMEM_BEFORE_BARRIER_SIZE "
            f"{cfg.smem_before_barrier} B "
            f"({KERNEL}:2183)"
        )
    if chunk_bytes % 16 or (chunk_bytes // 16) % 32:
        out.append(f"combine chunk of {chunk_bytes} B must be a multiple of 32 x 16 B ({KERNEL}:2184-2186)")
    if top_k > 32:
        out.append(f"top-k {top_k} <= 32 ({KERNEL}:496, 2187)")
    return out


def regime_starts(num_experts: int, top_k: int, num_ranks: int, max_tokens: int) -> tuple[int, ...]:
    """The token counts per rank (<= ``max_tokens``) where the host's choice can change: T = 1, the first T with
    0.25 tokens per expert (BLOCK_N 256 for wide experts, H:536), T = 129 (no swapAB, H:98), the first T with 64
    tokens per expert (BLOCK_M 128, H:51). The configuration is constant from one to the next."""
    pairs = num_ranks * top_k
    quarter = -(-num_experts // (4 * pairs))
    split = -(-64 * num_experts // pairs)
    return tuple(sorted({t for t in (1, quarter, 129, split) if 1 <= t <= max_tokens}))


@dataclass(frozen=True)
class Limit:
    """The first token count per rank whose call fails to compile, with the configuration and the failed rules."""

    first_failing_tokens: int
    config: Fp8KernelConfig
    failed: tuple[str, ...]


def first_failure(
    *, hidden: int, inter: int, num_experts: int, top_k: int, num_ranks: int, max_tokens: int
) -> Limit | None:
    """The smallest T <= ``max_tokens`` per rank whose call the kernel cannot compile, or None (every call compiles)."""
    for t in regime_starts(num_experts, top_k, num_ranks, max_tokens):
        cfg = config(t, hidden=hidden, inter=inter, num_experts=num_experts, top_k=top_k, num_ranks=num_ranks)
        bad = failures(cfg, top_k)
        if bad:
            return Limit(t, cfg, tuple(bad))
    return None


@dataclass(frozen=True)
class Assertion:
    """One static assertion of an SM90 kernel and what bounds it."""

    where: str
    rule: str
    bound_by: str


#: Every DG_STATIC_ASSERT of the two SM90 kernels (8ddf7f96) and why it holds or what moe-oracle checks for it.
AUDIT: tuple[Assertion, ...] = (
    Assertion(
        f"{KERNEL}:179-190",
        "dispatch/non-epilogue/epilogue thread counts, BLOCK_M % 64, BLOCK_N in 128/256/512, BLOCK_K 128",
        f"fixed by the host ({HEUR}:526-566)",
    ),
    Assertion(f"{KERNEL}:186", "experts % ranks == 0", "checked: experts divisible by EP (common checks)"),
    Assertion(f"{KERNEL}:217-218", "pool tokens % BLOCK_M, padded SF pool", "the buffer's own layout (aligned)"),
    Assertion(f"{KERNEL}:274-298", "warpgroup split, WGMMA M 64, swapAB BLOCK_M % 8", f"fixed by the host ({HEUR})"),
    Assertion(f"{KERNEL}:476", "register budget", "host assert with fixed counts (sm90_fp8_mega_moe.hpp:166-174)"),
    Assertion(f"{KERNEL}:496, 2187", "top-k <= 32", "checked here (failures)"),
    Assertion(f"{KERNEL}:669", "hidden % 128", "implied by the buffer's hidden % 512 limit"),
    Assertion(f"{KERNEL}:715, 730", "SMs > 1, dispatch warps >= 2", "H200 132 SMs; host picks 2 or 4 dispatch warps"),
    Assertion(f"{HEUR}:137", "num_stages >= 2", "checked here (failures): binds for none of H <= 16384"),
    Assertion(
        f"{KERNEL}:2182-2186",
        "combine: hidden % chunks, 'Hidden is too large', chunk a multiple of 512 B",
        "checked here (failures) per configuration the deployment's token counts reach: 'Hidden is too large' "
        "at H 7680 and 8192 from 64 tokens per expert, above H 8192 at fewer; the 512-byte chunk from 64 tokens "
        "per expert at an H neither a multiple of 1024 nor of 1792 (1536, 2560, 4608, 5632, 6656, 7680)",
    ),
    Assertion(
        f"{KERNEL_FP4}:2533-2550",
        "FP8 x MXFP4 combine: the same rules, but kNumChunks adapts 1 -> 2 -> 4 to what fits",
        "not modelled: it ran at H 8192 for T 1-4096 on the H200 (issue #31, tests/runtime/test_gpu_kernel_limits.py)",
    ),
)
