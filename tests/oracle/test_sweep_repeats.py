"""The repeatability of one sweep (``benchmarks/sweep_repeats.py``), the probe sweeps predicted from the sixteen shapes
(``cost_model_loso.py --probes``), and the sweep reader's handling of a run that measured only some paths: the
committed outputs are what the scripts print now, and docs/performance.md §17 quotes them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RES = ROOT / "benchmarks/results/h200"
PROBE = RES / "2026-12-03/probe"
#: (earlier, later) sweeps of one shape, as §17.3 compares them
PAIRS = (
    ("2026-12-01/fused_vs_nonfused_minimax-m2.json", "repeat/fused_vs_nonfused_minimax-m2.json"),
    ("2026-12-02/fused_vs_nonfused_qwen3-30b-a3b.json", "repeat/fused_vs_nonfused_qwen3-30b-a3b.json"),
    ("2026-12-03/fresh/fused_vs_nonfused_ernie-4.5-21b-a3b.json", "repeat/fused_vs_nonfused_ernie-4.5-21b-a3b.json"),
    (
        "2026-12-03/fresh/fused_vs_nonfused_ernie-4.5-21b-a3b_large_t.json",
        "repeat/fused_vs_nonfused_ernie-4.5-21b-a3b.json",
    ),
    ("2026-12-01/fused_vs_nonfused_glm-5-fp8.json", "repeat/fused_vs_nonfused_glm-5.json"),
    ("2026-12-03/fresh/fused_vs_nonfused_deepseek-v3.json", "repeat/fused_vs_nonfused_deepseek-v3.json"),
)


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=ROOT)


def test_repeats_are_the_committed_result_and_the_docs_quote_them():
    out = run("benchmarks/sweep_repeats.py", *(f"{RES / a}:{PROBE / b}" for a, b in PAIRS))
    assert out.returncode == 0, out.stderr
    saved = (PROBE / "sweep_repeats.txt").read_text()
    assert out.stdout == saved
    summary = saved.split("\n\n")[-1]
    assert "| 1980 MHz in every round | 56 | 6.3% / 0.5% | 3.2% / 0.6% |" in summary
    assert "| lowered by the power limit | 18 | 7.4% / 1.2% | 8.5% / 1.7% |" in summary
    docs = (ROOT / "docs/performance.md").read_text()
    assert all(line in docs for line in summary.splitlines() if line.startswith("|"))


def test_probes_are_the_committed_result():
    out = run("benchmarks/cost_model_loso.py", "--probes", str(PROBE), str(PROBE / "repeat"), str(PROBE / "h2048"))
    assert out.returncode == 0, out.stderr
    saved = (RES / "2026-12-03/model/cost_model_probes.txt").read_text()
    assert out.stdout == saved
    # §17.2: the m_indices layout of the four H probes, in no fit, within 3.2% with the padding-load term (2.8% for
    # the three of §17.2 before the expert-count probe joined the fit, §18.3)
    rows = [line.split(" | ") for line in saved.splitlines() if line.startswith("| H ") and "| m_indices |" in line]
    assert len(rows) == 13 and max(abs(float(r[5].rstrip("%"))) for r in rows) <= 3.2
    # §18.4: in one call (the last folder), H 4096 (MiMo-V2-Flash) runs 8-16% less time per padded TFLOP on the
    # fused FP8 kernel than the H 2048 probe, at every T
    mimo, h2048 = (
        fused_per_tflop(saved, "XiaomiMiMo/MiMo-V2-Flash"),
        fused_per_tflop(saved, "H 2048, I 2048, E 256, top-8"),
    )
    assert all(mimo[t] < 0.93 * h2048[t] for t in (2048, 4096, 8192))


def fused_per_tflop(saved: str, shape: str) -> dict[int, float]:
    """T -> the fused FP8 kernel's us per padded TFLOP for ``shape`` in cost_model_probes.txt (a later folder's row
    replaces an earlier one's)."""
    rows = (line.strip("| ").split(" | ") for line in saved.splitlines() if line.startswith(f"| {shape} | fused FP8 |"))
    return {int(r[2]): float(r[6]) for r in rows}


def test_repeats_refuse_what_is_not_a_pair_of_sweeps(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"model": 3}))
    for arg, text in (("one.json", "two sweep files joined by ':'"), (f"{bad}:{bad}", "not a fused_vs_nonfused.py")):
        out = run("benchmarks/sweep_repeats.py", arg)
        assert out.returncode == 2 and text in out.stderr and "Traceback" not in out.stderr


def test_the_sweep_refuses_a_fused_variant_it_does_not_have():
    pytest.importorskip("torch")
    out = run("benchmarks/fused_vs_nonfused.py", "--fused", "fp8,fp16")
    assert out.returncode == 2 and "--fused 'fp8,fp16': comma-separated, of fp8, fp4" in out.stderr
    assert "Traceback" not in out.stderr


def test_a_sweep_that_left_a_path_out_gives_no_calibration_for_it():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from fit_cost_model import calibrations
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    run_ = json.loads((PROBE / "fused_vs_nonfused_probe-h5120.json").read_text())
    assert "fused_fp4" in run_["keys"] and not any("fused_fp4" in r for r in run_["rows"])  # --fused fp8
    cals = calibrations(run_, "probe")
    assert sorted(c.variant for c in cals) == [
        "deep_gemm_mega_moe:sm90_fp8xfp8",
        "nonfused:deepgemm_fp8_m_indices",
        "nonfused:deepgemm_fp8_psum",
    ]
    assert all(len(c.points) == 3 for c in cals)
