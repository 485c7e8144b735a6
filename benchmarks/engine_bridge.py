"""The engine adapters' engine-free part on one H200: engine-shaped parameters -> moe-oracle layer -> forward.

What the plug-ins do inside vLLM (out-of-tree ``RoutedExperts``) and SGLang (``FusedMoE`` replaced through
its HookRegistry), minus the engine (neither installs on the lent machine: SGLang 0.5.23 needs torch
2.14.1): parameters are created exactly as the engine's quant methods create them
(:func:`moe_oracle.engines.bridge.parameter_shapes`; ``--engine vllm``: vLLM 0.33's ``Mxfp4MoEMethod`` for
the V4 checkpoints and ``Fp8MoEMethod`` block-128; ``--engine sglang``: SGLang 0.5.23's ``Fp8MoEMethod``,
whose DeepSeek V4 MXFP4 experts are int8 values with float32 power-of-two scales, and its block-128 FP8),
filled with checkpoint-format experts (random masters quantized to the format, as the engine's loader
leaves them: :func:`moe_oracle.engines.bridge.engine_parameters`), handed to :class:`MegaMoEBridge` (the
weight transform into the real SM90 kernel's layout, the engine's copies freed), and the forward is
called with the engines' argument order (``x, topk_weights, topk_ids``, int32 ids).

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

Run on the H200 with a DeepGEMM build that has the SM90 kernels:
``python benchmarks/engine_bridge.py --engine vllm`` and ``python benchmarks/engine_bridge.py --engine sglang``.
Neither imports vllm or sglang.
"""

from __future__ import annotations

import argparse

import torch
from _shapes import group as shape_group
from _timing import Condition, time_interleaved

from moe_oracle.engines.bridge import LayerPlan, MegaMoEBridge, check_parameters, engine_parameters
from moe_oracle.model.resolve import resolve_model
from moe_oracle.model.types import QuantSpec
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


def params_on_gpu(engine: str, experts, g) -> dict[str, torch.Tensor]:
    """Parameters shaped as the engine's create_weights makes them, filled as its loader would, checked."""
    params = {n: t.cuda() for n, t in engine_parameters(engine, experts, g).items()}
    check_parameters(params, g, experts.num_experts, engine=engine)
    return params


def row(bridge, twin, experts, g, t: int, gen: torch.Generator) -> str:
    x = torch.randn(t, g.hidden_size, device="cuda", generator=gen).bfloat16()
    logits = torch.randn(t, g.num_experts, device="cuda", generator=gen)
    ids, w = route(g, logits, bias=torch.zeros(g.num_experts, device="cuda"))
    ids32 = ids.int()  # vLLM's and SGLang's routers return int32 ids
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


def run_case(engine: str, model_id: str, fmt: str, variant: str, tokens: tuple[int, ...], max_tokens: int) -> None:
    if model_id.startswith("shape:"):
        g = shape_group(model_id.removeprefix("shape:"), FORMATS[fmt])
    else:
        g = resolve_model(model_id).main_group.model_copy(update={"weight_quant": FORMATS[fmt]})
    plan = LayerPlan(group=g, variant=variant, max_tokens_per_rank=max_tokens)
    bridge = MegaMoEBridge.for_plan(plan, device="cuda", engine=engine)
    w13, w2 = random_masters(g, torch.Generator(device="cuda").manual_seed(1))
    experts = quantize_experts(w13, w2, g.weight_quant)
    del w13, w2
    params = params_on_gpu(engine, experts, g)
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
    del params  # the engine's copies freed, as the plug-ins do after process_weights_after_loading
    twin = build_layer("emulation:" + variant.split(":")[1], bridge.layer.config, experts)
    hint = bridge.layer.takes_block_m_hint
    print(f"\n== {model_id} ({fmt} experts, {engine} parameters) -> {bridge.layer.key}")
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
    ap.add_argument("--engine", choices=("vllm", "sglang"), default="vllm", help="whose parameter layout")
    ap.add_argument("--cases", default="0,1,2,3,4,5", help="comma list of indices into CASES")
    ap.add_argument("--tokens", default=",".join(map(str, TOKENS)))
    ap.add_argument("--max-tokens", type=int, default=8192, help="per-rank token budget (sizes the buffer)")
    ap.add_argument(
        "--pdl",
        action="store_true",
        help="turn DeepGEMM's programmatic dependent launch on for the run (deep_gemm.set_pdl(True)), as SGLang does "
        "by default (SGLANG_DEEPGEMM_PDL)",
    )
    args = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("this benchmark measures a GPU: no CUDA device is visible")
    if args.pdl:
        import deep_gemm

        deep_gemm.set_pdl(True)
        print("DeepGEMM PDL on: every path's kernels launch as programmatic dependents")
    tokens = tuple(int(t) for t in args.tokens.split(","))
    for i in (int(c) for c in args.cases.split(",")):
        run_case(args.engine, *CASES[i], tokens, args.max_tokens)


if __name__ == "__main__":
    main()
