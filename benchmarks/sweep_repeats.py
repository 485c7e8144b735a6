"""How well one ``fused_vs_nonfused.py`` measurement reproduces: the same shape swept twice, compared per path and T.

For each pair ``EARLIER.json:LATER.json`` (two sweeps of one expert shape, on the same or another day and machine)
and every T both measured, prints the change of each path's median (later / earlier - 1) and the change of each
ratio between two paths (what a ranking, and so a regret, rests on), with the lowest SM clock NVML read during
either run's rounds. Then the largest and median changes, for the rows where both runs held the SM clock at its
maximum in every round and for the rows where the power limit lowered it. A cost model cannot be held to a smaller
error, nor a choice to a smaller regret, than these changes where they are measured the same way. Runs on a CPU::

    python benchmarks/sweep_repeats.py EARLIER.json:LATER.json [...]
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
from pathlib import Path

from cost_model_loso import SHORT


def rows(ap: argparse.ArgumentParser, path: Path) -> tuple[str, dict[str, str], dict[int, dict]]:
    """The model name, the sweep's path names with the package key each times (its ``keys``, in their order) and
    the rows by T of one sweep; an unreadable file is ``ap.error`` (one line, exit 2)."""
    try:
        run = json.loads(path.read_text())
        return run["model"].split(" (")[0], dict(run["keys"]), {int(r["T"]): r for r in run["rows"]}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        ap.error(f"{path}: not a fused_vs_nonfused.py --json sweep ({type(exc).__name__}: {exc})")


def min_clock(row: dict) -> float:
    return min(row.get("condition", {}).get("sm_clock_mhz") or [float("nan")])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("pairs", nargs="+", metavar="EARLIER.json:LATER.json")
    args = ap.parse_args()
    print("| shape | T | lowest SM clock MHz | path changes | ratio changes |\n|---|---|---|---|---|")
    changes: dict[bool, tuple[list[float], list[float]]] = {True: ([], []), False: ([], [])}
    for pair in args.pairs:
        first, sep, second = pair.partition(":")
        if not sep:
            ap.error(f"{pair!r}: two sweep files joined by ':'")
        name, keys, a = rows(ap, Path(first))
        _, _, b = rows(ap, Path(second))
        label = {p: SHORT.get(key, p) for p, key in keys.items()}
        for t in sorted(set(a) & set(b)):
            both = [p for p in keys if "us" in a[t].get(p, {}) and "us" in b[t].get(p, {})]
            clock = min(min_clock(a[t]), min_clock(b[t]))
            pinned = clock >= 1980
            path = {p: b[t][p]["us"] / a[t][p]["us"] - 1 for p in both}
            ratio = {
                (p, q): (b[t][p]["us"] / b[t][q]["us"]) / (a[t][p]["us"] / a[t][q]["us"]) - 1
                for p, q in itertools.combinations(both, 2)
            }
            changes[pinned][0].extend(abs(v) for v in path.values())
            changes[pinned][1].extend(abs(v) for v in ratio.values())
            ptext = ", ".join(f"{label[p]} {v:+.1%}" for p, v in path.items())
            rtext = ", ".join(f"{label[p]}/{label[q]} {v:+.1%}" for (p, q), v in ratio.items())
            print(f"| {name} | {t} | {clock:.0f} | {ptext} | {rtext} |")
    print("\n| SM clock in both runs | path medians compared | largest / median path change ", end="")
    print("| largest / median ratio change |")
    print("|---|---|---|---|")
    for pinned, label in ((True, "1980 MHz in every round"), (False, "lowered by the power limit")):
        path, ratio = changes[pinned]
        if path:
            print(
                f"| {label} | {len(path)} | {max(path):.1%} / {statistics.median(path):.1%} | "
                f"{max(ratio):.1%} / {statistics.median(ratio):.1%} |"
            )


if __name__ == "__main__":
    main()
