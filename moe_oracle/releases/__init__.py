"""Engine releases: everything moe-oracle knows about each engine version, one folder per release.

A release folder (``vllm_0_33/``, ``sglang_0_5_23/``) holds its version and source tag (``version.py``, the only
place the version is written), its gates on top of the kernels' rules (``gates.py``), the MoE block it builds per
architecture (``model_classes.py``), the flags and environment variables moe-oracle emits for it (``flags.py``),
the ``--software`` profiles it ships (``profiles.py``), and its :class:`~moe_oracle.releases.types.Release` value
(``__init__.py``). They sit below the decision, which reads the gates, so ``selection`` never imports
``moe_oracle.engines`` (the launch plans and plug-ins, which sit above it). The gate types,
:class:`~moe_oracle.rules.engine.EngineProfile` and :class:`~moe_oracle.rules.engine.EngineSupport`, are part of
the rules engine.

Code asks :func:`release` (or :data:`RELEASES`) for the release of an engine, and the engine's plans and plug-in
take its flag vocabulary from :data:`vllm` / :data:`sglang` below; nothing outside this package names a release
folder (``tests/releases/test_release_folders.py`` holds that, and that every citation of a release's sources and
every spelling of its version lives in its folder).

Adding a release (say vLLM 0.34.0), as a checklist:

1. Copy the folder of the release it follows (``vllm_0_33/`` -> ``vllm_0_34/``) and set ``version.py``'s
   ``VERSION``, ``SERIES`` and ``SOURCE``: the profile names (``vllm-0.34.0``, ``vllm-0.34.0+moe-oracle``), the
   source tag of every citation and every message that names the release follow from them.
2. Re-read every cited line in the new wheel (``pip download --no-deps vllm==0.34.0``) and update the gates, the
   model-class table, the flag vocabulary and the speculative launch where the release changed them; every
   citation is ``f"{SOURCE}/<path>#L<a>-L<b>"``, so the tag follows ``SOURCE``.
3. Point this module's entry for the engine at the new folder (the import and the alias below); its tests
   follow: ``tests/engines/test_engine_vocabulary.py`` and ``tests/test_provenance.py`` check the flags, the
   model classes and every cited line against the new wheel (``pip download --no-deps`` into ``/tmp/wheels``),
   ``tests/releases/`` that the folder is self-contained and its parts agree. Delete the old folder (or keep
   it, with its own test run, if both releases are served).
4. Regenerate the docs (``moe-oracle matrix --docs docs``, ``moe-oracle plan --examples docs/plans``) and read the
   diff: every changed verdict, flag or citation is the new release's.
5. Run the real-engine harnesses (``tests/engines/run_real_vllm.sh`` / ``run_real_sglang.sh``) against the new
   release.
"""

from __future__ import annotations

from moe_oracle.releases import sglang_0_5_23 as sglang
from moe_oracle.releases import vllm_0_33 as vllm
from moe_oracle.releases.types import Release
from moe_oracle.rules import Engine
from moe_oracle.rules.engine import EngineProfile

__all__ = ["RELEASES", "engine_profile", "release", "sglang", "vllm"]

#: The release each engine's gates, plans and plug-in are written for, in the order ``moe-oracle list`` prints
#: their software profiles.
RELEASES: dict[Engine, Release] = {Engine.VLLM: vllm.RELEASE, Engine.SGLANG: sglang.RELEASE}


def release(engine: Engine) -> Release | None:
    """The release of ``engine`` moe-oracle knows (None for ``--engine none``)."""
    return RELEASES.get(engine)


def engine_profile(engine: Engine) -> EngineProfile | None:
    """The gates of ``engine``'s release (None for ``--engine none``)."""
    found = RELEASES.get(engine)
    return found.gates if found is not None else None
