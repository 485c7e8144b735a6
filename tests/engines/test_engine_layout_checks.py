"""The engines' own config checks before a plan (issue 29 item 3): attention heads and KV heads against the
attention tensor-parallel group, routed experts against SGLang's EP group; refused with exit 2 naming the value."""

from __future__ import annotations

from pathlib import Path

import pytest

from moe_oracle.inputs import DeploymentFlags, build_deployment
from moe_oracle.model.resolve import resolve_model
from moe_oracle.releases.layout_checks import layout_problems
from moe_oracle.rules import Engine
from tests.cli.runner import cli

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "models"
GLM47_FLASH = str(FIXTURES / "trimmed--GLM-4.7-Flash")
QWEN3_30B = str(FIXTURES / "Qwen--Qwen3-30B-A3B")


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
@pytest.mark.parametrize("command", ["plan", "select"])
def test_glm47_flash_with_tp8_is_refused_naming_its_20_heads(engine: str, command: str) -> None:
    result = cli(command, GLM47_FLASH, "--device", "h200", "--engine", engine, "--tp", "8")
    assert result.code == 2, result.err
    text = result.err
    assert "20 attention heads" in text and "20 % 8 = 4" in text
    source = "vllm/config/model.py#L1557-L1564" if engine == "vllm" else "srt/models/deepseek_v2.py#L2057"
    assert source in text
    assert "--tp 4 --dp 2" in text and "--tp 1 --dp 8 --ep 8" in text
    if command == "plan":  # plan re-plans each layout it proposes (launch/fix_judge.py) and says what it gives
        assert "--tp 4 --dp 2 plans TP4+DP2" in text and "--tp 1 --dp 8 --ep 8 plans DP8+EP8" in text


def _problems(model: str, engine: Engine, **flags: int) -> list[str]:
    dep, _ = build_deployment(DeploymentFlags(device="h200", **flags))  # type: ignore[arg-type]
    return [p.check for p in layout_problems(engine, resolve_model(model), dep)]


def test_the_proposed_layouts_pass_and_a_dividing_tp_is_accepted() -> None:
    for engine in (Engine.VLLM, Engine.SGLANG):
        assert _problems(GLM47_FLASH, engine, tp=4, dp=2) == []
        assert _problems(GLM47_FLASH, engine, tp=1, dp=8, ep=8) == []
        assert _problems(GLM47_FLASH, engine, tp=8) == ["heads"]


def test_kv_heads_neither_dividing_nor_divided_are_refused() -> None:
    """Qwen3-30B-A3B: 32 heads, 4 KV heads: --tp 8 replicates each KV head twice (accepted), and a TP that is
    neither a multiple nor a divisor of 4 never passes the head check first (32 % 6)."""
    model = resolve_model(QWEN3_30B)
    assert model.attention is not None and (model.attention.heads, model.attention.kv_heads) == (32, 4)
    assert _problems(QWEN3_30B, Engine.VLLM, tp=8) == []


def test_sglang_refuses_experts_that_the_ep_group_does_not_divide_and_vllm_does_not() -> None:
    # Qwen3-30B-A3B has 128 routed experts: EP 6 (tp 1, dp 6 on 6 GPUs) leaves 2 over
    assert _problems(QWEN3_30B, Engine.SGLANG, tp=2, dp=3, ep=6, gpus_per_node=6) == ["experts"]
    assert _problems(QWEN3_30B, Engine.VLLM, tp=2, dp=3, ep=6, gpus_per_node=6) == []
    assert _problems(QWEN3_30B, Engine.NONE, tp=8) == []
