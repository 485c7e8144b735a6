"""``moe-oracle accuracy``: every variant's emulation against the FP32 reference on a model's shapes.

For a model's layer group (scaled down by ``scale`` unless real weights are given) this makes BF16
master weights (random, ``N(0, 1/K)`` per element with a log-normal per-row factor, like real
checkpoints' row norms; or dequantized from ``--weights``), quantizes them to each variant's
weight format with the bit-exact quantizers, routes random tokens with the family's router
(random logits and correction bias; a random ``tid2eid`` table on hash layers), runs the
variant's emulation twin and reports, per variant:

* ``calc_diff`` / ``rel_l2`` against the FP32 reference on the *same* quantized weights and the
  BF16 input (the error of the kernel's activation quantization and roundings);
* ``calc_diff_vs_master`` / ``rel_l2_vs_master`` against the FP32 reference on the BF16 master
  weights (adds the weight-format error).

A variant whose weight format differs from the model's checkpoint format gets the same masters
quantized to its own format; the row says so (``weights_note``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from moe_oracle.errors import BadInputError
from moe_oracle.model.types import ModelDescription, MoELayerGroup, QuantSpec, WeightFormat
from moe_oracle.numerics.fp4 import MxConvention
from moe_oracle.rules.recipe import ActQuant
from moe_oracle.runtime.errors import LayerInputError
from moe_oracle.runtime.interface import CheckpointExperts, LayerConfig
from moe_oracle.runtime.quantize import (
    BF16,
    FP8_BLOCK_FP32,
    FP8_BLOCK_UE8M0,
    MXFP4,
    MXFP8,
    NVFP4,
    dequantize_experts,
    quantize_experts,
)
from moe_oracle.runtime.reference import calc_diff, reference_moe, rel_l2, swiglu
from moe_oracle.runtime.routing import random_hash_table, route
from moe_oracle.runtime.tolerance import MAX_TOKENS, check_fits

if TYPE_CHECKING:
    from moe_oracle.rules import VariantSpec

#: Hidden size the default scale aims at (keeps the CPU run within seconds).
DEFAULT_HIDDEN = 512
H_MULTIPLE = 512
I_MULTIPLE = 256
HASH_VOCAB = 4096


@dataclass
class VariantAccuracy:
    variant: str
    key: str
    weights: str
    weights_note: str
    recipe: dict[str, Any]
    calc_diff: float
    rel_l2: float
    calc_diff_vs_master: float
    rel_l2_vs_master: float
    seconds: float


@dataclass
class AccuracyReport:
    model: str
    group: str
    layers: str
    hidden_size: int
    moe_intermediate_size: int
    num_experts: int
    top_k: int
    tokens: int
    scale: float
    seed: int
    weights_source: str
    routing: str
    rows: list[VariantAccuracy] = field(default_factory=list)
    #: ``variant: reason`` of each variant whose kernel cannot run this group (its twin refuses it too).
    refused: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["variants"] = out.pop("rows")
        return out


def default_scale(group: MoELayerGroup) -> float:
    return min(1.0, DEFAULT_HIDDEN / group.hidden_size)


def _round_to(value: float, multiple: int) -> int:
    return max(multiple, round(value / multiple) * multiple)


def scaled_group(group: MoELayerGroup, scale: float) -> MoELayerGroup:
    """``group`` with H and I scaled (multiples of 512 / 256, what every variant accepts) and E scaled
    (at least ``2 * top_k``, divisible by the routing groups)."""
    if not (0 < scale <= 1):
        raise BadInputError(f"--scale must be in (0, 1], got {scale}")
    if scale == 1.0:
        return group
    h = min(group.hidden_size, _round_to(group.hidden_size * scale, H_MULTIPLE))
    i = min(group.moe_intermediate_size, _round_to(group.moe_intermediate_size * scale, I_MULTIPLE))
    ng = group.routing.num_groups
    e = max(2 * group.top_k, round(group.num_experts * scale))
    e = min(group.num_experts, -(-e // ng) * ng)
    return group.model_copy(update={"hidden_size": h, "moe_intermediate_size": i, "num_experts": e})


def variant_weight_quant(spec: VariantSpec) -> tuple[QuantSpec, MxConvention]:
    """The checkpoint format a variant's kernel takes, and the MX convention to quantize masters with."""
    variant = spec.variant
    if variant.endswith("fp8xfp8") and variant.startswith("sm90"):
        return FP8_BLOCK_FP32, "deepgemm"
    if variant.endswith("fp8xfp8"):
        return MXFP8, "deepgemm"
    if variant.endswith("nvfp4"):
        return NVFP4, "deepgemm"
    if variant.endswith("bf16"):
        return BF16, "deepgemm"
    return MXFP4, "deepgemm"


def _same_format(a: QuantSpec, b: QuantSpec) -> bool:
    if a.format is not b.format:
        return False
    if a.format is WeightFormat.FP8_BLOCK:
        return a.block == b.block
    return True


def pick_group(model: ModelDescription, layer: int | None) -> MoELayerGroup:
    if layer is None:
        return model.main_group
    for g in model.layer_groups:
        if layer in g.layers:
            return g
    raise BadInputError(
        f"--layer {layer} is not a MoE layer of {model.model}",
        fix="use one of the layers `moe-oracle model` lists for it",
    )


def random_masters(group: MoELayerGroup, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """BF16 ``w13 [E, 2I, H]``, ``w2 [E, H, I]``: ``N(0, 1/K)`` with a log-normal (sigma 0.25) row factor.

    Drawn on ``gen``'s device (a CUDA generator draws a full-size layer in milliseconds, the CPU in tens of seconds).
    """
    e, h, i = group.num_experts, group.hidden_size, group.moe_intermediate_size
    dev = gen.device
    w13 = torch.randn(e, 2 * i, h, generator=gen, device=dev) * (h**-0.5)
    w13 *= torch.exp(0.25 * torch.randn(e, 2 * i, 1, generator=gen, device=dev))
    w2 = torch.randn(e, h, i, generator=gen, device=dev) * (i**-0.5)
    w2 *= torch.exp(0.25 * torch.randn(e, h, 1, generator=gen, device=dev))
    return w13.to(torch.bfloat16), w2.to(torch.bfloat16)


def _calibrate_l2_input_scale(
    x: torch.Tensor, ids: torch.Tensor, w: torch.Tensor, w13: torch.Tensor, group: MoELayerGroup, weighted: bool
) -> float:
    """``amax / 2688`` of the (weighted) SwiGLU output over the routed tokens: a static NVFP4 input scale."""
    amax = 0.0
    xf = x.float()
    for e in torch.unique(ids[ids >= 0]).tolist():
        rows, slots = torch.nonzero(ids == e, as_tuple=True)
        a = swiglu(xf[rows] @ w13[e].float().t(), group.activation)
        if weighted:
            a = a * w[rows, slots].unsqueeze(1)
        amax = max(amax, float(a.abs().max()))
    return max(amax, 1e-12) / (6.0 * 448.0)


def run_accuracy(
    model: ModelDescription,
    *,
    variants: list[str] | None = None,
    tokens: int = 64,
    scale: float | None = None,
    weights_dir: str | Path | None = None,
    layer: int | None = None,
    seed: int = 0,
    device: str = "cpu",
    on_variant: Callable[[int, int, str], None] | None = None,
) -> AccuracyReport:
    """Every variant's error on ``model``'s shapes (see the module docstring); ``on_variant(done, total,
    variant)`` is called before each variant runs (progress)."""
    from moe_oracle.registry import load_registry
    from moe_oracle.runtime.build import build_layer

    if not 1 <= tokens <= MAX_TOKENS:
        raise BadInputError(f"--tokens {tokens} is outside 1..{MAX_TOKENS}", fix=f"pass 1 to {MAX_TOKENS} tokens")
    if not 0 <= seed < 2**64:
        raise BadInputError(f"--seed {seed} is outside 0..2**64-1", fix="pass a seed in that range")
    reg = load_registry()
    specs = [v for v in reg.variants if v.runtime or v.layout]  # engine-native variants have no twin
    if variants:
        wanted = {v.strip().lower().replace("-", "_") for v in variants}
        unknown = wanted - {s.variant for s in specs} - {s.key for s in specs}
        if unknown:
            raise BadInputError(
                f"--variants: unknown {', '.join(sorted(unknown))}",
                fix="use all or a comma list of: " + ", ".join(s.variant for s in specs),
            )
        specs = [s for s in specs if s.variant in wanted or s.key in wanted]
    base = pick_group(model, layer)
    gen = torch.Generator().manual_seed(seed)
    checkpoint: CheckpointExperts | None = None
    if weights_dir is not None:
        from moe_oracle.runtime.checkpoint import load_layer_experts

        lay = base.layers[0] if layer is None else layer
        from moe_oracle.runtime.checkpoint import find_layer_tensors

        available = sorted(find_layer_tensors(weights_dir, lay))
        n = len(available) if scale is None else max(2 * base.top_k, round(base.num_experts * scale))
        experts_kept = max(1, min(n, len(available)))
        check_fits(base.model_copy(update={"num_experts": experts_kept}), tokens, 1.0, device)
        checkpoint, _ = load_layer_experts(weights_dir, lay, available[:experts_kept])
        w13f, w2f = dequantize_experts(checkpoint)
        group = base.model_copy(
            update={
                "hidden_size": int(w13f.shape[2]),
                "moe_intermediate_size": int(w13f.shape[1] // 2),
                "num_experts": checkpoint.num_experts,
                "top_k": min(base.top_k, checkpoint.num_experts),
            }
        )
        masters = (w13f.to(torch.bfloat16), w2f.to(torch.bfloat16))
        source = f"{weights_dir} (layer {lay}, experts 0..{checkpoint.num_experts - 1})"
        used_scale = 1.0 if scale is None else scale
        ckpt_quant = checkpoint.quant
    else:
        used_scale = default_scale(base) if scale is None else scale
        group = scaled_group(base, used_scale)
        check_fits(group, tokens, used_scale, device)
        masters = random_masters(group, gen)
        source = "random BF16 masters, N(0, 1/K) x log-normal row factor"
        ckpt_quant = base.weight_quant

    h, e, k = group.hidden_size, group.num_experts, group.top_k
    x = torch.randn(tokens, h, generator=gen).to(torch.bfloat16)
    logits = torch.randn(tokens, e, generator=gen)
    bias = 0.1 * torch.randn(e, generator=gen) if group.routing.correction_bias else None
    token_ids = table = None
    if group.routing.hash:
        table = random_hash_table(HASH_VOCAB, e, k, generator=gen)
        token_ids = torch.randint(0, HASH_VOCAB, (tokens,), generator=gen)
    ids, w = route(group, logits, bias=bias, token_ids=token_ids, hash_table=table)
    r = group.routing
    routing = r.scoring.value + (" hash" if r.hash else "") + (" +bias" if r.correction_bias else "")
    routing += f" rsf {r.routed_scaling_factor:g}"

    ref_master = reference_moe(x, ids, w, (masters[0].float(), masters[1].float()), group.activation)
    report = AccuracyReport(
        model=model.model,
        group=group.name,
        layers=",".join(map(str, group.layers[:3])) + ("..." if len(group.layers) > 3 else ""),
        hidden_size=h,
        moe_intermediate_size=group.moe_intermediate_size,
        num_experts=e,
        top_k=k,
        tokens=tokens,
        scale=used_scale,
        seed=seed,
        weights_source=source,
        routing=routing,
    )
    cache: dict[tuple[str, str], CheckpointExperts] = {}
    config = LayerConfig(group=group, max_tokens_per_rank=tokens, device=device)
    for index, spec in enumerate(specs):
        if on_variant is not None:
            on_variant(index, len(specs), spec.variant)
        t0 = time.perf_counter()
        quant, convention = variant_weight_quant(spec)
        if checkpoint is not None and _same_format(checkpoint.quant, quant):
            experts, note = checkpoint, "checkpoint weights as stored"
        else:
            if quant.format is WeightFormat.FP8_BLOCK and ckpt_quant.format is WeightFormat.FP8_BLOCK:
                quant = FP8_BLOCK_UE8M0 if ckpt_quant.scale_format.value == "ue8m0" else FP8_BLOCK_FP32
            cache_key = (quant.label(), convention)
            cached = cache.get(cache_key)
            if cached is not None:
                experts = cached
            else:
                l2_scale = None
                if quant.format is WeightFormat.NVFP4:
                    weighted = spec.recipe.weight_before_l2
                    l2_scale = _calibrate_l2_input_scale(x, ids, w, masters[0], group, weighted)
                experts = quantize_experts(
                    masters[0], masters[1], quant, convention=convention, w2_input_scale=l2_scale
                )
                cache[cache_key] = experts
            if _same_format(ckpt_quant, quant):
                note = f"BF16 masters quantized to {quant.label()} (the checkpoint's format)"
            else:
                note = f"BF16 masters quantized to {quant.label()}; the model's checkpoint is {ckpt_quant.label()}"
        try:
            layer_obj = build_layer(spec, config, experts, emulate=True)
        except LayerInputError as exc:  # the kernel's contract excludes the group (expert bias, ...)
            report.refused.append(f"{spec.variant}: {exc.message}")
            continue
        y = layer_obj(x, ids, w).float()
        ref = reference_moe(x, ids, w, experts, group.activation)
        rec = spec.recipe
        report.rows.append(
            VariantAccuracy(
                variant=spec.variant,
                key=spec.key,
                weights=experts.quant.label(),
                weights_note=note,
                recipe={
                    "l1_input": rec.l1_input.value,
                    "l2_input": rec.l2_input.value,
                    "weight_before_l2": rec.weight_before_l2,
                    "expert_output_bf16": rec.expert_output_bf16,
                },
                calc_diff=_finite(calc_diff(y, ref)),
                rel_l2=_finite(rel_l2(y, ref)),
                calc_diff_vs_master=_finite(calc_diff(y, ref_master)),
                rel_l2_vs_master=_finite(rel_l2(y, ref_master)),
                seconds=round(time.perf_counter() - t0, 3),
            )
        )
    if not report.rows and report.refused:
        raise LayerInputError(
            f"no variant's kernel can run layer group '{group.name}' of {model.model}: " + "; ".join(report.refused),
            fix="no mega-MoE kernel serves this model; the engine's own MoE runs it (see moe-oracle select)",
        )
    return report


def _finite(v: float) -> float:
    return v if math.isfinite(v) else float("nan")


def recipe_label(recipe: dict[str, Any]) -> str:
    acts = f"{ActQuant(recipe['l1_input']).value}->{ActQuant(recipe['l2_input']).value}"
    return acts + (" w@L1" if recipe["weight_before_l2"] else " w@out")
