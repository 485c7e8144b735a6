"""Every fix a refused plan prints leads somewhere (issue 32 item 1, issue 29 item 4): the refusal's typed fixes
(:class:`moe_oracle.errors.Fix`, judged by :mod:`moe_oracle.launch.fix_judge`) are re-run with the flags each sets
and drops: an alternative named as planning plans, and every other one meets a different refusal, never the same.

The product is every preset and fixture x h100, h200, b200, gb200, mi355x x three layouts x both engines (1,140
plans, each refusal re-planning its alternatives: about 35 s on two cores), walked whole. Should it outgrow CI's
budget, ``MOE_ORACLE_FIX_WALK_STRIDE=N`` walks a deterministic part: the cases whose SHA-256 of
``model|device|layout|engine`` falls in the first ``1/N`` of the hash space, plus the issue's own cases.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import pytest

import moe_oracle
from moe_oracle.cli.app import main
from moe_oracle.errors import Fix, OracleError

STRIDE = int(os.environ.get("MOE_ORACLE_FIX_WALK_STRIDE", "1"))
ROOT = Path(__file__).resolve().parents[2]
PRESETS = sorted(p.name.replace("--", "/", 1) for p in (ROOT / "moe_oracle" / "presets").iterdir() if p.is_dir())
FIXTURES = sorted(
    str(p.relative_to(ROOT))
    for p in (ROOT / "tests" / "fixtures" / "models").iterdir()
    if p.is_dir() and (p / "config.json").is_file()
)
DEVICES = ("h100", "h200", "b200", "gb200", "mi355x")
LAYOUTS: dict[str, dict[str, int]] = {"default": {}, "dp8ep8": {"dp": 8, "ep": 8}, "tp8": {"tp": 8}}
ENGINES = ("vllm", "sglang")
ALWAYS = {
    ("deepseek-ai/DeepSeek-V4-Pro", "h100", "default", "vllm"),
    ("deepseek-ai/DeepSeek-V4-Pro", "h100", "default", "sglang"),
    ("tests/fixtures/models/trimmed--GLM-4.7-Flash", "h200", "tp8", "vllm"),
}
#: A fix's flag -> the keyword of :func:`moe_oracle.plan` that takes it (the engine spellings of the share too).
KEYWORDS = {
    "--tp": "tp",
    "--dp": "dp",
    "--ep": "ep",
    "--pp": "pp",
    "--nodes": "nodes",
    "--max-num-batched-tokens": "max_num_batched_tokens",
    "--memory-fraction": "memory_fraction",
    "--gpu-memory-utilization": "memory_fraction",
    "--mem-fraction-static": "memory_fraction",
    "--software": "software",
}
LAYOUT_KEYWORDS = ("tp", "dp", "ep", "pp")


def _sampled() -> list[tuple[str, str, str, str]]:
    out = []
    for model in PRESETS + FIXTURES:
        for device in DEVICES:
            for layout in LAYOUTS:
                for engine in ENGINES:
                    case = (model, device, layout, engine)
                    digest = int(hashlib.sha256("|".join(case).encode()).hexdigest()[:8], 16)
                    if case in ALWAYS or digest % STRIDE == 0:
                        out.append(case)
    return out


def _with(base: dict[str, Any], fix: Fix) -> dict[str, Any] | None:
    """``base`` with the fix's flags set (a layout replaces the whole layout) and its dropped flags left out; None
    for a fix that sets a flag the plan does not take as a keyword (an engine setting the plan chooses itself)."""
    out = dict(base)
    for name, _ in fix.dropped:
        out.pop(KEYWORDS[name], None)
    keys = [(KEYWORDS.get(name), value) for name, value in fix.flags]
    if any(key in LAYOUT_KEYWORDS for key, _ in keys):
        for key in LAYOUT_KEYWORDS:
            out.pop(key, None)
    for key, value in keys:
        if key is None:
            continue
        out[key] = value if key == "software" else float(value) if key == "memory_fraction" else int(value)
    return out


def _plan(model: str, kw: dict[str, Any]) -> OracleError | None:
    try:
        moe_oracle.plan(model, **kw)
    except OracleError as exc:
        return exc
    return None


@pytest.mark.parametrize("case", _sampled(), ids=lambda c: "-".join(c).replace("/", "_"))
def test_every_printed_fix_plans_or_meets_another_refusal(case: tuple[str, str, str, str]) -> None:
    model, device, layout, engine = case
    base: dict[str, Any] = {"device": device, "engine": engine, **LAYOUTS[layout]}
    refused = _plan(model, base)
    if refused is None:
        return
    assert refused.fix, refused.one_line()
    for fix in refused.fixes:
        assert fix.render() in refused.fix  # each typed fix is what the line prints
        if not fix.flags and not fix.dropped and fix.model is None:
            continue  # a change by hand: named as it is
        kw = _with(base, fix)
        assert kw is not None
        served = fix.model or model  # a FORMAT fix serves another checkpoint
        again = _plan(served, kw)
        shown = f"plan {served} {kw}: {fix.render()}"
        if fix.words.startswith("plans "):
            assert again is None, f"{shown} is refused: {again.one_line() if again else ''}"
        else:
            assert again is not None, f"{shown} plans, but the fix says it does not"
            assert again.message != refused.message, f"{shown} refuses the same way: {again.one_line()}"


def _run(capsys: pytest.CaptureFixture[str], args: list[str]) -> tuple[int, str]:
    code = main(args)
    return code, capsys.readouterr().err.strip()


def test_the_issue_case_is_offered_a_route_that_plans(capsys: pytest.CaptureFixture[str]) -> None:
    """#32 Why 1: DeepSeek-V4-Pro on H100 with vLLM: the printed fix is DP32+EP32 on 4 nodes, and running it plans
    (the replicas with the fused kernel do not fit, so the requested layout runs vLLM's own MoE, 18.6 GiB KV)."""
    code, err = _run(capsys, ["plan", "deepseek-ai/DeepSeek-V4-Pro", "--device", "h100", "--engine", "vllm"])
    assert code == 7 and "--dp 32 --ep 32 --nodes 4 plans DP32+EP32" in err
    wide = ["--dp", "32", "--ep", "32", "--nodes", "4"]
    code, err = _run(capsys, ["plan", "deepseek-ai/DeepSeek-V4-Pro", "--device", "h100", "--engine", "vllm", *wide])
    assert code == 0, err
    code, err = _run(capsys, ["plan", "deepseek-ai/DeepSeek-V4-Pro", "--device", "h100", "--engine", "sglang"])
    assert code == 7 and "-0.471 x" not in err and "would be -0.471" in err


def test_select_judges_its_refusals_as_plan_does(capsys: pytest.CaptureFixture[str]) -> None:
    """select's layout refusal (the engine's head check, EP beyond the experts) and memory refusal carry the fixes
    plan prints, judged the same way, through the CLI and :func:`moe_oracle.select` alike."""
    cases = [
        ["tests/fixtures/models/trimmed--GLM-4.7-Flash", "--device", "h200", "--tp", "8", "--engine", "vllm"],
        [
            "deepseek-ai/DeepSeek-V4-Flash",
            "--device",
            "h200",
            "--dp",
            "512",
            "--ep",
            "512",
            "--nodes",
            "64",
            "--engine",
            "vllm",
        ],
        ["deepseek-ai/DeepSeek-V4-Pro", "--device", "h100", "--engine", "vllm"],
    ]
    for args in cases:
        code_p, err_p = _run(capsys, ["plan", *args])
        code_s, err_s = _run(capsys, ["select", *args])
        assert code_p == code_s != 0
        assert err_s.splitlines()[-1] == err_p.splitlines()[-1]
        assert " plans " in err_s.split("Fix: ", 1)[1]
    with pytest.raises(OracleError) as api:
        moe_oracle.select("deepseek-ai/DeepSeek-V4-Pro", device="h100", engine="vllm")
    assert api.value.fixes and api.value.fixes[0].words.startswith("plans DP32+EP32")
