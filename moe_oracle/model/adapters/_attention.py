"""The attention head counts of a config (what an engine's tensor-parallel group shards): read, never guessed."""

from __future__ import annotations

from typing import Any

from moe_oracle.model.footprint_read import language_config
from moe_oracle.model.types import AttentionHeads


def _count(holder: dict[str, Any], key: str) -> int | None:
    value = holder.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def read_attention(config: dict[str, Any]) -> AttentionHeads | None:
    """``num_attention_heads`` (and ``num_key_value_heads`` unless the attention is MLA, ``kv_lora_rank`` set) of the
    language model's config; None when the config gives no positive head count."""
    holder = language_config(config)
    heads = _count(holder, "num_attention_heads")
    if heads is None:
        return None
    mla = _count(holder, "kv_lora_rank") is not None
    kv = None if mla else _count(holder, "num_key_value_heads")
    where = "text_config." if holder is not config else ""
    keys = [f"{where}num_attention_heads={heads}"]
    keys += [f"{where}kv_lora_rank (MLA)"] if mla else [f"{where}num_key_value_heads={kv}"] if kv else []
    return AttentionHeads(heads=heads, kv_heads=kv, mla=mla, source="config.json " + ", ".join(keys))
