"""vLLM 0.33.0, as moe-oracle knows it (https://github.com/vllm-project/vllm/tree/v0.33.0).

One folder per release: :mod:`.version` (the version and its source tag, defined once), :mod:`.gates` (what it
adds on top of the kernels' rules), :mod:`.model_classes` (its MoE block per architecture), :mod:`.flags` (the
serve flags and environment variables moe-oracle emits), :mod:`.profiles` (the ``--software`` profiles it
ships), and below the release's speculative-decoding launch. :data:`RELEASE` is all of it as one value; code
outside ``moe_oracle/releases/`` reaches it through :mod:`moe_oracle.releases`, never by this folder's name.
"""

from __future__ import annotations

from moe_oracle.releases.types import Release, SpeculativeLaunch, declare_plugin_coverage
from moe_oracle.releases.vllm_0_33 import flags, gates, model_classes, profiles
from moe_oracle.releases.vllm_0_33.version import SERIES, SOURCE, VERSION
from moe_oracle.rules import Engine

__all__ = [
    "NAME",
    "PLUGIN_PROFILE",
    "RELEASE",
    "SERIES",
    "SOURCE",
    "SPECULATIVE",
    "VERSION",
    "flags",
    "gates",
    "model_classes",
    "profiles",
]

#: vLLM 0.33 builds the MTP model only as the drafter of a speculative-decoding launch.
SPECULATIVE = SpeculativeLaunch(
    Engine.VLLM,
    ("--speculative-config", '{"method": "mtp", "num_speculative_tokens": 1}'),
    f"{SOURCE}/v1/worker/gpu_model_runner.py#L598-L619 (the drafter, and with it the MTP model, exists only with "
    "--speculative-config)",
)

#: The release's ``--software`` name (``vllm-<version>``) and that of the release with moe-oracle's plug-in.
NAME = f"vllm-{VERSION}"
PLUGIN_PROFILE = f"{NAME}+moe-oracle"

RELEASE = Release(
    engine=Engine.VLLM,
    version=VERSION,
    source=SOURCE,
    gates=gates.PROFILE,
    model_classes=model_classes.TABLE,
    speculative=SPECULATIVE,
    profiles={
        NAME: profiles.plain,
        PLUGIN_PROFILE: profiles.with_moe_oracle,
        f"{PLUGIN_PROFILE}+sgl-deep-gemm": profiles.with_sgl_deep_gemm,
        f"{PLUGIN_PROFILE}+pr323": profiles.with_pr323,
    },
    fallback=gates.fallback,
)
declare_plugin_coverage(Engine.VLLM, model_classes.plugin_serves)
