"""How well the cost model transfers to shapes it was not fit on: leave-one-shape-out error and regret, per shape.

Ground truth: every shape measured on the H200: the sweeps of ``benchmarks/fused_vs_nonfused.py`` (one JSON per
expert shape, 12-14 token counts) and the calibration file ``moe-oracle tune`` wrote for seven models
(``tune_calibration_h200.json``; five of them from families no sweep had: ERNIE-4.5-300B-A47B, Hunyuan-A13B and
Qwen2-57B-A14B expert shapes, Laguna-XS.2-FP8, MiMo-V2-Flash, marked fresh), and the sweep of one more family
measured fresh (Qwen3.5-397B-A17B, :data:`FRESH_SWEEPS`). A shape measured by both is one shape
with the points of both. For each shape and each path, the model (:func:`moe_oracle.cost.calibration.fit_pooled`)
is fit on the OTHER shapes only, with the synthetic shapes of :data:`TRAINING` (never scored), and predicts this
shape's times.

Printed per shape, for the package's model (``calibration.PATH_TERMS``): the worst |predicted / measured - 1| over
its paths and token counts (with the path and T), the median, and the worst regret: at each T, the path the
predictions rank first against the best measured path (chosen / best - 1), for an FP8 checkpoint (fused FP8 and
the two non-fused layouts; a cell is a (shape, T) where at least two of them were measured). Then the same totals
for the previous model (the five terms ``calibration.FIVE_TERMS``, plain least squares), scored the same way on
the same shapes, and the package model's left-out points per path (count, worst and median error, how many are off
by more than 10%). Runs on a CPU::

    python benchmarks/cost_model_loso.py [FOLDER ...]   (default: results/h200/2026-12-01, then 2026-12-02)
    python benchmarks/cost_model_loso.py --rates [FOLDER ...]   (the FP8 kernel's streaming rate at BLOCK_M 128)
    python benchmarks/cost_model_loso.py --near-ties [FOLDER ...]   (the cells the model calls near ties)

``--probes FOLDER ...`` predicts the sweeps in FOLDER (shapes measured to test a mechanism: the hidden-size probe
of ``results/h200/2026-12-03/probe``, in no calibration, or the expert-count probe of :data:`TRAINING`) from a fit
over the default folders' and :data:`TRAINING`'s shapes (leaving out the same shape if it is there) and prints, per
shape, path and T, the measured and predicted us, the error, and the time per padded TFLOP (what separates one H
from another at the same E, I and top-k).

``--held-out`` prints, as the JSON of ``moe_oracle/data/held_out_error.json`` (:mod:`moe_oracle.cost.held_out`), per
device class and path the same left-out points' count, median, 90th percentile and largest error: what a cost basis
estimated from other shapes quotes.

``--near-ties`` scores :mod:`moe_oracle.cost.near_tie` on the same left-out predictions: per cell, the predicted gap
between the two paths ranked first, whether the band calls it a near tie, and the regret there; the percentiles of the
error of that predicted ratio; then, per band, how many cells it flags and how many of the cells over 1% regret it
catches (what sets ``near_tie.NEAR_TIE``).
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

from fit_cost_model import calibrations, merge_points

from moe_oracle.cost import local
from moe_oracle.cost.calibration import FIVE_TERMS, Calibration, calibration_features, fit_pooled
from moe_oracle.cost.geometry import Kernel, Regime, geometry
from moe_oracle.cost.held_out import HeldOutError, dumps
from moe_oracle.cost.model import CostEstimate
from moe_oracle.cost.near_tie import NEAR_TIE, is_near_tie, predicted_gap

RESULTS = Path(__file__).resolve().parent / "results" / "h200"
#: the sweeps of 2026-12-01, the Qwen3-30B-A3B re-measurement of 2026-12-02 (after the SwiGLU grid fix), and the three
#: families predicted before they were measured on 2026-12-03 (``results/h200/2026-12-03/predicted/``)
DEFAULT = [RESULTS / "2026-12-01", RESULTS / "2026-12-02", RESULTS / "2026-12-03" / "fresh"]
#: sweeps of synthetic shapes that span what the families do not (the expert-count probe: H 2048 / I 512 and
#: H 4096 / I 2048 at 64 to 1024 experts, ``_shapes.py``): in every fit, never scored (they are not families); the
#: package calibration holds them too
TRAINING = [RESULTS / "2026-12-03" / "probe_experts"]
FP8_PATHS = ("deep_gemm_mega_moe:sm90_fp8xfp8", "nonfused:deepgemm_fp8_psum", "nonfused:deepgemm_fp8_m_indices")
SHORT = {
    "deep_gemm_mega_moe:sm90_fp8xfp8": "fused FP8",
    "deep_gemm_mega_moe:sm90_fp8xfp4": "fused MXFP4",
    "nonfused:deepgemm_fp8_psum": "psum",
    "nonfused:deepgemm_fp8_m_indices": "m_indices",
}
#: sweeps of families no earlier calibration had, measured for issue 31 (the others: the shapes tune measured)
FRESH_SWEEPS = ("Qwen/Qwen3.5-397B-A17B", "deepseek-ai/DeepSeek-V3", "zai-org/GLM-4.5", "baidu/ERNIE-4.5-21B-A3B")
Shape = tuple[int, int, int, int]
Cell = tuple[Shape, str, int]


@dataclass(frozen=True)
class CellRank:
    """One (shape, T) cell of an FP8 checkpoint ranked on predictions: ``order``, the paths predicted fastest first;
    ``first`` and ``second``, the two ranked first as estimates from other shapes; ``best``, the path measured
    fastest; ``regret``, the first's measured time over the best's, minus 1."""

    order: tuple[str, ...]
    first: CostEstimate
    second: CostEstimate
    best: str
    regret: float

    @property
    def gap(self) -> float:
        return predicted_gap(self.first, self.second)

    def tie(self, band: float = NEAR_TIE) -> bool:
        return is_near_tie(self.first, self.second, band)


def rank_cell(predicted: dict[str, float], measured: dict[str, float]) -> CellRank | None:
    """The cell whose paths (of :data:`FP8_PATHS`) have both a prediction and a measurement, ranked on the
    predictions; None with fewer than two such paths."""
    have = [p for p in FP8_PATHS if p in predicted and p in measured]
    if len(have) < 2:
        return None
    order = tuple(sorted(have, key=predicted.__getitem__))
    first, second = (CostEstimate(predicted[p], "left out", True, True) for p in order[:2])
    best = min(have, key=measured.__getitem__)
    return CellRank(order, first, second, best, measured[order[0]] / measured[best] - 1)


def cell(pm: dict[Cell, float], mm: dict[Cell, float], s: Shape, t: int) -> CellRank | None:
    """:func:`rank_cell` of shape ``s`` at ``t`` from left-out predictions ``pm`` and measurements ``mm``."""
    pick = {p: (s, p, t) for p in FP8_PATHS}
    return rank_cell({p: pm[k] for p, k in pick.items() if k in pm}, {p: mm[k] for p, k in pick.items() if k in mm})


@dataclass(frozen=True)
class ShapeScore:
    max_error: float
    worst: tuple[str, int]  # the path and T of the worst error
    median_error: float
    regret: float
    regret_tokens: int
    cells: int
    cells_over: int  # cells with regret above 1%


def load(folders: list[Path]) -> tuple[dict[Shape, dict[str, list[Calibration]]], dict[Shape, str], set[Shape]]:
    """Shape -> path -> calibrations; shape -> a name; the shapes of families measured fresh. A later sweep of a
    shape (a later file, or a later folder) replaces the earlier one's points at the T it measured (a re-measurement
    after a change to the path) and adds the others (an extension to larger T)."""
    by: dict[Shape, dict[str, list[Calibration]]] = {}
    names: dict[Shape, str] = {}

    def key(c: Calibration) -> Shape:
        return (c.hidden_size, c.moe_intermediate_size, c.num_experts, c.top_k)

    for folder in folders:
        for f in sorted(folder.glob("fused_vs_nonfused_*.json")):
            run = json.loads(f.read_text())
            for c in calibrations(run, f.name):
                earlier = by.setdefault(key(c), {}).get(c.variant, [])
                by[key(c)][c.variant] = [merge_points(earlier[0], c) if earlier else c]
                names[key(c)] = run["model"].split(" (")[0]
    fresh = {s for s, name in names.items() if name in FRESH_SWEEPS}
    for tuned in (f / "tune_calibration_h200.json" for f in folders):
        if not tuned.is_file():
            continue
        for c in local.read(tuned).entries:
            if key(c) not in names:
                fresh.add(key(c))
                names[key(c)] = c.source.removeprefix("moe-oracle tune ").split(" on ")[0].split("/")[-1].split(" (")[0]
            by.setdefault(key(c), {}).setdefault(c.variant, []).append(c)
    return by, names, fresh


def training(by: dict[Shape, dict[str, list[Calibration]]]) -> dict[Shape, dict[str, list[Calibration]]]:
    """The :data:`TRAINING` sweeps' shapes that ``by`` does not score (a family's shape measured there beside the
    probes, Laguna-XS.2's, stays with its own sweeps)."""
    extra, _, _ = load(TRAINING)
    return {s: pp for s, pp in extra.items() if s not in by}


def predict(by: dict[Shape, dict[str, list[Calibration]]], terms: tuple[int, ...] | None, robust: bool = True):
    """(predicted, measured) per (shape, path, T): each shape from a fit over the others and the training-only
    shapes (:func:`training`; mean / median of repeats)."""
    train = training(by)
    pred: dict[Cell, list[float]] = {}
    meas: dict[Cell, list[float]] = {}
    for s, paths in by.items():
        for p, cals in paths.items():
            others = tuple(c for pool in (by, train) for s2, pp in pool.items() if s2 != s for c in pp.get(p, []))
            f = fit_pooled(others, terms, robust)
            for c in cals:
                for (x, _), (t, _, us) in zip(calibration_features(c), c.points, strict=True):
                    pred.setdefault((s, p, t), []).append(f.predict(x))
                    meas.setdefault((s, p, t), []).append(us)
    return (
        {k: statistics.mean(v) for k, v in pred.items()},
        {k: statistics.median(v) for k, v in meas.items()},
    )


def score(by: dict[Shape, dict[str, list[Calibration]]], pm: dict[Cell, float], mm: dict[Cell, float]):
    """Per shape: the errors and the regret of the predictions ``pm`` against the measurements ``mm``."""
    out: dict[Shape, ShapeScore] = {}
    for s in by:
        errs = sorted((abs(pm[k] / mm[k] - 1), k) for k in pm if k[0] == s)
        worst = (0.0, 0)
        cells = over = 0
        for t in sorted({k[2] for k in mm if k[0] == s}):
            ranked = cell(pm, mm, s, t)
            if ranked is None:
                continue
            cells += 1
            over += ranked.regret > 0.01
            worst = max(worst, (ranked.regret, t))
        top, (_, path, tokens) = errs[-1]
        med = statistics.median(e for e, _ in errs)
        out[s] = ShapeScore(top, (SHORT.get(path, path), tokens), med, worst[0], worst[1], cells, over)
    return out


def totals(label: str, r: dict[Shape, ShapeScore]) -> str:
    v = r.values()
    cells, over = sum(x.cells for x in v), sum(x.cells_over for x in v)
    return (
        f"{label}: max error {max(x.max_error for x in v):.1%}, median of per-shape medians "
        f"{statistics.median(x.median_error for x in v):.1%}, shapes within 10% {sum(x.max_error <= 0.10 for x in v)} "
        f"of {len(r)}, worst regret {max(x.regret for x in v):.1%}, cells within 1% regret {cells - over} of {cells}"
    )


def path_errors(pm: dict[Cell, float], mm: dict[Cell, float]) -> dict[str, list[tuple[float, Cell]]]:
    """Per path, every shape's left-out points as (|predicted / measured - 1|, cell), smallest error first."""
    return {
        path: sorted((abs(pm[k] / mm[k] - 1), k) for k in pm if k[1] == path) for path in sorted({k[1] for k in pm})
    }


def per_path(pm: dict[Cell, float], mm: dict[Cell, float], names: dict[Shape, str]) -> None:
    """Per path, over every shape's left-out points: their count, the worst error (shape, T), the median, and how
    many are off by more than 10%."""
    print("| path | points | max error (shape, T) | median error | points over 10% |\n|---|---|---|---|---|")
    for path, errs in sorted(path_errors(pm, mm).items(), key=lambda kv: SHORT.get(kv[0], kv[0])):
        top, (shape, _, tokens) = errs[-1]
        med = statistics.median(e for e, _ in errs)
        over = sum(e > 0.10 for e, _ in errs)
        name = SHORT.get(path, path)
        print(f"| {name} | {len(errs)} | {top:.1%} ({names[shape]}, T {tokens}) | {med:.1%} | {over} |")


def held_out(by: dict[Shape, dict[str, list[Calibration]]], names: dict[Shape, str]) -> None:
    """The text of ``moe_oracle/data/held_out_error.json`` (:func:`moe_oracle.cost.held_out.dumps`): per path, over
    every shape's left-out points, how many shapes and points, the median, 90th percentile (nearest rank) and largest
    error, and where."""
    scored = {(c.device, c.ep, c.measured) for pp in by.values() for cals in pp.values() for c in cals}
    if len(scored) != 1 or not next(iter(scored))[2]:
        raise SystemExit(f"--held-out scores the measurements of one device class at one EP, not {sorted(scored)}")
    device, ep, _ = scored.pop()
    entries = []
    for path, errs in path_errors(*predict(by, None)).items():
        top, (shape, _, tokens) = errs[-1]
        median = round(statistics.median(e for e, _ in errs), 4)
        p90 = round(errs[math.ceil(0.9 * len(errs)) - 1][0], 4)
        shapes = len({k[0] for _, k in errs})
        worst = f"{names[shape]} at T {tokens}"
        entries.append(HeldOutError(device, ep, path, shapes, len(errs), median, p90, round(top, 4), worst))
    print(dumps(entries), end="")


def rates(by: dict[Shape, dict[str, list[Calibration]]], names: dict[Shape, str]) -> None:
    """The SM90 FP8 kernel at BLOCK_M 128: per measured point, the expert weight bytes streamed (each expert's
    weights once per M-block) over the call's time, in TB/s (docs/performance.md §13.1)."""
    fp8 = "deep_gemm_mega_moe:sm90_fp8xfp8"
    print("| shape | local experts | T | M-blocks | streamed GB | us | TB/s |\n|---|---|---|---|---|---|---|")
    for s in sorted(by, key=lambda s: (s[2], names[s])):
        hidden, inter, experts, top_k = s
        for cal in by[s].get(fp8, []):
            for t, _, us in cal.points:
                g = geometry(Kernel.SM90_FP8, t, hidden, inter, experts, top_k, cal.ep)
                if g.regime is Regime.LARGE_M:
                    gb = g.m_blocks * cal.expert_bytes / 1e9
                    row = f"{names[s]} | {experts // cal.ep} | {t} | {g.m_blocks:.0f} | {gb:.1f} | {us:.0f}"
                    print(f"| {row} | {gb / us * 1e3:.2f} |")


def near_ties(by: dict[Shape, dict[str, list[Calibration]]], names: dict[Shape, str]) -> None:
    """Each FP8 cell's left-out ranking: the predicted gap between the first two paths, the near-tie verdict at
    :data:`NEAR_TIE`, the regret of the first; then per band the cells flagged and the regret cells caught."""
    pm, mm = predict(by, None)
    rows: list[tuple[str, int, CellRank]] = []
    ratio_errors = []
    for s in sorted(by, key=lambda s: names[s]):
        for t in sorted({k[2] for k in mm if k[0] == s}):
            ranked = cell(pm, mm, s, t)
            if ranked is None:
                continue
            rows.append((names[s], t, ranked))
            # how far the predicted ratio of the two is from the measured one (what a band has to cover)
            a, b = ranked.order[:2]
            ratio_errors.append(abs(math.log(ranked.gap + 1) - math.log(mm[(s, b, t)] / mm[(s, a, t)])))
    print(f"cells banded at NEAR_TIE = {NEAR_TIE:.0%}, and every cell over 1% regret")
    print("| shape | T | ranked first | second | predicted gap | near tie | regret |\n|---|---|---|---|---|---|---|")
    for name, t, r in rows:
        if r.tie() or r.regret > 0.01:
            a, b = (SHORT[p] for p in r.order[:2])
            print(f"| {name} | {t} | {a} | {b} | {r.gap:.1%} | {'yes' if r.tie() else 'no'} | {r.regret:.1%} |")
    over = sum(r.regret > 0.01 for _, _, r in rows)
    ratio_errors.sort()
    quantiles = ", ".join(
        f"{q}: {math.exp(ratio_errors[math.ceil(q / 100 * len(ratio_errors)) - 1]) - 1:.1%}" for q in (50, 75, 90)
    )
    print(f"\n{len(rows)} cells, {over} over 1% regret")
    print(f"error of the predicted ratio of the two paths ranked first, percentiles {quantiles}")
    print("| band | cells flagged | cells over 1% regret flagged |\n|---|---|---|")
    for band in sorted({0.01, 0.02, 0.03, NEAR_TIE, 0.05, 0.10}):
        flagged = [r for _, _, r in rows if r.tie(band)]
        print(f"| {band:.0%} | {len(flagged)} | {sum(r.regret > 0.01 for r in flagged)} of {over} |")


def probes(folders: list[Path]) -> None:
    """Each sweep in ``folders`` predicted from the default folders' other shapes (see the module docstring)."""
    by, _, _ = load(DEFAULT)
    by |= training(by)
    print("| shape | path | T | measured us | predicted us | error | us per padded TFLOP |")
    print("|---|---|---|---|---|---|---|")
    for folder in folders:
        for f in sorted(folder.glob("fused_vs_nonfused_*.json")):
            run = json.loads(f.read_text())
            for c in calibrations(run, f.name):
                s = (c.hidden_size, c.moe_intermediate_size, c.num_experts, c.top_k)
                fit = fit_pooled(tuple(x for s2, pp in by.items() if s2 != s for x in pp.get(c.variant, [])))
                for (x, _), (t, _, us) in zip(calibration_features(c), c.points, strict=True):
                    padded = x[6] + x[15]  # the padded MMA work, at either rate
                    per = f"{us / padded:.0f}" if padded > 0 else "-"
                    name = run["model"].split(" (")[0].removeprefix("probe: ")
                    p = fit.predict(x)
                    print(f"| {name} | {SHORT[c.variant]} | {t} | {us:.0f} | {p:.0f} | {p / us - 1:+.1%} | {per} |")


def main() -> None:
    args = sys.argv[1:]
    if args[:1] == ["--probes"]:
        probes([Path(a) for a in args[1:]])
        return
    if args[:1] == ["--rates"]:
        by, names, _ = load([Path(a) for a in args[1:]] or DEFAULT)
        rates(by, names)
        return
    if args[:1] == ["--held-out"]:
        by, names, _ = load([Path(a) for a in args[1:]] or DEFAULT)
        held_out(by, names)
        return
    if args[:1] == ["--near-ties"]:
        by, names, _ = load([Path(a) for a in args[1:]] or DEFAULT)
        near_ties(by, names)
        return
    by, names, fresh = load([Path(a) for a in args] or DEFAULT)
    print(f"{len(by)} shapes ({len(fresh)} from families measured fresh: {', '.join(sorted(names[s] for s in fresh))})")
    pm, mm = predict(by, None)
    now, before = score(by, pm, mm), score(by, *predict(by, FIVE_TERMS, robust=False))
    print("\nleave-one-shape-out, package model (calibration.PATH_TERMS), per shape; regret for an FP8 checkpoint")
    print(
        "| shape | H / I / E / top-k | max error (path, T) | median error | worst regret (T) "
        "| previous model: max / regret |"
    )
    print("|---|---|---|---|---|---|")
    for s in sorted(by, key=lambda s: (s in fresh, names[s])):
        r, b = now[s], before[s]
        tag = " (fresh)" if s in fresh else ""
        reg = f"{r.regret:.1%}" + (f" (T {r.regret_tokens})" if r.regret > 0 else "")
        print(
            f"| {names[s]}{tag} | {' / '.join(map(str, s))} | {r.max_error:.1%} ({r.worst[0]}, T {r.worst[1]}) | "
            f"{r.median_error:.1%} | {reg} | {b.max_error:.1%} / {b.regret:.1%} |"
        )
    print(totals("package model (PATH_TERMS)", now))
    print(totals("previous model (five terms, least squares)", before))
    print("\nthe package model's left-out points, per path")
    per_path(pm, mm, names)


if __name__ == "__main__":
    main()
