"""Does the deployment fit: the memory one rank needs, against the engine's share of one GPU.

Per rank: the routed experts at the rank's share (``tp*dp`` ranks hold one copy of the MoE
layers: ``ep`` ways by expert, ``tp*dp/ep`` ways within an expert), in the format they run in
(after a chosen load-time conversion); every other weight (:mod:`moe_oracle.model.footprint`),
divided over ``tp`` (attention heads, vocabulary) and ``pp`` (layers); the symmetric buffers or
heaps the plan sizes (given by the caller, from the backends' declared sizing); and the engine's
runtime reserve (CUDA graphs and activations, :data:`RESERVE`). What remains of the engine's memory
share is the KV cache; the longest single sequence it holds is reported.

A deployment whose weights, buffers and reserve exceed the share does not fit
(``DEPLOYMENT_MEMORY_EXCEEDED``, with the smallest layout that does); one whose KV cache holds less
than the model's context for one sequence fits only with a shorter ``--max-model-len``
(``KV_CACHE_TOO_SMALL``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from moe_oracle.decide.selection import Decision
from moe_oracle.model.types import ModelDescription, MoELayerGroup
from moe_oracle.rules import Conversion, Engine, Reason, ReasonCode
from moe_oracle.spec.deployment import Deployment

GIB = 1 << 30


@dataclass(frozen=True)
class MemoryShare:
    """The share of a GPU's memory an engine takes for weights, buffers, activations and KV cache."""

    flag: str | None
    fraction: float
    source: str
    includes_reserve: bool = True  # False: CUDA graphs and activations live outside the share (SGLang)


#: Each engine's default memory share (``flag`` sets it on the engine's command line).
MEMORY_SHARE: dict[Engine, MemoryShare] = {
    Engine.VLLM: MemoryShare(
        "--gpu-memory-utilization",
        0.9,
        "vLLM's CacheConfig.gpu_memory_utilization default (https://docs.vllm.ai/en/latest/configuration/engine_args.html)",
    ),
    Engine.SGLANG: MemoryShare(
        "--mem-fraction-static",
        0.81,
        "SGLang picks --mem-fraction-static itself when it is not given (from the GPU memory, TP size and CUDA-graph "
        "batch); 0.81 is moe-oracle's assumption (SGLang's older figure for TP 8); the share holds weights and KV "
        "cache only, CUDA graphs and activations live outside it; pass --memory-fraction with the value the server "
        "logs",
        includes_reserve=False,
    ),
    Engine.NONE: MemoryShare(None, 0.9, "moe-oracle's runtime: the same share as vLLM's default"),
}

#: The runtime reserve inside the engine's share: CUDA graphs (a fixed allowance) and the activation
#: peak of one step (``ACTIVATION_BYTES_PER_TOKEN_PER_HIDDEN`` bytes per token per hidden unit at the
#: per-rank token budget). moe-oracle's estimates, stated as such; an engine measures its own at start.
RESERVE_CUDA_GRAPHS = 2 * GIB
ACTIVATION_BYTES_PER_TOKEN_PER_HIDDEN = 24
RESERVE_SOURCE = (
    "estimate: CUDA graphs 2 GiB + activations 24 B x tokens per rank x hidden (bf16 hidden states, residual, "
    "router logits and expert inputs of one step); engines profile their own at start"
)
#: Below this many tokens of KV cache for one sequence a deployment is not worth starting.
MIN_CONTEXT = 4096


@dataclass(frozen=True)
class FitItem:
    """One line of the per-rank budget."""

    label: str
    bytes: int
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "bytes": self.bytes, "gib": round(self.bytes / GIB, 2), "detail": self.detail}


@dataclass(frozen=True)
class Fit:
    """The memory verdict for one rank of one deployment."""

    device: str
    hbm_bytes: int
    share: MemoryShare
    items: tuple[FitItem, ...]
    kv_bytes: int
    kv_bytes_per_token: int | None
    kv_bytes_fixed: int
    max_context: int | None
    model_context: int | None
    mtp_built: bool
    reasons: tuple[Reason, ...] = ()
    notes: tuple[str, ...] = field(default=())

    @property
    def usable_bytes(self) -> int:
        return int(self.share.fraction * self.hbm_bytes)

    @property
    def needed_bytes(self) -> int:
        return sum(i.bytes for i in self.items)

    @property
    def fits(self) -> bool:
        return not any(r.code is ReasonCode.DEPLOYMENT_MEMORY_EXCEEDED for r in self.reasons)

    @property
    def verdict(self) -> str:
        if not self.fits:
            return "DOES NOT FIT"
        if self.reasons:
            return "FITS with a shorter context"
        return "FITS"

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "fits": self.fits,
            "device": self.device,
            "hbm_bytes": self.hbm_bytes,
            "memory_fraction": self.share.fraction,
            "memory_fraction_flag": self.share.flag,
            "memory_fraction_source": self.share.source,
            "usable_bytes": self.usable_bytes,
            "per_rank": [i.to_json() for i in self.items],
            "needed_bytes": self.needed_bytes,
            "kv_cache_bytes": self.kv_bytes,
            "kv_bytes_per_token": self.kv_bytes_per_token,
            "kv_bytes_fixed_per_sequence": self.kv_bytes_fixed,
            "max_context_one_sequence": self.max_context,
            "model_context": self.model_context,
            "mtp_built": self.mtp_built,
            "reasons": [r.to_json() for r in self.reasons],
            "notes": list(self.notes),
        }

    def lines(self) -> list[str]:
        """The fit as text, one budget line each, then the verdict."""
        out = [
            f"memory per rank ({self.device}, {self.hbm_bytes / GIB:.0f} GiB; engine share {self.share.fraction:g}"
            + (f" = {self.share.flag}" if self.share.flag else "")
            + f": {self.usable_bytes / GIB:.1f} GiB)"
        ]
        kv = "KV cache (what remains)"
        width = max(len(kv), *(len(item.label) for item in self.items))  # every figure in one column
        for item in self.items:
            detail = f"  {item.detail}" if item.detail else ""
            out.append(f"  {item.label:<{width}} {item.bytes / GIB:8.2f} GiB{detail}")
        out.append(f"  {kv:<{width}} {self.kv_bytes / GIB:8.2f} GiB")
        if self.max_context is not None:
            cap = f" of the model's {self.model_context:,}" if self.model_context else ""
            out.append(f"  longest single sequence the KV cache holds: {self.max_context:,} tokens{cap}")
        out.append(f"  verdict: {self.verdict}")
        for r in self.reasons:
            out.append(f"  [{r.code.value}] {r.message}. Fix: {r.remediation}")
        out.extend(f"  note: {n}" for n in self.notes)
        return out


def built_groups(model: ModelDescription, mtp_built: bool) -> tuple[MoELayerGroup, ...]:
    """The layer groups a launch builds: MTP/draft layers only when the launch builds them (speculative decoding)."""
    return tuple(g for g in model.layer_groups if mtp_built or g.role not in ("mtp", "draft"))


def _expert_bytes(group: MoELayerGroup, conversion: Conversion | None, ranks: int, pp: int) -> int:
    if conversion is not None and group.weight_format is conversion.source:
        group = group.model_copy(update={"weight_quant": conversion.target})
    return -(-len(group.layers) * group.num_experts * group.expert_weight_bytes() // (ranks * pp))


def routed_expert_bytes(
    model: ModelDescription, deployment: Deployment, conversions: dict[str, Conversion | None], mtp_built: bool
) -> int:
    """Routed-expert bytes one rank holds: every built group over ``tp*dp`` ranks and ``pp`` stages."""
    par = deployment.parallel
    return sum(
        _expert_bytes(g, conversions.get(g.name), par.moe_group_size, par.pp) for g in built_groups(model, mtp_built)
    )


def measure_fit(
    model: ModelDescription,
    deployment: Deployment,
    engine: Engine,
    *,
    conversions: dict[str, Conversion | None] | None = None,
    buffer_bytes: int = 0,
    buffer_detail: str = "",
    mtp_built: bool = False,
    memory_fraction: float | None = None,
) -> Fit:
    """The per-rank memory budget of ``model`` on ``deployment`` served by ``engine``.

    ``conversions`` maps a layer group's name to the load-time conversion its chosen backend applies;
    ``buffer_bytes`` is the symmetric memory one rank allocates (the plan's derived total);
    ``memory_fraction`` overrides the engine's default share.
    """
    par, device = deployment.parallel, deployment.device
    share = MEMORY_SHARE[engine]
    if memory_fraction is not None:
        share = replace(share, fraction=memory_fraction, source="given (--memory-fraction)")
    hbm = int(device.memory_gib * GIB)
    experts = routed_expert_bytes(model, deployment, conversions or {}, mtp_built)
    ep_note = f"{par.ep}-way EP" + (f" x {par.moe_tp}-way TP within experts" if par.moe_tp > 1 else "")
    items = [FitItem("routed experts", experts, ep_note)]
    notes: list[str] = []
    fp = model.footprint
    if fp is not None:
        other = -(-fp.bytes(mtp_built=mtp_built) // (par.tp * par.pp))
        items.append(FitItem("attention, shared, dense, embeddings", other, f"over tp={par.tp}"))
    else:
        notes.append(
            "the weights besides the routed experts are not counted: this model family has no footprint entry "
            "(moe_oracle/model/footprint.py)"
        )
    if buffer_bytes:
        items.append(FitItem("symmetric buffers / heaps", buffer_bytes, buffer_detail))
    hidden = model.main_group.hidden_size
    activations = ACTIVATION_BYTES_PER_TOKEN_PER_HIDDEN * par.tokens_per_rank * hidden
    if share.includes_reserve:
        items.append(
            FitItem("runtime reserve", RESERVE_CUDA_GRAPHS + activations, "CUDA graphs + activations (estimate)")
        )
    else:
        notes.append(
            f"CUDA graphs and activations (~{(RESERVE_CUDA_GRAPHS + activations) / GIB:.1f} GiB, estimate) live "
            f"outside {share.flag}: the remaining {1 - share.fraction:.0%} of the GPU must hold them"
        )
    need = sum(i.bytes for i in items)
    usable = int(share.fraction * hbm)
    kv = max(0, usable - need)
    per_token = fp.kv_bytes_per_token if fp is not None else None
    fixed = fp.kv_bytes_fixed if fp is not None else 0
    model_ctx = fp.max_context if fp is not None else None
    max_ctx = None
    if per_token:
        max_ctx = max(0, (kv - fixed) // per_token)
        if model_ctx is not None:
            max_ctx = min(max_ctx, model_ctx)
    reasons: list[Reason] = []
    flag = f"{share.flag} " if share.flag else ""
    if need > usable:
        reasons.append(
            Reason(
                ReasonCode.DEPLOYMENT_MEMORY_EXCEEDED,
                f"one rank needs {need / GIB:.1f} GiB (routed experts {experts / GIB:.1f} GiB) but the engine's share "
                f"of a {device.name} is {usable / GIB:.1f} GiB ({flag}{share.fraction:g} x {device.memory_gib:g} GiB)",
                "see the layouts that fit below",
                rule="weights + symmetric buffers + runtime reserve <= memory share of one GPU",
            )
        )
    elif max_ctx is not None and model_ctx is not None and max_ctx < model_ctx:
        short = max_ctx < MIN_CONTEXT
        reasons.append(
            Reason(
                ReasonCode.DEPLOYMENT_MEMORY_EXCEEDED if short else ReasonCode.KV_CACHE_TOO_SMALL,
                f"the KV cache left per rank ({kv / GIB:.1f} GiB) holds {max_ctx:,} tokens of one sequence, below the "
                f"model's {model_ctx:,}",
                (
                    "see the layouts that fit below"
                    if short
                    else f"serve with --max-model-len {max_ctx} (vLLM; SGLang --context-length {max_ctx}), or add GPUs"
                ),
                rule=f"KV cache >= one sequence of the model's context (at least {MIN_CONTEXT:,} tokens)",
            )
        )
    return Fit(
        device.name,
        hbm,
        share,
        tuple(items),
        kv,
        per_token,
        fixed,
        max_ctx,
        model_ctx,
        mtp_built,
        tuple(reasons),
        tuple(notes),
    )


def chosen_conversions(decision: Decision) -> dict[str, Conversion | None]:
    """Layer group name -> the load-time conversion its chosen candidate applies (None: served as stored)."""
    return {g.group.name: (g.chosen.conversion if g.chosen is not None else None) for g in decision.groups}
