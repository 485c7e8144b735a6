"""Conformance of every registered variant (``load_registry()``: moe-oracle's own and any installed plug-in).

For each variant:

* its declaration is complete: checks with reason codes, rules, remediations and sources; a recipe; a
  runtime class implementing its key; a weight-layout module with the documented hook;
* its weight transform round-trips bit-exactly (``from_kernel(to_kernel(x)) == canonical(x)``, bit for bit,
  streamed in chunks of two experts) on small random experts of its checkpoint format, and the kernel
  layout is a real rearrangement (not the identity);
* its emulation twin agrees with the FP32 reference (same quantized weights, BF16 input) within the
  tolerance class of its recipe's coarsest activation format.

Tolerance classes (calc_diff against the FP32 reference; measured values at these shapes in brackets;
calc_diff ~ rel_l2**2 / 2):

* BF16 activations (sm100_bf16): only the BF16 roundings of the L2 input and expert output
  (2**-9 relative) -> 2e-5 [4e-6];
* FP8 E4M3 activations (sm90_*, sm100_fp8x*, gfx950_a8w4): two E4M3 quantizations (3 mantissa bits,
  ~2**-5 relative each) of the L1 and L2 inputs -> 3e-3 [1.1e-3]; the SM90 twin on H200-style data
  (h200.md §3) gives 3.5e-4 against the FP32 reference on the quantized input, the value the H200
  kernels measured (3.3e-4 to 3.9e-4), see tests/runtime/test_emulation.py;
* NVFP4 activations (E2M1 with E4M3 scales per 16): one binade per 16 values, 1 mantissa bit ->
  3e-2 [1.3e-2];
* MXFP4 activations (gfx950_a4w4, E2M1 with power-of-two scales per 32) -> 6e-2 [2.6e-2].
"""

from __future__ import annotations

import importlib

import pytest
import torch

from moe_oracle.registry import load_registry
from moe_oracle.rules import ReasonCode, VariantSpec
from moe_oracle.rules.recipe import ActQuant, Recipe
from moe_oracle.rules.variant import NUMERICS
from moe_oracle.runtime import LayerConfig, build_layer, calc_diff, reference_moe, rel_l2
from moe_oracle.runtime.accuracy import variant_weight_quant
from moe_oracle.runtime.interface import CheckpointExperts, MegaMoELayer
from moe_oracle.runtime.layouts import KernelLayout
from moe_oracle.runtime.quantize import quantize_experts
from moe_oracle.runtime.staging import StagingSpec
from moe_oracle.runtime.tolerance import recipe_tolerance
from tests.runtime.conftest import PRESETS, twin_experts, twin_setup

VARIANTS = load_registry().variants
IDS = [v.key for v in VARIANTS]
#: Variants moe-oracle's runtime builds (a runtime class); the others are engine-native (``runtime=None``).
BUILT = tuple(v for v in VARIANTS if v.runtime)
BUILT_IDS = [v.key for v in BUILT]
ENGINE_NATIVE = tuple(v for v in VARIANTS if not v.runtime)
LAYOUT_HOOK = ("canonical", "allocate", "chunk", "to_kernel", "transform_into", "from_kernel")
SHAPES = [(3, 512, 256), (2, 1024, 384)]  # I=384: K/32 = 12 exercises AITER's scale padding
CHECKPOINT_FIELDS = ("w13", "w2", "w13_scale", "w2_scale", "w13_global", "w2_global", "w2_input_scale")


def tolerance(recipe: Recipe) -> float:
    """The tolerance class of a recipe: that of its coarsest activation format (moe_oracle.runtime.tolerance)."""
    return recipe_tolerance(recipe.l1_input, recipe.l2_input)


def _bits(t: torch.Tensor) -> torch.Tensor:
    t = t.contiguous()
    return t.view({1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


def _same(a: torch.Tensor | None, b: torch.Tensor | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return a.shape == b.shape and a.dtype == b.dtype and torch.equal(_bits(a), _bits(b))


def random_experts(spec: VariantSpec, e: int, h: int, i: int, seed: int = 0) -> CheckpointExperts:
    """Random experts in the checkpoint format ``spec``'s kernel takes (row scales spread over binades)."""
    quant, convention = variant_weight_quant(spec)
    g = torch.Generator().manual_seed(seed)
    w13 = torch.randn(e, 2 * i, h, generator=g) * torch.exp(torch.randn(e, 2 * i, 1, generator=g)) / h**0.5
    w2 = torch.randn(e, h, i, generator=g) / i**0.5
    return quantize_experts(
        w13.bfloat16(), w2.bfloat16(), quant, convention=convention, w2_input_scale=torch.rand(e, generator=g) + 0.5
    )


# ------------------------------------------------------------------------------------------
# Declarations
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("spec", VARIANTS, ids=IDS)
def test_declaration_is_complete(spec: VariantSpec) -> None:
    assert spec.backend and spec.variant and spec.target and spec.summary and spec.kernel
    assert spec.weights and spec.activations
    assert spec.sources and all(isinstance(s, str) and s.strip() for s in spec.sources)
    assert isinstance(spec.recipe, Recipe) and spec.numerics in NUMERICS
    assert spec.checks
    for check in spec.checks:
        assert isinstance(check.code, ReasonCode), check
        assert check.rule.strip(), check
        assert check.sources and all(s.strip() for s in check.sources), check.rule
    assert any(check.code is ReasonCode.ARCH_UNSUPPORTED for check in spec.checks)
    assert any(check.code is ReasonCode.KERNEL_MISSING for check in spec.checks)


@pytest.fixture(scope="module")
def default_matrix():
    from moe_oracle.report.matrix import build_matrix
    from moe_oracle.report.scenarios import build_scenarios

    return build_matrix(build_scenarios(env={}))


@pytest.mark.parametrize("spec", VARIANTS, ids=IDS)
def test_every_rejection_carries_its_values_rule_fix_and_sources(spec: VariantSpec, default_matrix) -> None:
    """Judged in every default matrix scenario: each failed rule names the rule, a remediation (declared,
    or computed from the scenario's values) and its sources."""
    reasons = [r for c in default_matrix.all_cells() if c.variant.key == spec.key for g in c.groups for r in g.reasons]
    assert reasons  # no variant runs everywhere
    rules = {check.rule for check in spec.checks}
    for r in reasons:
        assert r.message.strip() and r.remediation.strip() and r.sources, r
        assert r.rule in rules or r.code in (ReasonCode.KNOWN_BAD, ReasonCode.ENGINE_UNSUPPORTED), r


@pytest.mark.parametrize("spec", BUILT, ids=BUILT_IDS)
def test_runtime_class_implements_its_key(spec: VariantSpec) -> None:
    assert spec.runtime and ":" in spec.runtime
    module, attr = spec.runtime.split(":")
    cls = getattr(importlib.import_module(module), attr)
    assert isinstance(cls, type) and issubclass(cls, MegaMoELayer)
    assert cls.key == spec.key
    if load_registry().origin(spec).builtin:  # moe-oracle's kernel classes read their declaration
        assert cls.SPEC is spec


@pytest.mark.parametrize("spec", BUILT, ids=BUILT_IDS)
def test_layout_module_has_the_documented_hook(spec: VariantSpec) -> None:
    assert spec.layout, f"{spec.key} declares no layout"
    layout = importlib.import_module(spec.layout)
    missing = [name for name in LAYOUT_HOOK if not callable(getattr(layout, name, None))]
    assert not missing, (spec.layout, missing)
    if spec.recipe.l2_input is ActQuant.NVFP4:
        assert callable(getattr(layout, "l2_activation_scale", None))
    desc = getattr(layout, "LAYOUT", None)
    if desc is not None or load_registry().origin(spec).builtin:  # moe-oracle's layouts all use the generic one
        assert isinstance(desc, KernelLayout)
        assert (desc.canonical, desc.allocate, desc.chunk, desc.inverse) == (
            layout.canonical,
            layout.allocate,
            layout.chunk,
            layout.from_kernel,
        )
        assert layout.to_kernel == desc.to_kernel and layout.transform_into == desc.transform_into


@pytest.mark.parametrize("spec", BUILT, ids=BUILT_IDS)
def test_staging_declaration_builds_the_staging(spec: VariantSpec) -> None:
    """moe-oracle's variants declare their staging (third-party ones may stage in their own kernel class)."""
    if spec.staging is None:
        assert not load_registry().origin(spec).builtin, f"{spec.key} declares no staging"
        return
    st = StagingSpec.declared(spec)
    assert st.act is spec.recipe.l1_input and st.vendor == spec.numerics
    x = torch.randn(5, 512, generator=torch.Generator().manual_seed(0)).bfloat16()
    ids = torch.tensor([[0, 1]] * 5)
    staged = st.stage(x, ids, torch.rand(5, 2))
    assert staged["x"].shape[0] == 5 and staged["topk_idx"].dtype == st.ids_dtype


# ------------------------------------------------------------------------------------------
# Weight transform: bit-exact round trip
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("spec", BUILT, ids=BUILT_IDS)
def test_weight_transform_round_trips_bit_exactly(spec: VariantSpec, shape: tuple[int, int, int]) -> None:
    layout = importlib.import_module(spec.layout)
    ex = random_experts(spec, *shape)
    kw = layout.to_kernel(ex, chunk_experts=2)
    back = layout.from_kernel(kw)
    canon = layout.canonical(ex)
    for name in CHECKPOINT_FIELDS:
        assert _same(getattr(back, name), getattr(canon, name)), name
    # the kernel layout is a different arrangement of the same bytes (not the identity)
    assert not torch.equal(_bits(kw.w13), _bits(canon.w13.view(kw.w13.dtype)))
    # streamed into a preallocated layout, one expert at a time: the same bytes
    e, h, i = shape
    dst = layout.transform_into(ex, layout.allocate(e, h, i), chunk_experts=1)
    assert all(_same(a, b) for a, b in zip(dst.tensors().values(), kw.tensors().values(), strict=True))


# ------------------------------------------------------------------------------------------
# Emulation twin vs the FP32 reference
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("spec", BUILT, ids=BUILT_IDS)
def test_twin_within_recipe_tolerance(spec: VariantSpec, preset: str) -> None:
    setup = twin_setup(preset)
    g, _, _, x, ids, w, _ = setup
    ex = twin_experts(setup, spec)
    layer = build_layer("emulation:" + spec.key, LayerConfig(group=g, max_tokens_per_rank=64, device="cpu"), ex)
    assert layer.key == "emulation:" + spec.variant
    y = layer(x, ids, w)
    assert y.dtype == torch.bfloat16 and y.shape == x.shape and torch.isfinite(y.float()).all()
    ref = reference_moe(x, ids, w, ex, g.activation)
    diff = calc_diff(y.float(), ref)
    tol = tolerance(spec.recipe)
    assert diff < tol, (spec.key, preset, diff)
    if spec.recipe.l1_input is not ActQuant.BF16:
        assert diff > 1e-5  # the twin does quantize
    assert rel_l2(y.float(), ref) < (2.5 * tol) ** 0.5


@pytest.mark.parametrize("spec", ENGINE_NATIVE, ids=[v.key for v in ENGINE_NATIVE])
def test_engine_native_variant_is_never_built_by_moe_oracle(spec: VariantSpec) -> None:
    """``runtime=None``: no layout or staging is declared, and build_layer refuses the real key and the twin."""
    from moe_oracle.runtime.errors import BackendUnavailableError

    assert spec.layout is None and spec.staging is None
    for key in (spec.key, f"emulation:{spec.variant}"):
        with pytest.raises(BackendUnavailableError, match="engine-native"):
            build_layer(key, None)  # type: ignore[arg-type]  # refused before the config is read
