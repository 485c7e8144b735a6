"""vLLM general plug-in: choose, validate and serve the fused mega-MoE backend at server start.

Registered under the ``vllm.general_plugins`` entry point (``moe_oracle = ...:register``), so vLLM
loads it in every process when moe-oracle is installed next to it. ``register()`` does two things,
both through vLLM's own extension points:

* it registers :class:`~moe_oracle.engines.vllm.layer.MoEOracleRoutedExperts` as vLLM's out-of-tree
  ``RoutedExperts`` (``PluggableLayer.register_oot``): a layer whose group the plan gives to
  moe-oracle runs moe-oracle's runtime, every other layer is vLLM's class;
* it wraps the ``MODELS_CONFIG_MAP`` entry of every architecture in vLLM's model registry (an
  explicit choice is judged whatever the architecture; under ``auto`` one the layer cannot serve is
  left alone after one lookup): the wrapper subclasses the existing entry (its hooks keep running
  first) and then, inside
  ``VllmConfig.__post_init__`` (before the LoRA check, ``KernelConfig.set_platform_defaults`` and any
  model construction), decides with vLLM 0.33 semantics:

  - ``--moe-backend auto``: the same decision as ``moe-oracle select --engine vllm`` (:mod:`moe_oracle.answers`,
    bundled advisories in force) ranks vLLM's
    native mega paths and moe-oracle's runtime variants. When every layer group runs one native
    backend, ``kernel_config.moe_backend`` is set to it (plus MoRI settings for AITER); otherwise the
    groups moe-oracle serves are written, as a plan, into ``additional_config["moe_oracle"]``, which
    vLLM ships to every worker (:mod:`.shipped`);
  - an explicit moe-oracle variant (``--additional-config '{"moe_oracle": {"backend": "B:V"}}'`` or
    ``MOE_ORACLE_VLLM_BACKEND``): validated and refused with every reason before any weight loads;
  - an explicit ``deep_gemm_mega_moe`` / ``aiter_mega_moe``: vLLM's own path, validated the same way;
  - any other value (``triton``, ``marlin``, ...): left to vLLM.

One decision table is logged at INFO on ``vllm.plugins.moe_oracle`` by the process that owns the
server (not by each of several API-server processes, nor by a headless node). The decision is a pure
function of the config and the installed kernel builds, so every process reaches the same one.

Environment: ``MOE_ORACLE_VLLM_PLUGIN=0`` disables the plug-in (also ``false``/``off``/``no``);
``MOE_ORACLE_VLLM_DEVICE=<catalogue name>`` names the device where vLLM's platform has none (a dry
check on a CPU machine; a real GPU always wins); ``MOE_ORACLE_DOMAIN_SIZE=<n>`` the NVLink/XGMI
domain; ``MOE_ORACLE_VLLM_BACKEND`` the explicit backend for scripts. Every one is checked before the
config is accepted (:func:`~moe_oracle.engines.vllm.snapshot.check_env`).

The translation (plain values in, decisions and mutations out) is :func:`~moe_oracle.engines.vllm.resolve.resolve`
(:mod:`.resolve`), tested without vLLM; only :func:`apply_to_vllm_config` and :func:`register`, here, touch vLLM
objects.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

from moe_oracle.engines.vllm.resolve import Outcome, _with_vllm_defaults, resolve, substituted_experts
from moe_oracle.engines.vllm.snapshot import (
    ENV_BACKEND,
    ENV_DEVICE,
    ENV_DOMAIN,
    ENV_SWITCH,
    SWITCH_OFF,
    VllmSnapshot,
    _normalize_hf,
    snapshot_from_vllm,
    snapshot_inputs,
)
from moe_oracle.engines.vllm.table import decision_table
from moe_oracle.releases import vllm as release

#: The flag vocabulary of the engine release these plans and hooks are written for.
F = release.flags

__all__ = [
    "ENV_BACKEND",
    "ENV_DEVICE",
    "ENV_DOMAIN",
    "ENV_SWITCH",
    "Outcome",
    "VllmSnapshot",
    "_normalize_hf",
    "_with_vllm_defaults",
    "apply_to_vllm_config",
    "decision_table",
    "register",
    "resolve",
    "snapshot_inputs",
    "substituted_experts",
    "wrap_entry",
]

LOGGER_NAME = "vllm.plugins.moe_oracle"
logger = logging.getLogger(LOGGER_NAME)


def enabled(env: dict[str, str] | None = None) -> bool:
    """Off only for an off spelling of ``MOE_ORACLE_VLLM_PLUGIN``; any other value reaches the hook (refused there)."""
    value = (env if env is not None else os.environ).get(ENV_SWITCH, "1")
    return value.strip().lower() not in SWITCH_OFF


# ---------------------------------------------------------------------------------------------
# The thin layer that touches vLLM
# ---------------------------------------------------------------------------------------------


def _allowed(name: str, value: str) -> bool:
    """Is ``value`` a member of vLLM's own Literal for this field?"""
    import typing

    if name == "moe_backend":
        from vllm.config.kernel import MoEBackend

        return value in typing.get_args(MoEBackend)
    from vllm.config.parallel import All2AllBackend

    return value in typing.get_args(All2AllBackend)


class PluginRefusal(ValueError):
    """The plug-in refuses a config: raised inside ``VllmConfig.__post_init__`` (pydantic reports it as a
    ``ValidationError`` whose cause is this); the message is the whole refusal, one line."""


def refusal_in(exc: BaseException | None) -> PluginRefusal | None:
    """The :class:`PluginRefusal` an uncaught exception carries (itself, its cause, or a pydantic error's)."""
    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, PluginRefusal):
            return exc
        errors = getattr(exc, "errors", None)
        if callable(errors) and type(exc).__name__ == "ValidationError":
            try:
                found = [e.get("ctx", {}).get("error") for e in errors()]
            except Exception:
                found = []
            hit = next((e for e in found if isinstance(e, PluginRefusal)), None)
            if hit is not None:
                return hit
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return None


def _one_line_refusals(previous: Any) -> Any:
    """A ``sys.excepthook`` that prints an uncaught plug-in refusal as one ``error:`` line (the table is already
    logged) instead of vLLM's 20-line traceback, and hands everything else to ``previous``."""

    def hook(exc_type: Any, exc: BaseException, tb: Any) -> None:
        refusal = refusal_in(exc)
        if refusal is None:
            previous(exc_type, exc, tb)
            return
        print(f"error: {refusal}", file=sys.stderr)

    hook._moe_oracle = True  # type: ignore[attr-defined]
    return hook


def install_excepthook() -> None:
    """Chain :func:`_one_line_refusals` in front of the current ``sys.excepthook`` (once per process)."""
    if not getattr(sys.excepthook, "_moe_oracle", False):
        sys.excepthook = _one_line_refusals(sys.excepthook)


def apply_to_vllm_config(vllm_config: Any, architecture: str) -> Outcome | None:
    """Decide for a real ``VllmConfig``, log the table, then mutate it or raise :class:`PluginRefusal`.

    A config the plug-in cannot read (another vLLM's attributes) is reported at WARNING and left
    alone: no attribute read aborts vLLM's start.
    """
    from moe_oracle.engines.vllm.snapshot import SnapshotError
    from moe_oracle.errors import BadInputError

    try:
        snap = snapshot_from_vllm(vllm_config, architecture)
    except BadInputError as exc:  # one of the plug-in's variables (checked before the platform is read)
        logger.error("moe-oracle: %s: refused", architecture)
        raise PluginRefusal(f"{exc.one_line()} [moe-oracle]") from None
    except (SnapshotError, AttributeError, TypeError, ValueError) as exc:
        logger.warning("moe-oracle: cannot read this vLLM config (%s); the plug-in leaves vLLM alone", exc)
        return None
    outcome = resolve(snap)
    for line in outcome.table:
        logger.log(logging.ERROR if outcome.action == "refuse" else outcome.level, "%s", line)
    if outcome.action == "refuse":
        raise PluginRefusal(outcome.error)
    if outcome.action != "set":
        return outcome
    if outcome.moe_backend is not None:
        if not _allowed("moe_backend", outcome.moe_backend):
            logger.warning("moe-oracle: %s is not a --moe-backend of this vLLM; left unchanged", outcome.moe_backend)
            return outcome
        vllm_config.kernel_config.moe_backend = outcome.moe_backend
    if outcome.all2all_backend is not None and _allowed("all2all_backend", outcome.all2all_backend):
        vllm_config.parallel_config.all2all_backend = outcome.all2all_backend
    for key, value in outcome.env_defaults.items():
        os.environ.setdefault(key, value)
    if outcome.additional_config is not None:
        vllm_config.additional_config = outcome.additional_config
    return outcome


def wrap_entry(base: type, architecture: str) -> type:
    """A subclass of ``base`` (a ``VerifyAndUpdateConfig``) that runs the oracle after it."""

    class MoEOracleVerifyAndUpdateConfig(base):
        _moe_oracle_wrapped = True
        _moe_oracle_base = base
        _moe_oracle_architecture = architecture

        @classmethod
        def verify_and_update_config(cls, vllm_config: Any) -> None:
            super().verify_and_update_config(vllm_config)
            if enabled():
                apply_to_vllm_config(vllm_config, architecture)

    MoEOracleVerifyAndUpdateConfig.__name__ = f"MoEOracle{base.__name__}"
    MoEOracleVerifyAndUpdateConfig.__qualname__ = MoEOracleVerifyAndUpdateConfig.__name__
    return MoEOracleVerifyAndUpdateConfig


def register() -> None:
    """``vllm.general_plugins`` entry point: the out-of-tree RoutedExperts and the config hooks."""
    if not enabled():
        logger.warning(
            "moe-oracle: vLLM plug-in disabled (%s=%s): vLLM's own backends only",
            ENV_SWITCH,
            os.environ.get(ENV_SWITCH),
        )
        return
    try:
        import vllm

        version = str(vllm.__version__)
    except Exception as exc:  # a broken plug-in must not stop vLLM
        logger.warning("moe-oracle: vLLM plug-in not active (cannot import vllm: %s)", exc)
        return
    if not F.supported(version):
        logger.warning(
            "moe-oracle: vLLM plug-in not active: it covers vLLM %s, this is vLLM %s; vLLM runs unchanged",
            F.SUPPORTED,
            version,
        )
        return
    try:
        from vllm.model_executor.models import config as cfgmod

        from moe_oracle.engines.vllm.layer import register_layer

        register_layer()
    except Exception as exc:  # a broken plug-in must not stop vLLM
        logger.warning("moe-oracle: vLLM plug-in not active (%s: %s)", type(exc).__name__, exc)
        return
    install_excepthook()
    table = cfgmod.MODELS_CONFIG_MAP
    hooked = hooked_architectures()
    for arch in hooked:
        base = table.get(arch, cfgmod.VerifyAndUpdateConfig)
        if getattr(base, "_moe_oracle_wrapped", False):
            continue
        table[arch] = wrap_entry(base, arch)
    from moe_oracle.engines.plugin_probe import start_line
    from moe_oracle.rules import Engine

    logger.info(
        "%s",
        start_line(
            Engine.VLLM,
            version,
            f"replaces RoutedExperts out of tree for the layer groups a plan gives it (--additional-config moe_oracle, "
            f"{ENV_BACKEND}); config hook on {len(hooked)} architectures",
        ),
    )


def hooked_architectures() -> list[str]:
    """Every architecture vLLM's registry knows, and those the plug-in serves: the hook runs for each, so an
    explicit choice is judged (and refused where the layer cannot serve it) whatever the architecture; under
    ``auto`` an architecture the layer cannot serve costs one dictionary lookup (``resolve``)."""
    from vllm.model_executor.models import ModelRegistry

    return sorted({*ModelRegistry.get_supported_archs(), *F.HOOKED_ARCHITECTURES})
