"""The numerics twin of every fused kernel: ``EmulatedMegaMoE`` (key ``emulation:<variant>``).

Driven only by the variant's :class:`~moe_oracle.rules.recipe.Recipe`, its numerics convention and
its weight layout (``VariantSpec.numerics``, ``VariantSpec.layout``), it runs on CPU or GPU in plain torch:

1. the hidden states are quantized as the variant's staging does (bit-exact, the same code as
   its kernel class: ``StagingSpec.declared(spec)``) and dequantized to fp32;
2. per routed expert: ``h = x @ W13^T`` in fp32 on the dequantized operands (the kernels accumulate
   in fp32 with the block scales applied per K block; the twin applies them to the operands, which
   differs only by fp32 summation order); ``h`` rounded to BF16 when ``recipe.l1_output_bf16``;
3. the group's activation (SwiGLU with its clamp / alpha / beta, or gated GELU; a group its kernel cannot run,
   e.g. with expert biases or the router weight on the input, is refused with the variant's own reasons);
4. the top-k weight multiplies the SwiGLU output when ``recipe.weight_before_l2``;
5. the L2 input is requantized as the kernel's epilogue does (``actquant.fake_quant_intermediate``);
6. ``o = a @ W2^T`` in fp32, times the top-k weight if not applied before, rounded to BF16 when
   ``recipe.expert_output_bf16``;
7. the combine adds the top-k slots in slot order in fp32 and writes BF16.

The expert weights are the variant's canonical checkpoint (``canonical`` of its ``VariantSpec.layout`` module: the same
values the real kernel gets after its layout transform) and are dequantized expert by expert, so
the twin never holds more than one fp32 copy of the layer (and not even that unless
``options["cache_dequantized"]``).

Options (``LayerConfig.options``): ``recipe`` (a Recipe overriding the variant's),
``fp8_intermediate_scale`` ("kernel" power-of-two scales, default; "exact" FP32 amax/448 as the
PR #323 test reference), ``cache_dequantized`` (bool, default: when the fp32 layer fits in 1 GiB).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

import torch

from moe_oracle.model.types import ActivationKind
from moe_oracle.rules.recipe import ActQuant, Recipe
from moe_oracle.runtime.actquant import fake_quant_input, fake_quant_intermediate
from moe_oracle.runtime.errors import BackendUnavailableError, LayerInputError
from moe_oracle.runtime.interface import CheckpointExperts, LayerConfig, MegaMoELayer
from moe_oracle.runtime.quantize import dequantize_expert, dequantize_range, experts_to
from moe_oracle.runtime.reference import activate

if TYPE_CHECKING:
    from moe_oracle.rules import VariantSpec

CACHE_LIMIT_BYTES = 1 << 30
#: Activations :func:`~moe_oracle.runtime.reference.activate` computes.
MODELLED_ACTIVATIONS = frozenset({ActivationKind.SWIGLU, ActivationKind.GELU})


def layout_module(spec: VariantSpec) -> Any:
    """The weight-layout module ``spec.layout`` declares (``canonical``, ``allocate``, ``chunk``...).

    Raises :class:`BackendUnavailableError`, one line naming the variant's own package, when the variant
    declares none or it does not import.
    """
    from moe_oracle.registry import load_registry

    if not spec.layout:
        raise BackendUnavailableError(
            f"{spec.key} declares no weight-layout module (VariantSpec.layout).",
            fix="add layout='<package>.weights' to its VariantSpec (docs/adding-a-backend.md).",
        )
    try:
        return importlib.import_module(spec.layout)
    except Exception as exc:
        reason = " ".join(f"{type(exc).__name__}: {exc}".split())
        raise BackendUnavailableError(
            f"{spec.key}: its weight-layout module {spec.layout} does not import ({reason}).",
            fix=load_registry().origin(spec).reinstall() + ".",
        ) from None


class EmulatedMegaMoE(MegaMoELayer):
    """Torch emulation of ``spec``'s fused kernel (see the module docstring)."""

    def __init__(self, config: LayerConfig, spec: VariantSpec) -> None:
        super().__init__(config)
        self.spec = spec
        self.key = f"emulation:{spec.variant}"
        opts = dict(config.options)
        recipe = opts.get("recipe", spec.recipe)
        if not isinstance(recipe, Recipe):
            raise LayerInputError(f"options['recipe'] must be a Recipe, got {type(recipe).__name__}")
        self.recipe: Recipe = recipe
        self.vendor = spec.numerics
        self.fp8_scale = opts.get("fp8_intermediate_scale", "kernel")
        if self.fp8_scale not in ("kernel", "exact"):
            raise LayerInputError(
                f"options['fp8_intermediate_scale'] must be 'kernel' or 'exact', got {self.fp8_scale!r}"
            )
        self._refuse_what_the_kernel_cannot(spec, config)
        self._cache_opt = opts.get("cache_dequantized")
        self.device = torch.device(config.device)
        if self.device.type == "cuda" and not torch.cuda.is_available():
            raise BackendUnavailableError(
                f"{self.key}: LayerConfig.device is {config.device!r} but torch sees no GPU.",
                fix="pass LayerConfig(device='cpu') to run the emulation on the CPU.",
            )
        self._weights_mod = layout_module(spec)
        self.experts: CheckpointExperts | None = None
        self.l2_activation_scale: float | None = None
        self._cache: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def _refuse_what_the_kernel_cannot(self, spec: VariantSpec, config: LayerConfig) -> None:
        """A twin models its kernel: a group the kernel's contract excludes (expert biases, router weight on
        the input, integer weights, another activation kind) is refused with the variant's own reasons."""
        from moe_oracle.rules import ReasonCode
        from moe_oracle.runtime.refusals import refusals

        contract = {
            ReasonCode.EXPERT_BIAS_UNSUPPORTED,
            ReasonCode.ROUTER_WEIGHT_ON_INPUT,
            ReasonCode.QUANT_INTEGER,
            ReasonCode.ACTIVATION_UNSUPPORTED,
        }
        reasons = [r for r in refusals(spec, config) if r.code in contract]
        kind = config.group.activation.kind
        if not reasons and kind not in MODELLED_ACTIVATIONS:
            raise LayerInputError(
                f"{self.key} cannot model layer group '{config.group.name}': the twin and the FP32 reference have "
                f"no {kind.value} activation (SwiGLU and gated GELU only)",
                fix="judge it with moe-oracle select; its numerics are not emulated here",
            )
        if reasons:
            raise LayerInputError(
                f"{self.key} cannot model layer group '{config.group.name}': its kernel "
                + "; ".join(f"{r.code.value}: {r.message}" for r in reasons),
                fix=" ".join(dict.fromkeys(r.remediation for r in reasons if r.remediation)),
            )

    # ------------------------------------------------------------------------------------
    def load(self, experts: CheckpointExperts) -> None:
        g = self.config.group
        if experts.num_experts != self.config.num_local_experts:
            raise LayerInputError(
                f"{self.key}: got {experts.num_experts} experts, this rank holds {self.config.num_local_experts} "
                f"({g.num_experts} / ep_size {self.config.ep_size})"
            )
        canon = self._weights_mod.canonical(experts)
        h, i = g.hidden_size, g.moe_intermediate_size
        if tuple(canon.w13.shape[:2]) != (experts.num_experts, 2 * i) or canon.w2.shape[1] != h:
            raise LayerInputError(
                f"{self.key}: expert tensors {tuple(canon.w13.shape)} / {tuple(canon.w2.shape)} do not match "
                f"H={h}, I={i} of layer group '{g.name}'"
            )
        self.experts = experts_to(canon, self.device)
        if self.recipe.l2_input is ActQuant.NVFP4:
            fn = getattr(self._weights_mod, "l2_activation_scale", None)
            self.l2_activation_scale = float(fn(canon)) if fn is not None else 1.0
        self._cache = {}
        fp32_bytes = 3 * h * i * 4 * experts.num_experts
        cache = self._cache_opt if self._cache_opt is not None else fp32_bytes <= CACHE_LIMIT_BYTES
        if cache:
            for start in range(0, experts.num_experts, 16):
                stop = min(experts.num_experts, start + 16)
                w13, w2 = dequantize_range(self.experts, start, stop)
                for e in range(start, stop):
                    self._cache[e] = (w13[e - start], w2[e - start])

    def _expert(self, e: int) -> tuple[torch.Tensor, torch.Tensor]:
        hit = self._cache.get(e)
        if hit is not None:
            return hit
        assert self.experts is not None
        return dequantize_expert(self.experts, e)

    # ------------------------------------------------------------------------------------
    def quantized_input(self, hidden_states: torch.Tensor) -> torch.Tensor:
        """The hidden states as the L1 GEMM sees them (fp32)."""
        return fake_quant_input(hidden_states.to(self.device), self.recipe.l1_input, self.vendor)

    def forward(self, hidden_states: torch.Tensor, topk_ids: torch.Tensor, topk_weights: torch.Tensor) -> torch.Tensor:
        if self.experts is None:
            raise LayerInputError(f"{self.key}: call load(experts) before forward")
        g = self.config.group
        if hidden_states.dim() != 2 or hidden_states.shape[1] != g.hidden_size:
            raise LayerInputError(f"hidden_states must be [T, {g.hidden_size}], got {tuple(hidden_states.shape)}")
        t = hidden_states.shape[0]
        if t > self.config.max_tokens_per_rank:
            raise LayerInputError(f"{t} tokens exceed max_tokens_per_rank={self.config.max_tokens_per_rank}")
        if tuple(topk_ids.shape) != (t, g.top_k) or tuple(topk_weights.shape) != (t, g.top_k):
            raise LayerInputError(
                f"topk_ids/topk_weights must be [T={t}, k={g.top_k}], got {tuple(topk_ids.shape)} / "
                f"{tuple(topk_weights.shape)}"
            )
        r = self.recipe
        x = self.quantized_input(hidden_states)
        ids = topk_ids.to(self.device, torch.int64)
        w = topk_weights.to(self.device, torch.float32)
        local = ids - self.config.first_local_expert
        valid = (ids >= 0) & (local >= 0) & (local < self.config.num_local_experts)
        k = g.top_k
        contrib = torch.zeros((t, k, g.hidden_size), dtype=torch.float32, device=self.device)
        for e in torch.unique(local[valid]).tolist():
            rows, slots = torch.nonzero(valid & (local == e), as_tuple=True)
            w13, w2 = self._expert(int(e))
            h = x[rows] @ w13.t()
            if r.l1_output_bf16:
                h = h.to(torch.bfloat16).float()
            a = activate(h, g.activation)
            ww = w[rows, slots].unsqueeze(1)
            if r.weight_before_l2:
                a = a * ww
            a = fake_quant_intermediate(
                a,
                r.l2_input,
                self.vendor,
                l2_activation_scale=self.l2_activation_scale,
                fp8_scale=self.fp8_scale,
            )
            o = a @ w2.t()
            if not r.weight_before_l2:
                o = o * ww
            if r.expert_output_bf16:
                o = o.to(torch.bfloat16).float()
            contrib[rows, slots] = o
        y = contrib[:, 0].clone()
        for s in range(1, k):
            y += contrib[:, s]
        return y.to(torch.bfloat16)
