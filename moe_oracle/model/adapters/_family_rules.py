"""What one model family's config means: :class:`FamilyRules` (the defaults and quirks of one family, taken from
the reference notes) and :class:`SharedRule` (how it states its shared experts).

:mod:`.families` declares one per family; :mod:`.describe` reads a config through them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from moe_oracle.model.adapters import _keys as keys
from moe_oracle.model.adapters._view import ConfigView, Keys
from moe_oracle.model.types import (
    Scoring,
)


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
