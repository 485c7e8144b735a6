"""Block permutation of expert rows on the GPU at copy bandwidth (Triton), for weight preparation at load.

Weight layouts such as DeepGEMM's gate/up interleave reorder whole groups of rows: per expert,
blocks indexed ``(a, b)`` go to position ``(b, a)``, each block ``c`` contiguous rows. torch expresses
this as a strided ``copy_`` whose per-element index arithmetic keeps it well under the copy bandwidth;
here every program moves one contiguous tile of one block with 16-byte loads and stores, so the
launch is a plain copy with a different destination address per block.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

#: 32-bit words per program (8 KiB): four 16-byte vectors per thread at four warps
TILE_WORDS = 2048


@triton.jit
def _permute_blocks_kernel(src_ptr, dst_ptr, num_a, num_b, block_words, TILE: tl.constexpr):
    blk = tl.program_id(0)  # source block, ((e * A + a) * B + b)
    b = blk % num_b
    ea = blk // num_b
    a = ea % num_a
    e = ea // num_a
    dst_blk = (e * num_b + b) * num_a + a
    offs = tl.program_id(1) * TILE + tl.arange(0, TILE)
    ok = offs < block_words
    v = tl.load(src_ptr + blk.to(tl.int64) * block_words + offs, mask=ok)
    tl.store(dst_ptr + dst_blk.to(tl.int64) * block_words + offs, v, mask=ok)


def can_permute(src: torch.Tensor, dst: torch.Tensor, block_bytes: int) -> bool:
    """Whether :func:`permute_blocks` takes these tensors (one device, contiguous, 16-byte aligned, 4-byte words,
    not overlapping: the permutation is not done in place)."""
    nbytes = src.numel() * src.element_size()
    apart = dst.data_ptr() >= src.data_ptr() + nbytes or src.data_ptr() >= dst.data_ptr() + nbytes
    return (
        apart
        and dst.device == src.device
        and block_bytes > 0
        and src.is_contiguous()
        and dst.is_contiguous()
        and block_bytes % 4 == 0
        and src.data_ptr() % 16 == 0
        and dst.data_ptr() % 16 == 0
    )


def permute_blocks(src: torch.Tensor, dst: torch.Tensor, split: tuple[int, int], block_bytes: int) -> None:
    """``dst`` = ``src`` with blocks ``[E, A, B]`` reordered ``[E, B, A]`` (bits copied, any dtype).

    ``split`` = ``(A, B)``; ``block_bytes`` = bytes of one block (``c`` rows). Both tensors contiguous,
    on one device (CUDA; the CPU only under ``TRITON_INTERPRET=1``), ``E * A * B * block_bytes`` bytes
    each (checked by :func:`can_permute` and here). No allocation, no host synchronization.
    """
    num_a, num_b = split
    nbytes = src.numel() * src.element_size()
    if dst.numel() * dst.element_size() != nbytes or nbytes % (num_a * num_b * block_bytes):
        raise ValueError(f"block permutation of {nbytes} bytes into blocks of {block_bytes} x {num_a} x {num_b}")
    if not can_permute(src, dst, block_bytes):
        raise ValueError("block permutation needs contiguous 16-byte aligned tensors on one device and 4-byte blocks")
    blocks = nbytes // block_bytes
    words = block_bytes // 4
    if blocks == 0:
        return
    grid = (blocks, triton.cdiv(words, TILE_WORDS))
    _permute_blocks_kernel[grid](
        src.view(-1).view(torch.int32),
        dst.view(-1).view(torch.int32),
        num_a,
        num_b,
        words,
        TILE=TILE_WORDS,
        num_warps=4,
    )
