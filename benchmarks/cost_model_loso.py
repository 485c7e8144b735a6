"""How well the cost model transfers to shapes it was not fit on: leave-one-shape-out error and regret, per shape.

Ground truth: every shape measured on the H200: the sweeps of ``benchmarks/fused_vs_nonfused.py`` (one JSON per
expert shape, 14 token counts) and the calibration file ``moe-oracle tune`` wrote for seven models
(``tune_calibration_h200.json``; five of them from families no calibration had: ERNIE-4.5-300B-A47B, Hunyuan-A13B
and Qwen2-57B-A14B expert shapes, Laguna-XS.2-FP8, MiMo-V2-Flash). A shape measured by both is one shape with the
points of both. For each shape and each path, the model (:func:`moe_oracle.cost.calibration.fit_pooled`) is fit on
the OTHER shapes only and predicts this shape's times. Printed per shape: the worst and median
|predicted / measured - 1| over its paths and token counts, and the worst regret: at each T, the path the
predictions rank first against the best measured path (chosen / best - 1), for an FP8 checkpoint (fused FP8 and the
two non-fused layouts).

Models scored: the package's (``calibration.TERMS``); a candidate with one more term, the expert weights streamed
again for every further 128-token M-block of an active expert (``reread``: the fused kernel runs BLOCK_M 128 from 64
tokens per expert, and the grouped GEMMs tile M the same way), which is what 64-expert shapes pay at large T; the
previous three-term model (fixed + active-expert MB + TFLOP). Runs on a CPU::

    python benchmarks/cost_model_loso.py [benchmarks/results/h200/2026-12-01]
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path

from fit_cost_model import calibrations

import moe_oracle.cost.calibration as cal_mod
from moe_oracle.cost import local
from moe_oracle.cost.calibration import Calibration, calibration_features, fit_pooled

DEFAULT = Path(__file__).resolve().parent / "results" / "h200" / "2026-12-01"
FP8_PATHS = ("deep_gemm_mega_moe:sm90_fp8xfp8", "nonfused:deepgemm_fp8_psum", "nonfused:deepgemm_fp8_m_indices")
#: the previous model's terms (fixed, active-expert MB, TFLOP) as a mask over calibration.TERMS
THREE_TERM = (0, 2, 3)
Shape = tuple[int, int, int, int]


def _reread_features(tokens, active, expert_bytes, top_k, hidden, inter, experts_per_rank):
    """The package's features plus the re-read expert MB of every further 128-token M-block (the candidate)."""
    base = _PACKAGE_FEATURES(tokens, active, expert_bytes, top_k, hidden, inter, experts_per_rank)
    per_active = tokens * top_k / max(active, 1.0)
    return (*base, active * max(0.0, math.ceil(per_active / 128) - 1) * expert_bytes / 1e6)


_PACKAGE_FEATURES = cal_mod.features
_PACKAGE_TERMS = cal_mod.TERMS


def load(folder: Path) -> tuple[dict[Shape, dict[str, list[Calibration]]], dict[Shape, str], set[Shape]]:
    """Shape -> path -> calibrations; shape -> a name; the shapes only tune measured."""
    by: dict[Shape, dict[str, list[Calibration]]] = {}
    names: dict[Shape, str] = {}

    def key(c: Calibration) -> Shape:
        return (c.hidden_size, c.moe_intermediate_size, c.num_experts, c.top_k)

    for f in sorted(folder.glob("fused_vs_nonfused_*.json")):
        run = json.loads(f.read_text())
        for c in calibrations(run, f.name):
            by.setdefault(key(c), {}).setdefault(c.variant, []).append(c)
            names[key(c)] = run["model"].split(" (")[0]
    fresh: set[Shape] = set()
    tuned = folder / "tune_calibration_h200.json"
    if tuned.is_file():
        for c in local.read(tuned).entries:
            if key(c) not in names:
                fresh.add(key(c))
                names[key(c)] = c.source.removeprefix("moe-oracle tune ").split(" on ")[0].split("/")[-1].split(" (")[0]
            by.setdefault(key(c), {}).setdefault(c.variant, []).append(c)
    return by, names, fresh


def score(by: dict[Shape, dict[str, list[Calibration]]], terms: tuple[int, ...] | None) -> dict[Shape, tuple]:
    """Shape -> (max error, median error, worst FP8 regret, its T)."""
    pred: dict[tuple, list[float]] = {}
    meas: dict[tuple, list[float]] = {}
    for s, paths in by.items():
        for p, cals in paths.items():
            others = tuple(c for s2, pp in by.items() if s2 != s for c in pp.get(p, []))
            f = fit_pooled(others, terms)
            for c in cals:
                for (x, _), (t, _, us) in zip(calibration_features(c), c.points, strict=True):
                    pred.setdefault((s, p, t), []).append(f.predict(x))
                    meas.setdefault((s, p, t), []).append(us)
    pm = {k: statistics.mean(v) for k, v in pred.items()}
    mm = {k: statistics.median(v) for k, v in meas.items()}
    out = {}
    for s in by:
        errs = [abs(pm[k] / mm[k] - 1) for k in pm if k[0] == s]
        worst = (0.0, 0)
        for t in sorted({k[2] for k in mm if k[0] == s}):
            have = [p for p in FP8_PATHS if (s, p, t) in mm]
            if len(have) < 2:
                continue
            chosen = min(have, key=lambda p, t=t: pm[(s, p, t)])
            regret = mm[(s, chosen, t)] / min(mm[(s, p, t)] for p in have) - 1
            worst = max(worst, (regret, t))
        out[s] = (max(errs), statistics.median(errs), *worst)
    return out


def main() -> None:
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    by, names, fresh = load(folder)
    print(f"{len(by)} shapes ({len(fresh)} measured only by moe-oracle tune: {', '.join(names[s] for s in fresh)})")
    models = [("package model (calibration.TERMS)", None, False), ("candidate: + re-read MB", None, True)]
    models.append(("previous three-term model", THREE_TERM, False))
    results = {}
    for label, terms, reread in models:
        cal_mod.features = _reread_features if reread else _PACKAGE_FEATURES
        cal_mod.TERMS = (*_PACKAGE_TERMS, "per re-read expert MB") if reread else _PACKAGE_TERMS
        fit_pooled.cache_clear()
        results[label] = score(by, terms)
    cal_mod.features, cal_mod.TERMS = _PACKAGE_FEATURES, _PACKAGE_TERMS
    print("\nleave-one-shape-out, per shape: max / median prediction error; worst regret (FP8 checkpoint) at its T")
    head = "| shape | H / I / E / top-k | " + " | ".join(label for label, _, _ in models) + " |"
    print(head)
    print("|" + "---|" * (2 + len(models)))
    for s in sorted(by, key=lambda s: (s in fresh, names[s])):
        cells = []
        for label, _, _ in models:
            mx, med, reg, t = results[label][s]
            cells.append(f"{mx:.1%} / {med:.1%}; {reg:.1%}" + (f" (T {t})" if reg > 0 else ""))
        tag = " (fresh)" if s in fresh else ""
        print(f"| {names[s]}{tag} | {' / '.join(map(str, s))} | " + " | ".join(cells) + " |")
    for label, _, _ in models:
        r = results[label].values()
        print(
            f"{label}: max error {max(x[0] for x in r):.1%}, median of per-shape medians "
            f"{statistics.median(x[1] for x in r):.1%}, worst regret {max(x[2] for x in r):.1%}, "
            f"shapes over 10% error {sum(x[0] > 0.10 for x in r)} of {len(by)}, over 1% regret "
            f"{sum(x[2] > 0.01 for x in r)}"
        )


if __name__ == "__main__":
    main()
