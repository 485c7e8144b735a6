"""``moe-oracle tune`` on a machine without a GPU, and the calibration files it writes (issue #31 item 1).

The measurement itself runs on the H200 (``benchmarks/results/h200/2026-12-01b/``); here: the plan, the exit codes,
the file reader, and that a matching file changes the cost basis of select to "measured on this machine (date)",
automatically from the cache or named by --calibration, and only where device and builds match.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from moe_oracle.cli import main
from moe_oracle.cost import local
from moe_oracle.errors import BadInputError

GLM = "zai-org/GLM-5-FP8"
SHAPE = {"hidden_size": 6144, "moe_intermediate_size": 2048, "num_experts": 256, "top_k": 8}


@dataclass
class _Result:
    exit_code: int
    output: str


def _invoke(*args: str, env: dict[str, str] | None = None) -> _Result:
    """``moe-oracle ARGS`` through ``main`` (the exit codes and one-line errors), stdout and stderr together."""
    out, err = io.StringIO(), io.StringIO()
    saved = {k: os.environ.get(k) for k in env or {}}
    os.environ.update(env or {})
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(args))
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return _Result(code, out.getvalue() + err.getvalue())


def _file(tmp_path, *, device="h200", build="deepgemm-pr323", us=(50.0, 70.0, 120.0, 400.0, 2500.0)):
    doc = {
        "schema": local.SCHEMA,
        "device": device,
        "device_name": "NVIDIA H200",
        "date": "2026-12-01",
        "builds": {"deep_gemm": build},
        "stamp": {"driver": "580.159.04", "max_sm_clock_mhz": 1980},
        "entries": [
            {
                "variant": "deep_gemm_mega_moe:sm90_fp8xfp8",
                "device": device,
                "ep": 1,
                "library": "deep_gemm deepgemm-pr323 (sgl-deep-gemm 0.0.0), torch 2.11.0+cu130",
                "measured": True,
                "source": "moe-oracle tune zai-org/GLM-5-FP8 on NVIDIA H200, 2026-12-01",
                "shape": {**SHAPE, "expert_bytes": 3 * 6144 * 2048 + 2 * 48 * 16 * 4 * 3},
                "points": [[t, None, u] for t, u in zip((1, 8, 64, 512, 4096), us, strict=True)],
            }
        ],
        "limits": [],
    }
    p = tmp_path / "cal.json"
    p.write_text(json.dumps(doc))
    return p, doc


def test_tune_without_a_gpu_is_one_line_with_exit_2():
    r = _invoke("tune", GLM)
    assert r.exit_code == 2
    assert r.output.count("\n") <= 2 and "no GPU" in r.output


def test_a_catalogue_device_plans_only_as_a_dry_run():
    assert _invoke("tune", GLM, "--device", "h200").exit_code == 2
    r = _invoke("tune", GLM, "--device", "h200", "--software", "deepgemm-pr323", "--dry-run")
    assert r.exit_code == 0
    assert "deep_gemm_mega_moe:sm90_fp8xfp8: T = 1, 8, 64, 512, 4096" in r.output
    assert "nonfused:deepgemm_fp8_m_indices" in r.output


def test_the_plan_leaves_out_the_token_counts_a_declared_limit_refuses():
    r = _invoke(
        "tune",
        "--device",
        "h200",
        "--software",
        "deepgemm-pr323",
        "--dry-run",
        "--json",
        "--tokens",
        "64,512",
        str(_ernie(tmp := __import__("tempfile").mkdtemp())),
    )
    assert r.exit_code == 0, r.output
    paths = {p["path"]: p for p in json.loads(r.output)["groups"][0]["paths"]}
    fp8 = paths["deep_gemm_mega_moe:sm90_fp8xfp8"]
    assert fp8["tokens"] == [64] and "Hidden is too large" in fp8["refused"]["512"]
    assert paths["nonfused:deepgemm_fp8_psum"]["tokens"] == [64, 512]
    del tmp


def _ernie(folder: str):
    """ERNIE-4.5-300B-A47B's expert shape as a manual description file (moe-oracle model --json)."""
    from pathlib import Path

    from moe_oracle.model.description_json import description_to_json
    from tests.oracle.helpers import manual

    d = manual(hidden=8192, inter=3584, experts=64, top_k=8, fmt="fp8_block", scoring="softmax")
    p = Path(folder) / "ernie.json"
    p.write_text(json.dumps(description_to_json(d)))
    return p


@pytest.mark.parametrize("tokens", ["0", "1,x", "70000", "", "1,,2", "٣"])
def test_bad_token_lists_are_one_line(tokens):
    r = _invoke("tune", GLM, "--device", "h200", "--dry-run", "--tokens", tokens)
    assert r.exit_code == 2 and "--tokens" in r.output


def _basis(*extra: str, env: dict[str, str] | None = None) -> str:
    r = _invoke(
        "select",
        GLM,
        "--device",
        "h200",
        "--dp",
        "8",
        "--ep",
        "8",
        "--software",
        "deepgemm-pr323",
        "--json",
        *extra,
        env=env,
    )
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    return json.dumps(doc)


def test_a_named_calibration_changes_the_cost_basis(tmp_path):
    p, _ = _file(tmp_path)
    assert "measured on this machine (2026-12-01)" not in _basis()
    assert "measured on this machine (2026-12-01)" in _basis("--calibration", str(p))
    assert "measured on this machine" not in _basis("--calibration", "none")


def test_the_cache_file_is_used_automatically_only_when_device_and_builds_match(tmp_path, monkeypatch):
    p, doc = _file(tmp_path)
    cache = tmp_path / "cache"
    (cache / "calibration").mkdir(parents=True)
    target = cache / "calibration" / "h200.json"
    target.write_text(p.read_text())
    env = {"MOE_ORACLE_CACHE_DIR": str(cache)}
    assert "measured on this machine (2026-12-01)" in _basis(env=env)
    doc["builds"] = {"deep_gemm": "sgl-deep-gemm-0.2.5"}  # measured through another build: not this profile's
    target.write_text(json.dumps(doc))
    assert "measured on this machine" not in _basis(env=env)


def test_a_named_file_for_another_device_or_build_is_refused_in_one_line(tmp_path):
    p, _ = _file(tmp_path, device="b200")
    r = _invoke("select", GLM, "--device", "h200", "--software", "deepgemm-pr323", "--calibration", str(p))
    assert r.exit_code == 2 and "measured on b200, not h200" in r.output
    p, _ = _file(tmp_path, build="sgl-deep-gemm-0.2.5")
    r = _invoke("select", GLM, "--device", "h200", "--software", "deepgemm-pr323", "--calibration", str(p))
    assert r.exit_code == 2 and "sgl-deep-gemm-0.2.5" in r.output


def test_merging_keeps_other_shapes_and_replaces_the_same(tmp_path):
    p, doc = _file(tmp_path)
    a = local.read(p)
    doc["entries"][0]["shape"]["hidden_size"] = 4096
    p2 = tmp_path / "b.json"
    p2.write_text(json.dumps(doc))
    b = local.read(p2)
    assert len(b.merged_with(a).entries) == 2
    assert len(a.merged_with(a).entries) == 1


def test_a_steady_file_says_each_path_alone_and_is_not_merged_with_an_interleaved_one(tmp_path):
    p, doc = _file(tmp_path)
    doc["stamp"]["timing_basis"] = "steady"
    steady = tmp_path / "steady.json"
    steady.write_text(json.dumps(doc))
    assert "measured on this machine (2026-12-01, each path alone)" in _basis("--calibration", str(steady))
    a, b = local.read(p), local.read(steady)
    assert (a.basis, b.basis) == (local.TimingBasis.INTERLEAVED, local.TimingBasis.STEADY)
    assert b.cannot_merge(a) == "it was timed interleaved, this run steady"
    assert b.merged_with(a) is b and len(b.merged_with(b).entries) == 1


@pytest.mark.parametrize("value", ["Steady", "", 3, None, ["steady"]])
def test_an_unknown_timing_basis_is_refused_in_one_line(tmp_path, value):
    _, doc = _file(tmp_path)
    doc["stamp"]["timing_basis"] = value
    with pytest.raises(BadInputError, match=r"timing_basis .* is not one of interleaved, steady") as exc:
        local.parse(doc)
    assert "\n" not in str(exc.value) and f"timing_basis {value!r} is not" in str(exc.value)  # quoted once


def test_the_dry_run_says_how_the_paths_are_timed():
    args = ("tune", GLM, "--device", "h200", "--software", "deepgemm-pr323", "--tokens", "1,64", "--dry-run")
    plain, steady = _invoke(*args), _invoke(*args, "--timing", "steady")
    assert plain.exit_code == steady.exit_code == 0, plain.output + steady.output
    assert "timed interleaved: CUDA graphs, L2 flushed, paths interleaved: 7 rounds x 5 replays" in plain.output
    assert "timed steady: CUDA graphs, L2 flushed, each path alone after 2 s of its own replays" in steady.output
    doc = json.loads(_invoke(*args, "--timing", "steady", "--json").output)
    assert doc["timing"] == "steady" and "each path alone" in doc["timing_text"]
    bad = _invoke(*args, "--timing", "alone")
    assert bad.exit_code == 2 and "alone" in bad.output and "Traceback" not in bad.output
    from moe_oracle.tune.plan import STEADY_WARM_S

    helptext = " ".join(_invoke("tune", "--help").output.split())
    assert f"each path alone after {STEADY_WARM_S:g} s of its own replays" in helptext


@settings(max_examples=150, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
        lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=5),
        max_leaves=30,
    )
)
def test_the_reader_refuses_any_malformed_document_with_one_line(doc):
    try:
        local.parse(doc if not isinstance(doc, dict) else {**doc, "schema": local.SCHEMA})
    except BadInputError as exc:
        assert "\n" not in str(exc)


@settings(max_examples=100, deadline=None)
@given(
    st.sampled_from(["entries", "builds", "device", "date", "limits", "stamp"]), st.sampled_from([None, 3, "x", [], {}])
)
def test_one_field_changed_is_refused_or_read(tmp_path_factory, field, value):
    _, doc = _file(tmp_path_factory.mktemp("c"))
    doc[field] = value
    try:
        local.parse(doc)
    except BadInputError as exc:
        assert "calibration file" in str(exc) and "\n" not in str(exc)
