"""Issue 24's done-when on a real Qwen3-MoE FP8 checkpoint config: select picks sm90_fp8xfp8 on 8 x H200 and
both engines get a plan that launches it."""

from __future__ import annotations

import json

import pytest

from tests.cli.runner import cli
from tests.model.model_test_helpers import FIXTURES

QWEN3_235B_FP8 = str(FIXTURES / "Qwen--Qwen3-235B-A22B-FP8")
ARGS = ["--device", "h200", "--dp", "8", "--ep", "8"]


@pytest.mark.parametrize(("engine", "needle"), [("sglang", "--moe-a2a-backend megamoe"), ("vllm", "sm90_fp8xfp8")])
def test_qwen3_235b_fp8_on_8xh200(engine, needle):
    s = cli("select", QWEN3_235B_FP8, *ARGS, "--engine", engine, "--json")
    assert s.code == 0, s.err
    assert json.loads(s.out)["chosen"] == {"backend": "deep_gemm_mega_moe", "variant": "sm90_fp8xfp8"}
    p = cli("plan", QWEN3_235B_FP8, *ARGS, "--engine", engine)
    assert p.code == 0, p.err
    assert "deep_gemm_mega_moe (sm90_fp8xfp8)" in p.out and needle in p.out
