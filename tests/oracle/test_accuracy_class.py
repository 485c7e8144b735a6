"""Accuracy classes from recipes, and no automatic choice of a lower class the checkpoint does not have."""

from __future__ import annotations

import json

import pytest

from moe_oracle.decide.accuracy_class import accuracy_class
from moe_oracle.decide.question import ConversionOptions
from moe_oracle.decide.record import decision_to_json, replay_inputs
from moe_oracle.decide.selection import Override, decide
from moe_oracle.inputs import DeploymentFlags, build_deployment, resolve_software
from moe_oracle.model.resolve import resolve_model
from moe_oracle.registry import load_registry
from tests.cli.runner import cli
from tests.oracle.helpers import V4_FLASH, V4_FLASH_NVFP4, chosen, run

EP16_MI355X = {"nodes": 2, "dp": 16, "ep": 16}


@pytest.mark.parametrize(
    ("key", "cls"),
    [
        ("aiter_mega_moe:gfx950_a8w4", "standard"),
        ("aiter_mega_moe:gfx950_a4w4", "a4"),
        ("deep_gemm_mega_moe:sm100_nvfp4", "a4"),
        ("deep_gemm_mega_moe:sm100_fp8xfp4", "standard"),
        ("deep_gemm_mega_moe:sm90_fp8xfp8", "standard"),
    ],
)
def test_class_comes_from_the_recipe(key, cls):
    spec = next(v for v in load_registry().variants if v.key == key)
    assert accuracy_class(spec) == cls


def _decide(options: ConversionOptions, override: str | None = None):
    deployment, _ = build_deployment(DeploymentFlags(device="mi355x", **EP16_MI355X))
    software, _ = resolve_software(None, "mi355x")
    return decide(
        resolve_model(V4_FLASH),
        deployment,
        software,
        conversion=options,
        override=Override.parse(override) if override else None,
    )


def test_a4w4_is_not_chosen_automatically_for_an_mxfp4_checkpoint():
    decision = _decide(ConversionOptions())
    main = decision.main
    assert main.chosen is None  # was aiter_mega_moe:gfx950_a4w4 before accuracy classes
    a4w4 = next(c for c in main.candidates if c.spec.key == "aiter_mega_moe:gfx950_a4w4")
    assert a4w4.eligible and a4w4.accuracy_class == "a4"
    assert any("gfx950_a4w4" in n and "--allow-low-precision-activations" in n for n in main.notes)


def test_opt_in_and_explicit_override_allow_it():
    opted = _decide(ConversionOptions(allow_low_precision_activations=True))
    assert chosen(opted) == "aiter_mega_moe:gfx950_a4w4"
    assert opted.main.to_json()["accuracy_class"] == "a4"
    explicit = _decide(ConversionOptions(), override="aiter_mega_moe:gfx950_a4w4")
    assert chosen(explicit) == "aiter_mega_moe:gfx950_a4w4"


def test_nvfp4_checkpoint_keeps_its_native_w4a4_kernel():
    decision = run(V4_FLASH_NVFP4, "b200", dp=8, ep=8)
    assert chosen(decision) == "deep_gemm_mega_moe:sm100_nvfp4"
    assert decision.main.chosen.accuracy_class == "a4"


def test_opt_in_is_recorded_and_replayed_and_old_fingerprints_hold():
    plain = _decide(ConversionOptions())
    doc = decision_to_json(plain)
    assert set(doc["inputs"]["conversion"]) == {"enabled", "allow_lossy"}  # unchanged record shape
    opted = _decide(ConversionOptions(allow_low_precision_activations=True))
    odoc = decision_to_json(opted)
    assert odoc["inputs"]["conversion"]["allow_low_precision_activations"] is True
    assert odoc["fingerprint"] != doc["fingerprint"]
    again = decide(**replay_inputs(json.loads(json.dumps(odoc))))
    assert decision_to_json(again)["fingerprint"] == odoc["fingerprint"]
    assert chosen(again) == "aiter_mega_moe:gfx950_a4w4"


def test_cli_select_plan_and_matrix_show_the_class():
    args = [V4_FLASH, "--device", "mi355x", "--nodes", "2", "--dp", "16", "--ep", "16"]
    r = cli("select", *args)
    assert r.code == 0, r.err
    assert "accuracy class a4: not chosen automatically" in r.out
    r = cli("select", *args, "--allow-low-precision-activations", "--json")
    assert json.loads(r.out)["accuracy_class"] == "a4"
    r = cli("plan", V4_FLASH, "--device", "mi355x", "--dp", "8", "--ep", "8", "--engine", "vllm")
    assert "aiter_mega_moe:gfx950_a8w4 (accuracy class standard)" in r.out
    r = cli("matrix", "--devices", "mi355x", "--format", "json")
    assert r.code == 0, r.err
    cells = json.loads(r.out)["cells"]
    a4 = [c for c in cells if c["key"] == "aiter_mega_moe:gfx950_a4w4"]
    assert a4 and all(c["accuracy_class"] == "a4" for c in a4)
    assert not any(c["chosen"] for c in a4 if c["weight_format"] == "mxfp4")


def test_accuracy_command_shows_the_class():
    r = cli("accuracy", "zai-org/GLM-5-FP8", "--variants", "gfx950_a8w4,gfx950_a4w4", "--tokens", "16", "--json")
    assert r.code == 0, r.err
    classes = {row["variant"]: row["accuracy_class"] for row in json.loads(r.out)["variants"]}
    assert classes == {"gfx950_a8w4": "standard", "gfx950_a4w4": "a4"}
