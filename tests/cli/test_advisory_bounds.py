"""Advisories are bounded (count and size, docs/advisories.md) and matched per backend (issue 22)."""

from __future__ import annotations

import json
import time

import pytest

from moe_oracle.decide.advisories import MAX_ADVISORIES, MAX_TEXT, Advisory, AdvisorySet, advisories_for
from tests.cli.runner import cli

SELECT = ["select", "zai-org/GLM-5-FP8", "--device", "h200", "--dp", "8", "--ep", "8"]


def _advisory(i: int, backend: str = "deep_gemm_mega_moe", **extra) -> dict:
    return {"id": f"SITE-{i}", "title": "t", "link": "https://example.org", "backend": backend, **extra}


def _file(tmp_path, advisories: list[dict]) -> str:
    f = tmp_path / "advisories.json"
    f.write_text(json.dumps({"schema": 1, "advisories": advisories}), encoding="utf-8")
    return str(f)


def test_more_advisories_than_the_bound_is_one_line(tmp_path):
    path = _file(tmp_path, [_advisory(i) for i in range(MAX_ADVISORIES + 1)])
    r = cli(*SELECT, "--advisories", path)
    assert r.code == 2 and f"more than the {MAX_ADVISORIES} accepted" in r.err and r.err.count("\n") == 1, r.err


def test_an_oversized_advisory_text_is_refused(tmp_path):
    path = _file(tmp_path, [_advisory(0, evidence="x" * (MAX_TEXT + 1))])
    r = cli(*SELECT, "--advisories", path)
    assert r.code == 2 and "evidence" in r.err and r.err.count("\n") == 1 and len(r.err) < 600, r.err


def test_the_bound_of_matching_advisories_stays_fast_and_small(tmp_path):
    """Every one of the bound matches the chosen variant: still under seconds and a bounded document."""
    path = _file(tmp_path, [_advisory(i, variant="sm90_fp8xfp8") for i in range(MAX_ADVISORIES)])
    start = time.perf_counter()
    r = cli(*SELECT, "--advisories", path, "--json")
    elapsed = time.perf_counter() - start
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert doc["chosen"] is None or doc["chosen"]["variant"] != "sm90_fp8xfp8"
    assert elapsed < 15 and len(r.out) < 4_000_000, (elapsed, len(r.out))
    f = tmp_path / "rec.json"
    f.write_text(r.out, encoding="utf-8")
    replay = cli("select", "--replay", str(f))
    assert replay.code == 0, replay.err


def test_a_record_with_more_advisories_than_the_bound_is_refused(tmp_path):
    r = cli(*SELECT, "--json")
    doc = json.loads(r.out)
    doc["inputs"]["advisories"] = [_advisory(i) for i in range(MAX_ADVISORIES + 5)]
    f = tmp_path / "rec.json"
    f.write_text(json.dumps(doc), encoding="utf-8")
    replay = cli("select", "--replay", str(f))
    assert replay.code == 2 and "inputs.advisories" in replay.err and replay.err.count("\n") == 1, replay.err


def test_candidates_see_only_their_backends_advisories():
    advisories = AdvisorySet(Advisory.model_validate(_advisory(i, backend=f"b{i % 4}")) for i in range(40))
    assert len(advisories_for(advisories, "b1")) == 10
    assert advisories_for(advisories, "other") == ()
    plain = tuple(advisories)
    assert advisories_for(plain, "b1") == plain


@pytest.mark.parametrize("count", [0, MAX_ADVISORIES])
def test_advisories_of_another_backend_cost_nothing(tmp_path, count):
    path = _file(tmp_path, [_advisory(i, backend="some_other_backend") for i in range(count)])
    r = cli(*SELECT, "--advisories", path)
    assert r.code == 0, r.err
