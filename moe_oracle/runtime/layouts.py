"""Weight-layout permutations shared by the kernel variants (pure torch, any device).

Every transform here is a pure permutation (or a bit-exact repacking) with an exact inverse, written
from the layout rules the vendors document (see ``docs/runtime.md`` for the sources):

* ``interleave_gate_up`` / ``deinterleave_gate_up``: DeepGEMM mega-MoE gate/up row interleave in
  groups of 8 (DeepGEMM's ``mega/__init__.py::_interleave_weights``): checkpoint row ``r`` of half
  ``h`` (0 = gate, 1 = up) goes to row ``(r // 8) * 16 + 8 * h + r % 8``.
* ``utccp_transpose`` / ``utccp_untranspose``: DeepGEMM ``_transpose_sf_for_utccp``: inside each
  group of 128 rows, row ``32 j + i`` goes to row ``4 i + j``.
* ``mn_major``: the storage DeepGEMM's SM100 scale tensors have (logical ``[E, MN, K']``, strides
  ``(MN * K', 1, MN)``), as ``get_mn_major_tma_aligned_packed_ue8m0_tensor`` returns them.

The AITER shuffles live with their backend (``backends/rocm_mi355/shuffle.py``).

All functions take an expert-leading tensor ``[E, ...]`` and transform each expert independently,
so a caller can run them on any slice of experts (streaming, see :func:`transform_in_chunks`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from moe_oracle.runtime.interface import CheckpointExperts

INTERLEAVE_GRAN = 8
UTCCP_ROWS = 128
#: experts per chunk when a layer loads its weights (``LayerConfig.options["load_chunk_experts"]``): each
#: chunk's temporaries (scale repacks; a CPU-held source's staging copy) exist one at a time, and per-chunk
#: launch costs stay small (benchmarks/sm90_interface.py --prep-only measures 4 to 256)
LOAD_CHUNK_EXPERTS = 64


def inverse_perm(perm: tuple[int, ...]) -> tuple[int, ...]:
    inv = [0] * len(perm)
    for pos, d in enumerate(perm):
        inv[d] = pos
    return tuple(inv)


# --------------------------------------------------------------------------------------------
# DeepGEMM
# --------------------------------------------------------------------------------------------
def _wide(t: torch.Tensor) -> torch.Tensor:
    """``t`` with its contiguous rows viewed as the widest integer words that divide them (a row permutation
    then moves 8-byte words instead of single FP8/FP4 bytes: about 8x fewer elements for torch's copy kernel)."""
    if t.dim() < 3 or not t.is_contiguous():
        return t
    row_bytes = t.shape[-1] * t.element_size()
    for dtype in (torch.int64, torch.int32, torch.int16):
        size = torch.empty((), dtype=dtype).element_size()
        if size > t.element_size() and row_bytes % size == 0 and t.storage_offset() * t.element_size() % size == 0:
            return t.view(dtype)
    return t


def _permute_rows(t: torch.Tensor, split: tuple[int, int, int], out: torch.Tensor | None = None) -> torch.Tensor:
    """Rows ``[E, a*b*c, ...]`` viewed as ``(a, b, c)`` -> order ``(b, a, c)``, written into ``out`` and returned.

    ``out`` (contiguous, the shape of ``t``) may have another dtype of the same element size: bits are
    copied, never converted; without it a contiguous tensor like ``t`` is allocated.

    On the H200 this strided copy of 8-byte words runs at 0.85-0.89 of a plain copy of the same bytes
    (a Triton kernel copying whole row blocks measured the same, 1.00-1.02x, so it was not kept); moving
    single FP8/FP4 bytes it ran at 0.18-0.19.
    """
    src = t.contiguous()
    if out is None:
        out = torch.empty_like(src)
    elif out.shape != src.shape or out.element_size() != src.element_size():
        raise ValueError(f"row permutation target {tuple(out.shape)} does not match source {tuple(src.shape)}")
    ws, wo = _wide(src), _wide(out)
    if ws.dtype != wo.dtype:  # the two could not be widened alike (alignment): move elements as they are
        ws, wo = src, out.view(src.dtype)
    e, (a, b, c), rest = src.shape[0], split, ws.shape[2:]
    wo.view(e, b, a, c, *rest).copy_(ws.view(e, a, b, c, *rest).transpose(1, 2))
    return out


def _gate_up_split(n: int, gran: int) -> tuple[int, int, int]:
    if n % (2 * gran):
        raise ValueError(f"gate/up rows ({n}) must be a multiple of {2 * gran} to interleave by {gran}")
    return 2, n // (2 * gran), gran


def interleave_gate_up(t: torch.Tensor, gran: int = INTERLEAVE_GRAN) -> torch.Tensor:
    """``[E, 2I, ...]`` (gate rows then up rows) -> rows ``[g0..g7, u0..u7, g8..g15, ...]`` (contiguous)."""
    return _permute_rows(t, _gate_up_split(t.shape[1], gran))


def deinterleave_gate_up(t: torch.Tensor, gran: int = INTERLEAVE_GRAN) -> torch.Tensor:
    """Inverse of :func:`interleave_gate_up`."""
    two, blocks, gran = _gate_up_split(t.shape[1], gran)
    return _permute_rows(t, (blocks, two, gran))


@dataclass(frozen=True)
class Interleaved:
    """The gate/up interleave of ``source`` (``[E, 2I, ...]``), written straight into its destination.

    A chunk transform returns this instead of :func:`interleave_gate_up`'s contiguous copy, so loading
    reads each byte once and writes it once (no temporary); the destination may have another dtype of
    the same element size (FP8 values into an int8 buffer): bits are copied, never converted.
    """

    source: torch.Tensor
    gran: int = INTERLEAVE_GRAN

    def write_into(self, target: torch.Tensor) -> None:
        _permute_rows(self.source, _gate_up_split(self.source.shape[1], self.gran), out=target)


#: the kernel-layout tensors of a range of experts, by KernelWeights field (or ``extras`` key)
Chunk = Mapping[str, "torch.Tensor | Interleaved"]


def utccp_transpose(sf: torch.Tensor) -> torch.Tensor:
    """``[E, MN, K']``: inside every 128 rows, row ``32 j + i`` -> row ``4 i + j`` (contiguous result)."""
    e, mn, kp = sf.shape
    if mn % UTCCP_ROWS:
        raise ValueError(f"UTCCP scale transpose needs MN ({mn}) to be a multiple of {UTCCP_ROWS}")
    return sf.reshape(e, mn // UTCCP_ROWS, 4, 32, kp).transpose(2, 3).reshape(e, mn, kp).contiguous()


def utccp_untranspose(sf: torch.Tensor) -> torch.Tensor:
    """Inverse of :func:`utccp_transpose`."""
    e, mn, kp = sf.shape
    if mn % UTCCP_ROWS:
        raise ValueError(f"MN ({mn}) must be a multiple of {UTCCP_ROWS}")
    return sf.reshape(e, mn // UTCCP_ROWS, 32, 4, kp).transpose(2, 3).reshape(e, mn, kp).contiguous()


def empty_mn_major(e: int, mn: int, kp: int, dtype: torch.dtype, device: torch.device | str) -> torch.Tensor:
    """Logical ``[E, MN, K']`` tensor stored K'-outer (strides ``(MN*K', 1, MN)``), DeepGEMM's SF storage."""
    return torch.empty_strided((e, mn, kp), (mn * kp, 1, mn), dtype=dtype, device=device)


def mn_major(sf: torch.Tensor) -> torch.Tensor:
    """Copy ``[E, MN, K']`` into MN-major storage (values unchanged)."""
    e, mn, kp = sf.shape
    return empty_mn_major(e, mn, kp, sf.dtype, sf.device).copy_(sf)


def is_mn_major(sf: torch.Tensor) -> bool:
    _e, mn, kp = sf.shape
    return tuple(sf.stride()) == (mn * kp, 1, mn) or (kp == 1 and sf.stride(1) == 1)


# --------------------------------------------------------------------------------------------
# Kernel-layout container and streaming
# --------------------------------------------------------------------------------------------
@dataclass
class KernelWeights:
    """One layer's experts in a kernel's layout.

    ``w13``/``w2`` are the GEMM operands (``l1``/``l2`` in DeepGEMM, ``w1``/``w2`` in AITER),
    ``w13_sf``/``w2_sf`` their scales (None for BF16); ``extras`` holds per-expert vectors some
    kernels take besides (NVFP4 ``l1_alpha``, ``l2_alpha``, ``l2_activation_scale``).
    """

    w13: torch.Tensor
    w2: torch.Tensor
    w13_sf: torch.Tensor | None = None
    w2_sf: torch.Tensor | None = None
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def num_experts(self) -> int:
        return int(self.w13.shape[0])

    def scales(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(w13_sf, w2_sf)``; ``ValueError`` for a layout without scales (BF16)."""
        if self.w13_sf is None or self.w2_sf is None:
            raise ValueError("these kernel weights carry no w13/w2 scales")
        return self.w13_sf, self.w2_sf

    def tensors(self) -> dict[str, torch.Tensor]:
        out = {"w13": self.w13, "w2": self.w2}
        if self.w13_sf is not None:
            out["w13_sf"] = self.w13_sf
        if self.w2_sf is not None:
            out["w2_sf"] = self.w2_sf
        out.update({k: v for k, v in self.extras.items() if isinstance(v, torch.Tensor)})
        return out

    @property
    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.tensors().values())


def expert_chunks(num_experts: int, chunk_experts: int) -> Iterator[tuple[int, int]]:
    """``(start, stop)`` ranges of at most ``chunk_experts`` experts."""
    if chunk_experts < 1:
        raise ValueError(f"chunk_experts must be positive, got {chunk_experts}")
    for start in range(0, num_experts, chunk_experts):
        yield start, min(num_experts, start + chunk_experts)


def transform_in_chunks(
    experts: CheckpointExperts,
    chunk: Callable[[CheckpointExperts, int, int], Chunk],
    dst: KernelWeights,
    chunk_experts: int = 1,
) -> KernelWeights:
    """Write ``chunk(experts, start, stop)`` (kernel-layout tensors of experts ``[start, stop)``) into ``dst``.

    ``experts`` is a :class:`~moe_oracle.runtime.interface.CheckpointExperts`; ``dst`` is preallocated
    (any device, any storage order); only one chunk's temporaries exist at a time, so loading never
    holds a second full copy of the layer.
    """
    for start, stop in expert_chunks(experts.num_experts, chunk_experts):
        parts = chunk(experts, start, stop)
        for name, part in parts.items():
            target = getattr(dst, name) if name in ("w13", "w2", "w13_sf", "w2_sf") else dst.extras[name]
            if isinstance(part, Interleaved):
                part.write_into(target[start:stop])
            else:
                target[start:stop].copy_(part, non_blocking=True)
        del parts
    return dst


@dataclass(frozen=True)
class KernelLayout:
    """A variant's kernel layout described by what is its own; the streaming transform is generic.

    ``canonical(experts)``: the checkpoint experts in the exact values the kernel gets (ValueError for a
    format it does not take); ``allocate(e, hidden, inter, device)``: an empty :class:`KernelWeights`;
    ``chunk(canonical, start, stop)``: the kernel-layout tensors of experts ``[start, stop)`` by field
    name (an :class:`Interleaved` is written in place); ``inverse(kernel_weights)``: the canonical
    experts back, bit for bit. ``prepare(canonical, dst)``, for a layout whose chunks depend on a
    layer-wide value (NVFP4's L2 activation scale), stores that value in ``dst.extras`` and returns the
    chunk function to use instead of ``chunk``.

    A variant's ``weights`` module declares ``LAYOUT = KernelLayout(...)`` and exports
    ``to_kernel`` / ``transform_into`` from it (the ``VariantSpec.layout`` hook).
    """

    canonical: Callable[[CheckpointExperts], CheckpointExperts]
    allocate: Callable[..., KernelWeights]
    chunk: Callable[[CheckpointExperts, int, int], Chunk]
    inverse: Callable[[KernelWeights], CheckpointExperts]
    prepare: Callable[[CheckpointExperts, KernelWeights], Callable[[CheckpointExperts, int, int], Chunk]] | None = None

    def _write(self, canon: CheckpointExperts, dst: KernelWeights, chunk_experts: int) -> KernelWeights:
        chunk = self.chunk if self.prepare is None else self.prepare(canon, dst)
        return transform_in_chunks(canon, chunk, dst, chunk_experts)

    def transform_into(self, experts: CheckpointExperts, dst: KernelWeights, chunk_experts: int = 1) -> KernelWeights:
        """``experts`` (checkpoint layout) written into the preallocated ``dst``, ``chunk_experts`` at a time."""
        return self._write(self.canonical(experts), dst, chunk_experts)

    def to_kernel(
        self, experts: CheckpointExperts, device: torch.device | str | None = None, chunk_experts: int = 1
    ) -> KernelWeights:
        """``experts`` in the kernel layout, on ``device`` (default: where the experts are)."""
        canon = self.canonical(experts)
        hidden, inter = int(canon.w2.shape[1]), int(canon.w13.shape[1]) // 2  # w2 [E, H, .], w13 [E, 2I, .]
        dst = self.allocate(canon.num_experts, hidden, inter, device or experts.w13.device)
        return self._write(canon, dst, chunk_experts)

    def from_kernel(self, kw: KernelWeights) -> CheckpointExperts:
        """The canonical experts of ``kw`` (the exact inverse of :meth:`to_kernel`)."""
        return self.inverse(kw)
