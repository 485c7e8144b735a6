"""A record that lies about itself never replays as identical (issue 22, "Records and replays that contradict
themselves"): every field a reader sees is checked against what the record's inputs decide, a recorded device
against the catalogue, malformed top-level fields are refused, and an older record format with the same
decision replays as identical, saying the format changed."""

from __future__ import annotations

import copy
import json

import pytest

from moe_oracle.decide.record import fingerprint
from tests.cli.runner import cli

ARGS = ["select", "zai-org/GLM-5-FP8", "--device", "h200", "--dp", "8", "--ep", "8", "--json"]


@pytest.fixture(scope="module")
def record() -> dict:
    r = cli(*ARGS)
    assert r.code == 0, r.err
    return json.loads(r.out)


def _replay(tmp_path, doc: dict, *, refingerprint: bool = False):
    doc = copy.deepcopy(doc)
    if refingerprint:  # an editor who also recomputes the fingerprint
        doc["fingerprint"] = fingerprint(doc["inputs"], doc["oracle_version"])
    f = tmp_path / "rec.json"
    f.write_text(json.dumps(doc), encoding="utf-8")
    return cli("select", "--replay", str(f))


@pytest.mark.parametrize(
    ("key", "value", "shown"),
    [
        ("chosen", {"backend": "aiter_mega_moe", "variant": "gfx950_a8w4"}, "chosen.backend"),
        ("device", "b200", "device"),
        ("model", "deepseek-ai/DeepSeek-V4-Pro", "model"),
        ("engine", "vllm", "engine"),
        ("accuracy_class", "a4", "accuracy_class"),
        ("override", "aiter_mega_moe", "override"),
        ("warnings", ["all good"], "warnings"),
    ],
)
def test_an_edited_visible_field_is_a_difference(tmp_path, record, key, value, shown):
    doc = copy.deepcopy(record)
    doc[key] = value
    r = _replay(tmp_path, doc)
    assert r.code == 5, r.err
    assert f"  {shown}" in r.err and "identical" not in r.err, r.err


def test_an_edited_candidate_is_a_difference(tmp_path, record):
    doc = copy.deepcopy(record)
    doc["candidates"][0]["eligible"] = not doc["candidates"][0]["eligible"]
    r = _replay(tmp_path, doc)
    assert r.code == 5 and "candidates[0].eligible" in r.err, r.err


def test_edited_inputs_with_the_old_fingerprint_are_named(tmp_path, record):
    doc = copy.deepcopy(record)
    doc["inputs"]["deployment"]["parallel"]["eplb"] = True
    r = _replay(tmp_path, doc)
    assert r.code == 5 and "does not match its own inputs" in r.err, r.err


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        ({"name": "h100", "arch": "sm100"}, "arch sm100 (the catalogue's: sm90)"),
        ({"memory_gib": 0.001}, "memory_gib 0.001 (the catalogue's: 139.8)"),
    ],
)
def test_a_device_that_is_not_the_catalogues_is_refused(tmp_path, record, edit, needle):
    doc = copy.deepcopy(record)
    doc["inputs"]["deployment"]["device"].update(edit)
    r = _replay(tmp_path, doc, refingerprint=True)
    assert r.code == 2 and needle in r.err and r.err.count("\n") == 1, r.err


def test_a_custom_device_is_said_to_be_one(tmp_path, record):
    doc = copy.deepcopy(record)
    doc["inputs"]["deployment"]["device"]["name"] = "my-h200"
    doc["device"] = "my-h200"
    r = _replay(tmp_path, doc, refingerprint=True)
    assert "device 'my-h200' is a custom device, not in the catalogue" in r.err, r.err


def test_an_older_format_with_the_same_decision_is_identical(tmp_path, record):
    """A record written before the libraries' ``params`` existed (an earlier build of the same version)."""
    doc = copy.deepcopy(record)
    for lib in doc["inputs"]["software"]["libraries"].values():
        lib.pop("params", None)
    r = _replay(tmp_path, doc, refingerprint=True)
    assert r.code == 0, r.err
    assert "identical decision" in r.err and "format is older" in r.err, r.err


def test_an_unedited_record_is_identical(tmp_path, record):
    r = _replay(tmp_path, record)
    assert r.code == 0 and "replay: identical decision, fingerprint" in r.err, r.err


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("software", "x"),
        ("software", {"origin": 5}),
        ("software", {"profile": []}),
        ("layer_groups", 1.5),
        ("layer_groups", ["x"]),
        ("candidates", {}),
        ("schema", 2),
        ("schema", True),
        ("chosen", "deep_gemm"),
    ],
)
def test_malformed_top_level_fields_are_refused(tmp_path, record, key, value):
    doc = copy.deepcopy(record)
    doc[key] = value
    r = _replay(tmp_path, doc)
    assert r.code == 2, r.err
    assert r.err.startswith("error: decision record ") and r.err.count("\n") == 1, r.err
