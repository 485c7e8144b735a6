"""Advisories in the matrix's JSON: each one listed once, at the top (``advisories``: id -> the advisory), and a
cell's ``KNOWN_BAD`` reason referring to it by id. A site file may hold 256 advisories of 4 KiB fields
(docs/advisories.md); repeated in every reason of every cell and layer group, their text made one model on one
device a 233 MB document (the whole matrix ran out of memory)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from moe_oracle.decide.advisories import Advisory


def compact(doc: dict[str, Any], advisories: Iterable[Advisory]) -> dict[str, Any]:
    """``doc`` (a matrix JSON) with every KNOWN_BAD reason of an advisory in ``advisories`` replaced by
    ``{"code", "status", "advisory": id, "message": "<id>: see advisories"}`` and ``doc["advisories"]`` holding
    each advisory those reasons name, once."""
    by_message = {adv.reason().message: adv for adv in advisories}
    used: dict[str, Advisory] = {}

    def refer(reasons: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out = []
        for reason in reasons:
            adv = by_message.get(reason.get("message", "")) if reason.get("code") == "KNOWN_BAD" else None
            if adv is None:
                out.append(reason)
                continue
            used[adv.id] = adv
            out.append(
                {
                    "code": "KNOWN_BAD",
                    "status": reason.get("status"),
                    "advisory": adv.id,
                    "message": f"{adv.id}: see advisories[{adv.id!r}]",
                }
            )
        return out

    for cell in doc.get("cells", []):
        cell["reasons"] = refer(cell.get("reasons", []))
        for group in cell.get("groups", []):
            group["reasons"] = refer(group.get("reasons", []))
    doc["advisories"] = {adv_id: adv.model_dump(mode="json") for adv_id, adv in sorted(used.items())}
    return doc
