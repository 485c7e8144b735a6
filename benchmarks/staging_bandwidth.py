"""Activation staging bandwidth: ours (Triton) vs the eager torch path vs DeepGEMM's own
``mega_moe_pre_dispatch_sm90`` vs the measured copy bandwidth, side by side in one run.

Target (issue: H200 work, section 2): at least 85% of the measured device-to-device copy
bandwidth for T >= 4096 with H = 4096 and 7168. Every output is first checked bit for bit against
``moe_oracle.numerics``. Times are CUDA-event medians over replays of a CUDA graph after warm-up,
rotating through enough input sets to defeat the L2 cache. Run on a GPU:

    python benchmarks/staging_bandwidth.py
"""

from __future__ import annotations

import torch
from _timing import copy_bandwidth, time_us

from moe_oracle.kernels.staging_triton import stage
from moe_oracle.numerics import quantize_fp8, quantize_mxfp8

TOPK = 6
SETS = 4  # input sets rotated through (each >= 32 MB at T=4096, H=4096: past the 60 MB L2 together)


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


def copy_same_bytes_us(nbytes: int) -> float:
    """Microseconds of a device-to-device copy moving ``nbytes`` (read + written), rotated like the inputs."""
    srcs = [torch.empty(nbytes // 2, dtype=torch.uint8, device="cuda") for _ in range(SETS)]
    pairs = [(src, torch.empty_like(src)) for src in srcs]
    return time_us(lambda: [dst.copy_(src) for src, dst in pairs], reps=50, flush=False) / SETS


def inputs(t: int, h: int, ids_dtype: torch.dtype) -> tuple[list[torch.Tensor], torch.Tensor, torch.Tensor]:
    """``SETS`` activation sets (rotated through to defeat the L2), top-k ids and weights."""
    xs = [torch.randn(t, h, device="cuda").bfloat16() for _ in range(SETS)]
    return xs, torch.randint(0, 256, (t, TOPK), device="cuda", dtype=ids_dtype), torch.rand(t, TOPK, device="cuda")


def tune(recipe: str, t: int, h: int) -> list[tuple[float, int, int, int]]:
    """(us, block_m, groups_per_prog, num_warps) for a grid of tile shapes, fastest first (int64 ids, as route())."""
    xs, ids, w = inputs(t, h, torch.int64)
    ox, osf, oi, ow = buffers(t, h, recipe)
    out = []
    for bm in (2, 4, 8, 16):
        for gpp in (2, 4, 8) if recipe == "fp8_g128" else (8, 16, 32):
            for nw in (4, 8):
                kw = dict(recipe=recipe, block_m=bm, groups_per_prog=gpp, num_warps=nw)
                us = time_us(lambda kw=kw: [stage(x, ids, w, ox, osf, oi, ow, **kw) for x in xs], reps=30, flush=False)
                out.append((us / SETS, bm, gpp, nw))
    return sorted(out)


def measure(recipe: str, t: int, h: int, dg) -> tuple[float, float, float, int]:
    """(ours us, eager us, DeepGEMM us or nan, bytes moved by one staging call)."""
    xs, ids, w = inputs(t, h, torch.int32)  # int32 ids: DeepGEMM's pre-dispatch checks for them
    ox, osf, oi, ow = buffers(t, h, recipe)
    for x in xs:  # correctness first, on every input set
        stage(x, ids, w, ox, osf, oi, ow, recipe=recipe)
        rq, rs, _, _ = eager(x, ids, w, recipe)
        assert torch.equal(ox.view(torch.uint8), rq.view(torch.uint8)), (recipe, t, h)
        assert torch.equal(osf.view(torch.int32), rs.view(torch.int32)), (recipe, t, h)
    us = time_us(lambda: [stage(x, ids, w, ox, osf, oi, ow, recipe=recipe) for x in xs], reps=50, flush=False) / SETS
    # the eager reference checks its scales on the host, so it is timed without a graph
    eus = time_us(lambda: [eager(x, ids, w, recipe) for x in xs], reps=50, flush=False, graph=False) / SETS
    dus = float("nan")
    if dg is not None and recipe == "fp8_g128":
        # DeepGEMM's pre-dispatch takes int32 ids (its host check) and writes int64
        dus = (
            time_us(lambda: [dg(x, ids, w, ox, osf, oi, ow, t, group_size=128) for x in xs], reps=50, flush=False)
            / SETS
        )
    nbytes = t * h * 2 + t * h + osf.numel() * 4 + t * TOPK * (4 + 4 + 8 + 4)
    return us, eus, dus, nbytes


def main() -> None:
    import sys

    if "--tune" in sys.argv:
        for recipe in ("fp8_g128", "mxfp8"):
            for h in (4096, 7168):
                for t in (4096, 16384):
                    best = tune(recipe, t, h)[:4]
                    print(recipe, t, h, " ".join(f"{us:.1f}us bm{bm} gpp{g} w{nw}" for us, bm, g, nw in best))
        return
    bw = copy_bandwidth()
    try:
        import deep_gemm

        dg = getattr(deep_gemm, "mega_moe_pre_dispatch_sm90", None)
    except Exception as exc:
        print(f"deep_gemm not importable ({type(exc).__name__}); DeepGEMM column skipped")
        dg = None
    print(f"device-to-device copy: {bw / 1e12:.2f} TB/s (read + written)")
    cols = (
        "recipe",
        "T",
        "H",
        "ours us",
        "eager us",
        "DG us",
        "copy us",
        "ours TB/s",
        "/copy",
        "/same-size",
        "eager/ours",
    )
    print("{:9} {:>6} {:>5} {:>8} {:>9} {:>8} {:>8} {:>9} {:>6} {:>10} {:>10}".format(*cols) + " DG/ours")
    for recipe in ("fp8_g128", "mxfp8"):
        for h in (4096, 7168):
            for t in (1, 64, 1024, 4096, 8192, 16384):
                us, eus, dus, nbytes = measure(recipe, t, h, dg)
                cus = copy_same_bytes_us(nbytes)
                tbs = nbytes / (us * 1e-6) / 1e12
                print(
                    f"{recipe:9} {t:6d} {h:5d} {us:8.1f} {eus:9.1f} {dus:8.1f} {cus:8.1f} {tbs:9.2f} "
                    f"{tbs * 1e12 / bw:6.2f} {cus / us:10.2f} {eus / us:10.2f} {dus / us:7.2f}"
                )


if __name__ == "__main__":
    main()
