"""Expected kernel time per MoE layer call, from calibrations or a roofline.

Units: microseconds per layer call on one rank; tokens are per rank. Expected active experts
follow from uniform routing: with ``T * ep`` tokens each choosing ``k`` of ``E`` experts, a given
expert is hit with probability ``1 - (1 - k/E) ** (T * ep)``.
"""

from __future__ import annotations

from dataclasses import dataclass

from moe_oracle.cost.calibration import Calibration, features, fit, load_calibrations
from moe_oracle.model.types import MoELayerGroup
from moe_oracle.rules import VariantSpec
from moe_oracle.spec.deployment import Deployment

#: Roofline defaults where no calibration exists (fraction of datasheet rates, fixed launch cost).
ROOFLINE_BW_FRACTION = 0.6
ROOFLINE_FLOP_FRACTION = 0.4
ROOFLINE_FIXED_US = 60.0


@dataclass(frozen=True)
class Workload:
    """Token counts per rank that the ranking averages over, with weights.

    The default is one decode step (``decode_tokens``) and one full prefill chunk (the engine's
    per-rank token budget), equally weighted.
    """

    points: tuple[tuple[int, float], ...]
    label: str = "custom"

    @classmethod
    def default(cls, tokens_per_rank: int, decode_tokens: int = 32) -> Workload:
        decode = min(decode_tokens, tokens_per_rank)
        return cls(((decode, 0.5), (tokens_per_rank, 0.5)), label=f"decode {decode} + prefill {tokens_per_rank}")


@dataclass(frozen=True)
class CostEstimate:
    us: float
    basis: str
    measured: bool


def expected_active_experts(num_experts: int, top_k: int, tokens_per_rank: int, ep: int) -> float:
    """Expected distinct experts one rank runs for ``tokens_per_rank`` tokens on every rank."""
    local = num_experts / ep
    p_miss = (1.0 - top_k / num_experts) ** (tokens_per_rank * ep)
    return local * (1.0 - p_miss)


def _calibration_for(spec: VariantSpec, deployment: Deployment) -> Calibration | None:
    family = deployment.device.arch.family
    from moe_oracle.spec.device import DEVICES

    candidates = [
        c
        for c in load_calibrations()
        if c.variant == spec.key and c.device in DEVICES and DEVICES[c.device].arch.family == family
    ]
    if not candidates:
        return None
    ep = deployment.parallel.ep
    return min(candidates, key=lambda c: (c.device != deployment.device.name, abs(c.ep - ep), not c.measured))


def estimate_us(spec: VariantSpec, group: MoELayerGroup, deployment: Deployment, tokens: int) -> CostEstimate:
    """Expected microseconds for one layer call of ``tokens`` tokens per rank."""
    ep = deployment.parallel.ep
    active = expected_active_experts(group.num_experts, group.top_k, tokens, ep)
    x = features(
        tokens, active, group.expert_weight_bytes(), group.top_k, group.hidden_size, group.moe_intermediate_size
    )
    cal = _calibration_for(spec, deployment)
    if cal is not None:
        f = fit(cal)
        us = f.fixed_us + f.us_per_mb * x[1] + f.us_per_tflop * x[2]
        kind = "measured" if cal.measured else "published"
        basis = (
            f"{kind}, {cal.device} EP{cal.ep}, {cal.library}; {f.num_points}-point fit, max error "
            f"{f.max_rel_error:.0%} ({cal.source})"
        )
        return CostEstimate(us, basis, cal.measured)
    dev = deployment.device
    bw = (dev.hbm_tb_s or 3.0) * ROOFLINE_BW_FRACTION  # TB/s == MB/us
    peak = (dev.fp8_tflops or 1000.0) * ROOFLINE_FLOP_FRACTION  # TFLOP/s
    us = ROOFLINE_FIXED_US + x[1] / bw + x[2] / peak * 1e6
    return CostEstimate(us, f"roofline estimate for {dev.name} (no calibration; unmeasured)", False)


def workload_cost(spec: VariantSpec, group: MoELayerGroup, deployment: Deployment, workload: Workload) -> CostEstimate:
    """Weighted mean over the workload's token points."""
    total = 0.0
    weight = 0.0
    basis = ""
    measured = True
    for tokens, w in workload.points:
        est = estimate_us(spec, group, deployment, tokens)
        total += w * est.us
        weight += w
        basis = est.basis
        measured = measured and est.measured
    return CostEstimate(total / weight if weight else 0.0, basis, measured)
