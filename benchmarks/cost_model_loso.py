"""How well the cost model transfers to shapes it was not fit on: leave-one-shape-out error and regret per T.

Ground truth: the H200 sweeps of ``benchmarks/fused_vs_nonfused.py`` (one JSON per expert shape, every path
timed interleaved at every T; ``benchmarks/results/h200/2026-12-01/``). For each shape and each path, the model
(:func:`moe_oracle.cost.calibration.fit_pooled`, the terms of ``calibration.TERMS``) is fit on the OTHER
shapes only and predicts this shape's times. Printed per T:

- prediction error: median and worst |predicted / measured - 1| over shapes and paths;
- regret: the path the predictions rank first, against the best measured path at that T
  (chosen time / best time - 1), mean and worst over shapes, for an MXFP4 checkpoint (all four paths: fused
  FP8xMXFP4 as stored, fused FP8 and the two non-fused layouts after the lossless conversion) and for an FP8
  checkpoint (fused FP8 and the two non-fused layouts);

side by side with the previous three-term model (fixed + active-expert MB + TFLOP) scored the same way.
Runs on a CPU::

    python benchmarks/cost_model_loso.py [benchmarks/results/h200/2026-12-01]
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from fit_cost_model import calibrations

from moe_oracle.cost.calibration import Calibration, calibration_features, fit_pooled

DEFAULT = Path(__file__).resolve().parent / "results" / "h200" / "2026-12-01"
MXFP4_PATHS = (
    "deep_gemm_mega_moe:sm90_fp8xfp4",
    "deep_gemm_mega_moe:sm90_fp8xfp8",
    "nonfused:deepgemm_fp8_psum",
    "nonfused:deepgemm_fp8_m_indices",
)
FP8_PATHS = MXFP4_PATHS[1:]
#: the previous model's terms (fixed, active-expert MB, TFLOP) as a mask over calibration.TERMS
THREE_TERM = (0, 2, 3)


def predictions(by_shape: dict[str, dict[str, Calibration]], three_term: bool) -> dict[tuple[str, str, int], float]:
    """(shape, path, T) -> predicted us, each from a fit over the other shapes' points of that path."""
    out: dict[tuple[str, str, int], float] = {}
    for shape, paths in by_shape.items():
        for path, cal in paths.items():
            others = tuple(by_shape[s][path] for s in by_shape if s != shape and path in by_shape[s])
            f = fit_pooled(others, THREE_TERM if three_term else None)
            for (x, _), (t, _, _) in zip(calibration_features(cal), cal.points, strict=True):
                out[(shape, path, t)] = f.predict(x)
    return out


def main() -> None:
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    by_shape: dict[str, dict[str, Calibration]] = {}
    measured: dict[tuple[str, str, int], float] = {}
    for f in sorted(folder.glob("fused_vs_nonfused_*.json")):
        run = json.loads(f.read_text())
        name = run["model"].split(" (")[0]
        by_shape[name] = {c.variant: c for c in calibrations(run, f.name)}
        for c in by_shape[name].values():
            measured.update({(name, c.variant, t): us for t, _, us in c.points})
    tokens = sorted({t for (_, _, t) in measured})
    print(f"{len(by_shape)} shapes: " + "; ".join(by_shape))
    for label, three in (("this model (calibration.TERMS)", False), ("previous three-term model", True)):
        pred = predictions(by_shape, three)
        print(f"\n{label}: leave-one-shape-out")
        print(f"{'T':>5} {'err med':>8} {'err max':>8}   {'regret MXFP4 mean/max':>22}   {'regret FP8 mean/max':>20}")
        totals = {"err": [], "MXFP4": [], "FP8": []}
        for t in tokens:
            errs = [abs(pred[k] / measured[k] - 1) for k in pred if k[2] == t]
            cells = []
            for name, paths in (("MXFP4", MXFP4_PATHS), ("FP8", FP8_PATHS)):
                regrets = []
                for shape in by_shape:
                    have = [p for p in paths if (shape, p, t) in measured]
                    if len(have) < len(paths):
                        continue
                    chosen = min(have, key=lambda p, s=shape: pred[(s, p, t)])
                    best = min(measured[(shape, p, t)] for p in have)
                    regrets.append(measured[(shape, chosen, t)] / best - 1)
                totals[name] += regrets
                cells.append(f"{statistics.mean(regrets):10.1%} / {max(regrets):5.1%}")
            totals["err"] += errs
            print(f"{t:5d} {statistics.median(errs):8.1%} {max(errs):8.1%}   {cells[0]:>22}   {cells[1]:>20}")
        print(
            f"{'all':>5} {statistics.median(totals['err']):8.1%} {max(totals['err']):8.1%}   "
            f"{statistics.mean(totals['MXFP4']):10.1%} / {max(totals['MXFP4']):5.1%}   "
            f"{statistics.mean(totals['FP8']):10.1%} / {max(totals['FP8']):5.1%}"
        )


if __name__ == "__main__":
    main()
