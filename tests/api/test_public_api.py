"""The public API (``moe_oracle.select/check/plan``) answers exactly what the CLI answers, with the CLI's keywords,
defaults, validation and typed errors, and ``import moe_oracle`` stays cheap."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import moe_oracle
from moe_oracle.inputs import RELEVANT_ENV
from moe_oracle.rules import ReasonCode
from tests.cli.runner import cli

FLASH = "deepseek-ai/DeepSeek-V4-Flash"

#: The questions of issue #28's "done when": the API's document and fingerprint are the CLI's.
SAME_AS_CLI = [
    (FLASH, {"device": "h200", "dp": 8, "ep": 8, "engine": "vllm"}),
    (FLASH, {"device": "b200", "dp": 8, "ep": 8, "engine": "sglang"}),
    (FLASH, {"device": "mi355x", "dp": 8, "ep": 8, "engine": "vllm"}),
    ("zai-org/GLM-5-FP8", {"device": "h200", "dp": 8, "ep": 8}),
]


@pytest.fixture(autouse=True)
def _no_shell_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI runner drops the shell's relevant variables; so does the API's question here."""
    for key in RELEVANT_ENV:
        monkeypatch.delenv(key, raising=False)


def _argv(model: str, kw: dict[str, object]) -> list[str]:
    out = [model]
    for key, value in kw.items():
        out += [f"--{key.replace('_', '-')}", str(value)]
    return out


@pytest.mark.parametrize(("model", "kw"), SAME_AS_CLI, ids=lambda v: v if isinstance(v, str) else v.get("device"))
def test_select_is_the_clis_document_and_fingerprint(model: str, kw: dict[str, object]) -> None:
    r = cli("select", *_argv(model, kw), "--json")
    assert r.code == 0, r.err
    shown = json.loads(r.out)
    got = moe_oracle.select(model, **kw)  # type: ignore[arg-type]
    assert got.to_dict() == shown
    assert got.fingerprint == shown["fingerprint"]
    assert got.to_dict() is not got.to_dict()  # a copy: the result is frozen


def test_the_mi355x_answer_carries_moa_2026_001() -> None:
    got = moe_oracle.select(FLASH, device="mi355x", dp=8, ep=8, engine="vllm")
    hits = {a.id: a for a in got.advisories}
    assert "MOA-2026-001" in hits and hits["MOA-2026-001"].variants == (got.chosen,)
    assert any("MOA-2026-001" in note for note in got.to_dict()["advisory_notes"])
    # where the aiter build has the facade's delegate (every known build: software 'all'), it rejects the variant
    every = moe_oracle.select(FLASH, device="mi355x", dp=8, ep=8, engine="vllm", software="all")
    applied = [a for a in every.advisories if a.id == "MOA-2026-001"]
    assert applied and applied[0].applies and "aiter_mega_moe:gfx950_a8w4" in applied[0].variants
    rejected = {r.candidate: r.codes for g in every.groups for r in g.rejected}
    assert ReasonCode.KNOWN_BAD in rejected["aiter_mega_moe:gfx950_a8w4"]


def test_check_gives_every_reason_with_its_enum_values_rule_and_fix() -> None:
    verdict = moe_oracle.check(
        FLASH, device="mi355x", dp=8, ep=8, engine="vllm", software="all", backend="aiter_mega_moe"
    )
    assert not verdict.eligible and verdict.selection is None
    assert ReasonCode.KNOWN_BAD in verdict.codes
    bad = next(r for r in verdict.reasons if r.code is ReasonCode.KNOWN_BAD)
    assert bad.message.startswith("MOA-2026-001") and bad.rule and bad.remediation
    r = cli("select", FLASH, "--device", "mi355x", "--dp", "8", "--ep", "8", "--engine", "vllm", "--software", "all",
            "--moe-backend", "aiter_mega_moe")  # fmt: skip
    assert r.code == 3 and verdict.refusal is not None and verdict.refusal in r.err
    assert verdict.to_dict()["exit_code"] == 3
    ok = moe_oracle.check(FLASH, device="mi355x", dp=8, ep=8, engine="vllm", backend="aiter_mega_moe")
    assert ok.eligible and ok.selection is not None and all(g.eligible for g in ok.groups)
    shown = cli("select", FLASH, "--device", "mi355x", "--dp", "8", "--ep", "8", "--engine", "vllm",
                "--moe-backend", "aiter_mega_moe", "--json")  # fmt: skip
    assert ok.to_dict() == json.loads(shown.out) and ok.fingerprint == json.loads(shown.out)["fingerprint"]


def test_plan_is_the_clis_plan() -> None:
    shown = cli("plan", FLASH, "--device", "h200", "--dp", "8", "--ep", "8", "--engine", "vllm", "--json")
    assert shown.code == 0, shown.err
    got = moe_oracle.plan(FLASH, device="h200", dp=8, ep=8, engine="vllm")
    assert got.to_dict() == json.loads(shown.out)
    assert got.fingerprint == moe_oracle.select(FLASH, device="h200", dp=8, ep=8, engine="vllm").fingerprint
    assert got.argv[:2] == ("vllm", "serve") and got.fit.fits


@pytest.mark.parametrize(
    ("kw", "words"),
    [
        ({"dp": 0}, ["dp=0"]),
        ({"bogus": 1}, ["unknown keyword", "bogus"]),
        ({"engine": "tensorrt"}, ["engine="]),
        ({"workload": "sometimes"}, ["workload"]),
        ({"env": {"1BAD": "x"}}, ["env"]),
    ],
)
def test_a_bad_keyword_is_one_bad_input_error_naming_it(kw: dict[str, object], words: list[str]) -> None:
    with pytest.raises(moe_oracle.BadInputError) as err:
        moe_oracle.select(FLASH, device="h200", **kw)  # type: ignore[arg-type]
    assert err.value.exit_code == 2 and err.value.fix
    for word in words:
        assert word in str(err.value)


def test_errors_are_the_clis() -> None:
    with pytest.raises(moe_oracle.OverrideRefusedError) as refused:
        moe_oracle.select(FLASH, device="h200", dp=8, ep=8, moe_backend="aiter_mega_moe")
    assert refused.value.exit_code == 3 and refused.value.trail
    r = cli("select", FLASH, "--device", "h200", "--dp", "8", "--ep", "8", "--moe-backend", "aiter_mega_moe")
    assert r.code == 3 and refused.value.one_line() in r.err
    with pytest.raises(moe_oracle.DeploymentDoesNotFitError) as big:
        moe_oracle.select("deepseek-ai/DeepSeek-V4-Pro", device="h200", dp=1, ep=1, engine="vllm")
    assert big.value.exit_code == 7 and big.value.selection.fit is not None and not big.value.selection.fit.fits


def test_engine_spellings_and_defaults_are_the_clis() -> None:
    native = moe_oracle.select(FLASH, device="h200", dp=8, ep=8, engine="vllm")
    spelled = moe_oracle.select(FLASH, device="h200", data_parallel_size=8, enable_expert_parallel=True, engine="vllm")
    assert native.fingerprint == spelled.fingerprint
    proposed = moe_oracle.select(FLASH, device="h200", engine="vllm")  # no layout keyword: the oracle proposes one
    assert "layout_chosen" in proposed.to_dict()


def test_import_is_cheap_and_select_loads_neither_torch_nor_the_launch_plans() -> None:
    """``import moe_oracle`` loads no click, pydantic or torch; ``moe_oracle.select`` (here with a layout whose EP
    crosses a domain, so the replica step runs too) loads no torch, no vendor library and no launch-plan package
    (``moe_oracle.launch``, formerly ``moe_oracle.plan``; the fit has its own package)."""
    code = (
        "import sys, moe_oracle\n"
        "assert not [m for m in sys.modules if m.split('.')[0] in ('torch', 'click', 'pydantic')], 'import'\n"
        f"moe_oracle.select({FLASH!r}, device='h200', nodes=2, dp=16, ep=16, engine='vllm')\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in\n"
        "               ('torch', 'vllm', 'sglang', 'triton', 'deep_gemm', 'aiter', 'mori', 'flashinfer'))\n"
        "assert not heavy, heavy\n"
        "plans = sorted(m for m in sys.modules if m.startswith(('moe_oracle.launch', 'moe_oracle.plan')))\n"
        "assert not plans, plans\n"
        "assert 'moe_oracle.fit.settle' in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def test_every_public_name_resolves() -> None:
    assert set(moe_oracle.__all__) == {"__version__", *moe_oracle._PUBLIC}
    for name in moe_oracle.__all__:
        assert getattr(moe_oracle, name) is not None
    assert moe_oracle.BadInputError is __import__("moe_oracle.errors").errors.BadInputError


def test_dropping_the_bundled_advisories_is_said_in_the_result() -> None:
    """A typed question built with another advisory set (here none) is answered, but its document names every
    bundled advisory it lacks, and its fingerprint is not the one with them."""
    from dataclasses import replace

    from moe_oracle.answers.door import answer
    from moe_oracle.decide.advisories import bundled_advisories

    full = moe_oracle.select(FLASH, device="mi355x", dp=8, ep=8, engine="vllm", software="all")
    assert "bundled_advisories_missing" not in full.to_dict()
    bare = answer(replace(full.decision.question, advisories=()))
    doc = bare.to_dict()
    assert doc["bundled_advisories_missing"] == [a.id for a in bundled_advisories()]
    assert bare.fingerprint != answer(full.decision.question).fingerprint
    codes = {c.key: c.failures for g in bare.decision.groups for c in g.candidates}
    assert all(r.code is not ReasonCode.KNOWN_BAD for r in codes["aiter_mega_moe:gfx950_a8w4"])
