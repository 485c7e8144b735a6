"""What an ``accuracy`` run may ask for, and what its verdict holds it to (no torch: the CLI reads these).

:data:`MAX_TOKENS` bounds ``--tokens``; :func:`check_fits` refuses a run whose estimated memory
(:func:`run_bytes`) exceeds what this machine has free, before anything is allocated; :data:`TOLERANCE` and
:func:`verdict` state the error each accuracy class may show.
"""

from __future__ import annotations

import os

from moe_oracle.errors import BadInputError
from moe_oracle.model.types import MoELayerGroup
from moe_oracle.rules.recipe import ActQuant

#: The most tokens a run routes (the engines' largest per-rank batch is 8192 x a few; beyond this the error
#: statistics no longer change, only the run time and memory do).
MAX_TOKENS = 65536
#: The tolerance on ``calc_diff`` against the FP32 reference on the same quantized weights, per activation
#: format a kernel quantizes to (a recipe is held to its coarsest one): the error of its own activation
#: quantization and roundings. The "test bound" column of docs/runtime.md's table, with the measurements it
#: bounds; tests/conformance holds every variant's twin to it.
TOLERANCE: dict[ActQuant, float] = {
    ActQuant.BF16: 2e-5,
    ActQuant.FP8_G128_FP32: 3e-3,
    ActQuant.FP8_G64_FP32: 3e-3,
    ActQuant.MXFP8: 3e-3,
    ActQuant.NVFP4: 3e-2,
    ActQuant.MXFP4: 6e-2,
}
#: Bytes a run holds per expert weight element (fp32 draws, BF16 masters, fp32 reference copies, the quantized
#: formats and their dequantized fp32 twins) and per routed token x width (activations, the reference's fp32
#: intermediates). Measured peaks on the CPU (DeepSeek-V4-Flash, every variant): 1.96 GB at --scale 0.25
#: (101M weight elements, ~16 B each with the interpreter), 1.0 GB at 16,384 tokens (~8 B per token x width);
#: these leave 25% and 100% above them.
BYTES_PER_WEIGHT = 20
BYTES_PER_TOKEN_WIDTH = 16


def run_bytes(group: MoELayerGroup, tokens: int) -> int:
    """An upper estimate of the memory one ``accuracy`` run on ``group`` with ``tokens`` tokens holds."""
    h, i, e, k = group.hidden_size, group.moe_intermediate_size, group.num_experts, group.top_k
    return BYTES_PER_WEIGHT * 3 * e * i * h + BYTES_PER_TOKEN_WIDTH * tokens * (h + e + k * 2 * i)


def available_bytes(device: str = "cpu") -> int | None:
    """Memory free for a run on ``device``: ``MemAvailable`` (Linux) for the CPU, the free memory of a CUDA
    device; ``None`` when unknown."""
    if device != "cpu":
        try:
            import torch

            return int(torch.cuda.mem_get_info(torch.device(device))[0])
        except Exception:
            return None
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def check_fits(group: MoELayerGroup, tokens: int, scale: float, device: str = "cpu") -> None:
    """Refuse (exit 2) a run that would not fit in the memory this machine has free, before allocating."""
    need = run_bytes(group, tokens)
    have = available_bytes(device)
    if have is None or need <= have:
        return
    gib = 1024**3
    raise BadInputError(
        f"accuracy with H {group.hidden_size}, I {group.moe_intermediate_size}, E {group.num_experts}, "
        f"{tokens} tokens (scale {scale:g}) needs about {need / gib:.1f} GiB; this machine has "
        f"{have / gib:.1f} GiB free",
        fix="lower --tokens or --scale (the default scale brings H to 512), or run on a machine with more memory",
    )


def recipe_tolerance(l1_input: ActQuant | str, l2_input: ActQuant | str) -> float:
    """The tolerance of a recipe: that of its coarsest activation format."""
    return max(TOLERANCE[ActQuant(l1_input)], TOLERANCE[ActQuant(l2_input)])


def verdict(recipe: dict[str, object], calc_diff_vs_ref: float) -> tuple[float | None, str]:
    """``(tolerance, "ok" | "over")`` of one variant's ``calc_diff`` against its recipe's tolerance
    (``recipe`` as an accuracy row carries it: ``l1_input``, ``l2_input``); ``(None, "?")`` when unknown."""
    try:
        tolerance = recipe_tolerance(str(recipe["l1_input"]), str(recipe["l2_input"]))
    except (KeyError, ValueError):
        return None, "?"
    return tolerance, "ok" if calc_diff_vs_ref <= tolerance else "over"


__all__ = [
    "MAX_TOKENS",
    "RUN_TO_RUN",
    "TOLERANCE",
    "available_bytes",
    "check_fits",
    "recipe_tolerance",
    "run_bytes",
    "verdict",
]


#: Run-to-run variation of a real kernel (same inputs, repeated calls): calc_diff between two calls' outputs that a
#: test accepts, per variant, with the measurement it bounds (docs/runtime.md, "Run-to-run determinism"). 0.0 means
#: bit-identical. A variant not measured on hardware has no entry: its tests bound the variation by the kernel vs
#: twin tolerance, which the kernel is held to anyway.
RUN_TO_RUN: dict[str, tuple[float, str]] = {
    "sm90_fp8xfp8": (
        0.0,
        "bit-identical: 0 of 30 repeats differ at T = 1, 8, 64, 512 on the V4-Flash and GLM-5 shapes (H200, DeepGEMM "
        "PR #323; benchmarks/results/h200/2026-12-01/determinism.json), 0 of 40 graph replays (pdl_handoff.txt)",
    ),
    "sm90_fp8xfp4": (
        2e-4,
        "not deterministic: GLM-5 shape 11 of 30 repeats differ at T = 8 (calc_diff up to 2.0e-5) and 30 of 30 at "
        "T = 64 (up to 9.2e-5); V4-Flash 1 of 30 at T = 8-512 (up to 7.1e-7); T = 1 identical (determinism.json); "
        "8.8e-5 on one pre-staged buffer (issue #31). The bound is the largest, 9.2e-5, x 2.2",
    ),
}
