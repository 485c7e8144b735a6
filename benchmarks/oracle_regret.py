"""The oracle's fused / non-fused choice against the best measured path, per workload.

Ground truth: one H200 run of ``benchmarks/fused_vs_nonfused.py`` at EP=1 for the DeepSeek-V4-Flash
expert shape (``benchmarks/results/h200/fused_vs_nonfused.json``): the fused ``fp8_mega_moe`` kernel
and the non-fused DeepGEMM grouped-GEMM graph in its psum and m_indices layouts, all on the same FP8
experts. For each workload the oracle decides (``decide(..., workload=...)``, which ranks with the
calibration stored from that run) and the table prints the chosen path's measured time against the
best measured path (regret) and against the static policies "always fused" and "always non-fused".

In-sample the oracle interpolates the very points it is scored on, so the script also scores a
leave-one-out choice: for each T of the sweep every path's calibration without that T predicts the
time there (log-T interpolation between the neighbours), and the path predicted fastest is scored.
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

from moe_oracle.cost.model import Workload, interpolate
from moe_oracle.inputs import DeploymentFlags, build_deployment, resolve_software
from moe_oracle.model.resolve import resolve_model
from moe_oracle.model.types import QuantSpec
from moe_oracle.selection import decide

FUSED = "deep_gemm_mega_moe:sm90_fp8xfp8"
NONFUSED = ("nonfused:deepgemm_fp8_psum", "nonfused:deepgemm_fp8_m_indices")
DEFAULT = Path(__file__).resolve().parent / "results" / "h200" / "fused_vs_nonfused.json"


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    run = json.loads(path.read_text())
    cals = {c.variant: c for c in calibrations(run, str(path)) if c.variant in (FUSED, *NONFUSED)}
    table = {k: {t: us for t, _, us in c.points} for k, c in cals.items()}
    sweep = sorted(set.intersection(*(set(v) for v in table.values())))
    base = resolve_model("deepseek-ai/DeepSeek-V4-Flash")
    fp8 = QuantSpec(format="fp8_block", block=(128, 128), scale_format="fp32")
    model = base.model_copy(update={"layer_groups": (base.main_group.model_copy(update={"weight_quant": fp8}),)})
    dep, _ = build_deployment(DeploymentFlags(device="h200", gpus_per_node=1, max_num_batched_tokens=8192))
    sw, _ = resolve_software("all", "h200")

    def choice(workload: Workload) -> str:
        g = decide(model, dep, sw, workload=workload).main
        return g.chosen.spec.key if g.chosen else g.nonfused.key

    def cost(p: str, workload: Workload) -> float:
        return sum(w * table[p][t] for t, w in workload.points) / sum(w for _, w in workload.points)

    def loo_choice(t: int) -> str:
        held_out = {k: replace(c, points=tuple(pt for pt in c.points if pt[0] != t)) for k, c in cals.items()}
        return min(held_out, key=lambda k: interpolate(held_out[k], t))

    print(f"ground truth: {path.name} ({run['device']}, EP{run['ep']}, {run['model']})")
    print(
        f"{'workload':24} {'oracle chose':34} {'us':>8} {'best':>8} {'regret':>7} {'fused':>8} {'nonfused':>9}"
        f"   {'leave-one-out choice':34} {'regret':>7}"
    )
    totals = {"oracle": 0.0, "best": 0.0, "fused": 0.0, "nonfused": 0.0, "loo": 0.0}
    workloads = [Workload(((t, 1.0),), label=f"T={t}") for t in sweep]
    workloads.append(Workload(((32, 0.5), (8192, 0.5)), label="mixed 32/8192"))
    workloads.append(Workload(((1, 0.4), (8, 0.3), (128, 0.2), (2048, 0.1)), label="decode-heavy histogram"))
    workloads.append(Workload(((64, 0.3), (2048, 0.3), (8192, 0.4)), label="prefill-heavy histogram"))
    worst = worst_loo = 0.0
    for wl in workloads:
        pick = choice(wl)
        paths = {p: cost(p, wl) for p in (FUSED, *NONFUSED)}
        best = min(paths.values())
        static_nonfused = paths[NONFUSED[0]]  # the faster layout overall (psum) as a fixed policy
        regret = paths[pick] / best - 1
        worst = max(worst, regret)
        loo = ""
        if len(wl.points) == 1:
            lpick = loo_choice(wl.points[0][0])
            lreg = paths[lpick] / best - 1
            worst_loo = max(worst_loo, lreg)
            totals["loo"] += paths[lpick]
            loo = f"   {lpick:34} {lreg:7.1%}"
        for k, v in (("oracle", paths[pick]), ("best", best), ("fused", paths[FUSED]), ("nonfused", static_nonfused)):
            totals[k] += v
        print(
            f"{wl.label:24} {pick:34} {paths[pick]:8.1f} {best:8.1f} {regret:7.1%} {paths[FUSED]:8.1f} "
            f"{static_nonfused:9.1f}{loo}"
        )
    print()
    print(
        f"worst regret {worst:.1%} in-sample, {worst_loo:.1%} leave-one-out (goal <= 3%); totals: oracle "
        f"{totals['oracle']:.0f} us, best {totals['best']:.0f}, always fused {totals['fused']:.0f} "
        f"({totals['fused'] / totals['oracle']:.2f}x), always non-fused (psum) {totals['nonfused']:.0f} "
        f"({totals['nonfused'] / totals['oracle']:.2f}x)"
    )


if __name__ == "__main__":
    main()
