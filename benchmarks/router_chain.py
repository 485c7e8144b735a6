"""Router logits -> top-k -> staged buffer -> SM90 mega kernel: moe-oracle's fused chain vs DeepGEMM's own, one run.

Chains, each captured in a CUDA graph and timed interleaved round by round (``_timing.time_interleaved``: L2
flushed before each replay, CUDA events, median of every replay, the spread of the per-round medians, SM clock
and board power read after each round), on the same inputs:

- **B, ours** (2 launches): ``layer.forward_logits`` = the fused router top-k + SM90 staging
  (:mod:`moe_oracle.kernels.router_triton`), then the kernel;
- **A, DeepGEMM's** (3+ launches): the engine's top-k, DeepGEMM's ``mega_moe_pre_dispatch_sm90``, the kernel,
  with two stand-ins for the engine's top-k: ``route()`` in torch (several launches, then the int32 cast the
  pre-dispatch needs) and a one-launch top-k (``route_topk``: the same routing kernel without the staging,
  writing int32 ids, like the engines' fused top-k kernels);
- **unfused ours**: the one-launch top-k + moe-oracle's staging + kernel (what the fusion alone saves);
- **kernel**: the bare kernel on a staged buffer.

Before timing, per T: ``forward_logits`` takes the fused path, leaves the buffer byte-identical to
``forward(route(...))``, and its ids/weights equal route()'s; the one-launch top-k equals route() too.
Logits ``N(0, 1)`` fp32, correction bias ``0.1 N(0, 1)`` (every expert about equally likely), DeepGEMM's PDL
switch off (its default). Buffer capacity ``--max-tokens`` (8192: DeepGEMM's pre-dispatch pads rows up to it,
the SM90 staging does not need to: the kernel reads rows below T only).

Run on the H200 with DeepGEMM PR #323: ``python benchmarks/router_chain.py [--json FILE]``.
"""

from __future__ import annotations

import argparse
import json

import torch
from _timing import Condition, time_interleaved

from moe_oracle.kernels.router_triton import route_topk
from moe_oracle.kernels.staging_triton import stage
from moe_oracle.model.resolve import resolve_model
from moe_oracle.model.types import QuantSpec
from moe_oracle.runtime import LayerConfig, RoutingPath, build_layer, calc_diff, route
from moe_oracle.runtime.accuracy import random_masters
from moe_oracle.runtime.quantize import quantize_experts
from moe_oracle.runtime.vendor import resolve_attr

MXFP4 = QuantSpec(format="mxfp4", block=(1, 32), scale_format="ue8m0")
FP8 = QuantSpec(format="fp8_block", block=(128, 128), scale_format="fp32")
VARIANTS = {"sm90_fp8xfp4": MXFP4, "sm90_fp8xfp8": FP8}
MODELS = ("deepseek-ai/DeepSeek-V4-Flash", "zai-org/GLM-5-FP8")
PATHS = ("ours", "dg_torch", "dg_1launch", "unfused", "kernel")


def check(layer, g, x, logits, bias) -> str:
    """Correctness before timing (module docstring); returns a short note."""
    t, buf = x.shape[0], layer.buffer
    assert layer.routing_path(x, logits, bias) is RoutingPath.FUSED
    ids, w = route(g, logits, bias=bias)
    y_ref = layer(x, ids, w).float().clone()
    views = (buf.x.view(torch.uint8), buf.x_sf, buf.topk_idx, buf.topk_weights)
    ref = [v[:t].clone() for v in views]
    for v in views:
        v[:t].fill_(0)
    y = layer.forward_logits(x, logits, bias=bias).float()
    same = all(torch.equal(a, v[:t]) for a, v in zip(ref, views, strict=True))
    assert same and torch.equal(buf.topk_idx[:t], ids) and torch.equal(buf.topk_weights[:t], w), t
    ti = torch.empty(t, g.top_k, dtype=torch.int32, device="cuda")
    tw = torch.empty(t, g.top_k, device="cuda")
    route_topk(g.routing, g.top_k, logits, ti, tw, bias=bias)
    assert torch.equal(ti.long(), ids) and torch.equal(tw, w)
    return f"buffer identical, y diff {calc_diff(y, y_ref):.1e}"


def chains(layer, g, x, logits, bias) -> dict:
    dg, t, buf = layer.dg, x.shape[0], layer.buffer
    call = layer.kernel_call(t)
    kernel = resolve_attr(dg, call.function)
    pre = dg.mega_moe_pre_dispatch_sm90
    ids32 = torch.empty(t, g.top_k, dtype=torch.int32, device="cuda")
    w32 = torch.empty(t, g.top_k, device="cuda")
    ids64 = torch.empty(t, g.top_k, dtype=torch.int64, device="cuda")
    recipe = layer.STAGING.triton_recipe

    def run_kernel() -> None:
        kernel(*call.args, **call.kwargs)

    def dg_torch() -> None:
        ids, w = route(g, logits, bias=bias)
        pre(x, ids.int(), w, buf.x, buf.x_sf, buf.topk_idx, buf.topk_weights, t)
        run_kernel()

    def dg_1launch() -> None:
        route_topk(g.routing, g.top_k, logits, ids32, w32, bias=bias)
        pre(x, ids32, w32, buf.x, buf.x_sf, buf.topk_idx, buf.topk_weights, t)
        run_kernel()

    def unfused() -> None:
        route_topk(g.routing, g.top_k, logits, ids64, w32, bias=bias)
        stage(x, ids64, w32, buf.x[:t], buf.x_sf[:t], buf.topk_idx, buf.topk_weights, recipe=recipe, pad_to=t)
        run_kernel()

    return {
        "ours": lambda: layer.forward_logits(x, logits, bias=bias),
        "dg_torch": dg_torch,
        "dg_1launch": dg_1launch,
        "unfused": unfused,
        "kernel": run_kernel,
    }


def run_case(model: str, variant: str, tokens, max_tokens: int, rounds: int, out: list) -> None:
    quant = VARIANTS[variant]
    g = resolve_model(model).main_group.model_copy(update={"weight_quant": quant})
    layer = build_layer(f"deep_gemm_mega_moe:{variant}", LayerConfig(group=g, max_tokens_per_rank=max_tokens))
    w13, w2 = random_masters(g, torch.Generator(device="cuda").manual_seed(0))
    layer.load(quantize_experts(w13, w2, quant))
    del w13, w2
    gen = torch.Generator(device="cuda").manual_seed(11)
    for t in tokens:
        x = torch.randn(t, g.hidden_size, device="cuda", generator=gen).bfloat16()
        logits = torch.randn(t, g.num_experts, device="cuda", generator=gen)
        bias = 0.1 * torch.randn(g.num_experts, device="cuda", generator=gen)
        note = check(layer, g, x, logits, bias)
        cond = Condition()
        tm = time_interleaved(chains(layer, g, x, logits, bias), condition=cond, rounds=rounds, reps_per_round=7)
        row = {
            "model": model,
            "variant": variant,
            "T": t,
            "us": {p: tm[p].us for p in PATHS},
            "spread": {p: tm[p].spread for p in PATHS},
            "check": note,
            **cond.to_json(),
        }
        out.append(row)
        us = row["us"]
        print(
            f"{model.split('/')[1]:<18} {variant:<13} {t:4d} "
            + " ".join(f"{us[p]:8.1f}" for p in PATHS)
            + f"  {us['ours'] / us['dg_torch']:6.3f} {us['ours'] / us['dg_1launch']:6.3f}"
            f" {us['ours'] / us['unfused']:6.3f}  spread {max(tm[p].spread for p in PATHS):5.1%}  {cond.text()}"
            f"  [{note}]"
        )
    layer.close()
    del layer
    torch.cuda.empty_cache()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", default="1,8,64")
    ap.add_argument("--max-tokens", type=int, default=8192)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--json", default="", help="write every row (timings, spreads, clocks, power) here")
    args = ap.parse_args()
    tokens = [int(v) for v in args.tokens.split(",")]
    print(f"device {torch.cuda.get_device_name()}; DeepGEMM PDL off; buffer capacity {args.max_tokens}")
    print("us per chain (median); ratios B/A: ours over DeepGEMM's chain with a torch / one-launch top-k, and over")
    print("ours unfused (one-launch top-k + staging + kernel)")
    print(f"{'model':<18} {'variant':<13} {'T':>4} " + " ".join(f"{p:>8}" for p in PATHS) + "  B/A-tc B/A-1l B/unf")
    rows: list = []
    for model in args.models.split(","):
        for variant in args.variants.split(","):
            try:
                run_case(model, variant, tokens, args.max_tokens, args.rounds, rows)
            except Exception as exc:  # report and go on: one failing case must not hide the others
                print(f"!! {model} {variant}: {type(exc).__name__}: {exc}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {"device": torch.cuda.get_device_name(), "max_tokens": args.max_tokens, "rows": rows}, f, indent=1
            )


if __name__ == "__main__":
    main()
