"""Router logits -> top-k -> staged buffer -> SM90 mega kernel: moe-oracle's fused chain vs DeepGEMM's own, one run.

Chains, each captured in a CUDA graph, all timed together in the same rounds (``_timing.time_interleaved`` with
``sweep=True``: each round is 7 sweeps, each sweep replays every chain once in an order rotating by round, so the
chains compared ran adjacently; L2 flushed (512 MB written) before each replay, CUDA events; SM clock and board
power read through NVML after each round), on the same inputs:

- **B, ours** (2 launches): ``layer.forward_logits`` = the fused router top-k + SM90 staging
  (:mod:`moe_oracle.kernels.router_triton`), then the kernel;
- **A, DeepGEMM's chain** (3 launches): a one-launch top-k (``route_topk``: the same routing kernel without the
  staging, writing int32 ids, like the engines' fused top-k kernels), DeepGEMM's ``mega_moe_pre_dispatch_sm90`` on
  the layer's buffer, the kernel. The pre-dispatch takes its padding bound from the buffer
  (``csrc/jit_kernels/impls/sm90_mega_moe_pre_dispatch.hpp``: ``padded_max = buf_x.size(0)``, one extra CTA per
  ``hidden / 8`` of the ``(padded_max - T) * k`` slots it sets to id -1 / weight 0), so with the 8192-row buffer
  it writes ``(8192 - T) * k`` padding slots that the SM90 kernel never reads (it reads rows below T);
- **A_T, padding-matched control**: the same three launches with the pre-dispatch given the buffer's first T rows
  (contiguous row views of ``x``, ``x_sf``, ``topk_idx``, ``topk_weights``: ``padded_max = T``, no padding CTA),
  which is what ours writes. B vs A_T is "one launch fewer" alone, A_T vs A is DeepGEMM's padding;
- **A-torch**: A with ``route()`` in torch as the engine's top-k (several launches, then the int32 cast);
- **unfused**: the one-launch top-k + ``layer.forward`` (moe-oracle's staging + kernel): what the fusion saves;
- **kernel**: the bare kernel on a staged buffer.

- **G+B / G+A**: B and A behind a producer, the router GEMM (``x @ W_r``, bf16 logits of about unit variance,
  cuBLAS), as in an engine: the launch in front of the first kernel of a chain is what PDL overlaps with.

``--pdl off,on`` (default both): every chain is captured with DeepGEMM's PDL switch off and again with it on
(``deep_gemm.set_pdl``; a host-side flag, so each graph records its launches as they were issued), and all of them
are timed in the same rounds. With the switch on, DeepGEMM's chains run as DeepGEMM and SGLang (PDL on by default)
launch them: the pre-dispatch as a programmatic dependent that waits for the top-k, the kernel as a programmatic
dependent of the pre-dispatch (in G+A the top-k is a plain launch, an engine top-k without PDL). moe-oracle's chains
run as shipped: the fused launch a PDL secondary of the launch before it (it executes ``griddepcontrol.wait``
before its first load: safe by contract), the SM90 kernel launched without PDL, because it never waits on the grid
dependency (launch advisory MOA-2026-002, ``KERNEL_WAITS_FOR_GRID_DEPENDENCY``), so it starts after our launch
completes. Two more chains with the switch on, measurements only: **G+B-plain**, the GEMM then ours with no PDL at
all (as shipped before 2026-12-02: G+B vs G+B-plain is what the PDL launch of ours buys), and **B-pdl**, ours with
the kernel as a PDL secondary too (no early trigger; the kernel still does not wait, so nothing in PTX's contract
orders its loads after our stores: not shipped, what the advisory gives up). G+B's and G+B-plain's staged buffers
are compared byte for byte before timing.

Statistics: per chain the median of all replays (us); per pair of chains the per-round paired difference (median of
the round's replays of one minus the other's) summarised by ``moe_oracle.runtime.paired``: median and the
sign-test 95% interval for the median difference (15 rounds: the 4th and 12th of the ordered differences, 96.5%).
A lead is **measurable** when that interval excludes 0, else a tie.

Before timing, per T and PDL mode: ``forward_logits`` takes the fused path, leaves the buffer byte-identical to
``forward(route(...))``, and its ids/weights equal route()'s bit for bit; the one-launch top-k equals route() too.
Recorded, not asserted: whether DeepGEMM's pre-dispatch writes the same bytes as ours, and calc_diff between the
outputs of A_T and B. Logits ``N(0, 1)`` fp32, correction bias ``0.1 N(0, 1)``. Buffer capacity ``--max-tokens``
(8192).

Run on the H200 with DeepGEMM PR #323: ``python benchmarks/router_chain.py [--pdl off,on] [--json FILE]`` (about
55 s for the 12 cells in both modes with the JIT caches warm). Results: ``docs/performance.md`` section 11.1 (the
run there predates G+A and G+B-plain; its behind-the-GEMM pair was the then-shipped ours without PDL and ours as a
PDL secondary, which is what G+B is now).
"""

from __future__ import annotations

import argparse
import json
import traceback

import torch
from _timing import Condition, time_interleaved

from moe_oracle.kernels.router_triton import route_and_stage, route_topk
from moe_oracle.model.resolve import resolve_model
from moe_oracle.runtime import LayerConfig, RoutingPath, build_layer, calc_diff, route
from moe_oracle.runtime.accuracy import random_masters
from moe_oracle.runtime.paired import paired_difference
from moe_oracle.runtime.quantize import FP8_BLOCK_FP32 as FP8
from moe_oracle.runtime.quantize import MXFP4, quantize_experts
from moe_oracle.runtime.vendor import resolve_attr

VARIANTS = {"sm90_fp8xfp4": MXFP4, "sm90_fp8xfp8": FP8}
MODELS = ("deepseek-ai/DeepSeek-V4-Flash", "zai-org/GLM-5-FP8")
PATHS = ("ours", "dg", "dg_T", "dg_torch", "unfused", "kernel", "gemm_ours", "gemm_dg")
DIAG = "ours_pdl"  # PDL on only, measurement (module docstring)
PLAIN = "gemm_ours_plain"  # PDL on only: behind the router GEMM, ours without PDL, as shipped before (docstring)
#: the paired comparisons reported per PDL mode: (name, b, a)
PAIRS = (
    ("B-A", "ours", "dg"),
    ("B-A_T", "ours", "dg_T"),
    ("A_T-A", "dg_T", "dg"),
    ("B-unf", "ours", "unfused"),
    ("G+B-G+A", "gemm_ours", "gemm_dg"),
)


def _buffer_views(buf, t: int) -> list[torch.Tensor]:
    return [v[:t].clone() for v in (buf.x.view(torch.uint8), buf.x_sf, buf.topk_idx, buf.topk_weights)]


def check(layer, g, x, logits, bias, chain_t) -> dict:
    """Correctness before timing (module docstring): asserts routing and buffer identity; returns notes."""
    t, buf = x.shape[0], layer.buffer
    assert layer.routing_path(x, logits, bias) is RoutingPath.FUSED
    ids, w = route(g, logits, bias=bias)
    y_ref = layer(x, ids, w).float().clone()
    ref = _buffer_views(buf, t)
    for v in (buf.x.view(torch.uint8), buf.x_sf, buf.topk_idx, buf.topk_weights):
        v[:t].fill_(0)
    y = layer.forward_logits(x, logits, bias=bias).float().clone()
    got = _buffer_views(buf, t)
    assert all(torch.equal(a, b) for a, b in zip(ref, got, strict=True)), t
    assert torch.equal(buf.topk_idx[:t], ids) and torch.equal(buf.topk_weights[:t], w), t
    ti = torch.empty(t, g.top_k, dtype=torch.int32, device="cuda")
    tw = torch.empty(t, g.top_k, device="cuda")
    route_topk(g.routing, g.top_k, logits, ti, tw, bias=bias)
    assert torch.equal(ti.long(), ids) and torch.equal(tw, w)
    y_dg = chain_t().float().clone()
    dg_bytes = _buffer_views(buf, t)
    differ = [int((a != b).sum()) for a, b in zip(ref, dg_bytes, strict=True)]
    return {
        "routing": "ids and weights == route() (fused and one-launch top-k), buffer == forward(route())",
        "y_diff_vs_forward": calc_diff(y, y_ref),
        "dg_pre_dispatch_differing_elements_x_sf_ids_w": differ,
        "y_diff_dg_T_vs_ours": calc_diff(y_dg, y),
    }


def chains(layer, g, x, logits, bias, pdl: bool) -> dict:
    """The chains under DeepGEMM's PDL switch ``pdl``: name -> callable (each sets the switch, then launches)."""
    dg, t, buf = layer.dg, x.shape[0], layer.buffer
    call = layer.kernel_call(t)
    kernel = resolve_attr(dg, call.function)
    pre = dg.mega_moe_pre_dispatch_sm90
    ids32 = torch.empty(t, g.top_k, dtype=torch.int32, device="cuda")
    w32 = torch.empty(t, g.top_k, device="cuda")
    ids64 = torch.empty(t, g.top_k, dtype=torch.int64, device="cuda")
    rows_t = (buf.x[:t], buf.x_sf[:t], buf.topk_idx[:t], buf.topk_weights[:t])

    def run_kernel():  # as DeepGEMM launches it: a PDL secondary when the switch is on
        kernel(*call.args, **call.kwargs)
        return call.args[0]

    def dg_full():
        route_topk(g.routing, g.top_k, logits, ids32, w32, bias=bias)
        pre(x, ids32, w32, buf.x, buf.x_sf, buf.topk_idx, buf.topk_weights, t)
        return run_kernel()

    def dg_t():
        route_topk(g.routing, g.top_k, logits, ids32, w32, bias=bias)
        pre(x, ids32, w32, *rows_t, t)
        return run_kernel()

    def dg_torch():
        ids, w = route(g, logits, bias=bias)
        pre(x, ids.int(), w, buf.x, buf.x_sf, buf.topk_idx, buf.topk_weights, t)
        return run_kernel()

    def unfused():
        route_topk(g.routing, g.top_k, logits, ids64, w32, bias=bias)
        return layer.forward(x, ids64, w32)

    def ours_pdl():
        route_and_stage(g.routing, g.top_k, logits, x, buf.x[:t], buf.x_sf[:t], buf.topk_idx, buf.topk_weights,
                        bias=bias, recipe=str(layer.STAGING.triton_recipe), pad_to=t, pdl=True)  # fmt: skip
        return run_kernel()

    # the producer: a router GEMM (x @ W_r, bf16 logits of about unit variance, cuBLAS) in front of a chain
    wr = (torch.randn(g.num_experts, g.hidden_size, device="cuda") / g.hidden_size**0.5).bfloat16().t()
    plog = torch.empty(t, g.num_experts, device="cuda", dtype=torch.bfloat16)

    def gemm_ours():  # the router GEMM, then ours as shipped
        torch.mm(x, wr, out=plog)
        return layer.forward_logits(x, plog, bias=bias)

    def gemm_dg():  # the router GEMM, then DeepGEMM's chain (its top-k a plain launch)
        torch.mm(x, wr, out=plog)
        route_topk(g.routing, g.top_k, plog, ids32, w32, bias=bias)
        pre(x, ids32, w32, buf.x, buf.x_sf, buf.topk_idx, buf.topk_weights, t)
        return run_kernel()

    def gemm_ours_plain():  # the router GEMM, then ours as shipped before: no PDL at all in front of an SM90 kernel
        torch.mm(x, wr, out=plog)
        route_and_stage(g.routing, g.top_k, plog, x, buf.x[:t], buf.x_sf[:t], buf.topk_idx, buf.topk_weights,
                        bias=bias, recipe=str(layer.STAGING.triton_recipe), pad_to=t)  # fmt: skip
        dg.set_pdl(False)
        run_kernel()
        dg.set_pdl(pdl)
        return call.args[0]

    fns = {
        "ours": lambda: layer.forward_logits(x, logits, bias=bias),
        "dg": dg_full,
        "dg_T": dg_t,
        "dg_torch": dg_torch,
        "unfused": unfused,
        "kernel": run_kernel,
        "gemm_ours": gemm_ours,
        "gemm_dg": gemm_dg,
    }
    if pdl:
        fns[DIAG] = ours_pdl
        fns[PLAIN] = gemm_ours_plain

    def under(fn):
        def run():
            dg.set_pdl(pdl)
            return fn()

        return run

    return {name: under(fn) for name, fn in fns.items()}


def _probe(fn) -> None:
    """Run ``fn``, capture it in a CUDA graph and replay it once (raises what fails)."""
    fn()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    graph.replay()
    torch.cuda.synchronize()


def _pair(tm, b: str, a: str) -> dict:
    d = paired_difference(tm[b].round_us, tm[a].round_us)
    return {**d.to_json(), "rel": d.median / tm[a].us, "ratio": tm[b].us / tm[a].us}


def _ci(p: dict) -> str:
    mark = {"b faster": "<", "a faster": ">", "tie": "="}[p["verdict"]]
    return f"{p['ratio']:6.3f} {p['median']:+6.2f} [{p['low']:+6.2f},{p['high']:+6.2f}]{mark}"


def run_case(model: str, variant: str, args, out: list) -> None:
    quant = VARIANTS[variant]
    g = resolve_model(model).main_group.model_copy(update={"weight_quant": quant})
    layer = build_layer(f"deep_gemm_mega_moe:{variant}", LayerConfig(group=g, max_tokens_per_rank=args.max_tokens))
    w13, w2 = random_masters(g, torch.Generator(device="cuda").manual_seed(0))
    layer.load(quantize_experts(w13, w2, quant))
    del w13, w2
    gen = torch.Generator(device="cuda").manual_seed(11)
    modes = [m == "on" for m in args.pdl.split(",")]
    if not callable(getattr(layer.dg, "set_pdl", None)):
        raise SystemExit("this DeepGEMM build has no set_pdl: run with a build that has it (PR #323)")
    for t in args.tokens:
        x = torch.randn(t, g.hidden_size, device="cuda", generator=gen).bfloat16()
        logits = torch.randn(t, g.num_experts, device="cuda", generator=gen)
        bias = 0.1 * torch.randn(g.num_experts, device="cuda", generator=gen)
        fns, notes = {}, {}
        for pdl in modes:
            mode = "on" if pdl else "off"
            c = chains(layer, g, x, logits, bias, pdl)
            layer.dg.set_pdl(pdl)  # forward_logits as shipped under this switch
            notes[mode] = check(layer, g, x, logits, bias, c["dg_T"])
            for name in (DIAG, PLAIN):
                if name in c:
                    try:  # a measurement only: a failure to run or capture drops it, not the cell
                        _probe(c[name])
                    except Exception as exc:
                        notes[mode][name] = f"dropped: {type(exc).__name__}: {exc}"
                        del c[name]
            if PLAIN in c:  # the shipped PDL launch stages the same bytes as the plain one behind the same GEMM
                c[PLAIN]()
                plain = _buffer_views(layer.buffer, t)
                c["gemm_ours"]()
                same = all(torch.equal(a, b) for a, b in zip(plain, _buffer_views(layer.buffer, t), strict=True))
                notes[mode]["gemm_ours_pdl_buffer_identical_to_plain"] = same
            fns.update({f"{name}@{mode}": fn for name, fn in c.items()})
        layer.dg.set_pdl(False)
        cond = Condition()
        tm = time_interleaved(fns, condition=cond, rounds=args.rounds, reps_per_round=args.reps, sweep=True)
        layer.dg.set_pdl(False)
        row: dict = {"model": model, "variant": variant, "T": t, "checks": notes, **cond.to_json()}
        row["us"] = {k: v.us for k, v in tm.items()}
        row["round_us"] = {k: list(v.round_us) for k, v in tm.items()}
        row["paired"] = {}
        for pdl in modes:
            mode = "on" if pdl else "off"
            row["paired"][mode] = {n: _pair(tm, f"{b}@{mode}", f"{a}@{mode}") for n, b, a in PAIRS}
        if len(modes) == 2:
            row["paired"]["pdl"] = {
                "A_on-A_off": _pair(tm, "dg@on", "dg@off"),
                "B_on-B_off": _pair(tm, "ours@on", "ours@off"),
                "B_off-A_on": _pair(tm, "ours@off", "dg@on"),
                "A_T_on-A_T_off": _pair(tm, "dg_T@on", "dg_T@off"),
                "G+A_on-G+A_off": _pair(tm, "gemm_dg@on", "gemm_dg@off"),
                "G+B_on-G+B_off": _pair(tm, "gemm_ours@on", "gemm_ours@off"),
                "G+B_off-G+A_on": _pair(tm, "gemm_ours@off", "gemm_dg@on"),
            }
        if f"{DIAG}@on" in tm:
            row["paired"].setdefault("pdl", {})["Bpdl-B_on"] = _pair(tm, f"{DIAG}@on", "ours@on")
            row["paired"]["pdl"]["Bpdl-A_on"] = _pair(tm, f"{DIAG}@on", "dg@on")
        if f"{PLAIN}@on" in tm:
            row["paired"].setdefault("pdl", {})["G+B-G+Bplain"] = _pair(tm, "gemm_ours@on", f"{PLAIN}@on")
        out.append(row)
        _print_row(row, modes, cond)
    layer.close()
    del layer
    torch.cuda.empty_cache()


def _print_row(row: dict, modes: list[bool], cond: Condition) -> None:
    us = row["us"]
    for pdl in modes:
        mode = "on" if pdl else "off"
        p = row["paired"][mode]
        print(
            f"{row['model'].split('/')[1]:<17} {row['variant']:<12} {row['T']:3d} {mode:<3} "
            + " ".join(f"{us[f'{n}@{mode}']:7.1f}" for n in PATHS)
            + " | "
            + " | ".join(_ci(p[n]) for n, _, _ in PAIRS)
        )
    if "pdl" in row["paired"]:
        q = row["paired"]["pdl"]
        print("    PDL: " + "  ".join(f"{n} {_ci(v)}" for n, v in q.items()))
    c = row["checks"]
    first = c[next(iter(c))]
    print(
        f"    {cond.text()}; y diff vs forward {first['y_diff_vs_forward']:.1e}, DG pre-dispatch elements differing"
        f" from ours (x, sf, ids, w) {first['dg_pre_dispatch_differing_elements_x_sf_ids_w']},"
        f" y diff A_T vs B {first['y_diff_dg_T_vs_ours']:.1e}"
        + "".join(f"; {m}: {k} {v[k]}" for m, v in c.items() for k in (DIAG, PLAIN) if k in v)
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", default="1,8,64")
    ap.add_argument("--max-tokens", type=int, default=8192)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--reps", type=int, default=7, help="sweeps per round (replays of each chain per round)")
    ap.add_argument("--pdl", default="off,on", help="DeepGEMM PDL switch modes to capture: off, on or off,on")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--json", default="", help="write every row (timings, rounds, paired CIs, clocks, power) here")
    args = ap.parse_args()
    args.tokens = [int(v) for v in args.tokens.split(",")]
    if set(args.pdl.split(",")) - {"off", "on"}:
        raise SystemExit(f"--pdl {args.pdl}: give off, on or off,on")
    print(f"device {torch.cuda.get_device_name()}; DeepGEMM PDL {args.pdl}; buffer capacity {args.max_tokens};")
    print(f"{args.rounds} rounds x {args.reps} sweeps, L2 flushed. us per chain (median of all replays); then per pair")
    print("b/a ratio of medians, paired per-round difference b-a: median [sign-test 95% CI] us, < b faster, = tie")
    print(
        f"{'model':<17} {'variant':<12} {'T':>3} pdl "
        + " ".join(f"{p:>7}" for p in PATHS)
        + " | "
        + " | ".join(f"{n:<34}" for n, _, _ in PAIRS)
    )
    rows: list = []
    for model in args.models.split(","):
        for variant in args.variants.split(","):
            try:
                run_case(model, variant, args, rows)
            except Exception as exc:  # report and go on: one failing case must not hide the others
                print(f"!! {model} {variant}: {type(exc).__name__}: {exc}")
                traceback.print_exc()
            if args.json:  # after every case: a run cut short keeps the cases it finished
                with open(args.json, "w") as f:
                    meta = {"device": torch.cuda.get_device_name(), "max_tokens": args.max_tokens}
                    json.dump({**meta, "rounds": args.rounds, "reps": args.reps, "pdl": args.pdl, "rows": rows}, f)


if __name__ == "__main__":
    main()
