"""The engines' memory share of one GPU: what an engine sizes its weights and KV cache against.

vLLM 0.33 (``--gpu-memory-utilization``, default 0.92, ``vllm/config/cache.py:215``): the share holds the
weights, the profiled activation peak, the CUDA-graph memory (estimated before capture and subtracted, on by default:
``VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1``, ``vllm/envs.py:329``; ``v1/worker/gpu_worker.py:707-757``
``available_kv_cache_memory_bytes = requested - non_kv_cache_memory - cudagraph_memory_estimate``)
and the KV cache. moe-oracle cannot profile, so the fit counts a stated estimate for the activations
and graphs inside the share (:data:`RESERVE_CUDA_GRAPHS`, :data:`ACTIVATION_BYTES_PER_TOKEN_PER_HIDDEN`).

SGLang 0.5.23 (``--mem-fraction-static``): the share holds weights and KV cache only; activations
and CUDA graphs live outside it. When the flag is not given SGLang computes it from the GPU memory,
the chunked-prefill size, the decode CUDA-graph batch, the TP/PP size and attention DP
(``srt/arg_groups/memory_hook.py:281-336`` with ``reserve_for_graph_mb`` at 363-398): reproduced
here as :func:`sglang_mem_fraction_static` (a pure function of :class:`SGLangMemoryInputs`), so the
fit uses the value SGLang itself picks for the planned flags. SGLang then sizes the KV cache as
``free memory after weights - pre-load free memory x (1 - mem_fraction_static)``
(``srt/mem_cache/kv_cache_configurator.py:2990-3060``).
"""

from __future__ import annotations

from dataclasses import dataclass

from moe_oracle.releases import sglang as sglang_release
from moe_oracle.releases import vllm as vllm_release
from moe_oracle.rules import Engine
from moe_oracle.spec.device import DEVICES

GIB = 1 << 30
MIB = 1 << 20


@dataclass(frozen=True)
class MemoryShare:
    """The share of a GPU's memory an engine takes for weights, buffers (activations) and KV cache.

    ``includes_reserve``: False when CUDA graphs and activations live outside the share (SGLang);
    ``reserve_outside_bytes`` is then what the engine keeps outside it, by its own formula.
    """

    flag: str | None
    fraction: float
    source: str
    includes_reserve: bool = True
    reserve_outside_bytes: int = 0


#: The vLLM default (``CacheConfig.gpu_memory_utilization``) and the highest utilization moe-oracle proposes
#: (the rest of the GPU is what vLLM's profiler does not see: NCCL, the CUDA context, other processes).
VLLM_DEFAULT_UTILIZATION = 0.92
VLLM_MAX_PROPOSED_UTILIZATION = 0.95
VLLM_SHARE_HOLDS = (
    "the share holds weights, the profiled activation peak, the CUDA-graph estimate and the KV cache "
    f"(vllm {vllm_release.SERIES} v1/worker/gpu_worker.py:707-757)"
)
VLLM_SHARE_SOURCE = (
    f"vLLM {vllm_release.VERSION}'s CacheConfig.gpu_memory_utilization default "
    f"({vllm_release.SOURCE}/config/cache.py#L215);"
    f" {VLLM_SHARE_HOLDS}"
)

#: The runtime reserve inside vLLM's share (and moe-oracle's runtime alone): CUDA graphs (a fixed allowance)
#: and the activation peak of one step (bytes per token per hidden unit at the per-rank token budget).
#: moe-oracle's estimates, stated as such: vLLM profiles its own at start (a dummy run at the budget, then
#: ``profile_cudagraph_memory``), and the KV cache takes what its profile leaves.
RESERVE_CUDA_GRAPHS = 2 * GIB
ACTIVATION_BYTES_PER_TOKEN_PER_HIDDEN = 24
RESERVE_SOURCE = (
    "estimate: CUDA graphs 2 GiB + activations 24 B x tokens per rank x hidden (bf16 hidden states, residual, "
    "router logits and expert inputs of one step); vLLM profiles its own at start and subtracts it from its share "
    "(v1/worker/gpu_worker.py:707-757)"
)


def vllm_serve_batch_defaults(device: str | None) -> tuple[int, int]:
    """``(max_num_batched_tokens, max_num_seqs)`` ``vllm serve`` defaults to on ``device`` (a catalogue name).

    vLLM 0.33 ``engine/arg_utils.py get_batch_defaults`` (OPENAI_API_SERVER): >= 160 GiB (B200, B300,
    MI355X) 16384 / 1024; >= 70 GiB except A100 (H100, H200) 8192 / 1024; otherwise 2048 / 256.
    ``max_num_seqs`` is also the smallest ``--max-num-batched-tokens`` vLLM accepts
    (``SchedulerConfig.verify_max_model_len``: "max_num_batched_tokens ... must be greater than or equal to
    max_num_seqs", https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/config/scheduler.py#L331-L335).
    """
    spec = DEVICES.get(device or "")
    memory = spec.memory_gib if spec is not None else 0.0
    if memory >= 160:
        return 16384, 1024
    if memory >= 70 and "a100" not in (device or ""):
        return 8192, 1024
    return 2048, 256


def runtime_reserve_bytes(tokens_per_rank: int, hidden: int) -> int:
    """moe-oracle's estimate of the activation + CUDA-graph reserve inside vLLM's share (see :data:`RESERVE_SOURCE`)."""
    return RESERVE_CUDA_GRAPHS + ACTIVATION_BYTES_PER_TOKEN_PER_HIDDEN * tokens_per_rank * hidden


# --- SGLang 0.5.23 -------------------------------------------------------------------------------------------------

SGLANG_SOURCE = f"sglang {sglang_release.VERSION} srt/arg_groups/memory_hook.py"

#: ``memory_hook.py:88-165``: the GPU-memory tiers (MiB, upper bound exclusive) -> (chunked_prefill_size,
#: decode CUDA-graph max_bs with tp < 4, with tp >= 4).
SGLANG_TIERS: tuple[tuple[float, int, int, int], ...] = (
    (20 * 1024, 2048, 8, 8),
    (35 * 1024, 4096, 48, 160),
    (60 * 1024, 4096, 32, 160),
    (90 * 1024, 8192, 256, 512),
    (160 * 1024, 8192, 256, 512),
    (float("inf"), 16384, 512, 512),
)

#: Architectures SGLang serves with ``AttentionArch.MLA`` (``srt/configs/model_config.py:1366-1397`` and the
#: branches after it); DeepSeek V4 is ``AttentionArch.MHA`` there (model_config.py:1418-1430).
SGLANG_MLA_ARCHS = frozenset(
    {
        "DeepseekV2ForCausalLM",
        "DeepseekV32ForCausalLM",
        "DeepseekV3ForCausalLM",
        "Glm4MoeLiteForCausalLM",
        "GlmMoeDsaForCausalLM",
        "Glm5NextForConditionalGeneration",
        "LongcatFlashForCausalLM",
        "KimiK25ForConditionalGeneration",
        "MistralLarge3ForCausalLM",
        "BailingMoeV2_5ForCausalLM",
        "BailingMoeV3ForCausalLM",
        "KimiLinearForCausalLM",
    }
)

#: Architectures whose breakable prefill CUDA graph SGLang turns off by default (``arg_groups/cuda_graph_hook.py:
#: 193-202``: DeepSeek V4 without prefill context parallelism).
SGLANG_NO_PREFILL_GRAPH_ARCHS = frozenset({"DeepseekV4ForCausalLM"})

#: ``--moe-a2a-backend`` values under which the breakable prefill graph stays on (``cuda_graph_hook.py:222-227``).
SGLANG_PREFILL_GRAPH_A2A = frozenset({"none", "deepep", "megamoe", "flashinfer"})


@dataclass(frozen=True)
class SGLangMemoryInputs:
    """What ``handle_gpu_memory_settings`` reads. ``chunked_prefill_size`` is the value on the command line:
    SGLang reads it here before ``_handle_data_parallelism`` divides it by ``--attn-dp-size``
    (pipeline.py:218 runs before 274; parallel_hook.py:339-341 says so)."""

    gpu_mem_mib: float
    chunked_prefill_size: int
    cuda_graph_max_bs: int
    tp_size: int
    pp_size: int = 1
    attn_dp_size: int = 1
    mla: bool = False
    prefill_graph: bool = True


def sglang_default_settings(gpu_mem_mib: float, tp_size: int) -> tuple[int, int]:
    """(chunked_prefill_size, decode CUDA-graph max_bs) SGLang picks when neither is given (memory_hook.py:88-165)."""
    for bound, chunk, small_tp, big_tp in SGLANG_TIERS:
        if gpu_mem_mib < bound:
            return chunk, small_tp if tp_size < 4 else big_tp
    raise AssertionError("unreachable: the last tier is unbounded")


def sglang_prefill_graph_sizes(max_bs: int) -> list[int]:
    """``generate_prefill_cuda_graph_batch_sizes`` (cuda_graph_hook.py:480-497)."""
    sizes = (
        list(range(4, 33, 4))
        + list(range(48, 257, 16))
        + list(range(288, 513, 32))
        + list(range(576, 1024 + 1, 64))
        + list(range(1280, 4096 + 1, 256))
        + list(range(4608, max_bs + 1, 512))
    )
    return [s for s in sizes if s <= max_bs]


def sglang_graph_reserve_mb(x: SGLangMemoryInputs) -> float:
    """``reserve_for_graph_mb`` (memory_hook.py:363-398) for a non-disaggregated server with decode graphs on."""
    reserved = x.cuda_graph_max_bs * 2.0
    if x.attn_dp_size > 1:
        reserved += x.cuda_graph_max_bs * x.attn_dp_size * 3
        if x.cuda_graph_max_bs > 300:
            reserved += x.cuda_graph_max_bs * x.attn_dp_size * 1.5
    if x.prefill_graph:
        reserved += 1.5 * 1024 if x.mla else len(sglang_prefill_graph_sizes(x.chunked_prefill_size)) * 8
    return reserved


def sglang_reserved_mb(x: SGLangMemoryInputs) -> float:
    """``reserved_mem`` (memory_hook.py:300-317): activations, CUDA graphs and parallel slack, in MiB."""
    reserved = 512 + max(x.chunked_prefill_size, 2048) * 1.5
    reserved += x.tp_size * x.pp_size / 8 * 1024
    reserved += sglang_graph_reserve_mb(x)
    if x.gpu_mem_mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    return reserved


def sglang_mem_fraction_static(x: SGLangMemoryInputs) -> float:
    """The ``--mem-fraction-static`` SGLang 0.5.23 picks when it is not given (memory_hook.py:324-328)."""
    return round((x.gpu_mem_mib - sglang_reserved_mb(x)) / x.gpu_mem_mib, 3)


def sglang_inputs(
    *,
    gpu_mem_gib: float,
    architecture: str,
    tp_size: int,
    pp_size: int,
    attn_dp_size: int,
    chunked_prefill_size: int | None,
    cuda_graph_max_bs: int | None,
    a2a_backend: str = "none",
) -> SGLangMemoryInputs:
    """The inputs SGLang resolves for one launch: flags not given take SGLang's defaults for the GPU."""
    mib = gpu_mem_gib * 1024
    chunk, max_bs = sglang_default_settings(mib, tp_size)
    return SGLangMemoryInputs(
        gpu_mem_mib=mib,
        chunked_prefill_size=chunked_prefill_size if chunked_prefill_size is not None else chunk,
        cuda_graph_max_bs=cuda_graph_max_bs if cuda_graph_max_bs is not None else max_bs,
        tp_size=tp_size,
        pp_size=pp_size,
        attn_dp_size=attn_dp_size,
        mla=architecture in SGLANG_MLA_ARCHS,
        prefill_graph=(
            pp_size == 1
            and architecture not in SGLANG_NO_PREFILL_GRAPH_ARCHS
            and a2a_backend in SGLANG_PREFILL_GRAPH_A2A
        ),
    )


@dataclass(frozen=True)
class EngineMemorySettings:
    """The engine flags the memory fit depends on; None: the engine's default.

    ``fraction``: ``--gpu-memory-utilization`` / ``--mem-fraction-static`` as given; ``chunked_prefill_size``
    and ``cuda_graph_max_bs``: SGLang's ``--chunked-prefill-size`` (the command-line value) and
    ``--cuda-graph-max-bs-decode``; ``max_num_batched_tokens``: vLLM's per-rank token budget when given or
    chosen (None: the deployment's, which the settings search may lower); ``a2a_backend``: SGLang's
    ``--moe-a2a-backend`` the plan sets; ``chosen``: moe-oracle chose these settings (the engine's defaults do
    not fit), the user did not give them all; ``fraction_chosen``: the share among them is moe-oracle's, not a
    ``--memory-fraction`` the user gave (the search keeps a given share and chooses the rest); ``max_model_len``:
    the longest sequence the engine serves (vLLM ``--max-model-len``, SGLang ``--context-length``) as given, or
    as the plan sets it where the KV cache holds less than the model's context (None: the model's);
    ``max_num_seqs``: ``--max-num-seqs`` as given (sequences per DP rank), which the engine's command carries
    (vLLM ``--max-num-seqs``, SGLang ``--max-running-requests`` x attention DP).
    """

    fraction: float | None = None
    chunked_prefill_size: int | None = None
    cuda_graph_max_bs: int | None = None
    max_num_batched_tokens: int | None = None
    a2a_backend: str = "none"
    chosen: bool = False
    max_num_seqs: int | None = None
    fraction_chosen: bool = False
    max_model_len: int | None = None

    def budget(self, dp: int) -> int | None:
        """The per-rank token budget these settings imply (None: the deployment's): vLLM's
        ``--max-num-batched-tokens``; SGLang's per-rank prefill chunk, ``--chunked-prefill-size / --attn-dp-size``."""
        if self.max_num_batched_tokens is not None:
            return self.max_num_batched_tokens
        return self.chunked_prefill_size // dp if self.chunked_prefill_size is not None else None


def engine_share(
    engine: Engine,
    *,
    gpu_mem_gib: float,
    architecture: str,
    tp: int,
    dp: int,
    pp: int,
    tokens_per_rank: int,
    settings: EngineMemorySettings,
) -> MemoryShare:
    """The share ``engine`` sizes against on one GPU, with the flags given (``settings``) or its defaults."""
    if engine is Engine.SGLANG:
        chunk = settings.chunked_prefill_size if settings.chunked_prefill_size is not None else tokens_per_rank * dp
        x = sglang_inputs(
            gpu_mem_gib=gpu_mem_gib,
            architecture=architecture,
            tp_size=tp * dp,
            pp_size=pp,
            attn_dp_size=dp,
            chunked_prefill_size=chunk,
            cuda_graph_max_bs=settings.cuda_graph_max_bs,
            a2a_backend=settings.a2a_backend,
        )
        reserve = int(sglang_reserved_mb(x) * MIB)
        formula = (
            f"SGLang's own formula ({SGLANG_SOURCE}:281-336): reserved {sglang_reserved_mb(x):.0f} MiB = 512 + "
            f"1.5 x max(--chunked-prefill-size {x.chunked_prefill_size}, 2048) + tp {x.tp_size} x pp {x.pp_size} / 8 "
            f"x 1024 + CUDA graphs {sglang_graph_reserve_mb(x):.0f} (decode max_bs {x.cuda_graph_max_bs}"
            + (f", attention DP {x.attn_dp_size}" if x.attn_dp_size > 1 else "")
            + (", MLA prefill graph 1536" if x.prefill_graph and x.mla else "")
            + (", no prefill graph" if not x.prefill_graph else "")
            + "), at least 10240 above 60 GiB"
        )
        if settings.fraction is not None:
            return MemoryShare(
                "--mem-fraction-static",
                settings.fraction,
                f"given; SGLang's own default for these flags would be {sglang_mem_fraction_static(x):g} ({formula})",
                includes_reserve=False,
                reserve_outside_bytes=reserve,
            )
        return MemoryShare(
            "--mem-fraction-static",
            sglang_mem_fraction_static(x),
            f"{formula}: round((GPU MiB - reserved) / GPU MiB, 3)",
            includes_reserve=False,
            reserve_outside_bytes=reserve,
        )
    if engine is Engine.VLLM:
        if settings.fraction is not None and settings.chosen and settings.fraction_chosen:
            return MemoryShare(
                "--gpu-memory-utilization",
                settings.fraction,
                f"chosen by moe-oracle, not given: at vLLM's default {VLLM_DEFAULT_UTILIZATION:g} these weights, "
                f"buffers and reserve leave too little KV cache (moe-oracle proposes at most "
                f"{VLLM_MAX_PROPOSED_UTILIZATION:g}; see the engine settings chosen); {VLLM_SHARE_HOLDS}",
            )
        if settings.fraction is not None:
            return MemoryShare("--gpu-memory-utilization", settings.fraction, "given (--memory-fraction)")
        return MemoryShare("--gpu-memory-utilization", VLLM_DEFAULT_UTILIZATION, VLLM_SHARE_SOURCE)
    fraction = settings.fraction if settings.fraction is not None else VLLM_DEFAULT_UTILIZATION
    return MemoryShare(None, fraction, "moe-oracle's runtime: the same share as vLLM's default")
