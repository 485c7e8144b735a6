"""The SGLang 0.5.23 vocabulary moe-oracle emits: launch_server flags and environment variables.

Checked statically against the 0.5.23 wheel by ``tests/engines/test_engine_vocabulary.py``:
flags against the fields of ``sglang/srt/arg_groups/fields/*.py`` (CLI name ``--<field>`` plus
aliases, ``no_cli`` fields excluded) and the ``add_argument`` calls of ``server_args.py``;
environment variables against the ``Envs`` table of ``sglang/srt/environ.py``.

SGLang 0.5.23 deprecates ``--enable-dp-attention`` (``server_args.py``: "Use --attn-dp-size
<dp-size> instead of --dp-size <dp-size> --enable-dp-attention"), so plans use ``--attn-dp-size``.
"""

from __future__ import annotations

LAUNCH = ("python3", "-m", "sglang.launch_server")

LAUNCH_FLAGS: tuple[str, ...] = (
    "--model-path",
    "--tp-size",
    "--attn-dp-size",
    "--ep-size",
    "--pp-size",
    "--moe-a2a-backend",
    "--chunked-prefill-size",
    "--enable-eplb",
    "--nnodes",
    "--node-rank",
    "--dist-init-addr",
    "--host",
    "--port",
    "--speculative-algorithm",
    "--speculative-num-steps",
    "--speculative-eagle-topk",
    "--speculative-num-draft-tokens",
    "--moe-runner-backend",
    "--quantization",
    "--mem-fraction-static",
    "--cuda-graph-max-bs-decode",
    "--disable-shared-experts-fusion",
    "--max-running-requests",
    "--context-length",
)

#: SGLang 0.5.23 launch_server flags (with their aliases, ``arg_groups/fields/*.py``) whose value is an input of
#: moe-oracle's decision or fit -> the moe-oracle flag that sets it instead. ``serve ... -- FLAG`` refuses them
#: (the decision would no longer describe what runs); checked against the wheel by test_engine_vocabulary.
DECISION_INPUTS: dict[str, str] = {
    "--model-path": "MODEL",
    "--tp-size": "--tp-size (SGLang's spelling: tp*dp) or --tp",
    "--tensor-parallel-size": "--tp-size (SGLang's spelling: tp*dp) or --tp",
    "--attn-dp-size": "--attn-dp-size or --dp",
    "--attention-data-parallel-size": "--attn-dp-size or --dp",
    "--dp-size": "--attn-dp-size or --dp",
    "--data-parallel-size": "--attn-dp-size or --dp",
    "--enable-dp-attention": "--attn-dp-size or --dp",
    "--moe-dp-size": "--dp and --ep",
    "--moe-data-parallel-size": "--dp and --ep",
    "--ep-size": "--ep-size or --ep",
    "--expert-parallel-size": "--ep-size or --ep",
    "--pp-size": "--pp",
    "--pipeline-parallel-size": "--pp",
    "--nnodes": "--nodes",
    "--moe-a2a-backend": "--moe-backend",
    "--moe-runner-backend": "--moe-backend",
    "--enable-w4a4-mxfp4-megamoe": "--moe-backend (and --allow-low-precision-activations)",
    "--disable-shared-experts-fusion": "--moe-backend (the plan sets it with the chosen backend)",
    "--enforce-shared-experts-fusion": "--moe-backend (the plan sets it with the chosen backend)",
    "--chunked-prefill-size": "--max-num-batched-tokens",
    "--enable-eplb": "--eplb",
    "--ep-num-redundant-experts": "--eplb",
    "--quantization": "moe-oracle reads the checkpoint's format from config.json; --allow-lossy-conversion "
    "allows the online quantization the plan offers",
    "--mem-fraction-static": "--memory-fraction",
    "--max-running-requests": "--max-num-seqs",
    "--context-length": "--max-model-len (the memory fit counts it)",
}
#: Flag-name prefixes of decision inputs (every ``--speculative-*`` flag changes which MTP layers are built).
DECISION_INPUT_PREFIXES: dict[str, str] = {"--speculative-": "--speculative mtp|none"}

#: ``--moe-runner-backend`` values moe-oracle sets (``arg_groups/choices.py:136-159``).
MOE_RUNNER_BACKENDS: tuple[str, ...] = ("marlin", "flashinfer_megamoe", "triton")

MOE_A2A_BACKENDS: tuple[str, ...] = ("megamoe", "flashinfer_megamoe")

#: moe-oracle's backend -> SGLang's ``--moe-a2a-backend`` that runs it (``arg_groups/choices.py:140-166``).
_A2A_OF_BACKEND: dict[str, str] = {"flashinfer_megamoe": "flashinfer_megamoe"}


#: moe-oracle's backend -> the ``--moe-runner-backend`` its ``--moe-a2a-backend`` requires. flashinfer_megamoe:
#: ``arg_groups/moe_hook.py:326-333`` turns ``auto`` into it only when no model override ran first, then asserts it;
#: the DeepSeek V4 override turns ``auto`` into ``flashinfer_trtllm_routed`` for NVFP4 checkpoints before that
#: (``arg_groups/model_overrides/deepseek_v4.py:66-74``), so the plan names it.
_RUNNER_OF_BACKEND: dict[str, str] = {"flashinfer_megamoe": "flashinfer_megamoe"}


def a2a_backend(backend: str) -> str:
    """The ``--moe-a2a-backend`` value that serves ``backend`` (SGLang's ``megamoe`` unless declared above)."""
    return _A2A_OF_BACKEND.get(backend, "megamoe")


def a2a_argv(backend: str) -> list[str]:
    """``--moe-a2a-backend`` for ``backend`` and the ``--moe-runner-backend`` SGLang requires with it, if any."""
    runner = _RUNNER_OF_BACKEND.get(backend)
    return ["--moe-a2a-backend", a2a_backend(backend), *(["--moe-runner-backend", runner] if runner else [])]


ENGINE_ENV: dict[str, str] = {
    "SGLANG_OPT_DEEPGEMM_MEGA_MOE_NUM_MAX_TOKENS_PER_RANK": "8192",
    "SGLANG_AMD_USE_FLYDSL_MEGA_MOE": "0",
    "SGLANG_AMD_FLYDSL_MEGA_MOE_MTPR": "8192",
    "SGLANG_USE_AITER": "0",
    "SGLANG_DSV4_FP4_DEQUANT": "0",
    "SGLANG_PLUGINS": '""',
    "SGLANG_DEEPGEMM_PDL": "1",
}
LIBRARY_ENV: dict[str, str] = {
    "MORI_SHMEM_HEAP_SIZE": "read by MoRI (amd-mori) at mori.shmem init; SGLang's mega_moe_flydsl.py calls "
    "shmem_torch_process_group_init without setting it (MoRI's own default heap is smaller than MegaMoEV2 needs)",
}
#: moe-oracle's own variables, read by its SGLang plug-in (``engines/sglang/shipped.py``).
PLUGIN_ENV: dict[str, str] = {
    "MOE_ORACLE_SGLANG_BACKEND": "the operator's choice: auto, sglang, backend:variant, emulation:<variant>, or a "
    "JSON object of per-layer-group pins",
}
#: The entry-point name of moe-oracle's plug-in in the group ``sglang.srt.plugins`` (pyproject.toml); the
#: value plans give ``SGLANG_PLUGINS`` (which restricts the general plug-ins SGLang loads).
PLUGIN_NAME = "moe_oracle"
EMITTED_ENV: tuple[str, ...] = (
    "SGLANG_PLUGINS",
    "MOE_ORACLE_SGLANG_BACKEND",
    "SGLANG_OPT_DEEPGEMM_MEGA_MOE_NUM_MAX_TOKENS_PER_RANK",
    "SGLANG_USE_AITER",
    "SGLANG_DSV4_FP4_DEQUANT",
    "SGLANG_AMD_USE_FLYDSL_MEGA_MOE",
    "SGLANG_AMD_FLYDSL_MEGA_MOE_MTPR",
    "MORI_SHMEM_HEAP_SIZE",
    "SGLANG_DEEPGEMM_PDL",
)

DIST_INIT_PORT = 5000
#: ``arg_groups/fields/serving.py:65-66``: SGLang serves on 127.0.0.1:30000 by default.
SERVER_PORT = 30000
#: A port for the router other than the servers' (sglang-router's default is also 30000).
ROUTER_PORT = 8000


def check_argv(argv: list[str] | tuple[str, ...]) -> None:
    unknown = [a for a in argv if a.startswith("--") and a not in LAUNCH_FLAGS]
    if unknown:
        raise AssertionError(f"SGLang plan emits flags outside the checked vocabulary: {unknown}")
