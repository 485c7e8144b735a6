"""Turn pydantic validation errors into the one-line messages the CLI prints."""

from __future__ import annotations

from pydantic import ValidationError

from moe_oracle.errors import excerpt


def one_line(exc: ValidationError, what: str) -> str:
    """``<what>: <field> = <value>: <rule>`` for the first error (``<what>: <rule>`` for a whole-object rule),
    plus a count of the rest."""
    errors = exc.errors(include_url=False)
    if not errors:
        return f"{what}: invalid"
    first = errors[0]
    loc = ".".join(str(p) for p in first.get("loc", ()) if p != "__root__")
    msg = first.get("msg", "invalid").removeprefix("Value error, ")
    has_input = "input" in first and first.get("type") not in ("missing", "value_error")
    value = f" = {excerpt(first['input'])}" if has_input and not isinstance(first["input"], dict) else ""
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{what}: {loc}{value}: {msg}{more}" if loc else f"{what}: {msg}{more}"
