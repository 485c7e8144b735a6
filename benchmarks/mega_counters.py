"""Hardware counters of PR #323's SM90 mega kernels, one call per (shape, T), for the cost model's terms.

Each listed shape's fused layer (``--variant``, default ``sm90_fp8xfp8``) is built once with random weights
(``_shapes.SHAPES``) and called at each T on the family's own routing of random logits (no correction bias, as
every sweep routes). Every T is called three times to warm up (JIT build, buffers), then once more between
``cudaProfilerStart`` and ``cudaProfilerStop``: run under Nsight Compute with ``--profile-from-start off``, only that
call is profiled, and each of its kernels gets one line of counters (duration, DRAM bytes, L2 hit rate, SM and
tensor-pipe activity, SM clock). A build or call the installed DeepGEMM refuses is printed as one line and the run
goes on. Printed before each profiled call: ``=== shape variant T=...`` (the key ``--parse`` joins the counters to).

Run on the H200 (leave the clocks alone, METHOD.md; base units, which ``--parse`` converts)::

    ncu --profile-from-start off --clock-control none --cache-control all --kernel-name regex:mega_moe_impl \\
        --csv --print-units base --metrics "$(python benchmarks/mega_counters.py --metrics)" --log-file NCU.csv \\
        python benchmarks/mega_counters.py --shapes ernie-4.5-300b-a47b,hunyuan-a13b --tokens 1,8 > KEYS.txt
    cat KEYS.txt NCU.csv > RAW.txt
    python benchmarks/mega_counters.py --parse RAW.txt     (a table: one row per profiled kernel)
"""

from __future__ import annotations

import argparse
import csv
import io
from pathlib import Path

from _shapes import shape_names, token_counts

#: the counters ``--parse`` prints, in order (Nsight Compute metric names for GH100), with their column titles
METRICS = (
    ("gpu__time_duration.sum", "us"),
    ("sm__cycles_elapsed.avg.per_second", "SM MHz"),
    ("dram__bytes_read.sum", "DRAM read MB"),
    ("dram__bytes_write.sum", "DRAM write MB"),
    ("dram__throughput.avg.pct_of_peak_sustained_elapsed", "DRAM % peak"),
    ("lts__t_sector_hit_rate.pct", "L2 hit %"),
    ("sm__throughput.avg.pct_of_peak_sustained_elapsed", "SM % peak"),
    ("sm__inst_executed_pipe_tensor_op_gmma.sum", "GMMA instructions"),
    ("sm__cycles_active.avg", "SM active cycles"),
    ("smsp__inst_executed.sum", "instructions"),
)


def run(shapes: list[str], variant: str, tokens: list[int], max_tokens: int) -> None:
    import torch
    from _shapes import group

    from moe_oracle.runtime import LayerConfig, build_layer, route
    from moe_oracle.runtime.accuracy import random_masters
    from moe_oracle.runtime.quantize import FP8_BLOCK_FP32, MXFP4, quantize_experts

    quant = {"sm90_fp8xfp8": FP8_BLOCK_FP32, "sm90_fp8xfp4": MXFP4}[variant]
    cudart = torch.cuda.cudart()
    for name in shapes:
        g = group(name, quant)
        w13, w2 = random_masters(g, torch.Generator(device="cuda").manual_seed(0))
        experts = quantize_experts(w13, w2, quant)
        del w13, w2
        try:
            layer = build_layer(
                f"deep_gemm_mega_moe:{variant}", LayerConfig(group=g, max_tokens_per_rank=max_tokens), experts
            )
        except Exception as exc:
            print(f"=== {name} {variant}: not built: {type(exc).__name__}: {str(exc)[:200]}", flush=True)
            continue
        gen = torch.Generator(device="cuda").manual_seed(1)
        for t in (t for t in tokens if t <= max_tokens):
            x = torch.randn(t, g.hidden_size, device="cuda", generator=gen).bfloat16()
            logits = torch.randn(t, g.num_experts, device="cuda", generator=gen)
            ids, w = route(g, logits, bias=torch.zeros(g.num_experts, device="cuda"))
            try:
                for _ in range(3):
                    layer(x, ids, w)
                torch.cuda.synchronize()
            except Exception as exc:  # e.g. the FP8 kernel's combine-stage static assertion at H 8192
                print(f"=== {name} {variant} T={t}: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
                continue
            print(f"=== {name} {variant} T={t}", flush=True)
            cudart.cudaProfilerStart()
            layer(x, ids, w)
            torch.cuda.synchronize()
            cudart.cudaProfilerStop()
        del layer, experts
        torch.cuda.empty_cache()


def parse(text: str) -> list[dict[str, str]]:
    """Rows of Nsight Compute's ``--csv`` output (one per kernel and metric) joined per kernel launch, each with the
    ``=== shape variant T=`` key printed before it. Lines that are neither (the tool's own, the program's) are
    skipped."""
    keys: list[str] = []
    rows: list[str] = []
    for line in text.splitlines():
        if line.startswith("=== "):
            keys.append(line[4:].strip())
        elif line.startswith('"'):
            rows.append(line)
    launches: dict[str, dict[str, str]] = {}
    reader = csv.DictReader(io.StringIO("\n".join(rows)))
    good = [k for k in keys if ":" not in k]  # refused builds and calls print a reason and are not profiled
    order: list[str] = []
    for r in reader:
        # csv fills the columns a short row lacks with None: such a row (truncated, foreign) is not a counter
        metric, lid = r.get("Metric Name") or "", r.get("ID") or ""
        if not metric:
            continue
        if lid not in launches:
            launches[lid] = {}
            order.append(lid)
        launches[lid][metric] = (r.get("Metric Value") or "").replace(",", "")
    out = []
    for i, lid in enumerate(order):
        row = launches[lid]
        row["case"] = good[i] if i < len(good) else "?"
        out.append(row)
    return out


def table(rows: list[dict[str, str]]) -> str:
    head = ["case", *(title for _, title in METRICS)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [r["case"]]
        for metric, title in METRICS:
            v = r.get(metric, "")
            try:
                f = float(v)
            except ValueError:
                cells.append(v or "-")
                continue
            if title == "us":
                f /= 1e3  # ns
            elif title.endswith(("MHz", "MB")):
                f /= 1e6
            cells.append(f"{f:.4g}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="ernie-4.5-300b-a47b")
    ap.add_argument("--variant", default="sm90_fp8xfp8", choices=("sm90_fp8xfp8", "sm90_fp8xfp4"))
    ap.add_argument("--tokens", default="1,8")
    ap.add_argument("--max-tokens", type=int, default=8192)
    ap.add_argument("--parse", default=None, help="print the table of an ncu --csv output file instead")
    ap.add_argument("--metrics", action="store_true", help="print the metric names for ncu --metrics and exit")
    args = ap.parse_args()
    if args.metrics:
        print(",".join(m for m, _ in METRICS))
        return
    if args.parse:
        try:
            text = Path(args.parse).read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            ap.error(f"--parse {args.parse!r}: {exc.strerror or exc}")
        print(table(parse(text)))
        return
    shapes, tokens = shape_names(ap, args.shapes), token_counts(ap, args.tokens)
    if min(tokens) < 1 or args.max_tokens < 1:
        ap.error("--tokens and --max-tokens count tokens per rank: at least 1")
    run(shapes, args.variant, tokens, args.max_tokens)


if __name__ == "__main__":
    main()
