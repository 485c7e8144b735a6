"""vLLM 0.33's ``RoutedExperts``, out of tree: layers the plan gives to moe-oracle run its runtime.

Registered by the plug-in in every vLLM process through vLLM's own mechanism
(``RoutedExperts.register_oot``, keyed by the class name; vLLM 0.33 ``model_executor/custom_op.py``
``PluggableLayer.__new__``), so every ``FusedMoEFactory`` layer (DeepSeek V4 on NVIDIA, GLM-4.x,
GLM-5.x, DeepSeek-V3-style) is built as :class:`MoEOracleRoutedExperts`. Nothing of vLLM is patched:

* construction: vLLM's own ``__init__`` runs first (its quant method creates the checkpoint-layout
  parameters); then, when ``VllmConfig.additional_config["moe_oracle"]`` gives this layer's group to
  a moe-oracle variant, the layer checks the parameters, builds the moe-oracle layer (the shared
  symmetric buffer is allocated now, before vLLM profiles memory for the KV cache), and adopts the
  quant method as a per-instance subclass of its own class (same class name, so vLLM's weight loader
  takes the same branches) that reports no monolithic kernel, an internal dispatch (the fused
  kernel moves tokens between EP ranks itself) and replaces ``process_weights_after_loading``;
* loading: vLLM's loader fills the parameters; ``process_weights_after_loading`` hands them to the
  bridge (moe-oracle's weight transform, expert chunk by chunk) and frees vLLM's copies;
* forward: vLLM's router has produced top-k ids and weights (scaled where vLLM folds the routed
  scaling factor); the bridge runs the fused layer; vLLM's runner adds the shared experts.

Every other layer, and every layer when the plug-in is off, is vLLM's own code path: the class
defers to ``RoutedExperts`` in each method. The vLLM-free part is :mod:`.bridge`.
"""

from __future__ import annotations

import logging
import re
from typing import Any

import torch
from vllm.model_executor.layers.fused_moe.routed_experts import RoutedExperts

from moe_oracle.engines.vllm.bridge import PARAMS, LayerPlan, MegaMoEBridge, check_parameters
from moe_oracle.engines.vllm.shipped import plan_for_layer
from moe_oracle.model.types import WeightFormat

logger = logging.getLogger("vllm.plugins.moe_oracle")

_LAYER_INDEX = re.compile(r"(?:^|\.)layers\.(\d+)\.")


def layer_index(layer_name: str) -> int | None:
    """The decoder-layer index in a vLLM module name (``model.layers.12.mlp.experts`` -> 12)."""
    found = _LAYER_INDEX.search(layer_name)
    return int(found.group(1)) if found else None


class MoEOracleRoutedExperts(RoutedExperts):
    """vLLM's ``RoutedExperts``; with a moe-oracle plan for its layer group, moe-oracle's fused layer."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._moe_oracle: MegaMoEBridge | None = None
        plan = _current_plan(self.layer_name)
        if plan is not None:
            self._moe_oracle_adopt(plan)

    # ------------------------------------------------------------------ construction
    def _moe_oracle_adopt(self, plan: LayerPlan) -> None:
        cfg = self.moe_config
        ep_size, ep_rank = int(cfg.ep_size), int(cfg.ep_rank)
        local = plan.group.num_experts // ep_size
        if int(self.local_num_experts) != local or not _linear_placement(self, ep_rank, local):
            raise ValueError(
                f"moe-oracle: {self.layer_name} holds {self.local_num_experts} experts in a non-linear placement; "
                f"moe-oracle's {plan.variant} needs experts [{ep_rank * local}, {(ep_rank + 1) * local}) on EP rank "
                f"{ep_rank}. Fix: use --expert-placement-strategy linear (the default) and no redundant experts."
            )
        padded = _padded_sizes(self, plan)
        if padded is not None:
            raise ValueError(f"moe-oracle: {self.layer_name} ({plan.variant}): {padded}")
        check_parameters(dict(self.named_parameters(recurse=False)), plan.group, local)
        ep_group = None
        if ep_size > 1:
            from vllm.distributed import get_ep_group

            ep_group = get_ep_group().device_group
        device = "cpu" if plan.emulate and not torch.cuda.is_available() else _device()
        self._moe_oracle = MegaMoEBridge.for_plan(
            plan, ep_rank=ep_rank, ep_size=ep_size, ep_group=ep_group, device=device
        )
        _adopt_quant_method(self)
        logger.debug("moe-oracle: %s runs %s", self.layer_name, self._moe_oracle.layer.key)

    def _moe_oracle_load(self) -> None:
        """vLLM's loaded parameters -> moe-oracle's kernel layout; vLLM's copies are freed."""
        assert self._moe_oracle is not None
        names = PARAMS[self._moe_oracle.quant.format]
        self._moe_oracle.load({n: getattr(self, n).data for n in names})
        for name in names:  # vLLM's checkpoint-layout copies are not needed any more
            old = getattr(self, name)
            setattr(self, name, torch.nn.Parameter(old.data.new_empty(0), requires_grad=False))

    # ------------------------------------------------------------------ runtime
    def _ensure_moe_quant_config_init(self) -> None:
        if self._moe_oracle is None:
            super()._ensure_moe_quant_config_init()

    def forward_modular(
        self,
        x: torch.Tensor,
        topk_weights: torch.Tensor,
        topk_ids: torch.Tensor,
        shared_experts: Any = None,
        shared_experts_input: torch.Tensor | None = None,
    ) -> Any:
        if self._moe_oracle is None:
            return super().forward_modular(x, topk_weights, topk_ids, shared_experts, shared_experts_input)
        return self._moe_oracle.forward(x, topk_weights, topk_ids, tokens_across_dp=_tokens_across_dp())


def _current_plan(layer_name: str) -> LayerPlan | None:
    """This layer's plan from the config hook; a plan of another shape, or an explicit request the hook never
    planned (an architecture registered after the plug-in), raises ``ValueError`` in one line: an explicit
    choice is never ignored."""
    import os

    from vllm.config import get_current_vllm_config_or_none

    from moe_oracle.engines.vllm.shipped import KEY, read_request
    from moe_oracle.errors import BadInputError

    cfg = get_current_vllm_config_or_none()
    extra = getattr(cfg, "additional_config", None) if cfg is not None else None
    index = layer_index(layer_name)
    try:
        planned = isinstance(extra, dict) and isinstance(extra.get(KEY), dict) and "plan" in extra[KEY]
        if not planned:
            request = read_request(extra, os.environ)
            if request.explicit:
                raise BadInputError(
                    f"{request.label()} was never planned: the moe-oracle config hook did not run for this "
                    "model's architecture",
                    fix="register the architecture before vLLM builds its config, or drop the moe_oracle backend.",
                )
            return None
        return None if index is None else plan_for_layer(extra, index)
    except BadInputError as exc:
        raise ValueError(f"moe-oracle: {layer_name}: {exc.one_line()}") from None


def _padded_sizes(layer: Any, plan: LayerPlan) -> str | None:
    """vLLM rounds H or I up for the MoE backend its oracle selected before creating the parameters
    (``RoutedExperts.__init__``: ``quant_method.maybe_roundup_sizes``, ``fused_moe/routed_experts.py:171-184``;
    BF16 under FlashInfer TRT-LLM rounds I up to 128, ``fused_moe/oracle/unquantized.py:385-397``). The loader
    still fills w13 as ``[w1; w3]`` whatever the backend (``routed_experts.py:565-570``: the backends reorder in
    ``process_weights_after_loading``, which moe-oracle replaces) and the router hands the layer plain top-k ids and
    weights (``forward_modular``; the adopted quant method is not monolithic): padding is the one resolved layout
    moe-oracle's layer cannot read. One line naming the fix, or None."""
    got = (int(layer.hidden_size), int(layer.intermediate_size_per_partition))
    want = (plan.group.hidden_size, plan.group.moe_intermediate_size)
    if got == want:
        return None
    fix = (
        "--moe-backend triton (vLLM's Triton MoE creates the checkpoint's sizes)"
        if plan.group.weight_format in (WeightFormat.BF16, WeightFormat.FP8_BLOCK)
        else "serve this layer group with vLLM's own MoE backend (additional-config moe_oracle.backend 'vllm')"
    )
    return (
        f"vLLM's {type(layer.quant_method).__name__} rounded hidden x intermediate {want[0]} x {want[1]} up to "
        f"{got[0]} x {got[1]} for the MoE backend it selected; moe-oracle's layer reads the checkpoint's sizes. "
        f"Fix: {fix}"
    )


def _linear_placement(layer: Any, ep_rank: int, local: int) -> bool:
    expert_map = getattr(layer, "expert_map", None)
    if expert_map is None:
        return True
    want = torch.full_like(expert_map, -1)
    want[ep_rank * local : (ep_rank + 1) * local] = torch.arange(local, dtype=want.dtype, device=want.device)
    return bool(torch.equal(expert_map.cpu(), want.cpu()))


def _device() -> str:
    if torch.cuda.is_available():
        return f"cuda:{torch.cuda.current_device()}"
    return "cpu"


def _tokens_across_dp() -> int | None:
    """Tokens of this step over all DP ranks (vLLM's forward context), or None without DP metadata."""
    try:
        from vllm.forward_context import get_forward_context

        meta = get_forward_context().dp_metadata
    except Exception:  # no forward context (a direct call in a test): one rank's tokens stand for all
        return None
    if meta is None:
        return None
    return int(meta.num_tokens_across_dp_cpu.sum())


def _adopt_quant_method(layer: MoEOracleRoutedExperts) -> None:
    """Give this layer's quant method a per-instance subclass of its own class (the name is kept)."""
    base = type(layer.quant_method)

    def process_weights_after_loading(self: Any, module: Any) -> None:
        module._moe_oracle_load()

    def _false(self: Any) -> bool:
        return False

    def _true(self: Any) -> bool:
        return True

    adopted = type(
        base.__name__,
        (base,),
        {
            "process_weights_after_loading": process_weights_after_loading,
            "is_monolithic": property(_false),
            "supports_internal_mk": property(_true),
            "mk_can_overlap_shared_experts": property(_false),
            "__module__": base.__module__,
            "__qualname__": base.__qualname__,
        },
    )
    layer.quant_method.__class__ = adopted


def register_layer() -> type:
    """Register :class:`MoEOracleRoutedExperts` (once per process) and return it."""
    from vllm.model_executor.custom_op import op_registry_oot

    existing = op_registry_oot.get("RoutedExperts")
    if existing is MoEOracleRoutedExperts:
        return existing
    if existing is not None:
        raise RuntimeError(f"another plug-in already replaced vLLM's RoutedExperts ({existing.__module__})")
    return RoutedExperts.register_oot(MoEOracleRoutedExperts)
