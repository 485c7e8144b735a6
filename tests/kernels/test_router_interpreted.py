"""The fused router (top-k + SM90 staging, one launch) vs route() + stage(), on the CPU by Triton's interpreter.

Bit for bit: ids, weights, padding rows and the staged activation bytes, over every scoring (softmax, sigmoid,
sqrtsoftplus), ungrouped and grouped selection (top-2-sum and max group scores, one expert per group, every
group kept), correction bias declared / absent / given to a group without one, renormalisation on and off,
exact ties between experts and between groups, an expert count that is no power of two, top-1, saturated
logits (softplus threshold, sigmoid underflow), bf16 and strided logits, int32 ids. route() computes scores in
fp64 and rounds once (moe_oracle/runtime/routing.py), which is what makes the interpreter's numpy math and
torch's agree. The staged FP8 bytes are compared with stage() under the same interpreter (its FP8 cast is not the
hardware's; the GPU test compares on the device). Skips where Triton is not installed.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("triton")

CODE = """
import itertools
import torch
from moe_oracle.kernels.router_triton import route_and_stage, route_topk
from moe_oracle.kernels.staging_triton import stage
from moe_oracle.model.resolve import resolve_model
from moe_oracle.model.types import Routing, Scoring
from moe_oracle.runtime.routing import route

base = resolve_model("deepseek-ai/DeepSeek-V4-Flash").main_group
cases = 0


def check(scoring, e, k, groups, bias_mode, renorm, t=6, h=512, scale=3.0, seed=0, dtype=torch.float32, cap=None):
    global cases
    declared = bias_mode == "declared"
    r = Routing(scoring=scoring, correction_bias=declared, renormalize=renorm, num_groups=groups[0],
                topk_groups=groups[1], routed_scaling_factor=2.5)
    g = base.model_copy(update={"num_experts": e, "top_k": k, "routing": r, "hidden_size": h})
    gen = torch.Generator().manual_seed(seed)
    wide = torch.randn(t, e + 3, generator=gen) * scale
    logits = wide[:, 1:e + 1].to(dtype)  # strided rows
    logits[0, 1] = logits[0, 0]  # an exact tie between two experts
    if groups[0] > 1 and t > 1:
        gs = e // groups[0]
        logits[1, gs:2 * gs] = logits[1, :gs]  # two groups with equal scores
    if t > 2:
        logits[2, :4] = torch.tensor([40.0, -40.0, 25.0, -200.0], dtype=dtype)  # saturated scores
    bias = None if bias_mode == "none" else (0.05 * torch.randn(e, generator=gen))
    if bias is not None and t > 1:
        bias[e - 1] = bias[e - 2]
        logits[min(3, t - 1), e - 1] = logits[min(3, t - 1), e - 2]  # a tie with the bias added
    ids, w = route(g, logits, bias=bias)
    # the one-launch top-k alone, int32 and int64 ids
    for id_dtype in (torch.int32, torch.int64):
        oi = torch.full((t, k), 777, dtype=id_dtype)
        ow = torch.full((t, k), float("nan"))
        route_topk(r, k, logits, oi, ow, bias=bias)
        assert torch.equal(oi.long(), ids), (scoring, e, k, groups, bias_mode, renorm, oi, ids)
        assert torch.equal(ow, w), (scoring, e, k, groups, bias_mode, renorm, ow, w)
    # fused with the staging, into a buffer of capacity cap (rows past T: padding)
    cap = cap or t
    x = torch.randn(t, h, generator=gen).bfloat16()
    ox = torch.full((cap, h), 1.0).to(torch.float8_e4m3fn)
    osf = torch.full((cap, h // 128), -7.0)
    oi = torch.full((cap, k), 777, dtype=torch.int64)
    ow = torch.full((cap, k), float("nan"))
    route_and_stage(r, k, logits, x, ox[:t], osf[:t], oi, ow, bias=bias, pad_to=cap)
    rx = torch.empty(t, h, dtype=torch.float8_e4m3fn)
    rs = torch.empty(t, h // 128)
    ri = torch.empty(cap, k, dtype=torch.int64)
    rw = torch.empty(cap, k)
    stage(x, ids, w, rx, rs, ri, rw, recipe="fp8_g128", pad_to=cap)
    assert torch.equal(oi, ri) and torch.equal(ow, rw), (scoring, groups, bias_mode)
    assert torch.equal(ox[:t].view(torch.uint8), rx.view(torch.uint8)) and torch.equal(osf[:t], rs)
    cases += 1


for scoring, groups, bias_mode, renorm in itertools.product(
    list(Scoring), [(1, 1), (8, 4), (4, 1), (8, 8)], ["declared", "none", "undeclared"], [True, False]
):
    check(scoring, 64, 6, groups, bias_mode, renorm, seed=cases)
for scoring in Scoring:
    check(scoring, 160, 8, (1, 1), "declared", True, seed=100 + cases)  # no power of two (padded lanes)
    check(scoring, 8, 1, (8, 2), "declared", True, seed=200 + cases)  # top-1, one expert per group
    check(scoring, 256, 8, (1, 1), "declared", True, t=3, h=1024, scale=8.0, seed=300 + cases, dtype=torch.bfloat16,
          cap=9)
print("ok", cases)
"""


def test_fused_router_bit_identical_to_route_and_stage_interpreted():
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    p = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, env=env, timeout=900)
    assert p.returncode == 0 and p.stdout.split()[:1] == ["ok"], p.stderr[-3000:]
    assert int(p.stdout.split()[1]) == 81
