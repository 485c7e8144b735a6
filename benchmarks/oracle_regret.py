"""The oracle's fused / non-fused choice against the best measured path, per workload.

Ground truth: the kernel times measured on one H200 at EP=1 for the DeepSeek-V4-Flash expert shape
with FP8 block-128 experts (``moe_oracle/data/calibration.json``, from ``shared/reference/h200.md``
§4 and §6): the fused ``fp8_mega_moe`` kernel and the non-fused DeepGEMM grouped-GEMM graph in its
psum and m_indices layouts. For each workload the oracle decides (``--workload``), and the table
prints the chosen path's measured time against the best measured path (regret) and against the two
static policies "always fused" and "always non-fused". Goal (issue: H200 work, section 5): regret
within 3% everywhere, and a total below both static policies. Runs on a CPU:

    python benchmarks/oracle_regret.py
"""

from __future__ import annotations

from moe_oracle.cost.calibration import load_calibrations
from moe_oracle.cost.model import Workload
from moe_oracle.inputs import DeploymentFlags, build_deployment, resolve_software
from moe_oracle.model.resolve import resolve_model
from moe_oracle.model.types import QuantSpec
from moe_oracle.selection import decide

FUSED = "deep_gemm_mega_moe:sm90_fp8xfp8"
NONFUSED = ("nonfused:deepgemm_fp8_psum", "nonfused:deepgemm_fp8_m_indices")


def measured() -> dict[str, dict[int, float]]:
    out: dict[str, dict[int, float]] = {}
    for c in load_calibrations():
        if c.device == "h200" and c.ep == 1 and c.variant in (FUSED, *NONFUSED):
            out[c.variant] = {t: us for t, _, us in c.points}
    return out


def main() -> None:
    table = measured()
    sweep = sorted(set.intersection(*(set(v) for v in table.values())))
    base = resolve_model("deepseek-ai/DeepSeek-V4-Flash")
    fp8 = QuantSpec(format="fp8_block", block=(128, 128), scale_format="fp32")
    model = base.model_copy(update={"layer_groups": (base.main_group.model_copy(update={"weight_quant": fp8}),)})
    dep, _ = build_deployment(DeploymentFlags(device="h200", gpus_per_node=1, max_num_batched_tokens=8192))
    sw, _ = resolve_software("all", "h200")

    def choice(workload: Workload) -> str:
        g = decide(model, dep, sw, workload=workload).main
        return g.chosen.spec.key if g.chosen else g.nonfused.key

    def cost(path: str, workload: Workload) -> float:
        return sum(w * table[path][t] for t, w in workload.points) / sum(w for _, w in workload.points)

    print(f"{'workload':24} {'oracle chose':34} {'us':>8} {'best':>8} {'regret':>7} {'fused':>8} {'nonfused':>9}")
    totals = {"oracle": 0.0, "best": 0.0, "fused": 0.0, "nonfused": 0.0}
    workloads = [Workload(((t, 1.0),), label=f"T={t}") for t in sweep]
    workloads.append(Workload(((32, 0.5), (8192, 0.5)), label="mixed 32/8192"))
    workloads.append(Workload(((1, 0.4), (8, 0.3), (128, 0.2), (2048, 0.1)), label="decode-heavy histogram"))
    worst = 0.0
    for wl in workloads:
        pick = choice(wl)
        paths = {p: cost(p, wl) for p in (FUSED, *NONFUSED)}
        best = min(paths.values())
        static_nonfused = paths[NONFUSED[0]]  # the faster layout overall (psum) as a fixed policy
        regret = paths[pick] / best - 1
        worst = max(worst, regret)
        for k, v in (("oracle", paths[pick]), ("best", best), ("fused", paths[FUSED]), ("nonfused", static_nonfused)):
            totals[k] += v
        print(
            f"{wl.label:24} {pick:34} {paths[pick]:8.1f} {best:8.1f} {regret:7.1%} {paths[FUSED]:8.1f} "
            f"{static_nonfused:9.1f}"
        )
    print()
    print(
        f"worst regret {worst:.1%} (goal <= 3%); totals: oracle {totals['oracle']:.0f} us, best {totals['best']:.0f}, "
        f"always fused {totals['fused']:.0f} ({totals['fused'] / totals['oracle']:.2f}x), always non-fused (psum) "
        f"{totals['nonfused']:.0f} ({totals['nonfused'] / totals['oracle']:.2f}x)"
    )


if __name__ == "__main__":
    main()
