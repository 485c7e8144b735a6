"""The Triton block permutation (weight preparation) equals torch's strided copy, bit for bit.

On the CPU through Triton's interpreter (integer data: exact there), on a GPU at full expert shapes.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

CODE = """
import torch
from moe_oracle.kernels.permute_triton import permute_blocks
from moe_oracle.runtime.layouts import _gate_up_split, _permute_rows
g = torch.Generator().manual_seed(0)
for shape, dtype in (((3, 64, 40), torch.uint8), ((2, 32, 4), torch.int32), ((2, 16, 6, 4), torch.uint8)):
    src = torch.randint(0, 255, shape, generator=g, dtype=dtype)
    for split in (_gate_up_split(shape[1], 8), (shape[1] // 16, 2, 8)):
        want = _permute_rows(src, split, gpu_kernel=False)
        got = torch.full_like(src, 7)
        rest = 1
        for d in shape[2:]:
            rest *= d
        permute_blocks(src, got, split[:2], split[2] * rest * src.element_size())
        assert torch.equal(got, want), (shape, split)
print("ok")
"""


def test_permute_blocks_interpreted():
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    p = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stderr[-2000:]


def test_rejects_what_it_cannot_copy():
    from moe_oracle.kernels.permute_triton import can_permute, permute_blocks

    a = torch.zeros(2, 16, 6, dtype=torch.uint8)
    assert not can_permute(a, a, 48)  # not in place
    assert can_permute(a, torch.zeros_like(a), 48) == (a.data_ptr() % 16 == 0)
    assert not can_permute(a, torch.zeros_like(a), 6)  # not whole 4-byte words
    assert not can_permute(a[:, ::2], torch.zeros(2, 8, 6, dtype=torch.uint8), 48)  # not contiguous
    with pytest.raises(ValueError, match="block permutation"):
        permute_blocks(a, torch.zeros(2, 16, 5, dtype=torch.uint8), (2, 1), 48)


@pytest.mark.gpu
@pytest.mark.parametrize("shape,dtype", [((256, 4096, 4096), "float8_e4m3fn"), ((256, 4096, 2048), "int8"),
                                         ((256, 4096, 128), "uint8"), ((8, 4096, 48), "float32")])  # fmt: skip
def test_gpu_permutation_equals_torch(shape, dtype):
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    from moe_oracle.runtime.layouts import _gate_up_split, _permute_rows, deinterleave_gate_up, interleave_gate_up

    g = torch.Generator(device="cuda").manual_seed(1)
    src = torch.randint(-128, 127, shape, device="cuda", dtype=torch.int8, generator=g)
    src = src.view(getattr(torch, dtype)) if dtype != "float32" else src.view(torch.float32)
    want = _permute_rows(src, _gate_up_split(src.shape[1], 8), gpu_kernel=False)
    got = interleave_gate_up(src)
    assert torch.equal(got.view(torch.uint8), want.view(torch.uint8))
    assert torch.equal(deinterleave_gate_up(got).view(torch.uint8), src.view(torch.uint8))
