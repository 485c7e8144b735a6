"""Build a :class:`MegaMoELayer` for a variant key, a ``VariantSpec``, or a selection ``Decision``.

Keys: ``emulation:<variant>`` (the torch twin, any machine), ``<backend>:<variant>`` or
``<variant>`` (the real kernel class named by ``VariantSpec.runtime``, imported lazily). Before a
real kernel layer is constructed, the variant's layer-level declarations are evaluated against the
layer config (:func:`require_buildable`): a layer the oracle would refuse is never built. A real
backend that cannot run here (library, entry point, GPU or architecture missing) raises
:class:`~moe_oracle.runtime.errors.BackendUnavailableError`, one line naming what is missing and
the fix; never an ImportError traceback.
"""

from __future__ import annotations

import importlib
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from moe_oracle.errors import excerpt
from moe_oracle.rules.variant_key import Bare, VariantKey
from moe_oracle.runtime.errors import BackendUnavailableError, LayerInputError, UnknownVariantError
from moe_oracle.runtime.interface import CheckpointExperts, LayerConfig, MegaMoELayer
from moe_oracle.runtime.refusals import refusals

if TYPE_CHECKING:
    from moe_oracle.decide.selection import Decision
    from moe_oracle.model.types import WeightFormat
    from moe_oracle.rules import VariantSpec

_KEY_FIX = "use BACKEND:VARIANT, VARIANT or emulation:VARIANT (e.g. emulation:sm90_fp8xfp8; moe-oracle list variants)"


def resolve_variant(name: str) -> tuple[VariantSpec, bool]:
    """``(spec, emulated)`` for ``emulation:<variant>``, ``<backend>:<variant>`` or ``<variant>``."""
    from moe_oracle.registry import load_registry

    key = VariantKey.parse(name, subject=excerpt(name), bare=Bare.VARIANT, require_variant=True, fix=_KEY_FIX)
    reg = load_registry()
    found = [v for v in reg.variants if key.matches(v)]
    if len(found) != 1:
        known = ", ".join(v.key for v in reg.variants)
        raise UnknownVariantError(
            f"{name!r} names no registered mega-MoE variant",
            fix=f"use one of: {known} (or emulation:<variant>).",
        )
    return found[0], key.emulated


def _import_runtime(spec: VariantSpec) -> type[MegaMoELayer]:
    if not spec.runtime or ":" not in spec.runtime:
        raise BackendUnavailableError(
            f"{spec.key} declares no runtime entry point (VariantSpec.runtime).", fix="use emulation:" + spec.variant
        )
    module_name, attr = spec.runtime.split(":", 1)
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        from moe_oracle.registry import load_registry

        reason = " ".join(f"{type(exc).__name__}: {exc}".split())
        raise BackendUnavailableError(
            f"{spec.key}: its runtime module {module_name} does not import ({reason}).",
            fix=f"{load_registry().origin(spec).reinstall()}, or use emulation:{spec.variant}",
        ) from None
    cls = getattr(module, attr, None)
    if cls is None or not (isinstance(cls, type) and issubclass(cls, MegaMoELayer)):
        raise BackendUnavailableError(
            f"{spec.key}: {spec.runtime} is not a MegaMoELayer class.", fix="fix VariantSpec.runtime of " + spec.key
        )
    return cls


def require_buildable(spec: VariantSpec, config: LayerConfig) -> None:
    """Raise :class:`LayerInputError` with every layer-level reason the oracle would refuse ``config`` for."""
    reasons = refusals(spec, config)
    if reasons:
        text = "; ".join(f"{r.code.value}: {r.message}" for r in reasons)
        raise LayerInputError(
            f"{spec.key} cannot run layer group '{config.group.name}' ({text})",
            fix=" ".join(dict.fromkeys(r.remediation for r in reasons if r.remediation)),
        )


def build_layer(
    key_or_spec: str | VariantSpec,
    config: LayerConfig,
    experts: CheckpointExperts | None = None,
    *,
    emulate: bool = False,
) -> MegaMoELayer:
    """Build (and, with ``experts``, load) the layer of a variant.

    ``key_or_spec``: ``"emulation:sm90_fp8xfp8"``, ``"deep_gemm_mega_moe:sm90_fp8xfp8"``,
    ``"sm90_fp8xfp8"`` or a ``VariantSpec``; ``emulate=True`` builds the twin of a real key.
    """
    if isinstance(key_or_spec, str) and key_or_spec.strip().lower().startswith("nonfused:"):
        return build_nonfused(key_or_spec, config, experts)
    if isinstance(key_or_spec, str):
        spec, emulated = resolve_variant(key_or_spec)
    else:
        spec, emulated = key_or_spec, False
    if not spec.runtime and not spec.layout:
        raise BackendUnavailableError(
            f"{spec.key} is engine-native: moe-oracle has no runtime class, weight layout or emulation twin for it, "
            "so it cannot build its layer (the engine that wires it runs it).",
            fix="plan for that engine (moe-oracle plan ... --engine sglang), or build another variant.",
        )
    if emulated or emulate:
        from moe_oracle.runtime.emulation import EmulatedMegaMoE

        layer: MegaMoELayer = EmulatedMegaMoE(config, spec)
    else:
        require_buildable(spec, config)
        layer = _import_runtime(spec)(config)
    if experts is not None:
        layer.load(experts)
    return layer


def build_nonfused(key: str, config: LayerConfig, experts: CheckpointExperts | None = None) -> MegaMoELayer:
    """moe-oracle's implementation of a declared non-fused path (``nonfused:deepgemm_fp8_psum``...).

    ``config.options["gemm"] = "torch"`` runs the grouped GEMMs as a dequantize-and-matmul reference
    (any device); the default is the path's own (for the SM90 paths DeepGEMM's, which needs SM90).
    """
    from moe_oracle.cost.nonfused import declared_paths, path_for_key

    path = path_for_key(key)
    if path is None:
        known = ", ".join(p.key for p in declared_paths())
        raise UnknownVariantError(f"{key!r} names no declared non-fused path", fix=f"use one of: {known}.")
    module_name, attr = path.runtime.split(":", 1)
    cls = getattr(importlib.import_module(module_name), attr)
    gemm = {"gemm": config.options["gemm"]} if "gemm" in config.options else {}
    layer = cls(config, layout=path.layout, **gemm)
    if experts is not None:
        layer.load(experts)
    return layer


def layer_config_for(decision: Decision, group: str | int | None = None, **kwargs: Any) -> LayerConfig:
    """A :class:`LayerConfig` for one layer group of ``decision`` (by name or index; default: main).

    ``max_tokens_per_rank`` defaults to the deployment's ``max_num_batched_tokens`` and ``ep_size`` to
    its ``ep``; pass ``ep_rank``, ``ep_group``, ``device``, ``options`` as keyword arguments.
    """
    gd = _group_decision(decision, group)
    par = decision.deployment.parallel
    kwargs.setdefault("max_tokens_per_rank", par.tokens_per_rank)
    kwargs.setdefault("ep_size", par.ep)
    return LayerConfig(group=gd.group, **kwargs)


def _group_decision(decision: Decision, group: str | int | None):
    if group is None:
        return decision.main
    if isinstance(group, int):
        return decision.groups[group]
    for gd in decision.groups:
        if gd.group.name == group:
            return gd
    names = ", ".join(gd.group.name for gd in decision.groups)
    raise UnknownVariantError(f"the decision has no layer group {group!r}", fix=f"use one of: {names}.")


def build_layer_for_decision(
    decision: Decision,
    group: str | int | None = None,
    experts: CheckpointExperts | None = None,
    *,
    emulate: bool = False,
    **config_kwargs: Any,
) -> MegaMoELayer:
    """The layer the oracle chose for ``group`` (real kernel, or its twin with ``emulate=True``).

    When the oracle ranked a measured non-fused path first (``gd.nonfused``, no fused choice), that
    path's own implementation is built (:func:`build_nonfused`). Raises
    :class:`BackendUnavailableError` when the decision chose no fused backend and no runnable non-fused
    path (the group falls back to the engine's non-fused MoE, named in the message).
    """
    gd = _group_decision(decision, group)
    if gd.chosen is None and gd.nonfused is not None and not emulate:
        return build_nonfused(gd.nonfused.key, layer_config_for(decision, group, **config_kwargs), experts)
    if gd.chosen is None:
        raise BackendUnavailableError(
            f"layer group '{gd.group.name}': the decision chose no fused mega-MoE backend (fallback: {gd.fallback}).",
            fix="run the engine's non-fused MoE for this group, or change the deployment.",
        )
    config = layer_config_for(decision, group, **config_kwargs)
    conv = gd.chosen.conversion
    return build_layer_for_choice(
        gd.chosen.spec,
        config,
        experts,
        emulate=emulate,
        convert_from=None if conv is None else conv.source,
        allow_lossy=decision.conversion.allow_lossy,
    )


def build_layer_for_choice(
    key_or_spec: str | VariantSpec,
    config: LayerConfig,
    experts: CheckpointExperts | None = None,
    *,
    emulate: bool = False,
    convert_from: WeightFormat | None = None,
    allow_lossy: bool = False,
) -> MegaMoELayer:
    """:func:`build_layer`, or with ``convert_from`` the variant behind its declared load-time conversion.

    ``config.group`` is the checkpoint's group (``convert_from`` its format); the inner layer is built
    for the conversion's target format and :class:`ConvertingLayer` converts the experts given to
    ``load``.
    """
    if convert_from is None:
        return build_layer(key_or_spec, config, experts, emulate=emulate)
    spec, emulated = resolve_variant(key_or_spec) if isinstance(key_or_spec, str) else (key_or_spec, False)
    conv = next((c for c in spec.conversions if c.source is convert_from), None)
    if conv is None:
        raise UnknownVariantError(
            f"{spec.key} declares no load-time conversion from {convert_from.value}",
            fix="serve the checkpoint's format with a variant that consumes it.",
        )
    from moe_oracle.runtime.converting_layer import ConvertingLayer

    converted = config.group.model_copy(update={"weight_quant": conv.target})
    inner = build_layer(spec, replace(config, group=converted), emulate=emulate or emulated)
    layer = ConvertingLayer(inner, conv, allow_lossy=allow_lossy)
    if experts is not None:
        layer.load(experts)
    return layer
