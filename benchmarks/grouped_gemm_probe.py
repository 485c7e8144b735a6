"""The non-fused path's two grouped GEMMs, one at a time: the block configuration DeepGEMM picks, and their times.

For each expert shape and T, both grouped layouts (``psum``, ``m_indices``) of the non-fused FP8 graph
(``backends/cuda_sm90/nonfused``) run once with ``DG_PRINT_CONFIGS=1`` set by this script, so DeepGEMM prints the
``GemmDesc`` and ``GemmConfig`` its SM90 heuristic chose (``csrc/jit_kernels/heuristics/common.hpp``), then are
timed interleaved (CUDA graphs, L2 flushed, ``time_interleaved``): the whole graph, the W13 GEMM alone and the W2
GEMM alone (on the buffers the whole graph left). The fused FP8 kernel runs once per T too, so its printed
mega-MoE configuration is on record. The printed lines are what ``moe_oracle/cost/geometry.py``'s port of the
heuristic is tested against; the per-GEMM times say which GEMM a shape's non-fused time goes to.

Run on the H200 with DeepGEMM PR #323: ``python benchmarks/grouped_gemm_probe.py --json FILE``.
"""

from __future__ import annotations

import argparse
import json
import os

os.environ.setdefault("DG_PRINT_CONFIGS", "1")

import torch
from _shapes import CALIBRATED, group
from _timing import Condition, time_interleaved
from moe_oracle_backends.cuda_sm90.nonfused.layer import GroupedGemmMoE

from moe_oracle.runtime import LayerConfig, build_layer, route
from moe_oracle.runtime.accuracy import random_masters
from moe_oracle.runtime.quantize import FP8_BLOCK_FP32 as FP8
from moe_oracle.runtime.quantize import quantize_experts


def probe(name: str, tokens: list[int], rounds: int, fused: bool) -> list[dict]:
    g = group(name, FP8)
    cfg = LayerConfig(group=g, max_tokens_per_rank=max(tokens))
    w13, w2 = random_masters(g, torch.Generator(device="cuda").manual_seed(0))
    experts = quantize_experts(w13, w2, FP8)
    del w13, w2
    layers = {}
    for layout in ("psum", "m_indices"):
        nf = GroupedGemmMoE(cfg, layout=layout)
        nf.load(experts)
        layers[layout] = nf
    mega = None
    if fused:
        try:
            mega = build_layer("deep_gemm_mega_moe:sm90_fp8xfp8", cfg, experts)
        except Exception as exc:  # a declared limit of the installed build (recorded, not fatal)
            print(f"   fused FP8 not built: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}", flush=True)
    gen = torch.Generator(device="cuda").manual_seed(1)
    rows = []
    for t in tokens:
        x = torch.randn(t, g.hidden_size, device="cuda", generator=gen).bfloat16()
        logits = torch.randn(t, g.num_experts, device="cuda", generator=gen)
        ids, w = route(g, logits, bias=torch.zeros(g.num_experts, device="cuda"))
        active = int(torch.unique(ids[ids >= 0]).numel())
        print(f"=== {name} T={t} active={active} rows={layers['psum'].rows(t)}", flush=True)
        fns = {}
        for layout, nf in layers.items():
            nf(x, ids, w)
            torch.cuda.synchronize()
            r = nf.rows(t)
            fns[f"{layout}"] = lambda nf=nf, x=x, ids=ids, w=w: nf(x, ids, w)
            fns[f"{layout}_w13"] = lambda nf=nf, r=r: nf._grouped_gemm(nf.a1, nf.sf1, r, nf.w13, nf.w13_sf, nf.h1)
            fns[f"{layout}_w2"] = lambda nf=nf, r=r: nf._grouped_gemm(nf.a2, nf.sf2, r, nf.w2, nf.w2_sf, nf.h2)
        if mega is not None:
            try:
                mega(x, ids, w)
                torch.cuda.synchronize()
            except Exception as exc:  # a build limit of the installed DeepGEMM (recorded, not fatal)
                print(f"   fused FP8 at T={t}: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}", flush=True)
        cond = Condition()
        tm = time_interleaved(fns, condition=cond, rounds=rounds, reps_per_round=5)
        row = {"shape": name, "T": t, "active": active, "rows": layers["psum"].rows(t), "condition": cond.to_json()}
        for k, v in tm.items():
            row[k] = {"us": v.us, "round_min_us": v.round_min_us, "round_max_us": v.round_max_us}
        print("   " + "  ".join(f"{k} {v.us:8.1f}" for k, v in tm.items()) + f"  {cond.text()}", flush=True)
        rows.append(row)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default=",".join(CALIBRATED))
    ap.add_argument("--tokens", default="1,16,64,512,4096")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument(
        "--fused-shapes",
        default="qwen3-next-80b-a3b,laguna-xs.2,qwen3-30b-a3b",
        help="shapes whose fused FP8 kernel also runs once per T (its configuration print)",
    )
    ap.add_argument("--json")
    args = ap.parse_args()
    tokens = [int(t) for t in args.tokens.split(",")]
    out: list[dict] = []
    for name in args.shapes.split(","):
        out += probe(name, tokens, args.rounds, name in args.fused_shapes.split(","))
        torch.cuda.empty_cache()
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": out}, f)


if __name__ == "__main__":
    main()
