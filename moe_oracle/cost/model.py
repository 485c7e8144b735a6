"""Expected kernel time per MoE layer call, from calibrations or a roofline.

Units: microseconds per layer call on one rank; tokens are per rank. Expected active experts
follow from uniform routing (:mod:`moe_oracle.cost.active_experts`).
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass

from moe_oracle.cost.active_experts import expected_active_experts, skewed_rank
from moe_oracle.cost.calibration import Calibration, features, fit_pooled, load_calibrations
from moe_oracle.cost.held_out import HeldOutError, held_out_error
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
    #: routing skew: router logits offset by ``-skew * ln(rank)`` over a random expert ranking, as
    #: ``moe-oracle tune --skew`` measures it (0: every expert equally likely); ``...@skew=S`` in :meth:`parse`
    skew: float = 0.0

    @classmethod
    def default(cls, tokens_per_rank: int, decode_tokens: int = 32) -> Workload:
        decode = min(decode_tokens, tokens_per_rank)
        return cls(((decode, 0.5), (tokens_per_rank, 0.5)), label=f"mixed: decode {decode} + prefill {tokens_per_rank}")

    @classmethod
    def parse(cls, text: str, tokens_per_rank: int, decode_tokens: int = 32) -> Workload:
        """``decode`` (a decode step of ``decode_tokens`` per rank), ``prefill`` (a full chunk of
        ``tokens_per_rank``), ``mixed`` (both, equal weight) or a histogram ``T:w,T:w,...``."""
        name = text.strip().lower()
        name, sep, tail = name.partition("@")
        if sep:
            key, eq, value = tail.partition("=")
            try:
                skew = float(value) if key.strip() == "skew" and eq else float("nan")
            except ValueError:
                skew = float("nan")
            if not 0.0 <= skew <= 4.0:
                raise ValueError(f"{tail!r}: the routing skew is @skew=S with 0 <= S <= 4 (e.g. mixed@skew=1.2)")
            base = cls.parse(name, tokens_per_rank, decode_tokens)
            return cls(base.points, f"{base.label}, routing skew {skew:g}", skew)
        decode = min(decode_tokens, tokens_per_rank)
        if name == "decode":
            return cls(((decode, 1.0),), label=f"decode {decode}")
        if name == "prefill":
            return cls(((tokens_per_rank, 1.0),), label=f"prefill {tokens_per_rank}")
        if name == "mixed":
            return cls.default(tokens_per_rank, decode_tokens)
        points = []
        for part in name.split(","):
            t, sep, w = part.partition(":")
            try:
                tokens, weight = int(t), float(w) if sep else 1.0
            except ValueError:
                raise ValueError(f"{part!r} is not T:weight") from None
            if tokens < 1 or tokens > tokens_per_rank or not weight > 0:
                raise ValueError(f"{part!r}: need 1 <= T <= {tokens_per_rank} (the per-rank budget) and weight > 0")
            points.append((tokens, weight))
        return cls(tuple(points), label=f"histogram {name}")


@dataclass(frozen=True)
class CostEstimate:
    """Expected microseconds per layer call, what they rest on (``basis``, one line), whether that is a measurement
    (``measured``: calibrated points or a fit to them, not a roofline) and whether the estimate came from other shapes
    (``transferred``: a fit over shapes other than this one, or a roofline): such an estimate is what
    :mod:`moe_oracle.cost.near_tie` bands. ``held_out``: for a fit over other shapes, how far that path's fit on the
    device class was off on shapes it was not given (:mod:`moe_oracle.cost.held_out`; None where none were scored)."""

    us: float
    basis: str
    measured: bool
    transferred: bool = False
    held_out: HeldOutError | None = None


def _calibrations_for(
    spec: VariantSpec | str, deployment: Deployment, calibrations: Sequence[Calibration] | None = None
) -> tuple[Calibration, ...]:
    """The variant's calibrations on the closest device class and EP (this device first, then the nearest
    EP, then measured before published): every shape measured there. ``calibrations`` defaults to the
    package's data."""
    family = deployment.device.arch.family
    from moe_oracle.spec.device import DEVICES

    key = spec if isinstance(spec, str) else spec.key
    candidates = [
        c
        for c in (load_calibrations() if calibrations is None else calibrations)
        if c.variant == key and c.device in DEVICES and DEVICES[c.device].arch.family == family
    ]
    ep = deployment.parallel.ep

    def closeness(c: Calibration) -> tuple[bool, int, bool]:
        return (c.device != deployment.device.name, abs(c.ep - ep), not c.measured)

    if not candidates:
        return ()
    best = min(map(closeness, candidates))
    return tuple(c for c in candidates if closeness(c) == best)


def _same_shape(cal: Calibration, group: MoELayerGroup) -> bool:
    return (cal.hidden_size, cal.moe_intermediate_size, cal.num_experts, cal.top_k) == (
        group.hidden_size,
        group.moe_intermediate_size,
        group.num_experts,
        group.top_k,
    )


def interpolate(cal: Calibration, tokens: int) -> float:
    """Measured time at ``tokens``: piecewise linear in log2(T) between points; below the first point its
    time; above the last, linear in T along the last two points (the compute-bound end grows with T)."""
    pts = sorted((t, us) for t, _, us in cal.points)
    if tokens <= pts[0][0]:
        return pts[0][1]
    for (t0, u0), (t1, u1) in itertools.pairwise(pts):
        if tokens <= t1:
            f = (math.log2(tokens) - math.log2(t0)) / (math.log2(t1) - math.log2(t0))
            return u0 + f * (u1 - u0)
    if len(pts) < 2:
        return pts[-1][1]
    (t0, u0), (t1, u1) = pts[-2], pts[-1]
    return u1 + max(u1 - u0, 0.0) / (t1 - t0) * (tokens - t1)


def estimate_us(
    spec: VariantSpec | str,
    group: MoELayerGroup,
    deployment: Deployment,
    tokens: int,
    calibrations: Sequence[Calibration] | None = None,
    skew: float = 0.0,
) -> CostEstimate:
    """Expected microseconds for one layer call of ``tokens`` tokens per rank.

    ``spec`` is a variant or the key of another calibrated path (``nonfused:...``). With a
    calibration of this shape and EP the measured points are interpolated (log2 T); otherwise a
    fit from the closest device and EP (:data:`~moe_oracle.cost.calibration.TERMS`) is evaluated at this group's
    experts, bytes, FLOPs and token pairs: this
    shape's own fit where it was measured there (at another EP), else one fit over every shape
    measured there; without any calibration, a roofline estimate from datasheet rates is returned
    (marked unmeasured). ``calibrations`` replaces the package's data (a benchmark scoring
    the model on calibrations it was not given, e.g. another shape's).
    """
    ep = deployment.parallel.ep
    active = expected_active_experts(group.num_experts, group.top_k, tokens, ep)
    busy, skewed = float(tokens), ""
    if skew > 0:  # the busiest rank sets the call's time: its active experts and its share of the pairs
        active, mult = skewed_rank(group.num_experts, group.top_k, tokens, ep, skew)
        busy = tokens * mult
        skewed = f"; routing skew {skew:g}: busiest rank {mult:.2f}x the pairs, {active:.0f} active experts"
    key = spec if isinstance(spec, str) else spec.key
    x = features(
        key,
        busy,
        active,
        group.expert_weight_bytes(),
        group.top_k,
        group.hidden_size,
        group.moe_intermediate_size,
        group.num_experts,
        max(ep, 1),
    )
    cals = _calibrations_for(spec, deployment, calibrations)
    same = next((c for c in cals if _same_shape(c, group)), None)
    if same is not None and same.ep == ep and not skew:
        kind = "measured" if same.measured else "published"
        basis = f"{kind} points, {same.device} EP{same.ep}, {same.library} ({same.source})"
        if same.origin:
            basis = f"{same.origin}: {same.device} EP{same.ep}, {same.library}, {len(same.points)} points"
        return CostEstimate(interpolate(same, tokens), basis, same.measured)
    if cals:
        fitted = (same,) if same is not None else cals  # this shape's own fit, else what the shapes share
        f = fit_pooled(fitted)
        us = f.predict(x)
        head = fitted[0]
        kind = "measured" if head.measured else "published"
        shapes = "this shape" if same is not None else f"{len(fitted)} other shape{'s' if len(fitted) > 1 else ''}"
        basis = (
            f"{kind}, {head.device} EP{head.ep}, {head.library}; {f.num_points}-point fit over {shapes}, max error "
            f"{f.max_rel_error:.0%} on those points ({_sources(fitted)})"
        )
        local = [c for c in fitted if c.origin]
        if local:
            where = "this shape" if same is not None else f"{len(local)} of the {len(fitted)} shapes"
            basis = f"{local[0].origin} ({where}), fit to EP{ep}: " + basis
        # scored on this device's measured points at their EP under uniform routing only: another EP's error on a new
        # shape, or a skewed workload's, is unknown
        scored = same is None and head.measured and head.ep == ep and not skew
        held = held_out_error(head.device, ep, key) if scored else None
        if held is not None:
            basis += f"; {held.phrase()}"
        return CostEstimate(us, basis + skewed, head.measured, transferred=same is None, held_out=held)
    dev = deployment.device
    bw = (dev.hbm_tb_s or 3.0) * ROOFLINE_BW_FRACTION  # TB/s == MB/us
    peak = (dev.fp8_tflops or 1000.0) * ROOFLINE_FLOP_FRACTION  # TFLOP/s
    us = ROOFLINE_FIXED_US + x[3] / bw + x[5] / peak * 1e6
    return CostEstimate(us, f"roofline estimate for {dev.name} (no calibration; unmeasured){skewed}", False, True)


def _sources(cals: Sequence[Calibration]) -> str:
    """Where the points came from: one calibration's source, or the folder that holds every one's sweep file."""
    files = sorted({c.source.split(" (")[0] for c in cals})
    if len(files) == 1:
        return cals[0].source
    folder = os.path.commonpath(files)
    return f"{len(files)} sweeps in {folder}/" if folder else "; ".join(files)


def workload_cost(
    spec: VariantSpec | str, group: MoELayerGroup, deployment: Deployment, workload: Workload
) -> CostEstimate:
    """Weighted mean over the workload's token points (measured where every point is, transferred where any is)."""
    total = 0.0
    weight = 0.0
    basis = ""
    measured, transferred = True, False
    held: HeldOutError | None = None
    for tokens, w in workload.points:
        est = estimate_us(spec, group, deployment, tokens, skew=workload.skew)
        total += w * est.us
        weight += w
        basis = est.basis
        measured = measured and est.measured
        transferred = transferred or est.transferred
        held = held or est.held_out
    return CostEstimate(total / weight if weight else 0.0, basis, measured, transferred, held)
