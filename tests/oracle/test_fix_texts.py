"""Every declared fix text names something to do: a flag, a command, a checkpoint, an environment variable."""

from __future__ import annotations

import re

import pytest

from moe_oracle.registry import load_registry
from moe_oracle.releases import engine_profile
from moe_oracle.rules import Engine
from tests.oracle.helpers import GLM5_FP8, run

ACTIONABLE = re.compile(r"--[a-z]|moe-oracle |[Ii]nstall|pip |[A-Z][A-Z0-9_]{5,}|checkpoint")


def _declared() -> list[tuple[str, str]]:
    out = []
    for v in load_registry().variants:
        out += [(f"{v.key} {c.code.value}", c.remediation) for c in v.checks if c.remediation]
    for engine in (Engine.VLLM, Engine.SGLANG):
        profile = engine_profile(engine)
        assert profile is not None
        for s in profile.supports:
            out.append((f"{engine.value} {s.backend}", s.remediation))
            out += [(f"{engine.value} {s.backend} {c.code.value}", c.remediation) for c in s.checks if c.remediation]
    return out


@pytest.mark.parametrize("where,text", _declared(), ids=lambda x: x if isinstance(x, str) and len(x) < 60 else "")
def test_fix_text_names_an_action(where: str, text: str) -> None:
    assert ACTIONABLE.search(text), f"{where}: {text!r}"


def test_fp32_scaled_fp8_on_b200_fix_names_the_lossy_opt_in() -> None:
    d = run(GLM5_FP8, "b200", dp=8, ep=8, engine="sglang")
    fix = next(
        r.remediation
        for c in d.main.candidates
        if c.spec.key == "deep_gemm_mega_moe:sm100_fp8xfp8"
        for r in c.failures
        if r.code.value == "QUANT_UNSUPPORTED"
    )
    assert "--allow-lossy-conversion" in fix and "--quantization modelopt_fp4" in fix
