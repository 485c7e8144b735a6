"""The cost model's prediction for a shape before it is measured: each path fit on every OTHER measured shape.

For each named shape of ``_shapes.SHAPES`` and each T, prints (``--json``: writes) what the package's model
(``calibration.PATH_TERMS``, fit by :func:`moe_oracle.cost.calibration.fit_pooled` over the H200 sweeps that
``cost_model_loso.py`` reads, the shape itself left out) predicts for the fused FP8 and FP8xMXFP4 kernels and
the two non-fused layouts, with the regime and blocks the kernel's heuristics pick. Committed before the shape
is measured, it is the held-out test of a term fit on other shapes. Runs on a CPU::

    python benchmarks/cost_model_predict.py qwen3.5-397b-a17b --tokens 1,8,64,512,4096,8192 [--json FILE]

``--against PREDICTED SWEEP...`` prints instead, from a ``--json`` file written before and the sweeps
(``fused_vs_nonfused.py --json``) measured after, predicted / measured per T and path with the clock, then per T the
ranking of an FP8 checkpoint's paths (fused FP8, psum, m_indices): the predicted first and its predicted gap to the
second, whether :mod:`moe_oracle.cost.near_tie` calls it a near tie, the measured best and the regret:

    python benchmarks/cost_model_predict.py --against results/h200/2026-12-02/cost_model_predict_before_measuring.json \
        results/h200/2026-12-02/fused_vs_nonfused_qwen3.5-397b-a17b.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from _shapes import SHAPES, group, shape_names, token_counts
from cost_model_loso import DEFAULT, SHORT, load, rank_cell

from moe_oracle.cost.active_experts import expected_active_experts
from moe_oracle.cost.calibration import features, fit_pooled
from moe_oracle.cost.geometry import geometry, kernel_for
from moe_oracle.runtime.quantize import FP8_BLOCK_FP32, MXFP4

#: the sweep's path names, as the package keys them
SWEEP_KEYS = {
    "fused_fp8": "deep_gemm_mega_moe:sm90_fp8xfp8",
    "fused_fp4": "deep_gemm_mega_moe:sm90_fp8xfp4",
    "nonfused_psum": "nonfused:deepgemm_fp8_psum",
    "nonfused_m_indices": "nonfused:deepgemm_fp8_m_indices",
}


def against(predicted: Path, sweeps: list[Path]) -> None:
    """Predicted / measured us (error) per T and path, one table per sweep (its shape's rows of ``predicted``)."""
    pred = json.loads(predicted.read_text())
    for path in sweeps:
        run = json.loads(path.read_text())
        model = run["model"].split(" (")[0]
        entry = next((e for e in pred.values() if e["model"] == model), None)
        if entry is None:
            raise SystemExit(f"{predicted}: no prediction for {model} (the shape of {path})")
        p = {(r["path"], r["T"]): r["us"] for r in entry["rows"]}
        print(f"\n{model} ({path.name}):\n\n| T | {' | '.join(SHORT[k] for k in SWEEP_KEYS.values())} | SM clock MHz |")
        print("|---" * (len(SWEEP_KEYS) + 2) + "|")
        for row in run["rows"]:
            cells = []
            for name, key in SWEEP_KEYS.items():
                got, want = row.get(name, {}).get("us"), p.get((key, row["T"]))
                cells.append(f"{want:.0f} / {got:.0f} ({want / got - 1:+.0%})" if got and want else "-")
            clock = row["condition"]["sm_clock_mhz"]
            print(f"| {row['T']} | " + " | ".join(cells) + f" | {min(clock):.0f}-{max(clock):.0f} |")
        ranking(run, p)


def ranking(run: dict, predicted: dict[tuple[str, int], float]) -> None:
    """Per T of ``run``: the predicted first of the FP8 paths, its predicted gap to the second, the near-tie verdict,
    the measured best and the regret (chosen / best - 1); then how many cells are over 1% regret and how many of
    those the near-tie band flagged."""
    print("\n| T | predicted first | gap to second | near tie | measured best | regret |\n|---|---|---|---|---|---|")
    cells = over = flagged = 0
    for row in run["rows"]:
        t = row["T"]
        measured = {key: row[name]["us"] for name, key in SWEEP_KEYS.items() if row.get(name, {}).get("us")}
        ranked = rank_cell({key: us for (key, at), us in predicted.items() if at == t}, measured)
        if ranked is None:
            continue
        tie = ranked.tie()
        cells, over, flagged = cells + 1, over + (ranked.regret > 0.01), flagged + (ranked.regret > 0.01 and tie)
        print(
            f"| {t} | {SHORT[ranked.order[0]]} | {ranked.gap:.1%} | {'yes' if tie else 'no'} | "
            f"{SHORT[ranked.best]} | {ranked.regret:.1%} |"
        )
    print(f"{cells} cells, {over} over 1% regret, {flagged} of them flagged near ties")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("shapes", nargs="?", default="", help="names in benchmarks/_shapes.py, commas")
    ap.add_argument("--tokens", default="1,8,64,512,1024,2048,4096,8192")
    ap.add_argument("--json", default="", help="write the predictions here")
    ap.add_argument("--against", nargs="+", type=Path, metavar="FILE", help="a --json file, then the sweeps measured")
    args = ap.parse_args()
    if args.against:
        if len(args.against) < 2:
            ap.error("--against PREDICTED SWEEP [SWEEP ...]: the predictions, then at least one sweep")
        against(args.against[0], args.against[1:])
        return
    if not args.shapes:
        ap.error("name the shapes (benchmarks/_shapes.py), or give --against")
    names, tokens = shape_names(ap, args.shapes), token_counts(ap, args.tokens)
    by, _, _ = load(DEFAULT)
    out: dict[str, dict] = {}
    for name in names:
        s = SHAPES[name]
        shape = (s.hidden, s.inter, s.experts, s.top_k)
        fit_on = len(by) - (shape in by)
        print(f"== {s.model}: H {s.hidden}, I {s.inter}, E {s.experts}, top-{s.top_k}; fit on {fit_on} shapes")
        rows = []
        for path in SHORT:
            others = tuple(c for s2, pp in by.items() if s2 != shape for c in pp.get(path, []))
            if not others:
                continue
            f = fit_pooled(others)
            kernel = kernel_for(path)
            # the stored format the path computes on: the sweeps' MXFP4 masters, converted to FP8 for the others
            stored = MXFP4 if path.endswith("fp8xfp4") else FP8_BLOCK_FP32
            expert_bytes = group(name, stored).expert_weight_bytes()
            for t in tokens:
                active = expected_active_experts(s.experts, s.top_k, t, 1)
                x = features(path, t, active, expert_bytes, s.top_k, s.hidden, s.inter, s.experts, 1)
                g = geometry(kernel, t, s.hidden, s.inter, s.experts, s.top_k, 1) if kernel is not None else None
                blocks = f"{g.regime.value}, BLOCK_N {g.block_n}" if g is not None else ""
                rows.append({"path": path, "T": t, "us": round(f.predict(x), 1), "blocks": blocks})
        for t in tokens:
            cells = [r for r in rows if r["T"] == t]
            print(f"T {t:5d} " + " | ".join(f"{SHORT[r['path']]} {r['us']:8.1f} ({r['blocks']})" for r in cells))
        out[name] = {"model": s.model, "shape": dict(zip(("H", "I", "E", "top_k"), shape, strict=True)), "rows": rows}
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
