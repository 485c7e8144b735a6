"""Calibration files measured on the user's own GPU (``moe-oracle tune``), and which one a decision uses.

A file holds the kernel times ``tune`` measured (one :class:`~moe_oracle.cost.calibration.Calibration` entry per
path and shape), the limits it met (a build or call that failed: never used as a cost), and its stamp: the device
(catalogue name and the name the driver reports), driver, the kernel builds measured through (``deep_gemm`` ->
``deepgemm-pr323``), torch, the SM clock and board power read while timing, and the date.

Which file a decision uses (:func:`active_for`), first match wins:

1. ``--calibration FILE`` (:func:`use_file`), else ``MOE_ORACLE_CALIBRATION`` (a path, or ``none`` for no local
   calibration at all): used when it matches the deployment, refused with one line when it does not;
2. otherwise the file ``tune`` writes by default, ``<cache>/calibration/<device>.json`` (``<cache>`` is
   ``MOE_ORACLE_CACHE_DIR``, else ``$XDG_CACHE_HOME/moe-oracle``, else ``~/.cache/moe-oracle``), used only when it
   matches.

A file matches a deployment when it was measured on the deployment's device and every build it was measured
through is one the decision's software profile has. Its entries then come before the package's
(``moe_oracle/data/calibration.json``) for that device, and the cost basis reads "measured on this machine (date)",
or "measured on this machine (date, each path alone)" for a file ``tune --timing steady`` wrote
(:class:`TimingBasis`, stamped as ``stamp.timing_basis``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import Enum
from functools import lru_cache
from pathlib import Path

from moe_oracle.cost.calibration import ACTIVE_LOCAL, Calibration
from moe_oracle.errors import BadInputError, excerpt
from moe_oracle.software.types import SoftwareProfile

SCHEMA = "moe-oracle-calibration/1"
ENV_FILE = "MOE_ORACLE_CALIBRATION"
ENV_CACHE = "MOE_ORACLE_CACHE_DIR"
#: A file larger than this is refused unread (a calibration of every shape of every model is a few hundred KB).
MAX_BYTES = 16 << 20
MAX_ENTRIES = 4096


class TimingBasis(Enum):
    """How ``tune`` timed the paths of a file."""

    #: every path of a round replayed in turn, rounds rotating (``benchmarks/``' basis and the package calibration's)
    INTERLEAVED = "interleaved"
    #: each path alone, after its own warm-up: the clock its own power draw sets (docs/performance.md §14.2)
    STEADY = "steady"


def origin_text(date: str, basis: TimingBasis) -> str:
    """The cost basis a local entry gives a decision."""
    alone = ", each path alone" if basis is TimingBasis.STEADY else ""
    return f"measured on this machine ({date}{alone})"


@dataclass(frozen=True)
class TuneLimit:
    """A path ``tune`` could not measure at a token count: the build or the call failed (one line, the cause)."""

    path: str
    tokens: int
    hidden_size: int
    moe_intermediate_size: int
    num_experts: int
    top_k: int
    reason: str

    def to_json(self) -> dict[str, object]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class CalibrationFile:
    """One ``tune`` result: its stamp, the measured entries and the limits met."""

    device: str
    device_name: str
    date: str
    builds: dict[str, str]
    entries: tuple[Calibration, ...]
    limits: tuple[TuneLimit, ...] = ()
    stamp: dict[str, object] = field(default_factory=dict)
    path: str = ""

    def to_json(self) -> dict[str, object]:
        return {
            "schema": SCHEMA,
            "device": self.device,
            "device_name": self.device_name,
            "date": self.date,
            "builds": self.builds,
            "stamp": self.stamp,
            "entries": [e.to_entry() for e in self.entries],
            "limits": [lim.to_json() for lim in self.limits],
        }

    @property
    def basis(self) -> TimingBasis:
        """How the paths were timed (``stamp.timing_basis``; a file without it was timed interleaved)."""
        return _basis(self.stamp)

    def cannot_merge(self, older: CalibrationFile) -> str | None:
        """None when ``older``'s entries may join this file's; else why not (one clause): another device, other
        builds, or another timing basis (one file holds one basis, so its fit compares like with like)."""
        if older.device != self.device:
            return f"it was measured on {older.device}, not {self.device}"
        if older.builds != self.builds:
            return f"it was measured through other builds ({older.builds}, not {self.builds})"
        if older.basis is not self.basis:
            return f"it was timed {older.basis.value}, this run {self.basis.value}"
        return None

    def merged_with(self, older: CalibrationFile | None) -> CalibrationFile:
        """This file plus the entries and limits of ``older`` for shapes and paths not measured here, when
        :meth:`cannot_merge` allows (``tune`` of several models accumulates)."""
        if older is None or self.cannot_merge(older) is not None:
            return self
        keys = {_key(e) for e in self.entries}
        kept = tuple(e for e in older.entries if _key(e) not in keys)
        shapes: set[tuple[object, ...]] = {
            (lim.path, lim.hidden_size, lim.moe_intermediate_size, lim.num_experts, lim.top_k) for lim in self.limits
        }
        shapes |= {(e.variant, *_key(e)[1:5]) for e in self.entries}
        old_limits = tuple(
            lim
            for lim in older.limits
            if (lim.path, lim.hidden_size, lim.moe_intermediate_size, lim.num_experts, lim.top_k) not in shapes
        )
        return CalibrationFile(
            self.device,
            self.device_name,
            self.date,
            self.builds,
            kept + self.entries,
            old_limits + self.limits,
            self.stamp,
            self.path,
        )

    def matches(self, device: str, software: SoftwareProfile) -> str | None:
        """None when this file applies to ``device`` under ``software``; else why not (one clause)."""
        if device != self.device:
            return f"it was measured on {self.device}, not {device}"
        have = profile_builds(software)
        for lib, build in self.builds.items():
            if build not in have.get(lib, set()):
                found = ", ".join(sorted(have.get(lib, ()))) or "none"
                return f"it was measured through {lib} build {build}; software {software.name} has {found}"
        return None


def _key(e: Calibration) -> tuple[object, ...]:
    return (e.variant, e.hidden_size, e.moe_intermediate_size, e.num_experts, e.top_k, e.ep)


def profile_builds(software: SoftwareProfile) -> dict[str, set[str]]:
    """Library -> the names of the builds ``software`` has of it (declared, or recognised from a probe)."""
    from moe_oracle.registry import load_registry
    from moe_oracle.rules.build import builds_named_by, builds_present

    known = tuple(builds_named_by(load_registry().variants))
    out: dict[str, set[str]] = {}
    for name, lib in software.libraries.items():
        if not lib.present:
            continue
        names = set(lib.builds) or {b.name for b in builds_present(lib, [b for b in known if b.library == name])}
        out[name] = names
    return out


def cache_dir() -> Path:
    """Where ``tune`` writes by default (module docstring)."""
    if os.environ.get(ENV_CACHE):
        return Path(os.environ[ENV_CACHE])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "moe-oracle"


def default_path(device: str) -> Path:
    return cache_dir() / "calibration" / f"{device}.json"


def _bad(path: str | Path, why: str) -> BadInputError:
    return BadInputError(
        f"calibration file {excerpt(str(path))}: {why}",
        fix="name a file written by moe-oracle tune (--calibration FILE), or run moe-oracle tune again",
    )


def read(path: str | Path) -> CalibrationFile:
    """Read and validate a calibration file; every problem is one :class:`BadInputError` line."""
    p = Path(path)
    try:
        size = p.stat().st_size
        if size > MAX_BYTES:
            raise _bad(path, f"{size} bytes, over the {MAX_BYTES} a calibration file may have")
        doc = json.loads(p.read_text(encoding="utf-8"))
    except BadInputError:
        raise
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise _bad(path, f"cannot be read as JSON ({type(exc).__name__})") from None
    return parse(doc, str(path))


def parse(doc: object, path: str = "<calibration>") -> CalibrationFile:
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise _bad(path, f"not a {SCHEMA} document")
    try:
        device, name, date = (_text(doc[k], k) for k in ("device", "device_name", "date"))
        builds = doc["builds"]
        if not isinstance(builds, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in builds.items()
        ):
            raise ValueError("builds must map library names to build names")
        stamp = doc.get("stamp", {})
        if not isinstance(stamp, dict):
            raise ValueError("stamp must be an object")
        origin = origin_text(date, _basis(stamp))
        raw = doc["entries"]
        if not isinstance(raw, list) or len(raw) > MAX_ENTRIES:
            raise ValueError(f"entries must be a list of at most {MAX_ENTRIES}")
        entries = tuple(_entry(e, origin) for e in raw)
        limits = tuple(_limit(x) for x in doc.get("limits", []))
    except (KeyError, TypeError, ValueError) as exc:
        raise _bad(path, f"malformed ({excerpt(str(exc))})") from None
    return CalibrationFile(device, name, date, dict(builds), entries, limits, stamp, path)


def _basis(stamp: dict) -> TimingBasis:
    value = stamp.get("timing_basis", TimingBasis.INTERLEAVED.value)
    try:
        return TimingBasis(value)
    except (ValueError, TypeError):
        allowed = ", ".join(b.value for b in TimingBasis)
        raise ValueError(f"stamp.timing_basis {excerpt(value)} is not one of {allowed}") from None


def _text(v: object, what: str) -> str:
    if not isinstance(v, str) or not v or len(v) > 200:
        raise ValueError(f"{what} must be a non-empty string")
    return v


def _entry(e: object, origin: str) -> Calibration:
    if not isinstance(e, dict):
        raise ValueError("an entry is not an object")
    cal = Calibration.from_entry(e)
    ints = (cal.ep, cal.hidden_size, cal.moe_intermediate_size, cal.num_experts, cal.top_k, cal.expert_bytes)
    if not all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in ints):
        raise ValueError("shape and EP must be positive integers")
    if not cal.points or not all(t > 0 and us > 0 and us < 1e9 for t, _, us in cal.points):
        raise ValueError("points must be (T > 0, active, us > 0)")
    return Calibration(**{**cal.__dict__, "origin": origin})


def _limit(x: object) -> TuneLimit:
    if not isinstance(x, dict):
        raise ValueError("a limit is not an object")
    ints = ("tokens", "hidden_size", "moe_intermediate_size", "num_experts", "top_k")
    if set(x) != {"path", "reason", *ints}:
        raise ValueError(f"a limit needs exactly path, reason, {', '.join(ints)}")
    if not isinstance(x["path"], str) or not isinstance(x["reason"], str):
        raise ValueError("a limit's path and reason are strings")
    if not all(isinstance(x[k], int) and not isinstance(x[k], bool) for k in ints):
        raise ValueError(f"a limit's {', '.join(ints)} are integers")
    return TuneLimit(
        x["path"], x["tokens"], x["hidden_size"], x["moe_intermediate_size"], x["num_experts"], x["top_k"], x["reason"]
    )


def write(cal: CalibrationFile, path: str | Path, what: str = "--out") -> Path:
    """Write ``cal`` atomically (its folder created); exit 2 with one line when the target cannot be written."""
    from moe_oracle.output import ensure_directory, write_text_file

    target = Path(path)
    ensure_directory(target.parent, what)
    return write_text_file(target, json.dumps(cal.to_json(), indent=1) + "\n", what)


# ------------------------------------------------------------------ which file a decision uses

_EXPLICIT: list[str | None] = [None]


def use_file(path: str | None) -> None:
    """``--calibration FILE`` for this process (None: back to automatic). The file is read now, so a bad one
    stops the command before it decides anything."""
    if path is not None and path.strip().lower() != "none":
        read(path)
    _EXPLICIT[0] = path


def active() -> tuple[Calibration, ...]:
    """The local entries the current decision uses (empty outside :func:`active_for`)."""
    return ACTIVE_LOCAL.get()


@lru_cache(maxsize=16)
def _cached(path: str, mtime: float) -> CalibrationFile:
    return read(path)


def _load(path: str | Path) -> CalibrationFile:
    p = Path(path)
    return _cached(str(p), p.stat().st_mtime)


def chosen_file(device: str, software: SoftwareProfile) -> CalibrationFile | None:
    """The calibration file the decision for ``device`` under ``software`` uses (module docstring), or None."""
    given = _EXPLICIT[0] if _EXPLICIT[0] is not None else os.environ.get(ENV_FILE)
    if given is not None:
        if given.strip().lower() == "none":
            return None
        try:
            cal = _load(given)
        except OSError:
            raise _bad(given, "cannot be read") from None
        why = cal.matches(device, software)
        if why is not None:
            raise BadInputError(
                f"calibration file {excerpt(given)} does not apply: {why}",
                fix="run moe-oracle tune on this device and software, or leave --calibration out",
            )
        return cal
    p = default_path(device)
    if not p.is_file():
        return None
    try:
        cal = _load(p)
    except (OSError, BadInputError):
        return None  # an unreadable cache file is not this decision's input: decide without it
    return cal if cal.matches(device, software) is None else None


@contextmanager
def active_for(device: str, software: SoftwareProfile) -> Iterator[CalibrationFile | None]:
    """Within the block, :func:`active` holds the entries of :func:`chosen_file` (nothing when none applies)."""
    cal = chosen_file(device, software)
    token = ACTIVE_LOCAL.set(cal.entries if cal is not None else ())
    try:
        yield cal
    finally:
        ACTIVE_LOCAL.reset(token)


def describe(cals: Iterable[Calibration]) -> str:
    """'measured on this machine (date)' (or '(date, each path alone)') for local entries, else ''."""
    origins = sorted({c.origin for c in cals if c.origin})
    return origins[0] if origins else ""
