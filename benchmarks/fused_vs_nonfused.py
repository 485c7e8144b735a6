"""Fused mega-MoE vs the non-fused grouped-GEMM path, per T, on one GPU; plus load-time MXFP4 -> FP8 conversion.

One run, every path through moe-oracle's interface, all computing the same model:

- the MXFP4 experts of a layer (random masters, full expert shape) are the checkpoint;
- the oracle decides for the deployment given by ``--deployment`` (default 8 x H200, DP8/EP8, the
  ``installed`` software profile) and its load-time conversion (MXFP4 -> FP8 block-128) is run end
  to end through :class:`~moe_oracle.runtime.converting_layer.ConvertingLayer`: every block checked, the
  report, the load time and the expert memory before/after are printed;
- paths: fused ``sm90_fp8xfp4`` on the stored MXFP4 experts; fused ``sm90_fp8xfp8`` on the converted
  experts; the non-fused FP8 graph (``backends/cuda_sm90/nonfused``, DeepGEMM grouped GEMMs) in the
  ``psum`` and ``m_indices`` layouts on the converted experts. The conversion being lossless, all four
  compute on identical weight values, so one FP32 reference (dequantized MXFP4 weights, dequantized
  FP8 input, no intermediate rounding) checks them all, before any timing, on fresh random inputs;
- routing: the model's own router on randn logits with no correction bias, so every expert is equally
  likely (a trained router's bias keeps production load balanced; a random bias would leave experts
  idle and flatter the paths that stream only active experts), as ``shared/reference/h200.md`` routes;
- time: CUDA graph per path and T, 512 MB zeroed before each timed replay (L2 cleared), CUDA events;
  the four paths interleaved round by round (``_timing.time_interleaved``: 7 rounds of 5 replays, the
  order rotating), so that none is favoured by the clock drop the H200 takes at large T; each row
  records the per-round spread and the SM clock / board power NVML read during it; floors: the active
  experts' weight bytes at the measured copy bandwidth (HBM) and the FLOPs at the FP8 dense peak.
- ``--model`` takes a bundled preset id or ``shape:<name>`` for a family shape of ``_shapes.SHAPES``
  (Qwen3-30B-A3B, Qwen3-235B-A22B, Qwen3-Next-80B-A3B, MiniMax-M2, GLM-4.5-Air, Kimi-K2), several comma-
  separated in one run (``--json`` is then a directory, one file per model); each model's layers are
  closed before the next is built, and the device memory left allocated after each is printed.

``--steady [SECONDS]`` also times each path alone, after SECONDS (default 2) of its own replays, with the SM clock
and instant board power read after every timed replay (``_timing.time_steady``): what one path costs where a server
runs only it, at the clock its own power draw sets (stored per path as ``steady`` in ``--json``, with the warm-up).
``--steady-reversed`` times the paths alone in the reverse order (a check that the order does not set the result).

``--fused fp8`` (or ``fp4``) builds and times only that fused variant, beside both non-fused layouts (which also
stage the reference's input): a probe of one kernel that need not compile the other.

``--json FILE`` writes every measurement (the input of ``benchmarks/fit_cost_model.py`` and
``benchmarks/oracle_regret.py``). Run on an H200 with a DeepGEMM build that has the SM90 kernels:

    python benchmarks/fused_vs_nonfused.py --json benchmarks/results/h200/fused_vs_nonfused.json
    python benchmarks/fused_vs_nonfused.py --model shape:qwen3-30b-a3b,shape:minimax-m2 --json DIR
"""

from __future__ import annotations

import argparse
import importlib
import json
import platform
import time

import torch
from _shapes import model as shape_model
from _timing import Condition, copy_bandwidth, time_interleaved, time_steady
from moe_oracle_backends.cuda_sm90.nonfused.layer import GroupedGemmMoE

from moe_oracle.decide.advisories import load_advisories
from moe_oracle.decide.selection import decide
from moe_oracle.inputs import DeploymentFlags, build_deployment, resolve_software
from moe_oracle.model.resolve import resolve_model
from moe_oracle.model.types import QuantSpec
from moe_oracle.runtime import LayerConfig, build_layer, calc_diff, reference_moe, route
from moe_oracle.runtime.accuracy import random_masters
from moe_oracle.runtime.converting_layer import ConvertingLayer
from moe_oracle.runtime.quantize import quantize_experts

TOKENS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)
FP8_PEAK = {"NVIDIA H200": 1979e12}
PATHS = ("fused_fp8", "fused_fp4", "nonfused_psum", "nonfused_m_indices")
KEYS = {
    "fused_fp8": "deep_gemm_mega_moe:sm90_fp8xfp8",
    "fused_fp4": "deep_gemm_mega_moe:sm90_fp8xfp4",
    "nonfused_psum": "nonfused:deepgemm_fp8_psum",
    "nonfused_m_indices": "nonfused:deepgemm_fp8_m_indices",
}


#: the fused variants ``--fused`` can name (both by default)
FUSED = ("fp8", "fp4")


def nbytes(*tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors if t is not None)


def oracle_conversion(model, deployment: str):
    """The oracle's decision for the target deployment and the conversion it chose (or None)."""
    device, _, rest = deployment.partition(":")
    dp, ep = (int(v) for v in rest.split("x")) if rest else (8, 8)
    dep, origin = build_deployment(DeploymentFlags(device=device, dp=dp, ep=ep))
    sw, _ = resolve_software(None, "local")
    decision = decide(model, dep, sw, advisories=load_advisories())
    chosen = decision.main.chosen
    label = chosen.key if chosen else f"none ({decision.main.fallback})"
    print(f"oracle for {model.model} on {dep.device.name} x{dep.topology.world_size} DP{dp}/EP{ep} ({origin}): {label}")
    for note in decision.main.notes:
        print("   note:", note)
    if chosen is not None and chosen.conversion is not None:
        return chosen.conversion
    # the oracle did not choose it here: run the conversion sm90_fp8xfp8 declares, and say so
    from moe_oracle.runtime.build import resolve_variant

    spec, _ = resolve_variant(KEYS["fused_fp8"])
    conv = next(c for c in spec.conversions if c.source is model.main_group.weight_format)
    print(f"   (running {spec.key}'s declared conversion {conv.label} for the measurement)")
    return conv


def build_paths(g, experts, conversion, max_tokens: int, fused: tuple[str, ...] = FUSED) -> tuple[dict, dict]:
    """The layers (EP1 on this GPU: the fused variants ``fused`` names, both non-fused layouts) and the conversion
    measurements. A fused path whose build refuses the shape (a limit of the installed DeepGEMM build, raised before
    or while its buffer is made) is left out and its one-line reason kept in ``info["refused"]``; the non-fused
    paths run whatever the fused ones do (they stage the reference's input too)."""
    cfg = LayerConfig(group=g, max_tokens_per_rank=max_tokens)
    g8 = g.model_copy(update={"weight_quant": conversion.target})
    cfg8 = LayerConfig(group=g8, max_tokens_per_rank=max_tokens)
    info: dict = {"mxfp4_bytes": nbytes(experts.w13, experts.w2, experts.w13_scale, experts.w2_scale), "refused": {}}
    layers: dict = {}
    module, _, fn = conversion.runtime.partition(":")
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    converted, rep = getattr(importlib.import_module(module), fn)(experts)
    torch.cuda.synchronize()
    info["conversion_s"] = time.perf_counter() - t0
    info.update(lossless=rep.lossless, blocks=rep.total_blocks, lossy_blocks=len(rep.lossy_blocks))
    info["changed_elements"] = rep.changed_elements
    info["fp8_bytes"] = nbytes(converted.w13, converted.w2, converted.w13_scale, converted.w2_scale)
    if "fp4" in fused:
        try:
            layers["fused_fp4"] = build_layer(KEYS["fused_fp4"], cfg, experts)
        except Exception as exc:  # a build limit (BackendUnavailableError, LayerInputError) or the library's assertion
            info["refused"]["fused_fp4"] = f"{type(exc).__name__}: {exc}"
    if "fp8" in fused:
        try:
            fused8 = ConvertingLayer(build_layer(KEYS["fused_fp8"], cfg8), conversion)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            fused8.load(experts)
            torch.cuda.synchronize()
            info["load_s"] = time.perf_counter() - t0
            layers["fused_fp8"] = fused8
        except Exception as exc:
            info["refused"]["fused_fp8"] = f"{type(exc).__name__}: {exc}"
    for path, reason in info["refused"].items():
        print(f"   {path} refused: {reason.splitlines()[0][:300]}")
    for layout in ("psum", "m_indices"):
        nf = GroupedGemmMoE(cfg8, layout=layout)
        nf.load(converted)
        layers[f"nonfused_{layout}"] = nf
    info["nonfused_buffer_bytes"] = layers["nonfused_psum"].buffer_bytes()
    return layers, info


def sweep(
    g,
    experts,
    layers,
    tokens,
    info: dict,
    bw: float,
    peak: float,
    on_row=None,
    steady: float = 0.0,
    steady_reversed: bool = False,
) -> list[dict]:
    """One row per T (printed, and passed to ``on_row`` with the rows so far: a run cut short keeps them); with
    ``steady`` > 0 each path is also timed alone after ``steady`` seconds of its own replays
    (``_timing.time_steady``), in reverse path order with ``steady_reversed``."""
    gen = torch.Generator(device="cuda").manual_seed(1)
    e_fp8, e_fp4 = info["fp8_bytes"] / g.num_experts, info["mxfp4_bytes"] / g.num_experts  # bytes per expert
    paths = [p for p in PATHS if p in layers]
    head = f"{'T':>5} {'active':>6} " + " ".join(f"{p:>18}" for p in PATHS)
    print(head + f" {'best nf/fp8':>11} {'best nf/fp4':>11} {'fp8/HBM':>7} {'fp4/HBM':>7} {'best/peak':>9}")
    rows = []
    for t in tokens:
        x = torch.randn(t, g.hidden_size, device="cuda", generator=gen).bfloat16()
        logits = torch.randn(t, g.num_experts, device="cuda", generator=gen)
        # zero correction bias: balanced in expectation, as a trained router's correction bias keeps it
        ids, w = route(g, logits, bias=torch.zeros(g.num_experts, device="cuda"))
        check = torch.randperm(t, device="cuda", generator=gen)[: min(t, 128)]
        xs = layers["nonfused_psum"].staged_input(x)
        ref = reference_moe(xs[check], ids[check], w[check], experts, g.activation)
        active = int(torch.unique(ids[ids >= 0]).numel())
        row = {"T": t, "active": active}
        for p in paths:
            layer = layers[p]
            y = layer(x, ids, w)
            d = calc_diff(y[check].float(), ref)
            ok = bool(torch.isfinite(y).all()) and float(y.float().abs().max()) > 0 and d < 1e-3
            if not ok:
                raise AssertionError(f"{p} at T={t}: calc_diff {d:.3e} vs the FP32 reference")
            row[p] = {"calc_diff": d}
        cond = Condition()
        fns = {p: (lambda layer=layers[p], x=x, ids=ids, w=w: layer(x, ids, w)) for p in paths}
        for p, tm in time_interleaved(fns, condition=cond).items():
            row[p].update(us=tm.us, round_min_us=tm.round_min_us, round_max_us=tm.round_max_us)
        row["condition"] = cond.to_json()
        if steady > 0:
            order = list(reversed(fns)) if steady_reversed else list(fns)
            for p, st in time_steady({p: fns[p] for p in order}, warm_s=steady).items():
                row[p]["steady"] = {**st.to_json(), "warm_s": steady, "order": order.index(p)}
                clk = f"{min(st.clocks_mhz):.0f}-{max(st.clocks_mhz):.0f} MHz" if st.clocks_mhz else "clock not read"
                pw = f", {min(st.power_w):.0f}-{max(st.power_w):.0f} W" if st.power_w else ""
                print(f"      steady {p}: {st.us:9.1f} us ({st.us / row[p]['us']:.3f} x interleaved), {clk}{pw}")
        best_nf = min(row["nonfused_psum"]["us"], row["nonfused_m_indices"]["us"])
        hbm8, hbm4 = active * e_fp8 / bw * 1e6, active * e_fp4 / bw * 1e6
        flop_floor = 2 * t * g.top_k * 3 * g.hidden_size * g.moe_intermediate_size / peak * 1e6
        row.update(hbm_floor_fp8_us=hbm8, hbm_floor_fp4_us=hbm4, peak_floor_us=flop_floor)
        best = min(row[p]["us"] for p in paths)
        nan = float("nan")
        us = {p: row[p]["us"] if p in row else nan for p in PATHS}
        print(
            f"{t:5d} {active:6d} "
            + " ".join(
                f"{row[p]['us']:9.1f} ({row[p]['calc_diff']:.1e})" if p in row else f"{'refused':>18}" for p in PATHS
            )
            + f" {best_nf / us['fused_fp8']:11.2f} {best_nf / us['fused_fp4']:11.2f}"
            + f" {us['fused_fp8'] / hbm8:7.2f} {us['fused_fp4'] / hbm4:7.2f}"
            + f" {best / max(hbm8, flop_floor):9.2f}  {cond.text()}"
        )
        rows.append(row)
        if on_row is not None:
            on_row(rows)
    return rows


def resolve(name: str):
    """A bundled preset id, or ``shape:<name>`` of ``_shapes.SHAPES`` (MXFP4 experts)."""
    mx = QuantSpec(format="mxfp4", block=(1, 32), scale_format="ue8m0")
    if name.startswith("shape:"):
        return shape_model(name.removeprefix("shape:"), mx)
    model = resolve_model(name)
    if model.main_group.weight_format.value != "mxfp4":
        # an FP8 checkpoint (GLM-5-FP8): its shape with MXFP4 experts, so that the same four paths (and the
        # lossless conversion) apply; the timings depend on the shape, the values are random anyway
        main = model.main_group.model_copy(update={"weight_quant": mx})
        model = model.model_copy(update={"layer_groups": (main,), "model": f"{model.model} (MXFP4 experts)"})
        print(f"{name}: experts taken as MXFP4 for the sweep (the stored format is FP8)")
    return model


def run_model(name: str, args, tokens, bw: float, peak: float, device: str, out: str | None) -> None:
    model = resolve(name)
    g = model.main_group
    print(f"\n== {model.model}: H {g.hidden_size}, I {g.moe_intermediate_size}, E {g.num_experts}, top-{g.top_k}")
    conversion = oracle_conversion(model, args.deployment)
    w13, w2 = random_masters(g, torch.Generator(device="cuda").manual_seed(0))
    experts = quantize_experts(w13, w2, g.weight_quant)
    del w13, w2
    layers, info = build_paths(g, experts, conversion, max(tokens), args.fused)
    print(
        f"conversion {conversion.label}: "
        f"lossless={info.get('lossless')} over {info.get('blocks')} blocks ({info.get('lossy_blocks')} lossy, "
        f"{info.get('changed_elements')} values changed); conversion {info['conversion_s']:.2f} s, fused FP8 load "
        f"incl. conversion {info.get('load_s', float('nan')):.2f} s;"
        f" experts per layer {info['mxfp4_bytes'] / 2**30:.2f} GiB MXFP4 -> {info['fp8_bytes'] / 2**30:.2f} GiB FP8; "
        f"non-fused buffers {info['nonfused_buffer_bytes'] / 2**30:.2f} GiB"
    )

    def save(rows: list[dict]) -> None:
        import deep_gemm

        doc = {
            "device": device,
            "torch": torch.__version__,
            "deep_gemm": getattr(deep_gemm, "__version__", "?"),
            "python": platform.python_version(),
            "model": model.model,
            "ep": 1,
            "shape": {
                "hidden_size": g.hidden_size,
                "moe_intermediate_size": g.moe_intermediate_size,
                "num_experts": g.num_experts,
                "top_k": g.top_k,
            },
            "copy_tb_s": bw / 1e12,
            "fp8_peak_tflops": peak / 1e12,
            "timing": f"CUDA graphs, L2 cleared, the {len(layers)} paths interleaved: 7 rounds x 5 replays, "
            "order rotating",
            "keys": KEYS,
            "conversion": info,
            "rows": rows,
        }
        with open(out, "w") as f:
            json.dump(doc, f, indent=1)

    try:
        sweep(
            g,
            experts,
            layers,
            tokens,
            info,
            bw,
            peak,
            on_row=save if out else None,
            steady=args.steady,
            steady_reversed=args.steady_reversed,
        )
    finally:
        for layer in layers.values():
            inner = getattr(layer, "inner", layer)
            close = getattr(inner, "close", None)
            if close is not None:
                close()
        layers.clear()
        del experts
        torch.cuda.synchronize()
        print(f"after closing its layers: {torch.cuda.memory_allocated() / 2**30:.2f} GiB allocated")
    if out:
        print("wrote", out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="deepseek-ai/DeepSeek-V4-Flash", help="preset ids or shape:<name>, commas")
    ap.add_argument("--tokens", default=",".join(map(str, TOKENS)))
    ap.add_argument("--deployment", default="h200:8x8", help="device:DPxEP the oracle decides for")
    ap.add_argument("--json", default=None, help="write the measurements to this file (a directory for several)")
    ap.add_argument(
        "--steady",
        type=float,
        nargs="?",
        const=2.0,
        default=0.0,
        metavar="SECONDS",
        help="also time each path alone after SECONDS (default 2; 0.5 s is still the clock's transient) of its own "
        "replays (clock, instant power)",
    )
    ap.add_argument("--steady-reversed", action="store_true", help="time the paths alone in the reverse order")
    ap.add_argument("--fused", default=",".join(FUSED), help="the fused variants to build and time: fp8, fp4, commas")
    args = ap.parse_args()
    args.fused = tuple(args.fused.split(","))
    if not set(args.fused) <= set(FUSED):
        ap.error(f"--fused {','.join(args.fused)!r}: comma-separated, of {', '.join(FUSED)}")
    tokens = tuple(int(t) for t in args.tokens.split(","))
    bw = copy_bandwidth()
    name = torch.cuda.get_device_name()
    peak = FP8_PEAK.get(name, 1979e12)
    print(f"device {name}; copy bandwidth {bw / 1e12:.2f} TB/s; FP8 peak {peak / 1e12:.0f} TFLOP/s")
    models = args.model.split(",")
    for m in models:
        out = args.json
        if out and len(models) > 1:
            out = f"{out}/fused_vs_nonfused_{m.removeprefix('shape:').split('/')[-1].lower()}.json"
        try:
            run_model(m, args, tokens, bw, peak, name, out)
        except Exception as exc:  # report and go on: one failing shape must not hide the others
            print(f"!! {m}: {type(exc).__name__}: {exc}")


if __name__ == "__main__":
    main()
