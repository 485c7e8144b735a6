"""Layer groups an engine builds only under a launch flag: MTP and draft layers, with speculative decoding.

Both engines load a model's multi-token-prediction layers as a separate draft model, and only when
speculative decoding is on; without it those layers take no memory and run no MoE, so they neither
decide the backend nor size a buffer (``Deployment.speculative``, ``--speculative mtp|none``).
``--engine none`` judges the kernels for every group the checkpoint has.
"""

from __future__ import annotations

from moe_oracle.model.types import ModelDescription, MoELayerGroup
from moe_oracle.releases import RELEASES
from moe_oracle.releases.types import SpeculativeLaunch
from moe_oracle.rules import Engine
from moe_oracle.spec.deployment import Deployment

#: Layer-group roles whose layers only a speculative-decoding draft model builds.
FLAG_BUILT_ROLES: tuple[str, ...] = ("mtp", "draft")


#: How each engine's release builds the MTP layers (``Release.speculative``).
LAUNCHES: dict[Engine, SpeculativeLaunch] = {engine: release.speculative for engine, release in RELEASES.items()}


def flag_built(group: MoELayerGroup) -> bool:
    """Whether only a speculative-decoding launch builds ``group``'s layers."""
    return group.role in FLAG_BUILT_ROLES


def builds_mtp(engine: Engine, deployment: Deployment) -> bool:
    """Whether this launch builds the MTP/draft layers: ``--speculative mtp`` on an engine, or ``--engine none``
    (which judges every group the checkpoint has)."""
    return engine not in LAUNCHES or deployment.speculative == "mtp"


def unbuilt_groups(model: ModelDescription, engine: Engine, deployment: Deployment) -> tuple[MoELayerGroup, ...]:
    """The groups ``engine`` does not build for this launch (none for ``--engine none`` or ``--speculative mtp``)."""
    if builds_mtp(engine, deployment):
        return ()
    return tuple(g for g in model.layer_groups if flag_built(g))


def built_groups(model: ModelDescription, engine: Engine, deployment: Deployment) -> tuple[MoELayerGroup, ...]:
    """The groups the launch builds, in model order (never empty: a model's main group is not flag-built)."""
    skipped = unbuilt_groups(model, engine, deployment)
    built = tuple(g for g in model.layer_groups if g not in skipped)
    return built or model.layer_groups
