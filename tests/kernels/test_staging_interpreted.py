"""The Triton staging kernel's top-k repack, padding and scales, run on the CPU by Triton's interpreter.

Triton's interpreter emulates the kernel with numpy, exactly for integer and fp32 data (its FP8
cast is not bit-exact, so the quantized values are checked on a GPU: test_staging_triton.py).
Skips where Triton is not installed.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("triton")

CODE = """
import torch
from moe_oracle.kernels.staging_triton import stage
from moe_oracle.numerics import quantize_mxfp8
t, h, k, cap = 5, 512, 6, 40
x = torch.randn(t, h).bfloat16()
ids = torch.randint(0, 256, (t, 256))[:, :k]
ids[2, 1] = -1
w = torch.rand(t, 16)[:, 2:2 + k]
for recipe, sf_dtype in (("fp8_g128", torch.float32), ("mxfp8", torch.int32)):
    ox = torch.empty(cap, h, dtype=torch.float8_e4m3fn)
    osf = torch.empty(cap, h // 128, dtype=sf_dtype)
    oi = torch.zeros(cap, k, dtype=torch.int64)
    ow = torch.ones(cap, k)
    stage(x, ids, w, ox[:t], osf[:t], oi, ow, recipe=recipe, pad_to=cap, num_valid=4, routed_scaling_factor=2.0)
    want_ids = ids.clone(); want_ids[4] = -1
    want_w = (w * 2.0).masked_fill(want_ids < 0, 0.0)
    assert torch.equal(oi[:t], want_ids), recipe
    assert torch.equal(ow[:t], want_w), recipe
    assert bool((oi[t:] == -1).all()) and bool((ow[t:] == 0).all()), recipe
    # the shared quantize_groups scale math (integer and fp32 only: exact in the interpreter)
    if recipe == "fp8_g128":
        amax = x.float().view(t, h // 128, 128).abs().amax(-1).clamp_min(1e-4)
        assert torch.equal(osf[:t], amax * torch.tensor(1 / 448, dtype=torch.float32)), recipe
    else:
        assert torch.equal(osf[:t], quantize_mxfp8(x, 32, packed=True)[1]), recipe
print("ok")
"""


def test_repack_and_padding_interpreted():
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    p = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stderr[-2000:]
