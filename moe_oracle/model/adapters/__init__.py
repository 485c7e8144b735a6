"""Family adapters: turn a Hugging Face ``config.json`` into a :class:`ModelDescription`.

Entry points:

* :func:`describe_model` -- a preset id, a local directory / ``config.json`` path or a Hub id
  found in the local Hugging Face cache (see :mod:`moe_oracle.model.loader`);
* :func:`describe_config` -- an already parsed config dict (plus optional
  ``hf_quant_config.json`` dict).

One module per family (``deepseek_v4``, ``deepseek_v41``, ``glm4_moe``, ``glm_moe_dsa``,
``deepseek_v3``) holds that family's defaults; :mod:`.describe` does the work shared by all.
Every failure is a one-line :class:`~moe_oracle.errors.BadInputError` subclass; no
``KeyError`` / ``TypeError`` / pydantic ``ValidationError`` escapes.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from moe_oracle.errors import BadInputError, ModelConfigError, UnsupportedArchitectureError
from moe_oracle.model.adapters._view import FIX_VALUE, WRAPPERS, json_type, show
from moe_oracle.model.adapters.catalog import (
    find_refusal,
    find_rules,
    identity_conflict,
    supported_architectures,
    supported_model_types,
)
from moe_oracle.model.adapters.describe import describe_with_rules
from moe_oracle.model.loader import list_presets, load_model_source
from moe_oracle.model.types import ModelDescription

__all__ = [
    "describe_config",
    "describe_model",
    "list_presets",
    "supported_architectures",
    "supported_model_types",
]

_MANUAL_FIX = (
    "describe the model manually: a JSON file shaped like `moe-oracle model --json` output, or the "
    "manual flags of moe-oracle model/select (--hidden-size, --moe-intermediate-size, --num-experts, --top-k, "
    "--weight-format)"
)


def describe_model(source: str, *, allow_network: bool = False) -> ModelDescription:
    """Describe the MoE layers of a preset, a local checkpoint directory / config file, or a cached Hub id."""
    raw = load_model_source(source, allow_network=allow_network)
    return describe_config(raw.config, raw.hf_quant_config, model_id=raw.model_id, source=raw.origin)


def describe_config(
    config: Any,
    hf_quant_config: Any = None,
    *,
    model_id: str = "<config>",
    source: str = "",
) -> ModelDescription:
    """Describe the MoE layers of a parsed ``config.json`` (and optional ``hf_quant_config.json``)."""
    try:
        return _describe(config, hf_quant_config, model_id=model_id, source=source)
    except BadInputError:
        raise
    except ValidationError as exc:
        raise _from_validation(exc, model_id) from None
    except (RecursionError, MemoryError) as exc:
        raise ModelConfigError(
            f"{model_id}: the config is too deeply nested or too large to read ({type(exc).__name__})"
        ) from None
    except (
        KeyError,
        TypeError,
        AttributeError,
        ValueError,
        IndexError,
        OverflowError,
        ArithmeticError,
    ) as exc:
        error = ModelConfigError(
            f"{model_id}: the config could not be read ({type(exc).__name__}: {show(str(exc), 120)})",
            fix=_MANUAL_FIX,
        )
        error.internal = True  # type: ignore[attr-defined]  # a parser gap, not a rule of the model
        raise error from exc


def _describe(config: Any, hf_quant_config: Any, *, model_id: str, source: str) -> ModelDescription:
    if not isinstance(config, dict):
        raise ModelConfigError(
            f"{model_id}: the config is a JSON {json_type(config)} ({show(config)}); expected an object",
            fix="pass the contents of config.json",
        )
    architecture = _architecture(config.get("architectures"), "architectures", model_id)
    model_type = _string(config.get("model_type"), "model_type", model_id)
    wrapper = next((key for key in WRAPPERS if isinstance(config.get(key), dict)), "text_config")
    text = config.get(wrapper)
    text_arch = text_type = None
    if isinstance(text, dict):
        text_arch = _architecture(text.get("architectures"), f"{wrapper}.architectures", model_id)
        text_type = _string(text.get("model_type"), f"{wrapper}.model_type", model_id)
    refused = find_refusal(architecture, model_type, text_arch, text_type)
    if refused is not None:
        raise UnsupportedArchitectureError(f"{model_id}: {refused.message}", fix=refused.fix)
    for arch, mtype, where in ((architecture, model_type, ""), (text_arch, text_type, f"{wrapper}.")):
        conflict = identity_conflict(arch, mtype)
        if conflict is not None:
            raise ModelConfigError(
                f"{model_id}: {where}architectures[0]={arch!r} is a {conflict[0]} model but {where}model_type="
                f"{mtype!r} is {conflict[1]}: the config contradicts itself",
                fix="correct architectures or model_type to the checkpoint's real family",
            )
    rules = find_rules(architecture, model_type, text_arch, text_type)
    if rules is None:
        seen = ", ".join(
            f"{name}={value!r}"
            for name, value in (
                ("architectures[0]", architecture),
                ("model_type", model_type),
                (f"{wrapper}.model_type", text_type),
            )
            if value is not None
        )
        raise _unknown_architecture(config, hf_quant_config, model_id, architecture, model_type, seen)
    return describe_with_rules(config, hf_quant_config, rules, model_id=model_id, source=source)


def _unknown_architecture(
    config: dict, hf_quant_config: Any, model_id: str, architecture: str | None, model_type: str | None, seen: str
) -> UnsupportedArchitectureError:
    """The refusal of a config no family claims, in two sentences: what it is and the families whose reader
    reads it (nearest first), then the manual flags that describe it (the CLI turns them into the command)."""
    from moe_oracle.model.adapters.nearest import nearest_reading

    near = nearest_reading(config, hf_quant_config, model_id=model_id, architecture=architecture)
    read = (
        f"; nearest families that read its config: {', '.join(near.families)}"
        if near.families
        else "; no known family's reader reads its config (every family: docs/families.md)"
    )
    fix = (
        "describe it by hand as the nearest family reads it (check against the model card): "
        + " ".join(near.manual_words)
        + " instead of MODEL (plan and serve: with --checkpoint MODEL, the checkpoint the engine loads)"
        if near.manual_words
        else _MANUAL_FIX
    )
    error = UnsupportedArchitectureError(
        f"{model_id}: unsupported model ({seen or 'no architectures and no model_type'}){read}",
        fix=fix,
    )
    error.manual_words = near.manual_words
    error.source = model_id
    return error


def _architecture(value: Any, path: str, model_id: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ModelConfigError(
            f"{model_id}: {path}={show(value)} is invalid: expected an array of class-name strings "
            'such as ["DeepseekV4ForCausalLM"]',
            fix=FIX_VALUE,
        )
    return value[0] if value else None


def _string(value: Any, path: str, model_id: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ModelConfigError(
            f"{model_id}: {path}={show(value)} is invalid: a JSON {json_type(value)}, expected a string",
            fix=FIX_VALUE,
        )
    return value


def _from_validation(exc: ValidationError, model_id: str) -> ModelConfigError:
    errors = exc.errors()
    loc, msg, value = (errors[0]["loc"], errors[0]["msg"], errors[0].get("input")) if errors else ((), str(exc), None)
    where = ".".join(str(part) for part in loc) or exc.title
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return ModelConfigError(
        f"{model_id}: the description is inconsistent at {where}: {msg} (value {show(value)}){more}",
        fix="check the config values named above",
    )
