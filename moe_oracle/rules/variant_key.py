"""``backend:variant``, parsed in one place: ``--moe-backend``, the plug-ins' pins, ``emulation:<variant>``.

A key names a registered variant (``deep_gemm_mega_moe:sm100_fp8xfp4``), a backend that picks its own variant
(``deep_gemm_mega_moe``), a variant of any backend (``*:sm90_fp8xfp8``, or a bare variant where the caller
says a bare name is one), and optionally its numerics twin (``emulation:<variant>`` or
``emulation:<backend>:<variant>``). Spelling is forgiving (case, ``-`` for ``_``, surrounding spaces); structure
is not: an empty part, a third part or a character outside ``[a-z0-9_.+]`` is one :class:`BadInputError`
(exit 2) that shows the value, the rule and the fix.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from moe_oracle.errors import BadInputError, excerpt

if TYPE_CHECKING:
    from moe_oracle.rules.variant import VariantSpec

#: the prefix of a numerics-twin key (``emulation:<variant>``)
EMULATION = "emulation"
#: the backend part that matches every backend (``*:<variant>``)
ANY_BACKEND = "*"
#: a backend or variant name once normalized
NAME = re.compile(r"[a-z0-9_.+]{1,64}")
RULE = "NAME or NAME:VARIANT (lowercase letters, digits, '_', '.', '+'; at most 64 each)"
FIX = "use BACKEND:VARIANT (e.g. deep_gemm_mega_moe:sm100_fp8xfp4), a backend alone, or emulation:VARIANT"


class Bare(str, Enum):
    """What a key without ``:`` names."""

    BACKEND = "backend"  # --moe-backend deep_gemm_mega_moe: the backend picks its variant
    VARIANT = "variant"  # moe-oracle accuracy sm90_fp8xfp8: a variant of whichever backend has it


@dataclass(frozen=True)
class VariantKey:
    """A parsed variant key. ``backend`` None: any backend; ``variant`` None: the backend's own choice."""

    backend: str | None
    variant: str | None = None
    emulated: bool = False

    @classmethod
    def parse(
        cls,
        text: object,
        *,
        subject: str | None = None,
        bare: Bare = Bare.BACKEND,
        require_variant: bool = False,
        fix: str = FIX,
    ) -> VariantKey:
        """The key ``text`` spells; :class:`BadInputError` (exit 2) for a malformed one.

        ``subject`` is how the message shows the value (default ``--moe-backend 'TEXT'``); ``require_variant``
        refuses a key that names no variant (a plug-in pin must say which kernel)."""
        shown = subject if subject is not None else f"--moe-backend {excerpt(text)}"
        if not isinstance(text, str):
            raise BadInputError(f"{shown} is not a variant key: expected a string, {RULE}", fix=fix)
        name = text.strip().lower().replace("-", "_")
        emulated = name.startswith(EMULATION + ":")
        if emulated:
            name = name[len(EMULATION) + 1 :]
        parts = name.split(":")
        if len(parts) > 2 or any(not part for part in parts):
            why = "more than one ':'" if len(parts) > 2 else "an empty name" if len(parts) == 1 else "an empty part"
            raise BadInputError(f"{shown} is malformed ({why}): expected {RULE}", fix=fix)
        if len(parts) == 2:
            backend: str | None = None if parts[0] == ANY_BACKEND else parts[0]
            variant: str | None = parts[1]
        elif emulated or bare is Bare.VARIANT:
            backend, variant = None, parts[0]
        else:
            backend, variant = parts[0], None
        if require_variant and variant is None:
            raise BadInputError(f"{shown} names no variant", fix=fix)
        for part in (backend, variant):
            if part is not None and not NAME.fullmatch(part):
                raise BadInputError(f"{shown} is malformed ({excerpt(part)}): expected {RULE}", fix=fix)
        return cls(backend, variant, emulated)

    def matches(self, spec: VariantSpec) -> bool:
        """Does this key name ``spec`` (its backend, when given, and its variant, when given)?"""
        return self.backend in (None, spec.backend) and self.variant in (None, spec.variant)

    def __str__(self) -> str:
        if self.variant is None:
            body = self.backend or ANY_BACKEND
        elif self.backend is None:
            body = self.variant if self.emulated else f"{ANY_BACKEND}:{self.variant}"
        else:
            body = f"{self.backend}:{self.variant}"
        return f"{EMULATION}:{body}" if self.emulated else body
