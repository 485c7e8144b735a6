"""Module-name patterns of exclusion and target lists, and the module names they are matched against.

Names are matched the way the producers match them: ``re:`` prefixed regular expressions
(``re.match`` semantics, compressed-tensors), shell globs (``fnmatch``, ModelOpt), exact module
names or module-name prefixes, and the class name ``Linear`` (every linear layer).

Regular expressions come from untrusted configs, so they run on RE2 (``google-re2``), whose
matching time is linear in the name's length: ``re:(\\w+\\.?)+!`` cannot hang the parser. A
pattern RE2 cannot honour (a backreference, a lookaround, a program over :data:`_RE2_MAX_MEM`)
is refused with a one-line error naming it, never silently skipped or run on a backtracking engine.

A multimodal checkpoint (a ``text_config`` model) names its language model's modules under a
wrapper, ``language_model.model.layers.3...`` (LLaVA-style exports, Kimi-K2.5/K2.6) or
``model.language_model.layers.3...`` (transformers >= 4.52): :func:`wrapped` adds those spellings
of every candidate name, so a pattern written the way the checkpoint names its modules matches.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from moe_oracle.errors import ModelConfigError
from moe_oracle.model.adapters._view import json_type, show

_MAX_PATTERNS = 100_000
_MAX_PATTERN_LEN = 1000
#: Memory RE2 may use to compile one pattern (its default is 8 MiB).
_RE2_MAX_MEM = 8 << 20

#: Wrappers a multimodal checkpoint puts before its language model's module names: a name
#: ``model.X`` is also ``language_model.model.X`` and ``model.language_model.X``; a name ``X``
#: without the ``model.`` root (DeepSeek V4's reference naming) is also ``language_model.X``
#: and ``model.language_model.X``.
_WRAPPERS = ("language_model.", "model.language_model.")


def wrapped(names: Iterable[str]) -> tuple[str, ...]:
    """``names`` followed by their spellings under the multimodal wrappers (see the module docstring)."""
    names = tuple(names)
    out = list(names)
    for name in names:
        out.append(_WRAPPERS[0] + name)
        out.append(_WRAPPERS[1] + name.removeprefix("model."))
    return tuple(dict.fromkeys(out))


def _re2_options() -> Any:
    import re2

    options = re2.Options()
    options.log_errors = False  # RE2 would print its own parse errors to stderr
    options.max_mem = _RE2_MAX_MEM
    return options


def compile_regex(pattern: str, *, where: str, model_id: str) -> Any:
    """``pattern`` compiled by RE2 (linear-time matching), or a one-line error saying why it cannot be honoured."""
    import re2

    try:
        return re2.compile(pattern, options=_re2_options())
    except re2.error as exc:
        detail = exc.args[0] if exc.args else exc
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        raise ModelConfigError(
            f"{model_id}: {where}={show('re:' + pattern, limit=200)} cannot be honoured: {detail} (module-name "
            "regular expressions run on RE2, which matches in linear time and has no backreferences or lookaround)",
            fix="rewrite the pattern without backreferences or lookaround, or list the module names",
        ) from None


# ---------------------------------------------------------------------------------------------
# Module sites: the candidate module names of one layer's experts
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Site:
    """Candidate module names of one MoE layer's routed and shared experts."""

    label: str
    experts: tuple[str, ...]
    shared: tuple[str, ...]


def _leaves(container: str, leaf_names: Sequence[str], *, expert: bool) -> list[str]:
    prefix = f"{container}.0" if expert else container
    return [container] + [f"{prefix}.{leaf}" for leaf in leaf_names]


def deepseek_v4_site(label: str, layer: int | None, mtp: int | None) -> Site:
    """DeepSeek V4 reference naming (``layers.3.ffn.experts.0.w1``, ``mtp.0.ffn.experts``) and the
    transformers-style renaming some exports use (``model.layers.3.ffn.experts.0.gate_proj``)."""
    roots = [f"layers.{layer}", f"model.layers.{layer}"] if mtp is None else [f"mtp.{mtp}", f"model.mtp.{mtp}"]
    experts: list[str] = []
    shared: list[str] = []
    for root in roots:
        for leaves in (("w1", "w2", "w3"), ("gate_proj", "up_proj", "down_proj")):
            experts += _leaves(f"{root}.ffn.experts", leaves, expert=True)
            shared += _leaves(f"{root}.ffn.shared_experts", leaves, expert=False)
    return Site(label, tuple(dict.fromkeys(experts)), tuple(dict.fromkeys(shared)))


def hf_site(label: str, layer: int, *, block: str = "mlp", shared: str = "shared_experts") -> Site:
    """Hugging Face naming (``model.layers.3.mlp.experts.0.gate_proj``, fused ``gate_up_proj``).

    ``block`` is the MoE module (``mlp``; Mixtral / MiniMax ``block_sparse_moe``; Llama-4 ``feed_forward``),
    ``shared`` its shared-expert module (``shared_experts``; Qwen / Llama-4 ``shared_expert``); Mixtral-style
    ``w1``/``w2``/``w3`` expert leaves are candidates too.
    """
    root = f"model.layers.{layer}.{block}"
    experts = _leaves(f"{root}.experts", ("gate_proj", "up_proj", "down_proj"), expert=True)
    experts += [f"{root}.experts.gate_up_proj", f"{root}.experts.down_proj"]
    if block != "mlp":
        experts += [f"{root}.experts.0.{leaf}" for leaf in ("w1", "w2", "w3")]
    shared_names = _leaves(f"{root}.{shared}", ("gate_proj", "up_proj", "down_proj"), expert=False)
    return Site(label, tuple(experts), tuple(shared_names))


# ---------------------------------------------------------------------------------------------
# Pattern sets
# ---------------------------------------------------------------------------------------------


def prefixes(name: str) -> Iterable[str]:
    parts = name.split(".")
    for end in range(1, len(parts) + 1):
        yield ".".join(parts[:end])


class PatternSet:
    """Module-name patterns from one config list, compiled once."""

    def __init__(self, patterns: Any, *, path: str, model_id: str) -> None:
        self.path = path
        self.exact: dict[str, str] = {}
        self.globs: list[tuple[str, re.Pattern[str]]] = []
        self.regexes: list[tuple[str, Any]] = []
        self.linear: str | None = None
        self._glob_any: re.Pattern[str] | None = None
        if patterns is None:
            return
        if isinstance(patterns, str):
            patterns = [patterns]
        if not isinstance(patterns, list):
            raise ModelConfigError(
                f"{model_id}: {path}={show(patterns)} is invalid: a JSON {json_type(patterns)}, "
                "expected an array of module-name patterns"
            )
        if len(patterns) > _MAX_PATTERNS:
            raise ModelConfigError(
                f"{model_id}: {path} has {len(patterns)} entries; at most {_MAX_PATTERNS} are accepted"
            )
        for index, pattern in enumerate(patterns):
            where = f"{path}[{index}]"
            if not isinstance(pattern, str) or not pattern or len(pattern) > _MAX_PATTERN_LEN:
                raise ModelConfigError(
                    f"{model_id}: {where}={show(pattern)} is invalid: expected a non-empty module-name "
                    f"pattern string of at most {_MAX_PATTERN_LEN} characters"
                )
            if pattern.startswith("re:"):
                self.regexes.append((pattern, compile_regex(pattern[3:], where=where, model_id=model_id)))
            elif any(ch in pattern for ch in "*?["):
                self.globs.append((pattern, re.compile(fnmatch.translate(pattern))))
            elif pattern == "Linear":
                self.linear = pattern
            else:
                self.exact.setdefault(pattern, pattern)
        if self.globs:
            self._glob_any = re.compile("|".join(f"(?:{g.pattern})" for _, g in self.globs))

    def __bool__(self) -> bool:
        return bool(self.exact or self.globs or self.regexes or self.linear)

    def match_names(self, names: Iterable[str]) -> str | None:
        """The first pattern matching a name (by module name, glob or regex), or ``None``."""
        names = tuple(names)
        if self.exact:
            for name in names:
                for prefix in prefixes(name):
                    if prefix in self.exact:
                        return self.exact[prefix]
        if self._glob_any is not None:
            for name in names:
                if self._glob_any.match(name):
                    for pattern, compiled in self.globs:
                        if compiled.match(name):
                            return pattern
        for pattern, compiled in self.regexes:
            for name in names:
                if compiled.match(name):
                    return pattern
        return None

    def match(self, names: Iterable[str]) -> str | None:
        """Like :meth:`match_names`, but the class target ``Linear`` matches every module."""
        hit = self.match_names(names)
        if hit is None and self.linear is not None:
            return self.linear
        return hit
