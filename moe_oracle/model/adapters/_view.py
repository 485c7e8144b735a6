"""Strictly typed reading of a Hugging Face ``config.json`` dict.

:class:`ConfigView` reads keys through an optional nested wrapper (``text_config``,
``llm_config``, ``language_config``: DeepSeek V4.1, VL variants) first, treats ``null``
exactly like an absent key, and turns every wrong type, missing key or out-of-range value
into a one-line :class:`ModelConfigError` that names the key by its JSON path
(``text_config.hidden_size``), the value found and what was expected.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from typing import Any, TypeGuard

from moe_oracle.errors import ModelConfigError

_MISSING: Any = object()

#: Keys are looked up under these names, in order (first present, non-null one wins).
Keys = str | Sequence[str]

#: Keys under which multimodal wrappers nest the language model's config (Qwen3.5 / Llama-4 / Kimi-K2.5 /
#: Step3-VL ``text_config``; InternVL-style ``llm_config``; DeepSeek-VL-style ``language_config``).
WRAPPERS = ("text_config", "llm_config", "language_config")

#: The fix offered when a config value breaks a rule.
FIX_VALUE = "correct the value in config.json, or describe the model manually"


def show(value: object, limit: int = 80) -> str:
    """A short, single-line rendering of a JSON value for an error message."""
    try:
        text = json.dumps(value, ensure_ascii=True)
    except (TypeError, ValueError, RecursionError):
        try:
            text = repr(value)
        except Exception:
            text = f"<{type(value).__name__}>"
    text = " ".join(text.split())
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return text


def json_type(value: object) -> str:
    """The JSON name of a value's type (``integer``, ``string``, ...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class ConfigView:
    """Read-only, typed access to one config dict and its optional ``text_config``.

    ``scopes`` is a list of ``(prefix, dict)`` searched in order; the prefix is the JSON path
    of that dict (``"text_config."`` or ``""``).
    """

    def __init__(self, scopes: Sequence[tuple[str, dict]], model_id: str) -> None:
        self.scopes = list(scopes)
        self.model_id = model_id

    @classmethod
    def of(cls, config: dict, model_id: str) -> ConfigView:
        """The view of ``config``: the first wrapper of :data:`WRAPPERS` it has (searched first), then the top level."""
        for key in WRAPPERS:
            inner = config.get(key)
            if inner is None:
                continue
            if not isinstance(inner, dict):
                raise ModelConfigError(
                    f"{model_id}: {key}={show(inner)} is a JSON {json_type(inner)}; expected an object "
                    "holding the language model's keys",
                    fix=f"remove {key} or make it an object",
                )
            return cls([(f"{key}.", inner), ("", config)], model_id)
        return cls([("", config)], model_id)

    # -- lookup ---------------------------------------------------------------------------

    def lookup(self, keys: Keys) -> tuple[str, Any] | None:
        """``(json_path, value)`` of the first present, non-null key, or ``None``."""
        names = (keys,) if isinstance(keys, str) else tuple(keys)
        for depth, (prefix, data) in enumerate(self.scopes):
            for name in names:
                value = data.get(name)
                if value is not None:
                    self._agree(depth, name, prefix + name, value)
                    return prefix + name, value
        return None

    def _agree(self, depth: int, name: str, path: str, value: object) -> None:
        """A key the wrapper (``text_config``) sets must not be set otherwise at the top level: the wrapper's
        value would silently win over a contradicting one."""
        for prefix, data in self.scopes[depth + 1 :]:
            other = data.get(name)
            if other is not None and other != value:
                raise ModelConfigError(
                    f"{self.model_id}: {path}={show(value)} contradicts {prefix + name}={show(other)} (the "
                    "wrapper's value would win silently)",
                    fix=f"make the two {name} values agree, or remove the top-level one",
                )

    def has(self, keys: Keys) -> bool:
        return self.lookup(keys) is not None

    def path(self, keys: Keys) -> str:
        """The JSON path a missing key is reported under (its first name, innermost scope)."""
        name = keys if isinstance(keys, str) else keys[0]
        return self.scopes[0][0] + name

    # -- errors ---------------------------------------------------------------------------

    def _find(self, keys: Keys, expected: str, default: object) -> tuple[str, Any] | None:
        """``(path, value)`` of ``keys``; None when absent with a default; :meth:`missing` when absent without."""
        found = self.lookup(keys)
        if found is None and default is _MISSING:
            raise self.missing(keys, expected)
        return found

    def error(self, path: str, value: object, expected: str, fix: str | None = None) -> ModelConfigError:
        return ModelConfigError(f"{self.model_id}: {path}={show(value)} is invalid: {expected}", fix=fix or FIX_VALUE)

    def missing(self, keys: Keys, expected: str, fix: str | None = None) -> ModelConfigError:
        names = (keys,) if isinstance(keys, str) else tuple(keys)
        alias = f" (or {', '.join(names[1:])})" if len(names) > 1 else ""
        return ModelConfigError(
            f"{self.model_id}: {self.path(keys)}{alias} is missing; expected {expected}",
            fix=fix or "add the key to config.json or describe the model manually",
        )

    # -- typed getters ----------------------------------------------------------------------

    def get_int(
        self,
        keys: Keys,
        *,
        lo: int,
        hi: int,
        default: int = _MISSING,
        what: str = "",
    ) -> int:
        expected = f"an integer in {lo}..{hi}" + (f" ({what})" if what else "")
        found = self._find(keys, expected, default)
        if found is None:
            return default
        path, value = found
        return check_int(value, path=path, lo=lo, hi=hi, what=what, model_id=self.model_id)

    def get_float(
        self,
        keys: Keys,
        *,
        gt: float = 0.0,
        hi: float = 1e6,
        default: float = _MISSING,
        what: str = "",
    ) -> float:
        expected = f"a finite number > {gt:g} and <= {hi:g}" + (f" ({what})" if what else "")
        found = self._find(keys, expected, default)
        if found is None:
            return default
        path, value = found
        if not is_number(value):
            raise self.error(path, value, f"a JSON {json_type(value)}, expected {expected}")
        number = float(value)
        if not math.isfinite(number) or number <= gt or number > hi:
            raise self.error(path, value, f"expected {expected}")
        return number

    def _typed(self, keys: Keys, default: object, expected: str, ok: Callable[[Any], bool], name_type: bool) -> Any:
        """The value at ``keys`` if ``ok(value)``; ``default`` when absent (an error when none).

        ``name_type`` puts the found JSON type in the message (``a JSON string, expected ...``).
        """
        found = self._find(keys, expected, default)
        if found is None:
            return default
        path, value = found
        if not ok(value):
            found_type = f"a JSON {json_type(value)}, " if name_type else ""
            raise self.error(path, value, f"{found_type}expected {expected}")
        return value

    def get_bool(self, keys: Keys, *, default: object = _MISSING, what: str = "") -> bool:
        expected = "true or false" + (f" ({what})" if what else "")
        return self._typed(keys, default, expected, lambda v: isinstance(v, bool), True)

    def get_str(self, keys: Keys, *, default: object = _MISSING, what: str = "") -> str:
        expected = "a string" + (f" ({what})" if what else "")
        return self._typed(keys, default, expected, lambda v: isinstance(v, str), True)

    def get_choice(self, keys: Keys, choices: Sequence[str], *, default: object = _MISSING, what: str = "") -> str:
        expected = "one of " + ", ".join(choices) + (f" ({what})" if what else "")
        return self._typed(keys, default, expected, lambda v: isinstance(v, str) and v in choices, False)

    def get_list(self, keys: Keys, *, default: object = _MISSING, what: str = "") -> list:
        expected = "an array" + (f" ({what})" if what else "")
        return self._typed(keys, default, expected, lambda v: isinstance(v, list), True)

    def get_dict(self, keys: Keys, *, default: object = _MISSING, what: str = "") -> dict:
        expected = "an object" + (f" ({what})" if what else "")
        return self._typed(keys, default, expected, lambda v: isinstance(v, dict), True)


#: An integer as a person types it on a command line: ASCII digits only (``isdigit()`` also passes ``⁸`` and
#: ``٤``), one optional sign, at most 30 digits.
_DECIMAL = re.compile(r"[+-]?[0-9]{1,30}")
#: A decimal number as typed: ASCII only (``float()`` also reads ``٤.٥``, ``1_0`` and ``nan``).
_NUMBER = re.compile(r"[+-]?(?:[0-9]{1,30}(?:\.[0-9]{0,30})?|\.[0-9]{1,30})(?:[eE][+-]?[0-9]{1,3})?")


def decimal_int(text: str) -> int | None:
    """The integer ``text`` spells in ASCII decimal (surrounding spaces allowed), else ``None``."""
    text = text.strip()
    return int(text) if _DECIMAL.fullmatch(text) else None


def decimal_number(text: str) -> float | None:
    """The finite number ``text`` spells in ASCII decimal (``4.5``, ``1e-3``), else ``None``."""
    text = text.strip()
    return float(text) if _NUMBER.fullmatch(text) else None


def check_int(value: object, *, path: str, lo: int, hi: int, what: str = "", model_id: str) -> int:
    """Validate one integer found at ``path``: a JSON integer (not a boolean, not 4096.0) in range."""
    expected = f"an integer in {lo}..{hi}" + (f" ({what})" if what else "")
    if not is_int(value):
        hint = ""
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            hint = f"; write {int(value)} without the decimal point"
        elif isinstance(value, str) and decimal_int(value) is not None:
            hint = "; write the number without quotes"
        raise ModelConfigError(
            f"{model_id}: {path}={show(value)} is invalid: a JSON {json_type(value)}, expected {expected}{hint}",
            fix=FIX_VALUE,
        )
    if value < lo or value > hi:
        raise ModelConfigError(f"{model_id}: {path}={show(value)} is out of range: expected {expected}", fix=FIX_VALUE)
    return value
