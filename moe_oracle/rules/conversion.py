"""Load-time format conversions a variant can consume, declared with the variant.

An MXFP4 checkpoint on SM90 can be served by the FP8 x FP8 kernel after converting its experts to
FP8 block-128 at load: the FP8 kernel is 1.1-1.3x faster on the H200 although it reads twice the
bytes (docs/performance.md). The oracle weighs such a conversion as one more candidate:
its numerics (lossless or not), its memory (the converted experts per rank) and its cost.
"""

from __future__ import annotations

from dataclasses import dataclass

from moe_oracle.model.types import QuantSpec, WeightFormat

#: What the emulation twin measured for FP8 block -> NVFP4 requantization (re-measured by
#: tests/runtime/test_online_nvfp4.py): calc_diff against the FP32 output of the BF16 masters.
FP8_TO_NVFP4_TWIN = (
    "the emulation twin measured calc_diff 2.8e-2 against the BF16 masters' output, vs 2.1e-3 for the FP8 "
    "checkpoint as stored on sm90_fp8xfp8 (GLM-5-FP8's expert shape scaled 1/12, 64 tokens, seed 0; compare on "
    "your model with moe-oracle accuracy MODEL --variants sm100_nvfp4,sm90_fp8xfp8)"
)


@dataclass(frozen=True)
class Conversion:
    """Converting routed experts from ``source`` to ``target`` at load.

    ``lossless``: every value survives exactly when ``condition`` holds; the loader checks it block
    by block and refuses a lossy block unless lossy conversion was allowed. A conversion that is
    not lossless by construction (BF16 or FP32-scaled FP8 to a coarser format) is chosen only with
    an explicit opt-in, since it changes the model's numerics. ``runtime`` is the ``module:function``
    that converts a layer's ``CheckpointExperts`` and returns ``(experts, report)``.
    """

    source: WeightFormat
    target: QuantSpec
    lossless: bool
    condition: str
    runtime: str
    sources: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return f"{self.source.value}->{self.target.format.value}"

    def to_json(self) -> dict[str, object]:
        return {
            "from": self.source.value,
            "to": self.target.label(),
            "lossless": self.lossless,
            "condition": self.condition,
        }
