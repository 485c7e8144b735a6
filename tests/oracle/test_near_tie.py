"""Near ties: where the cost model, estimating from other shapes, puts two paths within its transfer error.

The band (``moe_oracle.cost.near_tie.NEAR_TIE``) comes from the leave-one-shape-out scoring of the thirteen shapes
measured on the H200 (``benchmarks/cost_model_loso.py --near-ties``). Here: the rule itself; that a decision on a
shape nobody measured says where it ties and which ``moe-oracle tune`` run settles it (the note, the JSON and the
public API); that ``compare`` marks such a margin; and that the shape's own measurements (a local calibration) leave
nothing to band.
"""

from __future__ import annotations

import json

import pytest

import moe_oracle
from moe_oracle.cost import local
from moe_oracle.cost.model import CostEstimate
from moe_oracle.cost.near_tie import NEAR_TIE, NearTie, is_near_tie

#: an FP8 shape no calibration holds (between DeepSeek-V4-Flash and Qwen3-235B), whose fused FP8 and psum paths the
#: pooled fit puts within 2% at T = 256-1024 on the H200, and whose workload of T = 512 is a near tie too
SHAPE = {"hidden_size": 4096, "moe_intermediate_size": 1536, "num_experts": 256, "top_k": 6}
ASK = {**SHAPE, "weight_format": "fp8_block", "device": "h200", "software": "deepgemm-pr323", "gpus_per_node": 1}
FUSED, PSUM, M_INDICES = (
    "deep_gemm_mega_moe:sm90_fp8xfp8",
    "nonfused:deepgemm_fp8_psum",
    "nonfused:deepgemm_fp8_m_indices",
)


def _est(us: float, transferred: bool = True) -> CostEstimate:
    return CostEstimate(us, "test", True, transferred)


@pytest.mark.parametrize(
    ("a", "b", "tie"),
    [
        (_est(100.0), _est(104.9), True),
        (_est(104.9), _est(100.0), True),
        (_est(100.0), _est(100.0), True),
        (_est(100.0), _est(100.0 * (1 + NEAR_TIE)), False),
        (_est(100.0), _est(106.0), False),
        (_est(100.0, False), _est(101.0, False), False),  # both this shape's own measurements
        (_est(100.0, False), _est(101.0), True),  # one of them from other shapes
        (_est(0.0), _est(0.0), False),
    ],
)
def test_a_near_tie_is_within_the_band_with_one_estimate_from_other_shapes(a, b, tie):
    assert is_near_tie(a, b) is tie


def test_a_near_tie_says_where_and_serialises():
    assert NearTie((FUSED, PSUM), 0.015, (256, 1024)).where() == "T 256-1024"
    assert NearTie((FUSED, PSUM), 0.015, (4, 4)).where() == "T 4"
    assert NearTie((FUSED, PSUM), 0.015).where() == "the workload"
    assert NearTie((FUSED, PSUM), 0.0151234, (256, 1024)).to_json() == {
        "paths": [FUSED, PSUM],
        "gap": 0.0151,
        "tokens": [256, 1024],
        "band": NEAR_TIE,
    }


def test_an_unmeasured_shape_names_its_near_ties_and_the_tune_run_that_settles_them():
    selection = moe_oracle.select(**ASK, workload="512")
    group = selection.groups[0]
    assert group.chosen == FUSED
    spans = {t.tokens: t for t in group.near_ties}
    assert spans[None].paths == (FUSED, PSUM)  # the workload's weighted cost: 1.3% apart
    assert 0 < spans[None].gap < NEAR_TIE
    assert spans[(256, 1024)].paths == (FUSED, PSUM)
    assert all(0 <= t.gap < NEAR_TIE for t in group.near_ties)
    note = next(n for n in group.notes if n.startswith("near tie"))
    assert "T 256-1024: deep_gemm_mega_moe:sm90_fp8xfp8 vs nonfused:deepgemm_fp8_psum" in note
    tokens = note.split("--tokens ")[1].split()[0].split(",")
    assert {"256", "512", "1024"} <= set(tokens)  # the workload's 512 and every batch size of the span
    assert "(h200)" in note
    doc = selection.to_dict()["layer_groups"][0]
    assert doc["near_ties"] == [t.to_json() for t in group.near_ties]


def test_a_workload_far_from_a_tie_is_not_banded():
    group = moe_oracle.select(**ASK, workload="decode").groups[0]
    assert all(t.tokens is not None for t in group.near_ties)  # only the per-batch spans, not the workload


def test_this_shapes_own_measurements_leave_no_near_tie(tmp_path):
    """A local calibration of the shape (what ``moe-oracle tune`` writes) replaces the transfer: no tie remains, even
    where the measured paths are as close."""
    tokens = (1, 4, 64, 256, 512, 1024, 2048, 8192)
    entries = []
    for variant, scale in ((FUSED, 1.0), (PSUM, 1.01), (M_INDICES, 1.05)):
        entries.append(
            {
                "variant": variant,
                "device": "h200",
                "ep": 1,
                "library": "deep_gemm deepgemm-pr323 (sgl-deep-gemm 0.0.0), torch 2.11.0+cu130",
                "measured": True,
                "source": "moe-oracle tune manual on NVIDIA H200, 2026-12-03",
                "shape": {**SHAPE, "expert_bytes": 3 * 4096 * 1536 + 3 * 32 * 12 * 4},
                "points": [[t, None, scale * (60.0 + 0.5 * t)] for t in tokens],
            }
        )
    doc = {
        "schema": local.SCHEMA,
        "device": "h200",
        "device_name": "NVIDIA H200",
        "date": "2026-12-03",
        "builds": {"deep_gemm": "deepgemm-pr323"},
        "stamp": {"driver": "580.159.04", "max_sm_clock_mhz": 1980},
        "entries": entries,
        "limits": [],
    }
    path = tmp_path / "cal.json"
    path.write_text(json.dumps(doc))
    group = moe_oracle.select(**ASK, workload="512", calibration=str(path)).groups[0]
    assert group.chosen == FUSED
    assert group.near_ties == ()
    assert not any(n.startswith("near tie") for n in group.notes)


def test_compare_marks_a_margin_inside_the_transfer_error_between_two_paths():
    from moe_oracle.cli.cmd_compare import NEAR_TIE_MARK, Cost, faster_row

    fused = [Cost(1000.0, "measured EP1", "", True, FUSED)]
    psum = [Cost(1015.0, "measured EP1", "", True, PSUM)]
    far = [Cost(1100.0, "measured EP1", "", True, PSUM)]
    own = [Cost(1015.0, "measured EP1", "", False, PSUM)]
    assert faster_row(["[1]", "[2]"], [fused, psum], (256,)) == [f"[1] by 1.01x over [2] {NEAR_TIE_MARK}"]
    assert faster_row(["[1]", "[2]"], [fused, far], (256,)) == ["[1] by 1.10x over [2]"]
    assert faster_row(["[1]", "[2]"], [fused, own], (256,)) == [f"[1] by 1.01x over [2] {NEAR_TIE_MARK}"]
    same = [Cost(1000.0, "measured EP1", "", True, FUSED)]
    assert faster_row(["[1]", "[2]"], [fused, same], (256,)) == ["[1] by 1.00x over [2]"]  # one path: no ranking
    mine = [Cost(1015.0, "measured EP1", "", False, PSUM)]
    assert faster_row(["[1]", "[2]"], [[Cost(1000.0, "measured EP1", "", False, FUSED)], mine], (256,)) == [
        "[1] by 1.01x over [2]"
    ]


def test_the_band_is_the_committed_leave_one_shape_out_result_and_the_docs_quote_it():
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, str(root / "benchmarks" / "cost_model_loso.py"), "--near-ties"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    saved = (root / "benchmarks/results/h200/2026-12-03/model/cost_model_near_ties.txt").read_text()
    assert out == saved
    # what moe_oracle.cost.near_tie's docstring states
    assert f"| {NEAR_TIE:.0%} | 36 | 4 of 6 |" in saved
    assert "percentiles 50: 3.2%, 75: 5.7%, 90: 8.2%" in saved
    docs = (root / "docs/performance.md").read_text()
    assert all(line in docs for line in saved.splitlines() if line.startswith("|"))
