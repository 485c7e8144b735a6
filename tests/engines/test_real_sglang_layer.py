"""moe-oracle's layer inside SGLang 0.5.23's own MoE blocks, on the CPU (real SGLang; not in the default CI run).

Run with ``tests/engines/run_real_sglang_plugin.sh``. Scaled real configs (``tests/engines/sglang_scaled.py``:
Qwen3-30B-A3B-FP8 and Kimi-K2-Instruct, a ``DeepseekV3ForCausalLM``; H 512, I 256, 32 experts, the real top-k,
scoring, groups, routed scaling and shared experts; FP8 block-128 experts) go through the plug-in's two processes:

* the launching process (``load_plugins()``, ``check_server_args`` for an SM90 target) decides and writes the plan
  (``MOE_ORACLE_SGLANG_BACKEND=emulation:sm90_fp8xfp8``, or per-group pins);
* a scheduler process with that environment (``load_plugins()``, ``publish(role="scheduler")``,
  ``init_parallel_runtime`` over gloo) builds the model's own MoE block class for each decoder layer
  (``Qwen3MoeSparseMoeBlock``, ``DeepseekV2MoE``), SGLang's ``Fp8MoEMethod`` creates the parameters, SGLang's
  ``weight_loader`` fills them from checkpoint-layout tensors, ``process_weights_after_loading`` hands them to
  moe-oracle (SGLang's copies freed), and the block's forward (gate, SGLang's ``TopK``, moe-oracle's
  ``emulation:sm90_fp8xfp8``, shared experts, routed scaling) is compared with moe-oracle's FP32 reference on the
  same weights and SGLang's own top-k output, within the twin tolerance of the variant's recipe
  (``moe_oracle/runtime/tolerance.py``).

FP8 block-128 experts (the target): ``Fp8MoEMethod.create_weights`` and its weight loader run on the CPU; the
shared experts stay BF16 (SGLang's FP8 block linear has no CPU kernel).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("sglang")

from tests.engines.sglang_scaled import ROOT, write_model

SPECULATIVE = [
    "--speculative-algorithm",
    "EAGLE",
    "--speculative-num-steps",
    "1",
    "--speculative-eagle-topk",
    "1",
    "--speculative-num-draft-tokens",
    "2",
]
FP8_TWIN = "emulation:sm90_fp8xfp8"


def _proc(args: list[str], env: dict[str, str]) -> tuple[dict, str]:
    """One role of ``tests/engines/sglang_scaled.py`` in a fresh interpreter: (its JSON answer, its stderr)."""
    full = {**os.environ, "SGLANG_PLUGINS": "moe_oracle", "MOE_ORACLE_SGLANG_DEVICE": "h200", **env}
    cmd = [sys.executable, "-m", "tests.engines.sglang_scaled", *args]
    done = subprocess.run(cmd, env=full, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


def _run(args: list[str], env: dict[str, str]) -> dict:
    return _proc(args, env)[0]


def _plan(model: str, backend: str, flags: list[str] = ()) -> str:
    out = _run(["launch", model, *flags], {"MOE_ORACLE_SGLANG_BACKEND": backend})
    assert "refused" not in out, out
    assert out["plan"]
    return out["plan"]


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("sglang-models")
    return {family: write_model(root / family, family) for family in ("qwen3", "kimi_k2", "deepseek_v4")}


def _served_within_tolerance(row: dict) -> None:
    assert row["served"] and row["experts"] == ["moe_oracle.engines.sglang.layer", "MoEOracleFusedMoE"]
    assert row["loaded_as_checkpoint"]  # SGLang's weight loader filled SGLang's parameters in checkpoint layout
    assert row["expert_params"] == 0  # ... and moe-oracle took them over: SGLang's copies are freed
    assert not row["quant_method_is_sglangs"] and row["quant_method_name"] == [
        "sglang.srt.layers.quantization.fp8",
        "Fp8MoEMethod",
    ]  # the per-instance subclass keeps the name
    assert row["topk_output"] == "StandardTopKOutput"
    assert row["shape"] == [9, 512] and row["dtype"] == "torch.bfloat16"
    assert row["tolerance"] == 3e-3  # FP8 g128 activations: the recipe's twin tolerance
    assert row["calc_diff"] < row["tolerance"], row


def test_qwen3_moe_fp8_blocks_through_moe_oracle_match_the_fp32_reference(models: dict[str, str]) -> None:
    plan = _plan(models["qwen3"], FP8_TWIN)
    out = _run(["serve", models["qwen3"], "qwen3", "0", "1"], {"MOE_ORACLE_SGLANG_PLAN": plan})
    for layer in ("0", "1"):
        row = out["layers"][layer]
        assert row["block"] == "Qwen3MoeSparseMoeBlock"
        _served_within_tolerance(row)
        assert row["same_experts_as_moe_oracle_routing"] and row["calc_diff_moe_oracle_routing"] < row["tolerance"]
        assert row["weights_sum"] == [1.0] * 9  # softmax top-8, renormalized, no routed scaling
        assert row["scale"] == 1.0


def test_deepseek_v3_style_layer_served_and_the_mtp_layer_left_to_sglang(models: dict[str, str]) -> None:
    """Kimi-K2 (DeepSeek-V3 block): layer 1 through moe-oracle, the MTP layer pinned to SGLang in the same launch."""
    from moe_oracle.engines.sglang.layer import routed_output_scale

    pins = json.dumps({"moe": FP8_TWIN, "mtp": "sglang"})
    plan = _plan(models["kimi_k2"], pins, SPECULATIVE)
    assert [g["runs"] for g in json.loads(plan)["groups"]] == ["moe-oracle", "sglang"]
    out = _run(["serve", models["kimi_k2"], "kimi_k2", "1", "2"], {"MOE_ORACLE_SGLANG_PLAN": plan})
    served, own = out["layers"]["1"], out["layers"]["2"]
    assert served["block"] == own["block"] == "DeepseekV2MoE"
    _served_within_tolerance(served)  # shared experts added by SGLang's block, routed scaling applied once
    assert served["same_experts_as_moe_oracle_routing"]
    assert served["calc_diff_moe_oracle_routing"] < served["tolerance"]

    # the layer left to SGLang: SGLang's own quant method, its parameters, FusedMoE's forward
    assert not own["served"] and own["quant_method_is_sglangs"] and own["forward_is_fusedmoe"]
    assert own["loaded_as_checkpoint"] and own["expert_params"] == 32 * 3 * 512 * 256

    # routed scaling factor 2.827: SGLang's TopK leaves it out of the weights (Fp8MoEMethod does not fuse it) ...
    rsf = 2.827
    assert served["fused_in_topk"] is False and served["runner_routed_scaling_factor"] == rsf
    assert served["weights_sum"] == [1.0] * 9
    # ... and folds it in when asked (the MXFP4 FlashInfer/Marlin methods): same experts, weights x 2.827
    assert served["folded_same_ids"] and served["folded_weights_ratio"] == pytest.approx(rsf, rel=1e-5)
    # on this CPU the block multiplies after the experts (deepseek_v2.py:1416-1422), so the layer does not; on CUDA
    # SGLang's runner would, and so does moe-oracle's layer
    assert out["runner_scales"] is False and served["scale"] == 1.0
    assert routed_output_scale(rsf, False, runner_scales=True) == rsf
    assert routed_output_scale(rsf, True, runner_scales=True) == 1.0


def test_deepseek_v4_mxfp4_layer_served_and_the_hash_layer_left_to_sglang(models: dict[str, str]) -> None:
    """DeepSeek-V4-Flash (``DeepseekV2MoE(is_deepseek_v4=True)``, deepseek_v4.py:3155-3167): SGLang's ``Fp8MoEMethod``
    creates the MXFP4 experts (int8 values, float32 power-of-two scales), moe-oracle's ``emulation:sm90_fp8xfp4``
    serves layer 1 on SGLang's sqrtsoftplus + bias top-k; the hash-routed layer 0 is pinned to SGLang.

    The layer's call is checked as the block makes it (``experts(x, topk_output)``): V4's shared experts clamp
    their SwiGLU with a CUDA JIT kernel (``kernels/ops/activation/silu_and_mul_clamp.py:48``). SGLang's CPU top-k
    (``fused_topk_torch_native``, ``layers/moe/topk.py:1098-1125``) scores the bf16 gate logits in bf16, so a few
    near-tied tokens pick other experts than moe-oracle's FP32 routing; the reference uses SGLang's choice."""
    plan = _plan(models["deepseek_v4"], json.dumps({"moe": "emulation:sm90_fp8xfp4", "moe_hash": "sglang"}))
    out = _run(["serve", models["deepseek_v4"], "deepseek_v4", "1", "0"], {"MOE_ORACLE_SGLANG_PLAN": plan})
    served, own = out["layers"]["1"], out["layers"]["0"]
    assert not served["whole_block"]
    _served_within_tolerance(served)
    assert served["runner_routed_scaling_factor"] == 1.5 and served["fused_in_topk"] is False
    assert served["folded_weights_ratio"] == pytest.approx(1.5, rel=1e-5) and served["scale"] == 1.0
    assert served["tokens_routed_differently"] <= 3 and served["logits_dtype"] == "torch.bfloat16"
    assert not own["served"] and own["quant_method_is_sglangs"] and own["forward_is_fusedmoe"]
    assert own["loaded_as_checkpoint"] and own["expert_params"] == 32 * 3 * 512 * 256 // 2  # packed FP4


#: a B200 launch as SGLang resolves it: its own platform override in both roles (tests/engines/sglang_scaled.py)
B200 = {"MOE_ORACLE_SGLANG_DEVICE": "b200", "MOE_ORACLE_TEST_SGLANG_TARGET": "sm100"}


@pytest.fixture(scope="module")
def b200_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("sglang-b200-models")
    return {family: write_model(root / family, family) for family in ("qwen3_bf16", "glm45", "deepseek_v3_bf16")}


@pytest.mark.parametrize(
    ("family", "block", "layer"),
    [
        ("qwen3_bf16", "Qwen3MoeSparseMoeBlock", "0"),
        ("glm45", "Glm4MoeSparseMoeBlock", "1"),
        ("deepseek_v3_bf16", "DeepseekV2MoE", "1"),
    ],
)
def test_b200_resolution_flashinfer_trtllm_blocks_match_the_fp32_reference(
    b200_models: dict[str, str], family: str, block: str, layer: str
) -> None:
    """D1 (issue #29): on SM100 SGLang's own model overrides turn ``--moe-runner-backend auto`` into
    ``flashinfer_trtllm`` for Qwen3-MoE, GLM-4.x and the DeepSeek family (``model_overrides/qwen3_moe.py``,
    ``glm4_moe.py``, ``arg_groups/overrides.py``); its loader then fills w13 as ``[up; gate]``
    (``fused_moe_triton/layer.py:1375-1380``) and its CUDA ``TopK`` returns a ``BypassedTopKOutput``. The plug-in layer
    reads the order SGLang really loaded and materializes the bypassed top-k with ``to_standard()``: the block matches
    the FP32 reference within the BF16 recipe's tolerance (before: calc_diff 0.17, and ``AttributeError`` on the
    bypassed top-k). Both roles resolve SGLang's server args for SM100 with SGLang's ``override_platform``."""
    model = b200_models[family]
    plan = _run(["launch", model], {**B200, "MOE_ORACLE_SGLANG_BACKEND": "emulation:sm100_bf16"})
    assert "refused" not in plan, plan
    out = _run(["serve", model, family, layer], {**B200, "MOE_ORACLE_SGLANG_PLAN": plan["plan"]})
    row = out["layers"][layer]
    assert row["block"] == block and row["served"]
    assert row["runner"] == "flashinfer_trtllm" and row["topk_format"] == "BYPASSED"
    assert row["loaded_up_first"] and not row["loaded_as_checkpoint"]  # SGLang's loader: [up; gate]
    assert row["w13_up_first"]  # ... and the layer read it so
    assert row["expert_params"] == 0 and row["quant_method_name"][1] == "UnquantizedFusedMoEMethod"
    assert row["tolerance"] == 2e-5
    assert row["calc_diff"] < row["tolerance"], row
    # SGLang's CUDA TopK output for this runner, materialized by the layer with to_standard()
    assert row["cuda_topk_output"] == "BypassedTopKOutput" and row["cuda_topk_error"] is None
    assert row["calc_diff_cuda_topk"] < row["tolerance"], row
    if family == "deepseek_v3_bf16":  # the TRT-LLM runners fold the routed scaling factor into the top-k weights
        assert row["fused_in_topk"] and not row["whole_block"] and row["scale"] == 1.0
        assert row["weights_sum"] == [pytest.approx(2.827, rel=1e-3)] * 9
    else:
        assert row["whole_block"]


def test_each_ep_rank_dispatches_its_slice_once() -> None:
    from moe_oracle.engines.sglang.layer import token_slice

    for tokens in (0, 1, 7, 8, 9, 64):
        for ep in (1, 2, 8):
            slices = [token_slice(tokens, ep, r) for r in range(ep)]
            assert [i for lo, hi in slices for i in range(lo, hi)] == list(range(tokens))


def test_the_plan_reaches_sglangs_own_scheduler_process(models: dict[str, str]) -> None:
    """SGLang's ``run_scheduler_process`` on the CPU: it loads the plug-ins (``scheduler.py:6323``), publishes the
    server args, initializes the process groups and starts loading the model; the plug-in's ``BEFORE`` hook on
    ``ModelRunner.load_model`` names the plan it inherited. The CPU build stops right after, in the first attention
    layer: ``rotary_embedding/base.py:138`` imports ``vllm._custom_ops`` where SGLang is neither on CUDA nor in its
    CPU engine (whose ``sgl_kernel`` CPU ops the PyPI wheel lacks), so no MoE layer is built there."""
    from moe_oracle.engines.sglang.plugin import received_line

    plan = _plan(models["qwen3"], FP8_TWIN)
    out, log = _proc(["schedule", models["qwen3"]], {"MOE_ORACLE_SGLANG_PLAN": plan})
    line = received_line(json.loads(plan))
    assert line.endswith("moe (layers 0-1): deep_gemm_mega_moe:sm90_fp8xfp8")
    assert line in log and log.index(line) < log.index("Load weight begin")
    if out["init_info"] is None:  # the CPU stop: reported, and it is the one named above
        assert out["signals"] == ["SIGQUIT"] and "Scheduler hit an exception" in log
        assert "rotary_embedding/base.py" in log and "No module named 'vllm'" in log
