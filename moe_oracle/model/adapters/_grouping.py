"""Step 5 of describing a config: group the layers by role, then by everything a backend decision depends on,
name the groups, and put the main (most numerous) group first.
"""

from __future__ import annotations

from typing import Any

from moe_oracle.model.types import (
    ROLE_GROUP_NAMES,
    LayerRole,
    MoELayerGroup,
    QuantSpec,
)


def _quant_key(spec: QuantSpec | None) -> tuple | None:
    if spec is None:
        return None
    return (spec.format, spec.block, spec.scale_format, spec.global_scale)


def group_layers(rows: list[dict[str, Any]]) -> tuple[MoELayerGroup, ...]:
    by_role: dict[LayerRole, dict[tuple, list[dict[str, Any]]]] = {}
    for row in rows:
        key = (
            row["hidden_size"],
            row["moe_intermediate_size"],
            row["num_experts"],
            row["top_k"],
            row["num_shared_experts"],
            _quant_key(row["weight_quant"]),
            _quant_key(row["shared_expert_quant"]),
            row["activation"],
            row["routing"],
            row["shared_expert_width"],
            row["shared_expert_gate"],
            row["expert_bias"],
        )
        by_role.setdefault(row["role"], {}).setdefault(key, []).append(row)

    groups: list[MoELayerGroup] = []
    for role, buckets in by_role.items():
        base = ROLE_GROUP_NAMES[role]
        names: list[str] = []
        for members in buckets.values():
            if len(buckets) == 1:
                name = base
            else:
                quant = members[0]["weight_quant"]
                name = f"{base}_{quant.format.value}"
                if name in names:
                    tile = f"{quant.block[0]}x{quant.block[1]}" if quant.block else "none"
                    name = f"{base}_{quant.format.value}_{tile}"
                suffix = 2
                stem = name
                while name in names:
                    name = f"{stem}_{suffix}"
                    suffix += 1
            names.append(name)
            first = members[0]
            groups.append(
                MoELayerGroup(
                    name=name,
                    role=role,
                    layers=tuple(m["index"] for m in members),
                    hidden_size=first["hidden_size"],
                    moe_intermediate_size=first["moe_intermediate_size"],
                    num_experts=first["num_experts"],
                    top_k=first["top_k"],
                    num_shared_experts=first["num_shared_experts"],
                    shared_expert_quant=first["shared_expert_quant"],
                    weight_quant=first["weight_quant"],
                    activation=first["activation"],
                    routing=first["routing"],
                    shared_expert_width=first["shared_expert_width"],
                    shared_expert_gate=first["shared_expert_gate"],
                    expert_bias=first["expert_bias"],
                )
            )
    return order_groups(groups)


def order_groups(groups: list[MoELayerGroup]) -> tuple[MoELayerGroup, ...]:
    """Main (most layers; ties: earliest first layer) group first, then the others in model order."""
    if not groups:
        return ()
    main = max(groups, key=lambda g: (len(g.layers), -min(g.layers)))
    rest = sorted((g for g in groups if g is not main), key=lambda g: min(g.layers))
    return (main, *rest)


# ---------------------------------------------------------------------------------------------
