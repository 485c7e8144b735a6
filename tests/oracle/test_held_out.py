"""The held-out error an estimate from other shapes quotes (``moe_oracle.cost.held_out``).

The package file is what ``benchmarks/cost_model_loso.py --held-out`` prints from the committed H200 sweeps; a cost
estimated from other shapes carries its path's figure (cost basis, JSON, public API), the shape's own measurements
and a fit over published points do not; the reader turns every malformed file into one ValueError that names it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import moe_oracle
from moe_oracle.cost.calibration import load_calibrations
from moe_oracle.cost.held_out import FORMAT, HELD_OUT_FILE, HeldOutError, dumps, held_out_error, parse

ROOT = Path(__file__).resolve().parents[2]
FUSED = "deep_gemm_mega_moe:sm90_fp8xfp8"
PSUM = "nonfused:deepgemm_fp8_psum"
#: an FP8 shape no calibration holds (GLM-5's experts at H 3584)
UNMEASURED = {"hidden_size": 3584, "moe_intermediate_size": 2048, "num_experts": 256, "top_k": 8}
ASK = {"weight_format": "fp8_block", "device": "h200", "software": "deepgemm-pr323", "gpus_per_node": 1}


def _package_text() -> str:
    return resources.files("moe_oracle.data").joinpath(HELD_OUT_FILE).read_text(encoding="utf-8")


def test_the_package_file_is_what_the_leave_one_shape_out_script_prints():
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "cost_model_loso.py"), "--held-out"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out == _package_text()
    fused = parse(out)[("h200", 1, FUSED)]
    assert (fused.shapes, fused.max) == (16, 0.1748)  # the LOSO table's 17.5% (GLM-5 at T = 8192)
    assert "GLM-5" in fused.worst and fused.worst.endswith("T 8192")


def test_every_path_measured_on_several_h200_shapes_has_a_figure():
    shapes: dict[str, set[tuple[int, int, int, int]]] = {}
    for c in load_calibrations():
        if c.device == "h200" and c.ep == 1 and c.measured:
            key = (c.hidden_size, c.moe_intermediate_size, c.num_experts, c.top_k)
            shapes.setdefault(c.variant, set()).add(key)
    several = {v for v, s in shapes.items() if len(s) > 1}
    assert several
    for variant in several:
        assert held_out_error("h200", 1, variant) is not None, variant
    assert held_out_error("h200", 8, FUSED) is None  # scored at EP1 only
    assert held_out_error("b200", 1, FUSED) is None


def test_an_unmeasured_shape_quotes_the_held_out_error_in_its_cost_basis_json_and_api():
    selection = moe_oracle.select(**UNMEASURED, **ASK)
    group = selection.groups[0]
    held, psum = held_out_error("h200", 1, FUSED), held_out_error("h200", 1, PSUM)
    assert held is not None and psum is not None
    # on one GPU the non-fused psum path is predicted faster: what runs is the fallback, and its figure is quoted
    assert group.chosen is None and group.fallback is not None and "psum" in group.fallback
    assert group.held_out_error == psum
    assert group.expected_us is not None and group.expected_us > 0
    assert group.cost_basis is not None and psum.phrase() in group.cost_basis
    assert "moe-oracle tune" in group.cost_basis
    doc = selection.to_dict()
    cand = next(c for c in doc["candidates"] if f"{c['backend']}:{c['variant']}" == FUSED)
    assert cand["held_out_error"] == held.to_json()
    assert held.phrase() in cand["cost_basis"] and "within 17%" in cand["cost_basis"]


def test_another_ep_than_the_one_scored_quotes_none():
    """On 8 GPUs (EP8) the fused FP8 estimate is the EP1 fit moved to EP8: its error there was never scored."""
    group = moe_oracle.select(**UNMEASURED, **{**ASK, "gpus_per_node": 8}).groups[0]
    assert group.chosen == FUSED
    assert group.cost_basis is not None and "EP1" in group.cost_basis
    assert group.held_out_error is None and "held out of the fit" not in group.cost_basis


def test_a_skewed_workload_quotes_none():
    """The held-out shapes were routed uniformly: a skewed workload's error on a new shape was never scored."""
    group = moe_oracle.select(**UNMEASURED, **ASK, workload="mixed@skew=1.2").groups[0]
    assert group.cost_basis is not None and "routing skew 1.2" in group.cost_basis
    assert group.held_out_error is None and "held out of the fit" not in group.cost_basis


def test_a_measured_shape_quotes_none():
    """GLM-5-FP8's expert shape is in the package calibration: its own points, not a transfer."""
    glm5 = {"hidden_size": 6144, "moe_intermediate_size": 2048, "num_experts": 256, "top_k": 8}
    selection = moe_oracle.select(**glm5, **ASK)
    group = selection.groups[0]
    assert group.held_out_error is None and group.cost_basis is not None
    assert "held out of the fit" not in group.cost_basis and "points" in group.cost_basis
    assert all(c["held_out_error"] is None for c in selection.to_dict()["candidates"])


def test_a_fit_over_published_points_quotes_none():
    """At EP8 the SM90 FP8xMXFP4 path's closest calibration is published (another EP's measured sweeps are further):
    no shapes of it were scored, so no figure is quoted."""
    from moe_oracle.cost.model import estimate_us
    from moe_oracle.inputs import DeploymentFlags, build_deployment
    from tests.oracle.helpers import manual

    group = manual(hidden=4096, inter=1536, experts=256, top_k=6).layer_groups[0]
    deployment, _ = build_deployment(DeploymentFlags(device="h200", dp=8, ep=8), None)
    est = estimate_us("deep_gemm_mega_moe:sm90_fp8xfp4", group, deployment, 256)
    assert est.transferred and est.basis.startswith("published")
    assert est.held_out is None and "held out of the fit" not in est.basis


def _doc(**entry: object) -> str:
    figures = {"shapes": 3, "points": 30, "median": 0.02, "p90": 0.05, "max": 0.1, "worst": "x at T 1", **entry}
    return json.dumps({"format": FORMAT, "devices": {"h200": {"ep": 1, "paths": {FUSED: figures}}}})


def test_a_written_file_reads_back():
    entries = [
        HeldOutError("h200", 1, FUSED, 3, 30, 0.02, 0.05, 0.1, "x at T 1"),
        HeldOutError("h200", 1, PSUM, 2, 20, 0.01, 0.02, 0.03, "y at T 8"),
        HeldOutError("b200", 8, FUSED, 4, 40, 0.0, 0.0, 0.0, "z at T 64"),
    ]
    assert parse(dumps(entries)) == {(e.device, e.ep, e.path): e for e in entries}
    assert parse(_doc())[("h200", 1, FUSED)] == entries[0]


@st.composite
def _entries(draw: st.DrawFn) -> list[HeldOutError]:
    out = []
    for device in draw(st.lists(st.text(min_size=1, max_size=6), unique=True, max_size=3)):
        ep = draw(st.integers(1, 64))
        for path in draw(st.lists(st.text(min_size=1, max_size=12), unique=True, max_size=4)):
            errs = sorted(draw(st.lists(st.floats(0, 10, allow_nan=False), min_size=3, max_size=3)))
            worst = draw(st.text(min_size=1, max_size=20).filter(str.strip))
            counts = draw(st.tuples(st.integers(1, 10**6), st.integers(1, 10**6)))
            out.append(HeldOutError(device, ep, path, *counts, *errs, worst))
    return out


@settings(max_examples=200, deadline=None)
@given(_entries())
def test_any_written_file_reads_back(entries):
    assert parse(dumps(entries)) == {(e.device, e.ep, e.path): e for e in entries}


def test_a_file_holds_one_ep_per_device_and_one_entry_per_path():
    one = HeldOutError("h200", 1, FUSED, 3, 30, 0.02, 0.05, 0.1, "x at T 1")
    with pytest.raises(ValueError, match="one EP per device"):
        dumps([one, HeldOutError("h200", 8, PSUM, 3, 30, 0.02, 0.05, 0.1, "x at T 1")])
    with pytest.raises(ValueError, match="two entries"):
        dumps([one, one])


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("{", "not JSON"),
        ("[]", "not a held-out error file"),
        (json.dumps({"format": "other"}), "not a held-out error file"),
        (json.dumps({"format": FORMAT, "devices": []}), "must map a device class"),
        (json.dumps({"format": FORMAT, "devices": {"h200": {"paths": {}}}}), "exactly ep and paths"),
        (json.dumps({"format": FORMAT, "devices": {"h200": {"ep": 0, "paths": {}}}}), "positive integer"),
        (json.dumps({"format": FORMAT, "devices": {"h200": {"ep": 1, "paths": []}}}), "must map a path key"),
        (_doc(extra=1), "exactly shapes"),
        (_doc(shapes=0), "positive integers"),
        (_doc(points=True), "positive integers"),
        (_doc(median="2%"), "finite numbers"),
        (_doc(max=float("inf")), "finite numbers"),
        (_doc(median=0.2), "median <= p90 <= max"),
        (_doc(worst=" "), "worst must name"),
    ],
)
def test_a_malformed_file_is_one_message_naming_it(text, says):
    with pytest.raises(ValueError, match=r"held\.json") as e:
        parse(text, "held.json")
    assert says in str(e.value)


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.text(max_size=200),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
            lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
            max_leaves=20,
        ).map(lambda v: json.dumps({"format": FORMAT, "devices": v})),
    )
)
def test_any_text_reads_or_fails_with_one_value_error(text):
    try:
        parse(text)
    except ValueError as e:
        assert str(e).startswith(HELD_OUT_FILE)
