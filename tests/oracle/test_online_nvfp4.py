"""SGLang's online NVFP4 quantization: FP8 block checkpoints on B200 reach the NVFP4 megamoe path, lossy, opt-in."""

from __future__ import annotations

import pytest

from moe_oracle.decide.question import ConversionOptions
from moe_oracle.inputs import DeploymentFlags
from moe_oracle.launch.build import PlanRequest, build_plan
from moe_oracle.rules import Engine
from moe_oracle.rules.conversion import FP8_TO_NVFP4_TWIN

GLM5_FP8 = "zai-org/GLM-5-FP8"


def _plan(model: str, device: str = "b200", *, lossy: bool = False):
    """SGLang's release profile: its sgl-deep-gemm 0.2.3.post2 has nvfp4_mega_moe, which the default profile's
    DeepGEMM PR #323 front end lacks."""
    flags = DeploymentFlags(device=device, dp=8, ep=8)
    conversion = ConversionOptions(allow_lossy=lossy)
    return build_plan(PlanRequest(model, flags, Engine.SGLANG, software="sglang-0.5.23", conversion=conversion))


def test_fp32_scaled_fp8_on_b200_is_offered_the_online_nvfp4_route_only_under_the_opt_in() -> None:
    plain = _plan(GLM5_FP8)
    assert plain.backend is None
    assert "--quantization" not in plain.commands[0].argv
    (offer,) = [n for n in plain.notes if n.startswith("Option (layer group moe): --allow-lossy-conversion")]
    assert "--quantization modelopt_fp4" in offer and FP8_TO_NVFP4_TWIN in offer

    lossy = _plan(GLM5_FP8, lossy=True)
    assert (lossy.backend, lossy.variant) == ("deep_gemm_mega_moe", "sm100_nvfp4")
    argv = list(lossy.commands[0].argv)
    assert argv[argv.index("--quantization") + 1] == "modelopt_fp4"
    assert argv[argv.index("--moe-a2a-backend") + 1] == "megamoe"
    assert lossy.groups[0]["accuracy_class"] == "a4+lossy"
    assert any(n.startswith("--quantization modelopt_fp4: SGLang quantizes") for n in lossy.notes)
    buffers = [d for d in lossy.derived if d.key == "deepgemm_symm_buffer_bytes"]
    assert {d.inputs["mma_type"] for d in buffers} == {"nvfp4xnvfp4"}


def test_on_h200_the_fp8_checkpoint_runs_as_stored_even_with_the_opt_in() -> None:
    p = _plan(GLM5_FP8, "h200", lossy=True)
    assert p.variant == "sm90_fp8xfp8" and "--quantization" not in p.commands[0].argv


@pytest.mark.parametrize("model", ["nvidia/GLM-5.1-NVFP4", "nvidia/DeepSeek-V4-Flash-NVFP4"])
def test_nvfp4_checkpoints_need_no_conversion(model: str) -> None:
    p = _plan(model)
    assert p.variant == "sm100_nvfp4" and "--quantization" not in p.commands[0].argv
