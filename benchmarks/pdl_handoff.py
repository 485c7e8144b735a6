"""Is the staging -> mega-kernel hand-off safe under programmatic dependent launch (PDL)? A correctness probe.

DeepGEMM PR #323 launches its SM90 mega kernel as a PDL secondary when ``deep_gemm.set_pdl(True)`` (SGLang's
default, ``SGLANG_DEEPGEMM_PDL``), but the kernel never executes ``griddepcontrol.wait``; its own pre-dispatch
signals ``griddepcontrol.launch_dependents`` after each thread's stores. PTX says the first thread of a CTA to
signal counts for the CTA and that signalling implies no memory visibility. This probe runs, per path, a CUDA graph
of producer (x = x0 * s) -> staging -> mega kernel, flips the sign of x0 before every replay, and counts replays
whose output differs from the same path's graph captured with PDL off: bit for bit (the kernel is not
run-to-run deterministic from T = 8: ours run twice with PDL off shows it) and by more than ``STALE``.
Paths: moe-oracle's Triton staging without a trigger (the kernel starts when staging exits), the same with an
explicit per-thread trigger, and DeepGEMM's ``mega_moe_pre_dispatch_sm90``.

Run on the H200 with a DeepGEMM build that has the SM90 kernels: ``python benchmarks/pdl_handoff.py``.
"""

from __future__ import annotations

import argparse
from functools import partial

import torch

from moe_oracle.model.resolve import resolve_model
from moe_oracle.model.types import QuantSpec
from moe_oracle.runtime import LayerConfig, build_layer, calc_diff, route
from moe_oracle.runtime.accuracy import random_masters
from moe_oracle.runtime.quantize import quantize_experts
from moe_oracle.runtime.vendor import resolve_attr

MXFP4 = QuantSpec(format="mxfp4", block=(1, 32), scale_format="ue8m0")
FP8 = QuantSpec(format="fp8_block", block=(128, 128), scale_format="fp32")
FORMATS = {"mxfp4": ("deep_gemm_mega_moe:sm90_fp8xfp4", MXFP4), "fp8_block": ("deep_gemm_mega_moe:sm90_fp8xfp8", FP8)}


#: calc_diff above which a replay read another x than its own (the kernel's run-to-run noise is far below it)
STALE = 1e-3


def replays(layer, path: str, pdl: bool, x0, x, ids, w, n: int) -> list[torch.Tensor]:
    """Capture producer -> ``path`` with DeepGEMM's PDL switch ``pdl``; the output of each of ``n`` replays."""
    dg, t = layer.dg, x.shape[0]
    call = layer.kernel_call(t)
    kernel = resolve_attr(dg, call.function)
    buf, ids32 = layer.buffer, ids.int()
    from moe_oracle.kernels.staging_triton import stage

    def step() -> None:
        torch.mul(x0, 1.0, out=x)
        if path == "dg":
            dg.mega_moe_pre_dispatch_sm90(x, ids32, w, buf.x, buf.x_sf, buf.topk_idx, buf.topk_weights, t)
        else:
            stage(x, ids, w, buf.x[:t], buf.x_sf[:t], buf.topk_idx, buf.topk_weights,
                  recipe=layer.STAGING.triton_recipe, pad_to=t, pdl=pdl, trigger=pdl and path == "trigger")  # fmt: skip
        kernel(*call.args, **call.kwargs)

    before = bool(dg.get_pdl())
    dg.set_pdl(pdl)
    try:
        for _ in range(3):
            step()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            step()
    finally:
        dg.set_pdl(before)
    out = []
    for _ in range(n):
        x0.mul_(-1)
        graph.replay()
        out.append(call.args[0].clone())
    return out


def _run(layer, path: str, pdl: bool, *, x0, x, ids, w, n: int) -> list[torch.Tensor]:
    return replays(layer, path, pdl, x0, x, ids, w, n)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="deepseek-ai/DeepSeek-V4-Flash,zai-org/GLM-5-FP8")
    ap.add_argument("--formats", default="mxfp4,fp8_block")
    ap.add_argument("--tokens", default="1,8,64,512")
    ap.add_argument("--replays", type=int, default=40)
    args = ap.parse_args()
    print(f"device {torch.cuda.get_device_name()}; replays per graph {args.replays}")
    print("per pair of graphs: replays not bit-equal, replays with calc_diff > 1e-3 (a stale x reads as ~2), max diff")
    head = "  ".join(f"{n:^16}" for n in ("ours off/off", "ours pdl", "ours pdl+trigger", "dg pre pdl/off"))
    print(f"{'model':<30} {'format':<9} {'T':>4}  {head}")
    for model_id in args.models.split(","):
        for fmt in args.formats.split(","):
            key, quant = FORMATS[fmt]
            g = resolve_model(model_id).main_group.model_copy(update={"weight_quant": quant})
            layer = build_layer(key, LayerConfig(group=g, max_tokens_per_rank=512, device="cuda"))
            w13, w2 = random_masters(g, torch.Generator(device="cuda").manual_seed(0))
            layer.load(quantize_experts(w13, w2, quant))
            del w13, w2
            gen = torch.Generator(device="cuda").manual_seed(5)
            for t in (int(v) for v in args.tokens.split(",")):
                x0 = torch.randn(t, g.hidden_size, device="cuda", generator=gen).bfloat16()
                x = torch.empty_like(x0)
                logits = torch.randn(t, g.num_experts, device="cuda", generator=gen)
                ids, w = route(g, logits, bias=torch.zeros(g.num_experts, device="cuda"))
                run = partial(_run, layer, x0=x0, x=x, ids=ids, w=w, n=args.replays)
                ours, dg_off = run("staging", False), run("dg", False)
                pairs = [(ours, run("staging", False)), (ours, run("staging", True)), (ours, run("trigger", True))]
                pairs.append((dg_off, run("dg", True)))
                cells = []
                for p, q in pairs:
                    d = [calc_diff(a.float(), b.float()) for a, b in zip(p, q, strict=True)]
                    cells.append(f"{sum(not torch.equal(a, b) for a, b in zip(p, q, strict=True)):3d} "
                                 f"{sum(v > STALE for v in d):3d} {max(d):8.1e}")  # fmt: skip
                print(f"{model_id:<30} {fmt:<9} {t:4d}  " + "  ".join(cells))
            layer.close()
            del layer
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
