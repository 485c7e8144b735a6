"""moe-oracle: decide, explain and run the fused mega-MoE backend for a model on a cluster.

Importing this package is cheap: it loads neither torch nor any kernel library, and the public API
below is loaded on first use. The data path (:mod:`moe_oracle.numerics`, :mod:`moe_oracle.runtime`)
imports torch when used.

Public API (``docs/api.md``): :func:`select`, :func:`check` and :func:`plan` take the model and the
options of the matching command as keywords (the flag with underscores, the CLI's defaults) and return
frozen results (:class:`Selection`, :class:`Verdict`, :class:`Plan`) whose ``.to_dict()`` is the
command's ``--json`` document; failures are the CLI's typed errors (:class:`BadInputError`,
:class:`OverrideRefusedError`, :class:`DeploymentDoesNotFitError`, ...), with ``.code``,
``.exit_code`` and ``.fix``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from moe_oracle.version import __version__

#: Public name -> the module that defines it (imported by name on first use, so ``import moe_oracle`` stays cheap).
_PUBLIC = {
    **dict.fromkeys(
        (
            "select",
            "check",
            "plan",
            "Selection",
            "Verdict",
            "Plan",
            "Group",
            "GroupVerdict",
            "Rejected",
            "AdvisoryHit",
            "NearTie",
            "HeldOutError",
        ),
        "moe_oracle.api",
    ),
    **dict.fromkeys(
        (
            "ExitCode",
            "OracleError",
            "BadInputError",
            "ModelConfigError",
            "UnknownModelError",
            "UnsupportedArchitectureError",
            "DeploymentError",
            "DeploymentDoesNotFitError",
            "OverrideRefusedError",
        ),
        "moe_oracle.errors",
    ),
    **dict.fromkeys(("Reason", "ReasonCode"), "moe_oracle.rules"),
}

__all__ = [  # noqa: RUF022 (grouped as _PUBLIC groups them)
    "__version__",
    "select",
    "check",
    "plan",
    "Selection",
    "Verdict",
    "Plan",
    "Group",
    "GroupVerdict",
    "Rejected",
    "AdvisoryHit",
    "NearTie",
    "HeldOutError",
    "ExitCode",
    "OracleError",
    "BadInputError",
    "ModelConfigError",
    "UnknownModelError",
    "UnsupportedArchitectureError",
    "DeploymentError",
    "DeploymentDoesNotFitError",
    "OverrideRefusedError",
    "Reason",
    "ReasonCode",
]

if TYPE_CHECKING:
    from moe_oracle.api import (
        AdvisoryHit,
        Group,
        GroupVerdict,
        HeldOutError,
        NearTie,
        Plan,
        Rejected,
        Selection,
        Verdict,
        check,
        plan,
        select,
    )
    from moe_oracle.errors import (
        BadInputError,
        DeploymentDoesNotFitError,
        DeploymentError,
        ExitCode,
        ModelConfigError,
        OracleError,
        OverrideRefusedError,
        UnknownModelError,
        UnsupportedArchitectureError,
    )
    from moe_oracle.rules import Reason, ReasonCode


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'moe_oracle' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_PUBLIC})
