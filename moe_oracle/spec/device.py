"""Accelerators: vendor, architecture, memory, and the catalogue of known devices.

Architectures are named the way kernel libraries gate on them: ``sm90`` (Hopper), ``sm100``
and ``sm103`` (Blackwell data-centre, SM 10.x), ``sm120`` (consumer Blackwell), ``gfx942``
(MI300X/MI325X) and ``gfx950`` (MI355X).
"""

from __future__ import annotations

from enum import Enum

from pydantic import BaseModel, ConfigDict, Field

from moe_oracle.spec.device_memory import DRIVER_MEMORY


class Vendor(str, Enum):
    NVIDIA = "nvidia"
    AMD = "amd"


class Arch(str, Enum):
    SM90 = "sm90"
    SM100 = "sm100"
    SM103 = "sm103"
    SM120 = "sm120"
    GFX942 = "gfx942"
    GFX950 = "gfx950"

    @property
    def vendor(self) -> Vendor:
        return Vendor.AMD if self.value.startswith("gfx") else Vendor.NVIDIA

    @property
    def family(self) -> str:
        """Kernel-gating family: ``sm90``, ``sm10x``, ``sm12x``, ``gfx942``, ``gfx950``."""
        if self in (Arch.SM100, Arch.SM103):
            return "sm10x"
        if self is Arch.SM120:
            return "sm12x"
        return self.value

    @classmethod
    def from_capability(cls, major: int, minor: int) -> Arch | None:
        """Map a CUDA compute capability to an arch, or None when it is not one we model."""
        return {(9, 0): cls.SM90, (10, 0): cls.SM100, (10, 3): cls.SM103, (12, 0): cls.SM120}.get((major, minor))

    @classmethod
    def from_gcn_arch(cls, name: str) -> Arch | None:
        """Map an AMD ``gcnArchName`` (e.g. ``gfx950:sramecc+:xnack-``) to an arch."""
        base = name.split(":", 1)[0].strip().lower()
        return {"gfx942": cls.GFX942, "gfx950": cls.GFX950}.get(base)


class DeviceSpec(BaseModel):
    """One accelerator model. ``memory_gib`` is the per-GPU memory in GiB the driver reports (what the engines size
    their share from); for the catalogue's devices it comes from :data:`DRIVER_MEMORY`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1, description="Marketing name, lower case: h200, b200, mi355x.")
    arch: Arch
    memory_gib: float = Field(gt=0, le=4096)
    sm_count: int | None = Field(default=None, gt=0)
    gpus_per_node: int = Field(default=8, gt=0, le=1024, description="Default GPUs per node.")
    domain_size: int = Field(default=8, gt=0, le=1 << 16, description="Default NVLink/XGMI domain size in GPUs.")
    hbm_tb_s: float | None = Field(default=None, gt=0, description="Datasheet HBM bandwidth, TB/s.")
    fp8_tflops: float | None = Field(default=None, gt=0, description="Datasheet dense FP8 TFLOP/s.")

    @property
    def vendor(self) -> Vendor:
        return self.arch.vendor


def _d(name: str, **kw: object) -> DeviceSpec:
    return DeviceSpec(name=name, memory_gib=DRIVER_MEMORY[name].gib, **kw)  # type: ignore[arg-type]


#: Known devices. Memory is what the driver reports (``DRIVER_MEMORY``, with sources); SM counts and rates are
#: datasheet figures (leads, not measurements).
DEVICES: dict[str, DeviceSpec] = {
    d.name: d
    for d in (
        _d(name="h100", arch=Arch.SM90, sm_count=132, hbm_tb_s=3.35, fp8_tflops=1979),
        _d(name="h200", arch=Arch.SM90, sm_count=132, hbm_tb_s=4.8, fp8_tflops=1979),
        _d(name="b200", arch=Arch.SM100, sm_count=148, hbm_tb_s=8.0, fp8_tflops=4500),
        _d(name="b300", arch=Arch.SM103, sm_count=148, hbm_tb_s=8.0, fp8_tflops=4500),
        _d(
            name="gb200",
            arch=Arch.SM100,
            sm_count=148,
            gpus_per_node=4,
            domain_size=72,
            hbm_tb_s=8.0,
            fp8_tflops=5000,
        ),
        _d(
            name="gb300",
            arch=Arch.SM103,
            sm_count=148,
            gpus_per_node=4,
            domain_size=72,
            hbm_tb_s=8.0,
            fp8_tflops=5000,
        ),
        _d(name="rtx-pro-6000", arch=Arch.SM120, sm_count=188, domain_size=1),
        _d(name="mi300x", arch=Arch.GFX942, sm_count=304, hbm_tb_s=5.3, fp8_tflops=2615),
        _d(name="mi325x", arch=Arch.GFX942, sm_count=304, hbm_tb_s=6.0, fp8_tflops=2615),
        _d(name="mi355x", arch=Arch.GFX950, sm_count=256, hbm_tb_s=8.0, fp8_tflops=5000),
    )
}
