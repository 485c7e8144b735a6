"""The cost model's routing-skew option against the skewed runs ``moe-oracle tune --skew 1.2`` measured (EP 1, H200).

Each path's balanced calibration of the same shape (``tune_calibration_h200.json``) is fit and evaluated with the
busiest rank's active experts and token pairs under the skew (:func:`moe_oracle.cost.active_experts.skewed_rank`),
then compared with the skewed measurement (``tune_skew_zipf1.2_*.json``). Also printed: the busiest-rank multiplier
the model gives at EP 8. Runs on a CPU::

    python benchmarks/skew_check.py
"""

from __future__ import annotations

from pathlib import Path

from moe_oracle.cost import local
from moe_oracle.cost.active_experts import skewed_rank
from moe_oracle.cost.model import estimate_us
from moe_oracle.inputs import DeploymentFlags, build_deployment
from moe_oracle.model.types import MoELayerGroup, QuantSpec, Routing, Scoring

DIR = Path(__file__).resolve().parent / "results" / "h200" / "2026-12-01"
SKEW = 1.2


def main() -> None:
    balanced = local.read(DIR / "tune_calibration_h200.json").entries
    dep, _ = build_deployment(DeploymentFlags(device="h200", dp=1, ep=1))
    print(f"skew {SKEW}: predicted from the balanced calibration / measured skewed, us per call (EP 1)")
    for name in ("glm5", "laguna"):
        for e in local.read(DIR / f"tune_skew_zipf1.2_{name}.json").entries:
            g = MoELayerGroup(
                name="moe", layers=(0,), hidden_size=e.hidden_size, moe_intermediate_size=e.moe_intermediate_size,
                num_experts=e.num_experts, top_k=e.top_k,
                weight_quant=QuantSpec(format="fp8_block", block=(128, 128), scale_format="fp32"),
                routing=Routing(scoring=Scoring.SOFTMAX),
            )  # fmt: skip
            shape = (e.variant, e.hidden_size, e.moe_intermediate_size, e.num_experts)
            same = tuple(
                c for c in balanced if (c.variant, c.hidden_size, c.moe_intermediate_size, c.num_experts) == shape
            )
            cells = []
            for t, active, us in e.points:
                p = estimate_us(e.variant, g, dep, t, calibrations=same, skew=SKEW).us
                model_active = skewed_rank(e.num_experts, e.top_k, t, 1, SKEW)[0]
                cells.append(f"T {t}: {p:.0f}/{us:.0f} ({p / us - 1:+.0%}, active {model_active:.0f}/{active:.0f})")
            print(f"  {name} {e.variant.split(':')[1]}: " + "; ".join(cells))
    for ep in (8, 16):
        a, m = skewed_rank(256, 8, 512, ep, SKEW)
        print(f"E 256 top-8, 512 tokens per rank, EP {ep}: busiest rank {m:.2f}x the mean rank's pairs, {a:.0f} active")


if __name__ == "__main__":
    main()
