"""Activation staging bandwidth: ours (Triton) vs the eager torch path vs DeepGEMM's own
``mega_moe_pre_dispatch_sm90`` vs the measured copy bandwidth, side by side in one run.

Target (issue: H200 work, section 2): at least 85% of the measured device-to-device copy
bandwidth for T >= 4096 with H = 4096 and 7168. Every output is first checked bit for bit against
``moe_oracle.numerics``. Times are CUDA-event medians over replays of a CUDA graph after warm-up,
rotating through enough input sets to defeat the L2 cache. Run on a GPU:

    python benchmarks/staging_bandwidth.py
"""

from __future__ import annotations

import statistics

import torch

from moe_oracle.kernels.staging_triton import stage
from moe_oracle.numerics import quantize_fp8, quantize_mxfp8

TOPK = 6
SETS = 4  # input sets rotated through (each >= 32 MB at T=4096, H=4096: past the 60 MB L2 together)


def copy_bandwidth() -> float:
    """Device-to-device copy bandwidth in bytes/s (bytes read + written), 2 GiB buffers."""
    # 4 GiB each way, as the device notes measured it (8.6 GB moved in ~2 ms); the GPU clocks up in warm-up
    a = torch.randn(1 << 30, device="cuda")
    b = torch.empty_like(a)
    return 2 * a.numel() * a.element_size() / (time_us(lambda: b.copy_(a)) * 1e-6)


def time_us(fn, reps: int = 50, graph: bool = True) -> float:
    """Median microseconds of ``fn``: CUDA-graph replays, or plain launches for code that syncs the host."""
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    run = fn
    if graph:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            fn()
        run = g.replay
    times = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        run()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) * 1e3)
    return statistics.median(times)


def eager(x, ids, w, recipe):
    if recipe == "fp8_g128":
        q, s = quantize_fp8(x, 128, "fp32")
    else:
        q, s = quantize_mxfp8(x, 32, packed=True)
    return q, s, ids.long(), w.float()


def buffers(t: int, h: int, recipe: str) -> tuple[torch.Tensor, ...]:
    sf_dtype = torch.float32 if recipe == "fp8_g128" else torch.int32
    return (
        torch.empty(t, h, device="cuda", dtype=torch.float8_e4m3fn),
        torch.empty(t, h // 128, device="cuda", dtype=sf_dtype),
        torch.empty(t, TOPK, device="cuda", dtype=torch.int64),
        torch.empty(t, TOPK, device="cuda"),
    )


def measure(recipe: str, t: int, h: int, dg) -> tuple[float, float, float, int]:
    """(ours us, eager us, DeepGEMM us or nan, bytes moved by one staging call)."""
    xs = [torch.randn(t, h, device="cuda").bfloat16() for _ in range(SETS)]
    ids = torch.randint(0, 256, (t, TOPK), device="cuda", dtype=torch.int32)
    w = torch.rand(t, TOPK, device="cuda")
    ox, osf, oi, ow = buffers(t, h, recipe)
    for x in xs:  # correctness first, on every input set
        stage(x, ids, w, ox, osf, oi, ow, recipe=recipe)
        rq, rs, _, _ = eager(x, ids, w, recipe)
        assert torch.equal(ox.view(torch.uint8), rq.view(torch.uint8)), (recipe, t, h)
        assert torch.equal(osf.view(torch.int32), rs.view(torch.int32)), (recipe, t, h)
    us = time_us(lambda: [stage(x, ids, w, ox, osf, oi, ow, recipe=recipe) for x in xs]) / SETS
    # the eager reference checks its scales on the host, so it is timed without a graph
    eus = time_us(lambda: [eager(x, ids, w, recipe) for x in xs], graph=False) / SETS
    dus = float("nan")
    if dg is not None and recipe == "fp8_g128":
        # DeepGEMM's pre-dispatch takes int32 ids (its host check) and writes int64
        dus = time_us(lambda: [dg(x, ids, w, ox, osf, oi, ow, t, group_size=128) for x in xs]) / SETS
    nbytes = t * h * 2 + t * h + osf.numel() * 4 + t * TOPK * (4 + 4 + 8 + 4)
    return us, eus, dus, nbytes


def main() -> None:
    bw = copy_bandwidth()
    try:
        import deep_gemm

        dg = getattr(deep_gemm, "mega_moe_pre_dispatch_sm90", None)
    except Exception as exc:
        print(f"deep_gemm not importable ({type(exc).__name__}); DeepGEMM column skipped")
        dg = None
    print(f"device-to-device copy: {bw / 1e12:.2f} TB/s (read + written)")
    cols = ("recipe", "T", "H", "ours us", "eager us", "DG us", "ours TB/s", "/copy", "eager/ours", "DG/ours")
    print("{:9} {:>6} {:>5} {:>8} {:>9} {:>8} {:>9} {:>6} {:>10} {:>8}".format(*cols))
    for recipe in ("fp8_g128", "mxfp8"):
        for h in (4096, 7168):
            for t in (1, 64, 1024, 4096, 8192, 16384):
                us, eus, dus, nbytes = measure(recipe, t, h, dg)
                tbs = nbytes / (us * 1e-6) / 1e12
                print(
                    f"{recipe:9} {t:6d} {h:5d} {us:8.1f} {eus:9.1f} {dus:8.1f} {tbs:9.2f} {tbs * 1e12 / bw:6.2f} "
                    f"{eus / us:10.2f} {dus / us:8.2f}"
                )


if __name__ == "__main__":
    main()
