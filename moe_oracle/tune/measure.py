"""Measure a :class:`~moe_oracle.tune.plan.TunePlan` on this machine's GPU (torch; the real kernels, the runtime).

Per distinct layer shape: random BF16 masters at full expert shape, quantized to the checkpoint's format (and run
through each declared load-time conversion a path needs); every path built through the runtime
(:func:`~moe_oracle.runtime.build.build_layer_for_choice`, :func:`~moe_oracle.runtime.build.build_nonfused`) for the
largest token count it is measured at. Per token count: fresh random tokens, the group's router on random logits
(no correction bias: every expert equally likely, as ``benchmarks/`` route; ``skew`` adds a Zipf logit offset),
every path's output checked against the FP32 reference before it is timed; then every path that passed timed
together by :func:`~moe_oracle.runtime.timing.time_interleaved` (CUDA graphs, L2 flushed, rounds interleaved in a
rotating order, median over every replay, SM clock and board power read after each round), or with the plan's
``timing`` steady each alone by :func:`~moe_oracle.runtime.timing.time_steady` (after
:data:`~moe_oracle.tune.plan.STEADY_WARM_S` of its own replays; the clock and instant power read after each replay).

A build, compile, launch or accuracy failure is a :class:`~moe_oracle.cost.local.TuneLimit` for that path and
token count, never a crash of the run, and never a cost.
"""

from __future__ import annotations

import datetime
import importlib
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import torch

from moe_oracle.cost.calibration import Calibration
from moe_oracle.cost.local import CalibrationFile, TimingBasis, TuneLimit, origin_text, profile_builds
from moe_oracle.model.types import MoELayerGroup
from moe_oracle.runtime import LayerConfig, calc_diff, reference_moe, route
from moe_oracle.runtime.accuracy import random_masters
from moe_oracle.runtime.actquant import fake_quant_input
from moe_oracle.runtime.build import build_layer_for_choice, build_nonfused, resolve_variant
from moe_oracle.runtime.quantize import quantize_experts
from moe_oracle.runtime.timing import Condition, copy_bandwidth, time_interleaved, time_steady
from moe_oracle.tune.plan import REPS, ROUNDS, STEADY_REPS, STEADY_WARM_S, GroupPlan, PathPlan, TunePlan

#: calc_diff bound against the FP32 reference on the staged input: every SM90 path stages FP8 per 128 (1e-3:
#: tests/runtime/test_gpu_backends.py REF_TOL; seen 2.2-4.0e-4)
REF_TOL = 1e-3


class NoGpuError(RuntimeError):
    """No CUDA device: tune measures this machine's GPU."""


@dataclass
class Row:
    """One token count of one group: each path's median us and per-round spread, the condition, the limits."""

    tokens: int
    active: int
    hottest_share: float
    us: dict[str, float] = field(default_factory=dict)
    spread: dict[str, float] = field(default_factory=dict)
    calc_diff: dict[str, float] = field(default_factory=dict)
    condition: dict[str, list[float]] = field(default_factory=dict)


def _first_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    for marker in ("static assertion failed", "error:"):
        at = text.find(marker)
        if at >= 0:
            return text[max(0, at - 120) : at + 280].replace("\n", " ")
    return text.splitlines()[0][:400] if text else type(exc).__name__


@contextmanager
def _compiler_log() -> Iterator[list[str]]:
    """Capture what the process writes to file descriptors 1 and 2 inside the block (a JIT compiler's log: DeepGEMM
    raises only "NVCC compilation failed" and nvcc prints the failed assertion); the text is in the list after."""
    import os
    import sys
    import tempfile

    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    text: list[str] = []
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), 1)
        os.dup2(tmp.fileno(), 2)
        try:
            yield text
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
            tmp.seek(0)
            text.append(tmp.read().decode("utf-8", "replace"))


def _failure(exc: BaseException, log: list[str]) -> str:
    """The compiler's error line when its log has one, else the exception's first line."""
    for line in "".join(log).splitlines():
        if "error:" in line:
            return line.strip()[:400]
    return _first_line(exc)


def zipf_offset(num_experts: int, exponent: float, gen: torch.Generator) -> torch.Tensor:
    """Logit offset ``-exponent * ln(rank)`` over a random ranking of the experts: with softmax scoring, expert of
    rank r is picked about ``r ** -exponent`` as often as the first (0 = balanced)."""
    rank = torch.randperm(num_experts, device="cuda", generator=gen).float() + 1.0
    return -exponent * torch.log(rank)


def _routing_group(g: MoELayerGroup) -> MoELayerGroup:
    """The group as a routed (not hash) layer: a hash layer's table is random here anyway."""
    return g if not g.routing.hash else g.model_copy(update={"routing": g.routing.model_copy(update={"hash": False})})


def _build(p: PathPlan, group: MoELayerGroup, stored: Any, converted: Any) -> Any:
    cfg = LayerConfig(group=group, max_tokens_per_rank=max(p.tokens), device="cuda")
    if p.fused:
        conv = p.conversion
        return build_layer_for_choice(p.key, cfg, stored, convert_from=conv.source if conv else None)
    cfg = LayerConfig(group=p.group, max_tokens_per_rank=max(p.tokens), device="cuda")
    return build_nonfused(p.key, cfg, converted if p.conversion else stored)


def _staged(p: PathPlan, layer: Any, x: torch.Tensor) -> torch.Tensor:
    if p.fused:
        spec, _ = resolve_variant(p.key)
        return fake_quant_input(x, spec.recipe.l1_input)
    return layer.staged_input(x)


def _close(layer: Any) -> None:
    inner = getattr(layer, "inner", layer)
    close = getattr(inner, "close", None)
    if close is not None:
        close()


def measure_group(
    gp: GroupPlan,
    limits: list[TuneLimit],
    *,
    skew: float,
    on_step: Callable[[str], None],
    timing: TimingBasis = TimingBasis.INTERLEAVED,
) -> tuple[dict[str, list[tuple[int, float | None, float]]], list[Row]]:
    """Time every path of ``gp`` (module docstring) on the ``timing`` basis; returns path -> points and the rows."""
    g = gp.group
    shape = (g.hidden_size, g.moe_intermediate_size, g.num_experts, g.top_k)

    def limit(key: str, t: int, why: str) -> None:
        limits.append(TuneLimit(key, t, *shape, why))

    w13, w2 = random_masters(g, torch.Generator(device="cuda").manual_seed(0))
    stored = quantize_experts(w13, w2, g.weight_quant)
    del w13, w2
    conversions = {p.conversion.label: p.conversion for p in gp.paths if p.conversion}
    converted = {}
    for label, conv in conversions.items():
        module, _, fn = conv.runtime.partition(":")
        converted[label], _ = getattr(importlib.import_module(module), fn)(stored)
    layers: dict[str, tuple[PathPlan, Any]] = {}
    for p in gp.paths:
        if not p.tokens:
            continue
        on_step(f"building {p.label}")
        try:
            layers[p.label] = (p, _build(p, g, stored, converted.get(p.conversion.label) if p.conversion else None))
        except Exception as exc:  # a build or buffer limit of the installed library
            for t in p.tokens:
                limit(p.label, t, f"build: {_first_line(exc)}")
    points: dict[str, list[tuple[int, float | None, float]]] = {label: [] for label in layers}
    rows = []
    gen = torch.Generator(device="cuda").manual_seed(1)
    rg = _routing_group(g)
    tokens = sorted({t for p, _ in layers.values() for t in p.tokens})
    try:
        for t in tokens:
            x = torch.randn(t, g.hidden_size, device="cuda", generator=gen).bfloat16()
            logits = torch.randn(t, g.num_experts, device="cuda", generator=gen)
            if skew:
                logits = logits + zipf_offset(g.num_experts, skew, gen)
            bias = torch.zeros(g.num_experts, device="cuda") if rg.routing.correction_bias else None
            ids, w = route(rg, logits, bias=bias)
            counts = torch.bincount(ids[ids >= 0].flatten(), minlength=g.num_experts)
            row = Row(t, int((counts > 0).sum()), float(counts.max()) / max(1, int(counts.sum())))
            rows_idx = torch.arange(min(t, 128), device="cuda")
            refs: dict[Any, torch.Tensor] = {}
            fns: dict[str, Callable[[], object]] = {}
            for label, (p, layer) in layers.items():
                if t not in p.tokens:
                    continue
                on_step(f"T={t} checking {label}")
                try:
                    with _compiler_log() as log:
                        try:
                            y = layer(x, ids, w)
                            torch.cuda.synchronize()
                        except Exception as exc:
                            failed: BaseException | None = exc
                        else:
                            failed = None
                    if failed is not None:
                        limit(label, t, f"call: {_failure(failed, log)}")
                        continue
                    xq = _staged(p, layer, x)
                    conv_label = p.conversion.label if p.conversion else ""
                    key = (p.fused, p.key if p.fused else "nonfused", conv_label)
                    if key not in refs:  # the path's own weights: a lossy conversion is the path's, not an error
                        weights = converted[conv_label] if conv_label else stored
                        refs[key] = reference_moe(xq[rows_idx], ids[rows_idx], w[rows_idx], weights, g.activation)
                    d = calc_diff(y[rows_idx].float(), refs[key])
                except Exception as exc:  # the kernel failed to compile or launch for this call
                    limit(label, t, f"call: {_first_line(exc)}")
                    continue
                if not (math.isfinite(d) and d < REF_TOL):
                    limit(label, t, f"wrong result: calc_diff {d:.2e} against the FP32 reference (bound {REF_TOL})")
                    continue
                row.calc_diff[label] = d
                fns[label] = partial(layer, x, ids, w)
            if fns:
                on_step(f"T={t} timing {len(fns)} paths {timing.value}")
                _time(fns, row, timing)
                for label in fns:
                    points[label].append((t, float(row.active), row.us[label]))
            rows.append(row)
    finally:
        for _, layer in layers.values():
            _close(layer)
        layers.clear()
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    return points, rows


def _time(fns: dict[str, Callable[[], object]], row: Row, timing: TimingBasis) -> None:
    """Time ``fns`` on the ``timing`` basis into ``row``: median us, spread ((max - min) / median of the per-round
    medians, or of the replays alone), and the SM clock and power read while timing."""
    cond = Condition()
    if timing is TimingBasis.STEADY:
        for label, st in time_steady(fns, warm_s=STEADY_WARM_S, reps=STEADY_REPS).items():
            row.us[label], row.spread[label] = st.us, st.spread
            cond.clocks_mhz += st.clocks_mhz
            cond.power_w += st.power_w
    else:
        for label, tm in time_interleaved(fns, rounds=ROUNDS, reps_per_round=REPS, condition=cond).items():
            row.us[label], row.spread[label] = tm.us, tm.spread
    row.condition = cond.to_json()


def _prefixed(on_step: Callable[[str], None], name: str, text: str) -> None:
    on_step(f"{name}: {text}")


def _nvml_stamp() -> dict[str, object]:
    try:
        import pynvml

        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
        drv = pynvml.nvmlSystemGetDriverVersion()
        return {
            "driver": drv.decode() if isinstance(drv, bytes) else drv,
            "max_sm_clock_mhz": pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_SM),
            "power_limit_w": pynvml.nvmlDeviceGetEnforcedPowerLimit(h) / 1000.0,
        }
    except Exception as exc:  # no NVML: the stamp says so
        return {"driver": f"unknown (NVML: {type(exc).__name__})"}


def measure(
    plan: TunePlan, *, skew: float = 0.0, on_step: Callable[[str], None] = lambda s: None
) -> tuple[CalibrationFile, dict[str, list[Row]]]:
    """Measure ``plan`` on GPU 0; the calibration file (unwritten) and, per group, its rows."""
    if not torch.cuda.is_available():
        raise NoGpuError("tune measures this machine's GPU: no CUDA device is visible (torch.cuda.is_available())")
    date = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    name = torch.cuda.get_device_name()
    libs = {lib: sorted(names)[0] for lib, names in profile_builds(plan.software).items() if names and lib != "torch"}
    stamp: dict[str, object] = {
        **_nvml_stamp(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "copy_tb_s": round(copy_bandwidth() / 1e12, 3),
        "timing": plan.timing_text(),
        "timing_basis": plan.timing.value,
        "skew_zipf": skew,
        "model": plan.model,
    }
    sw = plan.software
    versions = ", ".join(
        f"{lib} {b} ({sw.libraries[lib].dist or lib} {sw.libraries[lib].version})" for lib, b in libs.items()
    )
    limits: list[TuneLimit] = []
    entries: list[Calibration] = []
    rows: dict[str, list[Row]] = {}
    for gp in plan.groups:
        g = gp.group
        points, group_rows = measure_group(
            gp, limits, skew=skew, on_step=partial(_prefixed, on_step, g.name), timing=plan.timing
        )
        rows[g.name] = group_rows
        for p in gp.paths:
            pts = points.get(p.label, [])
            if not pts:
                continue
            shape = p.group
            entries.append(
                Calibration(
                    variant=p.key,
                    device=plan.device,
                    ep=1,
                    library=f"{versions}, torch {torch.__version__}",
                    measured=True,
                    source=f"moe-oracle tune {plan.model} on {name}, {date}"
                    + (f" (Zipf skew {skew:g})" if skew else "")
                    + (" (each path alone)" if plan.timing is TimingBasis.STEADY else ""),
                    hidden_size=shape.hidden_size,
                    moe_intermediate_size=shape.moe_intermediate_size,
                    num_experts=shape.num_experts,
                    top_k=shape.top_k,
                    expert_bytes=shape.expert_weight_bytes(),
                    points=tuple(pts),
                    origin=origin_text(date, plan.timing),
                )
            )
    cal = CalibrationFile(plan.device, name, date, libs, tuple(entries), tuple(limits), stamp)
    return cal, rows
