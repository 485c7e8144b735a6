"""SGLang 0.5.23, as moe-oracle knows it (https://github.com/sgl-project/sglang/tree/v0.5.23).

One folder per release: :mod:`.version` (the version and its source tag, defined once), :mod:`.gates` (what it
adds on top of the kernels' rules), :mod:`.model_classes` (its MoE block per architecture), :mod:`.flags` (the
launch flags and environment variables moe-oracle emits), :mod:`.profiles` (the ``--software`` profiles it
ships), and below the release's speculative-decoding launch. :data:`RELEASE` is all of it as one value; code
outside ``moe_oracle/releases/`` reaches it through :mod:`moe_oracle.releases`, never by this folder's name.
"""

from __future__ import annotations

from moe_oracle.releases.sglang_0_5_23 import flags, gates, model_classes, profiles
from moe_oracle.releases.sglang_0_5_23.version import SOURCE, VERSION
from moe_oracle.releases.types import Release, SpeculativeLaunch, declare_plugin_coverage
from moe_oracle.rules import Engine

__all__ = [
    "NAME",
    "PLUGIN_PROFILE",
    "RELEASE",
    "SOURCE",
    "SPECULATIVE",
    "VERSION",
    "flags",
    "gates",
    "model_classes",
    "profiles",
]

#: SGLang 0.5.23 builds the NextN/MTP layers only as the draft worker of a speculative-decoding launch.
SPECULATIVE = SpeculativeLaunch(
    Engine.SGLANG,
    (
        "--speculative-algorithm",
        "EAGLE",
        "--speculative-num-steps",
        "1",
        "--speculative-eagle-topk",
        "1",
        "--speculative-num-draft-tokens",
        "2",
    ),
    f"{SOURCE}/srt/managers/scheduler.py#L1035-L1064 (maybe_init_draft_worker: no draft worker, so no NextN/MTP "
    "layers, unless --speculative-algorithm is set; NEXTN is an alias of EAGLE, "
    f"{SOURCE}/srt/arg_groups/speculative_hook.py#L110)",
)

#: The release's ``--software`` name (``sglang-<version>``) and that of the release with moe-oracle's plug-in.
NAME = f"sglang-{VERSION}"
PLUGIN_PROFILE = f"{NAME}+moe-oracle"

RELEASE = Release(
    engine=Engine.SGLANG,
    version=VERSION,
    source=SOURCE,
    gates=gates.PROFILE,
    model_classes=model_classes.TABLE,
    speculative=SPECULATIVE,
    profiles={
        NAME: profiles.plain,
        PLUGIN_PROFILE: profiles.with_moe_oracle,
        f"{PLUGIN_PROFILE}+pr323": profiles.with_pr323,
    },
    fallback=gates.fallback,
)
declare_plugin_coverage(Engine.SGLANG, model_classes.sglang_plugin_serves)
