"""moe-oracle's SGLang plug-in without SGLang: the decision at start, the refusals, the plan shipped to schedulers.

The hooks themselves run inside the real SGLang 0.5.23 in tests/engines/test_real_sglang_plugin.py.
"""

from __future__ import annotations

import json

import pytest

from moe_oracle.engines.sglang.plugin import SglangArgs, resolve
from moe_oracle.engines.sglang.shipped import ENV_BACKEND, plan_for, read_request, serves_any, shipped_plan
from moe_oracle.errors import BadInputError
from moe_oracle.releases import sglang as sglang_release

V4 = "deepseek-ai/DeepSeek-V4-Flash"
DP8 = dict(tp_size=8, attn_dp_size=8, ep_size=8, prefill_tokens_per_rank=2048, device="h200")


def test_explicit_emulation_is_validated_and_shipped_per_layer_group():
    out = resolve(SglangArgs(V4, **DP8), {ENV_BACKEND: "emulation:sm90_fp8xfp4"})
    assert out.action == "plan", out.error
    plan = shipped_plan({"MOE_ORACLE_SGLANG_PLAN": out.plan_env})
    assert serves_any(plan) and plan["fingerprint"].startswith("sha256:")
    lp = plan_for(plan, 10)
    assert lp is not None and lp.variant == "deep_gemm_mega_moe:sm90_fp8xfp4" and lp.emulate
    assert lp.max_tokens_per_rank == 2048
    assert any("moe-oracle runtime deep_gemm_mega_moe:sm90_fp8xfp4" in line for line in out.table)
    assert out.table[0].startswith("moe-oracle (SGLang plug-in)")


def test_explicit_choice_that_does_not_hold_is_refused_with_every_group():
    out = resolve(
        SglangArgs(V4, tp_size=8, attn_dp_size=1, ep_size=8, device="h200"), {ENV_BACKEND: "emulation:sm90_fp8xfp4"}
    )
    assert out.action == "refuse" and out.plan_env is None
    lines = out.error.splitlines()[1:]
    assert [line.split("'")[1] for line in lines] == ["moe", "moe_hash"]  # one line per layer group
    assert all("[TP_UNSUPPORTED] tp=8" in line and "Fix: Use --tp 1 --dp N" in line for line in lines)


def test_a_variant_nobody_registered_is_refused():
    out = resolve(SglangArgs(V4, **DP8), {ENV_BACKEND: "deep_gemm_mega_moe:sm90_nope"})
    assert out.action == "refuse" and "names no registered variant" in out.error


def test_sglang_pin_and_megamoe_flag_leave_sglang_alone():
    assert resolve(SglangArgs(V4, **DP8), {ENV_BACKEND: "sglang"}).action == "keep"
    both = resolve(SglangArgs(V4, moe_a2a_backend="megamoe", **DP8), {ENV_BACKEND: "emulation:sm90_fp8xfp4"})
    assert both.action == "refuse" and "--moe-a2a-backend megamoe" in both.error


def test_per_group_pins_must_name_every_built_group():
    pins = json.dumps({"moe": "emulation:sm90_fp8xfp4", "moe_hash": "sglang"})
    out = resolve(SglangArgs(V4, **DP8), {ENV_BACKEND: pins})
    assert out.action == "plan", out.error
    plan = shipped_plan({"MOE_ORACLE_SGLANG_PLAN": out.plan_env})
    assert plan_for(plan, 1) is None and plan_for(plan, 10) is not None  # layers 0-2 hash-routed: SGLang's own
    short = resolve(SglangArgs(V4, **DP8), {ENV_BACKEND: json.dumps({"moe": "emulation:sm90_fp8xfp4"})})
    assert short.action == "refuse" and "exactly the layer groups" in short.error


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("", "non-empty"),
        ("{not json", "not valid JSON"),
        ("[1]", "names no variant"),
        ('{"moe": "auto"}', "a variant or 'sglang'"),
    ],
)
def test_bad_backend_values_are_one_line(value, words):
    with pytest.raises(BadInputError) as info:
        read_request({ENV_BACKEND: value})
    assert words in str(info.value) and "\n" not in str(info.value)
    out = resolve(SglangArgs(V4, **DP8), {ENV_BACKEND: value})
    assert out.action == "refuse" and words in out.error


def test_a_plan_of_another_shape_is_refused():
    with pytest.raises(BadInputError):
        shipped_plan({"MOE_ORACLE_SGLANG_PLAN": '{"version": 2}'})
    assert shipped_plan({}) is None


def test_the_plugin_variables_are_in_the_emitted_vocabulary():
    assert {"SGLANG_PLUGINS", ENV_BACKEND} <= set(sglang_release.flags.EMITTED_ENV)


def test_the_table_names_the_pinned_variant_where_decide_chose_sglangs_own():
    """Qwen3-30B-A3B-FP8 at TP 1 on an H200: decide() keeps SGLang's own MoE; the pinned twin is what serves."""
    from pathlib import Path

    from moe_oracle.engines.sglang.plugin import received_line

    qwen3 = str(Path(__file__).resolve().parents[1] / "fixtures" / "models" / "Qwen--Qwen3-30B-A3B-FP8")
    out = resolve(SglangArgs(qwen3, device="h200"), {ENV_BACKEND: "emulation:sm90_fp8xfp8"})
    assert out.action == "plan", out.error
    group_line = next(line for line in out.table if line.startswith("  layer group moe "))
    assert "moe-oracle runtime deep_gemm_mega_moe:sm90_fp8xfp8 (accuracy class" in group_line, group_line
    plan = shipped_plan({"MOE_ORACLE_SGLANG_PLAN": out.plan_env})
    assert received_line(plan) == (
        f"moe-oracle (SGLang plug-in): this process builds its MoE layers from plan {plan['fingerprint']}: "
        "moe (layers 0-47): deep_gemm_mega_moe:sm90_fp8xfp8"
    )
