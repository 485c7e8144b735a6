"""Both engine plug-ins ask their question through the one door (:mod:`moe_oracle.answers`): the bundled
advisories are in force and the fingerprint is the one definition's.

The bug these tests would have caught (issue #28): both plug-ins called ``decide()`` bare, without the bundled
advisories, so the vLLM plug-in validated ``--moe-backend aiter_mega_moe`` for DeepSeek-V4-Flash on 8 x MI355X
with an aiter whose MegaMoEV2 delegates to ``MegaMoEIntraNodeBackend``, the combination MOA-2026-001 says gives
wrong results, while ``moe-oracle select`` rejected it KNOWN_BAD. The aiter build here is a declared software
profile (``all``: every known build, aiter with the delegate), not a patched probe.
"""

from __future__ import annotations

import ast
from pathlib import Path

import moe_oracle
from moe_oracle.decide.advisories import bundled_advisories
from moe_oracle.engines.sglang.plugin import SglangArgs, launch_decision, resolve
from moe_oracle.engines.sglang.shipped import read_request
from moe_oracle.engines.vllm import plugin as P
from moe_oracle.rules import ReasonCode
from tests.engines.test_plugin_logic import snap

ENGINES = Path(__file__).resolve().parents[2] / "moe_oracle" / "engines"
MI355X = {"device": "mi355x", "arch": "gfx950", "env": {"VLLM_ROCM_USE_AITER": "1"}}


def test_vllm_plugin_refuses_aiter_mega_moe_known_bad_under_moa_2026_001() -> None:
    out = P.resolve(snap(**MI355X, moe_backend="aiter_mega_moe", software="all"))
    assert out.action == "refuse", out.table
    assert "[KNOWN_BAD] MOA-2026-001" in (out.error or "")
    assert any("KNOWN_BAD" in line and "MOA-2026-001" in line for line in out.table)
    verdict = moe_oracle.check(
        "deepseek-ai/DeepSeek-V4-Flash",
        device="mi355x",
        dp=8,
        ep=8,
        engine="vllm",
        software="all",
        env={"VLLM_ROCM_USE_AITER": "1"},
        backend="aiter_mega_moe",
    )
    assert not verdict.eligible and ReasonCode.KNOWN_BAD in verdict.codes


def test_vllm_plugin_still_validates_aiter_mega_moe_where_the_advisory_does_not_apply() -> None:
    """The release profile's aiter (v0.1.20, no delegate) is outside MOA-2026-001: the explicit choice stands."""
    out = P.resolve(snap(**MI355X, moe_backend="aiter_mega_moe", software="vllm-0.33.0"))
    assert out.action == "set" and out.moe_backend is None, out.table


def test_vllm_plugin_fingerprint_covers_the_bundled_advisories() -> None:
    from dataclasses import replace

    asked = snap(**MI355X, software="all")
    out = P.resolve(asked)
    desc, dep, sw = P.snapshot_inputs(replace(asked, env=P._with_vllm_defaults(asked.env)))
    from moe_oracle.answers.door import answer
    from moe_oracle.cost.model import Workload
    from moe_oracle.decide.question import Question
    from moe_oracle.rules import Engine

    question = Question.of(
        desc, dep, sw, engine=Engine.VLLM, workload=Workload.default(dep.parallel.tokens_per_rank, decode_tokens=256)
    )
    assert question.missing_bundled == ()
    assert out.fingerprint == answer(question).fingerprint


def test_sglang_plugin_decides_with_the_bundled_advisories() -> None:
    """MOA-2026-001 concerns vLLM's rebinding only, so through SGLang it neither rejects nor is noted; what must hold
    is that the SGLang plug-in's question carries every bundled advisory (its record says so) and that its verdict
    on aiter_mega_moe is the one ``select --engine sglang`` gives for the same software."""
    args = SglangArgs(
        model_path="deepseek-ai/DeepSeek-V4-Flash",
        tp_size=8,
        attn_dp_size=8,
        ep_size=8,
        prefill_tokens_per_rank=2048,
        device="mi355x",
        software="all",
    )
    decision = launch_decision(args, read_request({}))
    assert decision.question.missing_bundled == ()
    assert {a.id for a in decision.question.advisories} >= {a.id for a in bundled_advisories()}
    theirs = {c.key: c.failures for gd in decision.groups for c in gd.candidates}
    ours = moe_oracle.select(
        "deepseek-ai/DeepSeek-V4-Flash",
        device="mi355x",
        dp=8,
        ep=8,
        engine="sglang",
        software="all",
        max_num_batched_tokens=2048,
    )
    mine = {c.key: c.failures for gd in ours.decision.groups for c in gd.candidates}
    key = "aiter_mega_moe:gfx950_a8w4"
    assert [r.code for r in theirs[key]] == [r.code for r in mine[key]]
    out = resolve(args, {"MOE_ORACLE_SGLANG_BACKEND": key})
    assert out.action == "refuse" and key in (out.error or "")


def test_a_site_advisory_reaches_the_sglang_plugins_verdict() -> None:
    """The plug-ins' route reasons carry the decision's KNOWN_BAD rejections (before, only the vLLM rules'
    reasons and the kernel's reached a refusal line, so an explicit choice under an advisory read as validated)."""
    from moe_oracle.answers.door import answer
    from moe_oracle.decide.advisories import Advisory, AdvisorySet
    from moe_oracle.engines.routes import route_reasons
    from moe_oracle.rules.engine import MOE_ORACLE_ROUTE

    decision = launch_decision(
        SglangArgs(model_path="deepseek-ai/DeepSeek-V4-Flash", tp_size=8, attn_dp_size=8, ep_size=8, device="b200",
                   software="sglang-0.5.23+moe-oracle"),
        read_request({}),
    )  # fmt: skip
    site = Advisory(id="SITE-1", title="site", link="https://example.invalid", backend="deep_gemm_mega_moe")
    question = decision.question.__class__(
        **{**decision.question.__dict__, "advisories": AdvisorySet((*bundled_advisories(), site))}
    )
    judged = answer(question).decision
    gd = judged.groups[0]
    cand = next(c for c in gd.candidates if c.spec.backend == "deep_gemm_mega_moe")
    assert any(r.code is ReasonCode.KNOWN_BAD for r in route_reasons(judged, gd, cand, MOE_ORACLE_ROUTE))


def _calls_decide(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    lines = []
    for node in ast.walk(tree):
        names = {a.name for a in node.names} if isinstance(node, ast.ImportFrom) else set()
        if names & {"decide", "decide_automatically", "decide_with_override"}:
            lines.append(node.lineno)
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if name in ("decide", "decide_automatically", "decide_with_override"):
                lines.append(node.lineno)
    return lines


def test_no_engine_module_calls_decide() -> None:
    found = {str(p.relative_to(ENGINES)): lines for p in sorted(ENGINES.rglob("*.py")) if (lines := _calls_decide(p))}
    assert not found, f"engine modules that decide around the door (moe_oracle.answers): {found}"
