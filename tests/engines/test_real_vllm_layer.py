"""moe-oracle's out-of-tree ``RoutedExperts`` inside the real vLLM 0.33.0 (skipped where vLLM is not installed).

Run with ``tests/engines/run_real_vllm.sh``. On a CPU machine (``VLLM_TARGET_DEVICE=cpu``,
``MOE_ORACLE_VLLM_DEVICE=h200``) the tests build vLLM's real MoE block (``DeepseekV2MoE`` for a
scaled-down GLM-5-FP8, the DeepSeek-V4 CPU ``DeepseekV4MoE`` for a scaled-down DeepSeek-V4-Flash)
under a ``VllmConfig`` from ``EngineArgs(...).create_engine_config()`` with the plug-in loaded through
its ``vllm.general_plugins`` entry point and ``--additional-config '{"moe_oracle": {"backend":
"emulation:<variant>"}}'``; vLLM's own loader fills the parameters from synthetic checkpoint-format
weights, ``process_weights_after_loading`` runs as vLLM's loader runs it, and the block's forward (gate,
vLLM's router, moe-oracle's layer, shared experts) is compared with moe-oracle's FP32 reference.

Registry state: vLLM has no unregister. The plug-in registers ``MoEOracleRoutedExperts`` once per
process, exactly as in a vLLM worker; every test here runs with that registration (checked against
``op_registry_oot``), and a layer without a plan must be vLLM's own code path.
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

vllm = pytest.importorskip("vllm")
torch = pytest.importorskip("torch")

from moe_oracle.engines.vllm import plugin as P  # noqa: E402
from moe_oracle.engines.vllm.shipped import KEY, plan_for_layer  # noqa: E402

PRESETS = Path(__file__).resolve().parents[2] / "moe_oracle" / "presets"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "models"
GLM_LAYER = 1  # first_k_dense_replace 1: layer 1 is the MoE layer
FP8_BOUND = 3e-3  # the twin tolerance of FP8 experts (calc_diff), as tests/engines/test_vllm_bridge.py


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def records() -> Iterator[list[logging.LogRecord]]:
    """The plug-in's log records (vLLM's logging config is applied first: its dictConfig drops handlers)."""
    from vllm.engine.arg_utils import EngineArgs
    from vllm.logger import configure_logging_if_needed

    configure_logging_if_needed(EngineArgs(model=str(PRESETS / "zai-org--GLM-5-FP8")).create_logging_config())
    h = _Records()
    log = logging.getLogger(P.LOGGER_NAME)
    old = log.level
    log.addHandler(h)
    log.setLevel(logging.DEBUG)
    yield h.records
    log.removeHandler(h)
    log.setLevel(old)


def _gpu() -> bool:
    return bool(torch.cuda.is_available())


if not _gpu():
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")


def _cpu_gemm_ops_missing() -> bool:
    """On an AMX CPU vLLM 0.33's CPU platform packs small bf16 dense weights with ``torch.ops._C``'s
    ``convert_weight_packed`` (``model_executor/layers/utils.py:501-630``, ``check_cpu_sgl_kernel``); the CUDA
    wheel this harness installs (PyPI has no 0.33 CPU wheel) ships no such op."""
    if _gpu() or not torch.cpu._is_amx_tile_supported():
        return False
    try:
        torch.ops._C.convert_weight_packed  # noqa: B018
    except (AttributeError, RuntimeError):
        return True
    return False


@pytest.fixture(autouse=True)
def portable_cpu_gemm(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where that op is missing, vLLM is shown a CPU without AMX tiles, so its dense linears (the gate and the
    shared experts around the MoE under test) take the path it takes on every other x86 CPU
    (``torch.nn.functional.linear``); the experts, the router and moe-oracle's layer are untouched."""
    if _cpu_gemm_ops_missing():
        monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: False)


# ---------------------------------------------------------------------------------------------
# scaled-down checkpoint configs (from the presets; small enough for a 2-core CPU)
# ---------------------------------------------------------------------------------------------


def _glm_config() -> dict[str, Any]:
    cfg = json.loads((PRESETS / "zai-org--GLM-5-FP8" / "config.json").read_text())
    cfg.update(
        eos_token_id=[1],
        pad_token_id=0,
        first_k_dense_replace=GLM_LAYER,
        hidden_size=512,
        intermediate_size=1024,
        moe_intermediate_size=256,
        n_routed_experts=16,
        num_experts_per_tok=4,
        n_group=4,
        topk_group=2,
        num_hidden_layers=2,
        num_nextn_predict_layers=0,
        num_attention_heads=4,
        num_key_value_heads=4,
        index_n_heads=4,
        kv_lora_rank=128,
        q_lora_rank=256,
        vocab_size=1024,
    )
    # the FP8 dense linears (shared experts, gate) have no kernel on a CPU without AMX (vllm_api.md §h failure 1)
    shared = [f"model.layers.{i}.mlp.shared_experts.{n}" for i in (1, 2) for n in ("gate_up_proj", "down_proj")]
    cfg["quantization_config"] = {
        **cfg["quantization_config"],
        "modules_to_not_convert": ["lm_head", "model.embed_tokens", "model.layers.1.mlp.gate", *shared],
    }
    return cfg


def _v4_config(expert_dtype: str) -> dict[str, Any]:
    cfg = json.loads((PRESETS / "deepseek-ai--DeepSeek-V4-Flash" / "config.json").read_text())
    cfg.update(
        expert_dtype=expert_dtype,
        compress_ratios=[0, 4, 128, 0],
        head_dim=128,
        hidden_size=512,
        index_n_heads=8,
        moe_intermediate_size=256,
        n_routed_experts=16,
        num_attention_heads=8,
        num_experts_per_tok=4,
        num_hash_layers=1,
        num_hidden_layers=4,
        num_nextn_predict_layers=0,
        o_lora_rank=256,
        q_lora_rank=256,
        vocab_size=1024,
    )
    shared = [f"model.layers.{i}.ffn.shared_experts.{n}" for i in range(4) for n in ("gate_up_proj", "down_proj")]
    cfg["quantization_config"] = {**cfg["quantization_config"], "modules_to_not_convert": shared}
    return cfg


#: what the scaled Qwen3-MoE and MiniMax-M2 keep of their real configs: architecture, routing, quantization
SCALED = dict(hidden_size=512, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4, head_dim=128,
              vocab_size=1024, num_experts_per_tok=4, max_position_embeddings=4096)  # fmt: skip


def _qwen3_config() -> dict[str, Any]:
    """Qwen3-30B-A3B-FP8 (softmax top-k, renormalized; FP8 block-128 experts), scaled down."""
    cfg = json.loads((FIXTURES / "Qwen--Qwen3-30B-A3B-FP8" / "config.json").read_text())
    cfg.update(SCALED, intermediate_size=1024, moe_intermediate_size=256, num_experts=16)
    return cfg


def _minimax_config() -> dict[str, Any]:
    """MiniMax-M2.5 (sigmoid + correction bias, renormalized, fp32 router; FP8 block-128 experts), scaled down."""
    cfg = json.loads((FIXTURES / "MiniMaxAI--MiniMax-M2.5" / "config.json").read_text())
    cfg.update(SCALED, intermediate_size=256, num_local_experts=16, rotary_dim=64, use_mtp=False)
    return cfg


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    out = {}
    for name, cfg in (
        ("glm", _glm_config()),
        ("v4", _v4_config("fp4")),
        ("v4_fp8", _v4_config("fp8")),
        ("qwen3", _qwen3_config()),
        ("minimax", _minimax_config()),
    ):
        d = tmp_path_factory.mktemp(name)
        (d / "config.json").write_text(json.dumps(cfg))
        out[name] = str(d)
    return out


# ---------------------------------------------------------------------------------------------
# vLLM: the plug-in through its entry point, configs, one process group
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def oot() -> type:
    """The plug-in loaded as vLLM loads general plugins; the registry holds moe-oracle's class."""
    from vllm.model_executor.custom_op import op_registry_oot
    from vllm.plugins import load_general_plugins

    load_general_plugins()
    from moe_oracle.engines.vllm.layer import MoEOracleRoutedExperts

    assert op_registry_oot.get("RoutedExperts") is MoEOracleRoutedExperts
    return MoEOracleRoutedExperts


@pytest.fixture
def h200(monkeypatch: pytest.MonkeyPatch) -> None:
    if _gpu():
        pytest.skip("a dry check for a named GPU: needs a machine without a GPU")
    monkeypatch.setenv(P.ENV_DEVICE, "h200")
    for k in (P.ENV_SWITCH, "MOE_ORACLE_VLLM_BACKEND"):
        monkeypatch.delenv(k, raising=False)


def engine_config(model: str, backend: str | None = None, moe_backend: str | None = None, **kw: Any) -> Any:
    from vllm.engine.arg_utils import EngineArgs

    args: dict[str, Any] = {
        "model": model,
        "load_format": "dummy",
        "skip_tokenizer_init": True,
        "tensor_parallel_size": 1,
        "max_num_batched_tokens": 2048,
        "max_model_len": 1024,
        "enforce_eager": True,
        **kw,
    }
    if backend is not None:
        args["additional_config"] = {KEY: {"backend": backend}}
    if moe_backend is not None:
        args["moe_backend"] = moe_backend
    return EngineArgs(**args).create_engine_config()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def dist(models: dict[str, str], oot: type) -> None:
    """World size 1 (gloo): vLLM's layers read the TP/EP groups at construction."""
    from vllm.config import set_current_vllm_config
    from vllm.distributed import init_distributed_environment, initialize_model_parallel
    from vllm.distributed.parallel_state import model_parallel_is_initialized

    if model_parallel_is_initialized():
        return
    cfg = engine_config(models["glm"])
    with set_current_vllm_config(cfg):
        url = f"tcp://127.0.0.1:{_free_port()}"
        init_distributed_environment(world_size=1, rank=0, local_rank=0, distributed_init_method=url, backend="gloo")
        initialize_model_parallel(1, 1)


def _build(cfg: Any, make: Any) -> Any:
    from vllm.config import set_current_vllm_config

    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)  # what the model loader does for a bf16 model
    try:
        with set_current_vllm_config(cfg), torch.device("cpu"):
            return make()
    finally:
        torch.set_default_dtype(old)


def build_glm(cfg: Any, *, scale_on_output: bool) -> Any:
    from vllm.model_executor.models.deepseek_v2 import DeepseekV2MoE

    return _build(
        cfg,
        lambda: DeepseekV2MoE(
            config=cfg.model_config.hf_config,
            parallel_config=cfg.parallel_config,
            quant_config=cfg.quant_config,
            prefix=f"model.layers.{GLM_LAYER}.mlp",
            apply_routed_scale_to_output=scale_on_output,
        ),
    )


def build_v4(cfg: Any, layer: int) -> Any:
    from vllm.models.deepseek_v4 import DeepseekV4ForCausalLM

    mod = sys.modules[DeepseekV4ForCausalLM.__module__]
    return _build(cfg, lambda: mod.DeepseekV4MoE(cfg, prefix=f"model.layers.{layer}.ffn"))


def post_load(block: Any) -> None:
    """What vLLM's loader does after ``load_weights`` (model_loader/utils.py ``process_weights_after_loading``)."""
    from vllm.model_executor.layers.quantization.base_config import QuantizeMethodBase

    for m in block.modules():
        qm = getattr(m, "quant_method", None)
        if isinstance(qm, QuantizeMethodBase):
            qm.process_weights_after_loading(m)


# ---------------------------------------------------------------------------------------------
# synthetic checkpoint-format experts and the reference
# ---------------------------------------------------------------------------------------------


def checkpoint_weights(
    group: Any, seed: int = 3, names: tuple[str, str, str] = ("gate_proj", "up_proj", "down_proj")
) -> tuple[Any, dict[str, Any]]:
    """moe-oracle's quantized experts in the group's checkpoint format, and the same tensors under the
    checkpoint's per-expert names (relative to vLLM's runner: ``{e}.gate_proj.weight``, ``..._scale_inv``)."""
    from moe_oracle.model.types import WeightFormat
    from moe_oracle.runtime.accuracy import random_masters
    from moe_oracle.runtime.quantize import quantize_experts

    w13, w2 = random_masters(group, torch.Generator().manual_seed(seed))
    quant = group.weight_quant
    experts = quantize_experts(w13, w2, quant)
    i = group.moe_intermediate_size
    scale = "weight_scale_inv" if quant.format is WeightFormat.FP8_BLOCK else "weight_scale"
    si = experts.w13_scale.shape[1] // 2
    s13, s2 = experts.w13_scale, experts.w2_scale
    if quant.format is WeightFormat.FP8_BLOCK and s13.dtype == torch.uint8:  # UE8M0: stored as float8_e8m0fnu
        s13, s2 = s13.view(torch.float8_e8m0fnu), s2.view(torch.float8_e8m0fnu)
    gate, up, down = names
    ws: dict[str, Any] = {}
    for e in range(group.num_experts):
        ws[f"{e}.{gate}.weight"] = experts.w13[e, :i]
        ws[f"{e}.{up}.weight"] = experts.w13[e, i:]
        ws[f"{e}.{down}.weight"] = experts.w2[e]
        ws[f"{e}.{gate}.{scale}"] = s13[e, :si]
        ws[f"{e}.{up}.{scale}"] = s13[e, si:]
        ws[f"{e}.{down}.{scale}"] = s2[e]
    return experts, ws


def init_router_and_shared(block: Any, seed: int = 1) -> None:
    g = torch.Generator().manual_seed(seed)
    gate = block.gate
    gate.weight.data.copy_((torch.randn(gate.weight.shape, generator=g) * 0.1).to(gate.weight.dtype))
    bias = getattr(gate, "e_score_correction_bias", None)
    if bias is not None:
        bias.data.copy_(torch.randn(bias.shape, generator=g) * 0.01)
    for p in block.shared_experts.parameters():
        p.data.copy_((torch.randn(p.shape, generator=g) * 0.02).to(p.dtype))


def run_block(block: Any, cfg: Any, x: Any, input_ids: Any = None) -> tuple[Any, Any, Any, Any]:
    """(block output, shared-expert output, vLLM's routed weights, ids) for ``x``, through vLLM's objects."""
    from vllm.config import set_current_vllm_config
    from vllm.forward_context import set_forward_context

    runner = block.experts
    with set_current_vllm_config(cfg), set_forward_context(None, cfg):
        y = block(x.clone()) if input_ids is None else block(x.clone(), input_ids)
        logits, _ = runner.gate(x)
        weights, ids = runner.router.select_experts(hidden_states=x, router_logits=logits, input_ids=input_ids)
        shared = block.shared_experts(x)
    return y, shared, weights, ids, logits


# ---------------------------------------------------------------------------------------------
# the tests
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("scale_on_output", [True, False], ids=["cpu-decoder", "cuda-decoder"])
def test_glm5_fp8_block_through_moe_oracle_matches_the_fp32_reference(
    models: dict[str, str], dist: None, h200: None, oot: type, scale_on_output: bool
) -> None:
    from moe_oracle.runtime import calc_diff, reference_moe, route

    cfg = engine_config(models["glm"], "emulation:sm90_fp8xfp8")
    plan = plan_for_layer(cfg.additional_config, GLM_LAYER)
    assert plan is not None and plan.emulate and plan.variant == "deep_gemm_mega_moe:sm90_fp8xfp8"
    assert plan.max_tokens_per_rank == 8192  # the H200's vLLM default, not the CPU's 2048
    block = build_glm(cfg, scale_on_output=scale_on_output)
    re_ = block.experts.routed_experts
    assert type(re_) is oot and re_._moe_oracle is not None
    qm = re_.quant_method
    assert type(qm).__name__ == "Fp8MoEMethod" and not qm.is_monolithic and qm.supports_internal_mk
    group = plan.group
    assert group.weight_quant.label() == "fp8_block 128x128 fp32"
    experts, ws = checkpoint_weights(group)
    loaded = set(block.experts.load_weights(iter(ws.items())))  # vLLM's own weight loader
    assert loaded >= {"routed_experts.w13_weight", "routed_experts.w2_weight_scale_inv"}
    assert torch.equal(re_.w13_weight.view(torch.uint8), experts.w13.view(torch.uint8))
    post_load(block)
    assert re_._moe_oracle.loaded and re_.w13_weight.numel() == 0  # vLLM's copies freed
    init_router_and_shared(block)

    x = (torch.randn(7, group.hidden_size, generator=torch.Generator().manual_seed(4)) * 0.5).bfloat16()
    y, shared, weights, ids, logits = run_block(block, cfg, x)
    assert y.shape == x.shape and y.dtype == torch.bfloat16
    rsf = group.routing.routed_scaling_factor
    assert torch.allclose(weights.sum(-1), torch.full((7,), 1.0 if scale_on_output else rsf), atol=1e-4)
    # moe-oracle's routing of the same logits picks the same experts as vLLM's router
    ref_ids, ref_w = route(group, logits, bias=block.gate.e_score_correction_bias.data)
    assert torch.equal(ids.long().sort(-1).values, ref_ids.sort(-1).values)
    routed = y.float() - shared.float()
    scale = rsf if scale_on_output else 1.0
    ref = reference_moe(x, ids.long(), weights, experts, group.activation) * scale
    assert calc_diff(routed, ref) < FP8_BOUND, calc_diff(routed, ref)
    assert calc_diff(routed, reference_moe(x, ref_ids, ref_w, experts, group.activation)) < FP8_BOUND


def _cpu_router_op(layer: int) -> str | None:
    """The ``vllm._C`` CPU op vLLM's CPURouter needs for DeepSeek-V4 routing, when this vLLM build lacks it."""
    op = "hash_topk_cpu" if layer == 0 else "biased_topk_cpu"
    try:
        getattr(torch.ops._C, op)
    except (AttributeError, RuntimeError):
        return op
    return None


def _v4_block(models: dict[str, str], layer: int) -> tuple[Any, Any, Any, Any, Any]:
    """(config, plan, block, experts, generator): DeepSeek-V4's CPU MoE block, loaded and post-processed."""
    cfg = engine_config(models["v4_fp8"], "emulation:sm90_fp8xfp8")
    plan = plan_for_layer(cfg.additional_config, layer)
    assert plan is not None and plan.group.routing.hash is (layer == 0)
    block = build_v4(cfg, layer)
    experts, ws = checkpoint_weights(plan.group, seed=5 + layer)
    loaded = set(block.experts.load_weights(iter(ws.items())))  # a generator: vLLM's loader runs as it is consumed
    assert loaded >= {"routed_experts.w13_weight", "routed_experts.w13_weight_scale_inv"}
    post_load(block)
    init_router_and_shared(block, seed=6 + layer)
    g = torch.Generator().manual_seed(7)
    if block.gate.tid2eid is not None:
        from moe_oracle.runtime.routing import random_hash_table

        table = random_hash_table(block.gate.tid2eid.shape[0], plan.group.num_experts, plan.group.top_k, generator=g)
        block.gate.tid2eid.data.copy_(table.to(torch.int32))
    return cfg, plan, block, experts, g


def _v4_route(block: Any, group: Any, logits: Any, input_ids: Any) -> tuple[Any, Any]:
    from moe_oracle.runtime import route

    bias = None if block.gate.e_score_correction_bias is None else block.gate.e_score_correction_bias.data
    table = None if block.gate.tid2eid is None else block.gate.tid2eid.data
    return route(group, logits, bias=bias, token_ids=input_ids, hash_table=table)


@pytest.mark.parametrize("layer", [0, 1], ids=["hash-layer", "bias-layer"])
def test_deepseek_v4_fp8_experts_through_moe_oracle_match_the_fp32_reference(
    models: dict[str, str], dist: None, h200: None, oot: type, layer: int
) -> None:
    """DeepSeek-V4's CPU MoE block (sqrtsoftplus + bias, hash routing on layer 0, swiglu clamp 10): vLLM builds
    it with moe-oracle's layer, loads the experts, post-processes them; the layer's ``forward_modular`` (the
    runner's call) on moe-oracle's routing of vLLM's gate logits matches the FP32 reference.

    FP8 experts (``expert_dtype: fp8``): vLLM 0.33 cannot construct its MXFP4 quant method on a CPU
    (no MXFP4 backend; ``--moe-backend emulation`` needs amd-quark and then refuses the CPU device)."""
    from vllm.config import set_current_vllm_config

    from moe_oracle.runtime import calc_diff, reference_moe

    cfg, plan, block, experts, g = _v4_block(models, layer)
    re_ = block.experts.routed_experts
    assert type(re_) is oot and re_._moe_oracle is not None and re_._moe_oracle.loaded
    assert type(re_.quant_method).__name__ == "Fp8MoEMethod"
    group = plan.group
    x = (torch.randn(9, group.hidden_size, generator=g) * 0.5).bfloat16()
    input_ids = torch.randint(0, 1024, (9,), generator=g)
    with set_current_vllm_config(cfg):
        logits, _ = block.experts.gate(x)
        ids, w = _v4_route(block, group, logits, input_ids)
        y = re_.forward_modular(x, w, ids.to(torch.int32))
    assert y.shape == x.shape and y.dtype == torch.bfloat16
    ref = reference_moe(x, ids, w, experts, group.activation)
    assert calc_diff(y.float(), ref) < FP8_BOUND, calc_diff(y.float(), ref)


@pytest.mark.parametrize("layer", [0, 1], ids=["hash-layer", "bias-layer"])
def test_deepseek_v4_full_block_with_vllms_router(
    models: dict[str, str], dist: None, h200: None, oot: type, layer: int
) -> None:
    """The whole block (gate, vLLM's router, moe-oracle's layer, shared experts) where vLLM's CPU router runs."""
    missing = _cpu_router_op(layer)
    if missing is not None:
        pytest.skip(f"vLLM's CPURouter needs torch.ops._C.{missing}, which this vLLM build (the CUDA wheel) lacks")
    from moe_oracle.runtime import calc_diff, reference_moe

    cfg, plan, block, experts, g = _v4_block(models, layer)
    group = plan.group
    x = (torch.randn(9, group.hidden_size, generator=g) * 0.5).bfloat16()
    input_ids = torch.randint(0, 1024, (9,), generator=g)
    y, shared, weights, ids, logits = run_block(block, cfg, x, input_ids)
    ref_ids, _ = _v4_route(block, group, logits, input_ids)
    assert torch.equal(ids.long().sort(-1).values, ref_ids.sort(-1).values)
    assert torch.allclose(weights.sum(-1), torch.full((9,), group.routing.routed_scaling_factor), atol=1e-4)
    routed = y.float() - shared.float()
    assert calc_diff(routed, reference_moe(x, ids.long(), weights, experts, group.activation)) < FP8_BOUND


# ---------------------------------------------------------------------------------------------
# what is left to vLLM, refusals, the shipped plan, the table
# ---------------------------------------------------------------------------------------------


def test_a_layer_without_a_plan_is_vllms_own_code_path(
    models: dict[str, str], dist: None, h200: None, oot: type
) -> None:
    from vllm.model_executor.layers.quantization.fp8 import Fp8MoEMethod

    cfg = engine_config(models["glm"], "vllm")  # moe_oracle.backend=vllm: moe-oracle serves no layer
    assert plan_for_layer(cfg.additional_config, GLM_LAYER) is None
    block = build_glm(cfg, scale_on_output=True)
    re_ = block.experts.routed_experts
    assert type(re_) is oot and re_._moe_oracle is None  # the registered class, deferring to vLLM in every method
    assert type(re_.quant_method) is Fp8MoEMethod  # vLLM's own class, not adopted
    assert re_.quant_method.process_weights_after_loading.__func__ is Fp8MoEMethod.process_weights_after_loading


def test_an_explicit_variant_that_cannot_run_is_refused_before_any_weight_loads(
    models: dict[str, str], h200: None, oot: type
) -> None:
    """sm90_fp8xfp4 for the FP8 GLM checkpoint without the load-time conversion: refused by the config hook,
    inside ``create_engine_config`` (no model is built), one line per layer group."""
    from vllm.engine.arg_utils import EngineArgs

    extra = {KEY: {"backend": "deep_gemm_mega_moe:sm90_fp8xfp4", "convert": False}}
    args = EngineArgs(model=models["glm"], load_format="dummy", skip_tokenizer_init=True, additional_config=extra)
    with pytest.raises(ValueError, match=r"moe_oracle\.backend=deep_gemm_mega_moe:sm90_fp8xfp4 cannot run") as err:
        args.create_engine_config()
    text = str(err.value)
    assert text.count("layer group '") == 1 and "layer group 'moe' (layers 1)" in text
    assert "--allow-fallback" not in text and "--engine" not in text
    twin = dict(extra, **{KEY: {**extra[KEY], "backend": "emulation:sm90_fp8xfp4"}})
    with pytest.raises(ValueError, match="QUANT_UNSUPPORTED"):  # the twin is refused for the format too
        EngineArgs(
            model=models["glm"], load_format="dummy", skip_tokenizer_init=True, additional_config=twin
        ).create_engine_config()


def test_the_plan_reaches_another_process_through_the_pickled_config(
    models: dict[str, str], h200: None, oot: type, tmp_path: Path
) -> None:
    cfg = engine_config(models["glm"], "emulation:sm90_fp8xfp8")
    path = tmp_path / "vllm_config.pkl"
    path.write_bytes(pickle.dumps(cfg))
    code = (
        "import json, pickle, sys\n"
        "from moe_oracle.engines.vllm.shipped import plan_for_layer\n"
        "cfg = pickle.loads(open(sys.argv[1], 'rb').read())\n"
        f"plan = plan_for_layer(cfg.additional_config, {GLM_LAYER})\n"
        "print(json.dumps(None if plan is None else plan.to_json()))\n"
    )
    env = {**os.environ, "VLLM_PLUGINS": "none"}  # unpickling alone: no hook runs in the worker
    env.pop(P.ENV_DEVICE, None)
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    shipped = json.loads(done.stdout.strip().splitlines()[-1])
    assert shipped == plan_for_layer(cfg.additional_config, GLM_LAYER).to_json()
    assert shipped["variant"] == "deep_gemm_mega_moe:sm90_fp8xfp8" and shipped["emulate"] is True


def test_the_table_is_logged_once_at_info_and_at_debug_in_each_of_several_api_servers(
    models: dict[str, str], h200: None, oot: type, records: list[logging.LogRecord]
) -> None:
    engine_config(models["glm"], "emulation:sm90_fp8xfp8")
    heads = [r for r in records if "validated" in r.getMessage()]
    assert len(heads) == 1 and heads[0].levelno == logging.INFO and heads[0].name == P.LOGGER_NAME
    head = heads[0].getMessage()
    assert "h200 sm90 [device from MOE_ORACLE_VLLM_DEVICE]" in head and "8192 tokens/rank, 1024 seqs" in head
    lines = [r.getMessage() for r in records]
    assert "  note: max_num_batched_tokens 2048 is vLLM's CPU default; sized for h200's 8192" in lines
    assert "  note: max_num_seqs 128 is vLLM's CPU default; sized for h200's 1024" in lines
    assert {r.levelno for r in records} == {logging.INFO}
    records.clear()
    engine_config(models["glm"], "emulation:sm90_fp8xfp8", _api_process_count=2, _api_process_rank=1)
    assert records and {r.levelno for r in records} == {logging.DEBUG}
    assert sum("validated" in r.getMessage() for r in records) == 1
    # vllm serve --data-parallel-size 8: the parent builds the config with 8 API servers and rank -1
    # (entrypoints/cli/serve.py:309-313), then each API server with its rank: one INFO table per server
    for rank, level in ((-1, logging.INFO), *((r, logging.DEBUG) for r in range(8))):
        records.clear()
        engine_config(models["glm"], "emulation:sm90_fp8xfp8", data_parallel_size=8, enable_expert_parallel=True,
                      _api_process_count=8, _api_process_rank=rank)  # fmt: skip
        assert sum("validated" in r.getMessage() for r in records) == 1
        assert {r.levelno for r in records} == {level}, rank


def test_a_vllm_version_outside_the_range_leaves_vllm_alone_with_a_warning(
    models: dict[str, str], h200: None, oot: type
) -> None:
    from moe_oracle.engines.vllm.snapshot import snapshot_from_vllm
    from moe_oracle.releases import vllm as vllm_release

    cfg = engine_config(models["glm"], "emulation:sm90_fp8xfp8")
    snap = snapshot_from_vllm(cfg, "GlmMoeDsaForCausalLM")  # the real config's values
    assert snap.vllm_version == vllm.__version__ and vllm_release.flags.supported(snap.vllm_version)
    for version in ("0.32.1", "0.40.0"):
        out = P.resolve(replace(snap, vllm_version=version))
        assert out.action == "skip" and out.level == logging.WARNING and out.additional_config is None
        assert f"this is vLLM {version}; the plug-in leaves vLLM alone" in out.table[0]


# ---------------------------------------------------------------------------------------------
# issue 24: Qwen3-MoE and MiniMax-M2 through vLLM's own model classes
# ---------------------------------------------------------------------------------------------


def _family_block(models: dict[str, str], family: str) -> tuple[Any, Any, Any, Any]:
    """(config, plan, block, experts): vLLM's own MoE block of ``family`` with moe-oracle's layer, loaded by
    vLLM's weight loader and post-processed as vLLM's model loader does."""
    cfg = engine_config(models[family], "emulation:sm90_fp8xfp8")
    plan = plan_for_layer(cfg.additional_config, 0)
    assert plan is not None and plan.emulate and plan.variant == "deep_gemm_mega_moe:sm90_fp8xfp8"
    assert plan.group.weight_quant.label() == "fp8_block 128x128 fp32"
    if family == "qwen3":
        from vllm.model_executor.models.qwen3_moe import Qwen3MoeSparseMoeBlock

        block = _build(cfg, lambda: Qwen3MoeSparseMoeBlock(cfg, prefix="model.layers.0.mlp"))
        names = ("gate_proj", "up_proj", "down_proj")
    else:
        from vllm.model_executor.models.minimax_m2 import MiniMaxM2MoE

        hf = cfg.model_config.hf_config
        block = _build(
            cfg, lambda: MiniMaxM2MoE(hf, quant_config=cfg.quant_config, prefix="model.layers.0.block_sparse_moe")
        )
        names = ("w1", "w3", "w2")  # the checkpoint's gate, up, down (minimax_m2.py ckpt_names)
    experts, ws = checkpoint_weights(plan.group, seed=11, names=names)
    loaded = set(block.experts.load_weights(iter(ws.items())))
    assert loaded >= {"routed_experts.w13_weight", "routed_experts.w2_weight_scale_inv"}
    post_load(block)
    g = torch.Generator().manual_seed(12)
    block.gate.weight.data.copy_((torch.randn(block.gate.weight.shape, generator=g) * 0.1).to(block.gate.weight.dtype))
    bias = getattr(block, "e_score_correction_bias", None)
    if bias is not None:
        bias.data.copy_(torch.randn(bias.shape, generator=g) * 0.05)
    return cfg, plan, block, experts


@pytest.mark.parametrize("family", ["qwen3", "minimax"])
def test_qwen3_moe_and_minimax_m2_blocks_through_moe_oracle_match_the_fp32_reference(
    models: dict[str, str], dist: None, h200: None, oot: type, family: str
) -> None:
    """vLLM's own ``Qwen3MoeSparseMoeBlock`` / ``MiniMaxM2MoE`` built with moe-oracle's layer for the routed
    experts (the hook's plan, vLLM's weight loader and post-processing): the output equals the FP32 reference of
    moe-oracle's routing of the block's gate logits, within the twin's FP8 tolerance. Qwen3 runs the whole block
    (gate, vLLM's CPU router, the layer); MiniMax's sigmoid + bias routing has no vLLM CPU router, so its layer
    gets the runner's call (``forward_modular``) with that routing. Why (vLLM 0.33.0): on CPU the router factory
    always builds ``CPURouter`` (``router/router_factory.py:146-163``), whose sigmoid + correction bias exists only
    in ``_grouped_topk`` (``router/cpu_router.py:37-47``, taken when ``use_grouped_topk``, ``:211-222``);
    ``MiniMaxM2MoE`` passes no ``use_grouped_topk`` (``models/minimax_m2.py:96-108``), so its routing reaches
    ``assert self.scoring_func == "softmax"`` (``cpu_router.py:239``). The test pins that assertion: when vLLM
    grows the path, it fails and the whole block can be tested."""
    from vllm.config import set_current_vllm_config
    from vllm.forward_context import set_forward_context

    from moe_oracle.runtime import calc_diff, reference_moe, route

    cfg, plan, block, experts = _family_block(models, family)
    re_ = block.experts.routed_experts
    assert type(re_) is oot and re_._moe_oracle is not None and re_._moe_oracle.loaded
    assert type(re_.quant_method).__name__ == "Fp8MoEMethod" and re_.w13_weight.numel() == 0
    group = plan.group
    x = (torch.randn(11, group.hidden_size, generator=torch.Generator().manual_seed(13)) * 0.5).bfloat16()
    bias = getattr(block, "e_score_correction_bias", None)
    with set_current_vllm_config(cfg), set_forward_context(None, cfg):
        logits = block.gate(x)[0]
        ref_ids, ref_w = route(group, logits.float(), bias=None if bias is None else bias.data)
        if bias is None:  # the whole block: gate, vLLM's CPU router, moe-oracle's layer
            y = block(x.clone())
            _, ids = block.experts.router.select_experts(hidden_states=x, router_logits=logits)
            assert torch.equal(ids.long().sort(-1).values, ref_ids.sort(-1).values)  # vLLM's router = moe-oracle's
        else:  # vLLM 0.33's CPU router takes softmax only (router/cpu_router.py:239): the runner's call, as for DSv4
            with pytest.raises(AssertionError):  # the whole block cannot route on CPU: see the docstring
                block.experts.router.select_experts(hidden_states=x, router_logits=logits)
            y = re_.forward_modular(x, ref_w, ref_ids.to(torch.int32))
    assert y.shape == x.shape and y.dtype == torch.bfloat16
    ref = reference_moe(x, ref_ids, ref_w, experts, group.activation)
    assert calc_diff(y.float(), ref) < FP8_BOUND, calc_diff(y.float(), ref)


# ---------------------------------------------------------------------------------------------
# issue 21: an explicit choice is never ignored; every input is checked; the hook's own cost
# ---------------------------------------------------------------------------------------------


def _refusal(call: Any) -> str:
    with pytest.raises(ValueError) as err:  # pydantic wraps the hook's PluginRefusal into its ValidationError
        call()
    refusal = P.refusal_in(err.value)
    assert refusal is not None, err.value
    return str(refusal)


@pytest.mark.parametrize(
    ("env", "extra", "needle"),
    [
        ({"MOE_ORACLE_VLLM_BACKEND": "garbage"}, None, "MOE_ORACLE_VLLM_BACKEND = 'garbage' names no variant"),
        ({"MOE_ORACLE_DOMAIN_SIZE": "abc"}, None, "MOE_ORACLE_DOMAIN_SIZE='abc' is not a whole number"),
        ({"MOE_ORACLE_VLLM_PLUGIN": "maybe"}, None, "MOE_ORACLE_VLLM_PLUGIN='maybe' is neither on nor off"),
        ({}, {"plan": "garbage"}, "additional_config['moe_oracle']['plan'] = 'garbage'"),
        ({}, {"backend": "x" * 100_000}, "characters)"),
    ],
)
def test_every_input_is_checked_before_the_config_is_accepted(
    models: dict[str, str], h200: None, oot: type, monkeypatch: pytest.MonkeyPatch, env: dict, extra: Any, needle: str
) -> None:
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    kw = {} if extra is None else {"additional_config": {KEY: extra}}
    line = _refusal(lambda: engine_config(models["glm"], **kw))
    assert needle in line and "\n" not in line and len(line) < 400, line[:300]


def test_an_explicit_choice_on_an_architecture_the_layer_cannot_serve_is_refused(
    tmp_path: Path, h200: None, oot: type, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Llama-4 (router weight on the input): its hook runs too, and an explicit variant is refused, never ignored."""
    cfg = json.loads((FIXTURES / "meta-llama--Llama-4-Scout-17B-16E-Instruct" / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    from vllm.model_executor.models.config import MODELS_CONFIG_MAP

    assert getattr(MODELS_CONFIG_MAP.get("Llama4ForConditionalGeneration"), "_moe_oracle_wrapped", False)
    line = _refusal(lambda: engine_config(str(tmp_path), "emulation:sm90_fp8xfp8"))
    assert "moe_oracle.backend=emulation:sm90_fp8xfp8" in line or "cannot describe" in line, line[:300]
    monkeypatch.setenv("MOE_ORACLE_VLLM_BACKEND", "deep_gemm_mega_moe:sm90_fp8xfp8")
    assert "cannot" in _refusal(lambda: engine_config(str(tmp_path)))


def test_the_hooks_own_cost_is_under_half_a_second(models: dict[str, str]) -> None:
    """In a fresh process (every cache cold, as in each of vLLM's DP + 1 config-building processes): the CPU time
    ``create_engine_config`` spends inside the plug-in's hook, against the whole call without the plug-in."""
    code = f"""
import os, sys, time
os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
os.environ["MOE_ORACLE_VLLM_DEVICE"] = "h200"
from vllm.engine.arg_utils import EngineArgs
from moe_oracle.engines.vllm import plugin as P
spent = []
apply = P.apply_to_vllm_config
def timed(cfg, arch):
    t = time.process_time()
    try:
        return apply(cfg, arch)
    finally:
        spent.append(time.process_time() - t)
P.apply_to_vllm_config = timed
extra = {{"moe_oracle": {{"backend": "emulation:sm90_fp8xfp8"}}}}
args = EngineArgs(model={models["glm"]!r}, load_format="dummy", skip_tokenizer_init=True, data_parallel_size=8,
                  enable_expert_parallel=True, additional_config=extra)
t = time.process_time()
args.create_engine_config()
print(sum(spent), time.process_time() - t)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    hook, whole = (float(v) for v in out.stdout.split()[-2:])
    print(f"hook {hook:.3f} s CPU of create_engine_config {whole:.3f} s CPU")
    assert 0 < hook < 0.5, (hook, whole)
