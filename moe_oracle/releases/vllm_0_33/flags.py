"""The vLLM 0.33.0 vocabulary moe-oracle emits: serve flags, their values, environment variables.

Plans and the plug-in only emit names listed here, and ``tests/engines/test_engine_vocabulary.py``
checks every one of them against the real package (the argument parser of
``vllm/engine/arg_utils.py`` and ``vllm/entrypoints``, the ``environment_variables`` table of
``vllm/envs.py``): installed when vLLM imports, otherwise statically from the 0.33.0 wheel.
"""

from __future__ import annotations

from moe_oracle.releases.vllm_0_33.model_classes import plugin_architectures

#: vLLM releases the plug-in acts on (PEP 440): the 0.33 series, whose sources the rules were read from.
#: Outside it the plug-in says so at WARNING and leaves vLLM alone.
SUPPORTED = ">=0.33.0,<0.34"

#: ``vllm serve`` flags a plan may emit (``arg_utils.py`` EngineArgs.add_cli_args and
#: ``entrypoints/common/cli_args.py`` for ``--headless``).
SERVE_FLAGS: tuple[str, ...] = (
    "--tensor-parallel-size",
    "--data-parallel-size",
    "--pipeline-parallel-size",
    "--enable-expert-parallel",
    "--max-num-batched-tokens",
    "--gpu-memory-utilization",
    "--moe-backend",
    "--all2all-backend",
    "--enable-eplb",
    "--data-parallel-size-local",
    "--data-parallel-start-rank",
    "--data-parallel-address",
    "--data-parallel-rpc-port",
    "--headless",
    "--additional-config",
    "--max-num-seqs",
    "--max-model-len",
    "--speculative-config",
)

#: vLLM 0.33.0 serve flags (with their short aliases, ``engine/arg_utils.py``) whose value is an input of
#: moe-oracle's decision or fit -> the moe-oracle flag that sets it instead. ``serve ... -- FLAG`` refuses them
#: (the decision would no longer describe what runs); checked against the wheel by test_engine_vocabulary.
DECISION_INPUTS: dict[str, str] = {
    "--tensor-parallel-size": "--tp",
    "-tp": "--tp",
    "--data-parallel-size": "--dp",
    "-dp": "--dp",
    "--data-parallel-size-local": "--gpus-per-node",
    "-dpl": "--gpus-per-node",
    "--pipeline-parallel-size": "--pp",
    "-pp": "--pp",
    "--enable-expert-parallel": "--ep (or --enable-expert-parallel before --)",
    "-ep": "--ep (or --enable-expert-parallel before --)",
    "--max-num-batched-tokens": "--max-num-batched-tokens",
    "--gpu-memory-utilization": "--memory-fraction",
    "--kv-cache-memory-bytes": "--memory-fraction",
    "--moe-backend": "--moe-backend",
    "--all2all-backend": "--all2all-backend",
    "--enable-eplb": "--eplb",
    "--eplb-config": "--eplb",
    "--max-num-seqs": "--max-num-seqs",
    "--max-model-len": "--max-model-len (the memory fit counts it)",
    "--speculative-config": "--speculative mtp|none",
    "-sc": "--speculative mtp|none",
    "--nnodes": "--nodes",
    "-n": "--nodes",
    "--quantization": "moe-oracle reads the checkpoint's format from config.json",
    "-q": "moe-oracle reads the checkpoint's format from config.json",
    "--quantization-config": "moe-oracle reads the checkpoint's format from config.json",
    "--hf-overrides": "MODEL: a checkpoint directory whose config.json says what the override would",
}
#: The flag that carries the plug-in's config (``{"moe_oracle": {...}}``): refused after ``--`` when its value
#: names the plug-in's key, whatever else it holds (the plan's own choice, or none, is what was decided).
PLUGIN_CONFIG_FLAG = "--additional-config"
PLUGIN_CONFIG_KEY = "moe_oracle"

#: ``--moe-backend`` values moe-oracle sets (members of ``vllm.config.kernel.MoEBackend``).
MOE_BACKENDS: tuple[str, ...] = ("deep_gemm_mega_moe", "aiter_mega_moe")
#: ``--all2all-backend`` values moe-oracle sets (``vllm.config.parallel.All2AllBackend``).
ALL2ALL_BACKENDS: tuple[str, ...] = ("mori_high_throughput", "mori_low_latency")
#: Every ``--all2all-backend`` vLLM 0.33.0 takes (``vllm.config.parallel.All2AllBackend``, checked against the wheel).
ALL2ALL_CHOICES: tuple[str, ...] = (
    "naive",
    "pplx",
    "deepep_high_throughput",
    "deepep_low_latency",
    "deepep_v2",
    "mori_high_throughput",
    "mori_low_latency",
    "moonep",
    "nixl_ep",
    "allgather_reducescatter",
    "flashinfer_all2allv",
    "flashinfer_nvlink_two_sided",
    "flashinfer_nvlink_one_sided",
    "passthrough",
)
#: vLLM's default all2all backend: the plug-in treats it as "not chosen by the user".
DEFAULT_ALL2ALL = "allgather_reducescatter"

#: Environment variables of vLLM itself (``vllm/envs.py`` environment_variables) and their
#: defaults as vLLM reads them ("1"/"0" for booleans).
ENGINE_ENV: dict[str, str] = {
    "VLLM_ROCM_USE_AITER": "0",
    "VLLM_ROCM_USE_AITER_MOE": "1",
    "VLLM_DISABLE_DSV4_MEGAMOE_SHARED_EXPERT_FUSION": "0",
}
#: Variables read by a library, which vLLM sets or reads by name in its own sources.
LIBRARY_ENV: dict[str, str] = {
    "MORI_SHMEM_HEAP_SIZE": "vllm/distributed/device_communicators/all2all.py (os.environ.setdefault before "
    "mori.shmem init)",
}
EMITTED_ENV: tuple[str, ...] = ("VLLM_ROCM_USE_AITER", "VLLM_ROCM_USE_AITER_MOE", "MORI_SHMEM_HEAP_SIZE")

#: DeepSeek V4 and GLM MoE architectures (``MODELS_CONFIG_MAP`` entries the plug-in wraps, among others).
DSV4_ARCHITECTURES: tuple[str, ...] = (
    "DeepseekV4ForCausalLM",
    "DeepseekV41ForCausalLM",
    "DeepseekV4ForConditionalGeneration",
)
GLM_ARCHITECTURES: tuple[str, ...] = (
    "GlmMoeDsaForCausalLM",
    "Glm4MoeForCausalLM",
    "Glm4MoeLiteForCausalLM",
    "Glm5NextForCausalLM",
    "Glm5NextForConditionalGeneration",
)
#: every architecture whose MoE the plug-in's out-of-tree RoutedExperts serves (one table:
#: ``model_classes.py`` VLLM), so the decision's plug-in route and the hook agree
HOOKED_ARCHITECTURES: tuple[str, ...] = plugin_architectures()

DEFAULT_RPC_PORT = 13345


def check_argv(argv: list[str] | tuple[str, ...]) -> None:
    """Raise if an argv uses a flag outside :data:`SERVE_FLAGS` (a guard against drift)."""
    unknown = [a for a in argv if a.startswith("--") and a not in SERVE_FLAGS]
    if unknown:
        raise AssertionError(f"vLLM plan emits flags outside the checked vocabulary: {unknown}")


def supported(version: str) -> bool:
    from packaging.specifiers import SpecifierSet
    from packaging.version import InvalidVersion, Version

    try:
        return Version(version) in SpecifierSet(SUPPORTED)
    except InvalidVersion:
        return False
