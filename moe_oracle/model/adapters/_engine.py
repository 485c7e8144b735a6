"""The shared engine behind every family adapter.

An adapter is a :class:`FamilyRules` (defaults and quirks of one model family, taken from the
reference notes) run through :func:`describe_with_rules`:

1. read the MoE shape (hidden size, expert width, experts, top-k, shared experts);
2. lay out the layers: the main-model schedule (``mlp_layer_types``, else
   ``first_k_dense_replace`` + ``moe_layer_freq``, else every layer), hash-routed layers, MTP
   layers after the last decoder layer, DeepSeek DSpark draft layers;
3. resolve each layer's routed- and shared-expert weight format (:mod:`._quant`);
4. build routing and activation;
5. group layers by role, then by everything a backend decision depends on, name the groups
   and put the main (most numerous) group first.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from moe_oracle.errors import ModelConfigError
from moe_oracle.model.adapters import _keys as keys
from moe_oracle.model.adapters import _schedules as schedules
from moe_oracle.model.adapters._attention import read_attention
from moe_oracle.model.adapters._footprint import describe_footprint
from moe_oracle.model.adapters._quant import QuantResolver, Site, deepseek_v4_site, hf_site
from moe_oracle.model.adapters._view import ConfigView, Keys, check_int
from moe_oracle.model.types import (
    MAX_EXPERTS,
    MAX_HIDDEN_SIZE,
    MAX_INTERMEDIATE_SIZE,
    MAX_LAYERS,
    MAX_TOP_K,
    ROLE_GROUP_NAMES,
    Activation,
    ActivationKind,
    LayerRole,
    ModelDescription,
    MoELayerGroup,
    QuantSpec,
    Routing,
    Scoring,
)

MAX_SHARED_EXPERTS = 64
MAX_EXTRA_LAYERS = 64
MAX_SCALING_FACTOR = 1e4
MAX_SWIGLU_LIMIT = 1e6


_LAYER_TYPES: dict[str, LayerRole | None] = {"dense": None, "sparse": "routed", "moe": "routed", "hash_moe": "hash"}


@dataclass(frozen=True)
class SharedRule:
    """How a family states its shared experts.

    ``count_keys``: a count of shared experts, each ``I`` wide unless ``width_keys`` gives the width of
    one (Bailing); ``total_width_keys``: the width of the one shared expert (Qwen, Step; 0 = none);
    ``implicit``: a count the config does not state (Llama-4: 1, as wide as a routed expert);
    ``gate``: a per-token sigmoid gate scales the shared output (Qwen2-MoE / Qwen3-Next / Qwen3.5).
    """

    count_keys: Keys = ("n_shared_experts",)
    width_keys: Keys = ()
    total_width_keys: Keys = ()
    implicit: int = 0
    gate: bool = False


@dataclass(frozen=True)
class FamilyRules:
    """Defaults and quirks of one model family (see docs/families.md)."""

    family: str
    architecture: str
    #: ``deepseek_v4`` (``layers.3.ffn.experts``, ``mtp.0...``) or ``hf`` (``model.layers.3.mlp.experts``).
    naming: str
    #: Scoring when the config has no ``scoring_func``.
    default_scoring: Scoring
    #: Scoring the implementation fixes whatever the config says (GLM-4.x: sigmoid).
    forced_scoring: Scoring | None = None
    #: ``noaux_tc``: the correction bias exists when ``topk_method == "noaux_tc"``; ``always``: GLM-4.x.
    bias: str = "noaux_tc"
    #: ``topk_method`` when absent.
    default_topk_method: str | None = None
    default_renormalize: bool = True
    #: DeepSeek V4: ``swiglu_limit`` is required and becomes the pre-activation clamp.
    clamp: bool = False
    #: DeepseekV2MoE-based families (GLM-5-Next, Hunyuan v4): ``swiglu_limit``, when present, is the clamp.
    optional_clamp: bool = False
    #: DeepSeek V4: first ``num_hash_layers`` layers (or ``hash_moe`` entries) are hash-routed.
    hash_layers: bool = False
    #: DeepSeek V4.1: ``num_hash_layers`` must be absent or 0 (vLLM forces 0).
    forbid_hash_layers: bool = False
    #: DeepSeek V4 / V4.1: ``quant_method: fp8`` needs ``expert_dtype`` to say what the experts are.
    expert_dtype_required: bool = False
    #: DeepSeek V4 / V4.1: ``dspark_*`` keys describe draft layers with their own expert shape.
    dspark: bool = False
    #: Extra validation run on the view before anything else.
    check: Callable[[ConfigView], None] | None = None
    # -- key spellings (see :mod:`._keys`); the defaults are the DeepSeek / GLM ones ---------------
    #: The width the routed experts see (Kimi-K3's latent MoE: ``routed_expert_hidden_size``).
    hidden_keys: Keys = ("hidden_size",)
    experts_keys: Keys = keys.EXPERTS_DEEPSEEK
    topk_keys: Keys = keys.TOPK_DEEPSEEK
    width_keys: Keys = keys.WIDTH_MOE
    shared: SharedRule = field(default_factory=lambda: SharedRule())
    #: MoE layer schedule: ``deepseek`` (``mlp_layer_types``, else ``first_k_dense_replace`` + ``moe_layer_freq``,
    #: else every layer), ``qwen`` (``decoder_sparse_step`` + ``mlp_only_layers``), ``llama4``
    #: (``interleave_moe_layer_step``), ``ernie`` (``moe_layer_start_index`` / ``_end_index`` / ``_interval``),
    #: ``step`` (``moe_layers_enum``), ``all``.
    schedule: str = "deepseek"
    scoring_keys: Keys = ("scoring_func",)
    #: With ``bias="key"``: the boolean keys that switch the correction bias on (MiniMax ``use_routing_bias``).
    bias_keys: Keys = ()
    renorm_keys: Keys = ("norm_topk_prob",)
    #: Renormalisation the implementation fixes whatever the config says (Mixtral, gpt-oss, ERNIE: True).
    forced_renormalize: bool | None = None
    scaling_keys: Keys = ("routed_scaling_factor",)
    group_keys: Keys = ("n_group",)
    #: Llama-4: the routing weight multiplies the expert's input.
    weight_on_input: bool = False
    #: Laguna: the boolean key that says so (``moe_apply_router_weight_on_input``).
    weight_on_input_keys: Keys = ()
    #: ``hidden_act`` values the family may have (the default: SiLU only); see :data:`._keys.ACTIVATIONS`.
    activations: tuple[str, ...] = ("silu",)
    act_keys: Keys = ("hidden_act",)
    #: gpt-oss: swigluoai (alpha 1.702, beta 1, clamp ``swiglu_limit``) on interleaved gate/up rows.
    swigluoai: bool = False
    #: MiniMax-M3: ``hidden_act: swigluoai`` with ``swiglu_alpha`` / ``swiglu_beta`` / ``swiglu_limit`` from the
    #: config (vLLM's MiniMaxM3Config defaults 1.702 / 1.0 / 7.0), gate and up stacked, not interleaved.
    swigluoai_keys: bool = False
    #: gpt-oss: the routed experts' projections have biases.
    expert_bias: bool = False
    #: Module names under ``model.layers.<i>``: the MoE block, its experts and its shared expert(s).
    moe_module: str = "mlp"
    shared_module: str = "shared_experts"
    #: What the family implies that its config does not say, each with its source (reported as assumptions).
    implied: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Layer:
    index: int
    role: LayerRole
    num_experts: int
    top_k: int
    site: Site


@dataclass(frozen=True)
class _Shape:
    hidden_size: int
    moe_intermediate_size: int
    num_experts: int
    top_k: int
    num_shared_experts: int
    shared_width: int | None = None
    shared_gate: bool = False


# ---------------------------------------------------------------------------------------------


def _shape(view: ConfigView, rules: FamilyRules) -> _Shape:
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
    return _Shape(hidden, inter, experts, top_k, shared, width, gate)


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


def _main_schedule(view: ConfigView, rules: FamilyRules, n_layers: int) -> list[tuple[int, LayerRole]]:
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


def _site(rules: FamilyRules, role: str, index: int, n_layers: int) -> Site:
    label = f"layer {index} ({role})"
    if rules.naming == "deepseek_v4":
        if role in ("mtp", "draft"):
            return deepseek_v4_site(label, None, index - n_layers)
        return deepseek_v4_site(label, index, None)
    return hf_site(label, index, block=rules.moe_module, shared=rules.shared_module)


def _extra_layers(view: ConfigView, rules: FamilyRules, shape: _Shape, n_layers: int) -> list[_Layer]:
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
    return [_Layer(i, role, experts, top_k, _site(rules, role, i, n_layers)) for i in range(n_layers, n_layers + count)]


def _scoring(view: ConfigView, rules: FamilyRules) -> Scoring:
    if rules.forced_scoring is not None:
        return rules.forced_scoring
    value = view.get_choice(
        rules.scoring_keys, [s.value for s in Scoring], default=rules.default_scoring.value, what="router scoring"
    )
    return Scoring(value)


def _routing(view: ConfigView, rules: FamilyRules, shape: _Shape) -> tuple[Routing, Routing]:
    """Routing of score layers and of hash layers."""
    scoring = _scoring(view, rules)
    if rules.bias == "always":
        bias = True
    elif rules.bias == "never":
        bias = False
    elif rules.bias == "key":
        bias = view.get_bool(rules.bias_keys, default=False, what="score-correction bias")
    else:
        method = view.get_str("topk_method", default=rules.default_topk_method, what="expert selection")
        bias = method == "noaux_tc"
    if rules.forced_renormalize is not None:
        renormalize = rules.forced_renormalize
    else:
        renormalize = view.get_bool(rules.renorm_keys, default=rules.default_renormalize, what="renormalize")
    groups = view.get_int(rules.group_keys, lo=1, hi=MAX_EXPERTS, default=1, what="expert groups")
    topk_groups = view.get_int("topk_group", lo=1, hi=MAX_EXPERTS, default=1, what="groups chosen per token")
    if topk_groups > groups:
        raise view.error(
            view.lookup("topk_group")[0],  # type: ignore[index]
            topk_groups,
            f"topk_group {topk_groups} exceeds n_group={groups}",
        )
    if groups > 1 and shape.num_experts % groups:
        raise view.error(
            view.lookup(rules.group_keys)[0],  # type: ignore[index]
            groups,
            f"n_routed_experts={shape.num_experts} is not divisible by n_group={groups}",
        )
    scale = view.get_float(rules.scaling_keys, gt=0.0, hi=MAX_SCALING_FACTOR, default=1.0, what="routed scaling factor")
    score = Routing(
        scoring=scoring,
        hash=False,
        correction_bias=bias,
        renormalize=renormalize,
        num_groups=groups,
        topk_groups=topk_groups,
        routed_scaling_factor=scale,
        weight_on_input=rules.weight_on_input
        or (bool(rules.weight_on_input_keys) and view.get_bool(rules.weight_on_input_keys, default=False)),
    )
    hashed = score.model_copy(update={"hash": True, "correction_bias": False})
    return score, hashed


def _activation(view: ConfigView, rules: FamilyRules) -> Activation:
    act = view.lookup(rules.act_keys)
    kind = ActivationKind.SWIGLU
    if act is not None and act[1] != "silu":
        kind_name = keys.ACTIVATIONS.get(act[1]) if isinstance(act[1], str) else None
        if kind_name is None or act[1] not in rules.activations:
            allowed = ", ".join(rules.activations)
            raise view.error(
                act[0],
                act[1],
                f"the oracle describes {rules.family} experts with {allowed} (SwiGLU for silu)",
                fix="describe the model manually (--activation)",
            )
        kind = ActivationKind(kind_name)
    if kind is ActivationKind.SITU:
        alpha = view.get_float(keys.SITU_ALPHA, gt=0.0, hi=1e3, default=1.0, what="SiTU tanh scale")
        beta = view.get_float(keys.SITU_BETA, gt=0.0, hi=1e3, default=1.0, what="SiTU linear scale")
        return Activation(kind=kind, alpha=alpha, beta=beta)
    if rules.swigluoai_keys and kind is ActivationKind.SWIGLU and act is not None and act[1] == "swigluoai":
        alpha = view.get_float("swiglu_alpha", gt=0.0, hi=1e3, default=keys.SWIGLUOAI_ALPHA, what="swigluoai alpha")
        beta = view.get_float("swiglu_beta", gt=-1e3, hi=1e3, default=1.0, what="swigluoai beta (up + beta)")
        limit = view.get_float("swiglu_limit", gt=0.0, hi=MAX_SWIGLU_LIMIT, default=7.0, what="swigluoai clamp")
        return Activation(kind=kind, clamp=limit, alpha=alpha, beta=beta)
    if rules.swigluoai:
        limit = view.get_float(
            "swiglu_limit", gt=0.0, hi=MAX_SWIGLU_LIMIT, default=7.0, what="swigluoai clamp; gpt-oss uses 7.0"
        )
        return Activation(clamp=limit, alpha=keys.SWIGLUOAI_ALPHA, beta=1.0, interleaved=True)
    if rules.optional_clamp and view.has("swiglu_limit"):
        limit = view.get_float("swiglu_limit", gt=0.0, hi=MAX_SWIGLU_LIMIT, what="SwiGLU pre-activation clamp")
        return Activation(kind=kind, clamp=limit)
    if not rules.clamp:
        return Activation(kind=kind)
    limit = view.get_float(
        "swiglu_limit", gt=0.0, hi=MAX_SWIGLU_LIMIT, what="SwiGLU pre-activation clamp; DeepSeek V4 uses 10.0"
    )
    return Activation(kind=kind, clamp=limit)


# ---------------------------------------------------------------------------------------------
# Grouping
# ---------------------------------------------------------------------------------------------


def _quant_key(spec: QuantSpec | None) -> tuple | None:
    if spec is None:
        return None
    return (spec.format, spec.block, spec.scale_format, spec.global_scale)


def _group_layers(rows: list[dict[str, Any]]) -> tuple[MoELayerGroup, ...]:
    by_role: dict[LayerRole, dict[tuple, list[dict[str, Any]]]] = {}
    for row in rows:
        key = (
            row["hidden_size"],
            row["moe_intermediate_size"],
            row["num_experts"],
            row["top_k"],
            row["num_shared_experts"],
            _quant_key(row["weight_quant"]),
            _quant_key(row["shared_expert_quant"]),
            row["activation"],
            row["routing"],
            row["shared_expert_width"],
            row["shared_expert_gate"],
            row["expert_bias"],
        )
        by_role.setdefault(row["role"], {}).setdefault(key, []).append(row)

    groups: list[MoELayerGroup] = []
    for role, buckets in by_role.items():
        base = ROLE_GROUP_NAMES[role]
        names: list[str] = []
        for members in buckets.values():
            if len(buckets) == 1:
                name = base
            else:
                quant = members[0]["weight_quant"]
                name = f"{base}_{quant.format.value}"
                if name in names:
                    tile = f"{quant.block[0]}x{quant.block[1]}" if quant.block else "none"
                    name = f"{base}_{quant.format.value}_{tile}"
                suffix = 2
                stem = name
                while name in names:
                    name = f"{stem}_{suffix}"
                    suffix += 1
            names.append(name)
            first = members[0]
            groups.append(
                MoELayerGroup(
                    name=name,
                    role=role,
                    layers=tuple(m["index"] for m in members),
                    hidden_size=first["hidden_size"],
                    moe_intermediate_size=first["moe_intermediate_size"],
                    num_experts=first["num_experts"],
                    top_k=first["top_k"],
                    num_shared_experts=first["num_shared_experts"],
                    shared_expert_quant=first["shared_expert_quant"],
                    weight_quant=first["weight_quant"],
                    activation=first["activation"],
                    routing=first["routing"],
                    shared_expert_width=first["shared_expert_width"],
                    shared_expert_gate=first["shared_expert_gate"],
                    expert_bias=first["expert_bias"],
                )
            )
    return order_groups(groups)


def order_groups(groups: list[MoELayerGroup]) -> tuple[MoELayerGroup, ...]:
    """Main (most layers; ties: earliest first layer) group first, then the others in model order."""
    if not groups:
        return ()
    main = max(groups, key=lambda g: (len(g.layers), -min(g.layers)))
    rest = sorted((g for g in groups if g is not main), key=lambda g: min(g.layers))
    return (main, *rest)


# ---------------------------------------------------------------------------------------------


def describe_with_rules(
    config: dict,
    hf_quant_config: Any,
    rules: FamilyRules,
    *,
    model_id: str,
    source: str,
) -> ModelDescription:
    view = ConfigView.of(config, model_id)
    if rules.check is not None:
        rules.check(view)
    n_layers = view.get_int("num_hidden_layers", lo=1, hi=MAX_LAYERS, what="decoder layers")
    shape = _shape(view, rules)
    main = _main_schedule(view, rules, n_layers)
    layers = [_Layer(i, role, shape.num_experts, shape.top_k, _site(rules, role, i, n_layers)) for i, role in main]
    layers += _extra_layers(view, rules, shape, n_layers)
    score_routing, hash_routing = _routing(view, rules, shape)
    activation = _activation(view, rules)
    resolver = QuantResolver(view, hf_quant_config, expert_dtype_required=rules.expert_dtype_required)

    rows = []
    for layer in layers:
        rows.append(
            {
                "index": layer.index,
                "role": layer.role,
                "hidden_size": shape.hidden_size,
                "moe_intermediate_size": shape.moe_intermediate_size,
                "num_experts": layer.num_experts,
                "top_k": layer.top_k,
                "num_shared_experts": shape.num_shared_experts,
                "weight_quant": resolver.routed(layer.site),
                "shared_expert_quant": resolver.shared(layer.site) if shape.num_shared_experts else None,
                "activation": activation,
                "routing": hash_routing if layer.role == "hash" else score_routing,
                "shared_expert_width": shape.shared_width,
                "shared_expert_gate": shape.shared_gate,
                "expert_bias": rules.expert_bias,
            }
        )

    architecture, model_type = _identity(config, rules)
    desc = ModelDescription(
        model=model_id,
        architecture=architecture,
        model_type=model_type,
        family=rules.family,
        layer_groups=_group_layers(rows),
        num_hidden_layers=n_layers,
        source=source,
        assumptions=rules.implied,
    )
    footprint = describe_footprint(config, hf_quant_config, desc, resolver)
    update: dict[str, Any] = {"attention": read_attention(config)}
    if footprint is not None:
        update["footprint"] = footprint
    return desc.model_copy(update=update)


def _identity(config: dict, rules: FamilyRules) -> tuple[str, str]:
    archs = config.get("architectures")
    architecture = archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else ""
    model_type = config.get("model_type")
    return architecture or rules.architecture, model_type if isinstance(model_type, str) else ""
