"""Run-to-run variation of the SM90 mega kernels: the same inputs, N calls, how many outputs differ and by how much.

For each case (model shape x variant) and T: one layer (EP 1, full expert shape, random weights), one input and one
routing; the first call's output is the reference and each of ``--repeats`` further calls is compared with it
bit for bit and by calc_diff. moe-oracle's staging is run once per call too (the layer's forward), so a difference is
the kernel's: the staging is bit-identical run to run (docs/runtime.md). The figures are what the GPU tests bound
run-to-run variation by (``moe_oracle/runtime/tolerance.py`` RUN_TO_RUN).

    python benchmarks/determinism.py --repeats 30 --tokens 1,8,64,512
"""

from __future__ import annotations

import argparse
import json

import torch

from moe_oracle.model.resolve import resolve_model
from moe_oracle.model.types import QuantSpec
from moe_oracle.runtime import LayerConfig, build_layer, calc_diff, route
from moe_oracle.runtime.accuracy import random_masters
from moe_oracle.runtime.quantize import quantize_experts

MXFP4 = QuantSpec(format="mxfp4", block=(1, 32), scale_format="ue8m0")
FP8 = QuantSpec(format="fp8_block", block=(128, 128), scale_format="fp32")
CASES = {
    "v4-flash-fp4": ("deepseek-ai/DeepSeek-V4-Flash", "deep_gemm_mega_moe:sm90_fp8xfp4", MXFP4),
    "v4-flash-fp8": ("deepseek-ai/DeepSeek-V4-Flash", "deep_gemm_mega_moe:sm90_fp8xfp8", FP8),
    "glm5-fp4": ("zai-org/GLM-5-FP8", "deep_gemm_mega_moe:sm90_fp8xfp4", MXFP4),
    "glm5-fp8": ("zai-org/GLM-5-FP8", "deep_gemm_mega_moe:sm90_fp8xfp8", FP8),
}


def run_case(name: str, tokens: tuple[int, ...], repeats: int) -> list[dict]:
    model, key, quant = CASES[name]
    g = resolve_model(model).main_group.model_copy(update={"weight_quant": quant})
    w13, w2 = random_masters(g, torch.Generator(device="cuda").manual_seed(0))
    layer = build_layer(key, LayerConfig(group=g, max_tokens_per_rank=max(tokens), device="cuda"),
                        quantize_experts(w13, w2, quant))  # fmt: skip
    del w13, w2
    rows = []
    gen = torch.Generator(device="cuda").manual_seed(7)
    try:
        for t in tokens:
            x = torch.randn(t, g.hidden_size, device="cuda", generator=gen).bfloat16()
            logits = torch.randn(t, g.num_experts, device="cuda", generator=gen)
            bias = torch.zeros(g.num_experts, device="cuda") if g.routing.correction_bias else None
            ids, w = route(g.model_copy(update={"routing": g.routing.model_copy(update={"hash": False})}), logits, bias)
            first = layer(x, ids, w).clone()
            differ, worst = 0, 0.0
            for _ in range(repeats):
                y = layer(x, ids, w)
                if not torch.equal(y, first):
                    differ += 1
                    worst = max(worst, calc_diff(y.float(), first.float()))
            torch.cuda.synchronize()
            rows.append(
                {"case": name, "variant": key, "T": t, "repeats": repeats, "differ": differ, "max_calc_diff": worst}
            )
            print(
                f"{name:14s} T {t:5d}: {differ:3d} of {repeats} repeats differ, max calc_diff {worst:.2e}", flush=True
            )
    finally:
        layer.close()
        torch.cuda.empty_cache()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--tokens", default="1,8,64,512")
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    tokens = tuple(int(t) for t in args.tokens.split(","))
    print(f"device {torch.cuda.get_device_name()}; same inputs, {args.repeats} repeats after the first call")
    rows = [r for c in args.cases.split(",") for r in run_case(c, tokens, args.repeats)]
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
