"""Steps 1 and 2 of describing a config: the MoE shape (hidden size, expert width, experts, top-k, shared
experts) and the layer layout (the main-model schedule: ``mlp_layer_types``, else ``first_k_dense_replace`` +
``moe_layer_freq``, else every layer, or the family's own schedule; hash-routed layers; MTP layers after the last
decoder layer; DeepSeek DSpark draft layers), each layer with the site its weights are named at.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from moe_oracle.errors import ModelConfigError
from moe_oracle.model.adapters import _schedules as schedules
from moe_oracle.model.adapters._family_rules import FamilyRules, SharedRule
from moe_oracle.model.adapters._quant import Site, deepseek_v4_site, hf_site
from moe_oracle.model.adapters._view import ConfigView, check_int
from moe_oracle.model.types import (
    MAX_EXPERTS,
    MAX_HIDDEN_SIZE,
    MAX_INTERMEDIATE_SIZE,
    MAX_LAYERS,
    MAX_TOP_K,
    LayerRole,
)

MAX_SHARED_EXPERTS = 64
MAX_EXTRA_LAYERS = 64

_LAYER_TYPES: dict[str, LayerRole | None] = {"dense": None, "sparse": "routed", "moe": "routed", "hash_moe": "hash"}


@dataclass(frozen=True)
class Layer:
    index: int
    role: LayerRole
    num_experts: int
    top_k: int
    site: Site


@dataclass(frozen=True)
class Shape:
    hidden_size: int
    moe_intermediate_size: int
    num_experts: int
    top_k: int
    num_shared_experts: int
    shared_width: int | None = None
    shared_gate: bool = False


# ---------------------------------------------------------------------------------------------


def read_shape(view: ConfigView, rules: FamilyRules) -> Shape:
    hidden = view.get_int(rules.hidden_keys, lo=1, hi=MAX_HIDDEN_SIZE, what="hidden size the experts see")
    inter = view.get_int(rules.width_keys, lo=1, hi=MAX_INTERMEDIATE_SIZE, what="width of one routed expert")
    experts = view.get_int(rules.experts_keys, lo=1, hi=MAX_EXPERTS, what="routed experts per MoE layer")
    top_k = view.get_int(rules.topk_keys, lo=1, hi=MAX_TOP_K, what="experts chosen per token")
    if top_k > experts:
        path = view.lookup(rules.topk_keys)[0]  # type: ignore[index]
        raise view.error(
            path,
            top_k,
            f"top-k {top_k} exceeds {view.lookup(rules.experts_keys)[0]}={experts}",  # type: ignore[index]
            fix="check both values against the model card",
        )
    shared, width, gate = _shared(view, rules.shared, inter)
    return Shape(hidden, inter, experts, top_k, shared, width, gate)


def _shared(view: ConfigView, rule: SharedRule, inter: int) -> tuple[int, int | None, bool]:
    """``(count, total width or None for count * I, gated)`` of the shared experts."""
    if rule.total_width_keys:
        width = view.get_int(
            rule.total_width_keys, lo=0, hi=MAX_INTERMEDIATE_SIZE, default=0, what="shared-expert width (0: none)"
        )
        return (1, width, rule.gate) if width else (0, None, False)
    count = rule.implicit
    if rule.count_keys:
        count = view.get_int(
            rule.count_keys, lo=0, hi=MAX_SHARED_EXPERTS, default=count, what="shared experts per MoE layer"
        )
    if not count:
        return 0, None, False
    if rule.width_keys and view.has(rule.width_keys):
        one = view.get_int(rule.width_keys, lo=1, hi=MAX_INTERMEDIATE_SIZE, what="width of one shared expert")
        return count, count * one, rule.gate
    return count, None, rule.gate


def main_schedule(view: ConfigView, rules: FamilyRules, n_layers: int) -> list[tuple[int, LayerRole]]:
    """``(layer, role)`` of every MoE layer of the main model, role ``routed`` or ``hash``."""
    if rules.schedule != "deepseek":
        moe = schedules.SCHEDULES[rules.schedule](view, n_layers)
        if not moe:
            raise ModelConfigError(
                f"{view.model_id}: the layer schedule leaves no MoE layer among the {n_layers} layers",
                fix="a dense model needs no MoE backend; otherwise fix the schedule",
            )
        return [(i, "routed") for i in moe]
    found = view.lookup("mlp_layer_types")
    roles: list[LayerRole | None]
    if found is not None:
        path, types = found
        if not isinstance(types, list):
            raise view.error(path, types, "expected an array with one entry per layer (dense / sparse)")
        if len(types) != n_layers:
            raise view.error(
                path,
                types,
                f"it has {len(types)} entries but num_hidden_layers is {n_layers}",
                fix="give one entry per decoder layer",
            )
        roles = []
        for index, kind in enumerate(types):
            if not isinstance(kind, str) or kind not in _LAYER_TYPES:
                raise view.error(f"{path}[{index}]", kind, "expected one of " + ", ".join(_LAYER_TYPES))
            roles.append(_LAYER_TYPES[kind])
        if "hash" in roles and not rules.hash_layers:
            raise view.error(path, "hash_moe", f"hash-routed layers are not part of {rules.family}")
        hash_count = roles.count("hash")
        declared = view.lookup("num_hash_layers")
        if declared is not None and rules.hash_layers:
            dpath, dvalue = declared
            check_int(dvalue, path=dpath, lo=0, hi=n_layers, model_id=view.model_id)
            if dvalue != hash_count:
                raise view.error(
                    dpath,
                    dvalue,
                    f"it contradicts {path}, which has {hash_count} hash_moe entries",
                    fix="make the two agree",
                )
    else:
        freq_found = view.lookup("moe_layer_freq")
        if freq_found is not None and isinstance(freq_found[1], list):
            roles = _freq_list(view, freq_found, n_layers)
        elif view.has("first_k_dense_replace") or view.has("moe_layer_freq"):
            first = view.get_int("first_k_dense_replace", lo=0, hi=n_layers, default=0, what="leading dense layers")
            freq = view.get_int("moe_layer_freq", lo=1, hi=MAX_LAYERS, default=1, what="MoE every n-th layer")
            roles = ["routed" if i >= first and i % freq == 0 else None for i in range(n_layers)]
        else:
            roles = ["routed"] * n_layers
        if rules.hash_layers:
            hashed = view.get_int("num_hash_layers", lo=0, hi=n_layers, default=0, what="leading hash-routed layers")
            for i in range(hashed):
                if roles[i] is None:
                    raise view.error(
                        view.lookup("num_hash_layers")[0],  # type: ignore[index]
                        hashed,
                        f"layer {i} would be hash-routed but it is a dense layer",
                    )
                roles[i] = "hash"
    if rules.forbid_hash_layers:
        found_hash = view.lookup("num_hash_layers")
        if found_hash is not None and found_hash[1] != 0:
            raise view.error(
                found_hash[0],
                found_hash[1],
                f"{rules.family} has no hash-routed layers (vLLM forces num_hash_layers=0)",
                fix="remove num_hash_layers",
            )
    layers = [(i, role) for i, role in enumerate(roles) if role is not None]
    if not layers:
        raise ModelConfigError(
            f"{view.model_id}: the layer schedule leaves no MoE layer among the {n_layers} layers "
            "(check first_k_dense_replace, moe_layer_freq, mlp_layer_types)",
            fix="a dense model needs no MoE backend; otherwise fix the schedule",
        )
    return layers


def _freq_list(view: ConfigView, found: tuple[str, Any], n_layers: int) -> list[LayerRole | None]:
    """``moe_layer_freq`` as one flag per layer (MiniMax-M3, MiMo-V2: non-zero = MoE; vLLM minimax_m3
    ``_is_moe_layer``, mimo_v2 ``is_moe_layer`` read the list alone, not ``first_k_dense_replace``)."""
    path, flags = found
    if len(flags) != n_layers:
        raise view.error(
            path, flags, f"it has {len(flags)} entries but num_hidden_layers is {n_layers}", fix="give one per layer"
        )
    for index, flag in enumerate(flags):
        check_int(flag, path=f"{path}[{index}]", lo=0, hi=MAX_LAYERS, model_id=view.model_id)
    return ["routed" if flag else None for flag in flags]


def site(rules: FamilyRules, role: str, index: int, n_layers: int) -> Site:
    label = f"layer {index} ({role})"
    if rules.naming == "deepseek_v4":
        if role in ("mtp", "draft"):
            return deepseek_v4_site(label, None, index - n_layers)
        return deepseek_v4_site(label, index, None)
    return hf_site(label, index, block=rules.moe_module, shared=rules.shared_module)


def extra_layers(view: ConfigView, rules: FamilyRules, shape: Shape, n_layers: int) -> list[Layer]:
    """MTP layers (``num_nextn_predict_layers``) or DeepSeek DSpark draft layers."""
    role: LayerRole
    dspark_keys = ("dspark_target_layer_ids", "dspark_n_routed_experts", "dspark_num_experts_per_tok")
    if rules.dspark and any(view.has(key) for key in dspark_keys):
        found = view.lookup("dspark_target_layer_ids")
        if found is not None:
            path, targets = found
            if not isinstance(targets, list) or len(targets) > MAX_EXTRA_LAYERS:
                raise view.error(path, targets, f"expected an array of at most {MAX_EXTRA_LAYERS} layer indices")
            for i, target in enumerate(targets):
                check_int(target, path=f"{path}[{i}]", lo=0, hi=n_layers - 1, model_id=view.model_id)
            count = len(targets)
        else:
            count = view.get_int("num_nextn_predict_layers", lo=0, hi=MAX_EXTRA_LAYERS, default=0, what="DSpark stages")
        experts = view.get_int(
            "dspark_n_routed_experts", lo=1, hi=MAX_EXPERTS, default=shape.num_experts, what="draft experts"
        )
        top_k = view.get_int("dspark_num_experts_per_tok", lo=1, hi=MAX_TOP_K, default=shape.top_k, what="draft top-k")
        if top_k > experts:
            raise view.error(
                view.lookup("dspark_num_experts_per_tok")[0]  # type: ignore[index]
                if view.has("dspark_num_experts_per_tok")
                else view.path("dspark_num_experts_per_tok"),
                top_k,
                f"draft top-k {top_k} exceeds the {experts} draft experts (dspark_n_routed_experts)",
            )
        role = "draft"
    else:
        count = view.get_int("num_nextn_predict_layers", lo=0, hi=MAX_EXTRA_LAYERS, default=0, what="MTP layers")
        experts, top_k, role = shape.num_experts, shape.top_k, "mtp"
    if n_layers + count > MAX_LAYERS:
        raise ModelConfigError(
            f"{view.model_id}: {n_layers} layers plus {count} {role} layers exceed the {MAX_LAYERS}-layer bound"
        )
    return [Layer(i, role, experts, top_k, site(rules, role, i, n_layers)) for i in range(n_layers, n_layers + count)]
