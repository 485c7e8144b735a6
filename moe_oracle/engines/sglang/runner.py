"""The MoE runner SGLang 0.5.23 resolves, and what it does to the expert parameters moe-oracle's layer reads.

moe-oracle's SGLang layer (``engines/sglang/layer.py``) never runs SGLang's runner for the layers it serves, but the
runner SGLang resolved decides how SGLang's weight loader lays the experts out and what SGLang's ``TopK`` returns:

* ``flashinfer_trtllm`` / ``flashinfer_trtllm_routed``: the loader swaps the ``w1``/``w3`` shards of
  ``Fp8MoEMethod``, ``UnquantizedFusedMoEMethod`` and ``CompressedTensorsMxInt4MoE`` (w13 is ``[up; gate]``,
  ``layers/moe/fused_moe_triton/layer.py:1375-1380``), pads the expert width to a multiple of 128
  (``layer.py:513-521``) and ``TopK`` returns a ``BypassedTopKOutput`` where the router allows it
  (``layers/moe/topk.py:793-807``);
* ``load_up_proj_weight_first`` of the layout method puts ``w1`` second as well (``layer.py:815-826``;
  ``UnquantizedFusedMoEMethod`` under FlashInfer CUTLASS, ``layers/quantization/unquant.py:1226-1229``);
* ``triton_kernels``: the loader transposes every expert matrix (``layer.py:849-851``).

On Blackwell (SM100) SGLang's own model overrides turn ``--moe-runner-backend auto`` into ``flashinfer_trtllm``
for GLM-4.x, the Qwen3-MoE family and the DeepSeek family (:data:`SM100_TRTLLM_OVERRIDES`). moe-oracle's plans
pin ``--moe-runner-backend triton`` there (:func:`runner_pin`): SGLang then loads the checkpoint layout as it is,
and its layers left to SGLang run its Triton MoE. The layer still reads what SGLang resolved at construction,
before any weight loads (:class:`ResolvedLayer`): it adapts to the w13 order and a bypassed top-k, and refuses a
layout it cannot read with the flag that fixes it.

This module imports neither SGLang nor torch.
"""

from __future__ import annotations

from dataclasses import dataclass

from moe_oracle.model.types import WeightFormat
from moe_oracle.releases import sglang as release

#: the runner moe-oracle's plans pin where SGLang would resolve another (SGLang's default CUDA MoE runner)
PINNED_RUNNER = "triton"
RUNNER_FLAG = f"--moe-runner-backend {PINNED_RUNNER}"


@dataclass(frozen=True)
class RunnerOverride:
    """One SGLang model override that turns ``--moe-runner-backend auto`` into ``runner`` on SM100 when the
    checkpoint's quantization (as SGLang names it; None: unquantized) is one of ``quantizations`` and no
    ``--moe-a2a-backend`` is set."""

    architectures: tuple[str, ...]
    quantizations: tuple[str | None, ...]
    runner: str
    source: str


SM100_TRTLLM_OVERRIDES: tuple[RunnerOverride, ...] = (
    RunnerOverride(
        ("Glm4MoeForCausalLM",),
        ("modelopt_fp4", None),
        "flashinfer_trtllm",
        f"{release.SOURCE}/srt/arg_groups/model_overrides/glm4_moe.py#L15-L42",
    ),
    RunnerOverride(
        (
            "Qwen3MoeForCausalLM",
            "Qwen3VLMoeForConditionalGeneration",
            "Qwen3NextForCausalLM",
            "Qwen3_5MoeForConditionalGeneration",
            "InternS2PreviewForConditionalGeneration",
            "Qwen3_5ForConditionalGeneration",
            "Qwen4ExpForConditionalGeneration",
        ),
        ("fp8", "modelopt_fp4", "modelopt_mixed", None),
        "flashinfer_trtllm",
        f"{release.SOURCE}/srt/arg_groups/model_overrides/qwen3_moe.py#L29-L90",
    ),
    RunnerOverride(
        (
            "DeepseekV3ForCausalLM",
            "DeepseekV32ForCausalLM",
            "KimiK25ForConditionalGeneration",
            "MistralLarge3ForCausalLM",
            "PixtralForConditionalGeneration",
            "GlmMoeDsaForCausalLM",
            "Glm5NextForConditionalGeneration",
            "HYV4ForCausalLM",
            "HYV4ForCausalLMNextN",
            "Dots3NoteForCausalLM",
        ),
        ("fp8", "modelopt_fp8", "modelopt_fp4", "modelopt_mixed", "compressed-tensors", None),
        "flashinfer_trtllm",
        f"{release.SOURCE}/srt/arg_groups/overrides.py#L744-L831",
    ),
)

#: moe-oracle's weight format -> the ``quantization`` SGLang resolves for such a checkpoint (None: unquantized)
_QUANTIZATION: dict[WeightFormat, str | None] = {
    WeightFormat.BF16: None,
    WeightFormat.FP8_BLOCK: "fp8",
    WeightFormat.FP8_CHANNEL: "fp8",
    WeightFormat.NVFP4: "modelopt_fp4",
    WeightFormat.INT4: "compressed-tensors",
}


def sm100_override(architecture: str, formats: tuple[WeightFormat, ...]) -> RunnerOverride | None:
    """The SM100 override SGLang applies to ``architecture`` with experts of ``formats`` under ``auto``, if any."""
    for override in SM100_TRTLLM_OVERRIDES:
        if architecture in override.architectures and any(
            fmt in _QUANTIZATION and _QUANTIZATION[fmt] in override.quantizations for fmt in formats
        ):
            return override
    return None


def runner_pin(arch: str, architecture: str, formats: tuple[WeightFormat, ...]) -> RunnerOverride | None:
    """The override a plan served by moe-oracle's plug-in must pin away (``--moe-runner-backend triton``), or None.

    ``arch`` is the device's (``sm90``, ``sm100``, ...). NVFP4 experts are never pinned to Triton: SGLang's
    ModelOpt NVFP4 method has no Triton runner, and moe-oracle's SGLang layer does not read NVFP4 parameters."""
    if arch != "sm100" or WeightFormat.NVFP4 in formats:
        return None
    return sm100_override(architecture, formats)


@dataclass(frozen=True)
class ResolvedLayer:
    """What SGLang resolved for one ``FusedMoE`` layer, read at construction (before any weight loads).

    ``runner``: the layer's runner backend (``FusedMoE.runner_backend``, ``layer.py:577-579``; ``none``: a direct
    kernel); ``quant_method``: its quant method's class; ``up_proj_first``: ``load_up_proj_weight_first`` of the
    layout method (``layer.py:815-826``); ``loader_swaps_w13``: the loader exchanges the ``w1``/``w3`` shards
    (``layer.py:1375-1380``); ``transposed``: the loader transposes expert matrices (``triton_kernels``,
    ``layer.py:849-851``); ``intermediate``: the expert width SGLang created the parameters with
    (``layer.py:513-521``); ``deferred_finalize``: the runner's deferred-finalize mode is on (``layer.py:578-584``)."""

    runner: str
    quant_method: str
    up_proj_first: bool
    loader_swaps_w13: bool
    transposed: bool
    intermediate: int
    deferred_finalize: bool = False

    @property
    def w13_up_first(self) -> bool:
        """SGLang's loader fills w13 as ``[up; gate]`` (else ``[gate; up]``, the checkpoint's order)."""
        return self.up_proj_first != self.loader_swaps_w13

    def refusal(self, intermediate: int) -> str | None:
        """One line naming what moe-oracle's layer cannot read here and the flag that fixes it, or None.

        ``intermediate``: the checkpoint's expert width (what the plan's layer computes with)."""
        if self.transposed:
            return (
                f"SGLang's {self.runner} MoE runner loads the experts transposed (layer.py:849-851), a layout "
                f"moe-oracle's layer does not read. Fix: {RUNNER_FLAG}"
            )
        if self.intermediate != intermediate:
            return (
                f"SGLang's {self.runner} MoE runner pads the expert width {intermediate} to {self.intermediate} "
                f"(layer.py:513-521); moe-oracle's layer reads the checkpoint's width. Fix: {RUNNER_FLAG}"
            )
        return None

    def line(self) -> str:
        """How this layer's parameters were resolved, for the plug-in's INFO line."""
        order = "[up; gate]" if self.w13_up_first else "[gate; up]"
        return f"SGLang resolved runner {self.runner}, quant method {self.quant_method}, w13 loaded {order}"
