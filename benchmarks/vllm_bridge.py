"""The vLLM adapter's vLLM-free part on one H200: vLLM-shaped parameters -> moe-oracle layer -> forward.

What the plug-in's out-of-tree ``RoutedExperts`` does inside vLLM, minus vLLM (which cannot be
installed on the lent machine): parameters are created exactly as vLLM 0.33's quant methods create
them (:func:`moe_oracle.engines.vllm.bridge.vllm_parameter_shapes`: ``Mxfp4MoEMethod`` for the V4
checkpoints, ``Fp8MoEMethod`` block-128 for GLM-5-FP8), filled with checkpoint-format experts (random
masters quantized to the format), handed to :class:`MegaMoEBridge` (the weight transform into the
real SM90 kernel's layout, vLLM's copies freed), and the forward is called with vLLM's argument
order (``x, topk_weights, topk_ids``, int32 ids as vLLM's router returns them).

One run, side by side, for both shapes and both formats:

1. correctness first, on fresh random inputs: calc_diff against the emulation twin and the FP32
   reference (dequantized weights);
2. time, each as a CUDA-graph replay after warm-up (CUDA events, L2 flushed), the two paths
   interleaved round by round (``_timing.time_interleaved``: 7 rounds of 5 replays, order rotating): the
   bridge's forward (staging + kernel, as vLLM would call it), the bare kernel on pre-staged
   inputs, and the bridge / kernel ratio (the adapter's overhead; target <= 1.01 at T = 1) with the
   range of the per-round ratios, and the SM clock / board power range during the row;
3. load: time and peak extra memory of ``bridge.load`` (vLLM's parameters -> kernel layout),
   in layers of the checkpoint's expert bytes, with vLLM's copies freed after.

Run on the H200 with a DeepGEMM build that has the SM90 kernels: ``python benchmarks/vllm_bridge.py``.
"""

from __future__ import annotations

import argparse

import torch
from _shapes import group as shape_group
from _timing import Condition, time_interleaved

from moe_oracle.engines.vllm.bridge import LayerPlan, MegaMoEBridge, check_parameters, vllm_parameter_shapes
from moe_oracle.model.resolve import resolve_model
from moe_oracle.model.types import QuantSpec, WeightFormat
from moe_oracle.runtime import calc_diff, reference_moe, route
from moe_oracle.runtime.accuracy import random_masters
from moe_oracle.runtime.build import build_layer
from moe_oracle.runtime.quantize import quantize_experts
from moe_oracle.runtime.vendor import resolve_attr

CASES = (
    ("deepseek-ai/DeepSeek-V4-Flash", "mxfp4", "deep_gemm_mega_moe:sm90_fp8xfp4"),
    ("deepseek-ai/DeepSeek-V4-Flash", "fp8_block", "deep_gemm_mega_moe:sm90_fp8xfp8"),
    ("zai-org/GLM-5-FP8", "fp8_block", "deep_gemm_mega_moe:sm90_fp8xfp8"),
    ("zai-org/GLM-5-FP8", "mxfp4", "deep_gemm_mega_moe:sm90_fp8xfp4"),
    # Qwen3-MoE FP8 block-128 checkpoints (Qwen3-30B-A3B-FP8, Qwen3-235B-A22B-FP8): vLLM's Fp8MoEMethod parameters
    ("shape:qwen3-30b-a3b", "fp8_block", "deep_gemm_mega_moe:sm90_fp8xfp8"),
    ("shape:qwen3-235b-a22b", "fp8_block", "deep_gemm_mega_moe:sm90_fp8xfp8"),
)
FORMATS = {
    "mxfp4": QuantSpec(format="mxfp4", block=(1, 32), scale_format="ue8m0"),
    "fp8_block": QuantSpec(format="fp8_block", block=(128, 128), scale_format="fp32"),
}
TOKENS = (1, 8, 64, 512, 2048)


def vllm_params(experts, fmt: WeightFormat, g) -> dict[str, torch.Tensor]:
    """Parameters shaped as vLLM's create_weights makes them, filled as vLLM's loader would."""
    shapes = vllm_parameter_shapes(fmt, experts.num_experts, g.hidden_size, g.moe_intermediate_size)
    src = {
        WeightFormat.MXFP4: {
            "w13_weight": experts.w13,
            "w13_weight_scale": experts.w13_scale,
            "w2_weight": experts.w2,
            "w2_weight_scale": experts.w2_scale,
        },
        WeightFormat.FP8_BLOCK: {
            "w13_weight": experts.w13,
            "w13_weight_scale_inv": experts.w13_scale,
            "w2_weight": experts.w2,
            "w2_weight_scale_inv": experts.w2_scale,
        },
    }[fmt]
    params = {}
    for name, (shape, dtype) in shapes.items():
        p = torch.empty(shape, dtype=dtype, device="cuda")
        p.view(torch.uint8).copy_(src[name].contiguous().view(torch.uint8).view(p.view(torch.uint8).shape))
        params[name] = p
    check_parameters(params, g, experts.num_experts)
    return params


def row(bridge, twin, experts, g, t: int, gen: torch.Generator) -> str:
    x = torch.randn(t, g.hidden_size, device="cuda", generator=gen).bfloat16()
    logits = torch.randn(t, g.num_experts, device="cuda", generator=gen)
    ids, w = route(g, logits, bias=torch.zeros(g.num_experts, device="cuda"))
    ids32 = ids.int()  # vLLM's router returns int32 ids by default
    y = bridge.forward(x, w, ids32).float().clone()
    rows = torch.randperm(t, device="cuda", generator=gen)[: min(t, 256)]
    ref = reference_moe(twin.quantized_input(x)[rows], ids[rows], w[rows], experts, g.activation)
    d_twin = calc_diff(y, twin(x, ids, w).float())
    d_ref = calc_diff(y[rows], ref)
    assert torch.isfinite(y).all() and d_ref < 1e-3, (t, d_twin, d_ref)
    layer = bridge.layer
    call = layer.kernel_call(t)
    kernel = resolve_attr(layer.dg, call.function)
    cond = Condition()
    tm = time_interleaved(
        {"bridge": lambda: bridge.forward(x, w, ids32), "kernel": lambda: kernel(*call.args, **call.kwargs)},
        condition=cond,
    )
    ours, bare = tm["bridge"], tm["kernel"]
    return (
        f"{t:5d} {d_twin:9.2e} {d_ref:9.2e} {ours.us:9.1f} {bare.us:9.1f} {ours.us / bare.us:7.3f} "
        f"{ours.spread:6.1%} {bare.spread:6.1%}  {cond.text()}"
    )


def run_case(model_id: str, fmt: str, variant: str, tokens: tuple[int, ...], max_tokens: int) -> None:
    if model_id.startswith("shape:"):
        g = shape_group(model_id.removeprefix("shape:"), FORMATS[fmt])
    else:
        g = resolve_model(model_id).main_group.model_copy(update={"weight_quant": FORMATS[fmt]})
    plan = LayerPlan(group=g, variant=variant, max_tokens_per_rank=max_tokens)
    bridge = MegaMoEBridge.for_plan(plan, device="cuda")
    w13, w2 = random_masters(g, torch.Generator(device="cuda").manual_seed(1))
    experts = quantize_experts(w13, w2, g.weight_quant)
    del w13, w2
    params = vllm_params(experts, g.weight_format, g)
    layer_bytes = sum(p.numel() * p.element_size() for p in params.values())
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    bridge.load(params)
    end.record()
    end.synchronize()
    extra = (torch.cuda.max_memory_allocated() - base) / layer_bytes
    del params  # vLLM's copies freed, as the plug-in does after process_weights_after_loading
    twin = build_layer("emulation:" + variant.split(":")[1], bridge.layer.config, experts)
    hint = bridge.layer.takes_block_m_hint
    print(f"\n== {model_id} ({fmt} experts, vLLM parameters) -> {bridge.layer.key}")
    print(
        f"   load: {start.elapsed_time(end):.1f} ms, peak extra {extra:.2f} layers "
        f"({layer_bytes / (1 << 30):.2f} GiB per layer); kernel takes num_tokens_for_block_m: {hint}"
    )
    print(
        f"{'T':>5} {'diff/twin':>9} {'diff/ref':>9} {'bridge us':>9} {'kernel us':>9} {'br/kern':>7} "
        f"{'spread':>6} {'spread':>6}  condition"
    )
    gen = torch.Generator(device="cuda").manual_seed(0)
    for t in tokens:
        print(row(bridge, twin, experts, g, t, gen))
    bridge.layer.close()
    del bridge, twin, experts
    torch.cuda.empty_cache()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--cases", default="0,1,2,3,4,5", help="comma list of indices into CASES")
    ap.add_argument("--tokens", default=",".join(map(str, TOKENS)))
    ap.add_argument("--max-tokens", type=int, default=8192, help="per-rank token budget (sizes the buffer)")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("this benchmark measures a GPU: no CUDA device is visible")
    tokens = tuple(int(t) for t in args.tokens.split(","))
    for i in (int(c) for c in args.cases.split(",")):
        run_case(*CASES[i], tokens, args.max_tokens)


if __name__ == "__main__":
    main()
