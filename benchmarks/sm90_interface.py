"""SM90 mega-MoE through moe-oracle's interface on one H200: correctness, overhead, weight preparation.

One run, every number side by side:

1. The oracle decides on ``--device local`` with the ``installed`` software profile; the chosen
   variant is built with :func:`moe_oracle.runtime.build_layer_for_decision` and loaded from
   checkpoint-layout experts (random masters quantized to the checkpoint's format; full
   DeepSeek-V4-Flash and GLM-5-FP8 expert shapes).
2. Correctness first, for every T, on fresh random inputs: calc_diff of the kernel against the
   emulation twin and against the FP32 reference (dequantized weights, no intermediate rounding).
3. Time (CUDA graph per path, 512 MB written before each timed replay to clear the 60 MB L2, CUDA
   events), every path interleaved round by round (``_timing.time_interleaved``: 7 rounds of 5 replays,
   the order rotating, so no path gains from running at a cooler clock): our forward (Triton staging +
   kernel), the same with staging that rewrites the buffer's whole top-k capacity as padding (what it
   did before the SM90 staging declared ``pad_rows=False``), the bare kernel call on pre-staged inputs,
   and DeepGEMM's own ``mega_moe_pre_dispatch_sm90`` + kernel; the HBM floor is the active experts'
   weight bytes over the measured copy bandwidth; each row gives the per-round spread of ours / kernel
   and the SM clock and board power range NVML read during it.
4. Weight preparation: one layer's 256 experts from checkpoint layout to the kernel layout on the
   GPU, against the copy ceiling and a plain copy of the same tensors measured next to it; the gate/up
   interleave alone (8-byte words, and single bytes for comparison); the extra memory it needed.

Run on the H200 (needs a DeepGEMM build with the SM90 kernels): ``python benchmarks/sm90_interface.py``.
"""

from __future__ import annotations

import argparse
import importlib
from dataclasses import replace

import torch
from _timing import Condition, copy_bandwidth, time_interleaved, time_us

from moe_oracle.decide.advisories import load_advisories
from moe_oracle.decide.selection import decide
from moe_oracle.inputs import DeploymentFlags, build_deployment, resolve_software
from moe_oracle.model.resolve import resolve_model
from moe_oracle.model.types import ModelDescription, QuantSpec
from moe_oracle.runtime import LayerConfig, calc_diff, reference_moe, route
from moe_oracle.runtime.accuracy import random_masters
from moe_oracle.runtime.build import build_layer, build_layer_for_decision
from moe_oracle.runtime.layouts import INTERLEAVE_GRAN, LOAD_CHUNK_EXPERTS, _gate_up_split, _permute_rows
from moe_oracle.runtime.quantize import quantize_experts
from moe_oracle.runtime.vendor import resolve_attr as _resolve

#: (model shape, routed-expert format): both SM90 variants at both full expert shapes; a format that is not
#: the checkpoint's (V4-Flash in FP8, GLM-5 in MXFP4) stands for an FP8 conversion / a hypothetical export.
CASES = (
    ("deepseek-ai/DeepSeek-V4-Flash", "mxfp4"),
    ("deepseek-ai/DeepSeek-V4-Flash", "fp8_block"),
    ("zai-org/GLM-5-FP8", "fp8_block"),
    ("zai-org/GLM-5-FP8", "mxfp4"),
)
FORMATS = {
    "mxfp4": QuantSpec(format="mxfp4", block=(1, 32), scale_format="ue8m0"),
    "fp8_block": QuantSpec(format="fp8_block", block=(128, 128), scale_format="fp32"),
}
TOKENS = (1, 8, 64, 512, 2048, 8192)


def expected_active(ids: torch.Tensor) -> int:
    return int(torch.unique(ids[ids >= 0]).numel())


def with_format(model: ModelDescription, fmt: str) -> ModelDescription:
    main = model.main_group.model_copy(update={"weight_quant": FORMATS[fmt]})
    return model.model_copy(update={"layer_groups": (main,), "model": f"{model.model} ({fmt} experts)"})


def measure(layer, twin, experts, g, t: int, gen: torch.Generator, bw: float, flush: bool = True) -> str:
    """One table row: correctness first, then the three timed paths."""
    x = torch.randn(t, g.hidden_size, device="cuda", generator=gen).bfloat16()
    logits = torch.randn(t, g.num_experts, device="cuda", generator=gen)
    # zero correction bias: every expert equally likely, as in fused_vs_nonfused (the GPU tests route with a bias)
    ids, w = route(g, logits, bias=torch.zeros(g.num_experts, device="cuda"))
    y = layer(x, ids, w).float().clone()
    rows = torch.randperm(t, device="cuda", generator=gen)[: min(t, 256)]
    ref = reference_moe(twin.quantized_input(x)[rows], ids[rows], w[rows], experts, g.activation)
    d_twin = calc_diff(y, twin(x, ids, w).float())
    d_ref = calc_diff(y[rows], ref)
    assert torch.isfinite(y).all() and d_ref < 1e-3, (t, d_twin, d_ref)
    call = layer.kernel_call(t)
    kernel = _resolve(layer.dg, call.function)
    buf = layer.buffer
    ids32 = ids.int()  # DeepGEMM's pre-dispatch takes int32 ids
    pre = getattr(layer.dg, "mega_moe_pre_dispatch_sm90", None)

    def bare() -> None:
        kernel(*call.args, **call.kwargs)

    def dg_path() -> None:
        pre(x, ids32, w, buf.x, buf.x_sf, buf.topk_idx, buf.topk_weights, t)
        kernel(*call.args, **call.kwargs)

    padded = replace(layer.STAGING, pad_rows=True)

    def ours_padded() -> None:
        padded.stage_to_buffer(buf, x, ids, w)
        kernel(*call.args, **call.kwargs)

    paths = {"ours": lambda: layer(x, ids, w), "padded": ours_padded, "kernel": bare}
    if pre is not None:
        paths["dg"] = dg_path
    cond = Condition()
    tm = time_interleaved(paths, condition=cond, flush=flush)
    ours_us, bare_us, pad_us = tm["ours"].us, tm["kernel"].us, tm["padded"].us
    dg_us = tm["dg"].us if "dg" in tm else float("nan")
    act = expected_active(ids)
    floor = act * g.expert_weight_bytes() / bw * 1e6
    return (
        f"{t:5d} {act:7d} {d_twin:9.2e} {d_ref:9.2e} {ours_us:8.1f} {pad_us:8.1f} {bare_us:9.1f} {dg_us:8.1f} "
        f"{ours_us / bare_us:9.4f} {pad_us / bare_us:9.4f} {ours_us / dg_us:7.3f} {floor:9.1f} {bare_us / floor:10.2f}"
        f"  {tm['ours'].spread:5.1%}/{tm['kernel'].spread:5.1%}  {cond.text()}"
    )


def pdl_rows(layer, g, t: int, gen: torch.Generator) -> None:
    """At small T, with DeepGEMM's PDL switch off and on (``deep_gemm.set_pdl``), interleaved in one run: our
    forward, the bare kernel on pre-staged inputs and DeepGEMM's pre-dispatch + kernel. Each path is captured
    with its switch (the launch attribute is recorded at capture). No producer kernel precedes the paths, so
    the ratio is the staging's cost before the kernel alone; the GPU test checks PDL after a producer."""
    dg = layer.dg
    set_pdl, get_pdl = getattr(dg, "set_pdl", None), getattr(dg, "get_pdl", None)
    if set_pdl is None or get_pdl is None:
        print("   PDL: this DeepGEMM build has no set_pdl/get_pdl")
        return
    x = torch.randn(t, g.hidden_size, device="cuda", generator=gen).bfloat16()
    logits = torch.randn(t, g.num_experts, device="cuda", generator=gen)
    ids, w = route(g, logits, bias=torch.zeros(g.num_experts, device="cuda"))
    call = layer.kernel_call(t)
    kernel = _resolve(dg, call.function)
    buf, ids32 = layer.buffer, ids.int()
    pre = getattr(dg, "mega_moe_pre_dispatch_sm90", None)
    before = bool(get_pdl())

    def switched(on: bool, body):
        def fn() -> None:
            set_pdl(on)
            try:
                body()
            finally:
                set_pdl(before)

        return fn

    def dg_path() -> None:
        pre(x, ids32, w, buf.x, buf.x_sf, buf.topk_idx, buf.topk_weights, t)
        kernel(*call.args, **call.kwargs)

    outs = {}
    for on in (False, True):
        switched(on, lambda: layer(x, ids, w))()
        outs[on] = call.args[0].clone()
    same = torch.equal(outs[False], outs[True])
    paths = {}
    for on, tag in ((False, "off"), (True, "on")):
        paths[f"ours {tag}"] = switched(on, lambda: layer(x, ids, w))
        paths[f"kernel {tag}"] = switched(on, lambda: kernel(*call.args, **call.kwargs))
        if pre is not None:
            paths[f"dg {tag}"] = switched(on, dg_path)
    cond = Condition()
    tm = time_interleaved(paths, condition=cond, rounds=9, reps_per_round=7)
    row = [f"{t:5d}"]
    for tag in ("off", "on"):
        k = tm[f"kernel {tag}"].us
        dgr = tm[f"dg {tag}"].us / k if pre is not None else float("nan")
        row.append(f"{tm[f'ours {tag}'].us:8.1f} {k:8.1f} {tm[f'ours {tag}'].us / k:7.4f} {dgr:7.4f}")
    print("  ".join(row) + f"  pdl output == no-pdl output: {same}  {cond.text()}")


def staging_configs(layer, x, ids, w) -> None:
    """At this small T: our forward with each staging tile (rows x columns per program, warps), interleaved with
    the bare kernel, so the staging's share of the call is seen per configuration."""
    from moe_oracle.kernels.staging_triton import stage

    t, h = x.shape
    call = layer.kernel_call(t)
    kernel = _resolve(layer.dg, call.function)
    buf = layer.buffer
    recipe = layer.STAGING.triton_recipe

    def with_tile(gpp: int, nw: int):
        def fn() -> None:
            stage(x, ids, w, buf.x[:t], buf.x_sf[:t], buf.topk_idx, buf.topk_weights, recipe=recipe, pad_to=t,
                  block_m=1, groups_per_prog=gpp, num_warps=nw)  # fmt: skip
            kernel(*call.args, **call.kwargs)

        return fn

    paths = {"kernel": lambda: kernel(*call.args, **call.kwargs), "default": lambda: layer(x, ids, w)}
    for gpp in (4, 8, 16, h // 128):
        for nw in (1, 2, 4, 8):
            if gpp * 128 <= h:
                paths[f"gpp{gpp} w{nw}"] = with_tile(gpp, nw)
    tm = time_interleaved(paths, rounds=9, reps_per_round=7)
    bare = tm.pop("kernel").us
    print(f"   staging tiles at T={t} (H {h}): ours/kernel per config, kernel {bare:.1f} us")
    for name, timing in sorted(tm.items(), key=lambda kv: kv[1].us):
        print(f"     {name:<12} {timing.us:8.2f} us  {timing.us / bare:7.4f}  spread {timing.spread:5.1%}")


def run_case(
    model_id: str,
    fmt: str,
    bw: float,
    max_tokens: int,
    tokens: tuple[int, ...],
    prep: bool = True,
    tiles=(),
    flush: bool = True,
    pdl_tokens: tuple[int, ...] = (),
) -> None:
    stored = resolve_model(model_id)
    model = with_format(stored, fmt)
    dep, origin = build_deployment(DeploymentFlags(device="local", max_num_batched_tokens=max_tokens))
    sw, _ = resolve_software(None, "local")
    decision = decide(model, dep, sw, advisories=load_advisories())
    main = decision.main
    print(f"\n== {model.model}: {origin}; oracle chose {main.chosen.spec.key if main.chosen else main.fallback}")
    for note in main.notes:
        print("   note:", note)
    fused = main.chosen or next((c for c in main.candidates if c.eligible), None)
    if fused is None:
        for c in main.candidates[:3]:
            print("   ", c.spec.key, [r.code.value for r in c.failures])
        return
    g = main.group
    gen = torch.Generator(device="cuda").manual_seed(0)
    w13, w2 = random_masters(g, torch.Generator(device="cuda").manual_seed(1))
    experts = quantize_experts(w13, w2, g.weight_quant)
    del w13, w2
    layers = sum(len(gr.layers) for gr in stored.layer_groups)
    if not tokens:  # --prep-only: no kernel, no layer buffers
        weight_prep(fused.spec, experts, bw, layers)
        return
    if main.chosen is not None:
        layer = build_layer_for_decision(decision, experts=experts, device="cuda", max_tokens_per_rank=max_tokens)
    else:  # the oracle ranks the non-fused path first for its workload: measure the eligible fused variant
        print(f"   measuring the eligible fused candidate {fused.spec.key}")
        layer = build_layer(fused.spec, LayerConfig(group=g, max_tokens_per_rank=max_tokens), experts)
    twin = build_layer("emulation:" + fused.spec.variant, layer.config, experts)
    print(
        f"{'T':>5} {'experts':>7} {'diff/twin':>9} {'diff/ref':>9} {'ours us':>8} {'padded':>8} {'kernel us':>9} "
        f"{'DG pre+k':>8} {'ours/kern':>9} {'pad/kern':>9} {'ours/DG':>7} {'HBM floor':>9} {'kern/floor':>10}"
        "  spread ours/kern  condition"
    )
    for t in tokens:
        print(measure(layer, twin, experts, g, t, gen, bw, flush=flush))
    if pdl_tokens:
        print(f"   PDL   {'ours':>8} {'kernel':>8} {'ours/k':>7} {'DG/k':>7}  (PDL off)   then the same with PDL on")
        for t in pdl_tokens:
            pdl_rows(layer, g, t, gen)
    for t in tiles:
        x = torch.randn(t, g.hidden_size, device="cuda", generator=gen).bfloat16()
        ids, w = route(
            g,
            torch.randn(t, g.num_experts, device="cuda", generator=gen),
            bias=torch.zeros(g.num_experts, device="cuda"),
        )
        staging_configs(layer, x, ids, w)
    layer.close()
    del layer, twin
    if prep:
        weight_prep(fused.spec, experts, bw, layers)
    torch.cuda.empty_cache()


def _timed(fn) -> float:
    """Plain calls (the transforms allocate per chunk) timed with events, median of 5."""
    return time_us(fn, reps=5, graph=False, flush=False)


def _prep_rows(mod, experts, src: tuple) -> list[tuple[str, str, float]]:
    """(name, the copy it compares with, us): plain copies, the interleave both ways, the layer into its buffers."""
    canon = mod.canonical(experts)
    copies = [torch.empty_like(t) for t in src]
    rows = [
        ("copy of the same tensors", "", _timed(lambda: [c.copy_(t) for c, t in zip(copies, src, strict=True)])),
        ("copy of w13 alone", "", _timed(lambda: copies[0].copy_(src[0]))),
    ]
    copies.clear()
    dst = mod.to_kernel(experts, chunk_experts=8)  # warm-up; the destination (source device)
    split = _gate_up_split(canon.w13.shape[1], INTERLEAVE_GRAN)
    (a, b, c), e = split, canon.w13.shape[0]
    bytewise = dst.w13.view(canon.w13.dtype).view(e, b, a, c, -1)
    rows += [
        ("w13 interleave (8-byte words, as loading does it)", "copy of w13 alone",
         _timed(lambda: _permute_rows(canon.w13, split, dst.w13))),
        ("w13 interleave moving single bytes", "copy of w13 alone",
         _timed(lambda: bytewise.copy_(canon.w13.view(e, a, b, c, -1).transpose(1, 2)))),
    ]  # fmt: skip
    for chunk in (4, 16, 64, experts.num_experts):
        rows.append((f"layer into preallocated, {chunk} experts/chunk", "copy of the same tensors",
                     _timed(lambda c=chunk: mod.transform_into(experts, dst, c))))  # fmt: skip
    return rows


def weight_prep(spec, experts, bw: float, layers: int) -> None:
    """One layer's experts into the variant's kernel layout, side by side with plain copies of the same bytes."""
    mod = importlib.import_module(spec.runtime.split(":")[0].rsplit(".", 1)[0] + ".weights")
    src = (experts.w13, experts.w2, experts.w13_scale, experts.w2_scale)
    nbytes = {"copy of the same tensors": sum(t.numel() * t.element_size() for t in src)}
    nbytes["copy of w13 alone"] = src[0].numel() * src[0].element_size()
    rows = _prep_rows(mod, experts, src)
    torch.cuda.empty_cache()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    kw = mod.to_kernel(experts, chunk_experts=LOAD_CHUNK_EXPERTS)
    e.record()
    e.synchronize()
    alloc_us = s.elapsed_time(e) * 1e3
    extra = torch.cuda.max_memory_allocated() - base
    rows.append(
        (f"layer with its allocation (to_kernel), {LOAD_CHUNK_EXPERTS}/chunk", "copy of the same tensors", alloc_us)
    )
    same = {name: us for name, ref, us in rows if not ref}
    layer_mib = nbytes["copy of the same tensors"] / 2**20
    print(f"\nweight prep {spec.variant}: {experts.num_experts} experts, {layer_mib:.0f} MiB read and written")
    print(f"  {'path':<50} {'ms':>7} {'TB/s':>6} {'/ceiling':>8} {'/same copy':>10}")
    for name, ref, us in rows:
        rate = 2 * nbytes[ref or name] / (us * 1e-6)
        print(f"  {name:<50} {us / 1e3:7.2f} {rate / 1e12:6.2f} {rate / bw:8.2f} {same[ref or name] / us:10.2f}")
    best = next(us for name, _, us in rows if name.startswith(f"layer into preallocated, {LOAD_CHUNK_EXPERTS} "))
    print(
        f"  peak above the source {extra / 2**20:.0f} MiB = {extra / kw.nbytes:.2f} layers (the result plus "
        f"{(extra - kw.nbytes) / kw.nbytes:.2f} layers of temporaries); projected {layers} MoE layers: "
        f"{best * layers / 1e6:.2f} s preallocated ({LOAD_CHUNK_EXPERTS}/chunk), {alloc_us * layers / 1e6:.2f} s with "
        "allocation"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-tokens", type=int, default=8192)
    ap.add_argument("--tokens", default=",".join(map(str, TOKENS)), help="comma list of T")
    ap.add_argument("--cases", default="all", help="comma list of indexes into CASES, or all")
    ap.add_argument("--prep-only", action="store_true", help="only the weight-preparation measurement")
    ap.add_argument("--no-prep", action="store_true", help="skip the weight-preparation measurement")
    ap.add_argument("--no-flush", action="store_true", help="time without clearing the L2 before each replay")
    ap.add_argument("--tiles", default="", help="comma list of small T at which to compare staging tiles")
    ap.add_argument("--pdl", default="", help="comma list of small T at which to compare PDL off and on")
    args = ap.parse_args()
    tokens = () if args.prep_only else tuple(int(t) for t in args.tokens.split(","))
    tiles = tuple(int(t) for t in args.tiles.split(",") if t)
    pdl_tokens = tuple(int(t) for t in args.pdl.split(",") if t)
    cases = CASES if args.cases == "all" else tuple(CASES[int(i)] for i in args.cases.split(","))
    bw = copy_bandwidth()
    print(f"device {torch.cuda.get_device_name()}; copy bandwidth {bw / 1e12:.2f} TB/s (read + written)")
    for model_id, fmt in cases:
        try:
            run_case(
                model_id,
                fmt,
                bw,
                args.max_tokens,
                tokens,
                prep=not args.no_prep,
                tiles=tiles,
                flush=not args.no_flush,
                pdl_tokens=pdl_tokens,
            )
        except Exception as exc:  # report and go on: one failing case must not hide the others
            print(f"!! {model_id} ({fmt}): {type(exc).__name__}: {exc}")


if __name__ == "__main__":
    main()
