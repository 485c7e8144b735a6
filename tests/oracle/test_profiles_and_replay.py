"""Software profiles (named and probed) and decision records."""

from __future__ import annotations

import json

import pytest

from moe_oracle.decide.record import decision_to_json, fingerprint, replay_inputs
from moe_oracle.decide.selection import decide
from moe_oracle.inputs import resolve_software
from moe_oracle.releases.profiles import NAMED_PROFILES, named_profile
from moe_oracle.software.probe import probe_installed
from tests.oracle.helpers import V4_FLASH, chosen, run


@pytest.mark.parametrize("name", NAMED_PROFILES)
def test_named_profiles_exist_and_roundtrip(name):
    p = named_profile(name)
    assert p is not None and p.name == name
    assert type(p).model_validate_json(p.model_dump_json()) == p


def test_defaults_are_stated():
    assert resolve_software(None, "b200")[0].name == "all"
    assert resolve_software(None, "b200")[1] == "default for --device b200"
    assert resolve_software("vllm-0.33.0", "b200")[1] == "requested"


def test_profiles_decide_differently_on_h200():
    assert chosen(run(V4_FLASH, "h200", gpus_per_node=1, software="all")) == "deep_gemm_mega_moe:sm90_fp8xfp4"
    # sgl-deep-gemm has no SM90 FP4 kernel: only the FP8 one, after converting the experts at load
    d = run(V4_FLASH, "h200", dp=8, ep=8, software="sglang-0.5.23")
    assert d.main.chosen is not None and d.main.chosen.conversion is not None
    assert chosen(run(V4_FLASH, "b200", dp=8, ep=8, software="sglang-0.5.23")) == "deep_gemm_mega_moe:sm100_fp8xfp4"


def test_installed_probe_on_this_machine_never_raises():
    p = probe_installed()
    assert p.name == "installed"
    dg = p.libraries["deep_gemm"]
    if not dg.present:
        assert dg.error
    torch = p.libraries["torch"]
    if torch.present:
        assert torch.version and "distributed._symmetric_memory" in torch.symbols


def test_installed_profile_rejects_with_kernel_missing_when_no_deep_gemm():
    p = probe_installed()
    if p.library("deep_gemm") is not None:
        pytest.skip("deep_gemm is installed here")
    d = run(V4_FLASH, "b200", dp=8, ep=8, software="installed")
    reasons = [r.code.value for c in d.main.candidates if c.spec.key.endswith("sm100_fp8xfp4") for r in c.failures]
    assert reasons == ["KERNEL_MISSING"]


def test_record_replays_to_the_same_decision(tmp_path):
    d = run(V4_FLASH, "h200", dp=8, ep=8, engine="vllm", software="vllm-0.33.0")
    doc = decision_to_json(d)
    path = tmp_path / "record.json"
    path.write_text(json.dumps(doc))
    loaded = json.loads(path.read_text())
    again = decide(**replay_inputs(loaded))
    doc2 = decision_to_json(again)
    assert doc2["fingerprint"] == doc["fingerprint"]
    assert doc2["layer_groups"] == doc["layer_groups"]


def test_fingerprint_changes_with_inputs_and_version():
    a = decision_to_json(run(V4_FLASH, "b200", dp=8, ep=8))
    b = decision_to_json(run(V4_FLASH, "b200", dp=8, ep=8, max_num_batched_tokens=4096))
    assert a["fingerprint"] != b["fingerprint"]
    assert fingerprint(a["inputs"]) == a["fingerprint"]
    assert fingerprint(a["inputs"], oracle_version="999") != a["fingerprint"]


def test_json_contract_fields():
    doc = decision_to_json(run(V4_FLASH, "b200", dp=8, ep=8))
    assert doc["chosen"] == {"backend": "deep_gemm_mega_moe", "variant": "sm100_fp8xfp4"}
    assert {"backend", "variant", "eligible", "reasons"} <= set(doc["candidates"][0])
    for cand in doc["candidates"]:
        for r in cand["reasons"]:
            assert {"code", "message", "remediation"} <= set(r)
    assert next(g["name"] for g in doc["layer_groups"]) == "moe"
    assert doc["software"]["profile"] == "all"
    assert doc["fingerprint"].startswith("sha256:")
