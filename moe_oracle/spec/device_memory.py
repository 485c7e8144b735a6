"""Per-GPU memory as the driver reports it, with where each figure was seen.

SGLang and vLLM size their memory share from what the driver reports (``torch.cuda.mem_get_info`` /
``total_memory``), not from the vendor's marketing figure (an H200 sold as "141 GB" reports 139.80 GiB), so the
catalogue's ``memory_gib`` is derived from these totals. Each total is stored as it was printed (amount and unit)
next to the tool that printed it and a public source.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

_UNIT_BYTES = {"B": 1, "MiB": 1 << 20, "GiB": 1 << 30}


class DriverMemory(BaseModel):
    """One device's per-GPU memory total: ``amount`` ``unit`` as ``reader`` printed it, seen in ``source``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    amount: float = Field(gt=0)
    unit: Literal["B", "MiB", "GiB"]
    reader: Literal["torch total_memory", "nvidia-smi", "rocm-smi", "vendor nominal"]
    source: str = Field(min_length=1)

    @property
    def gib(self) -> float:
        """The total in GiB, to the 0.01 GiB that torch and the engines print."""
        return round(self.amount * _UNIT_BYTES[self.unit] / _UNIT_BYTES["GiB"], 2)


_TORCH_OOM = "PyTorch's out-of-memory message 'GPU N has a total capacity of {} GiB'"

#: Catalogue name -> the memory total its driver reports. torch's figure where one was found (it is what the
#: engines read); nvidia-smi's otherwise, which is 0.4-0.9 GiB above torch's on the devices where both are known.
DRIVER_MEMORY: dict[str, DriverMemory] = {
    "h100": DriverMemory(
        amount=79.19,
        unit="GiB",
        reader="torch total_memory",
        source=_TORCH_OOM.format("79.19")
        + " on H100 80GB HBM3, in many public GitHub logs; nvidia-smi prints 81559MiB "
        "(github.com/modal-labs/modal-client/pull/2797)",
    ),
    "h200": DriverMemory(
        amount=150_109_880_320,
        unit="B",
        reader="torch total_memory",
        source="measured on the H200 used for docs/performance.md, 2026-12-01 (torch total_memory 150109880320 B; "
        "nvidia-smi 143771MiB); public logs print 'total capacity of 139.81 GiB'",
    ),
    "b200": DriverMemory(
        amount=178.35,
        unit="GiB",
        reader="torch total_memory",
        source=_TORCH_OOM.format("178.35")
        + " on B200, in public GitHub logs; nvidia-smi prints 183359MiB (github.com/NVIDIA/TensorRT-LLM/issues/10278)",
    ),
    "b300": DriverMemory(
        amount=275_040,
        unit="MiB",
        reader="nvidia-smi",
        source="nvidia-smi 'NVIDIA B300 SXM6 AC ... 275040MiB' in public GitHub logs (driver 580); "
        "torch's figure was not found attributed to a B300",
    ),
    "gb200": DriverMemory(
        amount=184.31,
        unit="GiB",
        reader="torch total_memory",
        source=_TORCH_OOM.format("184.31")
        + " on GB200 (vLLM DeepSeek-V4 mega-MoE decode), in public GitHub logs; nvidia-smi prints 189471MiB",
    ),
    "gb300": DriverMemory(
        amount=284_208,
        unit="MiB",
        reader="nvidia-smi",
        source="nvidia-smi 'NVIDIA GB300 ... 284208MiB' in public GitHub logs; torch's figure was not found",
    ),
    "rtx-pro-6000": DriverMemory(
        amount=97_887,
        unit="MiB",
        reader="nvidia-smi",
        source="nvidia-smi 'NVIDIA RTX PRO 6000 Blac... 97887MiB' (github.com/vllm-project/vllm/issues/27542)",
    ),
    "mi300x": DriverMemory(
        amount=206_141_652_992,
        unit="B",
        reader="rocm-smi",
        source="rocm-smi 'VRAM Total Memory (B): 206141652992' (github.com/ROCm/legacy-rocm-build/issues/4750); "
        "torch and vLLM print the same 191.98 GiB",
    ),
    "mi325x": DriverMemory(
        amount=255.98,
        unit="GiB",
        reader="torch total_memory",
        source="'AMD MI325X x 8 (255.98 GiB HBM each)' in vLLM ROCm DeepSeek-V4-Flash reports and "
        + _TORCH_OOM.format("255.98")
        + ", in public GitHub logs",
    ),
    "mi355x": DriverMemory(
        amount=287.98,
        unit="GiB",
        reader="torch total_memory",
        source="vLLM's 'Free memory on device cuda:0 (.../287.98 GiB)' and "
        + _TORCH_OOM.format("287.98")
        + " on MI355X, in public GitHub logs",
    ),
}


#: ``memory_gib`` of each device in the catalogue before it held the driver's totals (the vendor's marketing
#: figures, up to commit 282867f): a decision record written then carries these, and a replay re-decides it with
#: today's figure and says so, instead of refusing the record as edited.
EARLIER_MEMORY_GIB: dict[str, tuple[float, ...]] = {
    "h100": (80.0,),
    "h200": (141.0,),
    "b200": (180.0,),
    "b300": (288.0,),
    "gb200": (186.0,),
    "gb300": (288.0,),
    "rtx-pro-6000": (96.0,),
    "mi300x": (192.0,),
    "mi325x": (256.0,),
    "mi355x": (288.0,),
}
