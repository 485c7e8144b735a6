"""The block configuration PR #323's SM90 mega kernels pick, as DeepGEMM prints it, for every calibrated shape and T.

Both fused variants (``sm90_fp8xfp8``, ``sm90_fp8xfp4``) of each of the twelve calibrated expert shapes are built
once (buffer capacity ``--max-tokens``) and called once per T with ``DG_PRINT_CONFIGS=1`` set by this script, so
DeepGEMM prints its ``MegaMoESM90Config`` / ``MegaMoESM90FP4Config`` (``csrc/jit_kernels/heuristics/
sm90_mega_moe.hpp``): BLOCK_M, BLOCK_N, swapAB, experts per wave, stages, threads. Nothing is timed. The printed
lines are the test data of ``tests/oracle/test_cost_geometry.py`` for ``moe_oracle/cost/geometry.py``'s reading
of those heuristics. A build the installed DeepGEMM refuses (a declared limit, or a static assertion at a T) is
printed as one line and the run goes on.

Run on the H200 with DeepGEMM PR #323: ``python benchmarks/mega_config_probe.py > FILE``.
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("DG_PRINT_CONFIGS", "1")

import torch
from _shapes import CALIBRATED, group

from moe_oracle.runtime import LayerConfig, build_layer, route
from moe_oracle.runtime.accuracy import random_masters
from moe_oracle.runtime.quantize import FP8_BLOCK_FP32, MXFP4, quantize_experts

QUANTS = {
    "sm90_fp8xfp8": FP8_BLOCK_FP32,
    "sm90_fp8xfp4": MXFP4,
}


def probe(name: str, variant: str, tokens: list[int], max_tokens: int) -> None:
    quant = QUANTS[variant]
    g = group(name, quant)
    w13, w2 = random_masters(g, torch.Generator(device="cuda").manual_seed(0))
    experts = quantize_experts(w13, w2, quant)
    del w13, w2
    layer = None
    for cap in (max_tokens, 64):  # a build refused at this capacity (a declared limit) is retried at 64 tokens
        try:
            layer = build_layer(f"deep_gemm_mega_moe:{variant}", LayerConfig(group=g, max_tokens_per_rank=cap), experts)
            break
        except Exception as exc:
            print(f"=== {name} {variant} capacity {cap}: not built: {type(exc).__name__}: {str(exc)[:200]}", flush=True)
    if layer is None:
        return
    tokens = [t for t in tokens if t <= layer.config.max_tokens_per_rank]
    gen = torch.Generator(device="cuda").manual_seed(1)
    for t in tokens:
        x = torch.randn(t, g.hidden_size, device="cuda", generator=gen).bfloat16()
        logits = torch.randn(t, g.num_experts, device="cuda", generator=gen)
        ids, w = route(g, logits, bias=torch.zeros(g.num_experts, device="cuda"))
        print(f"=== {name} {variant} T={t}", flush=True)
        try:
            layer(x, ids, w)
            torch.cuda.synchronize()
        except Exception as exc:  # e.g. the FP8 kernel's combine-stage static assertion at H 8192 (§10.1)
            print(f"   T={t}: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}", flush=True)
    del layer
    torch.cuda.empty_cache()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default=",".join(CALIBRATED))
    ap.add_argument("--variants", default=",".join(QUANTS))
    ap.add_argument("--tokens", default="1,2,4,8,16,32,64,128,256,512,1024,2048,4096,8192")
    ap.add_argument("--max-tokens", type=int, default=8192)
    args = ap.parse_args()
    tokens = [int(t) for t in args.tokens.split(",")]
    for name in args.shapes.split(","):
        for variant in args.variants.split(","):
            probe(name, variant, tokens, args.max_tokens)


if __name__ == "__main__":
    main()
