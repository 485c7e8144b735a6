"""A backend variant's declaration: identity, formats, kernel, requirements, runtime and layout hooks."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Literal, get_args

from moe_oracle.rules.check import Check, Reason
from moe_oracle.rules.conversion import Conversion
from moe_oracle.rules.recipe import Recipe
from moe_oracle.rules.scenario import Scenario

#: Rounding conventions of the activation quantizers (``moe_oracle.runtime.actquant``): how a kernel
#: turns an amax into a power-of-two scale and rounds FP4. DeepGEMM's and AITER's differ.
Numerics = Literal["deepgemm", "aiter"]
NUMERICS: tuple[Numerics, ...] = get_args(Numerics)
#: How staged activation scales are laid out for a kernel (``moe_oracle.runtime.staging.ScaleLayout``).
ScaleLayout = Literal["none", "fp32", "ue8m0", "e4m3", "bytes"]
SCALE_LAYOUTS: tuple[ScaleLayout, ...] = get_args(ScaleLayout)
#: The top-k ids' torch dtype a kernel reads.
IdsDtype = Literal["int32", "int64"]


class Validation(str, Enum):
    """How far a variant's path has been run, strongest first: through moe-oracle's runtime on real hardware,
    inside the engine on a GPU, or only read from source (its declarations come from the kernel's and the
    engine's code, never executed by this project)."""

    RUNTIME_ON_HARDWARE = "runtime-on-hardware"
    ENGINE_ON_GPU = "engine-on-gpu"
    SOURCE_ONLY = "source-only"

    @property
    def text(self) -> str:
        return {
            Validation.RUNTIME_ON_HARDWARE: "ran on hardware through moe-oracle's runtime",
            Validation.ENGINE_ON_GPU: "ran inside the engine on a GPU",
            Validation.SOURCE_ONLY: "read from source only (never run by moe-oracle)",
        }[self]

    @property
    def short(self) -> str:
        return {
            Validation.RUNTIME_ON_HARDWARE: "ran (runtime, hardware)",
            Validation.ENGINE_ON_GPU: "ran (in engine, GPU)",
            Validation.SOURCE_ONLY: "source only",
        }[self]


@dataclass(frozen=True)
class Staging:
    """How the kernel wants its inputs staged, as data (torch-free; the runtime builds a
    :class:`~moe_oracle.runtime.staging.StagingSpec` from it with ``StagingSpec.declared(spec)``).

    The activation format is the recipe's ``l1_input`` and the rounding convention the variant's
    ``numerics``. ``scale_layout``: how the scales are laid out for the kernel (``none``, ``fp32``,
    ``ue8m0``, ``e4m3``, ``bytes``); ``quantize_on_host``: False when the kernel quantizes the BF16 input
    itself; ``ids_dtype``: the top-k ids' torch dtype name; ``triton_recipe``: the fused Triton staging
    kernel that writes the same bytes on a GPU (None: the eager path). ``pad_rows``: the kernel reads
    top-k rows past the call's T (up to the buffer's capacity), so staging writes them as padding (id -1,
    weight 0) on every call; False where the kernel's source reads only rows below T (``pad_rows_source``
    says where), which saves writing the whole capacity on every decode step.
    """

    scale_layout: ScaleLayout
    quantize_on_host: bool = True
    ids_dtype: IdsDtype = "int64"
    triton_recipe: str | None = None
    pad_rows: bool = True
    pad_rows_source: str = ""

    def __post_init__(self) -> None:
        if self.scale_layout not in SCALE_LAYOUTS:
            raise ValueError(f"staging scale_layout={self.scale_layout!r} is not one of {', '.join(SCALE_LAYOUTS)}")
        if self.ids_dtype not in ("int32", "int64"):
            raise ValueError(f"staging ids_dtype={self.ids_dtype!r} must be 'int32' or 'int64'")
        if not self.pad_rows and not self.pad_rows_source:
            raise ValueError("staging pad_rows=False needs pad_rows_source: where the kernel reads only rows below T")


@dataclass(frozen=True)
class VariantSpec:
    """Everything the oracle knows about one backend variant, without importing it.

    ``backend`` is the engines' ``--moe-backend`` value (``deep_gemm_mega_moe``,
    ``aiter_mega_moe``); ``variant`` names arch and format (``sm90_fp8xfp8``); ``target`` the
    hardware folder (``cuda_sm90``). ``runtime`` is an ``module:attribute`` path to the data-path
    implementation, imported only when a layer is built. ``priority`` breaks cost ties
    (lower first). ``recipe`` says where the kernel quantizes (the emulation twin follows it).
    ``conversions`` lists checkpoint formats the variant can also serve after converting the
    experts at load. ``sizing`` maps formula names to the backend's functions that compute the
    derived resources launch plans print (symmetric buffers, heaps), looked up by
    :func:`moe_oracle.fit.resources.formula`; pure arithmetic, no torch.

    ``layout`` names the variant's weight-layout module (``"pkg.weights"``), imported only when a layer
    (real or its emulation twin) is built; it defines ``canonical(experts)`` (the checkpoint experts in
    the exact values the kernel gets), ``allocate(e, hidden, inter, device)``, ``chunk(experts, start,
    stop)`` and ``from_kernel`` (the inverse), and ``to_kernel`` / ``transform_into`` from a
    :class:`~moe_oracle.runtime.layouts.KernelLayout` of those; NVFP4-L2 variants also
    ``l2_activation_scale(canonical)``. ``numerics`` is the rounding convention of its activation
    quantizers (one of :data:`NUMERICS`), which the emulation twin reproduces. ``staging`` says how
    its kernel wants the inputs staged (:class:`Staging`).
    """

    backend: str
    variant: str
    target: str
    summary: str
    weights: str
    activations: str
    kernel: str
    checks: tuple[Check, ...]
    recipe: Recipe
    sources: tuple[str, ...] = ()
    runtime: str | None = None
    priority: int = 100
    conversions: tuple[Conversion, ...] = ()
    sizing: Mapping[str, Callable[..., Any]] | None = field(default=None, hash=False, compare=False)
    layout: str | None = None
    numerics: Numerics = "deepgemm"
    staging: Staging | None = None
    validation: Validation = Validation.SOURCE_ONLY
    validated_how: str = ""
    #: the names of the kernel builds ``validation`` was reached with (empty: not tied to a build); a choice
    #: served only by other builds is read from source only
    validated_builds: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.numerics not in NUMERICS:
            raise ValueError(f"{self.key}: numerics={self.numerics!r} is not one of {', '.join(NUMERICS)}")
        if self.layout is not None and (":" in self.layout or not self.layout.strip()):
            raise ValueError(f"{self.key}: layout={self.layout!r} must name a module ('pkg.weights')")

    @property
    def key(self) -> str:
        return f"{self.backend}:{self.variant}"

    @property
    def validation_text(self) -> str:
        """The validation status with what was run, where and what was not (one line)."""
        return self.validation.text + (f": {self.validated_how}" if self.validated_how else "")

    def evaluate(self, scenario: Scenario) -> list[Reason]:
        """Every failed or undecidable check, in declaration order."""
        reasons = []
        for check in self.checks:
            reason = check.evaluate(scenario)
            if reason is not None:
                reasons.append(reason)
        return reasons
