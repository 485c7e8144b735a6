"""Accuracy class of a candidate: how far its numerics may move from the checkpoint's, read off its recipe.

The class comes from declarations alone (the variant's :class:`~moe_oracle.rules.recipe.Recipe` and
the candidate's load-time conversion), never from a measurement:

- ``standard``: activations quantized to 8 bits or more, weights served as stored or converted
  losslessly;
- ``a4``: activations quantized to 4 bits (MXFP4 or NVFP4) before a GEMM; ``moe-oracle accuracy``
  measures the MI355X a4w4 twin ~24x further from the FP32 reference than a8w4 (2.6e-2 vs 1.1e-3);
- ``lossy``: the routed experts converted at load in a way that changes values (already behind
  ``--allow-lossy-conversion``);
- ``a4+lossy``: both.

A class below ``standard`` is chosen automatically only when the checkpoint already has that
precision: 4-bit activations are native to an NVFP4 checkpoint (the NVFP4 recipes of ModelOpt and
compressed-tensors quantize the expert inputs to NVFP4 too; the description records only the
weight format, so an NVFP4 weight format stands for W4A4). Otherwise the candidate stays eligible
and is shown, but automatic selection skips it unless ``--allow-low-precision-activations``; an
explicit ``--moe-backend`` is the user's choice and is not held back.
"""

from __future__ import annotations

from moe_oracle.model.types import MoELayerGroup, WeightFormat
from moe_oracle.rules import Conversion, VariantSpec
from moe_oracle.rules.recipe import ActQuant

STANDARD = "standard"
A4 = "a4"
LOSSY = "lossy"

#: Activation quantizations of 4 bits.
FOUR_BIT_ACTIVATIONS = frozenset({ActQuant.MXFP4, ActQuant.NVFP4})

#: One line per class, for tables and legends.
DESCRIPTIONS = {
    STANDARD: "activations >= 8 bit, weights as stored or converted losslessly",
    A4: "activations quantized to 4 bits",
    LOSSY: "weights converted lossily at load",
    f"{A4}+{LOSSY}": "4-bit activations and a lossy weight conversion",
}


def four_bit_activations(spec: VariantSpec) -> bool:
    return spec.recipe.l1_input in FOUR_BIT_ACTIVATIONS or spec.recipe.l2_input in FOUR_BIT_ACTIVATIONS


def accuracy_class(spec: VariantSpec, conversion: Conversion | None = None) -> str:
    """``standard``, ``a4``, ``lossy`` or ``a4+lossy`` for ``spec`` (after ``conversion``, if any)."""
    parts = []
    if four_bit_activations(spec):
        parts.append(A4)
    if conversion is not None and not conversion.lossless:
        parts.append(LOSSY)
    return "+".join(parts) or STANDARD


def checkpoint_has_four_bit_activations(group: MoELayerGroup) -> bool:
    """True when the checkpoint's own recipe quantizes the expert inputs to 4 bits (NVFP4 = W4A4)."""
    return group.weight_format is WeightFormat.NVFP4


def needs_low_precision_opt_in(spec: VariantSpec, group: MoELayerGroup) -> bool:
    """True when ``spec`` would lower the activations below what ``group``'s checkpoint already has."""
    return four_bit_activations(spec) and not checkpoint_has_four_bit_activations(group)
