"""SGLang 0.5.23's ``FusedMoE``, replaced through its ``HookRegistry``: planned layers run moe-oracle's runtime.

Registered by :func:`moe_oracle.engines.sglang.plugin.register` (a class ``REPLACE`` on
``sglang.srt.layers.moe.fused_moe_triton.layer.FusedMoE``; SGLang substitutes the class and rebinds the
modules that imported it, ``plugins/hook_registry.py:255-281``) only in a process whose inherited plan
gives a layer group to moe-oracle. For every layer:

* construction: SGLang's own ``__init__`` runs first (its quant method creates the checkpoint-layout
  parameters); a layer whose decoder index the plan gives to moe-oracle then checks the parameters
  (:func:`moe_oracle.engines.bridge.check_parameters`, SGLang's layouts), builds the moe-oracle layer
  (the shared symmetric buffer is allocated now, before SGLang sizes its KV cache) and gives its quant
  method a per-instance subclass whose ``process_weights_after_loading`` hands the loaded parameters to the
  bridge and frees SGLang's copies;
* forward: SGLang's router has produced the top-k ids and weights (``StandardTopKOutput``); the bridge runs
  the fused layer on them; SGLang's MoE block adds its shared experts as it does for its own runner.

Every other layer defers to ``FusedMoE`` in each method. The SGLang-free part is :mod:`moe_oracle.engines.bridge`.
"""

from __future__ import annotations

import logging
from typing import Any

import torch
from sglang.srt.layers.moe.fused_moe_triton.layer import FusedMoE

from moe_oracle.engines.bridge import ENGINE_PARAMS, LayerPlan, MegaMoEBridge, check_parameters

logger = logging.getLogger("sglang.plugins.moe_oracle")


class MoEOracleFusedMoE(FusedMoE):
    """SGLang's ``FusedMoE``; with a moe-oracle plan for its layer, moe-oracle's fused layer."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._moe_oracle: MegaMoEBridge | None = None
        plan = _plan_for(int(self.layer_id))
        if plan is not None:
            self._moe_oracle_adopt(plan)

    def _moe_oracle_adopt(self, plan: LayerPlan) -> None:
        ep_size, ep_rank = int(self.moe_ep_size), int(self.moe_ep_rank)
        local = plan.group.num_experts // ep_size
        where = f"moe-oracle: layer {self.layer_id} ({plan.variant})"
        if int(self.num_fused_shared_experts) or int(self.moe_tp_size) != 1 or int(self.num_local_experts) != local:
            raise ValueError(
                f"{where}: SGLang built {self.num_local_experts} local experts (fused shared experts "
                f"{self.num_fused_shared_experts}, MoE TP {self.moe_tp_size}); moe-oracle's layer needs {local} whole "
                "routed experts per rank. Fix: --disable-shared-experts-fusion and --ep-size equal to --tp-size"
            )
        check_parameters(dict(self.named_parameters(recurse=False)), plan.group, local, engine="sglang")
        ep_group = None
        if ep_size > 1:
            from sglang.srt.distributed.parallel_state import get_moe_ep_group

            ep_group = get_moe_ep_group().device_group
        device = f"cuda:{torch.cuda.current_device()}" if torch.cuda.is_available() else "cpu"
        self._moe_oracle = MegaMoEBridge.for_plan(
            plan, ep_rank=ep_rank, ep_size=ep_size, ep_group=ep_group, device=device, engine="sglang"
        )
        self._moe_oracle.w13_up_first = bool(getattr(self.quant_method, "load_up_proj_weight_first", False))
        _adopt_quant_method(self)
        logger.debug("%s: served by %s", where, self._moe_oracle.layer.key)

    def _moe_oracle_load(self) -> None:
        """SGLang's loaded parameters -> moe-oracle's kernel layout; SGLang's copies are freed."""
        assert self._moe_oracle is not None
        names = ENGINE_PARAMS["sglang"][self._moe_oracle.quant.format]
        self._moe_oracle.load({n: getattr(self, n).data for n in names})
        for name in names:
            old = getattr(self, name)
            setattr(self, name, torch.nn.Parameter(old.data.new_empty(0), requires_grad=False))

    def forward(self, hidden_states: torch.Tensor, topk_output: Any, *args: Any, **kwargs: Any) -> torch.Tensor:
        if self._moe_oracle is None:
            return super().forward(hidden_states, topk_output, *args, **kwargs)
        weights, ids = topk_output.topk_weights, topk_output.topk_ids
        if self._moe_oracle.ep_size == 1:
            return self._moe_oracle.forward(hidden_states, weights, ids)
        # SGLang hands every MoE rank the same (gathered) tokens and sums the ranks' outputs afterwards: each rank
        # dispatches its own slice through the fused kernel (which reaches every rank's experts) and contributes
        # that slice's full output, zeros elsewhere
        t = int(hidden_states.shape[0])
        step = -(-t // self._moe_oracle.ep_size)
        lo = min(t, step * int(self.moe_ep_rank))
        hi = min(t, lo + step)
        out = torch.zeros_like(hidden_states)
        out[lo:hi] = self._moe_oracle.forward(hidden_states[lo:hi], weights[lo:hi], ids[lo:hi], tokens_across_dp=t)
        return out


def _plan_for(layer_index: int) -> LayerPlan | None:
    import os

    from moe_oracle.engines.sglang.shipped import plan_for, shipped_plan

    plan = shipped_plan(os.environ)
    return None if plan is None else plan_for(plan, layer_index)


def _adopt_quant_method(layer: MoEOracleFusedMoE) -> None:
    """Give this layer's quant method a per-instance subclass of its own class (the name is kept)."""
    base = type(layer.quant_method)

    def process_weights_after_loading(self: Any, module: Any) -> None:
        module._moe_oracle_load()

    adopted = type(
        base.__name__,
        (base,),
        {
            "process_weights_after_loading": process_weights_after_loading,
            "__module__": base.__module__,
            "__qualname__": base.__qualname__,
        },
    )
    layer.quant_method.__class__ = adopted
