"""The context the engine serves (``--max-model-len``; SGLang ``--context-length``) is part of the memory fit: a
plan whose KV cache holds less than the model's context caps it in the engine's command (vLLM refuses to start
otherwise), a given one is what the fit, the concurrency table and the command use, and the engine's own flag after
``serve --`` is refused for moe-oracle's (the fit would not count it)."""

from __future__ import annotations

import json

from tests.cli.runner import cli

V4_PRO = "deepseek-ai/DeepSeek-V4-Pro"
H200_VLLM = ("--device", "h200", "--engine", "vllm")


def _argv(plan: dict) -> list[str]:
    return plan["commands"][0]["argv"]


def _value(argv: list[str], flag: str) -> str | None:
    return argv[argv.index(flag) + 1] if flag in argv else None


def test_a_plan_that_fits_only_with_a_shorter_context_caps_it_in_the_command():
    """V4-Pro on 8 x H200 with vLLM 0.33.0 alone (non-fused): 2.5 GiB of KV cache hold 480,062 tokens of the
    model's 1,048,576; the command carries --max-model-len at exactly what the fit says it holds."""
    r = cli("plan", V4_PRO, *H200_VLLM, "--software", "vllm-0.33.0", "--json")
    assert r.code == 0, r.err
    plan = json.loads(r.out)
    fit = plan["fit"]
    assert fit["verdict"] == "FITS with a shorter context" and fit["served_context"] is None
    held = fit["max_context_one_sequence"]
    assert held < fit["model_context"] == 1_048_576
    assert _value(_argv(plan), "--max-model-len") == str(held)
    assert any(n.startswith(f"--max-model-len {held}: the KV cache left per rank holds") for n in plan["notes"])


def test_a_plan_that_holds_the_whole_context_sets_no_cap():
    r = cli("plan", V4_PRO, *H200_VLLM, "--json")
    assert r.code == 0, r.err
    plan = json.loads(r.out)
    assert plan["fit"]["verdict"] == "FITS" and "--max-model-len" not in _argv(plan)


def test_a_given_context_is_the_fits_and_the_commands():
    r = cli("plan", V4_PRO, *H200_VLLM, "--max-model-len", "131072", "--json")
    assert r.code == 0, r.err
    plan = json.loads(r.out)
    fit = plan["fit"]
    assert fit["verdict"] == "FITS" and fit["served_context"] == 131_072
    assert fit["max_context_one_sequence"] == 131_072
    assert fit["concurrent_sequences_per_rank"][-1]["context"] == 131_072
    assert _value(_argv(plan), "--max-model-len") == "131072"
    text = cli("select", V4_PRO, *H200_VLLM, "--max-model-len", "131072").out
    assert "131,072 tokens of the 131,072 served (--max-model-len)" in text


def test_sglang_takes_it_as_context_length():
    r = cli("plan", V4_PRO, "--device", "h200", "--engine", "sglang", "--max-model-len", "65536", "--json")
    assert r.code == 0, r.err
    plan = json.loads(r.out)
    assert _value(_argv(plan), "--context-length") == "65536" and "--max-model-len" not in _argv(plan)


def test_a_context_longer_than_the_models_is_refused_with_a_fix_that_works():
    r = cli("plan", V4_PRO, *H200_VLLM, "--max-model-len", "2000000")
    assert r.code == 2 and r.err.count("\n") <= 1, r.err
    assert "--max-model-len 2000000 is longer than deepseek-ai/DeepSeek-V4-Pro's context (1,048,576 tokens" in r.err
    # both alternatives judged: each was re-planned and says what it plans
    assert "Fix: --max-model-len 1048576 plans DP8+EP8 with" in r.err
    assert "; or without --max-model-len 2000000 plans DP8+EP8 with" in r.err
    assert cli("plan", V4_PRO, *H200_VLLM, "--max-model-len", "1048576").code == 0


def test_serve_refuses_the_engines_own_context_flag_after_the_separator():
    for engine, flag in (("vllm", "--max-model-len"), ("sglang", "--context-length")):
        r = cli("serve", V4_PRO, "--device", "h200", "--engine", engine, "--dry-run", "--", flag, "8192")
        assert r.code == 2, r.err
        assert "use moe-oracle's --max-model-len (the memory fit counts it) instead (before --)" in r.err


def test_step_batch_refusals_name_judged_alternatives():
    """The flag refusals of the decode batch and the step budget carry typed fixes, each re-planned: every
    alternative printed plans (issue 32 item 1: flag alternatives judged like the others)."""
    flash = ("plan", "deepseek-ai/DeepSeek-V4-Flash", "--device", "b200", "--dp", "8", "--ep", "8", "--engine", "vllm")
    for given, alternatives in (
        (("--max-num-seqs", "9000"), (("--max-num-seqs", "8192"), ("--max-num-batched-tokens", "9000"))),
        (("--max-num-batched-tokens", "512"), (("--max-num-batched-tokens", "1024"), ("--max-num-seqs", "512"))),
    ):
        r = cli(*flash, *given)
        assert r.code == 2, r.err
        fix = r.err.split("Fix: ", 1)[1]
        for flag, value in alternatives:
            assert f"{flag} {value} plans DP8+EP8 with" in fix, fix
            others = [w for w in given if w != given[1]] if flag == given[0] else list(given)
            again = [*flash, *(others if flag != given[0] else []), flag, value]
            assert cli(*again).code == 0, again
