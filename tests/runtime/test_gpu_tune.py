"""``moe-oracle tune`` on the GPU (issue #31 item 1; skipped without an SM90 DeepGEMM PR #323 build).

A small real model (Laguna-XS.2-FP8: H 2048, I 512, E 256, top-8) at T = 1 and 64: the file is written, stamped, and
select's cost basis becomes "measured on this machine (date)" (with --timing steady "(date, each path alone)"); and a
kernel that fails to compile during tuning (ERNIE-4.5's H 8192 at 512 tokens, with the declared limit taken out so
that the kernel itself answers) is a recorded limit, never a crash, while the other paths are still measured.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json

import pytest
import torch

from moe_oracle.cli import main
from moe_oracle.cost import local
from tests.model.model_test_helpers import FIXTURES

pytestmark = pytest.mark.gpu


def _pr323() -> None:
    if not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("needs an SM90 GPU")
    from moe_oracle.software.probe import probe_library

    if not probe_library("deep_gemm").has("_C.fp8_fp4_mega_moe_sm90"):
        pytest.skip("needs DeepGEMM PR #323")


def _cli(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = main(list(args))
    return code, out.getvalue()


def test_tune_writes_a_stamped_file_and_select_costs_with_it(tmp_path, monkeypatch):
    _pr323()
    monkeypatch.setenv("MOE_ORACLE_CACHE_DIR", str(tmp_path))
    model = str(FIXTURES / "poolside--Laguna-XS.2-FP8")
    code, out = _cli("tune", model, "--tokens", "1,64")
    assert code == 0, out
    cal = local.read(local.default_path("h200"))
    assert cal.builds == {"deep_gemm": "deepgemm-pr323"} and cal.stamp["driver"] and cal.stamp["copy_tb_s"] > 1
    keys = {e.variant for e in cal.entries}
    assert {"deep_gemm_mega_moe:sm90_fp8xfp8", "nonfused:deepgemm_fp8_psum"} <= keys
    assert all(len(e.points) == 2 for e in cal.entries)
    code, out = _cli("select", model, "--device", "h200", "--dp", "8", "--ep", "8", "--json")
    assert code == 0, out
    assert "measured on this machine (" in json.dumps(json.loads(out))


def test_steady_timing_is_stamped_and_becomes_the_cost_basis(tmp_path, monkeypatch):
    # each path alone after 2 s of its own replays (--timing steady): the file says so, select's basis too
    _pr323()
    monkeypatch.setenv("MOE_ORACLE_CACHE_DIR", str(tmp_path))
    model = str(FIXTURES / "poolside--Laguna-XS.2-FP8")
    code, out = _cli("tune", model, "--tokens", "64", "--timing", "steady")
    assert code == 0, out
    cal = local.read(local.default_path("h200"))
    assert cal.basis is local.TimingBasis.STEADY and "each path alone" in str(cal.stamp["timing"])
    assert all(e.origin.endswith(", each path alone)") and len(e.points) == 1 for e in cal.entries)
    code, out = _cli("select", model, "--device", "h200", "--dp", "8", "--ep", "8", "--json")
    assert code == 0, out
    assert "each path alone)" in json.dumps(json.loads(out))


def test_a_kernel_that_does_not_compile_is_a_recorded_limit(monkeypatch):
    _pr323()
    import moe_oracle_backends._deep_gemm_layer as dgl

    from moe_oracle.inputs import resolve_software
    from moe_oracle.tune.measure import measure_group
    from moe_oracle.tune.plan import GroupPlan, make_plan
    from tests.oracle.helpers import manual

    orig = dgl.require_build_limits
    monkeypatch.setattr(
        dgl, "require_build_limits", lambda d, sc, key: orig(d, dataclasses.replace(sc, tokens_per_rank=1), key=key)
    )
    model = manual(hidden=8192, inter=3584, experts=64, top_k=8, fmt="fp8_block", scoring="softmax")
    sw, _ = resolve_software("installed", "local")
    plan = make_plan(model, "local", sw, (64,))
    gp = plan.groups[0]
    # the declared limit refuses T = 512 for the fused path; ask for it anyway
    paths = tuple(dataclasses.replace(p, tokens=(64, 512)) if p.key.endswith("sm90_fp8xfp8") else p for p in gp.paths)
    limits: list = []
    points, _ = measure_group(GroupPlan(gp.group, paths), limits, skew=0.0, on_step=lambda s: None)
    fused = [lim for lim in limits if lim.path.endswith("sm90_fp8xfp8")]
    assert [lim.tokens for lim in fused] == [512]
    assert "Hidden is too large" in fused[0].reason
    assert [t for t, _, _ in points["deep_gemm_mega_moe:sm90_fp8xfp8"]] == [64]
    assert any(k.startswith("nonfused:") and pts for k, pts in points.items())
