"""An engine's MoE parameters -> moe-oracle's runtime, without importing the engine (vLLM or SGLang).

The engine-facing shells (:mod:`moe_oracle.engines.vllm.layer`, :mod:`moe_oracle.engines.sglang.layer`)
hand this module the parameters the engine's own quant method created and its weight loader filled
(checkpoint layout, this rank's experts) and the top-k ids and weights the engine's router produced;
everything from there on (the checkpoint view, the weight transform, the symmetric buffer, the kernel
call, the BLOCK_M hint) lives here and runs, and is measured, where neither engine can be installed
(the lent H200).

Parameter names, shapes and dtypes are each engine's ``create_weights`` (``E`` local experts, ``H``
hidden, ``I`` intermediate per partition; w13 is ``[w1 (gate); w3 (up)]`` along dim 1 in both):

vLLM 0.33:

====================  =========================================================  ==================
quant method          parameters                                                 checkpoint format
====================  =========================================================  ==================
Mxfp4MoEMethod        w13_weight u8 [E,2I,H/2], w13_weight_scale u8 [E,2I,H/32],  MXFP4 (UE8M0 / 32)
                      w2_weight u8 [E,H,I/2], w2_weight_scale u8 [E,H,I/32]
Fp8MoEMethod (block)  w13_weight e4m3 [E,2I,H], w13_weight_scale_inv f32           FP8 block 128
                      [E,2I/128,H/128], w2_weight e4m3 [E,H,I], w2_weight_scale_inv
                      f32 [E,H/128,I/128]
ModelOptNvFp4Fused    w13_weight u8 [E,2I,H/2], w13_weight_scale e4m3 [E,2I,H/16], NVFP4
MoE                   w13_weight_scale_2 f32 [E,2], w2_weight u8 [E,H,I/2],
                      w2_weight_scale e4m3 [E,H,I/16], w2_weight_scale_2 f32 [E],
                      w13_input_scale f32 [E,2], w2_input_scale f32 [E]
Unquantized           w13_weight bf16 [E,2I,H], w2_weight bf16 [E,H,I]             BF16
====================  =========================================================  ==================

Sources: vLLM 0.33.0 ``quantization/mxfp4.py:661``, ``fp8.py:530`` (``weight_scale_inv`` for block
quant, fp8.py:485), ``modelopt.py:912``, ``unquantized_fused_moe_method.py:67``; the w1/w3 order
``routed_experts.py:563-569``.

SGLang 0.5.23 (``Fp8MoEMethod.create_fp8_moe_weight_``, ``layers/quantization/fp8.py:1544-1760``;
the w1/w3 order ``layers/moe/fused_moe_triton/layer.py:812-826``):

====================  =========================================================  ==================
quant method          parameters                                                 checkpoint format
====================  =========================================================  ==================
Fp8MoEMethod, FP4     w13_weight i8 [E,2I,H/2], w13_weight_scale_inv f32          MXFP4 (UE8M0 / 32)
experts (DSv4)        [E,2I,H/32], w2_weight i8 [E,H,I/2], w2_weight_scale_inv
                      f32 [E,H,I/32] (CUDA; fp8.py:1604-1626, 1694-1720)
Fp8MoEMethod (block)  as vLLM's (fp8.py:1721-1752)                               FP8 block 128
Unquantized           as vLLM's                                                  BF16
====================  =========================================================  ==================

SGLang keeps the MXFP4 scales as float32 powers of two; :func:`checkpoint_experts` reads their
exponent bits back as UE8M0 (exact for every normal power of two; anything else is refused).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

import torch

from moe_oracle.engines.layer_plan import LayerPlan
from moe_oracle.model.types import MoELayerGroup, QuantSpec, WeightFormat
from moe_oracle.releases import sglang as sglang_release
from moe_oracle.releases import vllm as vllm_release
from moe_oracle.runtime.errors import LayerInputError
from moe_oracle.runtime.interface import CheckpointExperts, LayerConfig, MegaMoELayer, TakesBlockMHint

if TYPE_CHECKING:
    from torch.distributed import ProcessGroup

#: the parameters each format's quant method creates, per engine (names as registered on the MoE layer)
ENGINE_PARAMS: dict[str, dict[WeightFormat, tuple[str, ...]]] = {
    "vllm": {
        WeightFormat.MXFP4: ("w13_weight", "w13_weight_scale", "w2_weight", "w2_weight_scale"),
        WeightFormat.FP8_BLOCK: ("w13_weight", "w13_weight_scale_inv", "w2_weight", "w2_weight_scale_inv"),
        WeightFormat.NVFP4: (
            "w13_weight",
            "w13_weight_scale",
            "w13_weight_scale_2",
            "w2_weight",
            "w2_weight_scale",
            "w2_weight_scale_2",
            "w13_input_scale",
            "w2_input_scale",
        ),
        WeightFormat.BF16: ("w13_weight", "w2_weight"),
    },
    "sglang": {
        WeightFormat.MXFP4: ("w13_weight", "w13_weight_scale_inv", "w2_weight", "w2_weight_scale_inv"),
        WeightFormat.FP8_BLOCK: ("w13_weight", "w13_weight_scale_inv", "w2_weight", "w2_weight_scale_inv"),
        WeightFormat.BF16: ("w13_weight", "w2_weight"),
    },
}
#: vLLM's (kept under its first name)
PARAMS = ENGINE_PARAMS["vllm"]
#: what an operator pins to leave a layer group to the engine's own MoE
_TITLE = {"vllm": "vLLM", "sglang": "SGLang"}
_OWN_FIX = {
    "vllm": "serve this layer group with vLLM's own MoE backend (additional-config moe_oracle.backend 'vllm').",
    "sglang": "serve this layer group with SGLang's own MoE (MOE_ORACLE_SGLANG_BACKEND pin 'sglang').",
}


def parameter_shapes(
    engine: str, fmt: WeightFormat, experts: int, hidden: int, inter: int
) -> dict[str, tuple[tuple[int, ...], torch.dtype]]:
    """``{name: (shape, dtype)}`` exactly as ``engine``'s (``vllm`` 0.33, ``sglang`` 0.5.23) quant method creates
    them for ``fmt`` experts."""
    if engine == "sglang":
        if fmt is WeightFormat.MXFP4:  # Fp8MoEMethod with is_fp4_expert, CUDA (fp4_scale_dtype float32)
            e, h, i = experts, hidden, inter
            return {
                "w13_weight": ((e, 2 * i, h // 2), torch.int8),
                "w13_weight_scale_inv": ((e, 2 * i, h // 32), torch.float32),
                "w2_weight": ((e, h, i // 2), torch.int8),
                "w2_weight_scale_inv": ((e, h, i // 32), torch.float32),
            }
        if fmt not in ENGINE_PARAMS["sglang"]:
            raise LayerInputError(
                f"SGLang {sglang_release.VERSION} has no MoE quant method moe-oracle reads for {fmt.value} experts"
            )
    return vllm_parameter_shapes(fmt, experts, hidden, inter)


def vllm_parameter_shapes(
    fmt: WeightFormat, experts: int, hidden: int, inter: int
) -> dict[str, tuple[tuple[int, ...], torch.dtype]]:
    """``{name: (shape, dtype)}`` exactly as vLLM 0.33's quant method for ``fmt`` creates them."""
    e, h, i = experts, hidden, inter
    fp8 = torch.float8_e4m3fn
    if fmt is WeightFormat.MXFP4:
        u8 = torch.uint8
        return {
            "w13_weight": ((e, 2 * i, h // 2), u8),
            "w13_weight_scale": ((e, 2 * i, h // 32), u8),
            "w2_weight": ((e, h, i // 2), u8),
            "w2_weight_scale": ((e, h, i // 32), u8),
        }
    if fmt is WeightFormat.FP8_BLOCK:
        c = math.ceil
        return {
            "w13_weight": ((e, 2 * i, h), fp8),
            "w13_weight_scale_inv": ((e, 2 * c(i / 128), c(h / 128)), torch.float32),
            "w2_weight": ((e, h, i), fp8),
            "w2_weight_scale_inv": ((e, c(h / 128), c(i / 128)), torch.float32),
        }
    if fmt is WeightFormat.NVFP4:
        u8, f32 = torch.uint8, torch.float32
        return {
            "w13_weight": ((e, 2 * i, h // 2), u8),
            "w13_weight_scale": ((e, 2 * i, h // 16), fp8),
            "w13_weight_scale_2": ((e, 2), f32),
            "w2_weight": ((e, h, i // 2), u8),
            "w2_weight_scale": ((e, h, i // 16), fp8),
            "w2_weight_scale_2": ((e,), f32),
            "w13_input_scale": ((e, 2), f32),
            "w2_input_scale": ((e,), f32),
        }
    if fmt is WeightFormat.BF16:
        return {"w13_weight": ((e, 2 * i, h), torch.bfloat16), "w2_weight": ((e, h, i), torch.bfloat16)}
    raise LayerInputError(
        f"vLLM {vllm_release.SERIES} has no MoE quant method moe-oracle reads for {fmt.value} experts"
    )


def check_parameters(
    params: Mapping[str, torch.Tensor], group: MoELayerGroup, experts: int, *, engine: str = "vllm"
) -> None:
    """Every parameter is present with the engine's shape and dtype for ``group`` (else one LayerInputError).

    Run at layer construction, before any weight loads: a quant method that padded H or I (MXFP4
    backends round them up) or created other parameters is refused here, not after loading.
    """
    want = parameter_shapes(engine, group.weight_format, experts, group.hidden_size, group.moe_intermediate_size)
    bad = []
    for name, (shape, dtype) in want.items():
        t = params.get(name)
        if t is None:
            bad.append(f"{name} missing")
        elif tuple(t.shape) != shape or (t.dtype != dtype and not _native_e8m0(engine, group, name, t)):
            bad.append(f"{name} is {tuple(t.shape)} {t.dtype}, expected {shape} {dtype}")
    if bad:
        raise LayerInputError(
            f"layer group '{group.name}': {_TITLE[engine]}'s quant method created parameters moe-oracle cannot read "
            f"({'; '.join(bad)})",
            fix=_OWN_FIX[engine],
        )


def _native_e8m0(engine: str, group: MoELayerGroup, name: str, t: torch.Tensor) -> bool:
    """SGLang's FlashInfer MXFP4 wrappers keep the checkpoint's scales as ``float8_e8m0fnu`` (the DeepSeek V4
    default runner on SM90, ``mxfp4_flashinfer_cutlass_moe.py:75-84``) where ``Fp8MoEMethod`` stages float32."""
    return (
        engine == "sglang"
        and group.weight_format is WeightFormat.MXFP4
        and name.endswith("_scale_inv")
        and t.dtype == getattr(torch, "float8_e8m0fnu", None)
    )


def _ue8m0(scale: torch.Tensor, name: str) -> torch.Tensor:
    """SGLang's MXFP4 scales as UE8M0 bytes: native ``float8_e8m0fnu`` as it is, float32 by its exponent bits."""
    if scale.dtype == getattr(torch, "float8_e8m0fnu", None):
        return scale.view(torch.uint8)
    return ue8m0_from_powers_of_two(scale, name)


def up_first_to_gate_first(w13: torch.Tensor) -> torch.Tensor:
    """``[up; gate]`` along dim 1 (SGLang's FlashInfer CUTLASS layout, ``load_up_proj_weight_first``) ->
    ``[gate; up]``, the order moe-oracle's weight transform reads (one copy of the tensor)."""
    half = w13.shape[1] // 2
    return torch.cat([w13[:, half:], w13[:, :half]], dim=1)


def ue8m0_from_powers_of_two(scale: torch.Tensor, name: str) -> torch.Tensor:
    """Float32 powers of two (SGLang's MXFP4 scales) -> their UE8M0 bytes (the biased exponent, exact).

    Raises :class:`LayerInputError` for a value that is not a normal positive power of two (a zero, a
    subnormal, a NaN or a mantissa): it has no UE8M0 byte, and guessing one would change the weights.
    """
    bits = scale.contiguous().view(torch.int32)
    exponent = (bits >> 23) & 0xFF
    bad = (bits & 0x807FFFFF).ne(0) | exponent.eq(0) | exponent.eq(0xFF)
    if bool(bad.any()):
        raise LayerInputError(
            f"{name}: {int(bad.sum())} MXFP4 scale(s) are not normal powers of two (first "
            f"{float(scale.flatten()[int(bad.flatten().nonzero()[0])])}); they have no UE8M0 value",
            fix=_OWN_FIX["sglang"],
        )
    return exponent.to(torch.uint8)


def checkpoint_experts(
    params: Mapping[str, torch.Tensor], quant: QuantSpec, *, first_expert: int = 0, engine: str = "vllm"
) -> CheckpointExperts:
    """The loaded parameters as :class:`CheckpointExperts` (views, no copy; SGLang's MXFP4 scales are read back
    as UE8M0 bytes, one small copy), this rank's experts.

    NVFP4: vLLM keeps one ``weight_scale_2`` per expert for w1 and for w3; the kernels take one L1
    global scale per expert, so they must be equal (vLLM's native mega loader refuses the same way).
    """
    fmt = quant.format
    if engine == "sglang" and fmt is WeightFormat.MXFP4:
        return CheckpointExperts(
            quant,
            params["w13_weight"].view(torch.uint8),
            params["w2_weight"].view(torch.uint8),
            _ue8m0(params["w13_weight_scale_inv"], "w13_weight_scale_inv"),
            _ue8m0(params["w2_weight_scale_inv"], "w2_weight_scale_inv"),
            first_expert=first_expert,
        )
    scale = {WeightFormat.MXFP4: "weight_scale", WeightFormat.FP8_BLOCK: "weight_scale_inv"}.get(fmt)
    if scale is not None:  # Mxfp4MoEMethod / Fp8MoEMethod: values and one block-scale tensor per projection
        return CheckpointExperts(
            quant,
            params["w13_weight"],
            params["w2_weight"],
            params[f"w13_{scale}"],
            params[f"w2_{scale}"],
            first_expert=first_expert,
        )
    if fmt is WeightFormat.NVFP4:
        g13 = params["w13_weight_scale_2"]
        if not torch.equal(g13[:, 0], g13[:, 1]):
            raise LayerInputError(
                "NVFP4 experts: w1 and w3 weight_scale_2 differ for some expert; the fused kernels take one L1 "
                "global scale per expert",
                fix="serve this layer group with vLLM's own NVFP4 MoE backend.",
            )
        return CheckpointExperts(
            quant,
            params["w13_weight"],
            params["w2_weight"],
            params["w13_weight_scale"],
            params["w2_weight_scale"],
            w13_global=g13[:, 0].contiguous(),
            w2_global=params["w2_weight_scale_2"],
            w2_input_scale=params["w2_input_scale"],
            first_expert=first_expert,
        )
    if fmt is WeightFormat.BF16:
        return CheckpointExperts(quant, params["w13_weight"], params["w2_weight"], first_expert=first_expert)
    raise LayerInputError(f"no vLLM parameter layout for {quant.label()} experts")


def engine_parameters(engine: str, experts: CheckpointExperts, group: MoELayerGroup) -> dict[str, torch.Tensor]:
    """The parameters ``engine``'s quant method creates for ``group``, filled with ``experts`` as its weight loader
    leaves them (the inverse of :func:`checkpoint_experts`): what the H200 benchmark and the CPU tests hand the
    bridge without the engine. SGLang's MXFP4 scales become the float32 powers of two it stores."""
    fmt = group.weight_format
    shapes = parameter_shapes(engine, fmt, experts.num_experts, group.hidden_size, group.moe_intermediate_size)
    scale = {WeightFormat.FP8_BLOCK: "weight_scale_inv"}.get(fmt, "weight_scale")
    if engine == "sglang":
        scale = "weight_scale_inv"
    src = {"w13_weight": experts.w13, "w2_weight": experts.w2}
    if experts.w13_scale is not None:
        src[f"w13_{scale}"], src[f"w2_{scale}"] = experts.scales()
        if engine == "sglang" and fmt is WeightFormat.MXFP4:
            for name in (f"w13_{scale}", f"w2_{scale}"):
                src[name] = (src[name].view(torch.uint8).to(torch.int32) << 23).view(torch.float32)
    if fmt is WeightFormat.NVFP4:
        w13_global, w2_global, w2_input_scale = experts.nvfp4_scales()
        src["w13_weight_scale_2"] = torch.stack([w13_global, w13_global], dim=1)
        src["w2_weight_scale_2"] = w2_global
        src["w13_input_scale"] = torch.ones(experts.num_experts, 2, device=experts.w13.device)
        src["w2_input_scale"] = w2_input_scale
    out = {}
    for name, (shape, dtype) in shapes.items():
        t = src[name]
        out[name] = (t.view(dtype) if t.dtype != dtype else t).reshape(shape).clone()
    return out


def build_plan_layer(
    plan: LayerPlan, *, ep_rank: int = 0, ep_size: int = 1, ep_group: ProcessGroup | None = None, device: str = "cuda"
) -> MegaMoELayer:
    """The moe-oracle layer for ``plan`` on this rank (allocates the shared symmetric buffer now)."""
    from moe_oracle.runtime.build import build_layer_for_choice

    config = LayerConfig(
        group=plan.group,
        max_tokens_per_rank=plan.max_tokens_per_rank,
        ep_rank=ep_rank,
        ep_size=ep_size,
        ep_group=ep_group,
        device=device,
    )
    return build_layer_for_choice(
        plan.variant,
        config,
        emulate=plan.emulate,
        convert_from=None if plan.convert_from is None else WeightFormat(plan.convert_from),
        allow_lossy=plan.allow_lossy,
    )


@dataclass
class MegaMoEBridge:
    """One engine MoE layer (vLLM or SGLang) served by a moe-oracle layer.

    ``load(params)`` reads the engine's loaded parameters (checkpoint layout, ``engine``'s names) into the
    layer's kernel layout, streaming by expert chunks; the caller then frees the engine's copies, so loading
    never holds more than one extra layer. ``forward`` is CUDA-graph capturable (no host synchronization): the
    BLOCK_M hint is a Python int computed from the step's token counts, which the engine pads to one size
    across DP ranks when it captures.
    """

    layer: MegaMoELayer
    quant: QuantSpec
    ep_size: int = 1
    first_expert: int = 0
    engine: str = "vllm"
    #: the engine loaded w13 as ``[up; gate]`` (SGLang's FlashInfer CUTLASS MXFP4 method)
    w13_up_first: bool = False
    loaded: bool = field(default=False, init=False)

    @classmethod
    def for_plan(
        cls,
        plan: LayerPlan,
        *,
        ep_rank: int = 0,
        ep_size: int = 1,
        ep_group: ProcessGroup | None = None,
        device: str = "cuda",
        engine: str = "vllm",
    ) -> MegaMoEBridge:
        layer = build_plan_layer(plan, ep_rank=ep_rank, ep_size=ep_size, ep_group=ep_group, device=device)
        first = ep_rank * (plan.group.num_experts // ep_size)
        return cls(layer, plan.group.weight_quant, ep_size=ep_size, first_expert=first, engine=engine)

    def load(self, params: Mapping[str, torch.Tensor]) -> None:
        """``params`` in the checkpoint's format (``quant``; a converting layer converts them itself)."""
        if self.w13_up_first:
            params = {k: up_first_to_gate_first(v) if k.startswith("w13_") else v for k, v in params.items()}
        self.layer.load(checkpoint_experts(params, self.quant, first_expert=self.first_expert, engine=self.engine))
        self.loaded = True

    def block_m_hint(self, num_tokens: int, tokens_across_dp: int | None) -> int:
        """Mean tokens per EP rank of the step (every rank of a launch passes the same value)."""
        total = num_tokens * self.ep_size if tokens_across_dp is None else tokens_across_dp
        return max(1, -(-int(total) // self.ep_size))

    def forward(
        self,
        hidden_states: torch.Tensor,
        topk_weights: torch.Tensor,
        topk_ids: torch.Tensor,
        *,
        tokens_across_dp: int | None = None,
    ) -> torch.Tensor:
        """``[T, H]`` BF16: this rank's tokens through the fused layer (the engines' argument order)."""
        if not self.loaded:
            raise LayerInputError(f"{self.layer.key}: weights were not loaded (process_weights_after_loading)")
        t = int(hidden_states.shape[0])
        if getattr(self.layer, "takes_block_m_hint", False):
            # a layer that declares the flag takes the keyword (a per-step isinstance on the protocol would cost more)
            hinted = cast(TakesBlockMHint, self.layer)
            hint = self.block_m_hint(t, tokens_across_dp)
            return hinted.forward(hidden_states, topk_ids, topk_weights, num_tokens_for_block_m=hint)
        return self.layer.forward(hidden_states, topk_ids, topk_weights)
