"""How far the cost model was off on shapes it was not fit on: the leave-one-shape-out error, per device and path.

An estimate for a shape nobody measured is a fit over other shapes (:func:`moe_oracle.cost.model.estimate_us`). The
fit's own error (``Fit.max_rel_error``) says how well it reproduces the shapes it was given; what a user of an
unmeasured shape meets is its error on a shape it was not given. ``benchmarks/cost_model_loso.py`` measures that:
each measured shape predicted from a fit over the others. Its ``--held-out`` output, per device class and path (the
shapes and points scored, the median, 90th percentile and largest ``|predicted / measured - 1|``, and where the
largest was), is ``moe_oracle/data/held_out_error.json`` (one EP per device class: the EP its sweeps were measured
at); a test re-runs it on the committed sweeps, so the file is what the sweeps give. A transferred estimate
carries its path's entry (:attr:`CostEstimate.held_out`) and says it in its cost basis.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

#: the package file (in ``moe_oracle.data``, written by :func:`dumps`)
HELD_OUT_FILE = "held_out_error.json"
#: what a file states at the top, so that a reader can tell it from another JSON
FORMAT = "moe-oracle held-out error 1"
_FIELDS = ("shapes", "points", "median", "p90", "max", "worst")


@dataclass(frozen=True)
class HeldOutError:
    """The leave-one-shape-out error of one path on one device class at one EP size: ``shapes`` left out one at a
    time, ``points`` (shape, T) predicted, and of ``|predicted / measured - 1|`` the ``median``, the 90th percentile
    (``p90``, nearest rank) and the largest (``max``, at ``worst``: the shape and T)."""

    device: str
    ep: int
    path: str
    shapes: int
    points: int
    median: float
    p90: float
    max: float
    worst: str

    def phrase(self) -> str:
        """One clause for a cost basis."""
        return (
            f"held out of the fit, {self.shapes} shapes measured on {self.device} at EP{self.ep} came out within "
            f"{self.max:.0%} on this path (median {self.median:.1%}, 9 in 10 points within {self.p90:.0%}; worst "
            f"{self.worst}: benchmarks/cost_model_loso.py); moe-oracle tune measures this shape"
        )

    def figures(self) -> dict[str, object]:
        """The entry as a file holds it, under its device class and path (:data:`_FIELDS`)."""
        return {
            "shapes": self.shapes,
            "points": self.points,
            "median": self.median,
            "p90": self.p90,
            "max": self.max,
            "worst": self.worst,
        }

    def to_json(self) -> dict[str, object]:
        return {"device": self.device, "ep": self.ep, **self.figures()}


#: what a file says it is and which command writes it (:func:`dumps`)
ABOUT = (
    "leave-one-shape-out error of the cost model: each measured shape predicted from a fit over the others, "
    "|predicted / measured - 1| over its paths' points (moe_oracle/cost/held_out.py)"
)
WRITTEN_BY = "python benchmarks/cost_model_loso.py --held-out"


def dumps(entries: Iterable[HeldOutError]) -> str:
    """The text of a held-out error file for ``entries`` (paths sorted; :func:`parse` reads it back). Raises
    ValueError for two EPs of one device class or two entries of one path: a file holds one of each."""
    devices: dict[str, dict[str, Any]] = {}
    for e in entries:
        scored = devices.setdefault(e.device, {"ep": e.ep, "paths": {}})
        if scored["ep"] != e.ep:
            raise ValueError(f"{e.device}: entries at EP{scored['ep']} and EP{e.ep}; a file holds one EP per device")
        if e.path in scored["paths"]:
            raise ValueError(f"{e.device}: two entries for {e.path}")
        scored["paths"][e.path] = e.figures()
    for scored in devices.values():
        scored["paths"] = dict(sorted(scored["paths"].items()))
    doc = {"format": FORMAT, "about": ABOUT, "written_by": WRITTEN_BY, "devices": devices}
    return json.dumps(doc, indent=2) + "\n"


def parse(text: str, where: str = HELD_OUT_FILE) -> dict[tuple[str, int, str], HeldOutError]:
    """(device, EP, path) -> entry, from the JSON text of a held-out error file. Raises ValueError with ``where``,
    the value and the rule for anything else."""
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as e:
        raise ValueError(f"{where}: not JSON ({e})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f'{where}: not a held-out error file (its "format" must be {FORMAT!r})')
    devices = data.get("devices")
    if not isinstance(devices, dict):
        raise ValueError(f'{where}: "devices" must map a device class to the EP and paths it was scored at')
    out: dict[tuple[str, int, str], HeldOutError] = {}
    for device, scored in devices.items():
        if not isinstance(scored, dict) or set(scored) != {"ep", "paths"}:
            raise ValueError(f"{where}: devices.{device} must hold exactly ep and paths")
        ep, paths = scored["ep"], scored["paths"]
        if not isinstance(ep, int) or isinstance(ep, bool) or ep < 1:
            raise ValueError(f"{where}: devices.{device}.ep must be a positive integer, not {ep!r}")
        if not isinstance(paths, dict):
            raise ValueError(f"{where}: devices.{device}.paths must map a path key to its figures")
        for path, figures in paths.items():
            out[(device, ep, path)] = _entry(device, ep, path, figures, where)
    return out


def _entry(device: str, ep: int, path: str, e: object, where: str) -> HeldOutError:
    at = f"{where}: devices.{device}.paths.{path}"
    if not isinstance(e, dict) or set(e) != set(_FIELDS):
        raise ValueError(f"{at} must hold exactly {', '.join(_FIELDS)}")
    counts = [e["shapes"], e["points"]]
    if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in counts):
        raise ValueError(f"{at}: shapes and points must be positive integers, not {counts!r}")
    errs = [e["median"], e["p90"], e["max"]]
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in errs):
        raise ValueError(f"{at}: median, p90 and max must be finite numbers, not {errs!r}")
    if not 0 <= errs[0] <= errs[1] <= errs[2]:
        raise ValueError(f"{at}: need 0 <= median <= p90 <= max, not {errs!r}")
    if not isinstance(e["worst"], str) or not e["worst"].strip():
        raise ValueError(f"{at}: worst must name the shape and T")
    median, p90, top = (float(v) for v in errs)
    return HeldOutError(device, ep, path, e["shapes"], e["points"], median, p90, top, e["worst"])


@lru_cache(maxsize=1)
def _package() -> dict[tuple[str, int, str], HeldOutError]:
    text = resources.files("moe_oracle.data").joinpath(HELD_OUT_FILE).read_text(encoding="utf-8")
    return parse(text, f"moe_oracle/data/{HELD_OUT_FILE}")


def held_out_error(device: str, ep: int, path: str) -> HeldOutError | None:
    """The package's figure for ``path`` (a calibrated variant or non-fused key) fit on ``device``'s measured
    calibrations at EP ``ep``; None where no shapes of it were scored there (a fit over published points, another
    EP: its error on a held-out shape is unknown)."""
    return _package().get((device, ep, path))
