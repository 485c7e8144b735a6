"""The oracle's fused / non-fused choice against the best measured path, per workload.

Ground truth: one H200 run of ``benchmarks/fused_vs_nonfused.py`` at EP=1 for one expert shape
(DeepSeek-V4-Flash: ``benchmarks/results/h200/fused_vs_nonfused.json``; GLM-5:
``fused_vs_nonfused_glm5.json``): the fused ``fp8_mega_moe`` kernel and the non-fused DeepGEMM
grouped-GEMM graph in its psum and m_indices layouts, all on the same FP8 experts. For each workload
the oracle decides (``decide(..., workload=...)`` for that model with FP8 experts, which ranks with
the stored calibration) and the table prints the chosen path's measured time against the best
measured path (regret) and against the static policies "always fused" and "always non-fused".

In-sample the oracle interpolates the very points it is scored on, so two out-of-sample choices are
scored as well:

* leave-one-out: for each T inside the sweep every path's calibration without that T predicts the
  time there (log-T interpolation between the neighbours; the first and last T are not held out, as
  they would be extrapolated rather than interpolated);
* other shapes only: the cost model without any calibration of this shape (the three-term fit over
  the other measured shapes, evaluated at this shape's bytes and FLOPs): what the oracle does for a
  model nobody measured.

Goal (issue: H200 work, section 5): regret within 3%, and a total below both static policies.
Runs on a CPU:

    python benchmarks/oracle_regret.py [results.json]
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

from fit_cost_model import calibrations

from moe_oracle.cost.calibration import load_calibrations
from moe_oracle.cost.model import Workload, estimate_us, interpolate
from moe_oracle.decide.selection import decide
from moe_oracle.inputs import DeploymentFlags, build_deployment, resolve_software
from moe_oracle.model.resolve import resolve_model
from moe_oracle.model.types import QuantSpec

FUSED = "deep_gemm_mega_moe:sm90_fp8xfp8"
NONFUSED = ("nonfused:deepgemm_fp8_psum", "nonfused:deepgemm_fp8_m_indices")
DEFAULT = Path(__file__).resolve().parent / "results" / "h200" / "fused_vs_nonfused.json"


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    run = json.loads(path.read_text())
    cals = {c.variant: c for c in calibrations(run, str(path)) if c.variant in (FUSED, *NONFUSED)}
    table = {k: {t: us for t, _, us in c.points} for k, c in cals.items()}
    sweep = sorted(set.intersection(*(set(v) for v in table.values())))
    base = resolve_model(run["model"].split(" (")[0])
    fp8 = QuantSpec(format="fp8_block", block=(128, 128), scale_format="fp32")
    group = base.main_group.model_copy(update={"weight_quant": fp8})
    model = base.model_copy(update={"layer_groups": (group,)})
    dep, _ = build_deployment(DeploymentFlags(device="h200", gpus_per_node=1, max_num_batched_tokens=8192))
    sw, _ = resolve_software("all", "h200")
    shape = (run["shape"]["hidden_size"], run["shape"]["num_experts"], run["shape"]["moe_intermediate_size"])
    others = [c for c in load_calibrations() if (c.hidden_size, c.num_experts, c.moe_intermediate_size) != shape]

    def choice(workload: Workload) -> str:
        g = decide(model, dep, sw, workload=workload).main
        return g.chosen.spec.key if g.chosen else g.nonfused.key

    def cost(p: str, workload: Workload) -> float:
        return sum(w * table[p][t] for t, w in workload.points) / sum(w for _, w in workload.points)

    def loo_choice(t: int) -> str:
        held_out = {k: replace(c, points=tuple(pt for pt in c.points if pt[0] != t)) for k, c in cals.items()}
        return min(held_out, key=lambda k: interpolate(held_out[k], t))

    def other_shapes_choice(workload: Workload) -> str:
        def predicted(p: str) -> float:
            return sum(w * estimate_us(p, group, dep, t, others).us for t, w in workload.points)

        return min(cals, key=predicted)

    print(f"ground truth: {path.name} ({run['device']}, EP{run['ep']}, {run['model']})")
    print(
        f"{'workload':24} {'oracle chose':32} {'us':>8} {'best':>8} {'regret':>6} {'fused':>8} {'nonfused':>8}"
        f"  {'leave-one-out':32} {'regret':>6}  {'other shapes only':32} {'regret':>6}"
    )
    keys = ("oracle", "best", "fused", "nonfused", "loo", "other")
    totals = dict.fromkeys(keys, 0.0)
    workloads = [Workload(((t, 1.0),), label=f"T={t}") for t in sweep]
    workloads.append(Workload(((32, 0.5), (8192, 0.5)), label="mixed 32/8192"))
    workloads.append(Workload(((1, 0.4), (8, 0.3), (128, 0.2), (2048, 0.1)), label="decode-heavy histogram"))
    workloads.append(Workload(((64, 0.3), (2048, 0.3), (8192, 0.4)), label="prefill-heavy histogram"))
    worst = dict.fromkeys(("oracle", "loo", "other"), 0.0)
    for wl in workloads:
        paths = {p: cost(p, wl) for p in (FUSED, *NONFUSED)}
        best = min(paths.values())
        picks = {"oracle": choice(wl), "other": other_shapes_choice(wl)}
        if len(wl.points) == 1 and sweep[0] < wl.points[0][0] < sweep[-1]:
            picks["loo"] = loo_choice(wl.points[0][0])
        for k, pick in picks.items():
            worst[k] = max(worst[k], paths[pick] / best - 1)
            totals[k] += paths[pick]
        # the faster layout overall (psum) as the fixed non-fused policy
        for k, v in (("best", best), ("fused", paths[FUSED]), ("nonfused", paths[NONFUSED[0]])):
            totals[k] += v
        cells = {k: f"{pick:32} {paths[pick] / best - 1:6.1%}" for k, pick in picks.items()}
        blank = f"{'':32} {'':6}"
        print(
            f"{wl.label:24} {picks['oracle']:32} {paths[picks['oracle']]:8.1f} {best:8.1f} "
            f"{paths[picks['oracle']] / best - 1:6.1%} {paths[FUSED]:8.1f} {paths[NONFUSED[0]]:8.1f}"
            f"  {cells.get('loo', blank)}  {cells['other']}"
        )
    print()
    print(
        f"worst regret {worst['oracle']:.1%} in-sample, {worst['loo']:.1%} leave-one-out, {worst['other']:.1%} from "
        f"other shapes only (goal <= 3%); totals: oracle {totals['oracle']:.0f} us, best {totals['best']:.0f}, "
        f"always fused {totals['fused']:.0f} ({totals['fused'] / totals['oracle']:.2f}x), always non-fused (psum) "
        f"{totals['nonfused']:.0f} ({totals['nonfused'] / totals['oracle']:.2f}x), other shapes only "
        f"{totals['other']:.0f} ({totals['other'] / totals['oracle']:.2f}x)"
    )


if __name__ == "__main__":
    main()
