"""Fit the cost model from fused-vs-non-fused sweeps and (with ``--write``) store them as calibration data.

Reads the JSON of ``benchmarks/fused_vs_nonfused.py`` (one H200 run per shape: every path, every T,
timed interleaved), prints per path the decode fit (a fixed cost plus a cost per active expert over
T <= 128) and the model fit over all T of this shape (``moe_oracle.cost.calibration.TERMS``) with
their worst relative errors, and with ``--write`` replaces the matching entries of
``moe_oracle/data/calibration.json`` (same variant, device, EP and shape; in place) by this run's points, with
the hardware, library build and EP they came from (points at T this run did not measure are kept: a run that
extends a slot to larger T adds to it). ``--tune FILE`` adds the entries of a calibration file
``moe-oracle tune`` wrote (``tune_calibration_h200.json``) for every shape no sweep measured (each as its own
measured entry, with the file as its source), so the fit over shapes covers those families too. Runs on a CPU:

    python benchmarks/fit_cost_model.py benchmarks/results/h200/2026-12-01/fused_vs_nonfused_*.json \
        [--tune benchmarks/results/h200/2026-12-01/tune_calibration_h200.json] [--write]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from moe_oracle.cost import local
from moe_oracle.cost.calibration import Calibration, decode_fit, fit

DATA = Path(__file__).resolve().parents[1] / "moe_oracle" / "data" / "calibration.json"
DEVICES = {"NVIDIA H200": "h200"}
LIBRARY = "DeepGEMM PR #323 (8ddf7f96) source build, torch {torch}"
GLUE = " m_grouped_fp8_gemm_nt_contiguous + moe-oracle Triton glue"


def calibrations(run: dict, source: str) -> list[Calibration]:
    shape = run["shape"]
    out = []
    for path, key in run["keys"].items():
        if path in run["conversion"].get("refused", {}) or not any(path in r for r in run["rows"]):
            continue  # the build refused this shape on that path, or the run left it out: nothing was measured
        per_expert = run["conversion"]["mxfp4_bytes" if path == "fused_fp4" else "fp8_bytes"] // shape["num_experts"]
        library = LIBRARY.format(torch=run["torch"]) + (GLUE if key.startswith("nonfused:") else "")
        out.append(
            Calibration(
                variant=key,
                device=DEVICES.get(run["device"], run["device"]),
                ep=run["ep"],
                library=library,
                measured=True,
                source=f"{source} ({path}; {run.get('timing', 'CUDA graph, L2 cleared, median of 20')})",
                hidden_size=shape["hidden_size"],
                moe_intermediate_size=shape["moe_intermediate_size"],
                num_experts=shape["num_experts"],
                top_k=shape["top_k"],
                expert_bytes=int(per_expert),
                points=tuple((r["T"], r["active"], round(r[path]["us"], 1)) for r in run["rows"]),
            )
        )
    return out


def merge_points(earlier: Calibration, later: Calibration) -> Calibration:
    """``later`` with ``earlier``'s points at the T it did not measure: a re-measurement replaces a slot's points
    at its T, an extension to further T keeps the rest (sources joined, each once: merging the same run again
    changes nothing)."""
    mine = {t for t, _, _ in later.points}
    points = tuple(sorted((*later.points, *(p for p in earlier.points if p[0] not in mine)), key=lambda p: p[0]))
    if len(points) == len(later.points):
        return later
    source = earlier.source if later.source in earlier.source else f"{earlier.source}; {later.source}"
    return dataclasses.replace(later, points=points, source=source)


def shape_of(cal: Calibration) -> tuple[int, int, int, int]:
    return (cal.hidden_size, cal.moe_intermediate_size, cal.num_experts, cal.top_k)


def slot(cal: Calibration) -> tuple:
    """What one calibration entry measures: its variant, device, EP and shape."""
    return (cal.variant, cal.device, cal.ep, shape_of(cal))


def same_slot(a: dict, cal: Calibration) -> bool:
    return slot(Calibration.from_entry(a)) == slot(cal)


def tuned(path: Path, known: set[tuple[int, int, int, int]]) -> list[Calibration]:
    """The entries of a ``moe-oracle tune`` file for shapes not in ``known``, as package entries (no origin)."""
    name = path.resolve().relative_to(DATA.parents[2]).as_posix()
    out = []
    for c in local.read(path).entries:
        if shape_of(c) not in known:
            what = c.source.split(" on ")[0]
            out.append(dataclasses.replace(c, origin="", source=f"{name} ({what})"))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("results", nargs="+", help="JSON written by benchmarks/fused_vs_nonfused.py --json")
    ap.add_argument("--tune", type=Path, help="a moe-oracle tune calibration file: add its shapes no sweep measured")
    ap.add_argument("--write", action="store_true", help="store the points in moe_oracle/data/calibration.json")
    args = ap.parse_args()
    written: list[Calibration] = []
    for name in args.results:
        run = json.loads(Path(name).read_text())
        source = Path(name).resolve().relative_to(DATA.parents[2]).as_posix()
        cals = calibrations(run, source)
        print(f"\n{run['device']}, EP{run['ep']}, {run['model']}; torch {run['torch']}, deep_gemm {run['deep_gemm']}")
        head = f"{'path':34} {'decode fixed us':>15} {'us/expert':>9} {'max err':>7}"
        print(head + f"   {'fit fixed us':>12} {'max err':>7}")
        for cal in cals:
            f = fit(cal)
            small = sum(t <= 128 for t, _, _ in cal.points) >= 2  # a run of large T only has no decode fit
            d = decode_fit(cal) if small else None
            decode = f"{d.fixed_us:15.1f} {d.us_per_expert:9.2f} {d.max_rel_error:7.1%}" if d else f"{'-':>33}"
            print(f"{cal.variant:34} {decode}   {f.fixed_us:12.1f} {f.max_rel_error:7.1%}")
        for cal in cals:  # a later file of the same slot (an extension to further T) merges into the earlier
            i = next((i for i, w in enumerate(written) if slot(w) == slot(cal)), None)
            if i is None:
                written.append(cal)
            else:
                written[i] = merge_points(written[i], cal)
    if args.tune:
        extra = tuned(args.tune, {shape_of(c) for c in written})
        print(f"\n{args.tune}: {len(extra)} entries for {len({shape_of(c) for c in extra})} shapes no sweep measured")
        for cal in extra:
            pts = ", ".join(str(t) for t, _, _ in cal.points)
            print(f"{cal.variant:34} H {cal.hidden_size} I {cal.moe_intermediate_size} E {cal.num_experts}: T {pts}")
        written += extra
    if args.write:
        data = json.loads(DATA.read_text())
        entries, replaced, pending = [], 0, list(written)
        for e in data["entries"]:  # a re-measured slot keeps its place (and its other T); new slots go first
            match = next((c for c in pending if same_slot(e, c)), None)
            if match is None:
                entries.append(e)
            else:
                entries.append(merge_points(Calibration.from_entry(e), match).to_entry())
                pending.remove(match)
                replaced += 1
        data["entries"] = [c.to_entry() for c in pending] + entries
        DATA.write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {len(written)} entries to {DATA} ({replaced} replaced, {len(written) - replaced} new)")


if __name__ == "__main__":
    main()
