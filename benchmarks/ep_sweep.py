"""Expert parallelism on the GPUs of one host: the fused mega-MoE through moe-oracle's interface at EP = world size,
checked on every rank against the FP32 reference and timed against a non-fused EP baseline in the same run.

One process per GPU (``torchrun``), NCCL, symmetric memory without NVLink multicast (``NCCL_NVLS_ENABLE=0``,
``TORCH_SYMM_MEM_DISABLE_MULTICAST=1``, ``NVSHMEM_DISABLE_NVLS=1`` are set unless already set):

- the oracle decides for ``<device> x world`` at DP = EP = world (``installed`` software profile); the chosen
  variant (or ``--variant``) is built with ``build_layer_for_decision`` on this rank's slice of one layer's
  experts (random masters, same seed on every rank, full expert shape);
- ragged tokens: rank ``r`` gets ``max(1, T >> (r % 3))`` tokens (T, T/2, T/4, T, ...), routed by the model's
  router; every rank checks a row subset of its combined output against the FP32 reference over all experts
  (dequantized weights, dequantized FP8-staged input), for the fused layer and for the baseline;
- fused: a CUDA graph of ``layer(x, ids, w)`` per rank, ranks aligned by a barrier before each timed replay,
  CUDA events, median of 20; the slowest rank's median is reported;
- baseline: :func:`moe_oracle.runtime.ep.ep_moe` (``all_to_all_single`` dispatch and combine of BF16 rows,
  FP32 weighted sum) around this rank's non-fused FP8 grouped-GEMM layer (``backends/cuda_sm90/nonfused``,
  DeepGEMM); MXFP4 experts are converted to FP8 first (lossless). It syncs on the split sizes, so it runs
  eagerly (events, median of 10);
- fixed baseline (T <= ``--fixed-max-tokens``, decode batches): :func:`moe_oracle.runtime.ep.ep_moe_fixed` around
  the same layer, every rank padded to T and sending every rank a fixed capacity, so the whole layer is one
  CUDA graph per rank like the fused kernel (what an engine's decode path does with DeepEP's low-latency mode).

``--cpu`` is a dry run of everything but the fused kernel (gloo, FP32 reference experts as the baseline's
expert function, ``--scale`` shrinks the shape): it checks the plumbing, the ragged routing and the
reference on any machine. Usage::

    torchrun --nproc-per-node 8 benchmarks/ep_sweep.py --json benchmarks/results/h200x8/ep_sweep.json
    torchrun --nproc-per-node 2 benchmarks/ep_sweep.py --cpu --scale 0.125 --tokens 1,16
"""

from __future__ import annotations

import argparse
import json
import os
import statistics

import torch
import torch.distributed as dist
from _timing import time_us
from moe_oracle_backends.cuda_sm90.nonfused.layer import fp8_g128_roundtrip

from moe_oracle.decide.advisories import load_advisories
from moe_oracle.decide.selection import decide
from moe_oracle.inputs import DeploymentFlags, build_deployment, resolve_software
from moe_oracle.model.resolve import resolve_model
from moe_oracle.runtime import calc_diff, reference_moe, route
from moe_oracle.runtime.accuracy import random_masters, scaled_group
from moe_oracle.runtime.ep import ep_moe, ep_moe_fixed, reference_expert_fn
from moe_oracle.runtime.quantize import dequantize_experts, quantize_experts, select_experts

TOKENS = (1, 8, 32, 128, 512, 2048, 8192)
#: shared/reference/seeds/000: 8 x H200, sm90_fp8xfp4, DeepSeek-V4.1-Flash shape (H 5120, I 2304, 384 experts),
#: slowest rank, median of 3 -- a published figure, not measured here, and another shape than V4-Flash
PUBLISHED_EP8_US = {1: 85.2, 8: 212.7, 32: 282.4, 128: 321.2, 512: 570.6, 2048: 1693.0, 8192: 6015.0}
ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


def tokens_of(rank: int, t: int) -> int:
    return max(1, t >> (rank % 3))


def slowest(us: float, device: str) -> float:
    t = torch.tensor([us], dtype=torch.float64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return float(t.item())


def time_cpu_us(fn, reps: int = 10) -> float:
    """Median wall microseconds on CPUs (the --cpu dry run), ranks aligned by a barrier."""
    import time

    fn()
    times = []
    for _ in range(reps):
        dist.barrier()
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(times)


def build_fused(model, g, local, args, world: int, rank: int):
    from moe_oracle.runtime import LayerConfig, build_layer
    from moe_oracle.runtime.build import build_layer_for_decision

    dep, origin = build_deployment(
        DeploymentFlags(device=args.device, dp=world, ep=world, max_num_batched_tokens=max(args.tokens))
    )
    decision = decide(model, dep, resolve_software(None, "local")[0], advisories=load_advisories())
    main = decision.main
    label = main.chosen.key if main.chosen else f"none ({main.fallback})"
    kw = dict(ep_rank=rank, ep_group=dist.group.WORLD, device="cuda", max_tokens_per_rank=max(args.tokens))
    if args.variant:
        cfg = LayerConfig(group=g, ep_size=world, **kw)
        return build_layer(args.variant, cfg, local), f"{args.variant} (override; oracle: {label})"
    return build_layer_for_decision(decision, experts=local, **kw), f"{label} ({origin})"


def baseline_fn(g, local, cpu: bool, max_rows: int):
    """This rank's expert function for ep_moe: FP32 reference experts (CPU) or the non-fused FP8 layer."""
    if cpu:
        return reference_expert_fn(*dequantize_experts(local), g.activation)
    from moe_oracle_backends.cuda_sm90.nonfused.layer import GroupedGemmMoE

    from moe_oracle.runtime import LayerConfig
    from moe_oracle.runtime.format_conversion import mxfp4_to_fp8_block

    if local.quant.format.value == "mxfp4":
        local, report = mxfp4_to_fp8_block(local)
        assert report.lossless, "MXFP4 -> FP8 conversion changed values"
    one = g.model_copy(update={"num_experts": local.num_experts, "top_k": 1, "weight_quant": local.quant})
    layer = GroupedGemmMoE(LayerConfig(group=one, max_tokens_per_rank=max_rows, device="cuda"))
    layer.load(local)  # rows arrive with local expert ids (0..E_local-1)
    ones = torch.ones(max_rows, 1, device="cuda")

    def run(rows: torch.Tensor, local_ids: torch.Tensor) -> torch.Tensor:
        m = rows.shape[0]
        return layer(rows.bfloat16(), local_ids.view(-1, 1), ones[:m])

    return run


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="deepseek-ai/DeepSeek-V4-Flash")
    ap.add_argument("--device", default="h200", help="catalogue device the oracle decides for")
    ap.add_argument("--tokens", default=",".join(map(str, TOKENS)))
    ap.add_argument("--variant", default=None, help="run this backend:variant instead of the oracle's choice")
    ap.add_argument("--cpu", action="store_true", help="dry run on CPUs (gloo): reference and baseline only")
    ap.add_argument("--scale", type=float, default=1.0, help="shrink H, I and E (CPU dry runs)")
    ap.add_argument(
        "--fixed-max-tokens", type=int, default=512, help="run the fixed-capacity (graph) baseline up to this T/rank"
    )
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    args.tokens = tuple(int(t) for t in args.tokens.split(","))
    for k, v in ENV.items():
        os.environ.setdefault(k, v)
    if args.cpu:
        dist.init_process_group("gloo")
        dev = "cpu"
    else:
        dev = f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}"
        torch.cuda.set_device(dev)
        dist.init_process_group("nccl", device_id=torch.device(dev))
    rank, world = dist.get_rank(), dist.get_world_size()
    model = resolve_model(args.model)
    g = model.main_group if args.scale == 1.0 else scaled_group(model.main_group, args.scale)
    if g.num_experts % world:
        raise SystemExit(f"{g.num_experts} experts do not divide over {world} ranks")
    per = g.num_experts // world
    w13, w2 = random_masters(g, torch.Generator(device=dev).manual_seed(0))  # the same draw on every rank
    experts = quantize_experts(w13, w2, g.weight_quant)
    del w13, w2
    local = select_experts(experts, rank * per, (rank + 1) * per)
    fused, label = (None, "none (--cpu)") if args.cpu else build_fused(model, g, local, args, world, rank)
    max_rows = max(args.tokens) * g.top_k * world
    expert_fn = baseline_fn(g, local, args.cpu, max_rows)
    transport = torch.float32 if args.cpu else torch.bfloat16  # the GPU baseline moves BF16, as engines do
    if rank == 0:
        print(
            f"{model.model}: EP{world} on {world} x {torch.cuda.get_device_name() if not args.cpu else 'CPU'}; "
            f"fused: {label}; H{g.hidden_size} I{g.moe_intermediate_size} E{g.num_experts} top{g.top_k}"
        )
        print(
            f"{'T/rank':>6} {'tokens (ranks)':>16} {'fused diff':>10} {'base diff':>10} {'fixed diff':>10} "
            f"{'fused us':>9} {'base us':>9} {'fixed us':>9} {'base/fused':>10} {'fixed/fused':>11} "
            f"{'published EP8':>13}"
        )
    rows = []
    for t in args.tokens:
        n = tokens_of(rank, t)
        gen = torch.Generator(device=dev).manual_seed(1000 * t + rank)
        x = torch.randn(n, g.hidden_size, device=dev, generator=gen).bfloat16()
        logits = torch.randn(n, g.num_experts, device=dev, generator=gen)
        # zero correction bias: balanced in expectation (no correction bias), as fused_vs_nonfused routes
        ids, w = route(g, logits, bias=torch.zeros(g.num_experts, device=dev))
        check = torch.arange(min(n, 64), device=dev)
        ref = reference_moe(fp8_g128_roundtrip(x)[check], ids[check], w[check], experts, g.activation)
        # the baseline's GPU experts stage their input themselves; the CPU reference experts get it staged
        xin = fp8_g128_roundtrip(x) if args.cpu else x
        base = ep_moe(xin, ids, w, expert_fn, num_experts=g.num_experts, transport=transport)
        d_base = calc_diff(base[check], ref)
        d_fused, fused_us = float("nan"), float("nan")
        if fused is not None:
            y = fused(x, ids, w).float()
            d_fused = calc_diff(y[check], ref)
            fused_us = slowest(
                time_us(lambda x=x, ids=ids, w=w: fused(x, ids, w), flush=False, before=dist.barrier), dev
            )

        def base_call(x=xin, ids=ids, w=w):
            return ep_moe(x, ids, w, expert_fn, num_experts=g.num_experts, transport=transport)

        if args.cpu:
            base_us = slowest(time_cpu_us(base_call), dev)
        else:  # it syncs on the split sizes: timed eagerly
            base_us = slowest(time_us(base_call, reps=10, flush=False, graph=False, before=dist.barrier), dev)
        d_fixed, fixed_us = float("nan"), float("nan")
        if t <= args.fixed_max_tokens:  # the decode-shaped baseline: every rank padded to T, one CUDA graph
            pad = t - n
            xf = torch.cat([xin, xin.new_zeros(pad, g.hidden_size)])
            idsf = torch.cat([ids, ids.new_full((pad, g.top_k), -1)])
            wf = torch.cat([w, w.new_zeros(pad, g.top_k)])

            def fixed_call(x=xf, ids=idsf, w=wf):
                return ep_moe_fixed(x, ids, w, expert_fn, num_experts=g.num_experts, transport=transport)

            d_fixed = calc_diff(fixed_call()[check], ref)
            if args.cpu:
                fixed_us = slowest(time_cpu_us(fixed_call), dev)
            else:
                fixed_us = slowest(time_us(fixed_call, flush=False, before=dist.barrier), dev)
        diffs = [None] * world
        dist.all_gather_object(diffs, (n, d_fused, d_base, d_fixed))
        counts = [c for c, *_ in diffs]
        worst_f, worst_b, worst_x = (max(d[i] for d in diffs) for i in (1, 2, 3))
        row = {
            "T": t,
            "tokens": counts,
            "fused_diff": worst_f,
            "base_diff": worst_b,
            "fixed_diff": worst_x,
            "fused_us": fused_us,
            "base_us": base_us,
            "fixed_us": fixed_us,
        }
        rows.append(row)
        if rank == 0:
            pub = PUBLISHED_EP8_US.get(t)
            print(
                f"{t:6d} {min(counts):>7d}..{max(counts):<7d} {worst_f:10.2e} {worst_b:10.2e} {worst_x:10.2e} "
                f"{fused_us:9.1f} {base_us:9.1f} {fixed_us:9.1f} {base_us / fused_us:10.2f} "
                f"{fixed_us / fused_us:11.2f} {pub if pub else float('nan'):13.1f}"
            )
        bound = 1e-6 if args.cpu else 1e-3
        bad_fixed = t <= args.fixed_max_tokens and not worst_x < bound
        if not worst_b < bound or bad_fixed or (fused is not None and not worst_f < 1e-3):
            raise SystemExit(
                f"T={t}: calc_diff fused {worst_f:.2e}, baseline {worst_b:.2e} / {worst_x:.2e} vs the FP32 reference"
            )
    if rank == 0 and args.json:
        with open(args.json, "w") as f:
            json.dump({"model": model.model, "ep": world, "fused": label, "rows": rows}, f, indent=1)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
