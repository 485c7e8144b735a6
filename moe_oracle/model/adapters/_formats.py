"""Constructors of the expert weight formats a quantization config can name (one :class:`QuantSpec` each)."""

from __future__ import annotations

from moe_oracle.model.types import QuantSpec, ScaleFormat, WeightFormat


def bf16(source: str) -> QuantSpec:
    return QuantSpec(format=WeightFormat.BF16, source=source)


def mxfp4(source: str) -> QuantSpec:
    return QuantSpec(format=WeightFormat.MXFP4, block=(1, 32), scale_format=ScaleFormat.UE8M0, source=source)


def mxfp8(source: str) -> QuantSpec:
    return QuantSpec(format=WeightFormat.MXFP8, block=(1, 32), scale_format=ScaleFormat.UE8M0, source=source)


def nvfp4(source: str) -> QuantSpec:
    return QuantSpec(
        format=WeightFormat.NVFP4,
        block=(1, 16),
        scale_format=ScaleFormat.E4M3,
        global_scale=True,
        source=source,
    )


def fp8_block(block: tuple[int, int], scale: ScaleFormat, source: str) -> QuantSpec:
    return QuantSpec(format=WeightFormat.FP8_BLOCK, block=block, scale_format=scale, source=source)


def fp8_channel(source: str) -> QuantSpec:
    return QuantSpec(format=WeightFormat.FP8_CHANNEL, scale_format=ScaleFormat.FP32, source=source)


def integer(bits: int, group_size: int | None, source: str) -> QuantSpec:
    """INT4 / INT8 weights with 16-bit scales per ``group_size`` columns (``None``: one per output row; INT8 only)."""
    fmt = WeightFormat.INT4 if bits == 4 else WeightFormat.INT8
    block = None if group_size is None else (1, group_size)
    return QuantSpec(format=fmt, block=block, scale_format=ScaleFormat.BF16, source=source)


def with_source(spec: QuantSpec, source: str) -> QuantSpec:
    return spec.model_copy(update={"source": source})
