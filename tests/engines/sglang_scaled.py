"""Scaled real-config MoE blocks built by SGLang 0.5.23's own classes on the CPU, one process per role.

Run by ``tests/engines/test_real_sglang_layer.py`` (each role is a fresh interpreter: SGLang loads plug-ins once
per process, and the plug-in registers its ``FusedMoE`` replacement only where the inherited plan asks for it):

``python -m tests.engines.sglang_scaled launch MODEL_DIR [SGLANG FLAGS...]``
    the launching process: ``load_plugins()``, ``prepare_server_args`` and ``check_server_args`` for an SM90
    target (SGLang's platform override, ``MOE_ORACLE_SGLANG_DEVICE``); prints ``{"plan": ...}`` or
    ``{"refused": ...}``.
``python -m tests.engines.sglang_scaled schedule MODEL_DIR``
    SGLang's own ``run_scheduler_process`` (``managers/scheduler.py:6310``) in a spawned process, as SGLang's
    engine starts it (``--device cpu --load-format dummy``); the child logs to this process's stderr, and its
    failure signal (``SIGQUIT`` to the parent, ``scheduler.py:6370-6373``) is caught here. Prints
    ``{"signals": [...], "init_info": ...}``.
``python -m tests.engines.sglang_scaled serve MODEL_DIR FAMILY LAYER...``
    a scheduler process, as ``run_scheduler_process`` starts (``managers/scheduler.py:6322-6342``):
    ``load_plugins()``, ``publish(server_args, role="scheduler")`` and ``init_parallel_runtime`` (gloo, world
    size 1, ``--device cpu``); then the quantization config SGLang's loader derives
    (``model_loader/loader.py:174-282``), the model's own MoE block class for each decoder ``LAYER``, the
    experts filled through SGLang's expert-parameter mapping and ``weight_loader`` (what the model's
    ``load_weights`` calls), ``process_weights_after_loading`` on every quant method (``loader.py:1080-1090``),
    and the served block's forward (gate, SGLang's ``TopK``, moe-oracle's layer, shared experts) against
    moe-oracle's FP32 reference on the same weights and SGLang's own top-k output. Prints one JSON object.

The whole model is not built: on a CPU SGLang's attention layers need its CPU engine (``SGLANG_USE_CPU_ENGINE=1``),
whose kernels (``sgl_kernel`` CPU ops) the PyPI wheel does not ship (``rotary_embedding/base.py:126-140`` imports
``vllm._custom_ops`` otherwise), so the MoE blocks are built alone, by the same constructors the decoder layers call.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
#: the GPU generation both roles resolve SGLang's server args for (SGLang's own platform override): sm90, sm100
TARGET_ENV = "MOE_ORACLE_TEST_SGLANG_TARGET"
FIXTURES = ROOT / "tests" / "fixtures" / "models"

#: what every scaled model keeps within the SM90 kernels' contract (H % 512, I % 256; backends/cuda_sm90)
_SCALED = dict(hidden_size=512, moe_intermediate_size=256, intermediate_size=1024, num_hidden_layers=2,
               num_attention_heads=4, num_key_value_heads=4, vocab_size=1024, max_position_embeddings=4096)  # fmt: skip


def qwen3_config() -> dict[str, Any]:
    """Qwen3-30B-A3B-FP8 (softmax top-8, renormalized; FP8 block-128 experts), 32 experts: top-k kept."""
    cfg = json.loads((FIXTURES / "Qwen--Qwen3-30B-A3B-FP8" / "config.json").read_text())
    cfg.update(_SCALED, head_dim=128, num_experts=32, bos_token_id=0, eos_token_id=1)
    quant = cfg["quantization_config"]
    kept = [m for m in quant["modules_to_not_convert"] if not m.startswith("model.layers.") or m.split(".")[2] in "01"]
    cfg["quantization_config"] = {**quant, "modules_to_not_convert": kept}
    return cfg


def kimi_k2_config() -> dict[str, Any]:
    """Kimi-K2-Instruct (``DeepseekV3ForCausalLM``: sigmoid + correction bias, top-8 renormalized, one group,
    routed scaling 2.827, one shared expert; FP8 block-128), 32 experts, first layer dense, one MTP layer.

    The shared experts stay BF16 (``modules_to_not_convert``): SGLang's FP8 block linear has no CPU kernel."""
    cfg = json.loads((FIXTURES / "moonshotai--Kimi-K2-Instruct" / "config.json").read_text())
    cfg.pop("auto_map", None)
    cfg.update(_SCALED, n_routed_experts=32, first_k_dense_replace=1, num_nextn_predict_layers=1, kv_lora_rank=128,
               q_lora_rank=256, bos_token_id=0, eos_token_id=1, pad_token_id=0)  # fmt: skip
    shared = [f"model.layers.{i}.mlp.shared_experts.{p}" for i in (1, 2) for p in ("gate_proj", "up_proj", "down_proj")]
    cfg["quantization_config"] = {**cfg["quantization_config"], "modules_to_not_convert": ["lm_head", *shared]}
    return cfg


def deepseek_v4_config() -> dict[str, Any]:
    """DeepSeek-V4-Flash (sqrtsoftplus + bias, hash routing on layer 0, SwiGLU clamp 10, routed scaling 1.5; MXFP4
    experts), 32 experts, 4 layers; BF16 shared experts as for Kimi-K2."""
    cfg = json.loads((ROOT / "moe_oracle" / "presets" / "deepseek-ai--DeepSeek-V4-Flash" / "config.json").read_text())
    cfg.update(_SCALED, compress_ratios=[0, 4, 128, 0], head_dim=128, index_n_heads=8, n_routed_experts=32,
               num_attention_heads=8, num_hash_layers=1, num_hidden_layers=4, num_nextn_predict_layers=0,
               o_lora_rank=256, q_lora_rank=256)  # fmt: skip
    shared = [
        f"model.layers.{i}.mlp.shared_experts.{p}" for i in range(4) for p in ("gate_proj", "up_proj", "down_proj")
    ]
    cfg["quantization_config"] = {**cfg["quantization_config"], "modules_to_not_convert": shared}
    return cfg


def qwen3_bf16_config() -> dict[str, Any]:
    """Qwen3-30B-A3B (BF16 experts, softmax top-8 renormalized), 32 experts."""
    cfg = json.loads((FIXTURES / "Qwen--Qwen3-30B-A3B" / "config.json").read_text())
    cfg.update(_SCALED, head_dim=128, num_experts=32, bos_token_id=0, eos_token_id=1)
    return cfg


def glm45_config() -> dict[str, Any]:
    """GLM-4.5-Air (``Glm4MoeForCausalLM``: sigmoid + correction bias, top-8 renormalized, one shared expert, routed
    scaling 1.0; BF16), 32 experts, first layer dense, no MTP layer."""
    cfg = json.loads((FIXTURES / "reconstructed--GLM-4.5-Air" / "config.json").read_text())
    cfg.update(_SCALED, head_dim=128, n_routed_experts=32, first_k_dense_replace=1, num_nextn_predict_layers=0,
               bos_token_id=0, eos_token_id=1, pad_token_id=0)  # fmt: skip
    return cfg


def deepseek_v3_bf16_config() -> dict[str, Any]:
    """A BF16 ``DeepseekV3ForCausalLM`` block (Kimi-K2-Instruct's routing: sigmoid + correction bias, top-8
    renormalized, routed scaling 2.827, one shared expert), without a quantization config, as Moonlight-16B-A3B
    ships: SGLang's SM100 resolution finds no FP8 weights in the checkpoint, keeps BF16 and picks
    ``flashinfer_trtllm`` (``arg_groups/overrides.py:786-831``)."""
    cfg = kimi_k2_config()
    cfg.pop("quantization_config")
    return cfg


CONFIGS = {
    "qwen3": qwen3_config,
    "kimi_k2": kimi_k2_config,
    "deepseek_v4": deepseek_v4_config,
    "qwen3_bf16": qwen3_bf16_config,
    "glm45": glm45_config,
    "deepseek_v3_bf16": deepseek_v3_bf16_config,
}


def write_model(directory: Path, family: str) -> str:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps(CONFIGS[family]()))
    return str(directory)


# ---------------------------------------------------------------------------------------------
# the launching process
# ---------------------------------------------------------------------------------------------


def launch(model: str, flags: list[str]) -> dict[str, Any]:
    from sglang.srt.plugins import load_plugins

    load_plugins()
    from sglang.srt.runtime_context import override_platform
    from sglang.srt.server_args import prepare_server_args

    from tests.engines.test_real_sglang import FACTS

    with override_platform(**FACTS[os.environ.get(TARGET_ENV, "sm90")]):
        server_args = prepare_server_args(["--model-path", model, "--device", "cuda", *flags])
        with contextlib.suppress(RuntimeError):  # its CUDA probes; check_server_args runs on the record anyway
            server_args.resolve_once()
        try:
            server_args.check_server_args()
        except ValueError as exc:
            return {"refused": str(exc)}
    return {"plan": os.environ.get("MOE_ORACLE_SGLANG_PLAN")}


# ---------------------------------------------------------------------------------------------
# a scheduler process
# ---------------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _scheduler(model: str, flags: list[str] = ()) -> Any:
    """SGLang's scheduler start-up, as far as the model: plug-ins, the published server args, the process groups.

    With ``MOE_ORACLE_TEST_SGLANG_TARGET`` set (``sm100``), the server args are resolved and published for that GPU
    under SGLang's own platform override (``runtime_context.override_platform``) and the MoE flags seeded from them
    as the scheduler does (``initialize_moe_config``, ``managers/scheduler.py:1008``): SGLang's own model overrides
    choose the MoE runner (on SM100, ``flashinfer_trtllm`` for Qwen3-MoE, GLM-4.x and the DeepSeek family). The
    layers are then built and run on this CPU, outside the override."""
    from sglang.srt.plugins import load_plugins

    load_plugins()
    from sglang.srt.distributed.bootstrap import init_parallel_runtime
    from sglang.srt.runtime_context import SpawnRanks, override_platform, publish
    from sglang.srt.server_args import prepare_server_args

    target = os.environ.get(TARGET_ENV)
    args = ["--model-path", model, "--device", "cuda" if target else "cpu", "--skip-tokenizer-init", *flags]
    if target:
        from sglang.srt.layers.moe import initialize_moe_config

        from tests.engines.test_real_sglang import FACTS

        with override_platform(**FACTS[target]):
            server_args = prepare_server_args(args)
            with contextlib.suppress(RuntimeError):  # its CUDA probes; the resolution is recorded anyway
                server_args.resolve_once()
            publish(server_args, role="scheduler", ranks=SpawnRanks(world_rank=0, gpu_id=0))
        initialize_moe_config()
    else:
        server_args = prepare_server_args(args)
        publish(server_args, role="scheduler", ranks=SpawnRanks(world_rank=0, gpu_id=0))
    init_parallel_runtime(server_args=server_args, device="cpu", dist_port=_free_port())
    return server_args


def _blocks(server_args: Any, family: str, layers: list[int]) -> tuple[Any, dict[int, Any]]:
    import torch
    from sglang.srt.configs.load_config import LoadConfig
    from sglang.srt.configs.model_config import ModelConfig
    from sglang.srt.model_loader.loader import _get_quantization_config
    from sglang.srt.model_loader.utils import set_default_torch_dtype

    model_config = ModelConfig.from_server_args(server_args)
    quant_config = _get_quantization_config(model_config, LoadConfig())
    hf = model_config.hf_config
    blocks = {}
    with set_default_torch_dtype(torch.bfloat16), torch.device("cpu"):
        for i in layers:
            prefix = f"model.layers.{i}.mlp"
            if family.startswith("qwen3"):
                from sglang.srt.models.qwen3_moe import Qwen3MoeSparseMoeBlock

                blocks[i] = Qwen3MoeSparseMoeBlock(layer_id=i, config=hf, quant_config=quant_config, prefix=prefix)
            elif family == "glm45":
                from sglang.srt.models.glm4_moe import Glm4MoeSparseMoeBlock

                blocks[i] = Glm4MoeSparseMoeBlock(config=hf, layer_id=i, quant_config=quant_config, prefix=prefix)
            else:
                from sglang.srt.models.deepseek_v2 import DeepseekV2MoE

                nextn = i >= hf.num_hidden_layers  # the MTP layer: DeepseekV3ForCausalLMNextN builds it so
                v4 = family == "deepseek_v4"  # deepseek_v4.py:3155-3167 builds the same class so
                blocks[i] = DeepseekV2MoE(
                    hf, i, quant_config=quant_config, prefix=prefix, is_nextn=nextn, is_deepseek_v4=v4
                )
    return quant_config, blocks


def _checkpoint(group: Any, seed: int) -> tuple[Any, dict[tuple[int, str], Any]]:
    """moe-oracle's quantized experts in the group's checkpoint format and the per-expert checkpoint tensors."""
    import torch

    from moe_oracle.engines.bridge import engine_parameters
    from moe_oracle.runtime.accuracy import random_masters
    from moe_oracle.runtime.quantize import quantize_experts

    experts = quantize_experts(*random_masters(group, torch.Generator().manual_seed(seed)), group.weight_quant)
    # as SGLang's quant method stores them (MXFP4: int8 values, float32 power-of-two scales)
    p = engine_parameters("sglang", experts, group)
    w13, w2 = p["w13_weight"], p["w2_weight"]
    i = group.moe_intermediate_size
    tensors = {}
    for e in range(group.num_experts):
        tensors[e, "gate_proj.weight"], tensors[e, "up_proj.weight"] = w13[e, :i], w13[e, i:]
        tensors[e, "down_proj.weight"] = w2[e]
    if "w13_weight_scale_inv" in p:  # BF16 experts have none
        s13, s2 = p["w13_weight_scale_inv"], p["w2_weight_scale_inv"]
        si = s13.shape[1] // 2
        for e in range(group.num_experts):
            tensors[e, "gate_proj.weight_scale_inv"] = s13[e, :si]
            tensors[e, "up_proj.weight_scale_inv"] = s13[e, si:]
            tensors[e, "down_proj.weight_scale_inv"] = s2[e]
    return experts, tensors


def _load(block: Any, tensors: dict[tuple[int, str], Any], num_experts: int) -> None:
    """The experts through SGLang's expert-parameter mapping and ``weight_loader`` (the models' ``load_weights``)."""
    from sglang.srt.layers.moe.fused_moe_triton.layer import FusedMoE

    params = dict(block.named_parameters())
    mapping = FusedMoE.make_expert_params_mapping("gate_proj", "down_proj", "up_proj", num_experts)
    for (e, rest), tensor in tensors.items():
        name = f"experts.{e}.{rest}"
        param_name, weight_name, expert_id, shard_id = next(m for m in mapping if m[1] in name)
        target = name.replace(weight_name, param_name)
        param = params[target]
        param.weight_loader(param, tensor, target, shard_id=shard_id, expert_id=expert_id)


def _init_rest(block: Any, seed: int) -> None:
    """The router and the shared experts (not under test): small random values."""
    import torch

    g = torch.Generator().manual_seed(seed)
    for name, p in block.named_parameters():
        if not name.startswith("experts."):
            scale = 0.01 if name.endswith("e_score_correction_bias") else 0.1 if name.startswith("gate.") else 0.02
            p.data.copy_((torch.randn(p.shape, generator=g) * scale).to(p.dtype))


def _post_load(block: Any) -> None:
    """What SGLang's loader runs after ``load_weights`` (``DefaultModelLoader.postprocess_weights``)."""
    for module in block.modules():
        method = getattr(module, "quant_method", None)
        if method is not None:
            method.process_weights_after_loading(module)


def _describe(block: Any) -> dict[str, Any]:
    from sglang.srt.layers.quantization.fp8 import Fp8MoEMethod

    experts = block.experts
    method = type(experts.quant_method)
    return {
        "block": type(block).__qualname__,
        "experts": [type(experts).__module__, type(experts).__qualname__],
        "served": experts._moe_oracle is not None,
        "quant_method_is_sglangs": method is Fp8MoEMethod,
        "quant_method_name": [method.__module__, method.__qualname__],
        "forward_is_fusedmoe": type(experts).forward is not None and experts._moe_oracle is None,
        "expert_params": int(experts.w13_weight.numel() + experts.w2_weight.numel()),
        "fused_in_topk": bool(experts.should_fuse_routed_scaling_factor_in_topk),
        "runner_routed_scaling_factor": experts.moe_runner_config.routed_scaling_factor,
        "scale": getattr(experts, "_moe_oracle_scale", None),
        "runner": str(getattr(experts.runner_backend, "value", experts.runner_backend)),
        # HashTopK (DeepSeek V4's hash-routed layers) has no TopKConfig
        "topk_format": getattr(getattr(getattr(block.topk, "topk_config", None), "output_format", None), "name", None),
        "w13_up_first": bool(experts._moe_oracle.w13_up_first) if experts._moe_oracle is not None else None,
    }


def serve(model: str, family: str, layers: list[int]) -> dict[str, Any]:
    import torch

    from moe_oracle.engines.sglang.layer import RUNNER_SCALES, _plan_for
    from moe_oracle.runtime import calc_diff, reference_moe, route
    from moe_oracle.runtime.tolerance import recipe_tolerance

    server_args = _scheduler(model)
    _, blocks = _blocks(server_args, family, layers)
    out: dict[str, Any] = {"runner_scales": RUNNER_SCALES, "layers": {}}
    served = [i for i, b in blocks.items() if b.experts._moe_oracle is not None]
    plan = _plan_for(served[0]) if served else None
    for i, block in blocks.items():
        group = plan.group if plan is not None else None
        if group is None:
            raise SystemExit("no layer of this launch is served by moe-oracle")
        experts, tensors = _checkpoint(group, seed=3 + i)
        _load(block, tensors, group.num_experts)
        loaded = block.experts.w13_weight.view(torch.uint8)
        loaded_as_checkpoint = torch.equal(loaded, experts.w13.view(torch.uint8))
        inter = loaded.shape[1] // 2
        loaded_up_first = torch.equal(loaded, torch.cat([experts.w13[:, inter:], experts.w13[:, :inter]], 1).view(
            torch.uint8
        ))  # fmt: skip
        _init_rest(block, seed=1 + i)
        _post_load(block)
        row = {**_describe(block), "loaded_as_checkpoint": loaded_as_checkpoint, "loaded_up_first": loaded_up_first}
        if i in served:
            # DeepSeek V4's shared experts clamp their SwiGLU with a CUDA JIT kernel (silu_and_mul_clamp.py:48); a
            # block whose TopK folds the routed scaling factor in (the TRT-LLM runners) scales again after the experts
            # on a CPU (deepseek_v2.py:1415-1421, a CUDA build does not): there the layer's call is checked
            rsf = group.routing.routed_scaling_factor or 1.0
            folded = bool(block.experts.should_fuse_routed_scaling_factor_in_topk) and rsf != 1.0
            whole = family != "deepseek_v4" and not folded
            row.update(_forward(block, group, experts, calc_diff, reference_moe, route, whole))
            row["tolerance"] = recipe_tolerance(*_recipe(block))
        out["layers"][str(i)] = row
    return out


def _recipe(block: Any) -> tuple[Any, Any]:
    recipe = block.experts._moe_oracle.layer.recipe
    return recipe.l1_input, recipe.l2_input


def _forward(
    block: Any, group: Any, experts: Any, calc_diff: Any, reference_moe: Any, route: Any, whole_block: bool
) -> dict[str, Any]:
    """The block's forward (gate, SGLang's TopK, moe-oracle's layer, shared experts, routed scaling) against the FP32
    reference; ``whole_block`` False: the layer's call as the block makes it (SGLang's gate and TopK, then
    ``experts(x, topk_output)``), for a block whose shared experts have no CPU kernel."""
    import torch

    tokens = 9
    x = (torch.randn(tokens, group.hidden_size, generator=torch.Generator().manual_seed(4)) * 0.5).bfloat16()
    rsf = group.routing.routed_scaling_factor or 1.0
    with torch.no_grad():
        logits = block.gate(x)
        logits = logits[0] if isinstance(logits, tuple) else logits
        topk = block.topk(x, logits)
        if whole_block:
            y = block(x.clone())
            shared = block.shared_experts(x) if getattr(block, "shared_experts", None) is not None else 0 * x
            routed, scale = y.float() - shared.float(), rsf
        else:
            y = block.experts(x.clone(), topk)
            routed, scale = y.float(), block.experts._moe_oracle_scale
        # SGLang's TopK with the factor folded in (what a quant method declaring fuse_routed_scaling_factor_in_topk
        # gets): the same experts, the weights times the factor
        from dataclasses import replace

        from sglang.srt.layers.moe.topk import select_experts

        folded = replace(block.topk.topk_config, apply_routed_scaling_factor_on_output=True)
        folded_topk = select_experts(x, logits, folded)
        # what SGLang's CUDA TopK hands the experts for the resolved runner (forward_cuda: a BypassedTopKOutput under
        # the TRT-LLM runners, topk.py:793-807, 927-936; it runs no kernel there): the layer materializes it with
        # to_standard(), here SGLang's torch-native selection (the config is marked native by the CPU forward above)
        # (only for a bypassed format: a standard one runs SGLang's CUDA top-k kernel, which this CPU lacks)
        cuda_topk, y_cuda, cuda_error = None, None, None
        if (
            getattr(getattr(getattr(block.topk, "topk_config", None), "output_format", None), "name", None)
            == "BYPASSED"
        ):
            cuda_topk = block.topk.forward_cuda(x, logits)
            try:
                y_cuda = block.experts(x.clone(), cuda_topk)
            except Exception as exc:  # reported (a layer that cannot take the format), not a crash of the role
                cuda_error = f"{type(exc).__name__}: {exc}"
    bias = getattr(block.gate, "e_score_correction_bias", None)
    ids, weights = topk.topk_ids.long(), topk.topk_weights
    own_ids, own_weights = route(group, logits.float(), bias=None if bias is None else bias.data)
    ref = reference_moe(x, ids, weights, experts, group.activation) * scale
    # moe-oracle's routing carries the routed scaling factor in its weights
    own_ref = reference_moe(x, own_ids, own_weights, experts, group.activation) * (scale / rsf)
    return {
        "whole_block": whole_block,
        "topk_output": type(topk).__name__,
        "weights_sum": [round(float(s), 5) for s in weights.sum(-1)],
        "folded_same_ids": bool(torch.equal(folded_topk.topk_ids.long(), ids)),
        "folded_weights_ratio": float((folded_topk.topk_weights / weights).mean()),
        "same_experts_as_moe_oracle_routing": bool(torch.equal(ids.sort(-1).values, own_ids.sort(-1).values)),
        "tokens_routed_differently": int((ids.sort(-1).values != own_ids.sort(-1).values).any(-1).sum()),
        "logits_dtype": str(logits.dtype),
        "calc_diff": calc_diff(routed, ref),
        "cuda_topk_output": None if cuda_topk is None else type(cuda_topk).__name__,
        # the experts' output; the whole block multiplies it by the factor on a CPU (``scale`` above)
        "calc_diff_cuda_topk": None
        if y_cuda is None
        else calc_diff(y_cuda.float() * (rsf if whole_block else 1.0), ref),
        "cuda_topk_error": cuda_error,
        "calc_diff_moe_oracle_routing": calc_diff(routed, own_ref),
        "shape": list(y.shape),
        "dtype": str(y.dtype),
    }


def schedule(model: str, timeout_s: float = 400.0) -> dict[str, Any]:
    import multiprocessing as mp
    import signal
    import time

    from sglang.srt.managers.scheduler import run_scheduler_process
    from sglang.srt.server_args import PortArgs, prepare_server_args

    signals: list[str] = []
    signal.signal(signal.SIGQUIT, lambda *_: signals.append("SIGQUIT"))
    args = ["--model-path", model, "--device", "cpu", "--skip-tokenizer-init", "--load-format", "dummy"]
    server_args = prepare_server_args(args)
    reader, writer = mp.Pipe(duplex=False)
    child = mp.get_context("spawn").Process(
        target=run_scheduler_process, args=(server_args, PortArgs.init_new(server_args), 0, 0, 0, None, writer)
    )
    child.start()
    start, info = time.time(), None
    while time.time() - start < timeout_s and child.is_alive() and not signals:
        if reader.poll(1):
            info = str(reader.recv())[:500]
            break
    if child.is_alive():
        child.kill()
    child.join()
    return {"signals": signals, "init_info": info}


def main(argv: list[str]) -> None:
    sys.path.insert(0, str(ROOT))
    role, model, *rest = argv
    if role == "launch":
        result = launch(model, rest)
    elif role == "schedule":
        result = schedule(model)
    else:
        family, *layers = rest
        result = serve(model, family, [int(i) for i in layers])
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1:])
