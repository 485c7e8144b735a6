"""Advisory MOA-2026-002 in moe-oracle's own runtime: a mega kernel is launched as a PDL secondary only if it waits
on the grid dependency (DeepGEMM PR #447: only the SM100 FP8xFP4 kernel does; issue #29 item 6)."""

from __future__ import annotations

import importlib

import pytest
from moe_oracle_backends._deep_gemm_layer import DeepGemmMegaMoE, _pdl_off

WAITS = {
    "cuda_sm100.fp8xfp4": True,  # sm100_fp8_fp4_mega_moe.cuh: cudaGridDependencySynchronize
    "cuda_sm100.fp8xfp8": True,  # the same kernel (fp8_fp4_mega_moe, mma_type fp8xfp8)
    "cuda_sm100.nvfp4": False,  # sm100_fp4_fp4_mega_moe.cuh never waits
    "cuda_sm100.bf16": False,  # not stated by #447: not assumed
    "cuda_sm90.fp8xfp8": False,  # sm90_fp8_mega_moe.cuh never waits
    "cuda_sm90.fp8xfp4": False,
}


@pytest.mark.parametrize(("package", "waits"), sorted(WAITS.items()))
def test_each_variant_declares_whether_its_kernel_waits(package: str, waits: bool) -> None:
    module = importlib.import_module(f"moe_oracle_backends.{package}.backend")
    (layer,) = [v for v in vars(module).values() if isinstance(v, type) and issubclass(v, DeepGemmMegaMoE)
                and v is not DeepGemmMegaMoE]  # fmt: skip
    assert layer.KERNEL_WAITS_FOR_GRID_DEPENDENCY is waits


class _Switch:
    """DeepGEMM's process-wide PDL flag as its API exposes it (``set_pdl`` / ``get_pdl``)."""

    def __init__(self) -> None:
        self.on, self.seen = True, []

    def set_pdl(self, on: bool) -> None:
        self.on = on
        self.seen.append(on)

    def get_pdl(self) -> bool:
        return self.on


def test_pdl_is_off_for_the_launch_and_restored_even_when_it_raises() -> None:
    dg = _Switch()
    with _pdl_off(dg):
        assert dg.get_pdl() is False
    assert dg.get_pdl() is True
    with pytest.raises(RuntimeError), _pdl_off(dg):
        raise RuntimeError("launch failed")
    assert dg.get_pdl() is True and dg.seen == [False, True, False, True]
    with _pdl_off(object()):  # a build without the switch: nothing to turn off
        pass
