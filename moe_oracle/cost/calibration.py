"""Calibration points as data, and the fit the cost model uses for shapes nobody measured.

A calibration entry holds kernel times (microseconds) for one variant on one device class at
one EP size and one shape. :func:`fit` solves, by non-negative least squares on relative error,

    t(T) = fixed + a * experts_per_rank + b * active_expert_MB + c * TFLOP + d * token_pair_MB

per entry (:func:`fit`) or over the entries of several shapes at once (:func:`fit_pooled`): one term per
kind of work the fused kernel (and the non-fused graph) does in a call, per rank: a launch and grid
barrier; bookkeeping over every local expert, active or not (the expert-count scan, per-expert
signals and offsets: on the H200 a 384-expert layer costs about 40 us more than a 256-expert one with
the same 8 active experts); streaming the active experts' weights; the FP8 MMA work; and moving each
token-expert pair's activations (FP8 in, BF16 out). Terms whose coefficient would come out negative
are dropped and the fit redone. ``benchmarks/cost_model_loso.py`` scores it on shapes it was not fit on.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from moe_oracle.cost.active_experts import expected_active_experts


@dataclass(frozen=True)
class Calibration:
    variant: str
    device: str
    ep: int
    library: str
    measured: bool
    source: str
    hidden_size: int
    moe_intermediate_size: int
    num_experts: int
    top_k: int
    expert_bytes: int
    points: tuple[tuple[int, float | None, float], ...]
    #: "measured on this machine (date)" for an entry of a local calibration file (:mod:`moe_oracle.cost.local`)
    origin: str = ""

    @classmethod
    def from_entry(cls, e: dict) -> Calibration:
        """One entry of ``calibration.json``."""
        s = e["shape"]
        return cls(
            variant=e["variant"],
            device=e["device"],
            ep=e["ep"],
            library=e["library"],
            measured=e["measured"],
            source=e["source"],
            hidden_size=s["hidden_size"],
            moe_intermediate_size=s["moe_intermediate_size"],
            num_experts=s["num_experts"],
            top_k=s["top_k"],
            expert_bytes=s["expert_bytes"],
            points=tuple((int(t), a, float(us)) for t, a, us in e["points"]),
        )

    def to_entry(self) -> dict:
        """The ``calibration.json`` entry (inverse of :meth:`from_entry`)."""
        shape = ("hidden_size", "moe_intermediate_size", "num_experts", "top_k", "expert_bytes")
        head = ("variant", "device", "ep", "library", "measured", "source")
        return {
            **{k: getattr(self, k) for k in head},
            "shape": {k: getattr(self, k) for k in shape},
            "points": [list(p) for p in self.points],
        }


#: the fit's terms, in the order :func:`features` returns them
TERMS = ("fixed", "per local expert", "per active-expert MB", "per TFLOP", "per token-pair MB")


@dataclass(frozen=True)
class Fit:
    """Coefficients (us per unit of each of :data:`TERMS`), the worst relative error on the points fit, their count."""

    coef: tuple[float, ...]
    max_rel_error: float
    num_points: int

    @property
    def fixed_us(self) -> float:
        return self.coef[0]

    def predict(self, x: tuple[float, ...]) -> float:
        """Microseconds for the :func:`features` ``x``."""
        return sum(c * v for c, v in zip(self.coef, x, strict=True))


#: The entries of the local calibration file the current decision uses (set by
#: :func:`moe_oracle.cost.local.active_for`); they come before the package's.
ACTIVE_LOCAL: ContextVar[tuple[Calibration, ...]] = ContextVar("moe_oracle_local_calibration", default=())


def load_calibrations() -> tuple[Calibration, ...]:
    """The local entries in use (if any), then the package's (``moe_oracle/data/calibration.json``)."""
    return ACTIVE_LOCAL.get() + _load()


@lru_cache(maxsize=1)
def _load() -> tuple[Calibration, ...]:
    text = resources.files("moe_oracle.data").joinpath("calibration.json").read_text(encoding="utf-8")
    return tuple(Calibration.from_entry(e) for e in json.loads(text)["entries"])


def features(
    tokens: float, active: float, expert_bytes: int, top_k: int, hidden: int, inter: int, experts_per_rank: int
) -> tuple[float, ...]:
    """The :data:`TERMS` for one call of ``tokens`` tokens per rank: (1, local experts, active expert MB per rank,
    TFLOP per rank, token-pair activation MB per rank: T x top-k x H x (1 byte in + 2 bytes out))."""
    flops = 2.0 * tokens * top_k * 3 * hidden * inter
    pairs_mb = tokens * top_k * hidden * 3 / 1e6
    return (1.0, float(experts_per_rank), active * expert_bytes / 1e6, flops / 1e12, pairs_mb)


def _solve(rows: Sequence[Sequence[float]], ys: Sequence[float], use: tuple[bool, ...]) -> list[float]:
    """Least squares on relative error over the terms ``use`` marks (the others get 0)."""
    idx = [i for i, u in enumerate(use) if u]
    n = len(idx)
    ata = [[0.0] * n for _ in range(n)]
    aty = [0.0] * n
    for row, y in zip(rows, ys, strict=False):
        w = 1.0 / y  # relative error
        scaled = [row[i] * w for i in idx]
        for a in range(n):
            aty[a] += scaled[a] * y * w
            for b in range(n):
                ata[a][b] += scaled[a] * scaled[b]
    # Gaussian elimination with partial pivoting.
    m = [ata[i] + [aty[i]] for i in range(n)]
    coef = [0.0] * len(use)
    for col in range(n):
        piv = max(range(col, n), key=lambda r: abs(m[r][col]))
        m[col], m[piv] = m[piv], m[col]
        if abs(m[col][col]) < 1e-30:
            return coef
        for r in range(n):
            if r != col:
                f = m[r][col] / m[col][col]
                m[r] = [x - f * y for x, y in zip(m[r], m[col], strict=False)]
    for k, i in enumerate(idx):
        coef[i] = m[k][n] / m[k][k]
    return coef


@dataclass(frozen=True)
class DecodeFit:
    """``t = fixed_us + us_per_expert * active experts`` over the decode points (T <= ``max_tokens``)."""

    fixed_us: float
    us_per_expert: float
    max_rel_error: float
    num_points: int


def decode_fit(cal: Calibration, max_tokens: int = 128) -> DecodeFit:
    """Least-squares (relative error) fit of a fixed cost plus a cost per active expert to the points with
    ``T <= max_tokens`` (active experts as measured, else expected from uniform routing)."""
    rows, ys = [], []
    for tokens, active, us in cal.points:
        if tokens <= max_tokens:
            a = active if active is not None else expected_active_experts(cal.num_experts, cal.top_k, tokens, cal.ep)
            rows.append((1.0, float(a)))
            ys.append(us)
    if len(ys) < 2:
        raise ValueError(f"{cal.variant}: fewer than two points with T <= {max_tokens}")
    coef = _solve(rows, ys, (True, True))
    err = max(abs(coef[0] + coef[1] * r[1] - y) / y for r, y in zip(rows, ys, strict=True))
    return DecodeFit(coef[0], coef[1], err, len(ys))


def fit(cal: Calibration) -> Fit:
    """Fit the model to ``cal``'s points."""
    return fit_pooled((cal,))


def calibration_features(cal: Calibration) -> list[tuple[tuple[float, ...], float]]:
    """(features, measured us) of every point of ``cal`` (active experts as measured, else expected)."""
    out = []
    for tokens, active, us in cal.points:
        if active is None:
            active = expected_active_experts(cal.num_experts, cal.top_k, tokens, cal.ep)
        shape = (cal.expert_bytes, cal.top_k, cal.hidden_size, cal.moe_intermediate_size, cal.num_experts // cal.ep)
        out.append((features(tokens, active, *shape), us))
    return out


@lru_cache(maxsize=64)
def fit_pooled(cals: tuple[Calibration, ...], terms: tuple[int, ...] | None = None) -> Fit:
    """Fit the model to the points of several calibrations at once (one variant, several shapes): each point's
    features come from its own shape, so the coefficients are what the shapes share. One shape cannot tell a
    cost per local expert from the fixed cost, nor a cost per token pair from one per TFLOP (each pair is
    proportional there): its fit has the fixed, MB and TFLOP terms; with fewer points than that, fixed and MB.
    ``terms`` (indices into :data:`TERMS`) restricts the fit to those terms (a benchmark scoring a smaller model)."""
    points = [p for cal in cals for p in calibration_features(cal)]
    rows, ys = [r for r, _ in points], [y for _, y in points]
    shapes = {(c.hidden_size, c.moe_intermediate_size, c.num_experts // c.ep, c.top_k) for c in cals}
    if terms is not None:
        use = [i in terms for i in range(len(TERMS))]
    else:
        use = [True] * len(TERMS) if len(shapes) > 1 else [True, False, True, True, False]
        if len(rows) < sum(use):
            use = [True, False, True, False, False]
    coef = _solve(rows, ys, tuple(use))
    while any(c < 0 for c in coef) and sum(use) > 1:
        worst = min(range(len(use)), key=lambda i: coef[i] if use[i] else float("inf"))
        use[worst] = False
        coef = _solve(rows, ys, tuple(use))
    coef = [max(c, 0.0) for c in coef]
    fitted = Fit(tuple(coef), 0.0, len(ys))
    err = max(abs(fitted.predict(r) - y) / y for r, y in zip(rows, ys, strict=True))
    return Fit(fitted.coef, err, len(ys))
