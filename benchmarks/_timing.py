"""GPU timing helpers shared by the benchmarks (METHOD.md: CUDA graphs, CUDA events, medians after warm-up).

``graph_us`` captures ``fn`` in a CUDA graph after three warm-up calls and returns the median of
``reps`` replays timed with CUDA events; with ``flush`` a 512 MB buffer is zeroed before each timed
replay so the 60 MB L2 holds nothing of the previous one (h200.md §4's method). ``copy_bandwidth``
is the device-to-device copy rate (bytes read + written) that the bandwidth ratios divide by.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable

import torch

_FLUSH: list[torch.Tensor] = []


def _flush_buffer() -> torch.Tensor:
    if not _FLUSH:
        _FLUSH.append(torch.empty(512 << 20, dtype=torch.uint8, device="cuda"))
    return _FLUSH[0]


def time_us(
    fn: Callable[[], object],
    reps: int = 20,
    *,
    flush: bool = True,
    graph: bool = True,
    before: Callable[[], object] | None = None,
) -> float:
    """Median microseconds of one call of ``fn``: CUDA-graph replays, or plain calls for code that syncs.

    ``before`` runs ahead of each timed call, outside the timing (``dist.barrier`` aligns the ranks).
    """
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    run: Callable[[], object] = fn
    if graph:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            fn()
        run = g.replay
    buf = _flush_buffer() if flush else None
    times = []
    for _ in range(reps):
        if buf is not None:
            buf.zero_()
        if before is not None:
            before()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        run()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) * 1e3)
    return statistics.median(times)


def copy_bandwidth(nbytes: int = (4 << 30) - (64 << 20)) -> float:
    """Device-to-device copy bandwidth in bytes/s (read + written), ``nbytes`` each way after warm-up.

    Every GPU benchmark measures it first, so it is also where one without a GPU stops, with a message.

    The default is deliberately not a power of two: on the H200 copies of exactly 1, 2 or 4 GiB
    measured 2.75 TB/s, and 0.25 GiB or 3.94 GiB 4.1-4.3 TB/s (h200.md's 4.27), presumably source
    and destination falling on the same memory channels.
    """
    if not torch.cuda.is_available():
        raise SystemExit("this benchmark measures a GPU: no CUDA device is visible (torch.cuda.is_available() False)")
    src = torch.randn(nbytes // 4, device="cuda")
    dst = torch.empty_like(src)
    us = time_us(lambda: dst.copy_(src), reps=20, flush=False)
    return 2 * src.numel() * src.element_size() / (us * 1e-6)
