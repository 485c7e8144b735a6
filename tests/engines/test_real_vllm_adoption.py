"""The adoption path of docs/api.md on the real vLLM 0.33.0: its ``is_supported_config``-style function, called with
vLLM's own ``VllmConfig`` (``EngineArgs.create_engine_config()``) and a ``FusedMoEConfig`` built for the model's
MoE layer, answers what ``moe_oracle.check`` answers for the same deployment.

Run by ``tests/engines/run_real_vllm.sh``. The function is taken from docs/api.md itself, so the page's code is what
runs here. moe-oracle's own plug-in is switched off (``MOE_ORACLE_VLLM_PLUGIN=0``): this is the path where vLLM's
oracle calls moe-oracle, not the plug-in.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

vllm = pytest.importorskip("vllm")

import moe_oracle  # noqa: E402
from tests.api.test_docs_api import blocks  # noqa: E402

V4 = str(Path(__file__).resolve().parents[2] / "moe_oracle" / "presets" / "deepseek-ai--DeepSeek-V4-Flash")


@pytest.fixture(scope="module", autouse=True)
def _cpu_platform_without_the_plugin() -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in ("VLLM_TARGET_DEVICE", "MOE_ORACLE_VLLM_PLUGIN", "VLLM_ROCM_USE_AITER")}
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    os.environ["MOE_ORACLE_VLLM_PLUGIN"] = "0"
    os.environ.pop("VLLM_ROCM_USE_AITER", None)
    yield
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def _adoption() -> dict[str, Any]:
    namespace: dict[str, Any] = {}
    code = [b for b in blocks() if "def mega_moe_is_supported_config" in b]
    assert len(code) == 1, "docs/api.md lost its vLLM adoption example"
    exec(compile("import moe_oracle\n" + code[0], "docs/api.md (vLLM adoption)", "exec"), namespace)
    return namespace


def _configs(moe_backend: str) -> tuple[Any, Any]:
    """vLLM's own config objects for DeepSeek-V4-Flash, DP8 + EP8, with ``--moe-backend moe_backend``."""
    import torch
    from vllm.engine.arg_utils import EngineArgs
    from vllm.model_executor.layers.fused_moe.activation import MoEActivation
    from vllm.model_executor.layers.fused_moe.config import (
        FusedMoEConfig,
        FusedMoEParallelConfig,
        RoutingMethodType,
    )

    vllm_config = EngineArgs(
        model=V4,
        load_format="dummy",
        skip_tokenizer_init=True,
        tensor_parallel_size=1,
        data_parallel_size=8,
        enable_expert_parallel=True,
        max_num_batched_tokens=8192,
        moe_backend=moe_backend,
    ).create_engine_config()
    hf = vllm_config.model_config.hf_config
    par = vllm_config.parallel_config
    moe_parallel = FusedMoEParallelConfig(
        tp_size=1, pcp_size=1, dp_size=par.data_parallel_size, ep_size=par.data_parallel_size, tp_rank=0,
        pcp_rank=0, dp_rank=0, ep_rank=0, sp_size=1, use_ep=par.enable_expert_parallel,
        all2all_backend=par.all2all_backend, enable_eplb=par.enable_eplb,
    )  # fmt: skip
    moe_config = FusedMoEConfig(
        num_experts=hf.n_routed_experts,
        experts_per_token=hf.num_experts_per_tok,
        hidden_dim=hf.hidden_size,
        intermediate_size=hf.moe_intermediate_size,
        num_local_experts=hf.n_routed_experts // moe_parallel.ep_size,
        num_logical_experts=hf.n_routed_experts,
        activation=MoEActivation.SILU,
        device="cpu",
        routing_method=RoutingMethodType.DeepSeekV3,
        moe_parallel_config=moe_parallel,
        in_dtype=torch.bfloat16,
        moe_backend=vllm_config.kernel_config.moe_backend,
    )
    return vllm_config, moe_config


def test_vllm_adoption_refuses_aiter_mega_moe_known_bad_under_moa_2026_001() -> None:
    vllm_config, moe_config = _configs("aiter_mega_moe")
    assert type(vllm_config).__name__ == "VllmConfig" and type(moe_config).__name__ == "FusedMoEConfig"
    supported, reason = _adoption()["mega_moe_is_supported_config"](
        vllm_config, moe_config, device="mi355x", software="all"
    )
    assert supported is False and reason is not None
    assert "KNOWN_BAD" in reason and "gfx950_a8w4" in reason


def test_vllm_adoption_reads_the_deployment_vllm_resolved() -> None:
    """The verdict is ``moe_oracle.check``'s for the layout and budgets vLLM resolved (on its CPU platform vLLM
    raises max_num_batched_tokens to the model length: the function reads what vLLM will run, not what was typed)."""
    vllm_config, moe_config = _configs("deep_gemm_mega_moe")
    supported, reason = _adoption()["mega_moe_is_supported_config"](
        vllm_config, moe_config, device="b200", software="vllm-0.33.0"
    )
    sched = vllm_config.scheduler_config
    direct = moe_oracle.check(
        V4,
        device="b200",
        software="vllm-0.33.0",
        backend="deep_gemm_mega_moe",
        engine="vllm",
        dp=8,
        ep=8,
        max_num_batched_tokens=sched.max_num_batched_tokens,
        max_num_seqs=sched.max_num_seqs,
    )
    assert (supported, reason) == (direct.eligible, direct.refusal)
    assert _adoption()["mega_moe_is_supported_config"](vllm_config, _Triton()) == (True, None)


class _Triton:
    """A non-mega backend: not moe-oracle's to judge (the function returns before reading anything else)."""

    moe_backend = "triton"
