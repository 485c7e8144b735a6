"""For a config no adapter claims: the known families whose reader reads it, and the manual flags it implies.

An unknown architecture (``FooMoeForCausalLM``) is refused, but the refusal leads somewhere: every family's
reader is tried on the config (each reads only the keys it knows, so a reading is evidence, not proof), the
ones that read it are ranked by how close their architecture name is, and the first reading's main layer group
becomes the manual flags (``--hidden-size ... --weight-format ...``) that describe the model without a family.
The operator checks them against the model card; nothing of a family is assumed silently (the manual
description states its assumptions).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from moe_oracle.model.types import ModelDescription, MoELayerGroup, WeightFormat

#: At most this many nearest families are named.
MAX_NEAREST = 3


@dataclass(frozen=True)
class NearestReading:
    """The families whose reader reads the config (nearest first) and the manual flags of the first reading."""

    families: tuple[str, ...]
    manual_words: tuple[str, ...]


def _distinct_rules() -> list[Any]:
    from moe_oracle.model.adapters.catalog import ARCHITECTURES

    seen: dict[tuple[str, str], Any] = {}
    for rules in ARCHITECTURES.values():
        seen.setdefault((rules.family, rules.architecture), rules)
    return list(seen.values())


def manual_words(group: MoELayerGroup) -> tuple[str, ...]:
    """The manual flags that describe ``group`` (its shape, format, layers and routing), as argv words."""
    quant = group.weight_quant
    words = [
        "--hidden-size",
        str(group.hidden_size),
        "--moe-intermediate-size",
        str(group.moe_intermediate_size),
        "--num-experts",
        str(group.num_experts),
        "--top-k",
        str(group.top_k),
        "--weight-format",
        quant.format.value,
    ]
    if quant.block is not None and quant.format in (WeightFormat.FP8_BLOCK,):
        words += ["--weight-block", f"{quant.block[0]}x{quant.block[1]}"]
    words += ["--num-layers", str(len(group.layers))]
    if group.num_shared_experts:
        words += ["--num-shared-experts", str(group.num_shared_experts)]
    words += ["--scoring", group.routing.scoring.value]
    words.append("--renormalize" if group.routing.renormalize else "--no-renormalize")
    words.append("--correction-bias" if group.routing.correction_bias else "--no-correction-bias")
    return tuple(words)


def nearest_reading(config: dict, hf_quant_config: Any, *, model_id: str, architecture: str | None) -> NearestReading:
    """Try every family's reader on ``config``; the ones that read it, nearest name first (at most
    :data:`MAX_NEAREST`), and the manual flags of the nearest reading (empty when none reads it)."""
    from moe_oracle.model.adapters.describe import describe_with_rules

    name = (architecture or "").lower()
    read: list[tuple[float, str, ModelDescription]] = []
    for rules in _distinct_rules():
        try:
            desc = describe_with_rules(config, hf_quant_config, rules, model_id=model_id, source="nearest family")
        except Exception:  # a reader that cannot read this config is simply not near
            continue
        score = difflib.SequenceMatcher(None, name, rules.architecture.lower()).ratio()
        read.append((score, rules.architecture, desc))
    read.sort(key=lambda item: (-item[0], item[1]))
    if not read:
        return NearestReading((), ())
    families = tuple(dict.fromkeys(arch for _, arch, _ in read))[:MAX_NEAREST]
    return NearestReading(families, manual_words(read[0][2].main_group))
