"""Does the deployment fit: the memory one rank needs, against the engine's share of one GPU.

Per rank: the routed experts at the rank's share (``tp*dp`` ranks hold one copy of the MoE
layers: ``ep`` ways by expert, ``tp*dp/ep`` ways within an expert), in the format they run in
(after a chosen load-time conversion); every other weight (:mod:`moe_oracle.model.footprint`),
one line per kind, divided as the engine places it (:mod:`moe_oracle.decide.placement`: replicated,
over attention TP, over the whole TP group...) and over ``pp`` (layers); the symmetric buffers or
heaps the plan sizes (given by the caller, from the backends' declared sizing); and, where the
engine's share holds them (vLLM), the runtime reserve (CUDA graphs and activations, an estimate).
The share is the engine's own default for the flags given (:mod:`moe_oracle.decide.memory_share`:
SGLang's ``--mem-fraction-static`` formula). What remains of it is the KV cache; the longest single
sequence it holds is reported.

A deployment whose weights, buffers and reserve exceed the share does not fit
(``DEPLOYMENT_MEMORY_EXCEEDED``, with the smallest layout that does); one whose KV cache holds less
than the model's context for one sequence fits only with a shorter ``--max-model-len``
(``KV_CACHE_TOO_SMALL``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from moe_oracle.decide.memory_share import (
    RESERVE_SOURCE,
    EngineMemorySettings,
    MemoryShare,
    engine_share,
    runtime_reserve_bytes,
)
from moe_oracle.decide.placement import Over, group_size, placement
from moe_oracle.decide.selection import Decision
from moe_oracle.errors import Fix
from moe_oracle.model.footprint import unweighed_note
from moe_oracle.model.types import ModelDescription, MoELayerGroup, PartKind
from moe_oracle.releases.speculative import builds_mtp
from moe_oracle.rules import Conversion, Engine, Reason, ReasonCode
from moe_oracle.spec.deployment import Deployment

GIB = 1 << 30


#: Context lengths (tokens) at which the fit says how many sequences the KV cache holds at once.
CONCURRENCY_CONTEXTS = (4096, 32768, 131072)

#: Below this many tokens of KV cache for one sequence a deployment is not worth starting.
MIN_CONTEXT = 4096


@dataclass(frozen=True)
class FitItem:
    """One line of the per-rank budget."""

    label: str
    bytes: int
    detail: str = ""
    source: str = ""

    def to_json(self) -> dict[str, Any]:
        out = {"label": self.label, "bytes": self.bytes, "gib": round(self.bytes / GIB, 2), "detail": self.detail}
        return out | ({"source": self.source} if self.source else {})


def context_words(served: int | None, model_context: int | None) -> str:
    """The context a sequence is measured against, in words: ``the 131,072 served (--max-model-len)`` when given,
    else ``the model's 1,048,576``; "" when neither is known."""
    if served is not None:
        return f"the {served:,} served (--max-model-len)"
    return f"the model's {model_context:,}" if model_context else ""


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
    #: a failing verdict's alternatives, typed (:class:`moe_oracle.errors.Fix`); the reasons' remediation is their text
    fixes: tuple[Fix, ...] = field(default=(), compare=False)
    weighed_all: bool = True  # False: the family has no footprint entry, only the routed experts were weighed
    #: ``--max-model-len`` as given: the longest sequence the engine serves (None: the model's context).
    served_context: int | None = None

    @property
    def context(self) -> int | None:
        """The longest sequence the engine is asked to serve: ``--max-model-len`` when given, else the model's."""
        return self.served_context if self.served_context is not None else self.model_context

    def _of_context(self) -> str:
        words = context_words(self.served_context, self.model_context)
        return f" of {words}" if words else ""

    def sequences_at(self, context: int) -> int | None:
        """How many sequences of ``context`` tokens each the KV cache of one rank holds at once (each sequence
        its per-token bytes times its length plus its fixed part); None when the KV size per token is unknown."""
        if not self.kv_bytes_per_token or context < 1:
            return None
        return self.kv_bytes // (self.kv_bytes_per_token * context + self.kv_bytes_fixed)

    def concurrency(self) -> list[tuple[int, int]]:
        """(context length, sequences one rank holds) at :data:`CONCURRENCY_CONTEXTS` up to the context served
        (:attr:`context`), and that context."""
        lengths = [n for n in CONCURRENCY_CONTEXTS if self.context is None or n < self.context]
        if self.context is not None:
            lengths.append(self.context)
        return [(n, seqs) for n in lengths if (seqs := self.sequences_at(n)) is not None]

    @property
    def usable_bytes(self) -> int:
        return max(0, int(self.share.fraction * self.hbm_bytes))

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
        if not self.weighed_all:  # a fit of the routed experts alone is not a fit of the deployment
            return "ROUTED EXPERTS FIT (the other weights and the KV cache are not weighed)"
        if self.reasons:
            return "FITS with a shorter context"
        return "FITS"

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "fits": self.fits,
            "weighed_all": self.weighed_all,
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
            "concurrent_sequences_per_rank": [{"context": n, "sequences": k} for n, k in self.concurrency()],
            "model_context": self.model_context,
            "served_context": self.served_context,
            "mtp_built": self.mtp_built,
            "reasons": [r.to_json() for r in self.reasons],
            "notes": list(self.notes),
        }

    def lines(self) -> list[str]:
        """The fit as text, one budget line each, then the verdict."""
        out = [
            f"memory per rank ({self.device}, {self.hbm_bytes / GIB:.2f} GiB; engine share {self.share.fraction:g}"
            + (f" = {self.share.flag}" if self.share.flag else "")
            + f": {self.usable_bytes / GIB:.1f} GiB)",
            f"  share: {self.share.source}",
        ]
        kv = "KV cache (what remains)"
        width = max(len(kv), *(len(item.label) for item in self.items))  # every figure in one column
        for item in self.items:
            detail = f"  {item.detail}" if item.detail else ""
            out.append(f"  {item.label:<{width}} {item.bytes / GIB:8.2f} GiB{detail}")
        out.append(f"  {kv:<{width}} {self.kv_bytes / GIB:8.2f} GiB")
        if self.max_context is not None:
            out.append(f"  longest single sequence the KV cache holds: {self.max_context:,} tokens{self._of_context()}")
        held = self.concurrency()
        if held and self.fits:
            out.append(
                "  concurrent sequences one rank's KV cache holds (each attention-DP rank its own): "
                + ", ".join(f"{k:,} at {n:,} tokens" for n, k in held)
            )
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


def _kind_label(kind: PartKind) -> str:
    return _KIND_LABELS.get(kind, kind.value.replace("_", " "))


_KIND_LABELS = {PartKind.HEAD: "LM head", PartKind.DENSE_MLP: "dense MLP layers", PartKind.OTHER: "other weights"}


def weight_items(
    model: ModelDescription, deployment: Deployment, engine: Engine, *, mtp_built: bool, a2a_backend: str = "none"
) -> list[FitItem]:
    """One budget line per kind of non-routed-expert weight, divided as ``engine`` places it
    (:mod:`moe_oracle.decide.placement`) and over ``pp`` stages."""
    fp = model.footprint
    if fp is None:
        return []
    par = deployment.parallel
    items = []
    for kind, total in fp.bytes_by_kind(mtp_built=mtp_built).items():
        where = placement(engine, par, model.architecture, kind, a2a_backend=a2a_backend)
        ways = group_size(engine, par, where.over)
        if where.over is Over.REPLICATED:
            detail = "replicated"
        elif ways == 1:
            detail = f"whole on each rank ({where.over.value} 1)"
        else:
            detail = f"over {ways} ({where.over.value})"
        items.append(FitItem(_kind_label(kind), -(-total // (ways * par.pp)), detail, where.source))
    return items


def measure_fit(
    model: ModelDescription,
    deployment: Deployment,
    engine: Engine,
    *,
    conversions: dict[str, Conversion | None] | None = None,
    buffer_bytes: int = 0,
    buffer_detail: str = "",
    mtp_built: bool | None = None,
    memory_fraction: float | None = None,
    settings: EngineMemorySettings | None = None,
) -> Fit:
    """The per-rank memory budget of ``model`` on ``deployment`` served by ``engine``.

    ``conversions`` maps a layer group's name to the load-time conversion its chosen backend applies;
    ``buffer_bytes`` is the symmetric memory one rank allocates (the plan's derived total);
    ``mtp_built`` whether the MTP layers' weights are held (None: as the launch decides,
    :func:`~moe_oracle.releases.speculative.builds_mtp`);
    ``settings`` are the engine flags the share depends on (``memory_fraction``, when given, overrides
    its fraction); the share is the engine's own default for them (:func:`engine_share`).
    """
    if mtp_built is None:
        mtp_built = builds_mtp(engine, deployment)
    par, device = deployment.parallel, deployment.device
    settings = settings or EngineMemorySettings()
    if memory_fraction is not None:
        settings = replace(settings, fraction=memory_fraction)
    share = engine_share(
        engine,
        gpu_mem_gib=device.memory_gib,
        architecture=model.architecture,
        tp=par.tp,
        dp=par.dp,
        pp=par.pp,
        tokens_per_rank=par.tokens_per_rank,
        settings=settings,
    )
    hbm = int(device.memory_gib * GIB)
    experts = routed_expert_bytes(model, deployment, conversions or {}, mtp_built)
    ep_note = f"{par.ep}-way EP" + (f" x {par.moe_tp}-way TP within experts" if par.moe_tp > 1 else "")
    items = [FitItem("routed experts", experts, ep_note)]
    notes: list[str] = []
    fp = model.footprint
    if fp is not None:
        items += weight_items(model, deployment, engine, mtp_built=mtp_built, a2a_backend=settings.a2a_backend)
        notes.extend(fp.notes)
    else:
        notes.append(unweighed_note(model))
    mtp_note = _mtp_note(model, mtp_built)
    if mtp_note:
        notes.append(mtp_note)
    if buffer_bytes:
        items.append(FitItem("symmetric buffers / heaps", buffer_bytes, buffer_detail))
    hidden = model.main_group.hidden_size
    if share.includes_reserve:
        items.append(
            FitItem(
                "runtime reserve",
                runtime_reserve_bytes(par.tokens_per_rank, hidden),
                "CUDA graphs + activations (estimate)",
                RESERVE_SOURCE,
            )
        )
    else:
        notes.append(
            f"activations and CUDA graphs live outside {share.flag}: the other {1 - share.fraction:.1%} of the GPU "
            f"(SGLang's own formula reserves {share.reserve_outside_bytes / GIB:.1f} GiB for these flags); SGLang "
            "applies the fraction to the memory free before the weights load (the GPU less its CUDA context and NCCL "
            "buffers)"
        )
    need = sum(i.bytes for i in items)
    usable = max(0, int(share.fraction * hbm))
    kv = max(0, usable - need)
    per_token = fp.kv_bytes_per_token if fp is not None else None
    fixed = fp.kv_bytes_fixed if fp is not None else 0
    model_ctx = fp.max_context if fp is not None else None
    served = settings.max_model_len
    ctx_cap = served if served is not None else model_ctx  # the longest sequence the engine serves
    max_ctx = None
    if per_token:
        max_ctx = max(0, (kv - fixed) // per_token)
        if ctx_cap is not None:
            max_ctx = min(max_ctx, ctx_cap)
    reasons: list[Reason] = []
    flag = f"{share.flag} " if share.flag else ""
    if need > usable:
        given = f"{usable / GIB:.1f} GiB ({flag}{share.fraction:g} x {device.memory_gib:g} GiB)"
        if share.fraction <= 0:  # the engine's own formula reserves more than the GPU holds at these settings
            given = (
                f"nothing: at these settings the engine's own formula reserves "
                f"{share.reserve_outside_bytes / GIB:.1f} GiB of the {device.memory_gib:g} GiB outside its share "
                f"({flag.strip() or 'its share'} would be {share.fraction:g})"
            )
        reasons.append(
            Reason(
                ReasonCode.DEPLOYMENT_MEMORY_EXCEEDED,
                f"one rank needs {need / GIB:.1f} GiB (routed experts {experts / GIB:.1f} GiB) but the engine's share "
                f"of a {device.name} is {given}",
                "see the layouts that fit below",
                rule="weights + symmetric buffers + runtime reserve <= memory share of one GPU",
            )
        )
    elif max_ctx is not None and ctx_cap is not None and max_ctx < ctx_cap:
        short = max_ctx < MIN_CONTEXT
        reasons.append(
            Reason(
                ReasonCode.DEPLOYMENT_MEMORY_EXCEEDED if short else ReasonCode.KV_CACHE_TOO_SMALL,
                f"the KV cache left per rank ({kv / GIB:.1f} GiB) holds {max_ctx:,} tokens of one sequence, below "
                f"{context_words(served, model_ctx)}",
                (
                    "see the layouts that fit below"
                    if short
                    else (
                        f"--max-model-len {max_ctx} (plan and serve set it: vLLM --max-model-len, SGLang "
                        f"--context-length {max_ctx}), or add GPUs"
                    )
                ),
                rule=(
                    "KV cache >= one sequence of the context served (the model's, or --max-model-len; "
                    f"at least {MIN_CONTEXT:,} tokens)"
                ),
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
        weighed_all=fp is not None,
        served_context=served,
    )


def _mtp_note(model: ModelDescription, mtp_built: bool) -> str:
    """Whether the MTP layers' weights are counted, as the speculative-decoding plan decides (empty: none)."""
    groups = [g for g in model.layer_groups if g.role in ("mtp", "draft")]
    parts = [p for p in model.footprint.parts if p.mtp] if model.footprint is not None else []
    if not groups and not parts:
        return ""
    if mtp_built:
        return "MTP layers built (speculative decoding): their weights are counted"
    return "MTP layers not built (no --speculative mtp): their weights are not counted"


def chosen_conversions(decision: Decision) -> dict[str, Conversion | None]:
    """Layer group name -> the load-time conversion its chosen candidate applies (None: served as stored)."""
    return {g.group.name: (g.chosen.conversion if g.chosen is not None else None) for g in decision.groups}
