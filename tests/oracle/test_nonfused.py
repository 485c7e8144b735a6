"""The measured non-fused path is a ranked candidate; the workload regime enters the decision."""

from __future__ import annotations

import pytest

from moe_oracle.cost.calibration import load_calibrations
from moe_oracle.cost.model import Workload, estimate_us
from moe_oracle.decide.record import decision_to_json
from moe_oracle.inputs import DeploymentFlags, build_deployment
from moe_oracle.model.resolve import resolve_model
from moe_oracle.model.types import QuantSpec
from tests.oracle.helpers import GLM5_FP8, V4_FLASH, chosen, run

FP8 = QuantSpec(format="fp8_block", block=(128, 128), scale_format="fp32")


def _v4_fp8():
    base = resolve_model(V4_FLASH)
    return base.model_copy(update={"layer_groups": (base.main_group.model_copy(update={"weight_quant": FP8}),)})


@pytest.mark.parametrize("model", [V4_FLASH, GLM5_FP8])
def test_measured_points_are_reproduced_exactly(model):
    g = resolve_model(model).main_group
    dep, _ = build_deployment(DeploymentFlags(device="h200", gpus_per_node=1))
    shape = (g.hidden_size, g.moe_intermediate_size, g.num_experts, g.top_k)
    cals = [c for c in load_calibrations() if c.device == "h200" and c.ep == 1]
    mine = [c for c in cals if (c.hidden_size, c.moe_intermediate_size, c.num_experts, c.top_k) == shape]
    assert len(mine) == 4  # both fused variants and both non-fused layouts measured at this shape
    for cal in mine:
        for t, _, us in cal.points:
            assert estimate_us(cal.variant, g, dep, t).us == pytest.approx(us)


def test_an_unmeasured_shape_is_costed_from_the_shapes_measured():
    from moe_oracle.cost.calibration import fit_pooled

    g = resolve_model(V4_FLASH).main_group.model_copy(update={"hidden_size": 5120, "weight_quant": FP8})
    dep, _ = build_deployment(DeploymentFlags(device="h200", gpus_per_node=1))
    est = estimate_us("deep_gemm_mega_moe:sm90_fp8xfp8", g, dep, 64)
    cals = load_calibrations()
    fused = "deep_gemm_mega_moe:sm90_fp8xfp8"  # every shape measured on it (the fused kernel refuses 1024 experts)
    measured = {
        (c.hidden_size, c.moe_intermediate_size, c.num_experts, c.top_k)
        for c in cals
        if c.device == "h200" and c.ep == 1 and c.variant == fused
    }
    assert f"fit over {len(measured)} other shapes" in est.basis and est.measured and "sweeps in" in est.basis
    both = tuple(c for c in load_calibrations() if c.variant == "deep_gemm_mega_moe:sm90_fp8xfp8" and c.ep == 1)
    assert fit_pooled(both).num_points == sum(len(c.points) for c in both)
    # between V4-Flash (H 4096) and GLM-5 (H 6144, I and E as here): between their measured times at T = 64
    at = {c.hidden_size: dict((t, us) for t, _, us in c.points)[64] for c in both if c.num_experts == 256}
    assert at[4096] < est.us < at[6144]


@pytest.mark.parametrize(
    ("workload", "expected"),
    [
        ("8", "deep_gemm_mega_moe:sm90_fp8xfp8"),  # fused wins for T = 8 to 128 (h200.md §6)
        ("128", "deep_gemm_mega_moe:sm90_fp8xfp8"),
        ("1", None),  # the m_indices graph beats the fused kernel at T = 1
        ("8192", None),
        ("prefill", None),
    ],
)
def test_workload_decides_fused_or_not(workload, expected):
    from moe_oracle.decide.selection import decide
    from moe_oracle.releases.profiles import named_profile

    dep, _ = build_deployment(DeploymentFlags(device="h200", gpus_per_node=1))
    wl = Workload.parse(workload, dep.parallel.tokens_per_rank)
    g = decide(_v4_fp8(), dep, named_profile("all"), workload=wl).main
    assert (g.chosen.spec.key if g.chosen else None) == expected
    assert g.nonfused is not None
    if expected is None:
        assert g.fallback == g.nonfused.description and "slower than nonfused:" in g.notes[0]
    else:
        assert "beats the best measured non-fused path" in g.notes[0]


def test_json_carries_the_nonfused_estimate():
    d = run(GLM5_FP8, "h200", gpus_per_node=1)
    doc = decision_to_json(d)
    g = doc["layer_groups"][0]
    assert g["nonfused"]["path"].startswith("nonfused:deepgemm_fp8_") and g["nonfused"]["expected_us"] > 0
    assert doc["workload"]["label"].startswith("mixed")


def test_nonfused_is_ranked_only_where_measured():
    # EP8: the non-fused path also pays an all-to-all, not measured here
    d = run(GLM5_FP8, "h200", dp=8, ep=8)
    assert chosen(d) == "deep_gemm_mega_moe:sm90_fp8xfp8" and d.main.nonfused is None
    # vLLM's own non-fused FP8 kernels (FlashInfer CUTLASS / Triton) were not measured
    assert run(GLM5_FP8, "h200", gpus_per_node=1, engine="vllm").main.nonfused is None
    # SGLang's non-fused SM90 FP8 path is DeepGEMM's m_indices layout
    g = run(GLM5_FP8, "h200", gpus_per_node=1, engine="sglang", software="sglang-0.5.23").main
    assert g.nonfused is not None and g.nonfused.key == "nonfused:deepgemm_fp8_m_indices"


def test_override_keeps_the_fused_kernel_even_when_slower():
    d = run(GLM5_FP8, "h200", gpus_per_node=1, override="deep_gemm_mega_moe")
    assert chosen(d) == "deep_gemm_mega_moe:sm90_fp8xfp8"
    assert "slower than nonfused:" in d.main.notes[0]


@pytest.mark.parametrize("text", ["bogus", "0:1", "9000:1", "8:0", "8:x"])
def test_bad_workload(text):
    with pytest.raises(ValueError):
        Workload.parse(text, 8192)


def test_stored_calibration_is_the_committed_sweep():
    """One source of truth: the H200 EP1 entries are exactly the points of the committed sweep runs, merged in the
    order they were measured (a later run of a shape replaces the points at the T it measured and adds the rest),
    plus, for the shapes no sweep measured, the entries of the committed ``moe-oracle tune`` file, plus the sweeps of
    the expert-count probe's synthetic shapes (``2026-12-03/probe_experts``; Laguna-XS.2's sweep there is not
    written: that family's entries stay the tune file's)."""
    import json
    import sys
    from pathlib import Path

    from moe_oracle.cost import local

    root = Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(root / "benchmarks"))
    try:
        from fit_cost_model import calibrations, merge_points
    finally:
        sys.path.remove(str(root / "benchmarks"))

    def key(c):
        return (c.variant, c.device, c.ep, c.hidden_size, c.moe_intermediate_size, c.num_experts, c.top_k)

    stored = {key(c): c for c in load_calibrations()}
    folder = root / "benchmarks/results/h200/2026-12-01"
    # Qwen3-30B-A3B re-measured on 2026-12-02 (after the SwiGLU grid fix), Kimi-K2 extended to T = 4096 and 8192;
    # DeepSeek-V3, GLM-4.5 and ERNIE-4.5-21B-A3B measured on 2026-12-03 after they were predicted
    days = ("2026-12-01", "2026-12-02", "2026-12-03/fresh")
    sweeps = [p for d in days for p in sorted((folder.parent / d).glob("fused_vs_nonfused_*.json"))]
    assert len(sweeps) >= 10
    merged, last = {}, {}
    for path in sweeps:
        for cal in calibrations(json.loads(path.read_text()), path.name):
            merged[key(cal)] = merge_points(merged[key(cal)], cal) if key(cal) in merged else cal
            last[key(cal)] = path
    for k, cal in merged.items():
        assert stored[k].points == cal.points, k
        assert last[k].relative_to(root).as_posix() in stored[k].source, (last[k], stored[k].source)
    swept = {k[3:] for k in merged}
    assert len(swept) == 11  # the seven shapes of 2026-12-01, Qwen3.5-397B-A17B and the three of 2026-12-03
    tuned = [c for c in local.read(folder / "tune_calibration_h200.json").entries if key(c)[3:] not in swept]
    assert len({key(c)[3:] for c in tuned}) == 5  # ERNIE-4.5, Hunyuan, Qwen2-57B, Laguna-XS.2, MiMo-V2-Flash shapes
    for cal in tuned:
        assert stored[key(cal)].points == cal.points and "tune_calibration_h200.json" in stored[key(cal)].source
    probes = [
        cal
        for path in sorted((folder.parent / "2026-12-03/probe_experts").glob("fused_vs_nonfused_probe-*.json"))
        for cal in calibrations(json.loads(path.read_text()), path.name)
    ]
    assert len({key(c)[3:] for c in probes}) == 6 and not {key(c)[3:] for c in probes} & swept
    for cal in probes:
        assert stored[key(cal)].points == cal.points and "probe_experts" in stored[key(cal)].source
    total = 4 * len(swept) + len(tuned) + len(probes)
    assert sum(c.device == "h200" and c.ep == 1 for c in stored.values()) == total


def test_a_later_sweep_replaces_its_points_and_keeps_the_others():
    import dataclasses
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(root / "benchmarks"))
    try:
        from fit_cost_model import merge_points
    finally:
        sys.path.remove(str(root / "benchmarks"))
    first = next(c for c in load_calibrations() if c.device == "h200" and len(c.points) >= 3)
    early = dataclasses.replace(first, points=((1, 8.0, 10.0), (8, 50.0, 20.0)), source="a.json (x)")
    again = dataclasses.replace(first, points=((1, 8.0, 11.0), (8, 50.0, 21.0)), source="b.json (x)")
    assert merge_points(early, again) == again  # a re-measurement of the same T: the later run alone
    more = dataclasses.replace(first, points=((8, 50.0, 22.0), (4096, 128.0, 900.0)), source="c.json (x)")
    got = merge_points(early, more)
    assert (
        got.points == ((1, 8.0, 10.0), (8, 50.0, 22.0), (4096, 128.0, 900.0)) and got.source == "a.json (x); c.json (x)"
    )
    assert merge_points(got, more) == got  # the same run merged again (fit_cost_model.py --write re-run): unchanged


def test_decode_is_a_fixed_cost_plus_a_cost_per_active_expert():
    from moe_oracle.cost.calibration import decode_fit

    for cal in load_calibrations():
        # the expert-count probe's synthetic shapes are swept to T = 128 with as few as 64 experts, all active from
        # T = 16, where more tokens add MMA work and no active expert: not decode (up to 11.8% off this fit)
        probe = "probe_experts" in cal.source
        if cal.device == "h200" and cal.ep == 1 and not cal.variant.endswith("m_indices") and not probe:
            f = decode_fit(cal)
            # worst of the 7 shapes x 3 paths measured: Qwen3-235B-A22B through sm90_fp8xfp4, 7.7%
            assert f.max_rel_error < 0.08 and f.fixed_us > 0 and f.us_per_expert > 0, (cal.variant, f)


def test_reported_ep8_points_are_marked_unmeasured_and_unverifiable():
    cals = [c for c in load_calibrations() if c.device == "h200" and c.ep == 8]
    # not measured here, and the source says it cannot be checked (no public pull request was found)
    assert cals and all(not c.measured and "not verifiable" in c.source for c in cals)


def test_max_num_seqs_is_the_decode_batch():
    from tests.cli.runner import cli

    base = ("select", GLM5_FP8, "--device", "h200", "--dp", "8", "--ep", "8", "--software", "all")
    out = cli(*base, "--max-num-seqs", "8")
    assert out.code == 0 and "decode 8 + prefill 8192" in out.out, out.err
    out = cli(*base, "--max-num-seqs", "8", "--decode-tokens", "4")
    assert "decode 4 + prefill 8192" in out.out  # an explicit --decode-tokens wins
    out = cli(*base, "--max-num-seqs", "0")
    assert out.code == 2 and "Traceback" not in out.err


def test_beyond_the_last_measured_t_the_cost_grows_linearly():
    from moe_oracle.cost.model import interpolate

    (cal,) = [
        c
        for c in load_calibrations()
        if c.variant == "nonfused:deepgemm_fp8_psum"
        and c.device == "h200"
        and (c.hidden_size, c.num_experts, c.top_k) == (4096, 256, 6)
    ]
    pts = dict((t, us) for t, _, us in cal.points)
    slope = (pts[8192] - pts[4096]) / 4096
    assert interpolate(cal, 16384) == pytest.approx(pts[8192] + slope * 8192)
    assert interpolate(cal, 1) == pts[1] and interpolate(cal, 8192) == pts[8192]


def test_the_decision_says_which_path_wins_at_each_batch_size():
    g = run(GLM5_FP8, "h200", gpus_per_node=1).main
    (note,) = [n for n in g.notes if n.startswith("cheapest per batch")]
    # the GLM-5 sweep: m_indices at T = 1, fused FP8 for T = 2..1024, psum from 2048 (docs/performance.md §4)
    assert (
        "T 1: nonfused:deepgemm_fp8_m_indices, T 2-1024: deep_gemm_mega_moe:sm90_fp8xfp8, "
        "T 2048-8192: nonfused:deepgemm_fp8_psum" in note
    )
    # a token budget of one: one batch size, one winner, no note
    small = run(GLM5_FP8, "h200", gpus_per_node=1, max_num_batched_tokens=1).main
    assert not any(n.startswith("cheapest per batch") for n in small.notes)
