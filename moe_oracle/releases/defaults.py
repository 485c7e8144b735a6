"""The software each engine release is judged against by default, per device architecture and per need.

An engine loads one ``deep_gemm`` module, so its default is the release with moe-oracle's plug-in first, then the
replacements a chosen variant may need on that device, in the order they are tried. A replacement is taken only
when it lets a layer group run a variant the software before it does not, through that build
(:func:`moe_oracle.decide.software_need.choose_default`). SM100 and ROCm need none: the releases' own builds carry
their mega kernels (vLLM: vendored DeepGEMM 2.8.1; SGLang: sgl-deep-gemm 0.2.3.post2, both with SM100 FP8xFP4 and
NVFP4). On SM90, vLLM's vendored 2.8.1 has no mega kernel, so the released sgl-deep-gemm 0.2.3.post2
(``fp8_mega_moe``) is tried first and DeepGEMM PR #323 only for an SM90 FP4 kernel (``_C.fp8_fp4_mega_moe_sm90``,
in no release); SGLang's own sgl-deep-gemm has ``fp8_mega_moe`` already.
"""

from __future__ import annotations

from dataclasses import dataclass

from moe_oracle.rules import Engine


@dataclass(frozen=True)
class SoftwareOption:
    """One software profile an engine's default may be (a named profile), and what it installs beyond the release.

    ``replaces``: the DeepGEMM build that takes the place of the release's own (None: the release's own, only
    moe-oracle's plug-in added). An engine loads one ``deep_gemm`` module, so a replacement is all or nothing.
    """

    profile: str
    replaces: str | None = None


#: The replacements per engine and architecture, in the order they are tried: (profile suffix after the release's
#: plug-in profile, the DeepGEMM build it installs in place of the release's own).
_REPLACEMENTS: dict[tuple[Engine, str], tuple[tuple[str, str], ...]] = {
    (Engine.VLLM, "sm90"): (("+sgl-deep-gemm", "sgl-deep-gemm-0.2.3.post2"), ("+pr323", "deepgemm-pr323")),
    (Engine.SGLANG, "sm90"): (("+pr323", "deepgemm-pr323"),),
}


def default_software(engine: Engine, arch: str) -> tuple[SoftwareOption, ...]:
    """The profiles ``engine``'s default software is chosen from on a device of ``arch`` (``sm90``, ``sm100``,
    ``gfx950``...), the release with the plug-in first; empty for an engine without a release profile."""
    from moe_oracle.releases import RELEASES

    release = RELEASES.get(engine)
    if release is None:
        return ()
    base = release.plugin_profile
    extra = _REPLACEMENTS.get((engine, arch), ())
    return (SoftwareOption(base), *(SoftwareOption(base + suffix, build) for suffix, build in extra))
