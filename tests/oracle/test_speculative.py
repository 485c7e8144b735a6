"""Layer groups built only under speculative decoding decide and size nothing unless the launch builds them."""

from __future__ import annotations

import json

import pytest

from moe_oracle.cli.app import main
from moe_oracle.decide.record import decision_to_json, replay_inputs
from moe_oracle.decide.selection import decide
from moe_oracle.engines.vllm.snapshot import snapshot_inputs
from moe_oracle.inputs import DeploymentFlags
from moe_oracle.launch.build import PlanRequest, build_plan
from moe_oracle.releases import sglang
from moe_oracle.rules import Engine
from tests.oracle.helpers import GLM51_NVFP4, V4_FLASH_NVFP4, run

SYMM = "symm_buffer_total_bytes"
GIB = 1 << 30


def _plan(model: str, engine: Engine, speculative: str = "none", device: str = "b200", release: bool = True):
    """SGLang on its release profile (``release``): the NVFP4 megamoe is sgl-deep-gemm 0.2.3.post2's nvfp4_mega_moe,
    which the default profile's DeepGEMM PR #323 front end lacks; without it, the default profile (the plug-in)."""
    flags = DeploymentFlags(device=device, dp=8, ep=8, speculative=speculative)
    software = "sglang-0.5.23" if engine is Engine.SGLANG and release else None
    return build_plan(PlanRequest(model, flags, engine, software=software))


def _total(plan) -> float:
    return next(d.value for d in plan.derived if d.key == SYMM) / GIB


def test_mtp_group_is_not_decided_without_speculative_decoding() -> None:
    for engine in ("sglang", "vllm"):
        names = [g.group.name for g in run(V4_FLASH_NVFP4, "b200", dp=8, ep=8, engine=engine).groups]
        assert names == ["moe", "moe_hash"], engine
        names = [g.group.name for g in run(V4_FLASH_NVFP4, "b200", dp=8, ep=8, engine=engine, speculative="mtp").groups]
        assert names == ["moe", "moe_hash", "mtp"], engine
    # --engine none judges the kernels for every group the checkpoint has
    assert [g.group.name for g in run(V4_FLASH_NVFP4, "b200", dp=8, ep=8).groups] == ["moe", "moe_hash", "mtp"]


def test_v4_flash_nvfp4_sglang_buffer_counts_only_built_groups() -> None:
    off, on = _plan(V4_FLASH_NVFP4, Engine.SGLANG), _plan(V4_FLASH_NVFP4, Engine.SGLANG, "mtp")
    assert round(_total(off), 2) == 4.52 and round(_total(on), 2) == 9.18
    assert "--speculative-algorithm" not in off.commands[0].argv
    argv = on.commands[0].argv
    assert argv[-len(sglang.SPECULATIVE.argv) :] == sglang.SPECULATIVE.argv and sglang.SPECULATIVE.argv[:2] == (
        "--speculative-algorithm",
        "EAGLE",
    )
    offer = next(n for n in off.notes if n.startswith("Speculative decoding is off"))
    assert "--speculative mtp" in offer and "0.40 GiB per rank" in offer
    assert [g["name"] for g in off.groups if g.get("built") is False] == ["mtp"]


@pytest.mark.parametrize("engine", [Engine.SGLANG, Engine.VLLM])
def test_glm51_nvfp4_on_b200_is_served_by_the_nvfp4_mega_path(engine: Engine) -> None:
    plan = _plan(GLM51_NVFP4, engine)
    assert (plan.backend, plan.variant) == ("deep_gemm_mega_moe", "sm100_nvfp4")
    if engine is Engine.SGLANG:
        assert plan.commands[0].argv[-2:] == ("--moe-a2a-backend", "megamoe")
        # with the BF16 MTP layer built, SGLang's megamoe (one flag for every layer) has no path for it: moe-oracle's
        # plug-in serves the MTP group and SGLang's default MoE the NVFP4 one, without --moe-a2a-backend
        spec = _plan(GLM51_NVFP4, engine, "mtp", release=False)
        assert "--moe-a2a-backend" not in spec.commands[0].argv
        env = dict(spec.commands[0].env)
        assert env["SGLANG_PLUGINS"] == "moe_oracle"
        assert json.loads(env["MOE_ORACLE_SGLANG_BACKEND"]) == {"moe": "sglang", "mtp": "deep_gemm_mega_moe:sm100_bf16"}


def test_vllm_plan_speculative_flag_is_quoted_json() -> None:
    plan = _plan(V4_FLASH_NVFP4, Engine.VLLM, "mtp")
    argv = plan.commands[0].argv
    i = argv.index("--speculative-config")
    assert json.loads(argv[i + 1]) == {"method": "mtp", "num_speculative_tokens": 1}


def test_record_keeps_old_fingerprints_and_replays_speculative() -> None:
    off = run(V4_FLASH_NVFP4, "b200", dp=8, ep=8, engine="sglang")
    assert "speculative" not in decision_to_json(off)["inputs"]["deployment"]
    on = run(V4_FLASH_NVFP4, "b200", dp=8, ep=8, engine="sglang", speculative="mtp")
    doc = decision_to_json(on)
    assert doc["inputs"]["deployment"]["speculative"] == "mtp"
    assert doc["fingerprint"] != decision_to_json(off)["fingerprint"]
    kwargs = replay_inputs(json.loads(json.dumps(doc)))
    again = decide(**kwargs)
    assert decision_to_json(again)["fingerprint"] == doc["fingerprint"]
    assert [g.group.name for g in again.groups] == ["moe", "moe_hash", "mtp"]


def test_speculative_flag_is_validated(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["select", V4_FLASH_NVFP4, "--device", "b200", "--speculative", "eagle3"]) == 2
    assert "--speculative 'eagle3' is not one of none, mtp" in capsys.readouterr().err
    assert main(["plan", V4_FLASH_NVFP4, "--device", "b200", "--engine", "sglang", "--speculative", "MTP"]) == 0
    assert "--speculative-algorithm EAGLE" in capsys.readouterr().out.replace(" \\\n   ", "")


def test_vllm_plugin_builds_the_mtp_group_only_with_an_mtp_speculative_config() -> None:
    from tests.engines.test_plugin_logic import snap

    _, off, _ = snapshot_inputs(snap())
    _, on, _ = snapshot_inputs(snap(speculative="mtp"))
    assert (off.speculative, on.speculative) == ("none", "mtp")
