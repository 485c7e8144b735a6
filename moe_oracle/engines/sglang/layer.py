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
* what SGLang resolved, checked at construction before any weight loads (:func:`read_resolved`,
  :mod:`moe_oracle.engines.sglang.runner`): the layer's MoE runner, its quant method and the order SGLang's
  loader fills w13 in (``[up; gate]`` under the FlashInfer TRT-LLM runners, which SGLang's SM100 model overrides
  pick for GLM-4.x, Qwen3-MoE and the DeepSeek family): the bridge reads that order; a layout it cannot read
  (transposed, padded expert width) is refused in one line naming ``--moe-runner-backend triton``;
* forward: SGLang's router has produced the top-k ids and weights (``StandardTopKOutput``; a
  ``BypassedTopKOutput`` is materialized with its own ``to_standard()``); the bridge runs the fused layer on
  them; SGLang's MoE block adds its shared experts as it does for its own runner.

The output is what SGLang's own ``FusedMoE`` returns to its block (0.5.23 source, checked on the CPU by
``tests/engines/test_real_sglang_layer.py``):

* routed scaling factor. ``TopK`` multiplies the top-k weights by ``routed_scaling_factor`` only when
  ``apply_routed_scaling_factor_on_output`` is set (``layers/moe/topk.py:1450-1451``), which the DeepSeek-style
  blocks set from the layer's ``should_fuse_routed_scaling_factor_in_topk`` (``models/deepseek_v2.py:760-795``;
  true only for quant methods declaring ``fuse_routed_scaling_factor_in_topk``, the MXFP4 FlashInfer/Marlin ones,
  NVFP4 ModelOpt off Marlin and the TRT-LLM runners, ``layers/moe/fused_moe_triton/layer.py:109-125, 615-617``).
  Otherwise the factor is applied after the experts, and where depends on the platform: on CUDA the runner
  applies ``moe_runner_config.routed_scaling_factor`` in its combine (triton ``moe_runner/triton_utils/
  fused_moe.py:976-1067``, deep_gemm ``moe_runner/deep_gemm.py:1293``, FlashInfer megamoe ``quantization/
  fp8.py:3244-3249``) and the block does not (``models/deepseek_v2.py:1416-1422``, ``models/glm4_moe.py:619-620``:
  ``if not _is_cuda ...: final_hidden_states *= self.routed_scaling_factor``); elsewhere the block applies it.
  moe-oracle's layer therefore multiplies its output by the factor exactly where SGLang's runner would:
  :func:`routed_output_scale`. (ROCm with ``SGLANG_USE_AITER=1`` is not covered: ``glm4_moe.py:619`` then leaves
  the factor to AITER's runner; moe-oracle's SGLang plans set ``SGLANG_USE_AITER=0``.)
* expert parallelism. SGLang gives every MoE rank the same tokens (replicated under TP attention, gathered across
  the attention-DP ranks under DP attention) and sums the ranks' MoE outputs afterwards
  (``post_experts_all_reduce``, ``layers/moe/utils.py:851-865``; the DP-attention reduce-scatter). The fused
  kernel reaches every rank's experts itself, so each rank dispatches only its slice of the tokens and returns
  that slice's full output with zeros elsewhere (the sum restores every token once). The numerics twin has no
  cross-rank dispatch (it computes this rank's experts, ``runtime/emulation.py``), so it takes every token and
  lets SGLang's sum add the ranks' experts, as SGLang's own EP ``FusedMoE`` does.

Every other layer defers to ``FusedMoE`` in each method. The SGLang-free part is :mod:`moe_oracle.engines.bridge`.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

import torch
from sglang.srt.layers.moe.fused_moe_triton.layer import FusedMoE
from sglang.srt.utils import is_cuda

from moe_oracle.engines.bridge import ENGINE_PARAMS, LayerPlan, MegaMoEBridge, check_parameters
from moe_oracle.engines.sglang.runner import RUNNER_FLAG, ResolvedLayer

logger = logging.getLogger("sglang.plugins.moe_oracle")
#: SGLang's blocks leave the routed scaling factor to the experts' runner on CUDA (see the module docstring)
RUNNER_SCALES = bool(is_cuda())
_ANNOUNCED: set[str] = set()


def routed_output_scale(routed_scaling_factor: float | None, fused_in_topk: bool, runner_scales: bool) -> float:
    """The factor moe-oracle's layer multiplies its output by: SGLang's ``routed_scaling_factor`` where SGLang's
    own runner would apply it (not folded into the top-k weights, and a platform whose blocks leave it to the
    runner), else 1."""
    if fused_in_topk or not runner_scales or routed_scaling_factor is None:
        return 1.0
    return float(routed_scaling_factor)


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
        resolved = read_resolved(self)
        why = resolved.refusal(plan.group.moe_intermediate_size)
        if why is not None:
            raise ValueError(f"{where}: {why}")
        check_parameters(dict(self.named_parameters(recurse=False)), plan.group, local, engine="sglang")
        ep_group = None
        if ep_size > 1:
            from sglang.srt.distributed.parallel_state import get_moe_ep_group

            ep_group = get_moe_ep_group().device_group
        device = f"cuda:{torch.cuda.current_device()}" if torch.cuda.is_available() else "cpu"
        #: the twin computes this rank's experts only: it takes every token and SGLang's EP sum adds the ranks
        self._moe_oracle_slices = ep_size > 1 and not plan.emulate
        if plan.emulate and ep_size > 1:  # every rank's tokens reach each twin (no buffer is sized from this)
            plan = replace(plan, max_tokens_per_rank=plan.max_tokens_per_rank * ep_size)
        self._moe_oracle = MegaMoEBridge.for_plan(
            plan, ep_rank=ep_rank, ep_size=ep_size, ep_group=ep_group, device=device, engine="sglang"
        )
        # the order SGLang's loader really fills w13 in: [up; gate] under the FlashInfer TRT-LLM runners
        self._moe_oracle.w13_up_first = resolved.w13_up_first
        # the fused layer returns the finished output: never the TRT-LLM runner's deferred-finalize triple
        self.supports_deferred_finalize = False
        fused = bool(self.should_fuse_routed_scaling_factor_in_topk)
        self._moe_oracle_scale = routed_output_scale(self.moe_runner_config.routed_scaling_factor, fused, RUNNER_SCALES)
        _adopt_quant_method(self)
        level = logging.DEBUG if _ANNOUNCED else logging.INFO  # once per process at INFO, each layer at DEBUG
        _ANNOUNCED.add(plan.variant)
        logger.log(
            level,
            "%s: served by moe-oracle's %s (EP %d/%d); %s",
            where,
            self._moe_oracle.layer.key,
            ep_rank,
            ep_size,
            resolved.line(),
        )

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
        weights, ids = standard_topk(topk_output, int(self.layer_id))
        if not self._moe_oracle_slices:
            out = self._moe_oracle.forward(hidden_states, weights, ids)
        else:
            # SGLang hands every MoE rank the same (gathered) tokens and sums the ranks' outputs afterwards: each
            # rank dispatches its own slice through the fused kernel (which reaches every rank's experts) and
            # contributes that slice's full output, zeros elsewhere
            t = int(hidden_states.shape[0])
            lo, hi = token_slice(t, self._moe_oracle.ep_size, int(self.moe_ep_rank))
            out = torch.zeros_like(hidden_states)
            out[lo:hi] = self._moe_oracle.forward(hidden_states[lo:hi], weights[lo:hi], ids[lo:hi], tokens_across_dp=t)
        return out if self._moe_oracle_scale == 1.0 else out.mul_(self._moe_oracle_scale)


def standard_topk(topk_output: Any, layer_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(topk_weights, topk_ids)`` of SGLang's top-k output. A ``BypassedTopKOutput`` (what ``TopK`` returns where
    the resolved runner routes in its own kernel, ``layers/moe/topk.py:793-807, 927-936``) is materialized by its own
    ``to_standard()`` (``topk.py:424-434``: SGLang's ``select_experts`` on the same logits and config); any other
    format moe-oracle's layer cannot take is refused in one line naming the flag that gives the standard one."""
    fmt = getattr(getattr(topk_output, "format", None), "name", None)
    if fmt == "BYPASSED":
        topk_output = topk_output.to_standard(layer_id)
    elif fmt not in (None, "STANDARD"):
        raise ValueError(
            f"moe-oracle: layer {layer_id}: SGLang's TopK returned the {fmt} format, which moe-oracle's layer does "
            f"not read. Fix: {RUNNER_FLAG}"
        )
    return topk_output.topk_weights, topk_output.topk_ids


def read_resolved(layer: FusedMoE) -> ResolvedLayer:
    """What SGLang resolved for ``layer`` (after its ``__init__``, before any weight loads), read from the
    attributes SGLang's own loader reads (:mod:`moe_oracle.engines.sglang.runner` cites each)."""
    from sglang.srt.layers.quantization.compressed_tensors.schemes import CompressedTensorsMxInt4MoE
    from sglang.srt.layers.quantization.fp8 import Fp8MoEMethod
    from sglang.srt.layers.quantization.unquant import UnquantizedFusedMoEMethod

    layout = getattr(layer, "weight_load_method", None) or layer.quant_method  # layer.py:157-160
    method = layer.scheme if getattr(layer, "scheme", None) is not None else layout  # layer.py:1332-1336
    if type(method).__name__ == "KTEPWrapperMethod":
        method = method.gpu_method
    trtllm = bool(getattr(layer, "use_flashinfer_trtllm_moe", False))
    runner = getattr(layer, "runner_backend", None)
    return ResolvedLayer(
        runner=str(getattr(runner, "value", runner)) if runner is not None else "none",
        quant_method=type(layer.quant_method).__name__,
        up_proj_first=bool(getattr(layout, "load_up_proj_weight_first", False)),
        loader_swaps_w13=trtllm
        and isinstance(method, (Fp8MoEMethod, UnquantizedFusedMoEMethod, CompressedTensorsMxInt4MoE)),
        transposed=bool(getattr(layer, "use_triton_kernels", False)),
        intermediate=int(layer.intermediate_size_per_partition),
        deferred_finalize=bool(getattr(layer, "supports_deferred_finalize", False)),
    )


def token_slice(tokens: int, ep_size: int, ep_rank: int) -> tuple[int, int]:
    """``[lo, hi)``: the rows rank ``ep_rank`` dispatches of the ``tokens`` every MoE rank holds (ceil-split; the
    last ranks may get fewer or none)."""
    step = -(-tokens // ep_size)
    lo = min(tokens, step * ep_rank)
    return lo, min(tokens, lo + step)


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
